//===- ReductionOps.cpp - ATen reductions, normalisation, softmax, selection
//===//
//
// The FX importer's builders for reductions, normalisation, softmax, selection,
// and their rows of the op table (ATen schema syntax, as torch declares them).
//
//===----------------------------------------------------------------------===//

#include "FXOpHelpers.h"

using namespace pimc;
using namespace pimc::fx;
using namespace pimc::fx::detail;

namespace {

/// Reduces `x` over `dims` (empty: all), one axis at a time with kept
/// dimensions, then reshapes to the traced shape.
Value reduceDims(OpContext &c, llm::ReduceKind kind, Value x,
                 ArrayRef<int64_t> dims, ArrayRef<int64_t> resultShape) {
  x = toF32(c, x);
  int64_t rank = rankOf(x);
  llvm::SmallVector<int64_t> axes;
  if (dims.empty()) {
    x = reshapeTo(c, x, {numel(shapeOf(x))});
    axes.push_back(0);
  } else {
    for (int64_t d : dims)
      axes.push_back(normDim(d, rank));
    llvm::sort(axes);
    axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  }
  // One axis without keepdim is one llm.reduce with keep_dim = false (the
  // form the raising patterns see from both importers).
  if (axes.size() == 1 && rankOf(x) > 0 &&
      static_cast<int64_t>(resultShape.size()) == rankOf(x) - 1) {
    llvm::SmallVector<int64_t> s(shapeOf(x));
    s.erase(s.begin() + axes[0]);
    if (ArrayRef<int64_t>(s) == resultShape)
      return llm::ReduceOp::create(c.b, c.loc,
                                   RankedTensorType::get(s, c.b.getF32Type()),
                                   x, kind, axes[0], false);
  }
  for (int64_t a : axes) {
    if (rankOf(x) == 0)
      break;
    llvm::SmallVector<int64_t> s(shapeOf(x));
    s[a] = 1;
    x = llm::ReduceOp::create(c.b, c.loc,
                              RankedTensorType::get(s, c.b.getF32Type()), x,
                              kind, a, true);
  }
  return reshapeTo(c, x, resultShape);
}

LogicalResult reduction(OpContext &c, llm::ReduceKind kind,
                        llvm::StringRef dimArg) {
  Value self = c.tensor("self");
  llvm::SmallVector<int64_t> dims;
  if (!dimArg.empty() && !c.isNone(dimArg))
    dims = c.ints(dimArg);
  for (int64_t d : dims)
    if (failed(checkDim(c, d, rankOf(self))))
      return failure();
  Value r = reduceDims(c, kind, self, dims, c.resultShape());
  c.results.push_back(toElem(c, r, c.resultType().getElementType()));
  return success();
}
LogicalResult buildSumDim(OpContext &c) {
  return reduction(c, llm::ReduceKind::Sum, "dim");
}
LogicalResult buildSum(OpContext &c) {
  return reduction(c, llm::ReduceKind::Sum, "");
}
LogicalResult buildMeanDim(OpContext &c) {
  return reduction(c, llm::ReduceKind::Mean, "dim");
}
LogicalResult buildMean(OpContext &c) {
  return reduction(c, llm::ReduceKind::Mean, "");
}
LogicalResult buildAmax(OpContext &c) {
  return reduction(c, llm::ReduceKind::Max, "dim");
}
LogicalResult buildProdDim(OpContext &c) {
  return reduction(c, llm::ReduceKind::Prod, "dim");
}
LogicalResult buildAmin(OpContext &c) {
  return reduction(c, llm::ReduceKind::Min, "dim");
}
LogicalResult buildMaxAll(OpContext &c) {
  return reduction(c, llm::ReduceKind::Max, "");
}
LogicalResult buildMinAll(OpContext &c) {
  return reduction(c, llm::ReduceKind::Min, "");
}

/// var / std / var_mean: sum((x - mean)^2) / (n - correction), two passes
/// in f32 (torch accumulates in double on CPU; the difference is rounding).
/// The `.dim` overloads (torch.export keeps them) say `unbiased` instead of
/// `correction`: correction 1 or 0.
LogicalResult variance(OpContext &c, bool root, bool withMean,
                       bool unbiasedFlag = false) {
  Value x = toF32(c, c.tensor("self"));
  int64_t rank = rankOf(x);
  llvm::SmallVector<int64_t> dims;
  if (!c.isNone("dim"))
    dims = c.ints("dim");
  if (dims.empty())
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d);
  for (int64_t &d : dims) {
    if (failed(checkDim(c, d, rank)))
      return failure();
    d = normDim(d, rank);
  }
  llvm::sort(dims);
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  llvm::SmallVector<int64_t> kept(shapeOf(x));
  int64_t n = 1;
  for (int64_t d : dims)
    if (rank > 0) {
      n *= kept[d];
      kept[d] = 1;
    }
  int64_t correction = unbiasedFlag ? (c.flag("unbiased") ? 1 : 0)
                                    : c.optI64("correction").value_or(1);
  Value mean = reduceDims(c, llm::ReduceKind::Mean, x, dims, kept);
  Value d = llm::SubOp::create(c.b, c.loc, x, broadcastTo(c, mean, shapeOf(x)));
  Value ss =
      reduceDims(c, llm::ReduceKind::Sum, llm::MulOp::create(c.b, c.loc, d, d),
                 dims, c.resultShape(0));
  Value var = llm::DivOp::create(c.b, c.loc, ss,
                                 splat(c, c.resultShape(0), c.b.getF32Type(),
                                       static_cast<double>(n - correction)));
  c.results.push_back(root ? Value(llm::SqrtOp::create(c.b, c.loc, var)) : var);
  if (withMean) {
    if (numel(c.resultShape(1)) != numel(kept))
      return c.error() << "the traced mean has the wrong number of elements";
    c.results.push_back(reshapeTo(c, mean, c.resultShape(1)));
  }
  return success();
}
LogicalResult buildVar(OpContext &c) { return variance(c, false, false); }
LogicalResult buildStd(OpContext &c) { return variance(c, true, false); }
LogicalResult buildVarMean(OpContext &c) { return variance(c, false, true); }
LogicalResult buildVarDim(OpContext &c) {
  return variance(c, false, false, true);
}
LogicalResult buildStdDim(OpContext &c) {
  return variance(c, true, false, true);
}
LogicalResult buildVarMeanDim(OpContext &c) {
  return variance(c, false, true, true);
}

