//===- FXOpHelpers.h - what every ATen op builder uses ------*- C++ -*-===//
//
// Internal to lib/Frontend/FX: shape and dimension helpers, and constant
// folding (`Lit`), shared by the builders of every op family
// (ElementwiseOps, CompareOps, CreationOps, MovementOps, ProductOps,
// ReductionOps). Conventions are in FXOps.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_FRONTEND_FX_FXOPHELPERS_H
#define PIMC_FRONTEND_FX_FXOPHELPERS_H

#include "FXOpTable.h"

#include "pimc/Dialect/LLM/IR/LLMBuilders.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

#include <cmath>
#include <numeric>

namespace pimc::fx::detail {

using namespace ::mlir;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

inline RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}
inline ArrayRef<int64_t> shapeOf(Value v) { return typeOf(v).getShape(); }
inline int64_t rankOf(Value v) { return typeOf(v).getRank(); }
inline int64_t numel(ArrayRef<int64_t> s) {
  return std::accumulate(s.begin(), s.end(), int64_t(1), std::multiplies<>());
}
inline bool isFloat(Value v) {
  return isa<FloatType>(typeOf(v).getElementType());
}

/// Python-style dimension: negative counts from the end. `rank` 0 accepts
/// -1 and 0 like torch.
inline int64_t normDim(int64_t d, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);
  return d < 0 ? d + r : d;
}

inline LogicalResult checkDim(OpContext &c, int64_t d, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);
  if (d < -r || d >= r)
    return c.error() << "dimension " << d << " is out of range for a tensor "
                     << "of rank " << rank;
  return success();
}

//===----------------------------------------------------------------------===//
// Constants and folding
//===----------------------------------------------------------------------===//

/// Folding keeps constant subgraphs (masks, position ids, RoPE tables built
/// in forward) as values, up to this many elements.
inline constexpr int64_t kMaxFoldElements = 1 << 16;

/// A constant tensor being folded: values as double (exact for f32, for
/// i64 below 2^53 and for i1).
struct Lit {
  llvm::SmallVector<int64_t, 4> shape;
  Type elem;
  std::vector<double> v;
};

inline std::optional<Lit> litOf(Value value) {
  if (!value)
    return std::nullopt;
  DenseElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  auto type = cast<RankedTensorType>(attr.getType());
  if (numel(type.getShape()) > kMaxFoldElements)
    return std::nullopt;
  Lit l;
  l.shape.assign(type.getShape().begin(), type.getShape().end());
  l.elem = type.getElementType();
  if (isa<FloatType>(l.elem)) {
    for (const APFloat &f : attr.getValues<APFloat>())
      l.v.push_back(f.convertToDouble());
  } else if (l.elem.isInteger(1)) {
    for (bool b : attr.getValues<bool>())
      l.v.push_back(b);
  } else {
    for (const APInt &i : attr.getValues<APInt>())
      l.v.push_back(static_cast<double>(i.getSExtValue()));
  }
  return l;
}

/// Rounds `x` to the storage of `elem`.
/// `x` converted to `elem` as the interpreter converts: f32 rounding (IEEE:
/// infinities beyond the float range), booleans, integers truncated and
/// saturated at the int64 range (NaN is 0).
inline double roundTo(Type elem, double x) {
  if (elem.isF32())
    return f32Of(x);
  if (elem.isInteger(1))
    return x != 0;
  return static_cast<double>(saturatingInt64(x));
}

inline Value emitLit(OpContext &c, const Lit &l) {
  auto type = RankedTensorType::get(l.shape, l.elem);
  bool splat = !l.v.empty() && llvm::all_of(l.v, [&](double x) {
    return x == l.v[0] || (std::isnan(x) && std::isnan(l.v[0]));
  });
  DenseElementsAttr attr;
  if (l.elem.isF32()) {
    if (splat)
      attr = DenseElementsAttr::get(type, f32Of(l.v[0]));
    else {
      llvm::SmallVector<float> f;
      for (double x : l.v)
        f.push_back(f32Of(x));
      attr = DenseElementsAttr::get(type, ArrayRef<float>(f));
    }
  } else if (l.elem.isInteger(1)) {
    if (splat)
      attr = DenseElementsAttr::get(type, l.v[0] != 0);
    else {
      llvm::SmallVector<bool> f;
      for (double x : l.v)
        f.push_back(x != 0);
      attr = DenseElementsAttr::get(type, ArrayRef<bool>(f));
    }
  } else {
    if (splat)
      attr = DenseElementsAttr::get(type, saturatingInt64(l.v[0]));
    else {
      llvm::SmallVector<int64_t> f;
      for (double x : l.v)
        f.push_back(saturatingInt64(x));
      attr = DenseElementsAttr::get(type, ArrayRef<int64_t>(f));
    }
  }
  return arith::ConstantOp::create(c.b, c.loc, attr);
}

