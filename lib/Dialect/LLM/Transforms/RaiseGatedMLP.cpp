//===- RaiseGatedMLP.cpp - gate activations and gated MLPs ----------------===//
//
// Spelled-out GELUs -> llm.gelu, then down(act(gate(x)) * up(x)) ->
// llm.gated_mlp.
//
//===----------------------------------------------------------------------===//
#include "GraphMatch.h"
#include "pimc/Dialect/LLM/Transforms/Passes.h"

#include <cmath>

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
    if (!xType || !outType || !xType.hasStaticShape() ||
        !outType.hasStaticShape() ||
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

/// The factors of a product tree of llm.mul (looking through broadcasts of
/// constant factors).
void productFactors(Value v, SmallVectorImpl<Value> &factors, int depth = 0) {
  if (auto mul = defOp<MulOp>(v); mul && depth < 8) {
    productFactors(mul.getLhs(), factors, depth + 1);
    productFactors(mul.getRhs(), factors, depth + 1);
    return;
  }
  factors.push_back(v);
}

bool near(std::optional<double> c, double want) {
  return c && std::fabs(*c - want) <= 1e-6 * std::fabs(want);
}

/// Removes from `factors` one splat constant equal to `want`; false if none.
bool takeConstant(SmallVectorImpl<Value> &factors, double want) {
  for (auto *it = factors.begin(); it != factors.end(); ++it)
    if (near(matchSplat(*it), want)) {
      factors.erase(it);
      return true;
    }
  return false;
}

/// `v` = 1 + OpTy(arg) (either order); returns arg.
template <typename OpTy>
Value matchOnePlus(Value v) {
  auto add = defOp<AddOp>(v);
  if (!add)
    return {};
  Value arg;
  matchEitherOrder(add, [&](Value one, Value f) {
    auto op = defOp<OpTy>(f);
    if (!op || !near(matchSplat(one), 1.0))
      return false;
    arg = op.getInput();
    return true;
  });
  return arg;
}

/// True if the product tree `v` is exactly c * x (c a splat).
bool isScaled(Value v, Value x, double c) {
  SmallVector<Value> f;
  productFactors(v, f);
  return f.size() == 2 && takeConstant(f, c) && f.front() == x;
}

/// True if `v` is x^3 (x * x * x in any association, or pow(x, 3)).
bool isCube(Value v, Value x) {
  if (auto pow = defOp<PowOp>(v))
    return pow.getLhs() == x && near(matchSplat(pow.getRhs()), 3.0);
  SmallVector<Value> f;
  productFactors(v, f);
  return f.size() == 3 && llvm::all_of(f, [&](Value y) { return y == x; });
}

/// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) (GPT-2's NewGELU,
/// torch.onnx's export of gelu(approximate="tanh")) -> llm.gelu
/// {approximate = true}; 0.5 * x * (1 + erf(x / sqrt 2)) -> llm.gelu.
/// The products may be associated in any order; the result is the same
/// function up to the order of the f32 multiplications.
struct RaiseGelu : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<Value> f;
    productFactors(op.getResult(), f);
    if (f.size() != 3 || !takeConstant(f, 0.5))
      return failure();
    for (int swap = 0; swap < 2; ++swap) {
      Value x = f[swap], onePlus = f[1 - swap];
      if (Value t = matchOnePlus<TanhOp>(onePlus)) {
        SmallVector<Value> g;
        productFactors(t, g);
        if (g.size() != 2 || !takeConstant(g, std::sqrt(2.0 / M_PI)))
          continue;
        auto inner = defOp<AddOp>(g.front());
        bool ok = inner && matchEitherOrder(inner, [&](Value a, Value b) {
          if (a != x)
            return false;
          SmallVector<Value> h;
          productFactors(b, h);
          if (h.size() == 2 && takeConstant(h, 0.044715))
            return isCube(h.front(), x);
          // 0.044715 * x * x * x flattened into one product.
          return h.size() == 4 && takeConstant(h, 0.044715) &&
                 llvm::all_of(h, [&](Value y) { return y == x; });
        });
        if (!ok)
          continue;
        rewriter.replaceOpWithNewOp<GeluOp>(op, op.getType(), x,
                                            rewriter.getBoolAttr(true));
        return success();
      }
      if (Value e = matchOnePlus<ErfOp>(onePlus)) {
        bool ok = isScaled(e, x, 1.0 / std::sqrt(2.0));
        if (auto div = defOp<DivOp>(e))
          ok |= div.getLhs() == x && near(matchSplat(div.getRhs()),
                                          std::sqrt(2.0));
        if (!ok)
          continue;
        rewriter.replaceOpWithNewOp<GeluOp>(op, op.getType(), x,
                                            rewriter.getBoolAttr(false));
        return success();
      }
    }
    return failure();
  }
};

} // namespace

void populateRaiseGatedMLPPatterns(RewritePatternSet &patterns) {
  // GELU first (higher benefit): GeGLU's activation may arrive spelled out.
  patterns.add<RaiseGelu>(patterns.getContext(), /*benefit=*/2);
  patterns.add<RaiseGatedMLP>(patterns.getContext());
}

} // namespace pimc::llm