/// any.dim (core ATen's _safe_softmax checks for fully masked rows with it):
/// whether any element is non-zero, as max(x != 0) along `dim`.
LogicalResult buildAnyDim(OpContext &c) {
  Value self = c.tensor("self");
  int64_t rank = rankOf(self), dim = c.i64("dim");
  if (rank == 0 || failed(checkDim(c, dim, rank)))
    return rank == 0 ? c.error() << "expects rank >= 1" : failure();
  Type elem = typeOf(self).getElementType();
  Value zero = splat(c, {}, elem.isInteger(1) ? c.b.getI1Type() : elem, 0);
  Value nz =
      compareValues(c, llm::ComparePredicate::Ne, self, zero, shapeOf(self));
  if (!nz)
    return failure();
  Value m = reduceDims(c, llm::ReduceKind::Max, nz, {normDim(dim, rank)},
                       c.resultShape());
  Value r = compareValues(c, llm::ComparePredicate::Ne, m,
                          splat(c, {}, c.b.getF32Type(), 0), c.resultShape());
  if (!r)
    return failure();
  c.results.push_back(toElem(c, r, c.resultType().getElementType()));
  return success();
}

/// max.dim: values by reduce max, indices by argmax on the moved axis.
LogicalResult buildMaxDim(OpContext &c) {
  Value self = toF32(c, c.tensor("self"));
  int64_t rank = rankOf(self), dim = c.i64("dim");
  if (rank == 0 || failed(checkDim(c, dim, rank)))
    return rank == 0 ? c.error() << "expects rank >= 1" : failure();
  dim = normDim(dim, rank);
  c.results.push_back(
      reduceDims(c, llm::ReduceKind::Max, self, {dim}, c.resultShape(0)));
  Value last = swapDims(c, self, dim, rank - 1);
  llvm::SmallVector<int64_t> s(shapeOf(last).drop_back());
  Value idx = llm::ArgmaxOp::create(
      c.b, c.loc, RankedTensorType::get(s, c.b.getI64Type()), last);
  // Undo the move: the remaining dims are in `last`'s order.
  if (dim != rank - 1 && rank > 2) {
    llvm::SmallVector<int64_t> perm;
    // `last` has dims 0..rank-2 with position `dim` holding old rank-1.
    for (int64_t i = 0; i < rank - 1; ++i)
      perm.push_back(i);
    perm.erase(perm.begin() + dim);
    perm.push_back(dim);
    idx = transposeBy(c, idx, perm);
  }
  c.results.push_back(reshapeTo(c, idx, c.resultShape(1)));
  return success();
}

