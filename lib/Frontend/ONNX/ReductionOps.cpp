//===- ReductionOps.cpp - reductions, TopK, CumSum, Trilu
//-------------------===//
//
// ONNX op handlers; the importer's state is in Importer.h.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

namespace pimc::onnx::detail {

Value Importer::reduceAxes(Value v, llm::ReduceKind kind,
                           ArrayRef<int64_t> axes, bool keepDims,
                           Location loc) {
  // One llm.reduce per axis, keeping dimensions so the remaining axis
  // numbers stay valid; mean of means is exact in the count.
  SmallVector<int64_t> shape(shapeOf(v));
  for (int64_t a : axes) {
    shape[a] = 1;
    v = llm::ReduceOp::create(b, loc, tensorType(shape, Kind::F32), v,
                              llm::ReduceKindAttr::get(&ctx, kind),
                              b.getI64IntegerAttr(a), b.getBoolAttr(true));
  }
  if (!keepDims) {
    SmallVector<int64_t> out;
    for (auto [i, d] : llvm::enumerate(shape))
      if (!llvm::is_contained(axes, int64_t(i)))
        out.push_back(d);
    v = reshapeTo(v, out, loc);
  }
  return v;
}

LogicalResult Importer::reduce(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  StringRef op = n.opType();
  // Axes moved from an attribute to an input in opset 13 (ReduceSum) and
  // 18 (the others).
  int64_t inputSince = op == "ReduceSum" ? 13 : 18;
  SmallVector<int64_t> axes;
  bool haveAxes = false;
  if (n.opset >= inputSince) {
    if (n.in(1)) {
      auto a = intsInput(n, 1, "axes");
      if (failed(a))
        return failure();
      axes = *a;
      haveAxes = !axes.empty();
    }
  } else if (auto a = n.getInts("axes")) {
    axes = *a;
    haveAxes = !axes.empty();
  }
  bool keep = n.getInt("keepdims", 1);
  int64_t rank = (*x)->shape.size();
  if (!haveAxes) {
    if (n.getInt("noop_with_empty_axes", 0)) {
      setTensor(n, 0, **x);
      return success();
    }
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  for (auto [i, a] : llvm::enumerate(axes)) {
    auto na = normalizeAxis(a, rank, n, "axes[" + std::to_string(i) + "]");
    if (failed(na))
      return failure();
    a = *na;
  }
  llvm::sort(axes);
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  SmallVector<int64_t> outShape;
  for (int64_t i = 0; i < rank; ++i) {
    bool red = llvm::is_contained(axes, i);
    if (!red)
      outShape.push_back((*x)->shape[i]);
    else if (keep)
      outShape.push_back(1);
  }
  Kind resultKind = (*x)->kind == Kind::I1 ? Kind::I64 : (*x)->kind;
  if (numElements((*x)->shape) == 0) {
    // Reducing nothing: the identity of the reduction (ONNX defines it).
    double ident = op == "ReduceProd"   ? 1.0
                   : op == "ReduceMax"  ? -INFINITY
                   : op == "ReduceMin"  ? INFINITY
                   : op == "ReduceMean" ? NAN
                                        : 0.0;
    if (resultKind != Kind::F32 && !std::isfinite(ident))
      ident = 0;
    if (!foldable(outShape)) {
      setValue(n, 0, splatConstant(outShape, resultKind, ident, n.loc));
      return success();
    }
    TensorData d;
    d.kind = resultKind;
    d.shape = outShape;
    if (resultKind == Kind::F32)
      d.f32.assign(numElements(outShape), float(ident));
    else
      d.i64.assign(numElements(outShape),
                   int64_t(std::isfinite(ident) ? ident : 0));
    setConstant(n, 0, std::move(d));
    return success();
  }
  llm::ReduceKind kind = op == "ReduceSum"    ? llm::ReduceKind::Sum
                         : op == "ReduceMean" ? llm::ReduceKind::Mean
                         : op == "ReduceMax"  ? llm::ReduceKind::Max
                         : op == "ReduceMin"  ? llm::ReduceKind::Min
                                              : llm::ReduceKind::Prod;
  Value r = reduceAxes(asF32(**x, n.loc), kind, axes, keep, n.loc);
  setValue(n, 0, convertTo(r, resultKind, n.loc));
  return success();
}

LogicalResult Importer::topk(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  auto kv = intsInput(n, 1, "K");
  if (failed(kv))
    return failure();
  if (kv->size() != 1)
    return fail(n, "K must have one element");
  int64_t rank = (*x)->shape.size();
  auto axis = normalizeAxis(n.getInt("axis", -1), rank, n, "attribute 'axis'");
  if (failed(axis))
    return failure();
  int64_t k = (*kv)[0];
  if (k < 0 || k > (*x)->shape[*axis])
    return fail(n, formatv("K = {0} is out of range for dimension {1}", k,
                           (*x)->shape[*axis]));
  bool largest = n.getInt("largest", 1);
  SmallVector<int64_t> shape = (*x)->shape;
  shape[*axis] = k;
  Value v = asF32(**x, n.loc);
  auto op = llm::TopkOp::create(
      b, n.loc, tensorType(shape, Kind::F32), tensorType(shape, Kind::I64), v,
      b.getI64IntegerAttr(k), b.getI64IntegerAttr(*axis),
      b.getBoolAttr(largest));
  setValue(n, 0, convertTo(op.getValues(), (*x)->kind, n.loc));
  setValue(n, 1, op.getIndices());
  return success();
}

LogicalResult Importer::cumsum(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  auto ax = intsInput(n, 1, "axis");
  if (failed(ax))
    return failure();
  if (ax->size() != 1)
    return fail(n, "axis must have one element");
  auto axis = normalizeAxis((*ax)[0], (*x)->shape.size(), n, "input 'axis'");
  if (failed(axis))
    return failure();
  Kind k = (*x)->kind == Kind::I1 ? Kind::I64 : (*x)->kind;
  Value v = convertTo(materialize(**x, n.loc), k, n.loc);
  setValue(n, 0,
           llm::CumsumOp::create(b, n.loc, v.getType(), v,
                                 b.getI64IntegerAttr(*axis),
                                 b.getBoolAttr(n.getInt("exclusive", 0)),
                                 b.getBoolAttr(n.getInt("reverse", 0))));
  return success();
}

LogicalResult Importer::trilu(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  int64_t k = 0;
  if (n.in(1)) {
    auto kv = intsInput(n, 1, "k");
    if (failed(kv))
      return failure();
    if (kv->size() != 1)
      return fail(n, "k must have one element");
    k = (*kv)[0];
  }
  SmallVector<int64_t> shape = (*x)->shape;
  if (shape.size() < 2)
    return fail(n, "input must have rank >= 2");
  if (setIfEmpty(n, 0, shape, (*x)->kind))
    return success();
  bool upper = n.getInt("upper", 1);
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  if (failed(checkFoldable(n, {rows, cols}, "the mask")))
    return failure();
  // Keep element (i, j) when j - i >= k (upper) or j - i <= k (lower).
  TensorData mask;
  mask.kind = Kind::I1;
  mask.shape = {rows, cols};
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.i64.push_back(upper ? j - i >= k : j - i <= k);
  Value v = materialize(**x, n.loc);
  Value m = broadcast(constantValue(mask, n.loc), shape, n.loc);
  Value zero = splatConstant(shape, (*x)->kind, 0, n.loc);
  setValue(n, 0, llm::SelectOp::create(b, n.loc, v.getType(), m, v, zero));
  return success();
}

} // namespace pimc::onnx::detail
