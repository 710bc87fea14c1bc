//===- AlibiBias.cpp - ALiBi recognised in an attention mask --------------===//
//
// The bias part of a mask is checked against ref::alibiBias, the bf16
// definition llm.attention's `alibi_slopes` has. A traced graph only shows
// the keys 0 .. S-1, so the positions are moved: the arange-valued values
// the bias is computed from are bound to o .. o+S-1 and the bias evaluated
// again, so bf16 rounding beyond 256 and every op between the positions
// and the bias are checked, not assumed.
//
//===----------------------------------------------------------------------===//
#include "AlibiBias.h"

#include "GraphMatch.h"
#include "pimc/Numerics/Kernels.h"

#include "mlir/Analysis/SliceAnalysis.h"

#include <cfloat>
#include <cmath>

using namespace mlir;

namespace pimc::llm {

namespace {

/// Whether every element of `v` is 0 or hides a key.
bool onlyHides(Value v, const ckpt::WeightStore *weights) {
  std::optional<ConstTensor> c = evaluateConstant(v, weights);
  return c && llvm::all_of(c->data, [](double x) {
           return x == 0.0 || x <= kMaskedBelow;
         });
}

/// The ops `root` is computed from, its own included.
llvm::SetVector<Operation *> opsUnder(Value root) {
  llvm::SetVector<Operation *> slice;
  BackwardSliceOptions options;
  options.inclusive = true;
  options.omitBlockArguments = true;
  (void)getBackwardSlice(root, &slice, options);
  return slice;
}

/// Whether `v` holds 0 .. S-1 along its one dimension larger than 1.
bool isArangeValued(Value v, int64_t S, const ckpt::WeightStore *weights) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape() || t.getNumElements() != S ||
      llvm::count_if(t.getShape(), [](int64_t d) { return d > 1; }) != 1)
    return false;
  std::optional<ConstTensor> c = evaluateConstant(v, weights);
  if (!c)
    return false;
  for (int64_t i = 0; i < S; ++i)
    if (c->data[i] != static_cast<double>(i))
      return false;
  return true;
}

/// The positions the bias is computed from: the arange-valued values under
/// it that are not themselves computed from another.
SmallVector<Value> positionLeaves(Value bias, int64_t S,
                                  const ckpt::WeightStore *weights) {
  SmallVector<Value> aranges;
  for (Operation *op : opsUnder(bias))
    for (Value v : op->getResults())
      if (isArangeValued(v, S, weights))
        aranges.push_back(v);
  SmallVector<Value> leaves;
  for (Value a : aranges) {
    llvm::SetVector<Operation *> under = opsUnder(a);
    if (llvm::none_of(aranges, [&](Value b) {
          return b != a && under.contains(b.getDefiningOp());
        }))
      leaves.push_back(a);
  }
  return leaves;
}

/// Offsets of the first key at which the bias is checked: the traced one,
/// small ones, around 256 (where bf16 stops holding integers) and far ones.
SmallVector<int64_t> keyOffsets(int64_t S) {
  SmallVector<int64_t> out;
  for (int64_t o = 0; o <= 2 * S; ++o)
    out.push_back(o);
  for (int64_t o = std::max<int64_t>(2 * S + 1, 256 - S); o <= 256 + S; ++o)
    out.push_back(o);
  for (int64_t o :
       {int64_t(1000), int64_t(4093), 65536 - S / 2, (int64_t(1) << 20) - S})
    out.push_back(o);
  return out;
}

/// The flat index into `bias` of element (h, t, s) of [heads, T, S], with
/// `bias` broadcast to it; -1 if it does not broadcast.
int64_t biasIndex(const ConstTensor &bias, int64_t h, int64_t t, int64_t s,
                  const TracedBias &b) {
  ArrayRef<int64_t> shape = bias.shape;
  while (shape.size() > 3 && shape.front() == 1)
    shape = shape.drop_front();
  if (shape.size() > 3)
    return -1;
  int64_t full[3] = {b.heads, b.T, b.S}, at[3] = {h, t, s};
  int64_t pad = 3 - static_cast<int64_t>(shape.size()), index = 0;
  for (int64_t d = 0; d < 3; ++d) {
    int64_t size = d < pad ? 1 : shape[d - pad];
    if (size != 1 && size != full[d])
      return -1;
    index = index * size + (size == 1 ? 0 : at[d]);
  }
  return index;
}

/// Whether `bias`, with the keys at o .. o+S-1, is ALiBi's.
bool holdsAt(const ConstTensor &bias, const TracedBias &b,
             ArrayRef<float> slopes, double scale, int64_t o) {
  for (int64_t h = 0; h < b.heads; ++h)
    for (int64_t t = 0; t < b.T; ++t)
      for (int64_t s = 0; s < b.S; ++s) {
        if (!b.visible[t * b.S + s])
          continue;
        int64_t i = biasIndex(bias, h, t, s, b);
        if (i < 0)
          return false;
        double want = static_cast<float>(
            double(ref::alibiBias(slopes[h], o + s)) * scale);
        if (std::fabs(bias.data[i] - want) > 4 * FLT_EPSILON * std::fabs(want))
          return false;
      }
  return true;
}

} // namespace

Value maskBias(Value mask, const ckpt::WeightStore *weights) {
  if (auto sel = defOp<SelectOp>(mask)) {
    for (bool fillIfTrue : {true, false}) {
      Value fill = fillIfTrue ? sel.getTrueValue() : sel.getFalseValue();
      std::optional<double> f = matchSplat(fill);
      if (f && *f <= kMaskedBelow)
        return maskBias(fillIfTrue ? sel.getFalseValue() : sel.getTrueValue(),
                        weights);
    }
    return mask;
  }
  if (auto add = defOp<AddOp>(mask)) {
    Value rest;
    matchEitherOrder(add, [&](Value hiding, Value other) {
      if (!onlyHides(hiding, weights))
        return false;
      rest = other;
      return true;
    });
    if (rest)
      return maskBias(rest, weights);
  }
  return mask;
}

std::optional<std::vector<float>>
matchAlibiBias(const TracedBias &b, double scale, const ckpt::WeightStore *w) {
  if (b.S < 2 || b.heads < 1)
    return std::nullopt;
  std::vector<float> slopes = ref::alibiSlopes(b.heads);
  std::optional<ConstTensor> traced = evaluateConstant(b.bias, w);
  if (!traced || !holdsAt(*traced, b, slopes, scale, 0))
    return std::nullopt;
  SmallVector<Value> leaves = positionLeaves(b.bias, b.S, w);
  if (leaves.empty())
    return std::nullopt; // a fixed table: nothing says what later keys get
  for (int64_t o : keyOffsets(b.S)) {
    llvm::DenseMap<Value, ConstTensor> bind;
    for (Value leaf : leaves) {
      ConstTensor t{
          llvm::to_vector(cast<ShapedType>(leaf.getType()).getShape()), {}};
      for (int64_t i = 0; i < b.S; ++i)
        t.data.push_back(static_cast<double>(o + i));
      bind[leaf] = std::move(t);
    }
    std::optional<ConstTensor> moved = evaluateConstant(b.bias, w, &bind);
    if (!moved || !holdsAt(*moved, b, slopes, scale, o))
      return std::nullopt;
  }
  return slopes;
}

} // namespace pimc::llm
