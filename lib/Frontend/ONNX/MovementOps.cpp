//===- MovementOps.cpp - data movement
//--------------------------------------===//
//
// ONNX op handlers; the importer's state is in Importer.h.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

namespace pimc::onnx::detail {

/// Gathers `indices` (flat positions along `axis`) from a constant.
static TensorData gatherConstant(const TensorData &d, int64_t axis,
                                 ArrayRef<int64_t> idx,
                                 ArrayRef<int64_t> idxShape) {
  TensorData r;
  r.kind = d.kind;
  r.shape.assign(d.shape.begin(), d.shape.begin() + axis);
  r.shape.append(idxShape.begin(), idxShape.end());
  r.shape.append(d.shape.begin() + axis + 1, d.shape.end());
  int64_t outer = numElements(ArrayRef<int64_t>(d.shape).take_front(axis));
  int64_t inner = numElements(ArrayRef<int64_t>(d.shape).drop_front(axis + 1));
  int64_t dim = d.shape[axis];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : idx)
      for (int64_t in = 0; in < inner; ++in) {
        int64_t src = (o * dim + i) * inner + in;
        if (d.kind == Kind::F32)
          r.f32.push_back(d.f32[src]);
        else
          r.i64.push_back(d.i64[src]);
      }
  return r;
}

LogicalResult Importer::gather(NodeCtx &n) {
  auto x = required(n, 0);
  auto idx = required(n, 1);
  if (failed(x) || failed(idx))
    return failure();
  if ((*idx)->kind != Kind::I64)
    return fail(n, "indices must be integers");
  int64_t rank = (*x)->shape.size();
  if (rank == 0)
    return fail(n, "data must have rank >= 1");
  auto axis = normalizeAxis(n.getInt("axis", 0), rank, n, "attribute 'axis'");
  if (failed(axis))
    return failure();
  int64_t dim = (*x)->shape[*axis];
  SmallVector<int64_t> idxShape = (*idx)->shape;
  SmallVector<int64_t> outShape((*x)->shape.begin(),
                                (*x)->shape.begin() + *axis);
  outShape.append(idxShape.begin(), idxShape.end());
  outShape.append((*x)->shape.begin() + *axis + 1, (*x)->shape.end());
  if (failed(checkShape(n, outShape, "the result")))
    return failure();
  if ((*idx)->constant) {
    SmallVector<int64_t> flat;
    for (int64_t i : (*idx)->constant->i64) {
      if (i < -dim || i >= dim)
        return fail(
            n, formatv("index {0} is out of range for dimension {1}", i, dim));
      flat.push_back(i < 0 ? i + dim : i);
    }
    if ((*x)->constant && foldable(outShape)) {
      setConstant(n, 0, gatherConstant(*(*x)->constant, *axis, flat, idxShape));
      return success();
    }
    if (setIfEmpty(n, 0, outShape, (*x)->kind))
      return success();
    TensorData d;
    d.kind = Kind::I64;
    d.shape = {int64_t(flat.size())};
    d.i64.assign(flat.begin(), flat.end());
    Value data = materialize(**x, n.loc);
    Value iv = constantValue(d, n.loc);
    SmallVector<int64_t> gshape((*x)->shape);
    gshape[*axis] = flat.size();
    Value g = llm::GatherOp::create(b, n.loc, tensorType(gshape, (*x)->kind),
                                    data, iv, b.getI64IntegerAttr(*axis));
    setValue(n, 0, reshapeTo(g, outShape, n.loc));
    return success();
  }
  if (setIfEmpty(n, 0, outShape, (*x)->kind))
    return success();
  Value iv =
      reshapeTo(materialize(**idx, n.loc), {numElements(idxShape)}, n.loc);
  if ((*x)->initializer && rank == 2 && *axis == 0) {
    // A row lookup in a weight table is the embedding (token ids must be
    // in [0, rows); ONNX's negative indices are a run-time error here).
    Value table;
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(b.getInsertionBlock());
      table = weightValue(**x, /*transposed=*/false, n.loc);
    }
    Value e = llm::EmbeddingOp::create(
        b, n.loc,
        tensorType({numElements(idxShape), (*x)->shape[1]}, Kind::F32), table,
        iv);
    setValue(n, 0, reshapeTo(e, outShape, n.loc));
    return success();
  }
  Value data = materialize(**x, n.loc);
  SmallVector<int64_t> gshape((*x)->shape);
  gshape[*axis] = numElements(idxShape);
  Value g = llm::GatherOp::create(b, n.loc, tensorType(gshape, (*x)->kind),
                                  data, iv, b.getI64IntegerAttr(*axis));
  setValue(n, 0, reshapeTo(g, outShape, n.loc));
  return success();
}

