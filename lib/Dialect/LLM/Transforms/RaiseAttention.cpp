//===- RaiseAttention.cpp - matmul-softmax-matmul -> llm.attention --------===//
#include "GraphMatch.h"
#include "pimc/Dialect/LLM/Transforms/Passes.h"

using namespace mlir;

namespace pimc::llm {

void populateRaiseAttentionPatterns(RewritePatternSet &) {}

} // namespace pimc::llm