LogicalResult buildArgmax(OpContext &c) {
  Value self = toF32(c, c.tensor("self"));
  std::optional<int64_t> dim = c.optI64("dim");
  int64_t rank = rankOf(self);
  if (!dim || rank == 0) {
    // Over all elements (a 0-d tensor has one).
    self = reshapeTo(c, self, {numel(shapeOf(self))});
    if (dim && failed(checkDim(c, *dim, 0)))
      return failure();
    dim = 0;
    rank = 1;
  } else if (failed(checkDim(c, *dim, rank))) {
    return failure();
  }
  int64_t d = normDim(*dim, rank);
  if (d != rank - 1 && rank > 2)
    return c.error() << "argmax over a middle dimension is not supported";
  Value last = swapDims(c, self, d, rank - 1);
  llvm::SmallVector<int64_t> s(shapeOf(last).drop_back());
  Value idx = llm::ArgmaxOp::create(
      c.b, c.loc, RankedTensorType::get(s, c.b.getI64Type()), last);
  c.results.push_back(reshapeTo(c, idx, c.resultShape()));
  return success();
}

LogicalResult softmax(OpContext &c, Value self, int64_t dim, bool log) {
  Value x = toF32(c, self);
  int64_t rank = rankOf(x);
  if (failed(checkDim(c, dim, rank)))
    return failure();
  dim = normDim(dim, rank);
  if (rank == 0) {
    c.results.push_back(splat(c, {}, c.b.getF32Type(), log ? 0 : 1));
    return success();
  }
  if (!log) {
    c.results.push_back(llm::SoftmaxOp::create(c.b, c.loc, x, dim));
    return success();
  }
  // log_softmax = (x - max) - log(sum(exp(x - max))), the stable form torch
  // uses.
  llvm::SmallVector<int64_t> kept(shapeOf(x));
  kept[dim] = 1;
  auto keptType = RankedTensorType::get(kept, c.b.getF32Type());
  Value m = llm::ReduceOp::create(c.b, c.loc, keptType, x, llm::ReduceKind::Max,
                                  dim, true);
  Value shifted =
      llm::SubOp::create(c.b, c.loc, x, broadcastTo(c, m, shapeOf(x)));
  Value sum = llm::ReduceOp::create(c.b, c.loc, keptType,
                                    llm::ExpOp::create(c.b, c.loc, shifted),
                                    llm::ReduceKind::Sum, dim, true);
  Value lse = llm::LogOp::create(c.b, c.loc, sum);
  c.results.push_back(
      llm::SubOp::create(c.b, c.loc, shifted, broadcastTo(c, lse, shapeOf(x))));
  return success();
}
LogicalResult buildSoftmaxInternal(OpContext &c) {
  return softmax(c, c.tensor("self"), c.i64("dim"), false);
}
LogicalResult buildLogSoftmaxInternal(OpContext &c) {
  return softmax(c, c.tensor("self"), c.i64("dim"), true);
}