/// `t` with a new shape: folded for constants, llm.reshape otherwise.
static Tensor reshaped(const Tensor &t, ArrayRef<int64_t> shape) {
  Tensor r = t;
  r.shape.assign(shape.begin(), shape.end());
  r.value = Value();
  r.initializer = nullptr;
  if (t.constant) {
    auto d = std::make_shared<TensorData>(*t.constant);
    d->shape.assign(shape.begin(), shape.end());
    r.constant = d;
  }
  return r;
}

LogicalResult Importer::reshape(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  auto spec = intsInput(n, 1, "shape");
  if (failed(spec))
    return failure();
  bool allowZero = n.getInt("allowzero", 0);
  SmallVector<int64_t> shape;
  int64_t inferAt = -1;
  for (auto [i, d] : llvm::enumerate(*spec)) {
    if (d == 0 && !allowZero) {
      if (i >= (*x)->shape.size())
        return fail(n, "shape entry 0 at " + Twine(i) +
                           " has no input dimension to copy");
      d = (*x)->shape[i];
    }
    if (d == -1) {
      if (inferAt >= 0)
        return fail(n, formatv("shape[{0}] is a second -1 (shape {1})", i,
                               shapeString(*spec)));
      inferAt = i;
      shape.push_back(1);
      continue;
    }
    if (d < 0)
      return fail(n, formatv("shape[{0}] = {1} is invalid", i, d));
    shape.push_back(d);
  }
  if (failed(checkShape(n, shape, "the input 'shape'")))
    return failure();
  int64_t known = numElements(shape);
  int64_t total = numElements((*x)->shape);
  if (inferAt >= 0) {
    if (known == 0 || total % known)
      return fail(n, "cannot infer -1 in " + shapeString(*spec) + " for " +
                         shapeString((*x)->shape));
    shape[inferAt] = total / known;
  }
  if (numElements(shape) != total)
    return fail(n, "cannot reshape " + shapeString((*x)->shape) + " to " +
                       shapeString(shape));
  if (setIfEmpty(n, 0, shape, (*x)->kind))
    return success();
  Tensor r = reshaped(**x, shape);
  if (!r.constant)
    r.value = reshapeTo(materialize(**x, n.loc), shape, n.loc);
  setTensor(n, 0, r);
  return success();
}

LogicalResult Importer::squeeze(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  bool unsq = n.opType() == "Unsqueeze";
  SmallVector<int64_t> axes;
  bool haveAxes = false;
  if (n.opset >= 13) {
    if (n.in(1)) {
      auto a = intsInput(n, 1, "axes");
      if (failed(a))
        return failure();
      axes = *a;
      haveAxes = true;
    }
  } else if (auto a = n.getInts("axes")) {
    axes = *a;
    haveAxes = true;
  }
  SmallVector<int64_t> in = (*x)->shape, out;
  if (unsq) {
    if (!haveAxes)
      return fail(n, "axes are required");
    int64_t outRank = in.size() + axes.size();
    SmallVector<bool> isNew(outRank, false);
    for (auto [i, a] : llvm::enumerate(axes)) {
      auto na = normalizeAxis(a, outRank, n, "axes[" + std::to_string(i) + "]");
      if (failed(na))
        return failure();
      if (isNew[*na])
        return fail(n, "repeated axis " + Twine(a));
      isNew[*na] = true;
    }
    size_t j = 0;
    for (int64_t i = 0; i < outRank; ++i)
      out.push_back(isNew[i] ? 1 : in[j++]);
  } else {
    SmallVector<bool> drop(in.size(), false);
    if (!haveAxes) {
      for (auto [i, d] : llvm::enumerate(in))
        drop[i] = d == 1;
    }
    for (auto [i, a] : llvm::enumerate(axes)) {
      auto na =
          normalizeAxis(a, in.size(), n, "axes[" + std::to_string(i) + "]");
      if (failed(na))
        return failure();
      if (in[*na] != 1)
        return fail(n,
                    formatv("cannot squeeze axis {0} of size {1}", a, in[*na]));
      drop[*na] = true;
    }
    for (auto [i, d] : llvm::enumerate(in))
      if (!drop[i])
        out.push_back(d);
  }
  Tensor r = reshaped(**x, out);
  if (!r.constant)
    r.value = reshapeTo(materialize(**x, n.loc), out, n.loc);
  setTensor(n, 0, r);
  return success();
}

