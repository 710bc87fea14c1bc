//===- Recurrent.h - numerics of the recurrent layers ---------*- C++ -*-===//
//
// The reference numerics of llm.causal_conv1d, llm.ssm_scan,
// llm.gated_delta_rule and llm.gated_rms_norm (LLMRecurrentOps.td states
// each formula). All f32, sums in increasing index order. Each scan takes
// T tokens, row-major [T, features], and updates its state in place.
// No MLIR here: the interpreter maps the ops onto these functions.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_NUMERICS_RECURRENT_H
#define PIMC_NUMERICS_RECURRENT_H

#include <cstdint>

namespace pimc::ref {

/// torch.nn.functional.softplus with beta 1, threshold 20.
float softplus(float x);

/// Depthwise causal conv over T tokens of C channels, kernel K: `state`
/// [C, K - 1] holds the K - 1 inputs before the first token (oldest first)
/// and is updated to the last K - 1. weight [C, K], bias [C] or null.
void causalConv1d(const float *u, int64_t T, int64_t C, int64_t K,
                  const float *weight, const float *bias, bool applySilu,
                  float *state, float *y);

struct SSMShape {
  int64_t heads = 0, headDim = 0, stateSize = 0, groups = 1;
  bool decayPerState = false; // a_log [heads, stateSize] (Mamba-1)
  float dtMin = 0.0f, dtMax = 0.0f;
  bool clampMax = false;
};

/// The selective scan: x [T, heads*headDim], dt [T, heads], b and c
/// [T, groups*stateSize], aLog [heads] or [heads, stateSize], d and dtBias
/// [heads], state [heads, headDim, stateSize]; y [T, heads*headDim].
void ssmScan(const SSMShape &s, int64_t T, const float *x, const float *dt,
             const float *b, const float *c, const float *aLog, const float *d,
             const float *dtBias, float *state, float *y);

struct DeltaRuleShape {
  int64_t keyHeads = 0, valueHeads = 0, keyDim = 0, valueDim = 0;
};

/// The gated delta rule: q, k [T, keyHeads*keyDim], v [T, valueHeads*
/// valueDim], a, b [T, valueHeads], aLog and dtBias [valueHeads], state
/// [valueHeads, keyDim, valueDim]; o [T, valueHeads*valueDim].
void gatedDeltaRule(const DeltaRuleShape &s, int64_t T, const float *q,
                    const float *k, const float *v, const float *a,
                    const float *b, const float *aLog, const float *dtBias,
                    float *state, float *o);

/// llm.gated_rms_norm over rows of D features in groups of `group`: weight
/// has D elements, or `group` shared by every group.
void gatedRmsNorm(const float *y, const float *z, int64_t T, int64_t D,
                  int64_t group, const float *weight, int64_t weightSize,
                  float eps, bool normBeforeGate, float *out);

} // namespace pimc::ref

#endif // PIMC_NUMERICS_RECURRENT_H