LogicalResult layerNorm(OpContext &c, Value x, ArrayRef<int64_t> normalized,
                        Value weight, Value bias, double eps) {
  x = toF32(c, x);
  int64_t rank = rankOf(x), n = normalized.size();
  if (n == 0 || n > rank ||
      shapeOf(x).take_back(n) != ArrayRef<int64_t>(normalized))
    return c.error() << "normalized_shape does not match the input's trailing "
                        "dimensions";
  for (Value p : {weight, bias})
    if (p && shapeOf(p) != ArrayRef<int64_t>(normalized))
      return c.error() << "weight and bias must have the normalized shape";
  c.results.push_back(llm::LayerNormOp::create(c.b, c.loc, typeOf(x), x, weight,
                                               bias, llvm::APFloat(f32Of(eps)),
                                               rank - n));
  if (c.numResults() == 3) {
    // native_layer_norm's mean and 1/std (used only in training graphs;
    // unused values are removed after import).
    llvm::SmallVector<int64_t> dims, kept(shapeOf(x));
    for (int64_t d = rank - n; d < rank; ++d) {
      dims.push_back(d);
      kept[d] = 1;
    }
    // Their traced shape is the input's with the normalized dims kept as 1.
    if (c.resultShape(1) != ArrayRef<int64_t>(kept) ||
        c.resultShape(2) != ArrayRef<int64_t>(kept))
      return c.error() << "the traced mean/rstd outputs must have the input's "
                          "shape with the normalized dimensions set to 1";
    Value mean = reduceDims(c, llm::ReduceKind::Mean, x, dims, kept);
    Value centered =
        llm::SubOp::create(c.b, c.loc, x, broadcastTo(c, mean, shapeOf(x)));
    Value var = reduceDims(c, llm::ReduceKind::Mean,
                           llm::MulOp::create(c.b, c.loc, centered, centered),
                           dims, kept);
    Value rstd = llm::RsqrtOp::create(
        c.b, c.loc,
        llm::AddOp::create(c.b, c.loc, var,
                           splat(c, kept, c.b.getF32Type(), eps)));
    c.results.push_back(mean);
    c.results.push_back(rstd);
  }
  return success();
}
LogicalResult buildNativeLayerNorm(OpContext &c) {
  return layerNorm(c, c.tensor("input"), c.ints("normalized_shape"),
                   c.tensor("weight"), c.tensor("bias"), c.f64("eps"));
}

/// Scores, mask, softmax and weighted sum, as SDPA defines them, for the
/// arguments llm.attention cannot take.
LogicalResult decomposedAttention(OpContext &c, Value q, Value k, Value v,
                                  Value mask, bool causal, double scale) {
  ArrayRef<int64_t> qs = shapeOf(q), ks = shapeOf(k);
  int64_t l = qs[qs.size() - 2], s = ks[ks.size() - 2];
  auto batch = llm::broadcastShapes(qs.drop_back(2), ks.drop_back(2));
  if (failed(batch))
    return c.error() << "query and key batch dimensions do not broadcast";
  llvm::SmallVector<int64_t> scoreShape(*batch);
  scoreShape.push_back(l);
  scoreShape.push_back(s);
  Value kt = swapDims(c, k, rankOf(k) - 2, rankOf(k) - 1);
  Value scores = llm::ScaleOp::create(
      c.b, c.loc,
      llm::MatmulOp::create(c.b, c.loc,
                            RankedTensorType::get(scoreShape, c.b.getF32Type()),
                            toF32(c, q), toF32(c, kt)),
      c.b.getF32FloatAttr(f32Of(scale)));
  Value negInf =
      splat(c, {}, c.b.getF32Type(), -std::numeric_limits<double>::infinity());
  auto selectIn = [&](Value cond) -> Value {
    Value m = broadcastTo(c, cond, scoreShape);
    Value ninf = broadcastTo(c, negInf, scoreShape);
    if (!m || !ninf)
      return {};
    return llm::SelectOp::create(c.b, c.loc, typeOf(scores), m, scores, ninf);
  };
  if (causal) {
    // torch's is_causal is tril(ones(L, S)): top-left aligned.
    if (failed(checkBuiltSize(
            c, s && l > kMaxBuiltConstant / s ? kMaxBuiltConstant + 1 : l * s)))
      return failure();
    Lit tri;
    tri.shape = {l, s};
    tri.elem = c.b.getI1Type();
    for (int64_t i = 0; i < l; ++i)
      for (int64_t j = 0; j < s; ++j)
        tri.v.push_back(j <= i);
    scores = selectIn(emitLit(c, tri));
  }
  if (scores && mask) {
    if (typeOf(mask).getElementType().isInteger(1)) {
      scores = selectIn(mask);
    } else {
      Value m = broadcastTo(c, toF32(c, mask), scoreShape);
      scores = m ? Value(llm::AddOp::create(c.b, c.loc, scores, m)) : Value();
    }
  }
  if (!scores)
    return failure();
  Value p = llm::SoftmaxOp::create(c.b, c.loc, scores, scoreShape.size() - 1);
  Value out = llm::MatmulOp::create(c.b, c.loc, c.resultType(), p, toF32(c, v));
  c.results.push_back(out);
  return success();
}