LogicalResult Importer::flatten(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  int64_t rank = (*x)->shape.size();
  auto axis = normalizeAxis(n.getInt("axis", 1), rank, n, "attribute 'axis'",
                            /*inclusiveEnd=*/true);
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> s = (*x)->shape;
  SmallVector<int64_t> out = {numElements(s.take_front(*axis)),
                              numElements(s.drop_front(*axis))};
  Tensor r = reshaped(**x, out);
  if (!r.constant)
    r.value = reshapeTo(materialize(**x, n.loc), out, n.loc);
  setTensor(n, 0, r);
  return success();
}

LogicalResult Importer::transpose(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  int64_t rank = (*x)->shape.size();
  SmallVector<int64_t> perm;
  if (auto p = n.getInts("perm"))
    perm = *p;
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  SmallVector<bool> seen(rank, false);
  if (int64_t(perm.size()) != rank)
    return fail(n, "perm has " + Twine(perm.size()) + " entries for rank " +
                       Twine(rank));
  for (auto [i, p] : llvm::enumerate(perm)) {
    auto np = normalizeAxis(p, rank, n, "perm[" + std::to_string(i) + "]");
    if (failed(np))
      return failure();
    if (seen[*np])
      return fail(n, "perm is not a permutation");
    seen[*np] = true;
    p = *np;
  }
  SmallVector<int64_t> out;
  for (int64_t p : perm)
    out.push_back((*x)->shape[p]);
  if (setIfEmpty(n, 0, out, (*x)->kind))
    return success();
  setValue(n, 0, transposeBy(materialize(**x, n.loc), perm, n.loc));
  return success();
}

LogicalResult Importer::concat(NodeCtx &n) {
  if (n.numInputs() == 0)
    return fail(n, "needs at least one input");
  for (size_t i = 0; i < n.numInputs(); ++i)
    if (!n.in(i))
      return fail(n, "input " + Twine(i) + " is missing");
  Tensor &first = *n.in(0);
  int64_t rank = first.shape.size();
  auto axis = normalizeAxis(n.getInt("axis", 0), rank, n, "attribute 'axis'");
  if (failed(axis))
    return failure();
  SmallVector<int64_t> out = first.shape;
  out[*axis] = 0;
  bool allConst = true;
  for (size_t i = 0; i < n.numInputs(); ++i) {
    Tensor &t = *n.in(i);
    if (int64_t(t.shape.size()) != rank || t.kind != first.kind)
      return fail(n, "inputs differ in rank or element type");
    for (int64_t d = 0; d < rank; ++d)
      if (d != *axis && t.shape[d] != first.shape[d])
        return fail(n, "input " + Twine(i) + " shape " + shapeString(t.shape) +
                           " does not match " + shapeString(first.shape));
    out[*axis] = checkedAdd(out[*axis], t.shape[*axis])
                     .value_or(std::numeric_limits<int64_t>::max());
    allConst &= bool(t.constant) && !t.initializer;
  }
  if (failed(checkShape(n, out, "the result")))
    return failure();
  if (allConst && foldable(out)) {
    // Fold (shape vectors): interleave the inputs' slabs along the axis.
    TensorData r;
    r.kind = first.kind;
    r.shape = out;
    int64_t outer = numElements(ArrayRef<int64_t>(out).take_front(*axis));
    int64_t inner = numElements(ArrayRef<int64_t>(out).drop_front(*axis + 1));
    for (int64_t o = 0; o < outer; ++o)
      for (size_t i = 0; i < n.numInputs(); ++i) {
        const TensorData &d = *n.in(i)->constant;
        int64_t slab = d.shape[*axis] * inner;
        for (int64_t e = 0; e < slab; ++e) {
          if (r.kind == Kind::F32)
            r.f32.push_back(d.f32[o * slab + e]);
          else
            r.i64.push_back(d.i64[o * slab + e]);
        }
      }
    setConstant(n, 0, std::move(r));
    return success();
  }
  if (setIfEmpty(n, 0, out, first.kind))
    return success();
  SmallVector<Value> vals;
  for (size_t i = 0; i < n.numInputs(); ++i)
    if (n.in(i)->shape[*axis] != 0)
      vals.push_back(materialize(*n.in(i), n.loc));
  if (vals.size() == 1) {
    setValue(n, 0, vals[0]);
    return success();
  }
  setValue(n, 0,
           llm::ConcatOp::create(b, n.loc, tensorType(out, first.kind), vals,
                                 b.getI64IntegerAttr(*axis)));
  return success();
}

