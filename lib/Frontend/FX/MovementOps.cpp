//===- MovementOps.cpp - ATen shapes and data movement
//----------------------===//
//
// The FX importer's builders for shapes and data movement, and their rows of
// the op table (ATen schema syntax, as torch declares them).
//
//===----------------------------------------------------------------------===//

#include "FXOpHelpers.h"

using namespace pimc;
using namespace pimc::fx;
using namespace pimc::fx::detail;

namespace {

/// Every view-like op (view, reshape, unsqueeze, squeeze, flatten) is a
/// reshape to the traced shape.
LogicalResult buildReshape(OpContext &c) {
  Value self = c.tensor("self");
  ArrayRef<int64_t> shape = c.resultShape();
  if (numel(shape) != numel(shapeOf(self)))
    return c.error() << "cannot reshape " << numel(shapeOf(self))
                     << " elements to " << numel(shape);
  c.results.push_back(reshapeTo(c, self, shape));
  return success();
}

LogicalResult buildExpand(OpContext &c) {
  Value r = broadcastTo(c, c.tensor("self"), c.resultShape());
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

LogicalResult buildExpandAs(OpContext &c) {
  Value r = broadcastTo(c, c.tensor("self"), shapeOf(c.tensor("other")));
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

/// repeat: each repeated dimension as reshape [.., 1, d, ..], broadcast to
/// [.., r, d, ..], reshape to [.., r*d, ..] (torch tiles whole copies).
LogicalResult buildRepeat(OpContext &c) {
  Value x = c.tensor("self");
  llvm::SmallVector<int64_t> reps = c.ints("repeats");
  if (reps.size() < static_cast<size_t>(rankOf(x)))
    return c.error() << "repeats has fewer entries than the tensor's rank";
  llvm::SmallVector<int64_t> shape(reps.size() - rankOf(x), 1);
  shape.append(shapeOf(x).begin(), shapeOf(x).end());
  x = reshapeTo(c, x, shape);
  for (size_t d = 0; d < reps.size(); ++d) {
    if (reps[d] == 1)
      continue;
    llvm::SmallVector<int64_t> s(shapeOf(x));
    s.insert(s.begin() + d, 1);
    x = reshapeTo(c, x, s);
    s[d] = reps[d];
    x = broadcastTo(c, x, s);
    if (!x)
      return failure();
    llvm::SmallVector<int64_t> merged(shapeOf(x));
    merged[d] = reps[d] * merged[d + 1];
    merged.erase(merged.begin() + d + 1);
    x = reshapeTo(c, x, merged);
  }
  c.results.push_back(x);
  return success();
}

/// repeat_interleave with an int count: each element `repeats` times in a
/// row along `dim` (GLM's and Cohere's interleaved RoPE tables): reshape
/// [.., d, 1, ..], broadcast to [.., d, r, ..], reshape to [.., d*r, ..].
/// Without dim the tensor is flattened first.
LogicalResult buildRepeatInterleaveInt(OpContext &c) {
  Value x = c.tensor("self");
  int64_t reps = c.i64("repeats");
  if (reps < 1)
    return c.error() << "repeats must be positive, got " << reps;
  std::optional<int64_t> dimArg = c.optI64("dim");
  if (!dimArg) {
    int64_t n = 1;
    for (int64_t d : shapeOf(x))
      n *= d;
    x = reshapeTo(c, x, {n});
  }
  int64_t rank = rankOf(x), dim = dimArg.value_or(0);
  if (rank == 0)
    return c.error() << "cannot repeat_interleave a 0-d tensor";
  if (failed(checkDim(c, dim, rank)))
    return failure();
  dim = normDim(dim, rank);
  llvm::SmallVector<int64_t> s(shapeOf(x));
  s.insert(s.begin() + dim + 1, 1);
  x = reshapeTo(c, x, s);
  s[dim + 1] = reps;
  x = broadcastTo(c, x, s);
  if (!x)
    return failure();
  s[dim] *= reps;
  s.erase(s.begin() + dim + 1);
  c.results.push_back(reshapeTo(c, x, s));
  return success();
}

LogicalResult buildPermute(OpContext &c) {
  Value self = c.tensor("self");
  llvm::SmallVector<int64_t> dims = c.ints("dims");
  int64_t rank = rankOf(self);
  if (static_cast<int64_t>(dims.size()) != rank)
    return c.error() << "dims has " << dims.size() << " entries, the tensor "
                     << "has rank " << rank;
  llvm::SmallVector<bool> seen(rank, false);
  for (int64_t &d : dims) {
    if (failed(checkDim(c, d, rank)))
      return failure();
    d = normDim(d, rank);
    if (seen[d])
      return c.error() << "dims repeats dimension " << d;
    seen[d] = true;
  }
  c.results.push_back(transposeBy(c, self, dims));
  return success();
}

LogicalResult buildTransposeInt(OpContext &c) {
  Value self = c.tensor("self");
  int64_t rank = rankOf(self);
  int64_t a = c.i64("dim0"), b = c.i64("dim1");
  if (failed(checkDim(c, a, rank)) || failed(checkDim(c, b, rank)))
    return failure();
  if (rank < 2) {
    c.results.push_back(self);
    return success();
  }
  c.results.push_back(swapDims(c, self, normDim(a, rank), normDim(b, rank)));
  return success();
}

LogicalResult buildT(OpContext &c) {
  Value self = c.tensor("self");
  if (rankOf(self) > 2)
    return c.error() << "expects a tensor of rank <= 2";
  c.results.push_back(rankOf(self) == 2 ? swapDims(c, self, 0, 1) : self);
  return success();
}

/// Python slice bounds clamped like torch.
std::pair<int64_t, int64_t> clampRange(std::optional<int64_t> start,
                                       std::optional<int64_t> end, int64_t n) {
  int64_t s = start.value_or(0), e = end.value_or(n);
  if (s < 0)
    s += n;
  if (e < 0)
    e += n;
  s = std::clamp<int64_t>(s, 0, n);
  e = std::clamp<int64_t>(e, s, n);
  return {s, e};
}

LogicalResult buildSlice(OpContext &c) {
  Value self = c.tensor("self");
  int64_t rank = rankOf(self);
  int64_t dim = c.i64("dim");
  if (rank == 0)
    return c.error() << "cannot slice a 0-d tensor";
  if (failed(checkDim(c, dim, rank)))
    return failure();
  dim = normDim(dim, rank);
  int64_t step = c.i64("step");
  if (step < 1)
    return c.error() << "step must be positive, got " << step;
  auto [s, e] =
      clampRange(c.optI64("start"), c.optI64("end"), shapeOf(self)[dim]);
  if (step == 1) {
    c.results.push_back(sliceOf(c, self, dim, s, e - s));
    return success();
  }
  // Strided slices gather the constant positions.
  if (failed(checkBuiltSize(c, (e - s) / step + 1)))
    return failure();
  Lit idx;
  idx.elem = c.b.getI64Type();
  for (int64_t i = s; i < e; i += step)
    idx.v.push_back(i);
  idx.shape = {static_cast<int64_t>(idx.v.size())};
  c.results.push_back(llm::GatherOp::create(c.b, c.loc, c.resultType(), self,
                                            emitLit(c, idx), dim));
  return success();
}

LogicalResult buildSelect(OpContext &c) {
  Value self = c.tensor("self");
  int64_t rank = rankOf(self);
  int64_t dim = c.i64("dim");
  if (rank == 0 || failed(checkDim(c, dim, rank)))
    return rank == 0 ? c.error() << "cannot select from a 0-d tensor"
                     : failure();
  dim = normDim(dim, rank);
  int64_t n = shapeOf(self)[dim], index = c.i64("index");
  if (index < -n || index >= n)
    return c.error() << "index " << index << " is out of range for size " << n;
  if (index < 0)
    index += n;
  Value s = sliceOf(c, self, dim, index, 1);
  c.results.push_back(reshapeTo(c, s, c.resultShape()));
  return success();
}

LogicalResult buildCat(OpContext &c) {
  llvm::SmallVector<Value> inputs;
  RankedTensorType rt = c.resultType();
  for (Value v : c.tensors("tensors")) {
    // torch skips legacy empty 1-D tensors in cat.
    if (rankOf(v) == 1 && shapeOf(v)[0] == 0 && rt.getRank() != 1)
      continue;
    inputs.push_back(toElem(c, v, rt.getElementType()));
  }
  if (inputs.empty())
    return c.error() << "no non-empty tensors to concatenate";
  int64_t dim = c.i64("dim");
  if (failed(checkDim(c, dim, rt.getRank())))
    return failure();
  dim = normDim(dim, rt.getRank());
  if (inputs.size() == 1) {
    c.results.push_back(inputs[0]);
    return success();
  }
  c.results.push_back(llm::ConcatOp::create(c.b, c.loc, rt, inputs, dim));
  return success();
}

/// torch.diff: prepend/append concatenated along `dim`, then n times
/// x[1:] - x[:-1]. Integers go through f32 like the other arithmetic here
/// (transformers diffs position ids in its masking code).
LogicalResult buildDiff(OpContext &c) {
  RankedTensorType rt = c.resultType();
  Value self = c.tensor("self");
  int64_t rank = rankOf(self), dim = c.i64("dim"), n = c.i64("n");
  if (rank == 0 || failed(checkDim(c, dim, rank)))
    return rank == 0 ? c.error() << "expects rank >= 1" : failure();
  if (typeOf(self).getElementType().isInteger(1))
    return c.error() << "diff of a bool tensor (logical xor) is not supported";
  if (n < 0)
    return c.error() << "n = " << n << " must be non-negative";
  dim = normDim(dim, rank);
  llvm::SmallVector<Value> parts;
  for (llvm::StringRef name : {"prepend", "self", "append"}) {
    Value v = c.tensor(name);
    if (!v)
      continue;
    if (rankOf(v) != rank)
      return c.error() << name << " must have the rank of self (" << rank
                       << ")";
    parts.push_back(toF32(c, v));
  }
  Value x = parts[0];
  if (parts.size() > 1) {
    llvm::SmallVector<int64_t> shape(shapeOf(parts[0]));
    shape[dim] = 0;
    for (Value v : parts)
      shape[dim] += shapeOf(v)[dim];
    x = llm::ConcatOp::create(
        c.b, c.loc, RankedTensorType::get(shape, c.b.getF32Type()), parts, dim);
  }
  for (int64_t i = 0; i < n && shapeOf(x)[dim] > 0; ++i) {
    int64_t len = shapeOf(x)[dim] - 1;
    x = llm::SubOp::create(c.b, c.loc, sliceOf(c, x, dim, 1, len),
                           sliceOf(c, x, dim, 0, len));
  }
  if (shapeOf(x) != rt.getShape())
    return c.error() << "the result shape disagrees with the traced one";
  c.results.push_back(toElem(c, x, rt.getElementType()));
  return success();
}

/// stack: every input gains the new unit dimension, then concat.
LogicalResult buildStack(OpContext &c) {
  RankedTensorType rt = c.resultType();
  int64_t dim = c.i64("dim");
  if (failed(checkDim(c, dim, rt.getRank())))
    return failure();
  dim = normDim(dim, rt.getRank());
  llvm::SmallVector<Value> inputs;
  for (Value v : c.tensors("tensors")) {
    llvm::SmallVector<int64_t> s(shapeOf(v));
    if (dim > static_cast<int64_t>(s.size()))
      return c.error() << "dimension " << dim << " is out of range";
    s.insert(s.begin() + dim, 1);
    inputs.push_back(reshapeTo(c, toElem(c, v, rt.getElementType()), s));
  }
  if (inputs.empty())
    return c.error() << "no tensors to stack";
  c.results.push_back(inputs.size() == 1 ? inputs[0]
                                         : Value(llm::ConcatOp::create(
                                               c.b, c.loc, rt, inputs, dim)));
  return success();
}

LogicalResult splitBy(OpContext &c, ArrayRef<int64_t> sizes, int64_t dim) {
  Value self = c.tensor("self");
  int64_t rank = rankOf(self);
  if (failed(checkDim(c, dim, rank)))
    return failure();
  dim = normDim(dim, rank);
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return c.error() << "negative split size " << s;
    total += s;
  }
  if (total != shapeOf(self)[dim])
    return c.error() << "split sizes sum to " << total << ", the dimension has "
                     << shapeOf(self)[dim];
  int64_t start = 0;
  for (int64_t s : sizes) {
    c.results.push_back(sliceOf(c, self, dim, start, s));
    start += s;
  }
  return success();
}

LogicalResult buildSplitTensor(OpContext &c) {
  // The traced outputs give the sizes (the last chunk may be smaller).
  int64_t dim = c.i64("dim"), rank = rankOf(c.tensor("self"));
  if (rank == 0 || failed(checkDim(c, dim, rank)))
    return rank == 0 ? c.error() << "cannot split a 0-d tensor" : failure();
  dim = normDim(dim, rank);
  llvm::SmallVector<int64_t> sizes;
  for (unsigned i = 0; i < c.numResults(); ++i) {
    if (dim >= static_cast<int64_t>(c.resultShape(i).size()))
      return c.error() << "dimension " << dim << " is out of range";
    sizes.push_back(c.resultShape(i)[dim]);
  }
  return splitBy(c, sizes, c.i64("dim"));
}

LogicalResult buildSplitWithSizes(OpContext &c) {
  llvm::SmallVector<int64_t> sizes = c.ints("split_sizes");
  if (sizes.size() != c.numResults())
    return c.error() << sizes.size() << " split sizes, the graph traced "
                     << c.numResults() << " outputs";
  return splitBy(c, sizes, c.i64("dim"));
}

LogicalResult buildUnbind(OpContext &c) {
  Value self = c.tensor("self");
  int64_t rank = rankOf(self), dim = c.i64("dim");
  if (rank == 0 || failed(checkDim(c, dim, rank)))
    return rank == 0 ? c.error() << "cannot unbind a 0-d tensor" : failure();
  dim = normDim(dim, rank);
  for (unsigned i = 0; i < c.numResults(); ++i)
    c.results.push_back(
        reshapeTo(c, sliceOf(c, self, dim, i, 1), c.resultShape(i)));
  return success();
}

LogicalResult buildIndexSelect(OpContext &c) {
  Value self = c.tensor("self");
  Value index = toElem(c, c.tensor("index"), c.b.getI64Type());
  int64_t rank = rankOf(self), dim = c.i64("dim");
  if (failed(checkDim(c, dim, rank)))
    return failure();
  if (rankOf(index) > 1)
    return c.error() << "index must be 0-D or 1-D";
  index = reshapeTo(c, index, {numel(shapeOf(index))});
  c.results.push_back(llm::GatherOp::create(c.b, c.loc, c.resultType(), self,
                                            index, normDim(dim, rank)));
  return success();
}

/// 0, 1, .., n-1 as an i64 literal of shape [n].
Lit arangeLit(OpContext &c, int64_t n) {
  Lit range;
  range.shape = {n};
  range.elem = c.b.getI64Type();
  for (int64_t i = 0; i < n; ++i)
    range.v.push_back(i);
  return range;
}

/// index_copy (a static KV cache's update at cache_position): self with
/// slice index[j] along `dim` replaced by source slice j, later j winning.
/// The positions compared are gather(arange(N), index), equal to `index`
/// when it is in range; an out-of-range index (torch raises) is thus the
/// gather's run-time error instead of a silently kept row.
LogicalResult buildIndexCopy(OpContext &c) {
  RankedTensorType rt = c.resultType();
  Value self = c.tensor("self");
  Value index = toElem(c, c.tensor("index"), c.b.getI64Type());
  Value source = toElem(c, c.tensor("source"), rt.getElementType());
  int64_t rank = rankOf(self), dim = c.i64("dim");
  if (rank == 0 || failed(checkDim(c, dim, rank)))
    return rank == 0 ? c.error() << "expects rank >= 1" : failure();
  dim = normDim(dim, rank);
  if (rankOf(index) > 1)
    return c.error() << "index must be 0-D or 1-D";
  int64_t n = shapeOf(self)[dim], k = numel(shapeOf(index));
  llvm::SmallVector<int64_t> want(shapeOf(self));
  want[dim] = k;
  if (rankOf(source) != rank || shapeOf(source) != ArrayRef<int64_t>(want))
    return c.error() << "source must have self's shape with " << k
                     << " along dim " << dim;
  if (failed(checkBuiltSize(c, n)))
    return failure();
  Lit range = arangeLit(c, n);
  Value positions = emitLit(c, range);
  Value checked = llm::GatherOp::create(
      c.b, c.loc, RankedTensorType::get({k}, c.b.getI64Type()), positions,
      reshapeTo(c, index, {k}), 0);
  llvm::SmallVector<int64_t> along(rank, 1);
  along[dim] = n;
  Value rangeAlong = reshapeTo(c, positions, along);
  Value acc = self;
  for (int64_t j = 0; j < k; ++j) {
    Value hit = compareValues(c, llm::ComparePredicate::Eq, rangeAlong,
                              sliceOf(c, checked, 0, j, 1), rt.getShape());
    Value row = broadcastTo(c, sliceOf(c, source, dim, j, 1), rt.getShape());
    acc = hit && row ? selectValues(c, hit, row, acc) : Value();
    if (!acc)
      return failure();
  }
  c.results.push_back(acc);
  return success();
}

/// aten.copy (torch.export's functional copy_): src converted to self's
/// dtype and broadcast to its shape; self's values are not read.
LogicalResult buildCopy(OpContext &c) {
  RankedTensorType rt = c.resultType();
  Value src = toElem(c, c.tensor("src"), rt.getElementType());
  Value out = src ? broadcastTo(c, src, rt.getShape()) : Value();
  if (!out)
    return c.error() << "src does not broadcast to self's shape";
  c.results.push_back(out);
  return success();
}

/// `i` (i64) wrapped into [0, n) when negative, as f32 (exact below 2^24).
Value normalizedIndexF32(OpContext &c, Value i, int64_t n) {
  Value f = toF32(c, i);
  ArrayRef<int64_t> shape = shapeOf(f);
  auto i1 = RankedTensorType::get(shape, c.b.getI1Type());
  Value zero = splat(c, shape, c.b.getF32Type(), 0);
  Value neg = llm::CompareOp::create(c.b, c.loc, i1, llm::ComparePredicate::Lt,
                                     f, zero);
  Value wrapped =
      llm::AddOp::create(c.b, c.loc, f, splat(c, shape, c.b.getF32Type(), n));
  return llm::SelectOp::create(c.b, c.loc, typeOf(f), neg, wrapped, f);
}

/// x[..., i_0, ..., i_{k-1}, ...]: advanced indexing with index tensors on
/// k consecutive dimensions (torch puts the broadcast index shape B in
/// their place). One index tensor is a gather; several are linearized
/// (each wrapped when negative, then sum_j i_j * stride_j, in f32, exact
/// for the sizes checked here) into one gather over the merged dimensions.
/// An index component out of its own range but inside the merged one is
/// not detected.
LogicalResult buildIndexTensor(OpContext &c) {
  Value self = c.tensor("self");
  llvm::SmallVector<Value> indices = c.tensors("indices");
  int64_t rank = rankOf(self);
  int64_t first = -1, last = -1;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (!indices[i])
      continue;
    if (first >= 0 && last + 1 != static_cast<int64_t>(i))
      return c.error() << "index tensors on non-adjacent dimensions are not "
                          "supported";
    if (first < 0)
      first = i;
    last = i;
  }
  if (first < 0 || last >= rank)
    return c.error() << "needs index tensors within the rank";
  int64_t k = last - first + 1;
  for (int64_t j = first; j <= last; ++j)
    if (typeOf(indices[j]).getElementType().isInteger(1))
      return c.error() << "boolean mask indexing has a data-dependent shape "
                          "and is not supported";
  if (k == 1) {
    Value index = toElem(c, indices[first], c.b.getI64Type());
    c.results.push_back(
        llm::GatherOp::create(c.b, c.loc, c.resultType(), self, index, first));
    return success();
  }
  // The broadcast index shape, from the traced result.
  ArrayRef<int64_t> rs = c.resultShape(), ss = shapeOf(self);
  int64_t bRank = static_cast<int64_t>(rs.size()) - (rank - k);
  if (bRank < 0)
    return c.error() << "the traced result rank does not fit the indexing";
  ArrayRef<int64_t> bShape = rs.slice(first, bRank);
  int64_t merged = 1;
  for (int64_t j = first; j <= last; ++j)
    merged *= ss[j];
  if (merged >= (int64_t(1) << 24))
    return c.error() << "indexing " << k << " dimensions of " << merged
                     << " elements together is not supported (limit 2^24)";
  Value lin;
  int64_t stride = merged;
  for (int64_t j = first; j <= last; ++j) {
    stride /= ss[j];
    Value idx = broadcastTo(c, toElem(c, indices[j], c.b.getI64Type()), bShape);
    if (!idx)
      return failure();
    Value term = normalizedIndexF32(c, idx, ss[j]);
    if (stride != 1)
      term = llm::MulOp::create(c.b, c.loc, term,
                                splat(c, bShape, c.b.getF32Type(), stride));
    lin = lin ? llm::AddOp::create(c.b, c.loc, lin, term).getResult() : term;
  }
  llvm::SmallVector<int64_t> flat(ss.take_front(first));
  flat.push_back(merged);
  flat.append(ss.begin() + last + 1, ss.end());
  c.results.push_back(llm::GatherOp::create(
      c.b, c.loc, c.resultType(), reshapeTo(c, self, flat),
      toElem(c, lin, c.b.getI64Type()), first));
  return success();
}

/// llm.nonzero of `x` at the traced `count` ([count, rank] i64), x taken as
/// bool, f32 or i64.
Value nonzeroOf(OpContext &c, Value x, int64_t count) {
  Type elem = typeOf(x).getElementType();
  if (!elem.isInteger(1))
    x = toElem(c, x,
               isa<FloatType>(elem) ? Type(c.b.getF32Type())
                                    : Type(c.b.getI64Type()));
  return llm::NonzeroOp::create(
      c.b, c.loc, RankedTensorType::get({count, rankOf(x)}, c.b.getI64Type()),
      x);
}

/// nonzero: the multi-indices of the true elements, with the traced count.
LogicalResult buildNonzero(OpContext &c) {
  Value self = c.tensor("self");
  RankedTensorType rt = c.resultType();
  if (rt.getRank() != 2 || rt.getDimSize(1) != rankOf(self))
    return c.error() << "the traced result must be [count, rank]";
  c.results.push_back(nonzeroOf(c, self, rt.getDimSize(0)));
  return success();
}

/// torch.where(condition) (torch.export keeps it): one index tensor per
/// dimension, nonzero(condition) unbound, at the traced count (checked at
/// run time by llm.nonzero, as for aten.nonzero).
LogicalResult buildWhereIndices(OpContext &c) {
  Value cond = c.tensor("condition");
  int64_t rank = rankOf(cond);
  if (rank == 0 || c.numResults() != static_cast<unsigned>(rank))
    return c.error() << "the traced result must be one index tensor per dim";
  int64_t count = c.resultShape(0).empty() ? -1 : c.resultShape(0)[0];
  for (unsigned i = 0; i < c.numResults(); ++i)
    if (c.resultShape(i).size() != 1 || c.resultShape(i)[0] != count)
      return c.error() << "the traced results must all be [count]";
  Value nz = nonzeroOf(c, cond, count);
  for (int64_t i = 0; i < rank; ++i)
    c.results.push_back(reshapeTo(c, sliceOf(c, nz, 1, i, 1), {count}));
  return success();
}

/// one_hot(x, n)[..., j] = (x[...] == j), as i64.
LogicalResult buildOneHot(OpContext &c) {
  Value self = toElem(c, c.tensor("self"), c.b.getI64Type());
  ArrayRef<int64_t> rs = c.resultShape();
  if (rs.size() != static_cast<size_t>(rankOf(self)) + 1)
    return c.error() << "the traced result must add the class dimension";
  int64_t n = rs.back();
  if (failed(checkBuiltSize(c, n)))
    return failure();
  Lit range = arangeLit(c, n);
  llvm::SmallVector<int64_t> col(shapeOf(self));
  col.push_back(1);
  Value eq = compareValues(c, llm::ComparePredicate::Eq,
                           reshapeTo(c, self, col), emitLit(c, range), rs);
  if (!eq)
    return failure();
  c.results.push_back(toElem(c, eq, c.b.getI64Type()));
  return success();
}

/// scatter along the last dimension: mask[..., n] = any_j(index[..., j] ==
/// n); value: select(mask, value, self); src: the matching src element
/// (sum over j of the one-hot; duplicate indices, unspecified in torch, add).
LogicalResult scatter(OpContext &c, bool fromSrc) {
  Value self = c.tensor("self");
  Value index = toElem(c, c.tensor("index"), c.b.getI64Type());
  int64_t rank = rankOf(self), dim = c.i64("dim");
  if (failed(checkDim(c, dim, rank)))
    return failure();
  if (normDim(dim, rank) != rank - 1 || rankOf(index) != rank)
    return c.error() << "only scatter along the last dimension with an index "
                        "of the same rank is supported";
  ArrayRef<int64_t> ss = shapeOf(self), is = shapeOf(index);
  for (int64_t d = 0; d + 1 < rank; ++d)
    if (ss[d] != is[d])
      return c.error() << "index and self must agree in every dimension but "
                          "the last";
  int64_t n = ss.back(), j = is.back();
  if (failed(checkBuiltSize(c, n)))
    return failure();
  llvm::SmallVector<int64_t> oh(is.begin(), is.end());
  oh.push_back(n); // [..., J, N]
  Lit range = arangeLit(c, n);
  llvm::SmallVector<int64_t> col(is.begin(), is.end());
  col.push_back(1);
  Value eq = compareValues(c, llm::ComparePredicate::Eq,
                           reshapeTo(c, index, col), emitLit(c, range), oh);
  if (!eq)
    return failure();
  Value hot = toF32(c, eq);
  auto reduced = RankedTensorType::get(ss, c.b.getF32Type());
  Value hit = llm::ReduceOp::create(c.b, c.loc, reduced, hot,
                                    llm::ReduceKind::Max, rank - 1, false);
  Value mask = compareValues(c, llm::ComparePredicate::Ne, hit,
                             splat(c, {}, c.b.getF32Type(), 0), ss);
  Value value;
  if (fromSrc) {
    Value src = c.tensor("src");
    if (!isFloat(src))
      return c.error() << "scatter of integer values is not supported";
    ArrayRef<int64_t> srcShape = shapeOf(src);
    if (rankOf(src) != rank || srcShape.drop_back() != is.drop_back() ||
        srcShape.back() < j)
      return c.error() << "src must have the index's shape (at least its "
                          "size in the last dimension)";
    llvm::SmallVector<int64_t> srcCol(is.begin(), is.end());
    srcCol.push_back(1);
    Value s = sliceOf(c, toF32(c, src), rank - 1, 0, j);
    if (shapeOf(s) != is)
      return c.error() << "src must cover the index shape";
    s = broadcastTo(c, reshapeTo(c, s, srcCol), oh);
    Value prod = llm::MulOp::create(c.b, c.loc, hot, s);
    value = llm::ReduceOp::create(c.b, c.loc, reduced, prod,
                                  llm::ReduceKind::Sum, rank - 1, false);
  } else {
    value = splat(c, {}, c.resultType().getElementType(), c.f64("value"));
  }
  Value r = selectValues(c, mask, value, self);
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}
LogicalResult buildScatterValue(OpContext &c) { return scatter(c, false); }
LogicalResult buildScatterSrc(OpContext &c) { return scatter(c, true); }

/// index_add along dim 0: self + onehot(index)^T @ (alpha * source).
LogicalResult buildIndexAdd(OpContext &c) {
  Value self = c.tensor("self");
  Value index = toElem(c, c.tensor("index"), c.b.getI64Type());
  Value source = toF32(c, c.tensor("source"));
  int64_t rank = rankOf(self);
  if (failed(checkDim(c, c.i64("dim"), rank)))
    return failure();
  if (normDim(c.i64("dim"), rank) != 0 || rank != 2 || rankOf(index) != 1)
    return c.error() << "only index_add along dim 0 of a 2-D tensor is "
                        "supported";
  int64_t n = shapeOf(self)[0], i = shapeOf(index)[0];
  if (failed(checkBuiltSize(c, n)))
    return failure();
  Lit range = arangeLit(c, n);
  range.shape = {n, 1};
  Value eq = compareValues(c, llm::ComparePredicate::Eq, emitLit(c, range),
                           reshapeTo(c, index, {1, i}), {n, i});
  if (!eq)
    return failure();
  Value contrib = llm::MatmulOp::create(
      c.b, c.loc, RankedTensorType::get(shapeOf(self), c.b.getF32Type()),
      toF32(c, eq), scaledBy(c, source, c.f64("alpha")));
  c.results.push_back(llm::AddOp::create(c.b, c.loc, toF32(c, self), contrib));
  return success();
}

} // namespace

