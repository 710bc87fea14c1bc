//===- AlibiBias.h - ALiBi recognised in an attention mask -----*- C++ -*-===//
//
// transformers' sdpa path for ALiBi models (Falcon-RW, BLOOM) folds the
// bias into the attention mask: softmax(q k^T * c + select(hidden, -inf,
// alibi * c)). llm-raise-attention recognises the bias here and gives
// llm.attention its `alibi_slopes`, after checking the bias over the whole
// position range (docs/raising.md).
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_LIB_DIALECT_LLM_TRANSFORMS_ALIBIBIAS_H
#define PIMC_LIB_DIALECT_LLM_TRANSFORMS_ALIBIBIAS_H

#include "mlir/IR/Value.h"

#include <optional>
#include <vector>

namespace pimc::ckpt {
class WeightStore;
} // namespace pimc::ckpt

namespace pimc::llm {

/// Mask values at or below this hide a key: exp(s + m - max) is exactly 0
/// in f32 for every score |s| < 1e8 (HF uses finfo.min, hand-written models
/// -inf or -1e9).
constexpr double kMaskedBelow = -1e9;

/// The part of an additive attention mask that does not hide keys: `mask`
/// with its hiding selects (select(c, fill, b) with a splat fill at or below
/// kMaskedBelow) and its 0 / hiding additive terms peeled off.
mlir::Value maskBias(mlir::Value mask, const ckpt::WeightStore *weights);

/// Where the traced [T, S] scores of a [heads, T, S] attention see their
/// keys, and the bias they add to the scaled scores.
struct TracedBias {
  mlir::Value bias;          ///< broadcastable to [.., heads, T, S]
  std::vector<bool> visible; ///< [T, S], the same for every head
  int64_t heads = 0, T = 0, S = 0;
};

/// The ALiBi slopes (ref::alibiSlopes(heads)) if the bias is ALiBi's for
/// scores scaled by `scale`: at every visible key s of head h it is
/// alibiBias(m_h, s) * scale (f32, within 4 ulps: the graph divides, the
/// op multiplies). Checked at the traced positions and, with the
/// arange-valued values under the bias bound to moved positions, with the
/// keys at o .. o+S-1 for offsets o up to 2^20.
std::optional<std::vector<float>>
matchAlibiBias(const TracedBias &b, double scale, const ckpt::WeightStore *w);

} // namespace pimc::llm

#endif // PIMC_LIB_DIALECT_LLM_TRANSFORMS_ALIBIBIAS_H