LogicalResult Importer::split(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  int64_t rank = (*x)->shape.size();
  auto axis = normalizeAxis(n.getInt("axis", 0), rank, n, "attribute 'axis'");
  if (failed(axis))
    return failure();
  int64_t dim = (*x)->shape[*axis];
  SmallVector<int64_t> sizes;
  if (n.opset >= 13 && n.in(1)) {
    auto s = intsInput(n, 1, "split");
    if (failed(s))
      return failure();
    sizes = *s;
  } else if (n.opset < 13 && n.getInts("split")) {
    sizes = *n.getInts("split");
  } else {
    int64_t parts = n.opset >= 18 ? n.getInt("num_outputs", n.numOutputs())
                                  : int64_t(n.numOutputs());
    if (parts <= 0)
      return fail(n, "no outputs");
    if (parts != int64_t(n.numOutputs()))
      return fail(n, formatv("attribute 'num_outputs' = {0} but the node has "
                             "{1} outputs",
                             parts, n.numOutputs()));
    // Opset 18: the last chunk is smaller when the split is uneven.
    int64_t chunk = (dim + parts - 1) / parts;
    if (n.opset < 18 && dim % parts)
      return fail(n, formatv("dimension {0} does not split into {1} equal "
                             "parts",
                             dim, parts));
    for (int64_t i = 0, left = dim; i < parts; ++i, left -= chunk)
      sizes.push_back(std::min(chunk, left));
  }
  if (sizes.size() != n.numOutputs())
    return fail(n, formatv("{0} split sizes for {1} outputs", sizes.size(),
                           n.numOutputs()));
  int64_t sum = 0;
  for (auto [i, s] : llvm::enumerate(sizes)) {
    if (s < 0)
      return fail(n, formatv("split[{0}] = {1} is negative", i, s));
    sum = checkedAdd(sum, s).value_or(std::numeric_limits<int64_t>::max());
  }
  if (sum != dim)
    return fail(
        n, formatv("split sizes add up to {0}, dimension is {1}", sum, dim));
  int64_t start = 0;
  for (auto [i, s] : llvm::enumerate(sizes)) {
    SmallVector<int64_t> shape = (*x)->shape;
    shape[*axis] = s;
    if (!setIfEmpty(n, i, shape, (*x)->kind)) {
      Value v = materialize(**x, n.loc);
      setValue(n, i,
               llm::SliceOp::create(b, n.loc, tensorType(shape, (*x)->kind), v,
                                    b.getI64IntegerAttr(*axis),
                                    b.getI64IntegerAttr(start),
                                    b.getI64IntegerAttr(s)));
    }
    start += s;
  }
  return success();
}