llvm::ArrayRef<OpEntry> pimc::fx::detail::movementOpEntries() {
  static const OpEntry entries[] = {
      {"t(Tensor(a) self)", buildT},
      {"transpose.int(Tensor(a) self, int dim0, int dim1)", buildTransposeInt},
      {"permute(Tensor(a) self, int[] dims)", buildPermute},
      {"view(Tensor(a) self, SymInt[] size)", buildReshape},
      {"_unsafe_view(Tensor self, SymInt[] size)", buildReshape},
      {"reshape(Tensor(a) self, SymInt[] shape)", buildReshape},
      {"_reshape_alias(Tensor(a) self, SymInt[] size, SymInt[] stride)",
       buildReshape},
      {"unsqueeze(Tensor(a) self, int dim)", buildReshape},
      {"squeeze.dim(Tensor(a) self, int dim)", buildReshape},
      {"squeeze(Tensor(a) self)", buildReshape},
      {"flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1)",
       buildReshape},
      {"expand(Tensor(a) self, SymInt[] size, *, bool implicit=False)",
       buildExpand},
      {"expand_as(Tensor(a) self, Tensor other)", buildExpandAs},
      {"repeat(Tensor self, SymInt[] repeats)", buildRepeat},
      {"repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, "
       "*, SymInt? output_size=None)",
       buildRepeatInterleaveInt},
      {"slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? "
       "end=None, SymInt step=1)",
       buildSlice},
      {"select.int(Tensor(a) self, int dim, int index)", buildSelect},
      {"cat(Tensor[] tensors, int dim=0)", buildCat},
      {"diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, "
       "Tensor? append=None)",
       buildDiff},
      {"stack(Tensor[] tensors, int dim=0)", buildStack},
      {"split.Tensor(Tensor(a -> *) self, int split_size, int dim=0)",
       buildSplitTensor},
      {"split_with_sizes(Tensor(a -> *) self, int[] split_sizes, int dim=0)",
       buildSplitWithSizes},
      {"chunk(Tensor(a -> *) self, int chunks, int dim=0)", buildSplitTensor},
      {"unbind.int(Tensor(a -> *) self, int dim=0)", buildUnbind},
      {"index_select(Tensor self, int dim, Tensor index)", buildIndexSelect},
      {"where(Tensor condition)", buildWhereIndices},
      {"index_copy(Tensor self, int dim, Tensor index, Tensor source)",
       buildIndexCopy},
      {"copy(Tensor self, Tensor src, bool non_blocking=False)", buildCopy},
      {"index.Tensor(Tensor self, Tensor?[] indices)", buildIndexTensor},
      {"nonzero(Tensor self)", buildNonzero},
      {"index_add(Tensor self, int dim, Tensor index, Tensor source, *, "
       "Scalar alpha=1)",
       buildIndexAdd},
      {"scatter.value(Tensor self, int dim, Tensor index, Scalar value)",
       buildScatterValue},
      {"scatter.src(Tensor self, int dim, Tensor index, Tensor src)",
       buildScatterSrc},
      {"one_hot(Tensor self, int num_classes=-1)", buildOneHot},
  };
  return entries;
}
