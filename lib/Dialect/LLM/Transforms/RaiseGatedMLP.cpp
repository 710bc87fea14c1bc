//===- RaiseGatedMLP.cpp - down(act(gate(x)) * up(x)) -> llm.gated_mlp ----===//
#include "GraphMatch.h"
#include "pimc/Dialect/LLM/Transforms/Passes.h"

using namespace mlir;

namespace pimc::llm {

namespace {

/// The [N, K] shape of a dense or quantized weight.
ArrayRef<int64_t> weightShape(Value w) {
  if (auto q = dyn_cast<QuantizedWeightType>(w.getType()))
    return q.getShape();
  return cast<RankedTensorType>(w.getType()).getShape();
}

/// The gate projection and activation of `v` = act(linear(x, Wg)).
/// SiLU also appears spelled out as `g * sigmoid(g)`.
/// The projections may sit inside reshapes that flatten the leading dims
/// (nn.Linear on [1, T, H] is traced as mm on [T, H]); those keep rows.
LinearOp projection(Value v) { return defOp<LinearOp>(stripRowReshape(v)); }

std::optional<std::pair<LinearOp, Activation>> matchActivation(Value v) {
  if (auto silu = defOp<SiluOp>(v))
    if (auto gate = projection(silu.getInput()))
      return std::make_pair(gate, Activation::Silu);
  if (auto gelu = defOp<GeluOp>(v))
    if (auto gate = projection(gelu.getInput()))
      return std::make_pair(gate, gelu.getApproximate() ? Activation::GeluTanh
                                                        : Activation::Gelu);
  if (auto mul = defOp<MulOp>(v)) {
    std::optional<std::pair<LinearOp, Activation>> found;
    matchEitherOrder(mul, [&](Value g, Value s) {
      auto sig = defOp<SigmoidOp>(s);
      auto gate = projection(g);
      if (!sig || !gate || sig.getInput() != g)
        return false;
      found = std::make_pair(gate, Activation::Silu);
      return true;
    });
    return found;
  }
  return std::nullopt;
}

/// down(act(gate(x)) * up(x)) -> llm.gated_mlp. The projections must be
/// bias-free (gated_mlp has no biases) and read the same x.
struct RaiseGatedMLP : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LinearOp down,
                                PatternRewriter &rewriter) const override {
    if (down.getBias())
      return rewriter.notifyMatchFailure(down, "down projection has a bias");
    auto prod = defOp<MulOp>(stripRowReshape(down.getInput()));
    if (!prod)
      return rewriter.notifyMatchFailure(down, "input is not a product");
    LinearOp gate, up;
    Activation act = Activation::Silu;
    bool matched = matchEitherOrder(prod, [&](Value a, Value b) {
      auto g = matchActivation(a);
      auto u = projection(b);
      if (!g || !u || g->first == u)
        return false;
      gate = g->first;
      act = g->second;
      up = u;
      return true;
    });
    if (!matched)
      return rewriter.notifyMatchFailure(down, "not act(gate(x)) * up(x)");
    Value x = gate.getInput();
    if (x != up.getInput() &&
        (x.getType() != up.getInput().getType() ||
         stripRowReshape(x) != stripRowReshape(up.getInput())))
      return rewriter.notifyMatchFailure(down,
                                         "gate and up read different inputs");
    if (gate.getBias() || up.getBias())
      return rewriter.notifyMatchFailure(down, "gate/up projection has a bias");
    auto xType = dyn_cast<RankedTensorType>(x.getType());
    auto outType = dyn_cast<RankedTensorType>(down.getType());
    if (!xType || !outType || !xType.hasStaticShape() || !outType.hasStaticShape() ||
        xType.getNumElements() != outType.getNumElements() ||
        xType.getShape().back() != outType.getShape().back())
      return rewriter.notifyMatchFailure(down,
                                         "result rows differ from input rows");
    ArrayRef<int64_t> g = weightShape(gate.getWeight()),
                      u = weightShape(up.getWeight()),
                      d = weightShape(down.getWeight());
    if (g.size() != 2 || g != u || d.size() != 2 || d[0] != g[1] ||
        d[1] != g[0])
      return rewriter.notifyMatchFailure(down,
                                         "weights do not form a gated MLP");
    Value mlp = GatedMLPOp::create(rewriter, down.getLoc(), xType, x,
                                   gate.getWeight(), up.getWeight(),
                                   down.getWeight(),
                                   ActivationAttr::get(getContext(), act));
    rewriter.replaceOp(down,
                       reshapeTo(rewriter, down.getLoc(), mlp,
                                 outType.getShape()));
    return success();
  }
};

} // namespace

void populateRaiseGatedMLPPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseGatedMLP>(patterns.getContext());
}

} // namespace pimc::llm