/// F.scaled_dot_product_attention. [1, H, L, E] operands without a mask
/// (and, when causal, L == S: llm.attention aligns queries at the end)
/// become llm.attention on [L, H, E]; the rest is decomposed.
LogicalResult buildSDPA(OpContext &c) {
  Value q = c.tensor("query"), k = c.tensor("key"), v = c.tensor("value");
  Value mask = c.tensor("attn_mask");
  if (c.f64("dropout_p") != 0)
    return c.error() << "dropout_p must be 0 in inference";
  if (rankOf(q) < 2 || rankOf(q) != rankOf(k) || rankOf(q) != rankOf(v))
    return c.error() << "query, key and value must have the same rank >= 2";
  ArrayRef<int64_t> qs = shapeOf(q), ks = shapeOf(k), vs = shapeOf(v);
  int64_t e = qs.back(), l = qs[qs.size() - 2], s = ks[ks.size() - 2];
  double scale =
      c.isNone("scale") ? 1.0 / std::sqrt(double(e)) : c.f64("scale");
  bool causal = c.flag("is_causal");
  bool gqa = c.flag("enable_gqa");
  int64_t rank = rankOf(q);
  bool fits = !mask && rank >= 3 && rank <= 4 && (!causal || l == s) &&
              (rank == 3 || qs[0] == 1) && (rank == 3 || ks[0] == 1) &&
              (rank == 3 || vs[0] == 1);
  // Rank-2 operands have no head dimension.
  int64_t nh = rank >= 3 ? qs[rank - 3] : 1, nkv = rank >= 3 ? ks[rank - 3] : 1;
  if (nh != nkv && (!gqa || nkv == 0 || nh % nkv != 0))
    return c.error() << "query has " << nh << " heads, key " << nkv
                     << " (needs enable_gqa and a divisor)";
  if (fits) {
    // [1, H, L, E] -> [1, L, H, E] -> [L, H, E]: the transpose then cancels
    // with the model's own transpose(1, 2) in canonicalization.
    auto toLHE = [&](Value x) {
      ArrayRef<int64_t> xs = shapeOf(x);
      if (xs.size() == 3)
        return toF32(c, swapDims(c, x, 0, 1));
      Value t = swapDims(c, x, 1, 2);
      return toF32(c, reshapeTo(c, t, shapeOf(t).take_back(3)));
    };
    int64_t ev = vs.back();
    Value ql = toLHE(q), kl = toLHE(k), vl = toLHE(v);
    Value a = llm::AttentionOp::create(
        c.b, c.loc, RankedTensorType::get({l, nh, ev}, c.b.getF32Type()), ql,
        kl, vl, /*sinks=*/Value(), llvm::APFloat(f32Of(scale)), causal,
        IntegerAttr(), FloatAttr(), DenseF32ArrayAttr(), IntegerAttr(),
        IntegerAttr(), FloatAttr());
    Value out = rank == 3 ? swapDims(c, a, 0, 1)
                          : swapDims(c, reshapeTo(c, a, {1, l, nh, ev}), 1, 2);
    c.results.push_back(reshapeTo(c, out, c.resultShape()));
    return success();
  }
  if (nh != nkv) {
    // GQA: repeat each kv head nh / nkv times (repeat_interleave on heads).
    auto repeatHeads = [&](Value x) {
      llvm::SmallVector<int64_t> s(shapeOf(x));
      s.insert(s.end() - 2, 1);
      Value r = reshapeTo(c, x, s);
      s[s.size() - 3] = nh / nkv;
      r = broadcastTo(c, r, s);
      llvm::SmallVector<int64_t> merged(shapeOf(x));
      merged[merged.size() - 3] = nh;
      return r ? reshapeTo(c, r, merged) : r;
    };
    k = repeatHeads(k);
    v = repeatHeads(v);
    if (!k || !v)
      return failure();
  }
  return decomposedAttention(c, q, k, v, mask, causal, scale);
}

