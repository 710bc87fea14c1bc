//===- ConvertLLMToPIM.cpp - convert-llm-to-pim: the device ops -----------===//
//
// The llm ops of @forward that become device work are rewritten to the pim
// tensor-level ops, by pattern families (GemvPatterns.cpp,
// AttentionPatterns.cpp) under one ConversionTarget: the GEMVs, the KV
// cache and the attention are illegal in llm form; every other llm op stays
// and runs on the host (pim-build-program emits it as a host op).
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

#include "pimc/Conversion/LLMToPIM/Passes.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace pimc;
using namespace pimc::pim;

void pimc::pim::detail::copyDispatch(Operation *from, Operation *to) {
  for (StringRef k : {kDispatchAttrName, kCostAttrName})
    if (Attribute a = from->getAttr(k))
      to->setAttr(k, a);
}

bool pimc::pim::detail::hasCheckpointWeights(Operation *op) {
  return llvm::all_of(op->getOperands().drop_front(), [](Value v) {
    return v.getDefiningOp<llm::WeightOp>() != nullptr;
  });
}

LogicalResult pimc::pim::convertLLMToPIM(ModuleOp module) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("no func.func @forward to compile");
  MLIRContext *ctx = module.getContext();
  ConversionTarget target(*ctx);
  target.addLegalDialect<PIMDialect, llm::LLMDialect>();
  target.addIllegalOp<llm::KVCacheAppendOp, llm::KVCacheReadOp,
                      llm::AttentionOp>();
  // Projections whose weights are not checkpoint tensors (an ONNX graph's
  // inlined constants) stay llm ops: host calls.
  target.addDynamicallyLegalOp<llm::LinearOp, llm::GatedMLPOp, llm::LMHeadOp>(
      [](Operation *op) { return !detail::hasCheckpointWeights(op); });
  // MoE on PIM unless the dispatch kept it on the host (a host call).
  target.addDynamicallyLegalOp<llm::MoEOp>(
      [](Operation *op) { return !hasOwnLowering(op); });
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  RewritePatternSet patterns(ctx);
  detail::populateGemvPatterns(patterns);
  detail::populateAttentionPatterns(patterns);
  detail::populateMoEPatterns(patterns);
  return applyPartialConversion(forward, target, std::move(patterns));
}

namespace pimc::pim {
#define GEN_PASS_DEF_CONVERTLLMTOPIM
#include "pimc/Conversion/LLMToPIM/Passes.h.inc"
} // namespace pimc::pim

namespace {
struct ConvertLLMToPIMPass
    : public pimc::pim::impl::ConvertLLMToPIMBase<ConvertLLMToPIMPass> {
  void runOnOperation() override {
    if (failed(convertLLMToPIM(getOperation())))
      signalPassFailure();
  }
};
} // namespace