inline Value convertLit(OpContext &c, Value v, Type elem) {
  std::optional<Lit> l = litOf(v);
  if (!l)
    return {};
  l->elem = elem;
  for (double &x : l->v) {
    // A value an int64 cannot hold is not folded: the run-time conversion
    // reports it.
    if (!elem.isF32() && !elem.isInteger(1) && !isInt64(std::trunc(x)))
      return {};
    x = roundTo(elem, x);
  }
  return emitLit(c, *l);
}

/// A splat constant (never materialized, whatever its size).
inline Value splat(OpContext &c, ArrayRef<int64_t> shape, Type elem, double x) {
  auto type = RankedTensorType::get(shape, elem);
  DenseElementsAttr attr;
  if (elem.isF32())
    attr = DenseElementsAttr::get(type, f32Of(x));
  else if (elem.isInteger(1))
    attr = DenseElementsAttr::get(type, x != 0);
  else
    attr = DenseElementsAttr::get(type, saturatingInt64(x));
  return arith::ConstantOp::create(c.b, c.loc, attr);
}

/// Masks, ranges and index lists the builders materialize are limited to
/// this many elements (a bogus traced shape must not exhaust memory).
inline constexpr int64_t kMaxBuiltConstant = 1 << 24;

inline LogicalResult checkBuiltSize(OpContext &c, int64_t n) {
  if (n > kMaxBuiltConstant)
    return c.error() << "needs a constant of " << n << " elements (limit "
                     << kMaxBuiltConstant << ")";
  return success();
}

/// Row-major strides.
inline llvm::SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// numpy broadcast of a literal to `shape` (compatibility already checked).
inline Lit broadcastLit(const Lit &a, ArrayRef<int64_t> shape) {
  Lit r;
  r.shape.assign(shape.begin(), shape.end());
  r.elem = a.elem;
  int64_t n = numel(shape);
  r.v.resize(n);
  size_t off = shape.size() - a.shape.size();
  llvm::SmallVector<int64_t> as = stridesOf(a.shape);
  llvm::SmallVector<int64_t> rs = stridesOf(shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = 0;
    for (size_t d = off; d < shape.size(); ++d) {
      int64_t idx = (i / rs[d]) % shape[d];
      if (a.shape[d - off] != 1)
        src += idx * as[d - off];
    }
    r.v[i] = a.v[src];
  }
  return r;
}

/// Folds an element-wise op over constant operands (broadcast to `shape`),
/// computing in f32 when the result is float (as torch does).
inline std::optional<Value>
foldElementwise(OpContext &c, ArrayRef<Value> operands, ArrayRef<int64_t> shape,
                Type elem, llvm::function_ref<double(ArrayRef<double>)> fn) {
  if (numel(shape) > kMaxFoldElements)
    return std::nullopt;
  std::vector<Lit> lits;
  for (Value v : operands) {
    // Each operand must broadcast *to* `shape` (not merely with it).
    std::optional<Lit> l = litOf(v);
    if (!l)
      return std::nullopt;
    auto common = llm::broadcastShapes(l->shape, shape);
    if (failed(common) || ArrayRef<int64_t>(*common) != shape)
      return std::nullopt;
    lits.push_back(broadcastLit(*l, shape));
  }
  Lit r;
  r.shape.assign(shape.begin(), shape.end());
  r.elem = elem;
  r.v.resize(numel(shape));
  llvm::SmallVector<double, 3> args(lits.size());
  for (size_t i = 0; i < r.v.size(); ++i) {
    for (size_t k = 0; k < lits.size(); ++k)
      args[k] = elem.isF32() ? static_cast<float>(lits[k].v[i]) : lits[k].v[i];
    r.v[i] = roundTo(elem, fn(args));
  }
  return emitLit(c, r);
}