LogicalResult buildTopk(OpContext &c) {
  Value self = c.tensor("self");
  if (!isFloat(self))
    return c.error() << "expects a float tensor";
  int64_t rank = rankOf(self), dim = c.i64("dim");
  if (failed(checkDim(c, dim, rank)))
    return failure();
  int64_t k = c.i64("k");
  if (rank == 0 || k < 0 || k > shapeOf(self)[normDim(dim, rank)])
    return c.error() << "k = " << k << " is out of range";
  auto op = llm::TopkOp::create(c.b, c.loc, c.resultType(0), c.resultType(1),
                                toF32(c, self), k, normDim(dim, rank),
                                c.flag("largest"));
  c.results.push_back(op.getValues());
  c.results.push_back(op.getIndices());
  return success();
}

LogicalResult buildCumsum(OpContext &c) {
  Value self = c.tensor("self");
  RankedTensorType rt = c.resultType();
  int64_t rank = rankOf(self), dim = c.i64("dim");
  if (rank == 0 || failed(checkDim(c, dim, rank)))
    return rank == 0 ? c.error() << "expects rank >= 1" : failure();
  Value x = toElem(c, self, rt.getElementType());
  if (rt.getElementType().isInteger(1))
    return c.error() << "cumsum to bool is not supported";
  c.results.push_back(
      llm::CumsumOp::create(c.b, c.loc, x, normDim(dim, rank), false, false));
  return success();
}

} // namespace

llvm::ArrayRef<OpEntry> pimc::fx::detail::reductionOpEntries() {
  static const OpEntry entries[] = {
      {"scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
       "Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, "
       "float? scale=None, bool enable_gqa=False)",
       buildSDPA},
      {"sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
       "ScalarType? dtype=None)",
       buildSumDim},
      {"sum(Tensor self, *, ScalarType? dtype=None)", buildSum},
      {"mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, "
       "ScalarType? dtype=None)",
       buildMeanDim},
      {"mean(Tensor self, *, ScalarType? dtype=None)", buildMean},
      {"amax(Tensor self, int[1] dim=[], bool keepdim=False)", buildAmax},
      {"amin(Tensor self, int[1] dim=[], bool keepdim=False)", buildAmin},
      {"max(Tensor self)", buildMaxAll},
      {"min(Tensor self)", buildMinAll},
      {"var.correction(Tensor self, int[1]? dim, *, int? correction, bool "
       "keepdim=False)",
       buildVar},
      {"std.correction(Tensor self, int[1]? dim, *, int? correction, bool "
       "keepdim=False)",
       buildStd},
      {"var_mean.correction(Tensor self, int[1]? dim, *, int? correction, "
       "bool keepdim=False)",
       buildVarMean},
      {"var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool "
       "keepdim=False)",
       buildVarDim},
      {"std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool "
       "keepdim=False)",
       buildStdDim},
      {"var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool "
       "keepdim=False)",
       buildVarMeanDim},
      {"prod.dim_int(Tensor self, int dim, bool keepdim=False, *, "
       "ScalarType? dtype=None)",
       buildProdDim},
      {"max.dim(Tensor self, int dim, bool keepdim=False)", buildMaxDim},
      {"any.dim(Tensor self, int dim, bool keepdim=False)", buildAnyDim},
      {"argmax(Tensor self, int? dim=None, bool keepdim=False)", buildArgmax},
      {"_softmax(Tensor self, int dim, bool half_to_float)",
       buildSoftmaxInternal},
      {"softmax.int(Tensor self, int dim, ScalarType? dtype=None)",
       buildSoftmaxInternal},
      {"_log_softmax(Tensor self, int dim, bool half_to_float)",
       buildLogSoftmaxInternal},
      {"log_softmax.int(Tensor self, int dim, ScalarType? dtype=None)",
       buildLogSoftmaxInternal},
      {"native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? "
       "weight, Tensor? bias, float eps)",
       buildNativeLayerNorm},
      {"layer_norm(Tensor input, int[] normalized_shape, Tensor? "
       "weight=None, Tensor? bias=None, float eps=1.0000000000000001e-05, "
       "bool cudnn_enable=True)",
       buildNativeLayerNorm},
      {"topk(Tensor self, int k, int dim=-1, bool largest=True, bool "
       "sorted=True)",
       buildTopk},
      {"cumsum(Tensor self, int dim, *, ScalarType? dtype=None)", buildCumsum},
  };
  return entries;
}
