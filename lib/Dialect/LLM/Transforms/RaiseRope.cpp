//===- RaiseRope.cpp - x*cos + rotate_half(x)*sin -> llm.rope -------------===//
#include "GraphMatch.h"
#include "pimc/Dialect/LLM/Transforms/Passes.h"

using namespace mlir;

namespace pimc::llm {

void populateRaiseRopePatterns(RewritePatternSet &) {}

} // namespace pimc::llm
