//===- Raise.cpp - raising passes and the llm-raise pipeline --------------===//
#include "pimc/Checkpoint/Safetensors.h"
#include "pimc/Dialect/LLM/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace pimc::llm {

#define GEN_PASS_DEF_RAISENORMS
#define GEN_PASS_DEF_RAISEGATEDMLP
#define GEN_PASS_DEF_RAISEATTENTION
#define GEN_PASS_DEF_RAISEROPE
#define GEN_PASS_DEF_RAISEMOE
#include "pimc/Dialect/LLM/Transforms/Passes.h.inc"

namespace {

/// Runs one populate function with the greedy rewriter. The patterns only
/// create ops that verify, so a non-converging rewrite is a bug in a
/// pattern, reported as a pass failure.
LogicalResult runPatterns(Operation *root,
                          function_ref<void(RewritePatternSet &)> populate) {
  RewritePatternSet patterns(root->getContext());
  populate(patterns);
  return applyPatternsGreedily(root, std::move(patterns));
}

/// Opens the `weights` option's files once per pass instance.
LogicalResult openWeights(MLIRContext *ctx, ArrayRef<std::string> files,
                          std::shared_ptr<const ckpt::WeightStore> &store) {
  if (files.empty())
    return success();
  auto opened = ckpt::WeightStore::openFiles(files);
  if (!opened)
    return emitError(UnknownLoc::get(ctx))
           << "llm-raise: cannot read weights: "
           << llvm::toString(opened.takeError());
  store = std::move(*opened);
  return success();
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
  using RaiseAttentionBase::RaiseAttentionBase;
  std::shared_ptr<const ckpt::WeightStore> weights;

  LogicalResult initialize(MLIRContext *ctx) override {
    return openWeights(ctx, weightFiles, weights);
  }
  void runOnOperation() override {
    if (failed(runPatterns(getOperation(), [&](RewritePatternSet &p) {
          populateRaiseAttentionPatterns(p, weights.get());
        })))
      signalPassFailure();
  }
};

struct RaiseRopePass : impl::RaiseRopeBase<RaiseRopePass> {
  using RaiseRopeBase::RaiseRopeBase;
  std::shared_ptr<const ckpt::WeightStore> weights;

  LogicalResult initialize(MLIRContext *ctx) override {
    return openWeights(ctx, weightFiles, weights);
  }
  void runOnOperation() override {
    if (failed(runPatterns(getOperation(), [&](RewritePatternSet &p) {
          populateRaiseRopePatterns(p, weights.get());
        })))
      signalPassFailure();
  }
};

struct RaiseMoEPass : impl::RaiseMoEBase<RaiseMoEPass> {
  using RaiseMoEBase::RaiseMoEBase;
  std::shared_ptr<const ckpt::WeightStore> weights;

  LogicalResult initialize(MLIRContext *ctx) override {
    return openWeights(ctx, weightFiles, weights);
  }
  void runOnOperation() override {
    // Dispatch first, so the expert-sum pattern sees every term dense.
    if (failed(runPatterns(getOperation(), [&](RewritePatternSet &p) {
          populateDensifySparseDispatchPatterns(p);
        })))
      return signalPassFailure();
    if (failed(runPatterns(getOperation(), [&](RewritePatternSet &p) {
          populateRaiseMoEPatterns(p, weights.get());
        })))
      signalPassFailure();
  }
};

/// Options of the `llm-raise` pipeline.
struct RaisePipelineOptions : PassPipelineOptions<RaisePipelineOptions> {
  ListOption<std::string> weights{
      *this, "weights",
      llvm::cl::desc("safetensors files of the graph, for buffer-backed "
                     "rotary tables and masks")};
};

} // namespace

void buildRaisePipeline(OpPassManager &pm, ArrayRef<std::string> weightFiles) {
  // Norms and rope first: attention then sees the rotated q/k, and the
  // layout shuffles each fused op adds cancel in the final canonicalize.
  SmallVector<std::string> files(weightFiles.begin(), weightFiles.end());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createRaiseNorms());
  pm.addPass(createRaiseRope(RaiseRopeOptions{files}));
  pm.addPass(createRaiseAttention(RaiseAttentionOptions{files}));
  pm.addPass(createRaiseGatedMLP());
  // MoE experts must already be gated MLPs.
  pm.addPass(createRaiseMoE(RaiseMoEOptions{files}));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

LogicalResult raiseGraph(ModuleOp module, ArrayRef<std::string> weightFiles) {
  PassManager pm(module->getContext());
  buildRaisePipeline(pm, weightFiles);
  return pm.run(module);
}

void registerRaisePasses() {
  registerPass([] { return createRaiseNorms(); });
  registerPass([] { return createRaiseGatedMLP(); });
  registerPass([] { return createRaiseAttention(); });
  registerPass([] { return createRaiseRope(); });
  registerPass([] { return createRaiseMoE(); });
  registerPass([] { return createSynthesizeDecode(); });
  PassPipelineRegistration<RaisePipelineOptions>(
      "llm-raise",
      "recover fused llm ops (norms, rope, attention, gated MLP, MoE) from "
      "imported primitive-op graphs",
      [](OpPassManager &pm, const RaisePipelineOptions &options) {
        buildRaisePipeline(pm, options.weights);
      });
}

} // namespace pimc::llm
