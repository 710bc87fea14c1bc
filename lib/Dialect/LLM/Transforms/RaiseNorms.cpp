//===- RaiseNorms.cpp - decomposed RMS / layer norms -> fused norms -------===//
//
// The importers turn `x.pow(2).mean(-1, keepdim=True)` and friends into
// llm.mul / llm.reduce / llm.add / llm.rsqrt with explicit broadcasts; these
// patterns recognise the norm as a whole. They only fire when the reduction
// is over the last axis with keep_dim (the fused ops normalise the last
// dimension) and the weight/bias are [n] vectors broadcast along it.
//
//===----------------------------------------------------------------------===//
#include "GraphMatch.h"
#include "pimc/Dialect/LLM/Transforms/Passes.h"

using namespace mlir;

namespace pimc::llm {

namespace {

/// `v` = mean(sq, last axis, keep_dim) + eps with `sq` accepted by
/// `isSquare`; returns eps.
template <typename SquareFn>
std::optional<double> matchMeanPlusEps(Value v, SquareFn &&isSquare) {
  auto add = defOp<AddOp>(v);
  if (!add)
    return std::nullopt;
  std::optional<double> eps;
  matchEitherOrder(add, [&](Value m, Value e) {
    auto mean = defOp<ReduceOp>(m);
    std::optional<double> c = matchSplat(e);
    if (!mean || !c || mean.getKind() != ReduceKind::Mean ||
        !mean.getKeepDim())
      return false;
    int64_t rank = cast<RankedTensorType>(mean.getInput().getType()).getRank();
    if (!isLastAxis(mean.getAxis(), rank) || !isSquare(mean.getInput()))
      return false;
    eps = *c;
    return true;
  });
  if (eps && *eps < 0)
    return std::nullopt;
  return eps;
}

/// True if `sq` is `x * x` or `x ^ 2` (x looked through widening casts).
bool isSquareOf(Value sq, Value x) {
  if (auto mul = defOp<MulOp>(sq))
    return stripWidening(mul.getLhs()) == x && stripWidening(mul.getRhs()) == x;
  if (auto pow = defOp<PowOp>(sq)) {
    std::optional<double> e = matchSplat(pow.getRhs());
    return e && *e == 2.0 && stripWidening(pow.getLhs()) == x;
  }
  return false;
}

/// The statistic s of r = 1 / sqrt(s) spelled as rsqrt(s), reciprocal(
/// sqrt(s)), 1 / sqrt(s) (torch.onnx exports rsqrt so) or pow(s, -0.5).
Value matchInverseSqrt(Value r) {
  if (auto rsqrt = defOp<RsqrtOp>(r))
    return rsqrt.getInput();
  if (auto rec = defOp<ReciprocalOp>(r))
    if (auto sqrt = defOp<SqrtOp>(stripBroadcast(rec.getInput())))
      return sqrt.getInput();
  if (auto div = defOp<DivOp>(r)) {
    std::optional<double> one = matchSplat(div.getLhs());
    if (one && *one == 1.0)
      if (auto sqrt = defOp<SqrtOp>(stripBroadcast(div.getRhs())))
        return sqrt.getInput();
  }
  if (auto pow = defOp<PowOp>(r)) {
    std::optional<double> e = matchSplat(pow.getRhs());
    if (e && *e == -0.5)
      return pow.getLhs();
  }
  return {};
}

/// `v` = x * (1 / sqrt(s)) (either order, the factor broadcast), or
/// x / sqrt(s); calls `matchScale(x, s)` to check the statistic.
template <typename Fn>
bool matchNormalized(Value v, Fn &&matchScale) {
  if (auto mul = defOp<MulOp>(v))
    return matchEitherOrder(mul, [&](Value x, Value r) {
      Value stat = matchInverseSqrt(stripBroadcast(r));
      return stat && matchScale(stripWidening(x), stat);
    });
  if (auto div = defOp<DivOp>(v)) {
    auto sqrt = defOp<SqrtOp>(stripBroadcast(div.getRhs()));
    return sqrt && matchScale(stripWidening(div.getLhs()), sqrt.getInput());
  }
  return false;
}

/// RMS statistic: x * rsqrt(mean(x^2) + eps); sets x and eps.
bool matchRmsNormalized(Value v, Value &x, double &eps) {
  return matchNormalized(v, [&](Value in, Value stat) {
    auto e = matchMeanPlusEps(
        stat, [&](Value sq) { return isSquareOf(sq, in); });
    if (!e)
      return false;
    x = in;
    eps = *e;
    return true;
  });
}

/// `xc` = x - mean(x, last axis, keep_dim) (the mean broadcast back); sets x.
bool matchCentered(Value xc, Value &x) {
  auto sub = defOp<SubOp>(xc);
  if (!sub)
    return false;
  auto mean = defOp<ReduceOp>(stripBroadcast(sub.getRhs()));
  if (!mean || mean.getKind() != ReduceKind::Mean || !mean.getKeepDim())
    return false;
  Value in = stripWidening(sub.getLhs());
  auto inType = dyn_cast<RankedTensorType>(in.getType());
  if (!inType || !isLastAxis(mean.getAxis(), inType.getRank()) ||
      stripWidening(mean.getInput()) != in)
    return false;
  x = in;
  return true;
}

/// Layer-norm statistic: xc * rsqrt(mean(xc^2) + eps) or xc / sqrt(...),
/// xc = x - mean(x); the square may be of a second, identical subtraction.
bool matchLayerNormalized(Value v, Value &x, double &eps) {
  return matchNormalized(v, [&](Value xc, Value stat) {
    Value centeredOf;
    if (!matchCentered(xc, centeredOf))
      return false;
    auto e = matchMeanPlusEps(stat, [&](Value sq) {
      if (isSquareOf(sq, xc))
        return true;
      // torch.var / ONNX exports may recompute x - mean for the variance.
      Value other;
      Operation *def = sq.getDefiningOp();
      if (!def || def->getNumOperands() != 2)
        return false;
      Value base = stripWidening(def->getOperand(0));
      return matchCentered(base, other) && other == centeredOf &&
             isSquareOf(sq, base);
    });
    if (!e)
      return false;
    x = centeredOf;
    eps = *e;
    return true;
  });
}

/// An [n] vector broadcast along the last dimension of a [..., n] tensor.
Value matchLastDimVector(Value v, int64_t n) {
  Value w = stripBroadcast(v);
  // An unsqueezed [1, ..., 1, n] view of the vector is the same vector.
  if (auto r = defOp<ReshapeOp>(w)) {
    auto in = dyn_cast<RankedTensorType>(r.getInput().getType());
    auto out = dyn_cast<RankedTensorType>(r.getType());
    if (in && out && in.getRank() == 1 && out.getNumElements() == n &&
        out.getShape().back() == n)
      w = stripWidening(r.getInput());
  }
  auto t = dyn_cast<RankedTensorType>(w.getType());
  if (!t || t.getRank() != 1 || t.getDimSize(0) != n)
    return {};
  return w;
}

/// rms(x) * w, w * rms(x) -> llm.rms_norm (llama); rms(x) * (1 + w) ->
/// llm.rms_norm (gemma).
struct RaiseRMSNorm : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!type || type.getRank() < 1 || type.isDynamicDim(type.getRank() - 1))
      return failure();
    int64_t n = type.getShape().back();
    Value x, weight;
    double eps = 0;
    NormStyle style = NormStyle::Llama;
    bool matched = matchEitherOrder(op, [&](Value normed, Value scale) {
      if (!matchRmsNormalized(stripWidening(normed), x, eps))
        return false;
      // An RMS norm of x - mean(x) is a layer norm; RaiseLayerNorm takes it.
      Value centered;
      if (matchCentered(x, centered))
        return false;
      Value w = matchLastDimVector(scale, n);
      if (!w)
        return false;
      // Gemma: (1 + w) computed in the graph; the fused op adds the one.
      if (auto add = defOp<AddOp>(w)) {
        Value inner;
        matchEitherOrder(add, [&](Value one, Value ww) {
          std::optional<double> c = matchSplat(one);
          if (!c || *c != 1.0)
            return false;
          inner = matchLastDimVector(ww, n);
          return bool(inner);
        });
        if (inner) {
          weight = inner;
          style = NormStyle::Gemma;
          return true;
        }
      }
      weight = w;
      style = NormStyle::Llama;
      return true;
    });
    if (!matched || x.getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "not an RMS norm times a weight");
    auto et = cast<RankedTensorType>(weight.getType()).getElementType();
    if (!et.isF32() && !et.isF16() && !et.isBF16())
      return rewriter.notifyMatchFailure(op, "weight is not a float vector");
    rewriter.replaceOpWithNewOp<RMSNormOp>(
        op, op.getType(), x, weight, rewriter.getF32FloatAttr(eps),
        NormStyleAttr::get(getContext(), style));
    return success();
  }
};

