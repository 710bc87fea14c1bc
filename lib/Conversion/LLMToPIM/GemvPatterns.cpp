//===- GemvPatterns.cpp - llm GEMVs to pim.gemv ---------------------------===//
//
// The GEMV family: llm.linear, llm.gated_mlp and llm.lm_head. Linears that
// read the same input with the same K, one after another (Q/K/V), become
// one pim.gemv: one input broadcast for all of them. The gated MLP is the
// gate/up GEMV, the activation and the down GEMV.
//
//===----------------------------------------------------------------------===//
#include "CostModel.h"
#include "Patterns.h"

#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace pimc;
using namespace pimc::pim;
using namespace pimc::pim::detail;

namespace {

/// `input`'s type with N outputs in its last dim.
RankedTensorType outputType(Value input, int64_t n) {
  auto t = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape(t.getShape());
  shape.back() = n;
  return RankedTensorType::get(shape, t.getElementType());
}

GemvOp createGemv(OpBuilder &b, Operation *source, Value input,
                  ArrayRef<Value> weights, ArrayRef<Value> biases,
                  ArrayRef<bool> biased, TypeRange results, StringRef name) {
  auto gemv = GemvOp::create(
      b, source->getLoc(), results, input, weights, biases, Value(),
      b.getDenseBoolArrayAttr(biased),
      b.getStringAttr(source->getName().getStringRef()),
      name.empty() ? StringAttr() : b.getStringAttr(name), IntegerAttr());
  copyDispatch(source, gemv);
  return gemv;
}

/// llm.linear and the linears right after it (weights in between) that
/// read the same input with the same K: one pim.gemv at the last of them.
struct LinearGroupPattern : OpConversionPattern<llm::LinearOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::LinearOp first, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t K = weightShape(first.getWeight().getType()).second;
    SmallVector<llm::LinearOp> group;
    for (Operation *p = first; p; p = p->getNextNode()) {
      if (isa<llm::WeightOp>(p))
        continue;
      auto l = dyn_cast<llm::LinearOp>(p);
      if (!l || l.getInput() != first.getInput() || !hasCheckpointWeights(l) ||
          weightShape(l.getWeight().getType()).second != K)
        break;
      group.push_back(l);
    }
    SmallVector<Value> weights, biases;
    SmallVector<bool> biased;
    SmallVector<Type> results;
    for (llm::LinearOp l : group) {
      weights.push_back(l.getWeight());
      biased.push_back(bool(l.getBias()));
      if (l.getBias())
        biases.push_back(l.getBias());
      results.push_back(l.getType());
    }
    // At the last linear: every weight is defined by then.
    rewriter.setInsertionPoint(group.back());
    GemvOp gemv = createGemv(rewriter, first, first.getInput(), weights, biases,
                             biased, results, "");
    for (auto [l, r] : llvm::zip(group, gemv.getResults()))
      rewriter.replaceOp(l, r);
    return success();
  }
};

/// down(act(gate x) * up x): the gate/up GEMV, the activation, the down
/// GEMV.
struct GatedMLPPattern : OpConversionPattern<llm::GatedMLPOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::GatedMLPOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t I = weightShape(op.getGate().getType()).first;
    RankedTensorType mid = outputType(op.getInput(), I);
    GemvOp gateUp =
        createGemv(rewriter, op, op.getInput(), {op.getGate(), op.getUp()}, {},
                   {false, false}, {mid, mid}, "gate_up");
    auto gated = GatedActOp::create(
        rewriter, op.getLoc(), mid, gateUp.getResult(0), gateUp.getResult(1),
        rewriter.getStringAttr(llm::stringifyActivation(op.getActivation())),
        FloatAttr(), FloatAttr());
    GemvOp down = createGemv(rewriter, op, gated, {op.getDown()}, {}, {false},
                             {op.getType()}, "down");
    rewriter.replaceOp(op, down.getResult(0));
    return success();
  }
};

struct LMHeadPattern : OpConversionPattern<llm::LMHeadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::LMHeadOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    GemvOp gemv = createGemv(rewriter, op, op.getInput(), {op.getWeight()}, {},
                             {false}, {op.getType()}, "lm_head");
    rewriter.replaceOp(op, gemv.getResult(0));
    return success();
  }
};

} // namespace

void pimc::pim::detail::populateGemvPatterns(RewritePatternSet &patterns) {
  patterns.add<LinearGroupPattern, GatedMLPPattern, LMHeadPattern>(
      patterns.getContext());
}