Value convertLit(OpContext &c, Value v, Type elem);

/// `v` as element type `elem` (f32, i64 or i1): f16/bf16 are widened with
/// llm.cast, everything else goes through llm.convert; constants convert in
/// place.
inline Value toElem(OpContext &c, Value v, Type elem) {
  RankedTensorType t = typeOf(v);
  if (t.getElementType() == elem)
    return v;
  if (Value folded = convertLit(c, v, elem))
    return folded;
  auto rt = RankedTensorType::get(t.getShape(), elem);
  if (elem.isF32() && isa<FloatType>(t.getElementType()))
    return llm::CastOp::create(c.b, c.loc, rt, v);
  return llm::ConvertOp::create(c.b, c.loc, rt, v);
}
inline Value toF32(OpContext &c, Value v) { return toElem(c, v, c.b.getF32Type()); }

inline Value reshapeTo(OpContext &c, Value v, ArrayRef<int64_t> shape) {
  if (shapeOf(v) == shape)
    return v;
  std::optional<Lit> l = litOf(v);
  if (l && static_cast<int64_t>(l->v.size()) == numel(shape)) {
    l->shape.assign(shape.begin(), shape.end());
    return emitLit(c, *l);
  }
  return llm::ReshapeOp::create(
      c.b, c.loc, RankedTensorType::get(shape, typeOf(v).getElementType()), v);
}

inline Value transposeBy(OpContext &c, Value v, ArrayRef<int64_t> perm) {
  bool identity = true;
  llvm::SmallVector<int64_t> shape;
  for (size_t i = 0; i < perm.size(); ++i) {
    identity &= perm[i] == static_cast<int64_t>(i);
    shape.push_back(shapeOf(v)[perm[i]]);
  }
  if (identity)
    return v;
  if (std::optional<Lit> l = litOf(v)) {
    Lit r = *l;
    r.shape.assign(shape.begin(), shape.end());
    llvm::SmallVector<int64_t> in = stridesOf(l->shape), out = stridesOf(shape);
    for (int64_t i = 0, n = r.v.size(); i < n; ++i) {
      int64_t src = 0;
      for (size_t d = 0; d < perm.size(); ++d)
        src += ((i / out[d]) % shape[d]) * in[perm[d]];
      r.v[i] = l->v[src];
    }
    return emitLit(c, r);
  }
  return llm::TransposeOp::create(
      c.b, c.loc, RankedTensorType::get(shape, typeOf(v).getElementType()), v,
      c.b.getDenseI64ArrayAttr(perm));
}

inline Value swapDims(OpContext &c, Value v, int64_t a, int64_t b) {
  llvm::SmallVector<int64_t> perm(rankOf(v));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[a], perm[b]);
  return transposeBy(c, v, perm);
}

/// Null (with an error at the node) when the shapes do not broadcast.
inline Value broadcastTo(OpContext &c, Value v, ArrayRef<int64_t> shape) {
  if (!v)
    return v;
  if (shapeOf(v) != shape && numel(shape) <= kMaxFoldElements) {
    auto common = llm::broadcastShapes(shapeOf(v), shape);
    // Only splats: broadcasting a non-uniform constant would copy it.
    std::optional<Lit> l = litOf(v);
    if (l && succeeded(common) && ArrayRef<int64_t>(*common) == shape &&
        llvm::all_equal(l->v))
      return emitLit(c, broadcastLit(*l, shape));
  }
  return llm::broadcastTo(c.b, c.loc, v, shape);
}

