//===- ConstantOps.cpp - shapes, constants, (de)quantization
//----------------===//
//
// ONNX op handlers; the importer's state is in Importer.h.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

namespace pimc::onnx::detail {

LogicalResult Importer::shape(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  int64_t rank = (*x)->shape.size();
  int64_t start = n.getInt("start", 0), end = n.getInt("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  TensorData d;
  d.kind = Kind::I64;
  for (int64_t i = start; i < end; ++i)
    d.i64.push_back((*x)->shape[i]);
  d.shape = {int64_t(d.i64.size())};
  setConstant(n, 0, std::move(d));
  return success();
}

LogicalResult Importer::size(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  TensorData d;
  d.kind = Kind::I64;
  d.i64 = {numElements((*x)->shape)};
  setConstant(n, 0, std::move(d));
  return success();
}

LogicalResult Importer::constantOfShape(NodeCtx &n) {
  auto spec = intsInput(n, 0, "shape");
  if (failed(spec))
    return failure();
  TensorData d;
  d.kind = Kind::F32;
  float fvalue = 0;
  int64_t ivalue = 0;
  if (const auto *a = n.attr("value")) {
    auto t = decodeTensor(a->t(), baseDir, path, "attribute value of node");
    if (!t)
      return fail(n, llvm::toString(t.takeError()));
    if (numElements(t->data.shape) != 1)
      return fail(n, "value must have one element");
    d.kind = t->data.kind;
    if (d.kind == Kind::F32)
      fvalue = t->data.f32[0];
    else
      ivalue = t->data.i64[0];
  }
  if (failed(checkShape(n, *spec, "the input 'shape'")) ||
      failed(checkFoldable(n, *spec, "the result")))
    return failure();
  d.shape.assign(spec->begin(), spec->end());
  if (d.kind == Kind::F32)
    d.f32.assign(numElements(d.shape), fvalue);
  else
    d.i64.assign(numElements(d.shape), ivalue);
  setConstant(n, 0, std::move(d));
  return success();
}

LogicalResult Importer::range(NodeCtx &n) {
  SmallVector<const TensorData *> args;
  for (size_t i = 0; i < 3; ++i) {
    auto c = constantInput(n, i, i == 0 ? "start" : i == 1 ? "limit" : "delta");
    if (failed(c))
      return failure();
    if (numElements((*c)->shape) != 1)
      return fail(n, "start, limit and delta must be scalars");
    args.push_back(*c);
  }
  Kind k = args[0]->kind;
  if (k == Kind::I1 || args[1]->kind != k || args[2]->kind != k)
    return fail(n, "start, limit and delta must all be integers or all be "
                   "floats");
  auto scalar = [&](const TensorData *d) {
    return d->kind == Kind::F32 ? double(d->f32[0]) : double(d->i64[0]);
  };
  double start = scalar(args[0]), limit = scalar(args[1]),
         delta = scalar(args[2]);
  if (delta == 0)
    return fail(n, "delta is 0");
  // Checked in double before any conversion: NaN, infinities and counts
  // beyond int64 are caught by the same comparison.
  double count = std::max(std::ceil((limit - start) / delta), 0.0);
  if (!(count <= double(kMaxFoldedElements)))
    return fail(n, formatv("the result has {0:F0} elements; the limit of a "
                           "tensor computed at import time is {1} (2^24)",
                           count, kMaxFoldedElements)
                       .str());
  TensorData d;
  d.kind = k;
  d.shape = {int64_t(count)};
  for (int64_t i = 0; i < d.shape[0]; ++i) {
    if (k == Kind::F32) {
      d.f32.push_back(float(args[0]->f32[0] + float(i) * args[2]->f32[0]));
      continue;
    }
    auto step = checkedMul(i, args[2]->i64[0]);
    auto v = step ? checkedAdd(args[0]->i64[0], *step) : std::nullopt;
    if (!v)
      return fail(n, formatv("element {0} overflows int64", i));
    d.i64.push_back(*v);
  }
  setConstant(n, 0, std::move(d));
  return success();
}

LogicalResult Importer::constant(NodeCtx &n) {
  TensorData d;
  if (const auto *a = n.attr("value")) {
    auto t = decodeTensor(a->t(), baseDir, path, "attribute value of node");
    if (!t)
      return fail(n, llvm::toString(t.takeError()));
    d = std::move(t->data);
  } else if (const auto *a = n.attr("value_float")) {
    d.kind = Kind::F32;
    d.f32 = {a->f()};
  } else if (const auto *a = n.attr("value_floats")) {
    d.kind = Kind::F32;
    d.f32.assign(a->floats().begin(), a->floats().end());
    d.shape = {int64_t(d.f32.size())};
  } else if (const auto *a = n.attr("value_int")) {
    d.kind = Kind::I64;
    d.i64 = {a->i()};
  } else if (const auto *a = n.attr("value_ints")) {
    d.kind = Kind::I64;
    d.i64.assign(a->ints().begin(), a->ints().end());
    d.shape = {int64_t(d.i64.size())};
  } else {
    return fail(n, "only value, value_float(s) and value_int(s) constants "
                   "are supported (sparse and string constants are not)");
  }
  setConstant(n, 0, std::move(d));
  return success();
}

LogicalResult Importer::identity(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  setTensor(n, 0, **x);
  return success();
}

LogicalResult Importer::dequantize(NodeCtx &n) {
  // y = (x - zero_point) * scale, per tensor or along `axis`.
  if (n.getInt("block_size", 0) != 0)
    return fail(n, "blocked quantization (block_size) is not supported");
  auto x = required(n, 0);
  auto s = required(n, 1);
  if (failed(x) || failed(s))
    return failure();
  SmallVector<int64_t> shape = (*x)->shape;
  int64_t rank = shape.size();
  auto expandParam = [&](Tensor &t) -> Value {
    Value v = asF32(t, n.loc);
    if (t.shape.size() == 1 && rank > 0 && numElements(t.shape) != 1) {
      auto axis =
          normalizeAxis(n.getInt("axis", 1), rank, n, "attribute 'axis'");
      if (failed(axis))
        return Value();
      SmallVector<int64_t> bshape(rank, 1);
      bshape[*axis] = t.shape[0];
      v = reshapeTo(v, bshape, n.loc);
    }
    return broadcast(v, shape, n.loc);
  };
  Value xv = asF32(**x, n.loc);
  if (Tensor *zp = n.in(2)) {
    Value z = expandParam(*zp);
    if (!z)
      return failure();
    xv = llm::SubOp::create(b, n.loc, xv.getType(), xv, z);
  }
  Value sv = expandParam(**s);
  if (!sv)
    return failure();
  setValue(n, 0, llm::MulOp::create(b, n.loc, xv.getType(), xv, sv));
  return success();
}

LogicalResult Importer::quantize(NodeCtx &n) {
  // y = saturate(round_half_even(x / scale) + zero_point), built from
  // primitives: truncation by llm.convert, then the half-way correction.
  auto x = required(n, 0);
  auto s = required(n, 1);
  if (failed(x) || failed(s))
    return failure();
  Tensor *zp = n.in(2);
  int32_t outType = zp ? zp->onnxType : int32_t(::onnx::TensorProto::UINT8);
  double lo, hi;
  if (outType == ::onnx::TensorProto::UINT8)
    lo = 0, hi = 255;
  else if (outType == ::onnx::TensorProto::INT8)
    lo = -128, hi = 127;
  else
    return fail(n, "only uint8 and int8 outputs are supported (zero point is " +
                       typeName(outType) + ")");
  SmallVector<int64_t> shape = (*x)->shape;
  int64_t rank = shape.size();
  auto expandParam = [&](Tensor &t) -> Value {
    Value v = asF32(t, n.loc);
    if (t.shape.size() == 1 && rank > 0 && numElements(t.shape) != 1) {
      auto axis =
          normalizeAxis(n.getInt("axis", 1), rank, n, "attribute 'axis'");
      if (failed(axis))
        return Value();
      SmallVector<int64_t> bshape(rank, 1);
      bshape[*axis] = t.shape[0];
      v = reshapeTo(v, bshape, n.loc);
    }
    return broadcast(v, shape, n.loc);
  };
  Value sv = expandParam(**s);
  if (!sv)
    return failure();
  Type ft = tensorType(shape, Kind::F32);
  Location l = n.loc;
  auto trunc = [&](Value v) {
    return convertTo(convertTo(v, Kind::I64, l), Kind::F32, l);
  };
  auto splat = [&](double v) { return splatConstant(shape, Kind::F32, v, l); };
  auto cmp = [&](llm::ComparePredicate p, Value a, Value c) -> Value {
    return llm::CompareOp::create(b, l, tensorType(shape, Kind::I1), p, a, c);
  };
  Value r = llm::DivOp::create(b, l, ft, asF32(**x, l), sv);
  Value t = trunc(r);
  Value d = llm::SubOp::create(b, l, ft, r, t);
  Value ad = llm::AbsOp::create(b, l, ft, d);
  Value sign = llm::SelectOp::create(
      b, l, ft, cmp(llm::ComparePredicate::Lt, d, splat(0)), splat(-1),
      splat(1));
  Value halfT = llm::MulOp::create(b, l, ft, t, splat(0.5));
  Value odd = cmp(llm::ComparePredicate::Ne, halfT, trunc(halfT));
  Value tie = cmp(llm::ComparePredicate::Eq, ad, splat(0.5));
  Value tieUp = llm::SelectOp::create(b, l, tie.getType(), tie, odd,
                                      splatConstant(shape, Kind::I1, 0, l));
  Value up = llm::SelectOp::create(
      b, l, tie.getType(), cmp(llm::ComparePredicate::Gt, ad, splat(0.5)),
      splatConstant(shape, Kind::I1, 1, l), tieUp);
  Value q = llm::SelectOp::create(b, l, ft, up,
                                  llm::AddOp::create(b, l, ft, t, sign), t);
  if (zp) {
    Value z = expandParam(*zp);
    if (!z)
      return failure();
    q = llm::AddOp::create(b, l, ft, q, z);
  }
  q = llm::MaximumOp::create(b, l, ft, q, splat(lo));
  q = llm::MinimumOp::create(b, l, ft, q, splat(hi));
  setValue(n, 0, convertTo(q, Kind::I64, l));
  return success();
}

} // namespace pimc::onnx::detail