LogicalResult Importer::slice(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  auto starts = intsInput(n, 1, "starts");
  if (failed(starts))
    return failure();
  auto ends = intsInput(n, 2, "ends");
  if (failed(ends))
    return failure();
  int64_t rank = (*x)->shape.size();
  SmallVector<int64_t> axes, steps;
  if (n.in(3)) {
    auto a = intsInput(n, 3, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    for (int64_t i = 0; i < int64_t(starts->size()); ++i)
      axes.push_back(i);
  }
  if (n.in(4)) {
    auto s = intsInput(n, 4, "steps");
    if (failed(s))
      return failure();
    steps = *s;
  } else {
    steps.assign(starts->size(), 1);
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return fail(n, "starts, ends, axes and steps differ in length");
  Tensor cur = **x;
  for (size_t i = 0; i < axes.size(); ++i) {
    auto axis =
        normalizeAxis(axes[i], rank, n, "axes[" + std::to_string(i) + "]");
    if (failed(axis))
      return failure();
    int64_t dim = cur.shape[*axis], step = steps[i];
    if (step == 0)
      return fail(n, formatv("steps[{0}] is 0", i));
    // ONNX clamping: starts/ends are clamped to [0, dim] for positive
    // steps and [-1, dim - 1] for negative ones, after adding dim to
    // negative values.
    auto clampIdx = [&](int64_t v) {
      if (v < 0)
        v += dim;
      return step > 0 ? std::clamp<int64_t>(v, 0, dim)
                      : std::clamp<int64_t>(v, -1, dim - 1);
    };
    int64_t s = clampIdx((*starts)[i]), e = clampIdx((*ends)[i]);
    // |step| beyond dim takes one element, as dim + 1 does (no overflow).
    int64_t mag = std::min<uint64_t>(
        step > 0 ? uint64_t(step) : 0 - uint64_t(step), uint64_t(dim) + 1);
    int64_t span = step > 0 ? e - s : s - e;
    int64_t count = span > 0 ? (span - 1) / mag + 1 : 0;
    SmallVector<int64_t> shape = cur.shape;
    shape[*axis] = count;
    bool contiguous = step == 1;
    if (!contiguous &&
        failed(checkFoldable(n, {count}, "the positions of a strided slice")))
      return failure();
    SmallVector<int64_t> idx;
    if (!contiguous || (cur.constant && !cur.initializer))
      for (int64_t j = 0; j < count; ++j)
        idx.push_back(s + j * (step > 0 ? mag : -mag));
    Tensor next;
    next.kind = cur.kind;
    next.shape = shape;
    if (numElements(shape) == 0) {
      TensorData d;
      d.kind = cur.kind;
      d.shape = shape;
      next.constant = std::make_shared<TensorData>(std::move(d));
    } else if (cur.constant && !cur.initializer) {
      next.constant = std::make_shared<TensorData>(
          gatherConstant(*cur.constant, *axis, idx, {int64_t(idx.size())}));
    } else if (count == dim && contiguous) {
      next = cur;
    } else if (contiguous) {
      next.value = llm::SliceOp::create(
          b, n.loc, tensorType(shape, cur.kind), materialize(cur, n.loc),
          b.getI64IntegerAttr(*axis), b.getI64IntegerAttr(s),
          b.getI64IntegerAttr(count));
    } else {
      // Strided or reversed: a gather with the constant positions.
      TensorData d;
      d.kind = Kind::I64;
      d.shape = {int64_t(idx.size())};
      d.i64.assign(idx.begin(), idx.end());
      next.value = llm::GatherOp::create(
          b, n.loc, tensorType(shape, cur.kind), materialize(cur, n.loc),
          constantValue(d, n.loc), b.getI64IntegerAttr(*axis));
    }
    cur = next;
  }
  setTensor(n, 0, cur);
  return success();
}

LogicalResult Importer::expand(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  auto spec = intsInput(n, 1, "shape");
  if (failed(spec) || failed(checkShape(n, *spec, "the input 'shape'")))
    return failure();
  auto shape = llm::broadcastShapes((*x)->shape, *spec);
  if (failed(shape))
    return fail(n, "cannot expand " + shapeString((*x)->shape) + " to " +
                       shapeString(*spec));
  if (setIfEmpty(n, 0, *shape, (*x)->kind))
    return success();
  setValue(n, 0, broadcast(materialize(**x, n.loc), *shape, n.loc));
  return success();
}

LogicalResult Importer::tile(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  auto reps = intsInput(n, 1, "repeats");
  if (failed(reps))
    return failure();
  int64_t rank = (*x)->shape.size();
  if (int64_t(reps->size()) != rank)
    return fail(n, formatv("repeats has {0} entries for an input of rank {1}",
                           reps->size(), rank));
  SmallVector<int64_t> outShape;
  for (int64_t a = 0; a < rank; ++a) {
    if ((*reps)[a] < 0)
      return fail(n, formatv("repeats[{0}] = {1} is negative", a, (*reps)[a]));
    auto d = checkedMul((*x)->shape[a], (*reps)[a]);
    if (!d)
      return fail(n, formatv("repeats[{0}] = {1} times dimension {2} "
                             "overflows int64",
                             a, (*reps)[a], (*x)->shape[a]));
    outShape.push_back(*d);
  }
  if (failed(checkShape(n, outShape, "the result")))
    return failure();
  if (setIfEmpty(n, 0, outShape, (*x)->kind))
    return success();
  if ((*x)->constant && (*x)->kind != Kind::F32 && !(*x)->initializer &&
      foldable(outShape)) {
    // Integer shape arithmetic: out[i] = x[i mod shape].
    TensorData r;
    r.kind = (*x)->kind;
    r.shape = outShape;
    SmallVector<int64_t> idx(rank);
    for (int64_t i = 0, e = numElements(outShape); i < e; ++i) {
      int64_t rem = i, off = 0, stride = 1;
      for (int64_t a = rank - 1; a >= 0; --a) {
        idx[a] = rem % outShape[a];
        rem /= outShape[a];
      }
      for (int64_t a = rank - 1; a >= 0; --a) {
        off += (idx[a] % (*x)->shape[a]) * stride;
        stride *= (*x)->shape[a];
      }
      r.i64.push_back((*x)->constant->i64[off]);
    }
    setConstant(n, 0, std::move(r));
    return success();
  }
  // Per repeated axis a: [.., d, ..] -> [.., 1, d, ..] -> broadcast to
  // [.., r, d, ..] -> [.., r * d, ..] (copies of the whole axis, in order).
  Value v = materialize(**x, n.loc);
  for (int64_t a = 0; a < rank; ++a) {
    int64_t r = (*reps)[a];
    if (r == 1)
      continue;
    SmallVector<int64_t> cur(shapeOf(v));
    SmallVector<int64_t> unit(cur);
    unit.insert(unit.begin() + a, 1);
    SmallVector<int64_t> wide(cur);
    wide.insert(wide.begin() + a, r);
    SmallVector<int64_t> merged(cur);
    merged[a] *= r;
    v = reshapeTo(broadcast(reshapeTo(v, unit, n.loc), wide, n.loc), merged,
                  n.loc);
  }
  setValue(n, 0, v);
  return success();
}

LogicalResult Importer::scatterElements(NodeCtx &n) {
  auto x = required(n, 0);
  auto idx = required(n, 1);
  auto upd = required(n, 2);
  if (failed(x) || failed(idx) || failed(upd))
    return failure();
  if ((*idx)->kind != Kind::I64)
    return fail(n, "indices must be integers");
  if ((*x)->kind != (*upd)->kind)
    return fail(n, "data and updates differ in element type");
  ArrayRef<int64_t> dShape = (*x)->shape, sShape = (*idx)->shape;
  int64_t rank = dShape.size();
  if (rank == 0)
    return fail(n, "data must have rank >= 1");
  if (int64_t(sShape.size()) != rank || (*upd)->shape != (*idx)->shape)
    return fail(n, "indices " + shapeString(sShape) + " and updates " +
                       shapeString((*upd)->shape) +
                       " must have the same shape, of data's rank " +
                       std::to_string(rank));
  auto axis = normalizeAxis(n.getInt("axis", 0), rank, n, "attribute 'axis'");
  if (failed(axis))
    return failure();
  for (int64_t a = 0; a < rank; ++a)
    if (a != *axis && sShape[a] != dShape[a])
      return fail(n, "indices " + shapeString(sShape) + " cover part of data " +
                         shapeString(dShape) + " outside axis " +
                         std::to_string(*axis) +
                         "; only a full extent is supported there");
  std::string reduction = n.getString("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" &&
      reduction != "max" && reduction != "min")
    return fail(n, "unknown reduction '" + reduction + "'");
  int64_t m = dShape[*axis];
  if (failed(checkFoldable(n, {m}, "the positions along the axis")))
    return failure();
  if (setIfEmpty(n, 0, dShape, (*x)->kind))
    return success();
  if (numElements(sShape) == 0) {
    setTensor(n, 0, **x);
    return success();
  }
  if ((*idx)->constant)
    for (int64_t i : (*idx)->constant->i64)
      if (i < -m || i >= m)
        return fail(
            n, formatv("index {0} is out of range for dimension {1}", i, m));
  if ((*x)->kind != Kind::F32)
    return fail(n, "only f32 data is supported (run-time integer "
                   "scatters have no llm primitive)");
  // As a one-hot contraction on [.., m (target), cnt (source), ..]: source
  // element (.., s, ..) writes to target t when its index is t (or t - m).
  SmallVector<int64_t> wide(sShape);
  wide.insert(wide.begin() + *axis, m);
  SmallVector<int64_t> srcView(sShape);
  srcView.insert(srcView.begin() + *axis, 1);
  SmallVector<int64_t> iotaView(rank + 1, 1);
  iotaView[*axis] = m;
  auto iota = [&](int64_t shift) {
    TensorData d;
    d.kind = Kind::I64;
    d.shape = iotaView;
    for (int64_t t = 0; t < m; ++t)
      d.i64.push_back(t + shift);
    return broadcast(constantValue(d, n.loc), wide, n.loc);
  };
  Value iv = broadcast(reshapeTo(materialize(**idx, n.loc), srcView, n.loc),
                       wide, n.loc);
  auto i1Type = tensorType(wide, Kind::I1);
  Value hit = llm::CompareOp::create(b, n.loc, i1Type,
                                     llm::ComparePredicate::Eq, iv, iota(0));
  bool maybeNegative =
      !(*idx)->constant ||
      llvm::any_of((*idx)->constant->i64, [](int64_t i) { return i < 0; });
  if (maybeNegative) {
    Value neg = llm::CompareOp::create(b, n.loc, i1Type,
                                       llm::ComparePredicate::Eq, iv, iota(-m));
    hit = llm::SelectOp::create(b, n.loc, i1Type, hit, hit, neg);
  }
  Value uv = broadcast(reshapeTo(materialize(**upd, n.loc), srcView, n.loc),
                       wide, n.loc);
  Value data = materialize(**x, n.loc);
  auto f32Type = tensorType(wide, Kind::F32);
  // Reduces the selected updates (`fill` elsewhere) over the source axis.
  auto gathered = [&](llm::ReduceKind kind, double fill) {
    Value sel =
        llm::SelectOp::create(b, n.loc, f32Type, hit, uv,
                              splatConstant(wide, Kind::F32, fill, n.loc));
    return reduceAxes(sel, kind, {*axis + 1}, /*keepDims=*/false, n.loc);
  };
  Value out;
  auto dType = tensorType(dShape, Kind::F32);
  if (reduction == "add") {
    out = llm::AddOp::create(b, n.loc, dType, data,
                             gathered(llm::ReduceKind::Sum, 0));
  } else if (reduction == "mul") {
    out = llm::MulOp::create(b, n.loc, dType, data,
                             gathered(llm::ReduceKind::Prod, 1));
  } else if (reduction == "max") {
    out = llm::MaximumOp::create(b, n.loc, dType, data,
                                 gathered(llm::ReduceKind::Max, -INFINITY));
  } else if (reduction == "min") {
    out = llm::MinimumOp::create(b, n.loc, dType, data,
                                 gathered(llm::ReduceKind::Min, INFINITY));
  } else {
    // none: ONNX leaves duplicate indices undefined; they sum here.
    Value written = gathered(llm::ReduceKind::Sum, 0);
    Value count = llm::SelectOp::create(
        b, n.loc, f32Type, hit, splatConstant(wide, Kind::F32, 1, n.loc),
        splatConstant(wide, Kind::F32, 0, n.loc));
    Value covered = llm::CompareOp::create(
        b, n.loc, tensorType(dShape, Kind::I1), llm::ComparePredicate::Gt,
        reduceAxes(count, llm::ReduceKind::Sum, {*axis + 1}, false, n.loc),
        splatConstant(dShape, Kind::F32, 0, n.loc));
    out = llm::SelectOp::create(b, n.loc, dType, covered, written, data);
  }
  setValue(n, 0, out);
  return success();
}

} // namespace pimc::onnx::detail