inline Value sliceOf(OpContext &c, Value v, int64_t axis, int64_t start,
                     int64_t size) {
  if (start == 0 && size == shapeOf(v)[axis])
    return v;
  llvm::SmallVector<int64_t> shape(shapeOf(v));
  shape[axis] = size;
  // Folded only in bounds; an out-of-range slice is left to the verifier.
  bool inBounds = start >= 0 && size >= 0 && start + size <= shapeOf(v)[axis];
  std::optional<Lit> l = inBounds ? litOf(v) : std::nullopt;
  if (l) {
    Lit r = *l;
    r.shape.assign(shape.begin(), shape.end());
    r.v.clear();
    llvm::SmallVector<int64_t> in = stridesOf(l->shape), out = stridesOf(shape);
    for (int64_t i = 0, n = numel(shape); i < n; ++i) {
      int64_t src = 0;
      for (size_t d = 0; d < shape.size(); ++d) {
        int64_t idx = (i / out[d]) % shape[d];
        src += (d == static_cast<size_t>(axis) ? idx + start : idx) * in[d];
      }
      r.v.push_back(l->v[src]);
    }
    return emitLit(c, r);
  }
  return llm::SliceOp::create(
      c.b, c.loc, RankedTensorType::get(shape, typeOf(v).getElementType()), v,
      axis, start, size);
}

inline double applyCompare(llm::ComparePredicate p, double a, double b) {
  switch (p) {
  case llm::ComparePredicate::Eq:
    return a == b;
  case llm::ComparePredicate::Ne:
    return a != b;
  case llm::ComparePredicate::Lt:
    return a < b;
  case llm::ComparePredicate::Le:
    return a <= b;
  case llm::ComparePredicate::Gt:
    return a > b;
  case llm::ComparePredicate::Ge:
    return a >= b;
  }
  return 0;
}

/// Common element type of two compared values (torch type promotion).
inline Type promoted(OpContext &c, Value a, Value b) {
  if (isFloat(a) || isFloat(b))
    return c.b.getF32Type();
  if (typeOf(a).getElementType().isInteger(1) &&
      typeOf(b).getElementType().isInteger(1))
    return c.b.getI1Type();
  return c.b.getI64Type();
}
/// A Tensor or Scalar operand, as a tensor of `elem` broadcast to `shape`.
inline Value operandAs(OpContext &c, Value v, ArrayRef<int64_t> shape,
                       Type elem) {
  return broadcastTo(c, toElem(c, v, elem), shape);
}

/// A Scalar argument as a rank-0 constant of the result's element type.
inline Value scalarArg(OpContext &c, llvm::StringRef name) {
  return splat(c, {}, c.resultType().getElementType(), c.f64(name));
}

/// `other * alpha` for add/sub (alpha = 1 leaves it alone).
inline Value scaledBy(OpContext &c, Value other, double alpha) {
  if (alpha == 1.0)
    return other;
  if (std::optional<Lit> l = litOf(other)) {
    for (double &x : l->v)
      x = roundTo(l->elem, x * alpha);
    return emitLit(c, *l);
  }
  return llm::ScaleOp::create(c.b, c.loc, toF32(c, other),
                              c.b.getF32FloatAttr(f32Of(alpha)));
}

inline Value compareValues(OpContext &c, llm::ComparePredicate p, Value lhs,
                           Value rhs, ArrayRef<int64_t> shape) {
  if (auto folded = foldElementwise(
          c, {lhs, rhs}, shape, c.b.getI1Type(),
          [&](ArrayRef<double> a) { return applyCompare(p, a[0], a[1]); }))
    return *folded;
  Type elem = promoted(c, lhs, rhs);
  Value a = operandAs(c, lhs, shape, elem);
  Value b = operandAs(c, rhs, shape, elem);
  if (!a || !b)
    return {};
  return llm::CompareOp::create(
      c.b, c.loc, RankedTensorType::get(shape, c.b.getI1Type()), p, a, b);
}

/// cond ? a : b with broadcasting, in the result's element type.
inline Value selectValues(OpContext &c, Value cond, Value a, Value b) {
  RankedTensorType rt = c.resultType();
  if (auto folded = foldElementwise(
          c, {cond, a, b}, rt.getShape(), rt.getElementType(),
          [](ArrayRef<double> v) { return v[0] != 0 ? v[1] : v[2]; }))
    return *folded;
  Value m = operandAs(c, cond, rt.getShape(), c.b.getI1Type());
  Value x = operandAs(c, a, rt.getShape(), rt.getElementType());
  Value y = operandAs(c, b, rt.getShape(), rt.getElementType());
  if (!m || !x || !y)
    return {};
  return llm::SelectOp::create(c.b, c.loc, rt, m, x, y);
}
} // namespace pimc::fx::detail

#endif // PIMC_FRONTEND_FX_FXOPHELPERS_H