/// (x - mean) * rsqrt(var + eps) -> llm.layer_norm without affine terms;
/// the weight and bias fold in afterwards (FoldLayerNormAffine).
template <typename OpTy>
struct RaiseLayerNorm : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Value x;
    double eps = 0;
    if (!matchLayerNormalized(op.getResult(), x, eps) ||
        x.getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "not a layer norm");
    rewriter.replaceOpWithNewOp<LayerNormOp>(
        op, op.getType(), x, Value(), Value(),
        rewriter.getF32FloatAttr(static_cast<float>(eps)),
        rewriter.getI64IntegerAttr(-1));
    return success();
  }
};

/// layer_norm(x) * w -> layer_norm(x, w); layer_norm(x, [w]) + b ->
/// layer_norm(x, [w], b), for [n] vectors along the normalised axis. The
/// fused op computes (x - mean) * rsqrt(var + eps) * w + b in that order,
/// so the result is the same function.
struct FoldLayerNormWeight : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!type || type.getRank() < 1)
      return failure();
    int64_t n = type.getShape().back();
    LayerNormOp ln;
    Value w;
    bool matched = matchEitherOrder(op, [&](Value a, Value b) {
      ln = defOp<LayerNormOp>(a);
      w = matchLastDimVector(b, n);
      return ln && w && !ln.getWeight() && !ln.getBias() &&
             isLastAxis(ln.getAxis(), type.getRank());
    });
    if (!matched)
      return failure();
    rewriter.replaceOpWithNewOp<LayerNormOp>(op, op.getType(), ln.getInput(),
                                             w, Value(), ln.getEpsilonAttr(),
                                             ln.getAxisAttr());
    return success();
  }
};

struct FoldLayerNormBias : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!type || type.getRank() < 1)
      return failure();
    int64_t n = type.getShape().back();
    LayerNormOp ln;
    Value b;
    bool matched = matchEitherOrder(op, [&](Value x, Value y) {
      ln = defOp<LayerNormOp>(x);
      b = matchLastDimVector(y, n);
      return ln && b && !ln.getBias() &&
             isLastAxis(ln.getAxis(), type.getRank());
    });
    if (!matched)
      return failure();
    rewriter.replaceOpWithNewOp<LayerNormOp>(
        op, op.getType(), ln.getInput(), ln.getWeight(), b,
        ln.getEpsilonAttr(), ln.getAxisAttr());
    return success();
  }
};

} // namespace

void populateRaiseNormPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseRMSNorm, RaiseLayerNorm<MulOp>, RaiseLayerNorm<DivOp>,
               FoldLayerNormWeight, FoldLayerNormBias>(patterns.getContext());
}

} // namespace pimc::llm
