//===- NormOps.cpp - softmax and normalisation
//------------------------------===//
//
// ONNX op handlers; the importer's state is in Importer.h.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

namespace pimc::onnx::detail {

LogicalResult Importer::softmax(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  int64_t rank = (*x)->shape.size();
  // Before opset 13 the input is coerced to 2-D at `axis` (default 1) and
  // normalised over the flattened trailing part.
  bool coerce = n.opset < 13;
  auto axis = normalizeAxis(n.getInt("axis", coerce ? 1 : -1), rank, n,
                            "attribute 'axis'");
  if (failed(axis))
    return failure();
  if (setIfEmpty(n, 0, (*x)->shape, Kind::F32))
    return success();
  Value v = asF32(**x, n.loc);
  SmallVector<int64_t> orig = (*x)->shape;
  int64_t ax = *axis;
  if (coerce) {
    int64_t outer = numElements(ArrayRef<int64_t>(orig).take_front(ax));
    int64_t inner = numElements(ArrayRef<int64_t>(orig).drop_front(ax));
    v = reshapeTo(v, {outer, inner}, n.loc);
    ax = 1;
  }
  Value r;
  if (n.opType() == "Softmax") {
    r = llm::SoftmaxOp::create(b, n.loc, v.getType(), v,
                               b.getI64IntegerAttr(ax));
  } else {
    // log_softmax = (x - max) - log(sum(exp(x - max))): no log of an
    // underflowed probability.
    SmallVector<int64_t> shape(shapeOf(v));
    Value mx = reduceAxes(v, llm::ReduceKind::Max, {ax}, true, n.loc);
    Value shifted = llm::SubOp::create(b, n.loc, v.getType(), v,
                                       broadcast(mx, shape, n.loc));
    Value e = llm::ExpOp::create(b, n.loc, v.getType(), shifted);
    Value s = reduceAxes(e, llm::ReduceKind::Sum, {ax}, true, n.loc);
    Value l = llm::LogOp::create(b, n.loc, s.getType(), s);
    r = llm::SubOp::create(b, n.loc, v.getType(), shifted,
                           broadcast(l, shape, n.loc));
  }
  setValue(n, 0, reshapeTo(r, orig, n.loc));
  return success();
}

LogicalResult Importer::layerNorm(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  SmallVector<int64_t> shape = (*x)->shape;
  int64_t rank = shape.size();
  auto axis = normalizeAxis(n.getInt("axis", -1), rank, n, "attribute 'axis'");
  if (failed(axis))
    return failure();
  float eps = n.getFloat("epsilon", 1e-5f);
  ArrayRef<int64_t> normShape = ArrayRef<int64_t>(shape).drop_front(*axis);
  Value v = asF32(**x, n.loc);
  Value w, bias;
  if (Tensor *s = n.in(1)) {
    w = broadcast(asF32(*s, n.loc), normShape, n.loc);
    if (!w)
      return failure();
  }
  if (Tensor *bt = n.in(2)) {
    bias = broadcast(asF32(*bt, n.loc), normShape, n.loc);
    if (!bias)
      return failure();
  }
  setValue(n, 0,
           llm::LayerNormOp::create(b, n.loc, v.getType(), v, w, bias,
                                    b.getF32FloatAttr(eps),
                                    b.getI64IntegerAttr(*axis - rank)));
  if (n.outputUsed(1) || n.outputUsed(2)) {
    // The optional statistics outputs: mean and 1/sqrt(var + eps) over the
    // normalised dimensions, kept as size-1 dimensions.
    SmallVector<int64_t> axes;
    for (int64_t i = *axis; i < rank; ++i)
      axes.push_back(i);
    SmallVector<int64_t> statShape(shape.begin(), shape.begin() + *axis);
    statShape.append(rank - *axis, 1);
    Value mean = reduceAxes(v, llm::ReduceKind::Mean, axes, true, n.loc);
    Value centered = llm::SubOp::create(b, n.loc, v.getType(), v,
                                        broadcast(mean, shape, n.loc));
    Value sq = llm::MulOp::create(b, n.loc, v.getType(), centered, centered);
    Value var = reduceAxes(sq, llm::ReduceKind::Mean, axes, true, n.loc);
    Value epsT = splatConstant(statShape, Kind::F32, eps, n.loc);
    Value sum = llm::AddOp::create(b, n.loc, var.getType(), var, epsT);
    setValue(n, 1, mean);
    setValue(n, 2, llm::RsqrtOp::create(b, n.loc, sum.getType(), sum));
  }
  return success();
}

LogicalResult Importer::rmsNorm(NodeCtx &n) {
  auto x = required(n, 0);
  auto s = required(n, 1);
  if (failed(x) || failed(s))
    return failure();
  int64_t rank = (*x)->shape.size();
  auto axis = normalizeAxis(n.getInt("axis", -1), rank, n, "attribute 'axis'");
  if (failed(axis))
    return failure();
  if (*axis != rank - 1)
    return fail(n, "only normalisation over the last axis is supported (axis " +
                       Twine(*axis) + ")");
  if (n.outputUsed(1) || n.outputUsed(2))
    return fail(n, "the inv_std_var output is not supported");
  Value v = asF32(**x, n.loc);
  Value w = broadcast(asF32(**s, n.loc), {(*x)->shape.back()}, n.loc);
  if (!w)
    return failure();
  setValue(
      n, 0,
      llm::RMSNormOp::create(b, n.loc, v.getType(), v, w,
                             b.getF32FloatAttr(n.getFloat("epsilon", 1e-5f))));
  return success();
}

} // namespace pimc::onnx::detail
