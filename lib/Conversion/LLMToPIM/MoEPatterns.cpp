//===- MoEPatterns.cpp - llm.moe to expert GEMVs on PIM -------------------===//
//
// llm.moe on the PIM units (docs/backend.md, "MoE on PIM"), one token:
//   * the router, and Qwen2-MoE's shared expert gate, as one pim.gemv (one
//     input broadcast), on the unit pim-dispatch chose for it
//     (pim.router_dispatch: the host in f32 when the PIM input is bf16);
//   * pim.moe_route: the top-k experts and their weights;
//   * per slot j < k, the gated MLP of expert experts[j]: an expert GEMV
//     for gate/up, pim.gated_act, an expert GEMV for down. The E experts'
//     weights stay resident; only the selected one's stream;
//   * pim.moe_combine: the weighted sum, in ascending expert index, then
//     the shared expert, an llm.gated_mlp (converted like any other): a
//     last part weighted sigmoid(gate), which pim.moe_route computes, or
//     added after the combine when it has no gate.
//
//===----------------------------------------------------------------------===//
#include "CostModel.h"
#include "Patterns.h"

#include "pimc/Conversion/LLMToPIM/Passes.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace pimc;
using namespace pimc::pim;
using namespace pimc::pim::detail;

bool pimc::pim::detail::moeMapsToPIM(llm::MoEOp op) {
  auto x = cast<RankedTensorType>(op.getInput().getType());
  // One token (decode: [1, H] or the step's [?, H]), the scale on the
  // output, checkpoint weights, a routing moe_route computes (DeepSeek's
  // groups, correction bias and epsilon are not in it yet).
  return x.getRank() == 2 && x.getDimSize(0) <= 1 && !op.getWeightOnInput() &&
         !op.hasDeepSeekRouting() &&
         op.getRenormalizeEpsilon().convertToFloat() == 0.0f &&
         hasCheckpointWeights(op);
}

