//===- RecurrentTest.cpp - numerics of the recurrent layers ---------------===//
//
// Each scan against values worked out by hand for one or two tokens, and
// the property every decode step relies on: scanning T tokens at once
// gives, bit for bit, what T one-token steps give from the same state.
//
//===----------------------------------------------------------------------===//
#include "pimc/Numerics/Recurrent.h"
#include "pimc/Numerics/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace pimc::ref;

namespace {

std::vector<float> seeded(size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

TEST(Softplus, TorchThreshold) {
  EXPECT_FLOAT_EQ(softplus(0.0f), std::log(2.0f));
  EXPECT_EQ(softplus(20.5f), 20.5f);
  EXPECT_FLOAT_EQ(softplus(-3.0f), std::log1p(std::exp(-3.0f)));
}

TEST(CausalConv1d, ByHand) {
  // C = 1, K = 3: y_t = w0 u_{t-2} + w1 u_{t-1} + w2 u_t + b.
  float w[3] = {1.0f, 10.0f, 100.0f}, b[1] = {0.5f};
  float state[2] = {0.0f, 0.0f};
  float u[3] = {1.0f, 2.0f, 3.0f}, y[3];
  causalConv1d(u, 3, 1, 3, w, b, /*applySilu=*/false, state, y);
  EXPECT_EQ(y[0], 100.5f);
  EXPECT_EQ(y[1], 10.0f + 200.0f + 0.5f);
  EXPECT_EQ(y[2], 1.0f + 20.0f + 300.0f + 0.5f);
  EXPECT_EQ(state[0], 2.0f);
  EXPECT_EQ(state[1], 3.0f);
  float more[1] = {4.0f}, y4[1];
  causalConv1d(more, 1, 1, 3, w, nullptr, /*applySilu=*/true, state, y4);
  float pre = 2.0f + 30.0f + 400.0f;
  EXPECT_EQ(y4[0], silu(pre));
}

TEST(CausalConv1d, StepsEqualOneScan) {
  int64_t T = 7, C = 5, K = 4;
  auto u = seeded(T * C, 1), w = seeded(C * K, 2), b = seeded(C, 3);
  std::vector<float> s1((K - 1) * C, 0.0f), s2 = s1, y1(T * C), y2(T * C);
  causalConv1d(u.data(), T, C, K, w.data(), b.data(), true, s1.data(),
               y1.data());
  for (int64_t t = 0; t < T; ++t)
    causalConv1d(u.data() + t * C, 1, C, K, w.data(), b.data(), true, s2.data(),
                 y2.data() + t * C);
  EXPECT_EQ(y1, y2);
  EXPECT_EQ(s1, s2);
}

TEST(SSMScan, Mamba2ByHand) {
  // One head of dim 1, state 2, one group; from a zero state:
  //   S = (delta B) x,  y = S . C + D x.
  SSMShape s{1, 1, 2, 1};
  float x[1] = {2.0f}, dt[1] = {0.3f}, B[2] = {1.0f, -1.0f},
        Cm[2] = {0.5f, 2.0f};
  float aLog[1] = {0.0f}, D[1] = {0.25f}, dtBias[1] = {0.2f};
  float state[2] = {0.0f, 0.0f}, y[1];
  ssmScan(s, 1, x, dt, B, Cm, aLog, D, dtBias, state, y);
  float delta = softplus(0.5f);
  EXPECT_EQ(state[0], (delta * 1.0f) * 2.0f);
  EXPECT_EQ(state[1], (delta * -1.0f) * 2.0f);
  EXPECT_EQ(y[0], (state[0] * 0.5f + state[1] * 2.0f) + 0.25f * 2.0f);
  // The second token decays the state by exp(-delta') (A = -exp(0) = -1).
  float s0 = state[0];
  float x2[1] = {0.0f};
  ssmScan(s, 1, x2, dt, B, Cm, aLog, D, dtBias, state, y);
  EXPECT_EQ(state[0], s0 * std::exp(delta * -1.0f));
}

TEST(SSMScan, ClampAndGroups) {
  // Two heads in two groups: head 1 reads group 1's B and C. dt_max caps
  // delta.
  SSMShape s{2, 1, 1, 2};
  s.clampMax = true;
  s.dtMax = 0.1f;
  float x[2] = {1.0f, 1.0f}, dt[2] = {5.0f, -30.0f}, B[2] = {1.0f, 3.0f},
        Cm[2] = {1.0f, 1.0f}, aLog[2] = {0.0f, 0.0f}, D[2] = {0.0f, 0.0f},
        dtBias[2] = {0.0f, 0.0f}, state[2] = {0.0f, 0.0f}, y[2];
  ssmScan(s, 1, x, dt, B, Cm, aLog, D, dtBias, state, y);
  EXPECT_EQ(state[0], 0.1f * 1.0f);
  EXPECT_EQ(state[1], softplus(-30.0f) * 3.0f);
}

TEST(SSMScan, Mamba1PerStateDecayAndSteps) {
  // Mamba-1: 6 channels as heads of dim 1, A per (channel, state).
  SSMShape s{6, 1, 4, 1};
  s.decayPerState = true;
  int64_t T = 5;
  auto x = seeded(T * 6, 4), dt = seeded(T * 6, 5), B = seeded(T * 4, 6),
       Cm = seeded(T * 4, 7), aLog = seeded(6 * 4, 8, 0.5f), D = seeded(6, 9),
       dtBias = seeded(6, 10);
  std::vector<float> s1(6 * 4, 0.0f), s2 = s1, y1(T * 6), y2(T * 6);
  ssmScan(s, T, x.data(), dt.data(), B.data(), Cm.data(), aLog.data(), D.data(),
          dtBias.data(), s1.data(), y1.data());
  for (int64_t t = 0; t < T; ++t)
    ssmScan(s, 1, x.data() + t * 6, dt.data() + t * 6, B.data() + t * 4,
            Cm.data() + t * 4, aLog.data(), D.data(), dtBias.data(), s2.data(),
            y2.data() + t * 6);
  EXPECT_EQ(y1, y2);
  EXPECT_EQ(s1, s2);
  // Channel 0, state 1 after one token from zero: (delta B_1) x_0.
  std::vector<float> s3(6 * 4, 0.0f), y3(6);
  ssmScan(s, 1, x.data(), dt.data(), B.data(), Cm.data(), aLog.data(), D.data(),
          dtBias.data(), s3.data(), y3.data());
  EXPECT_EQ(s3[1], (softplus(dt[0] + dtBias[0]) * B[1]) * x[0]);
}

TEST(GatedDeltaRule, FirstTokenByHand) {
  // From a zero state: S = k^ (x) (beta v), o = (k^ . q^) beta v.
  DeltaRuleShape s{1, 1, 2, 2};
  float q[2] = {3.0f, 4.0f}, k[2] = {1.0f, 0.0f}, v[2] = {2.0f, -2.0f};
  float a[1] = {0.0f}, b[1] = {0.0f}, aLog[1] = {0.0f}, dtBias[1] = {0.0f};
  float state[4] = {}, o[2];
  gatedDeltaRule(s, 1, q, k, v, a, b, aLog, dtBias, state, o);
  float kn = 1.0f / std::sqrt(1.0f + 1e-6f);
  float qn0 = 3.0f * (1.0f / std::sqrt(25.0f + 1e-6f)) / std::sqrt(2.0f);
  EXPECT_FLOAT_EQ(state[0], kn * (2.0f * 0.5f));
  EXPECT_FLOAT_EQ(state[1], kn * (-2.0f * 0.5f));
  EXPECT_EQ(state[2], 0.0f);
  EXPECT_FLOAT_EQ(o[0], state[0] * qn0);
  EXPECT_FLOAT_EQ(o[1], state[1] * qn0);
}

TEST(GatedDeltaRule, DecayThenDeltaAndSteps) {
  // Two value heads per key head; the second token reads the decayed state.
  DeltaRuleShape s{2, 4, 8, 4};
  int64_t T = 4;
  auto q = seeded(T * 16, 11), k = seeded(T * 16, 12), v = seeded(T * 16, 13),
       a = seeded(T * 4, 14), b = seeded(T * 4, 15), aLog = seeded(4, 16),
       dtBias = seeded(4, 17);
  std::vector<float> s1(4 * 8 * 4, 0.0f), s2 = s1, o1(T * 16), o2(T * 16);
  gatedDeltaRule(s, T, q.data(), k.data(), v.data(), a.data(), b.data(),
                 aLog.data(), dtBias.data(), s1.data(), o1.data());
  for (int64_t t = 0; t < T; ++t)
    gatedDeltaRule(s, 1, q.data() + t * 16, k.data() + t * 16,
                   v.data() + t * 16, a.data() + t * 4, b.data() + t * 4,
                   aLog.data(), dtBias.data(), s2.data(), o2.data() + t * 16);
  EXPECT_EQ(o1, o2);
  EXPECT_EQ(s1, s2);
  // A key equal to the last one, with beta -> 1 and no decay, reads back
  // the stored value: the delta rule's error-correcting write.
  DeltaRuleShape one{1, 1, 2, 1};
  float kk[2] = {0.6f, 0.8f}, vv[1] = {5.0f}, big[1] = {40.0f},
        none[1] = {-1e30f}, zero[1] = {0.0f}, st[2] = {0.3f, -0.2f}, out[1];
  gatedDeltaRule(one, 1, kk, kk, vv, none, big, zero, zero, st, out);
  // o = S^T q^ with q^ = k^ / sqrt(2): S^T k^ = v exactly up to rounding.
  EXPECT_NEAR(out[0] * std::sqrt(2.0f), 5.0f, 1e-4f);
}

TEST(GatedRMSNorm, BothOrdersGroupedAndShared) {
  float y[4] = {1.0f, 2.0f, 3.0f, 4.0f}, z[4] = {0.5f, -1.0f, 2.0f, 0.0f};
  float w[2] = {2.0f, 3.0f}, out[4];
  // Norm first, per group of 2, the weight shared by the groups.
  gatedRmsNorm(y, z, 1, 4, 2, w, 2, 0.0f, true, out);
  float r0 = 1.0f / std::sqrt((1.0f + 4.0f) / 2.0f);
  float r1 = 1.0f / std::sqrt((9.0f + 16.0f) / 2.0f);
  EXPECT_FLOAT_EQ(out[0], 2.0f * (1.0f * r0) * silu(0.5f));
  EXPECT_FLOAT_EQ(out[3], 3.0f * (4.0f * r1) * silu(0.0f));
  EXPECT_FLOAT_EQ(out[2], 2.0f * (3.0f * r1) * silu(2.0f));
  // Gate first, full width, a weight per feature.
  float wf[4] = {1.0f, 1.0f, 1.0f, 2.0f};
  gatedRmsNorm(y, z, 1, 4, 4, wf, 4, 0.0f, false, out);
  float g[4];
  for (int i = 0; i < 4; ++i)
    g[i] = y[i] * silu(z[i]);
  float r =
      1.0f /
      std::sqrt((g[0] * g[0] + g[1] * g[1] + g[2] * g[2] + g[3] * g[3]) / 4.0f);
  EXPECT_FLOAT_EQ(out[1], g[1] * r);
  EXPECT_EQ(out[3], 0.0f);
}

} // namespace
