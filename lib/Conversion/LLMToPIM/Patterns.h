//===- Patterns.h - convert-llm-to-pim's pattern families ------*- C++ -*-===//
//
// Internal to lib/Conversion/LLMToPIM: one populate function per op family
// (a file each). convert-llm-to-pim (ConvertLLMToPIM.cpp) applies them all
// under one ConversionTarget.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_CONVERSION_LLMTOPIM_PATTERNS_H
#define PIMC_CONVERSION_LLMTOPIM_PATTERNS_H

#include "pimc/Dialect/LLM/IR/LLMDialect.h"

#include "mlir/IR/PatternMatch.h"

namespace pimc::pim::detail {

/// llm.linear (fused with the next linears that share its input),
/// llm.gated_mlp and llm.lm_head to pim.gemv (+ pim.gated_act).
void populateGemvPatterns(mlir::RewritePatternSet &patterns);

/// llm.kv_cache_append + llm.kv_cache_read + llm.attention to
/// pim.attention.
void populateAttentionPatterns(mlir::RewritePatternSet &patterns);

/// llm.moe to the router GEMV, pim.moe_route, the expert GEMVs and
/// pim.moe_combine (MoEPatterns.cpp).
void populateMoEPatterns(mlir::RewritePatternSet &patterns);

/// An llm.moe that MoEPatterns maps onto the PIM units: one token, the
/// routing weight on the output, checkpoint weights.
bool moeMapsToPIM(llm::MoEOp op);

/// A projection's weights (and bias) are all llm.weight: it can stream
/// from device memory.
bool hasCheckpointWeights(mlir::Operation *op);

/// Copies the dispatch decision (pim.dispatch, pim.cost) of `from`.
void copyDispatch(mlir::Operation *from, mlir::Operation *to);

} // namespace pimc::pim::detail

#endif // PIMC_CONVERSION_LLMTOPIM_PATTERNS_H
