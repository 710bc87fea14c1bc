//===- Raise.cpp - raising passes and the llm-raise pipeline --------------===//
#include "pimc/Dialect/LLM/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace pimc::llm {

#define GEN_PASS_DEF_RAISENORMS
#define GEN_PASS_DEF_RAISEGATEDMLP
#define GEN_PASS_DEF_RAISEATTENTION
#define GEN_PASS_DEF_RAISEROPE
#include "pimc/Dialect/LLM/Transforms/Passes.h.inc"

namespace {

/// Runs one populate function with the greedy rewriter. The patterns only
/// create ops that verify, so a non-converging rewrite is a bug in a
/// pattern, reported as a pass failure.
LogicalResult runPatterns(Operation *root,
                          void (*populate)(RewritePatternSet &)) {
  RewritePatternSet patterns(root->getContext());
  populate(patterns);
  return applyPatternsGreedily(root, std::move(patterns));
}

struct RaiseNormsPass : impl::RaiseNormsBase<RaiseNormsPass> {
  void runOnOperation() override {
    if (failed(runPatterns(getOperation(), populateRaiseNormPatterns)))
      signalPassFailure();
  }
};

struct RaiseGatedMLPPass : impl::RaiseGatedMLPBase<RaiseGatedMLPPass> {
  void runOnOperation() override {
    if (failed(runPatterns(getOperation(), populateRaiseGatedMLPPatterns)))
      signalPassFailure();
  }
};

struct RaiseAttentionPass : impl::RaiseAttentionBase<RaiseAttentionPass> {
  void runOnOperation() override {
    if (failed(runPatterns(getOperation(), populateRaiseAttentionPatterns)))
      signalPassFailure();
  }
};

struct RaiseRopePass : impl::RaiseRopeBase<RaiseRopePass> {
  void runOnOperation() override {
    if (failed(runPatterns(getOperation(), populateRaiseRopePatterns)))
      signalPassFailure();
  }
};

} // namespace

void buildRaisePipeline(OpPassManager &pm) {
  // Norms and rope first: attention then sees the rotated q/k, and the
  // layout shuffles each fused op adds cancel in the final canonicalize.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createRaiseNorms());
  pm.addPass(createRaiseRope());
  pm.addPass(createRaiseAttention());
  pm.addPass(createRaiseGatedMLP());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void registerRaisePasses() {
  registerPass([] { return createRaiseNorms(); });
  registerPass([] { return createRaiseGatedMLP(); });
  registerPass([] { return createRaiseAttention(); });
  registerPass([] { return createRaiseRope(); });
  PassPipelineRegistration<>(
      "llm-raise",
      "recover fused llm ops (norms, rope, attention, gated MLP) from "
      "imported primitive-op graphs",
      buildRaisePipeline);
}

} // namespace pimc::llm
