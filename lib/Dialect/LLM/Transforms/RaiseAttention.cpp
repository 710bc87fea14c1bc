//===- RaiseAttention.cpp - matmul-softmax-matmul -> llm.attention --------===//
//
// Eager attention as models write it,
//   p = softmax(q @ k.transpose(-1, -2) * scale + mask, dim=-1); o = p @ v,
// on [B = 1, heads, T, hd] (or [heads, T, hd]) tensors, becomes llm.attention
// on [T, heads, hd] with transposes/reshapes around it; the shuffles the
// model does around attention then cancel with these in canonicalization.
// The pattern checks what the graph computes: the mask must evaluate to a
// constant that hides exactly the keys llm.attention's causal /
// sliding-window semantics hide, and GQA must repeat each kv head for
// consecutive query heads (repeat_kv / repeat_interleave), which is the
// head mapping llm.attention uses.
//
//===----------------------------------------------------------------------===//
#include "AlibiBias.h"
#include "GraphMatch.h"
#include "pimc/Dialect/LLM/Transforms/Passes.h"

#include <cmath>

using namespace mlir;

namespace pimc::llm {

namespace {

RankedTensorType rankedType(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

/// The shape of a torch-layout attention operand: [1, h, L, d] or [h, L, d].
struct HeadLayout {
  int64_t heads = 0, length = 0, dim = 0;
  bool batched = false;
};

std::optional<HeadLayout> headLayout(ArrayRef<int64_t> s) {
  if (s.size() == 4 && s[0] == 1)
    return HeadLayout{s[1], s[2], s[3], true};
  if (s.size() == 3)
    return HeadLayout{s[0], s[1], s[2], false};
  return std::nullopt;
}

std::optional<HeadLayout> headLayout(Value v) {
  auto t = rankedType(v);
  if (!t || !t.hasStaticShape())
    return std::nullopt;
  return headLayout(t.getShape());
}

/// Drops leading size-1 dims (a view may add or remove the batch of 1).
ArrayRef<int64_t> dropLeadingOnes(ArrayRef<int64_t> s) {
  while (!s.empty() && s.front() == 1)
    s = s.drop_front();
  return s;
}

/// Undoes repeat_kv / repeat_interleave along the head axis:
/// reshape([.., nkv, 1, S, d]) -> broadcast([.., nkv, rep, S, d]) ->
/// reshape([.., nkv * rep, S, d]) gives back the [.., nkv, S, d] source
/// (the views may add or drop the batch of 1). Each kv head then serves
/// `rep` consecutive query heads, which is llm.attention's mapping; a
/// repeat before the head axis (tile order) is not undone. Returns `v`
/// itself when it is not repeated this way.
Value unrepeatHeads(Value v) {
  auto outer = defOp<ReshapeOp>(v);
  if (!outer)
    return v;
  auto bcast = defOp<BroadcastOp>(outer.getInput());
  if (!bcast)
    return v;
  auto expanded = rankedType(bcast.getResult());
  auto src = rankedType(bcast.getInput());
  auto out = rankedType(v);
  if (!expanded || !src || !out || expanded.getRank() != src.getRank() ||
      expanded.getRank() < 4)
    return v;
  ArrayRef<int64_t> e = expanded.getShape(), s = src.getShape();
  // The repeat axis sits right before [S, d]; the kv heads before it.
  int64_t r = expanded.getRank() - 3;
  for (int64_t i = 0; i < expanded.getRank(); ++i)
    if (i != r && e[i] != s[i])
      return v;
  if (s[r] != 1)
    return v;
  SmallVector<int64_t> merged(e.begin(), e.end());
  merged[r - 1] *= merged[r];
  merged.erase(merged.begin() + r);
  if (dropLeadingOnes(merged) != dropLeadingOnes(out.getShape()))
    return v;
  // The source without the size-1 repeat axis: an unsqueeze (reshape) of
  // the [.., nkv, S, d] kv tensor.
  auto unsq = defOp<ReshapeOp>(bcast.getInput());
  if (!unsq)
    return v;
  SmallVector<int64_t> want(s.begin(), s.end());
  want.erase(want.begin() + r);
  auto inner = rankedType(unsq.getInput());
  if (!inner || dropLeadingOnes(inner.getShape()) != dropLeadingOnes(want))
    return v;
  return unsq.getInput();
}

/// The keys behind `kt` = k^T: k is `src` permuted by `perm` (identity
/// when kt swaps the last two dims of k itself; canonicalization may have
/// composed k^T with the model's own head transpose, e.g. GPT-2's
/// k.view(B, T, h, d).transpose(1, 2).transpose(-2, -1)).
struct KeySource {
  Value src;
  SmallVector<int64_t> perm;
  bool identity() const {
    for (auto [i, p] : llvm::enumerate(perm))
      if (static_cast<int64_t>(i) != p)
        return false;
    return true;
  }
  SmallVector<int64_t> shape() const {
    SmallVector<int64_t> out;
    for (int64_t p : perm)
      out.push_back(rankedType(src).getDimSize(p));
    return out;
  }
};

std::optional<KeySource> matchKeyTranspose(Value kt) {
  auto tr = defOp<TransposeOp>(kt);
  if (!tr)
    return std::nullopt;
  SmallVector<int64_t> p(tr.getPermutation());
  int64_t r = p.size();
  if (r < 2)
    return std::nullopt;
  // k = kt with its last two dims swapped = src permuted by p with its last
  // two entries swapped.
  std::swap(p[r - 1], p[r - 2]);
  return KeySource{tr.getInput(), p};
}

/// What a constant mask does: which keys of each query row it hides, and
/// the finite bias it adds to the keys it shows (e.g. ALiBi), if any.
struct MaskInfo {
  bool causal = false;
  std::optional<int64_t> window;
  Value bias;                ///< null: 0 at every visible key
  std::vector<bool> visible; ///< [T, S], kept when there is a bias
};

/// Classifies `visible[t][s]` (T x S) as no mask, causal, or causal with a
/// sliding window, with query t at position S - T + t.
std::optional<MaskInfo> classifyMask(const std::vector<bool> &visible,
                                     int64_t T, int64_t S) {
  bool all = llvm::all_of(visible, [](bool b) { return b; });
  if (all)
    return MaskInfo{};
  // Causal with the smallest window that explains each row: keys
  // [pos - W + 1, pos] visible.
  int64_t window = 0;
  for (int64_t t = 0; t < T; ++t) {
    int64_t pos = S - T + t, lo = -1;
    for (int64_t s = 0; s < S; ++s)
      if (visible[t * S + s]) {
        lo = s;
        break;
      }
    if (lo < 0)
      return std::nullopt;
    if (lo > 0)
      window = std::max(window, pos - lo + 1);
  }
  MaskInfo info;
  info.causal = true;
  if (window > 0)
    info.window = window;
  for (int64_t t = 0; t < T; ++t) {
    int64_t pos = S - T + t;
    for (int64_t s = 0; s < S; ++s) {
      bool want = s <= pos && (!info.window || s > pos - *info.window);
      if (visible[t * S + s] != want)
        return std::nullopt;
    }
  }
  return info;
}

/// The [T, S] visibility of a constant evaluated to the full score shape
/// [.., T, S]; nullopt unless every leading (batch, head) slab is the same.
template <typename Fn>
std::optional<std::vector<bool>> visibility(const ConstTensor &c,
                                            Fn &&isVisible) {
  int64_t rank = c.shape.size();
  if (rank < 2)
    return std::nullopt;
  int64_t T = c.shape[rank - 2], S = c.shape[rank - 1], slab = T * S;
  std::vector<bool> vis(slab);
  for (int64_t i = 0; i < slab; ++i) {
    std::optional<bool> v = isVisible(i);
    if (!v)
      return std::nullopt;
    vis[i] = *v;
  }
  for (int64_t i = slab; i < c.numElements(); ++i) {
    std::optional<bool> v = isVisible(i);
    if (!v || *v != vis[i % slab])
      return std::nullopt;
  }
  return vis;
}

/// A mask operand evaluated before its broadcast over batch and heads when
/// that keeps the [T, S] trailing dims (h times fewer elements), else in
/// full.
std::optional<ConstTensor> evaluateMask(Value mask, int64_t T, int64_t S,
                                        const ckpt::WeightStore *weights) {
  Value inner = stripBroadcast(mask);
  auto t = rankedType(inner);
  if (inner != mask && t && t.getRank() >= 2 &&
      t.getDimSize(t.getRank() - 2) == T && t.getDimSize(t.getRank() - 1) == S)
    return evaluateConstant(inner, weights);
  return evaluateConstant(mask, weights);
}

/// Splits `s` into the unmasked scores and the mask it applies:
/// add(z, m) with a constant m of 0 / <= -1e9 entries, or select(c, z, fill)
/// / select(c, fill, z) with a constant condition and fill <= -1e9.
/// Without a mask, `z` is `s`.
std::optional<MaskInfo> matchMask(Value s, Value &z,
                                  const ckpt::WeightStore *weights) {
  auto type = rankedType(s);
  int64_t rank = type.getRank();
  int64_t T = type.getDimSize(rank - 2), S = type.getDimSize(rank - 1);
  if (auto add = defOp<AddOp>(s)) {
    std::optional<MaskInfo> info;
    matchEitherOrder(add, [&](Value scores, Value mask) {
      std::optional<ConstTensor> m = evaluateMask(mask, T, S, weights);
      if (!m)
        return false;
      bool biased = false;
      auto vis = visibility(*m, [&](int64_t i) -> std::optional<bool> {
        double x = m->data[i];
        if (x <= kMaskedBelow)
          return false;
        if (!std::isfinite(x))
          return std::nullopt;
        biased |= x != 0.0;
        return true;
      });
      if (!vis)
        return false;
      info = classifyMask(*vis, T, S);
      if (!info)
        return false;
      if (biased) {
        info->bias = maskBias(mask, weights);
        info->visible = std::move(*vis);
      }
      z = scores;
      return true;
    });
    return info;
  }
  if (auto sel = defOp<SelectOp>(s)) {
    std::optional<ConstTensor> c =
        evaluateMask(sel.getCondition(), T, S, weights);
    if (!c)
      return std::nullopt;
    for (bool scoresIfTrue : {true, false}) {
      Value scores = scoresIfTrue ? sel.getTrueValue() : sel.getFalseValue();
      Value fill = scoresIfTrue ? sel.getFalseValue() : sel.getTrueValue();
      std::optional<double> f = matchSplat(fill);
      if (!f || *f > kMaskedBelow)
        continue;
      auto vis = visibility(*c, [&](int64_t i) -> std::optional<bool> {
        return (c->data[i] != 0.0) == scoresIfTrue;
      });
      if (!vis)
        continue;
      std::optional<MaskInfo> info = classifyMask(*vis, T, S);
      if (!info)
        continue;
      z = scores;
      return info;
    }
    return std::nullopt;
  }
  z = s;
  return MaskInfo{};
}

/// Splits `z` into q @ k^T and the factor it is scaled by.
std::optional<double> matchScale(Value z, MatmulOp &qk) {
  auto product = [](Value v) { return defOp<MatmulOp>(stripUnitReshape(v)); };
  if ((qk = product(z)))
    return 1.0;
  if (auto sc = defOp<ScaleOp>(z))
    if ((qk = product(sc.getInput())))
      return sc.getFactor().convertToDouble();
  if (auto mul = defOp<MulOp>(z)) {
    std::optional<double> f;
    matchEitherOrder(mul, [&](Value a, Value b) {
      std::optional<double> c = matchSplat(b);
      if (!c || !(qk = product(a)))
        return false;
      f = *c;
      return true;
    });
    return f;
  }
  if (auto div = defOp<DivOp>(z)) {
    std::optional<double> c = matchSplat(div.getRhs());
    if (c && *c != 0.0 && (qk = product(div.getLhs())))
      return 1.0 / *c;
  }
  return std::nullopt;
}

/// tanh(s / c) (or of s * (1/c)): sets `s`.
bool matchCappedTanh(Value t, double c, Value &s) {
  auto tanh = defOp<TanhOp>(t);
  if (!tanh || c <= 0)
    return false;
  Value in = tanh.getInput();
  auto isInverse = [&](double r) { return std::fabs(r * c - 1.0) <= 1e-6; };
  if (auto div = defOp<DivOp>(in)) {
    std::optional<double> d = matchSplat(div.getRhs());
    if (!d || *d != c)
      return false;
    s = div.getLhs();
    return true;
  }
  if (auto sc = defOp<ScaleOp>(in)) {
    if (!isInverse(sc.getFactor().convertToDouble()))
      return false;
    s = sc.getInput();
    return true;
  }
  auto m = defOp<MulOp>(in);
  return m && matchEitherOrder(m, [&](Value a, Value b) {
           std::optional<double> r = matchSplat(b);
           if (!r || !isInverse(*r))
             return false;
           s = a;
           return true;
         });
}

/// Gemma 2's logit soft-capping, c * tanh(s / c) (or s * (1/c)), the outer
/// product a mul by a splat or an llm.scale; returns c and sets `s`.
std::optional<double> matchSoftcap(Value z, Value &s) {
  if (auto sc = defOp<ScaleOp>(z)) {
    double c = sc.getFactor().convertToDouble();
    if (matchCappedTanh(sc.getInput(), c, s))
      return c;
    return std::nullopt;
  }
  auto mul = defOp<MulOp>(z);
  if (!mul)
    return std::nullopt;
  std::optional<double> cap;
  matchEitherOrder(mul, [&](Value t, Value c) {
    std::optional<double> cv = matchSplat(c);
    if (!cv || !matchCappedTanh(t, *cv, s))
      return false;
    cap = *cv;
    return true;
  });
  return cap;
}

/// A value that is one constant in every element: a splat, or a subgraph of
/// constants that evaluates to one (torch's ONNX export of SDPA computes
/// sqrt(1 / sqrt(d)) from the shape).
std::optional<double> matchUniformConstant(Value v,
                                           const ckpt::WeightStore *weights) {
  if (std::optional<double> c = matchSplat(v))
    return c;
  std::optional<ConstTensor> t =
      evaluateConstant(v, weights, nullptr, /*maxElements=*/1 << 16);
  if (!t || t->data.empty())
    return std::nullopt;
  for (double x : t->data)
    if (x != t->data.front())
      return std::nullopt;
  return t->data.front();
}

/// x = x0 * c (a constant pre-scaling of the queries or of k^T); returns c,
/// sets x0.
std::optional<double> matchPrescaled(Value x, Value &x0,
                                     const ckpt::WeightStore *weights) {
  if (auto sc = defOp<ScaleOp>(x)) {
    x0 = sc.getInput();
    return sc.getFactor().convertToDouble();
  }
  auto mul = defOp<MulOp>(x);
  if (!mul)
    return std::nullopt;
  std::optional<double> f;
  matchEitherOrder(mul, [&](Value a, Value b) {
    f = matchUniformConstant(b, weights);
    if (f)
      x0 = a;
    return f.has_value();
  });
  return f;
}

/// [1, h, L, d] -> [L, h, d] (or [h, L, d] -> [L, h, d]).
Value toSequenceMajor(PatternRewriter &b, Location loc, Value v) {
  auto t = rankedType(v);
  if (t.getRank() == 4) {
    Value tr = transposeBy(b, loc, v, {0, 2, 1, 3});
    auto s = rankedType(tr).getShape();
    return reshapeTo(b, loc, tr, {s[1], s[2], s[3]});
  }
  return transposeBy(b, loc, v, {1, 0, 2});
}

/// [L, h, d] -> the torch layout of `like` ([1, h, L, d] or [h, L, d]).
Value toHeadMajor(PatternRewriter &b, Location loc, Value v, bool batched) {
  auto s = rankedType(v).getShape();
  if (batched) {
    Value r = reshapeTo(b, loc, v, {1, s[0], s[1], s[2]});
    return transposeBy(b, loc, r, {0, 2, 1, 3});
  }
  return transposeBy(b, loc, v, {1, 0, 2});
}

/// torch.onnx's SDPA zeroes the softmax rows of fully masked queries:
/// where(isnan(p), 0, p), imported as select(compare ne p p, 0, p). Returns
/// p, or `v` itself without the guard. Dropping it is exact once the mask is
/// known to leave every query a visible key (causal, sliding-window and no
/// mask all keep the query's own position): no row is fully masked, so the
/// guard only acts on NaNs from non-finite scores, which llm.attention then
/// propagates instead of zeroing (docs/raising.md).
Value stripNaNGuard(Value v) {
  auto sel = defOp<SelectOp>(v);
  if (!sel)
    return v;
  auto isNaN = defOp<CompareOp>(sel.getCondition());
  Value p = sel.getFalseValue();
  if (!isNaN || isNaN.getPredicate() != ComparePredicate::Ne ||
      isNaN.getLhs() != p || isNaN.getRhs() != p)
    return v;
  std::optional<double> zero = matchSplat(sel.getTrueValue());
  if (!zero || *zero != 0.0)
    return v;
  return p;
}

struct RaiseEagerAttention : OpRewritePattern<MatmulOp> {
  RaiseEagerAttention(MLIRContext *ctx, const ckpt::WeightStore *weights)
      : OpRewritePattern(ctx), weights(weights) {}
  const ckpt::WeightStore *weights;

  LogicalResult matchAndRewrite(MatmulOp pv,
                                PatternRewriter &rewriter) const override {
    auto softmax = defOp<SoftmaxOp>(
        stripNaNGuard(stripUnitReshape(stripWidening(pv.getLhs()))));
    if (!softmax)
      return rewriter.notifyMatchFailure(pv, "lhs is not a softmax");
    auto scoresType = rankedType(softmax.getResult());
    if (!scoresType || !scoresType.hasStaticShape() ||
        scoresType.getRank() < 2 ||
        !isLastAxis(softmax.getAxis(), scoresType.getRank()))
      return rewriter.notifyMatchFailure(pv, "softmax is not over the keys");
    Value z;
    std::optional<MaskInfo> mask = matchMask(softmax.getInput(), z, weights);
    if (!mask)
      return rewriter.notifyMatchFailure(pv, "mask is not causal/windowed");
    Value capped;
    std::optional<double> softcap = matchSoftcap(z, capped);
    if (softcap)
      z = capped;
    MatmulOp qk;
    std::optional<double> scale = matchScale(z, qk);
    if (!scale)
      return rewriter.notifyMatchFailure(pv, "scores are not q @ k^T * c");
    Value q = stripUnitReshape(qk.getLhs());
    Value q0;
    if (std::optional<double> pre = matchPrescaled(q, q0, weights)) {
      q = stripUnitReshape(q0);
      *scale *= *pre;
    }
    // SDPA exported to ONNX scales both q and k^T by sqrt(scale).
    Value kt = stripUnitReshape(qk.getRhs()), kt0;
    if (std::optional<double> pre = matchPrescaled(kt, kt0, weights)) {
      kt = stripUnitReshape(kt0);
      *scale *= *pre;
    }
    std::optional<KeySource> k = matchKeyTranspose(kt);
    Value v = stripUnitReshape(pv.getRhs());
    if (!k || !rankedType(k->src).hasStaticShape())
      return rewriter.notifyMatchFailure(pv, "rhs of q @ k^T is not k^T");
    auto ql = headLayout(q), kl = headLayout(k->shape()), vl = headLayout(v);
    auto ol = headLayout(pv.getResult());
    if (!ql || !kl || !vl || !ol)
      return rewriter.notifyMatchFailure(pv, "operands are not [1, h, L, d]");
    // Batch dims must agree, except that one kv head may be broadcast over
    // all query heads by the products (MQA): llm.attention with nkv = 1.
    if ((kl->heads != ql->heads && kl->heads != 1) || kl->heads != vl->heads ||
        kl->length != vl->length || ql->dim != kl->dim ||
        ol->heads != ql->heads || ol->length != ql->length ||
        ol->dim != vl->dim)
      return rewriter.notifyMatchFailure(pv, "operand shapes do not agree");
    if (!rankedType(q).getElementType().isF32() ||
        !rankedType(k->src).getElementType().isF32() ||
        !rankedType(v).getElementType().isF32())
      return rewriter.notifyMatchFailure(pv, "operands are not f32");
    DenseF32ArrayAttr alibi;
    if (mask->bias) {
      if (softcap)
        return rewriter.notifyMatchFailure(
            pv, "a softcap and a mask bias (llm.attention biases first)");
      int64_t rank = scoresType.getRank();
      TracedBias traced{mask->bias, mask->visible, ql->heads,
                        scoresType.getDimSize(rank - 2),
                        scoresType.getDimSize(rank - 1)};
      std::optional<std::vector<float>> slopes =
          matchAlibiBias(traced, *scale, weights);
      if (!slopes)
        return rewriter.notifyMatchFailure(
            pv, "the mask's bias is not ALiBi at every position");
      alibi = rewriter.getDenseF32ArrayAttr(*slopes);
    }
    Location loc = pv.getLoc();
    // GQA: the repeat can only be seen when k is the source itself.
    Value k0, v0 = v;
    if (k->identity()) {
      k0 = unrepeatHeads(k->src);
      v0 = unrepeatHeads(v);
      auto k0l = headLayout(k0), v0l = headLayout(v0);
      if (!k0l || !v0l || k0l->heads != v0l->heads) {
        k0 = k->src;
        v0 = v;
      }
    } else {
      k0 = transposeBy(rewriter, loc, k->src, k->perm);
    }
    Value qs = toSequenceMajor(rewriter, loc, q);
    Value ks = toSequenceMajor(rewriter, loc, k0);
    Value vs = toSequenceMajor(rewriter, loc, v0);
    auto resultType = RankedTensorType::get({ql->length, ql->heads, vl->dim},
                                            rewriter.getF32Type());
    IntegerAttr window;
    if (mask->window)
      window = rewriter.getI64IntegerAttr(*mask->window);
    auto att = AttentionOp::create(
        rewriter, loc, resultType, qs, ks, vs, /*sinks=*/Value(),
        rewriter.getF32FloatAttr(static_cast<float>(*scale)),
        rewriter.getBoolAttr(mask->causal), window,
        softcap ? rewriter.getF32FloatAttr(static_cast<float>(*softcap))
                : FloatAttr(),
        alibi, IntegerAttr(), IntegerAttr(), FloatAttr());
    // Back in the torch layout of q (the product may be a bmm on a view).
    Value out = toHeadMajor(rewriter, loc, att, ql->batched);
    rewriter.replaceOp(pv, reshapeTo(rewriter, loc, out,
                                     rankedType(pv.getResult()).getShape()));
    return success();
  }
};

/// The [.., nkv, S, d] kv heads behind an [S, h, d] attention operand that
/// is the sequence-major view of a repeat_kv, or null: transpose {1, 0, 2}
/// of [h, S, d], or [1, h, S, d] transposed {0, 2, 1, 3} and reshaped.
Value repeatedKVSource(Value operand) {
  auto tr = defOp<TransposeOp>(stripUnitReshape(operand));
  if (!tr)
    return {};
  ArrayRef<int64_t> perm = tr.getPermutation();
  if (perm != ArrayRef<int64_t>{1, 0, 2} &&
      perm != ArrayRef<int64_t>{0, 2, 1, 3})
    return {};
  Value src = unrepeatHeads(tr.getInput());
  return src == tr.getInput() ? Value() : src;
}

/// Models call F.scaled_dot_product_attention after repeat_kv, so the FX
/// importer's llm.attention reads every kv head `rep` times. Attention on
/// the repeated heads is GQA attention on the kv heads with llm.attention's
/// head mapping (unrepeatHeads checks the repeat order), value for value,
/// so the repeat is dropped and the kv cache keeps nkv heads.
struct FoldRepeatedKVIntoAttention : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Value k = repeatedKVSource(op.getKey());
    Value v = repeatedKVSource(op.getValue());
    if (!k || !v)
      return rewriter.notifyMatchFailure(op, "k and v are not repeat_kv");
    auto kl = headLayout(k), vl = headLayout(v);
    if (!kl || !vl || kl->heads != vl->heads || kl->length != vl->length)
      return rewriter.notifyMatchFailure(op, "k and v heads disagree");
    Value ks = toSequenceMajor(rewriter, op.getLoc(), k);
    Value vs = toSequenceMajor(rewriter, op.getLoc(), v);
    rewriter.modifyOpInPlace(op, [&] {
      op.getKeyMutable().assign(ks);
      op.getValueMutable().assign(vs);
    });
    return success();
  }
};

} // namespace

void populateRaiseAttentionPatterns(RewritePatternSet &patterns,
                                    const ckpt::WeightStore *weights) {
  patterns.add<RaiseEagerAttention>(patterns.getContext(), weights);
  patterns.add<FoldRepeatedKVIntoAttention>(patterns.getContext());
}

} // namespace pimc::llm
