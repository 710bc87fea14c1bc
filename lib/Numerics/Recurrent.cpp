//===- Recurrent.cpp - numerics of the recurrent layers -------------------===//
//
// The formulas of LLMRecurrentOps.td, in the order transformers' torch
// paths evaluate them (modeling_mamba2 / falcon_h1 / granitemoehybrid's
// torch_forward, jamba's slow_forward, qwen3_next's
// torch_recurrent_gated_delta_rule), all in f32.
//
//===----------------------------------------------------------------------===//
#include "pimc/Numerics/Recurrent.h"
#include "pimc/Numerics/Kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace pimc::ref {

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

void causalConv1d(const float *u, int64_t T, int64_t C, int64_t K,
                  const float *weight, const float *bias, bool applySilu,
                  float *state, float *y) {
  int64_t S = K - 1;
  std::vector<float> window(K);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < C; ++c) {
      float *st = state + c * S;
      const float *w = weight + c * K;
      std::copy(st, st + S, window.begin());
      window[S] = u[t * C + c];
      float acc = 0.0f;
      for (int64_t j = 0; j < K; ++j)
        acc += w[j] * window[j];
      if (bias)
        acc += bias[c];
      y[t * C + c] = applySilu ? silu(acc) : acc;
      std::copy(window.begin() + 1, window.end(), st);
    }
}

/// delta_h = clamp(softplus(dt + dt_bias), dtMin, dtMax).
static float ssmDelta(const SSMShape &s, float dt, float bias) {
  float delta = std::max(softplus(dt + bias), s.dtMin);
  return s.clampMax ? std::min(delta, s.dtMax) : delta;
}

void ssmScan(const SSMShape &s, int64_t T, const float *x, const float *dt,
             const float *b, const float *c, const float *aLog, const float *d,
             const float *dtBias, float *state, float *y) {
  int64_t nh = s.heads, P = s.headDim, N = s.stateSize;
  int64_t perGroup = nh / s.groups;
  // A = -exp(a_log), once per call; the decay exp(delta A) once per token,
  // head and state index (the same for every p of the head).
  std::vector<float> A(nh * N), decay(N);
  for (int64_t h = 0; h < nh; ++h)
    for (int64_t n = 0; n < N; ++n)
      A[h * N + n] = -std::exp(s.decayPerState ? aLog[h * N + n] : aLog[h]);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < nh; ++h) {
      float delta = ssmDelta(s, dt[t * nh + h], dtBias[h]);
      for (int64_t n = 0; n < N; ++n)
        decay[n] = std::exp(delta * A[h * N + n]);
      int64_t g = h / perGroup;
      const float *B = b + (t * s.groups + g) * N;
      const float *Cg = c + (t * s.groups + g) * N;
      for (int64_t p = 0; p < P; ++p) {
        float xv = x[t * nh * P + h * P + p];
        float *S = state + (h * P + p) * N;
        float acc = 0.0f;
        for (int64_t n = 0; n < N; ++n) {
          S[n] = S[n] * decay[n] + (delta * B[n]) * xv;
          acc += S[n] * Cg[n];
        }
        y[t * nh * P + h * P + p] = acc + d[h] * xv;
      }
    }
}

/// x * rsqrt(sum x^2 + 1e-6), then / divisor.
static void l2normalize(const float *x, int64_t n, float divisor, float *out) {
  float ss = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    ss += x[i] * x[i];
  float inv = 1.0f / std::sqrt(ss + 1e-6f);
  for (int64_t i = 0; i < n; ++i)
    out[i] = x[i] * inv / divisor;
}

void gatedDeltaRule(const DeltaRuleShape &s, int64_t T, const float *q,
                    const float *k, const float *v, const float *a,
                    const float *b, const float *aLog, const float *dtBias,
                    float *state, float *o) {
  int64_t nk = s.keyHeads, nv = s.valueHeads, dk = s.keyDim, dv = s.valueDim;
  int64_t rho = nv / nk;
  float rootDk = std::sqrt(static_cast<float>(dk));
  std::vector<float> qn(dk), kn(dk), e(dv);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < nv; ++h) {
      int64_t kh = h / rho;
      l2normalize(q + (t * nk + kh) * dk, dk, rootDk, qn.data());
      l2normalize(k + (t * nk + kh) * dk, dk, 1.0f, kn.data());
      float beta = sigmoid(b[t * nv + h]);
      float g = -std::exp(aLog[h]) * softplus(a[t * nv + h] + dtBias[h]);
      float decay = std::exp(g);
      float *S = state + h * dk * dv;
      const float *vh = v + (t * nv + h) * dv;
      for (int64_t i = 0; i < dk * dv; ++i)
        S[i] *= decay;
      for (int64_t j = 0; j < dv; ++j) {
        float mem = 0.0f;
        for (int64_t i = 0; i < dk; ++i)
          mem += S[i * dv + j] * kn[i];
        e[j] = (vh[j] - mem) * beta;
      }
      float *oh = o + (t * nv + h) * dv;
      for (int64_t j = 0; j < dv; ++j) {
        float acc = 0.0f;
        for (int64_t i = 0; i < dk; ++i) {
          S[i * dv + j] += kn[i] * e[j];
          acc += S[i * dv + j] * qn[i];
        }
        oh[j] = acc;
      }
    }
}

void gatedRmsNorm(const float *y, const float *z, int64_t T, int64_t D,
                  int64_t group, const float *weight, int64_t weightSize,
                  float eps, bool normBeforeGate, float *out) {
  std::vector<float> v(group);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t g0 = 0; g0 < D; g0 += group) {
      const float *yg = y + t * D + g0, *zg = z + t * D + g0;
      for (int64_t i = 0; i < group; ++i)
        v[i] = normBeforeGate ? yg[i] : yg[i] * silu(zg[i]);
      float ss = 0.0f;
      for (float x : v)
        ss += x * x;
      float r = 1.0f / std::sqrt(ss / static_cast<float>(group) + eps);
      for (int64_t i = 0; i < group; ++i) {
        float w = weight[weightSize == D ? g0 + i : i];
        float n = w * (v[i] * r);
        out[t * D + g0 + i] = normBeforeGate ? n * silu(zg[i]) : n;
      }
    }
}

} // namespace pimc::ref