namespace {

/// `like` [T, H] with n columns.
RankedTensorType rowType(RankedTensorType like, int64_t n) {
  return RankedTensorType::get({like.getDimSize(0), n}, like.getElementType());
}

struct MoEPattern : OpConversionPattern<llm::MoEOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::MoEOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!moeMapsToPIM(op))
      return rewriter.notifyMatchFailure(op, "not a one-token MoE on PIM");
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    int64_t E = op.getNumExperts(), k = op.getTopK(), H = xt.getDimSize(1);
    GemvOp router = routerGemv(op, rewriter);
    Type f32 = rewriter.getF32Type();
    // A gated shared expert is one more weighted part of the combine: its
    // weight sigmoid(gate . x) comes out of the routing.
    bool gated = op.hasSharedExpertGate();
    Value sharedLogit = gated ? router.getResult(1) : Value();
    auto route = MoERouteOp::create(
        rewriter, loc, RankedTensorType::get({k + (gated ? 1 : 0)}, f32),
        RankedTensorType::get({k}, rewriter.getI32Type()), router.getResult(0),
        sharedLogit, k, op.getScoring() == llm::MoEScoring::Sigmoid,
        op.getOrder() == llm::MoERoutingOrder::TopkThenScore,
        op.getRenormalize(), op.getRoutedScalingFactor());
    // Expert-major: gate_e, up_e for e < E.
    SmallVector<Value> gateUp, down(op.getDown());
    for (int64_t e = 0; e < E; ++e)
      gateUp.append({op.getGate()[e], op.getUp()[e]});
    int64_t I = weightShape(op.getGate()[0].getType()).first;
    RankedTensorType mid = rowType(xt, I);
    SmallVector<Value> outs;
    for (int64_t j = 0; j < k; ++j) {
      std::string slot = "slot" + std::to_string(j);
      // Expert biases (gpt-oss) are stacked [E, n]: the GEMV adds row
      // experts[j].
      SmallVector<Value> guBiases, downBiases;
      if (op.hasExpertBiases()) {
        guBiases = {op.getGateBias(), op.getUpBias()};
        downBiases = {op.getDownBias()};
      }
      GemvOp gu = expertGemv(rewriter, op, x, gateUp, guBiases, {mid, mid},
                             slot + ".gate_up", route.getExperts(), j);
      auto act = GatedActOp::create(
          rewriter, loc, mid, gu.getResult(0), gu.getResult(1),
          rewriter.getStringAttr(llm::stringifyActivation(op.getActivation())),
          op.getSwigluLimitAttr(), op.getSwigluAlphaAttr());
      outs.push_back(expertGemv(rewriter, op, act, down, downBiases,
                                {rowType(xt, H)}, slot + ".down",
                                route.getExperts(), j)
                         .getResult(0));
    }
    if (gated)
      outs.push_back(sharedExpert(op, rewriter));
    Value y = MoECombineOp::create(rewriter, loc, xt, route.getWeights(), outs);
    if (op.hasSharedExpert() && !gated)
      y = llm::AddOp::create(rewriter, loc, xt, y, sharedExpert(op, rewriter));
    rewriter.replaceOp(op, y);
    return success();
  }

  /// The MoE's unit on `to`, without its cost (counted once).
  static void unitOnly(llm::MoEOp op, Operation *to) {
    if (Attribute unit = op->getAttr(kDispatchAttrName))
      to->setAttr(kDispatchAttrName, unit);
  }

  /// The router's logits [1, E] (+ its bias), and the shared expert gate's
  /// logit [1, 1] when there is one: the same input, one GEMV.
  static GemvOp routerGemv(llm::MoEOp op, ConversionPatternRewriter &rw) {
    auto xt = cast<RankedTensorType>(op.getInput().getType());
    SmallVector<Value> weights{op.getRouterWeight()}, biases;
    SmallVector<bool> biased{bool(op.getRouterBias())};
    SmallVector<Type> results{rowType(xt, op.getNumExperts())};
    if (op.getRouterBias())
      biases.push_back(op.getRouterBias());
    if (Value g = op.getSharedExpertGate()) {
      weights.push_back(g);
      biased.push_back(false);
      results.push_back(rowType(xt, 1));
    }
    auto gemv =
        GemvOp::create(rw, op.getLoc(), results, op.getInput(), weights, biases,
                       Value(), rw.getDenseBoolArrayAttr(biased),
                       rw.getStringAttr(op->getName().getStringRef()),
                       rw.getStringAttr("router"), IntegerAttr());
    unitOnly(op, gemv);
    if (auto unit = op->getAttrOfType<StringAttr>(kRouterDispatchAttrName))
      gemv->setAttr(kDispatchAttrName, unit);
    return gemv;
  }

  static GemvOp expertGemv(ConversionPatternRewriter &rw, llm::MoEOp op,
                           Value input, ArrayRef<Value> weights,
                           ArrayRef<Value> biases, TypeRange results,
                           StringRef name, Value experts, int64_t slot) {
    SmallVector<bool> biased(results.size(), !biases.empty());
    auto gemv =
        GemvOp::create(rw, op.getLoc(), results, input, weights, biases,
                       experts, rw.getDenseBoolArrayAttr(biased),
                       rw.getStringAttr(op->getName().getStringRef()),
                       rw.getStringAttr(name), rw.getI64IntegerAttr(slot));
    // The MoE's cost estimate (all of it) goes with its first expert GEMV.
    if (slot == 0 && name.ends_with("gate_up"))
      copyDispatch(op, gemv);
    else
      unitOnly(op, gemv);
    return gemv;
  }

  /// The shared expert's output (a dense gated MLP).
  static Value sharedExpert(llm::MoEOp op, ConversionPatternRewriter &rw) {
    auto mlp = llm::GatedMLPOp::create(rw, op.getLoc(), op.getInput().getType(),
                                       op.getInput(), op.getSharedGate(),
                                       op.getSharedUp(), op.getSharedDown(),
                                       op.getActivation());
    unitOnly(op, mlp);
    return mlp;
  }
};

} // namespace

void pimc::pim::detail::populateMoEPatterns(RewritePatternSet &patterns) {
  patterns.add<MoEPattern>(patterns.getContext());
}
