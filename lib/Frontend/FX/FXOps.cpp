//===- FXOps.cpp - ATen ops -> llm ops (the FX importer's op table) -------===//
//
// One builder per ATen (op, overload). Builders see validated arguments
// (FXImporter.cpp binds them against the schema string of their row) and the
// traced result types, and build llm ops (docs/frontend-graphs.md sections
// 2-3). Conventions:
//  - float values are f32 activations; f16/bf16 weights flow unchanged
//    through data movement (transpose, reshape, slice) and are widened by
//    the op that computes with them (`toF32`);
//  - broadcasting is explicit (llm::broadcastTo, LLMBuilders.h);
//  - ops whose tensor operands are all constants are folded into
//    arith.constant (arange, masks, position ids), so masks stay visible
//    to the raising passes as values.
//
//===----------------------------------------------------------------------===//
#include "FXOpTable.h"

#include "pimc/Dialect/LLM/IR/LLMBuilders.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace pimc;
using namespace pimc::fx;
using namespace pimc::fx::detail;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }
ArrayRef<int64_t> shapeOf(Value v) { return typeOf(v).getShape(); }
int64_t rankOf(Value v) { return typeOf(v).getRank(); }
int64_t numel(ArrayRef<int64_t> s) {
  return std::accumulate(s.begin(), s.end(), int64_t(1), std::multiplies<>());
}
bool isFloat(Value v) { return isa<FloatType>(typeOf(v).getElementType()); }

/// Python-style dimension: negative counts from the end. `rank` 0 accepts
/// -1 and 0 like torch.
int64_t normDim(int64_t d, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);
  return d < 0 ? d + r : d;
}

LogicalResult checkDim(OpContext &c, int64_t d, int64_t rank) {
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
constexpr int64_t kMaxFoldElements = 1 << 16;

/// A constant tensor being folded: values as double (exact for f32, for
/// i64 below 2^53 and for i1).
struct Lit {
  llvm::SmallVector<int64_t, 4> shape;
  Type elem;
  std::vector<double> v;
};

std::optional<Lit> litOf(Value value) {
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
double roundTo(Type elem, double x) {
  if (elem.isF32())
    return f32Of(x);
  if (elem.isInteger(1))
    return x != 0;
  return static_cast<double>(saturatingInt64(x));
}

Value emitLit(OpContext &c, const Lit &l) {
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

Value convertLit(OpContext &c, Value v, Type elem) {
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
Value splat(OpContext &c, ArrayRef<int64_t> shape, Type elem, double x) {
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
constexpr int64_t kMaxBuiltConstant = 1 << 24;

LogicalResult checkBuiltSize(OpContext &c, int64_t n) {
  if (n > kMaxBuiltConstant)
    return c.error() << "needs a constant of " << n << " elements (limit "
                     << kMaxBuiltConstant << ")";
  return success();
}

/// Row-major strides.
llvm::SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// numpy broadcast of a literal to `shape` (compatibility already checked).
Lit broadcastLit(const Lit &a, ArrayRef<int64_t> shape) {
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
std::optional<Value>
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
Value toElem(OpContext &c, Value v, Type elem) {
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
Value toF32(OpContext &c, Value v) { return toElem(c, v, c.b.getF32Type()); }

Value reshapeTo(OpContext &c, Value v, ArrayRef<int64_t> shape) {
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

Value transposeBy(OpContext &c, Value v, ArrayRef<int64_t> perm) {
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

Value swapDims(OpContext &c, Value v, int64_t a, int64_t b) {
  llvm::SmallVector<int64_t> perm(rankOf(v));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[a], perm[b]);
  return transposeBy(c, v, perm);
}

/// Null (with an error at the node) when the shapes do not broadcast.
Value broadcastTo(OpContext &c, Value v, ArrayRef<int64_t> shape) {
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

Value sliceOf(OpContext &c, Value v, int64_t axis, int64_t start,
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

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

/// A Tensor or Scalar operand, as a tensor of `elem` broadcast to `shape`.
Value operandAs(OpContext &c, Value v, ArrayRef<int64_t> shape, Type elem) {
  return broadcastTo(c, toElem(c, v, elem), shape);
}

enum class Binary { Add, Sub, Mul, Div, Max, Min, Pow };

double applyBinary(Binary k, double a, double b, bool f32) {
  auto r = [&](double x) { return f32 ? double(float(x)) : x; };
  switch (k) {
  case Binary::Add:
    return r(a + b);
  case Binary::Sub:
    return r(a - b);
  case Binary::Mul:
    return r(a * b);
  case Binary::Div:
    return f32 ? double(float(a) / float(b)) : a / b;
  case Binary::Max:
    return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  case Binary::Min:
    return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  case Binary::Pow:
    return f32 ? double(std::pow(float(a), float(b))) : std::pow(a, b);
  }
  return 0;
}

/// `lhs op rhs` in the result's element type. Integer results are computed
/// in f32 and converted back (exact below 2^24: indices, counts).
LogicalResult binary(OpContext &c, Binary kind, Value lhs, Value rhs) {
  RankedTensorType rt = c.resultType();
  if (auto folded = foldElementwise(
          c, {lhs, rhs}, rt.getShape(), rt.getElementType(),
          [&](ArrayRef<double> a) {
            return applyBinary(kind, a[0], a[1], rt.getElementType().isF32());
          })) {
    c.results.push_back(*folded);
    return success();
  }
  if (kind == Binary::Div && !rt.getElementType().isF32())
    return c.error() << "integer division is not supported";
  Type f32 = c.b.getF32Type();
  Value a = operandAs(c, lhs, rt.getShape(), f32);
  Value b = operandAs(c, rhs, rt.getShape(), f32);
  if (!a || !b)
    return failure();
  Value r;
  switch (kind) {
  case Binary::Add:
    r = llm::AddOp::create(c.b, c.loc, a, b);
    break;
  case Binary::Sub:
    r = llm::SubOp::create(c.b, c.loc, a, b);
    break;
  case Binary::Mul:
    r = llm::MulOp::create(c.b, c.loc, a, b);
    break;
  case Binary::Div:
    r = llm::DivOp::create(c.b, c.loc, a, b);
    break;
  case Binary::Max:
    r = llm::MaximumOp::create(c.b, c.loc, a, b);
    break;
  case Binary::Min:
    r = llm::MinimumOp::create(c.b, c.loc, a, b);
    break;
  case Binary::Pow:
    r = llm::PowOp::create(c.b, c.loc, a, b);
    break;
  }
  c.results.push_back(toElem(c, r, rt.getElementType()));
  return success();
}

/// A Scalar argument as a rank-0 constant of the result's element type.
Value scalarArg(OpContext &c, llvm::StringRef name) {
  return splat(c, {}, c.resultType().getElementType(), c.f64(name));
}

/// `other * alpha` for add/sub (alpha = 1 leaves it alone).
Value scaledBy(OpContext &c, Value other, double alpha) {
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

LogicalResult addSub(OpContext &c, Binary kind, bool scalarOther) {
  Value other = scalarOther ? scalarArg(c, "other") : c.tensor("other");
  return binary(c, kind, c.tensor("self"), scaledBy(c, other, c.f64("alpha")));
}

LogicalResult buildAddTensor(OpContext &c) {
  return addSub(c, Binary::Add, false);
}
LogicalResult buildAddScalar(OpContext &c) {
  return addSub(c, Binary::Add, true);
}
LogicalResult buildSubTensor(OpContext &c) {
  return addSub(c, Binary::Sub, false);
}
LogicalResult buildSubScalar(OpContext &c) {
  return addSub(c, Binary::Sub, true);
}
LogicalResult buildRsubScalar(OpContext &c) {
  return binary(c, Binary::Sub, scalarArg(c, "other"),
                scaledBy(c, c.tensor("self"), c.f64("alpha")));
}
LogicalResult buildRsubTensor(OpContext &c) {
  return binary(c, Binary::Sub, c.tensor("other"),
                scaledBy(c, c.tensor("self"), c.f64("alpha")));
}
LogicalResult buildMulTensor(OpContext &c) {
  Value a = c.tensor("self"), b = c.tensor("other");
  // x * (a uniform constant), e.g. the attention scale: llm.scale, as for
  // mul.Scalar (the same f32 product).
  RankedTensorType rt = c.resultType();
  std::optional<Lit> la = litOf(a), lb = litOf(b);
  if (la && !lb)
    std::swap(a, b), std::swap(la, lb);
  if (rt.getElementType().isF32() && !la && lb && !lb->v.empty() &&
      llvm::all_equal(lb->v) && shapeOf(a) == rt.getShape()) {
    c.results.push_back(llm::ScaleOp::create(
        c.b, c.loc, toF32(c, a), c.b.getF32FloatAttr(f32Of(lb->v[0]))));
    return success();
  }
  return binary(c, Binary::Mul, a, b);
}
LogicalResult buildMulScalar(OpContext &c) {
  Value self = c.tensor("self");
  // x * s is llm.scale (one rounding, as torch's f32 multiply).
  if (c.resultType().getElementType().isF32() && !litOf(self)) {
    c.results.push_back(
        llm::ScaleOp::create(c.b, c.loc, toF32(c, self),
                             c.b.getF32FloatAttr(f32Of(c.f64("other")))));
    return success();
  }
  return binary(c, Binary::Mul, self, scalarArg(c, "other"));
}
LogicalResult buildDivTensor(OpContext &c) {
  return binary(c, Binary::Div, c.tensor("self"), c.tensor("other"));
}
LogicalResult buildDivScalar(OpContext &c) {
  return binary(c, Binary::Div, c.tensor("self"), scalarArg(c, "other"));
}
LogicalResult buildDivMode(OpContext &c) {
  if (std::optional<std::string> mode = c.str("rounding_mode"))
    return c.error() << "rounding_mode '" << *mode
                     << "' is not supported (only true division)";
  return buildDivTensor(c);
}
LogicalResult buildMaximum(OpContext &c) {
  return binary(c, Binary::Max, c.tensor("self"), c.tensor("other"));
}
LogicalResult buildMinimum(OpContext &c) {
  return binary(c, Binary::Min, c.tensor("self"), c.tensor("other"));
}
LogicalResult buildSquare(OpContext &c) {
  Value self = c.tensor("self");
  return binary(c, Binary::Mul, self, self);
}
LogicalResult buildPowTensorTensor(OpContext &c) {
  return binary(c, Binary::Pow, c.tensor("self"), c.tensor("exponent"));
}
LogicalResult buildPowScalarTensor(OpContext &c) {
  return binary(c, Binary::Pow, scalarArg(c, "self"), c.tensor("exponent"));
}

/// clamp(x, lo, hi) = min(max(x, lo), hi), NaN propagating like torch.
LogicalResult clampBy(OpContext &c, std::optional<double> lo,
                      std::optional<double> hi) {
  Value x = c.tensor("self");
  RankedTensorType rt = c.resultType();
  if (!rt.getElementType().isF32())
    return c.error() << "expects a float tensor";
  x = toF32(c, x);
  if (lo)
    x = llm::MaximumOp::create(
        c.b, c.loc, x, splat(c, rt.getShape(), rt.getElementType(), *lo));
  if (hi)
    x = llm::MinimumOp::create(
        c.b, c.loc, x, splat(c, rt.getShape(), rt.getElementType(), *hi));
  c.results.push_back(x);
  return success();
}
LogicalResult buildClamp(OpContext &c) {
  std::optional<double> lo, hi;
  if (!c.isNone("min"))
    lo = c.f64("min");
  if (!c.isNone("max"))
    hi = c.f64("max");
  return clampBy(c, lo, hi);
}
LogicalResult buildClampMin(OpContext &c) {
  return clampBy(c, c.f64("min"), {});
}

enum class Unary {
  Neg,
  Exp,
  Tanh,
  Rsqrt,
  Sqrt,
  Sigmoid,
  Silu,
  Relu,
  Cos,
  Sin,
  Log,
  Abs,
  Erf,
  Reciprocal
};

double applyUnary(Unary k, float x) {
  switch (k) {
  case Unary::Neg:
    return -x;
  case Unary::Exp:
    return std::exp(x);
  case Unary::Tanh:
    return std::tanh(x);
  case Unary::Rsqrt:
    return 1.0f / std::sqrt(x);
  case Unary::Sqrt:
    return std::sqrt(x);
  case Unary::Sigmoid:
    return 1.0f / (1.0f + std::exp(-x));
  case Unary::Silu:
    return x / (1.0f + std::exp(-x));
  case Unary::Relu:
    return x > 0 ? x : 0.0f;
  case Unary::Cos:
    return std::cos(x);
  case Unary::Sin:
    return std::sin(x);
  case Unary::Log:
    return std::log(x);
  case Unary::Abs:
    return std::fabs(x);
  case Unary::Erf:
    return std::erf(x);
  case Unary::Reciprocal:
    return 1.0f / x;
  }
  return 0;
}

Value emitUnary(OpContext &c, Unary k, Value x) {
  switch (k) {
  case Unary::Neg:
    return llm::NegOp::create(c.b, c.loc, x);
  case Unary::Exp:
    return llm::ExpOp::create(c.b, c.loc, x);
  case Unary::Tanh:
    return llm::TanhOp::create(c.b, c.loc, x);
  case Unary::Rsqrt:
    return llm::RsqrtOp::create(c.b, c.loc, x);
  case Unary::Sqrt:
    return llm::SqrtOp::create(c.b, c.loc, x);
  case Unary::Sigmoid:
    return llm::SigmoidOp::create(c.b, c.loc, x);
  case Unary::Silu:
    return llm::SiluOp::create(c.b, c.loc, x);
  case Unary::Relu:
    return llm::ReluOp::create(c.b, c.loc, x);
  case Unary::Cos:
    return llm::CosOp::create(c.b, c.loc, x);
  case Unary::Sin:
    return llm::SinOp::create(c.b, c.loc, x);
  case Unary::Log:
    return llm::LogOp::create(c.b, c.loc, x);
  case Unary::Abs:
    return llm::AbsOp::create(c.b, c.loc, x);
  case Unary::Erf:
    return llm::ErfOp::create(c.b, c.loc, x);
  case Unary::Reciprocal:
    return llm::ReciprocalOp::create(c.b, c.loc, x);
  }
  return {};
}

template <Unary K> LogicalResult buildUnary(OpContext &c) {
  Value self = c.tensor("self");
  RankedTensorType rt = c.resultType();
  if (auto folded = foldElementwise(
          c, {self}, rt.getShape(), rt.getElementType(),
          [](ArrayRef<double> a) { return applyUnary(K, float(a[0])); })) {
    c.results.push_back(*folded);
    return success();
  }
  if (!rt.getElementType().isF32()) {
    if (K != Unary::Neg && K != Unary::Abs)
      return c.error() << "expects a float tensor";
    Value r = emitUnary(c, K, toF32(c, self));
    c.results.push_back(toElem(c, r, rt.getElementType()));
    return success();
  }
  c.results.push_back(emitUnary(c, K, toF32(c, self)));
  return success();
}

LogicalResult buildGelu(OpContext &c) {
  std::string approx = c.str("approximate").value_or("none");
  if (approx != "none" && approx != "tanh")
    return c.error() << "approximate='" << approx
                     << "' (expected 'none' or 'tanh')";
  c.results.push_back(llm::GeluOp::create(
      c.b, c.loc, toF32(c, c.tensor("self")), approx == "tanh"));
  return success();
}

/// x ** e with a constant exponent, using the forms torch special-cases.
LogicalResult buildPowTensorScalar(OpContext &c) {
  Value self = c.tensor("self");
  double e = c.f64("exponent");
  RankedTensorType rt = c.resultType();
  if (!rt.getElementType().isF32() || litOf(self))
    return binary(c, Binary::Pow, self, scalarArg(c, "exponent"));
  Value x = toF32(c, self);
  Value r;
  if (e == 1.0)
    r = x;
  else if (e == 2.0)
    r = llm::MulOp::create(c.b, c.loc, x, x);
  else if (e == 3.0)
    r = llm::MulOp::create(c.b, c.loc, llm::MulOp::create(c.b, c.loc, x, x), x);
  else if (e == 0.5)
    r = llm::SqrtOp::create(c.b, c.loc, x);
  else if (e == -0.5)
    r = llm::RsqrtOp::create(c.b, c.loc, x);
  else if (e == -1.0)
    r = llm::ReciprocalOp::create(c.b, c.loc, x);
  else
    r = llm::PowOp::create(c.b, c.loc, x,
                           splat(c, rt.getShape(), rt.getElementType(), e));
  c.results.push_back(r);
  return success();
}

//===----------------------------------------------------------------------===//
// Comparisons and selection
//===----------------------------------------------------------------------===//

double applyCompare(llm::ComparePredicate p, double a, double b) {
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
Type promoted(OpContext &c, Value a, Value b) {
  if (isFloat(a) || isFloat(b))
    return c.b.getF32Type();
  if (typeOf(a).getElementType().isInteger(1) &&
      typeOf(b).getElementType().isInteger(1))
    return c.b.getI1Type();
  return c.b.getI64Type();
}

Value compareValues(OpContext &c, llm::ComparePredicate p, Value lhs, Value rhs,
                    ArrayRef<int64_t> shape) {
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

template <llm::ComparePredicate P>
LogicalResult buildCompareTensor(OpContext &c) {
  Value r =
      compareValues(c, P, c.tensor("self"), c.tensor("other"), c.resultShape());
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

template <llm::ComparePredicate P>
LogicalResult buildCompareScalar(OpContext &c) {
  Value self = c.tensor("self");
  // The scalar takes the tensor's type unless it is a float against ints.
  double s = c.f64("other");
  Type elem = typeOf(self).getElementType();
  if (!isa<FloatType>(elem) && s != std::trunc(s))
    elem = c.b.getF32Type();
  if (isa<FloatType>(elem))
    elem = c.b.getF32Type();
  Value r = compareValues(c, P, self, splat(c, {}, elem, s), c.resultShape());
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

LogicalResult buildLogicalNot(OpContext &c) {
  Value self = c.tensor("self");
  if (!typeOf(self).getElementType().isInteger(1) &&
      c.node.target == "aten.bitwise_not")
    return c.error() << "only boolean tensors are supported";
  Value zero = splat(
      c, {},
      typeOf(self).getElementType().isInteger(1)
          ? c.b.getI1Type()
          : typeOf(toElem(c, self, promoted(c, self, self))).getElementType(),
      0);
  Value r =
      compareValues(c, llm::ComparePredicate::Eq, self, zero, c.resultShape());
  if (!r)
    return failure();
  c.results.push_back(toElem(c, r, c.resultType().getElementType()));
  return success();
}

Value selectValues(OpContext &c, Value cond, Value a, Value b);

/// Boolean and / or as selects (a & b = a ? b : false, a | b = a ? true : b).
template <bool And> LogicalResult buildLogical(OpContext &c) {
  Value a = c.tensor("self"), b = c.tensor("other");
  Type i1 = c.b.getI1Type();
  if (!c.resultType().getElementType().isInteger(1) ||
      !typeOf(a).getElementType().isInteger(1) ||
      !typeOf(b).getElementType().isInteger(1)) {
    if (c.node.target.find("logical") == std::string::npos)
      return c.error() << "only boolean tensors are supported";
  }
  a = toElem(c, a, i1);
  b = toElem(c, b, i1);
  Value r = And ? selectValues(c, a, b, splat(c, {}, i1, 0))
                : selectValues(c, a, splat(c, {}, i1, 1), b);
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

/// cond ? a : b with broadcasting, in the result's element type.
Value selectValues(OpContext &c, Value cond, Value a, Value b) {
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

LogicalResult buildWhere(OpContext &c) {
  Value r = selectValues(c, c.tensor("condition"), c.tensor("self"),
                         c.tensor("other"));
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

LogicalResult buildWhereScalarOther(OpContext &c) {
  Value r = selectValues(c, c.tensor("condition"), c.tensor("self"),
                         scalarArg(c, "other"));
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

LogicalResult buildWhereScalarSelf(OpContext &c) {
  Value r = selectValues(c, c.tensor("condition"), scalarArg(c, "self"),
                         c.tensor("other"));
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

LogicalResult buildMaskedFillScalar(OpContext &c) {
  Value r = selectValues(c, c.tensor("mask"), scalarArg(c, "value"),
                         c.tensor("self"));
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

LogicalResult buildMaskedFillTensor(OpContext &c) {
  Value value = c.tensor("value");
  if (rankOf(value) != 0)
    return c.error() << "the fill value must be a 0-dimensional tensor";
  Value r = selectValues(c, c.tensor("mask"), value, c.tensor("self"));
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}

/// triu/tril: a constant mask over the last two dimensions.
LogicalResult triangle(OpContext &c, bool upper) {
  Value self = c.tensor("self");
  int64_t diag = c.i64("diagonal");
  ArrayRef<int64_t> shape = shapeOf(self);
  if (shape.size() < 2)
    return c.error() << "expects a tensor of rank >= 2";
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  if (failed(checkBuiltSize(c, rows * cols)))
    return failure();
  Lit mask;
  mask.shape = {rows, cols};
  mask.elem = c.b.getI1Type();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.v.push_back(upper ? j - i >= diag : j - i <= diag);
  Value zero = splat(c, {}, c.resultType().getElementType(), 0);
  Value r = selectValues(c, emitLit(c, mask), self, zero);
  if (!r)
    return failure();
  c.results.push_back(r);
  return success();
}
LogicalResult buildTriu(OpContext &c) { return triangle(c, true); }
LogicalResult buildTril(OpContext &c) { return triangle(c, false); }

//===----------------------------------------------------------------------===//
// Creation and conversion
//===----------------------------------------------------------------------===//

LogicalResult buildArange(OpContext &c, double start, double end, double step) {
  RankedTensorType rt = c.resultType();
  if (step == 0 || !std::isfinite(start) || !std::isfinite(end) ||
      !std::isfinite(step))
    return c.error() << "start, end and step must be finite and step non-zero";
  Lit l;
  l.shape.assign(rt.getShape().begin(), rt.getShape().end());
  l.elem = rt.getElementType();
  if (l.shape.size() != 1)
    return c.error() << "expected a 1-D result";
  double count = std::ceil((end - start) / step);
  int64_t n = isInt64(count) ? static_cast<int64_t>(count) : -1;
  if (n != l.shape[0])
    return c.error() << "arange(" << start << ", " << end << ", " << step
                     << ") has " << n << " elements, the graph traced "
                     << l.shape[0];
  if (failed(checkBuiltSize(c, n)))
    return failure();
  for (int64_t i = 0; i < n; ++i)
    l.v.push_back(roundTo(l.elem, start + i * step));
  c.results.push_back(emitLit(c, l));
  return success();
}
LogicalResult buildArangeEnd(OpContext &c) {
  return buildArange(c, 0, c.f64("end"), 1);
}
LogicalResult buildArangeStart(OpContext &c) {
  return buildArange(c, c.f64("start"), c.f64("end"), 1);
}
LogicalResult buildArangeStep(OpContext &c) {
  return buildArange(c, c.f64("start"), c.f64("end"), c.f64("step"));
}

LogicalResult fill(OpContext &c, double value) {
  RankedTensorType rt = c.resultType();
  c.results.push_back(splat(c, rt.getShape(), rt.getElementType(), value));
  return success();
}
LogicalResult buildFull(OpContext &c) { return fill(c, c.f64("fill_value")); }
LogicalResult buildZeros(OpContext &c) { return fill(c, 0); }
LogicalResult buildFillScalar(OpContext &c) { return fill(c, c.f64("value")); }
LogicalResult buildOnes(OpContext &c) { return fill(c, 1); }
LogicalResult buildScalarTensor(OpContext &c) { return fill(c, c.f64("s")); }

/// _to_copy / to.dtype / type_as: the traced dtype says the target.
LogicalResult convertTo(OpContext &c, Value self) {
  llvm::StringRef dtype = c.node.meta[0].dtype;
  RankedTensorType rt = c.resultType();
  if (auto folded =
          foldElementwise(c, {self}, rt.getShape(), rt.getElementType(),
                          [](ArrayRef<double> a) { return a[0]; })) {
    c.results.push_back(*folded);
    return success();
  }
  if (dtype == "float16" || dtype == "bfloat16") {
    // A rounding point of the module's native precision.
    Type narrow =
        dtype == "float16" ? Type(c.b.getF16Type()) : Type(c.b.getBF16Type());
    Value x = toF32(c, self);
    c.results.push_back(llm::CastOp::create(
        c.b, c.loc, RankedTensorType::get(rt.getShape(), narrow), x));
    return success();
  }
  if (dtype == "float64")
    // float64 activations are computed in f32 (docs/fx-importer.md).
    c.results.push_back(toF32(c, self));
  else
    c.results.push_back(toElem(c, self, rt.getElementType()));
  return success();
}
LogicalResult buildToCopy(OpContext &c) {
  return convertTo(c, c.tensor("self"));
}

/// Ops that only copy or alias in inference (clone, detach, ...).
LogicalResult buildIdentity(OpContext &c) {
  c.results.push_back(c.tensor("self"));
  return success();
}

LogicalResult buildDropout(OpContext &c) {
  double p = c.f64("p");
  bool train = c.node.target == "aten.native_dropout"
                   ? c.isNone("train") || c.flag("train")
                   : c.flag("train");
  if (train && p != 0)
    return c.error() << "training-mode dropout (p = " << p
                     << ") is not supported; export the module in eval mode";
  c.results.push_back(c.tensor("input"));
  if (c.numResults() == 2)
    c.results.push_back(splat(c, c.resultShape(1), c.b.getI1Type(), 1));
  return success();
}

//===----------------------------------------------------------------------===//
// Shapes and data movement
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

/// The parameter W when `rhs` is t(W) / W.T of an llm.weight: the product
/// is then an nn.Linear (llm.linear takes W in the [N, K] layout).
Value linearWeight(Value rhs) {
  auto t = rhs.getDefiningOp<llm::TransposeOp>();
  if (!t || t.getPermutation().size() != 2 || t.getPermutation()[0] != 1)
    return {};
  if (auto w = t.getInput().getDefiningOp<llm::WeightOp>())
    return w;
  return {};
}

/// a @ b for rank >= 2 operands (numpy batch broadcasting).
Value matmul(OpContext &c, Value a, Value b, ArrayRef<int64_t> resultShape) {
  if (Value w = linearWeight(b))
    return llm::LinearOp::create(
        c.b, c.loc, RankedTensorType::get(resultShape, c.b.getF32Type()),
        toF32(c, a), w, Value());
  return llm::MatmulOp::create(
      c.b, c.loc, RankedTensorType::get(resultShape, c.b.getF32Type()),
      isFloat(a) ? a : toF32(c, a), isFloat(b) ? b : toF32(c, b));
}

LogicalResult buildMm(OpContext &c) {
  Value a = c.tensor("self"), b = c.tensor("mat2");
  if (rankOf(a) != 2 || rankOf(b) != 2)
    return c.error() << "expects 2-D operands";
  c.results.push_back(matmul(c, a, b, c.resultShape()));
  return success();
}

LogicalResult buildBmm(OpContext &c) {
  Value a = c.tensor("self"), b = c.tensor("mat2");
  if (rankOf(a) != 3 || rankOf(b) != 3)
    return c.error() << "expects 3-D operands";
  c.results.push_back(matmul(c, a, b, c.resultShape()));
  return success();
}

/// torch.matmul: 1-D operands gain and then lose a unit dimension.
LogicalResult buildMatmul(OpContext &c) {
  Value a = c.tensor("self"), b = c.tensor("other");
  if (rankOf(a) == 0 || rankOf(b) == 0)
    return c.error() << "expects operands of rank >= 1";
  if (rankOf(a) == 1)
    a = reshapeTo(c, a, {1, shapeOf(a)[0]});
  if (rankOf(b) == 1)
    b = reshapeTo(c, b, {shapeOf(b)[0], 1});
  llvm::SmallVector<int64_t> shape;
  {
    ArrayRef<int64_t> as = shapeOf(a), bs = shapeOf(b);
    auto batch = llm::broadcastShapes(as.drop_back(2), bs.drop_back(2));
    if (failed(batch))
      return c.error() << "batch dimensions do not broadcast";
    shape = *batch;
    shape.push_back(as[as.size() - 2]);
    shape.push_back(bs.back());
  }
  Value r = matmul(c, a, b, shape);
  c.results.push_back(reshapeTo(c, r, c.resultShape()));
  return success();
}

/// beta * self + alpha * (m1 @ m2); an nn.Linear with a 1-D bias is one
/// llm.linear.
LogicalResult addProduct(OpContext &c, Value bias, Value m1, Value m2) {
  double beta = c.f64("beta"), alpha = c.f64("alpha");
  ArrayRef<int64_t> rs = c.resultShape();
  Value w = linearWeight(m2);
  if (w && beta == 1 && alpha == 1 && rankOf(bias) == 1 &&
      shapeOf(bias)[0] == rs.back() && rs.size() == 2) {
    c.results.push_back(llm::LinearOp::create(
        c.b, c.loc, RankedTensorType::get(rs, c.b.getF32Type()), toF32(c, m1),
        w, bias));
    return success();
  }
  Value p = scaledBy(c, matmul(c, m1, m2, rs), alpha);
  Value bb = broadcastTo(c, scaledBy(c, toF32(c, bias), beta), rs);
  if (!bb)
    return failure();
  c.results.push_back(llm::AddOp::create(c.b, c.loc, bb, p));
  return success();
}

LogicalResult buildAddmm(OpContext &c) {
  Value m1 = c.tensor("mat1"), m2 = c.tensor("mat2");
  if (rankOf(m1) != 2 || rankOf(m2) != 2)
    return c.error() << "expects 2-D mat1 and mat2";
  return addProduct(c, c.tensor("self"), m1, m2);
}

LogicalResult buildBaddbmm(OpContext &c) {
  Value m1 = c.tensor("batch1"), m2 = c.tensor("batch2");
  if (rankOf(m1) != 3 || rankOf(m2) != 3)
    return c.error() << "expects 3-D batch1 and batch2";
  return addProduct(c, c.tensor("self"), m1, m2);
}

/// aten.linear (torch.export keeps it): y = x W^T + b.
LogicalResult buildLinear(OpContext &c) {
  Value x = c.tensor("input"), w = c.tensor("weight"), bias = c.tensor("bias");
  ArrayRef<int64_t> rs = c.resultShape();
  if (rankOf(w) != 2 || rankOf(x) < 1)
    return c.error() << "expects a 2-D weight";
  if (w.getDefiningOp<llm::WeightOp>() && (!bias || rankOf(bias) == 1)) {
    c.results.push_back(llm::LinearOp::create(
        c.b, c.loc, RankedTensorType::get(rs, c.b.getF32Type()), toF32(c, x), w,
        bias));
    return success();
  }
  Value wt = swapDims(c, w, 0, 1);
  if (rankOf(x) == 1)
    x = reshapeTo(c, x, {1, shapeOf(x)[0]});
  llvm::SmallVector<int64_t> shape(shapeOf(x));
  shape.back() = shapeOf(w)[0];
  Value y = llm::MatmulOp::create(
      c.b, c.loc, RankedTensorType::get(shape, c.b.getF32Type()),
      isFloat(x) ? x : toF32(c, x), wt);
  if (bias) {
    Value bb = broadcastTo(c, toF32(c, bias), shape);
    if (!bb)
      return failure();
    y = llm::AddOp::create(c.b, c.loc, y, bb);
  }
  c.results.push_back(reshapeTo(c, y, rs));
  return success();
}

LogicalResult buildEmbedding(OpContext &c) {
  Value table = c.tensor("weight");
  Value ids = toElem(c, c.tensor("indices"), c.b.getI64Type());
  if (rankOf(table) != 2)
    return c.error() << "expects a 2-D weight";
  int64_t n = numel(shapeOf(ids)), h = shapeOf(table)[1];
  Value flat = reshapeTo(c, ids, {n});
  Value rows = llm::EmbeddingOp::create(
      c.b, c.loc, RankedTensorType::get({n, h}, c.b.getF32Type()), table, flat);
  c.results.push_back(reshapeTo(c, rows, c.resultShape()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions, normalisation, softmax
//===----------------------------------------------------------------------===//

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
        kl, vl, llvm::APFloat(f32Of(scale)), causal, IntegerAttr(),
        FloatAttr());
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

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

llvm::StringRef pimc::fx::detail::unsupportedReason(llvm::StringRef op) {
  static const llvm::StringMap<llvm::StringRef> reasons = {
      {"aten.masked_select.default", "data-dependent output shape"},
      {"aten.unique.default", "data-dependent output shape"},
      {"aten._unique2.default", "data-dependent output shape"},
      {"aten.repeat_interleave.Tensor", "data-dependent output shape; use "
                                        "expand + reshape for GQA"},
      {"aten.item.default", "reads a tensor value into Python control flow"},
      {"aten._local_scalar_dense.default",
       "reads a tensor value into Python control flow"},
  };
  auto it = reasons.find(op);
  if (it != reasons.end())
    return it->second;
  // aten.<name>.<overload>: a trailing underscore (add_, __iand__) mutates
  // its input; other dunders (__and__) are functional.
  llvm::StringRef name = op.drop_front(op.find('.') + 1).split('.').first;
  bool dunder = name.starts_with("__") && name.ends_with("__");
  if ((dunder && name.starts_with("__i")) || (!dunder && name.ends_with("_")))
    return "in-place op; export with functionalization (the bridge does)";
  return {};
}

// Schemas are torch's (`torch.ops.aten.<op>.<overload>._schema`), so the
// arguments a graph passes are checked exactly as torch declares them.
llvm::ArrayRef<OpEntry> pimc::fx::detail::opEntries() {
  using P = llm::ComparePredicate;
  static const OpEntry entries[] = {
      // Products.
      {"mm(Tensor self, Tensor mat2)", buildMm},
      {"bmm(Tensor self, Tensor mat2)", buildBmm},
      {"matmul(Tensor self, Tensor other)", buildMatmul},
      {"addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, "
       "Scalar alpha=1)",
       buildAddmm},
      {"baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, "
       "Scalar alpha=1)",
       buildBaddbmm},
      {"linear(Tensor input, Tensor weight, Tensor? bias=None)", buildLinear},
      {"embedding(Tensor weight, Tensor indices, int padding_idx=-1, bool "
       "scale_grad_by_freq=False, bool sparse=False)",
       buildEmbedding},
      {"scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
       "Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, "
       "float? scale=None, bool enable_gqa=False)",
       buildSDPA},
      // Shapes and data movement.
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
      // No-ops in inference.
      {"clone(Tensor self, *, MemoryFormat? memory_format=None)",
       buildIdentity},
      {"contiguous(Tensor(a) self, *, MemoryFormat memory_format=0)",
       buildIdentity},
      {"detach(Tensor(a) self)", buildIdentity},
      {"alias(Tensor(a) self)", buildIdentity},
      {"lift_fresh_copy(Tensor self)", buildIdentity},
      {"dropout(Tensor input, float p, bool train)", buildDropout},
      {"native_dropout(Tensor input, float p, bool? train)", buildDropout},
      // Creation and conversion.
      {"arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None)",
       buildArangeEnd},
      {"arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, "
       "Layout? layout=None, Device? device=None, bool? pin_memory=None)",
       buildArangeStart},
      {"arange.start_step(Scalar start, Scalar end, Scalar step=1, *, "
       "ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
       "bool? pin_memory=None)",
       buildArangeStep},
      {"fill.Scalar(Tensor self, Scalar value)", buildFillScalar},
      {"new_full(Tensor self, SymInt[] size, Scalar fill_value, *, "
       "ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
       "bool? pin_memory=None)",
       buildFull},
      {"full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, "
       "Layout? layout=None, Device? device=None, bool? pin_memory=None)",
       buildFull},
      {"zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None)",
       buildZeros},
      {"ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None)",
       buildOnes},
      {"full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, "
       "Layout? layout=None, Device? device=None, bool? pin_memory=None, "
       "MemoryFormat? memory_format=None)",
       buildFull},
      {"zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? "
       "layout=None, Device? device=None, bool? pin_memory=None, "
       "MemoryFormat? memory_format=None)",
       buildZeros},
      {"ones_like(Tensor self, *, ScalarType? dtype=None, Layout? "
       "layout=None, Device? device=None, bool? pin_memory=None, "
       "MemoryFormat? memory_format=None)",
       buildOnes},
      {"new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, "
       "Layout? layout=None, Device? device=None, bool? pin_memory=None)",
       buildZeros},
      {"new_ones(Tensor self, SymInt[] size, *, ScalarType? dtype=None, "
       "Layout? layout=None, Device? device=None, bool? pin_memory=None)",
       buildOnes},
      {"scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? "
       "layout=None, Device? device=None, bool? pin_memory=None)",
       buildScalarTensor},
      {"_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None, bool non_blocking=False, "
       "MemoryFormat? memory_format=None)",
       buildToCopy},
      {"to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, "
       "bool copy=False, MemoryFormat? memory_format=None)",
       buildToCopy},
      {"type_as(Tensor self, Tensor other)", buildToCopy},
      // Element-wise arithmetic.
      {"add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)",
       buildAddTensor},
      {"add.Scalar(Tensor self, Scalar other, Scalar alpha=1)", buildAddScalar},
      {"sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)",
       buildSubTensor},
      {"sub.Scalar(Tensor self, Scalar other, Scalar alpha=1)", buildSubScalar},
      {"rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1)",
       buildRsubScalar},
      {"rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)",
       buildRsubTensor},
      {"mul.Tensor(Tensor self, Tensor other)", buildMulTensor},
      {"mul.Scalar(Tensor self, Scalar other)", buildMulScalar},
      {"div.Tensor(Tensor self, Tensor other)", buildDivTensor},
      {"div.Scalar(Tensor self, Scalar other)", buildDivScalar},
      {"div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode)",
       buildDivMode},
      {"maximum(Tensor self, Tensor other)", buildMaximum},
      {"minimum(Tensor self, Tensor other)", buildMinimum},
      {"pow.Tensor_Scalar(Tensor self, Scalar exponent)", buildPowTensorScalar},
      {"pow.Tensor_Tensor(Tensor self, Tensor exponent)", buildPowTensorTensor},
      {"pow.Scalar(Scalar self, Tensor exponent)", buildPowScalarTensor},
      {"neg(Tensor self)", buildUnary<Unary::Neg>},
      {"square(Tensor self)", buildSquare},
      {"exp(Tensor self)", buildUnary<Unary::Exp>},
      {"tanh(Tensor self)", buildUnary<Unary::Tanh>},
      {"rsqrt(Tensor self)", buildUnary<Unary::Rsqrt>},
      {"sqrt(Tensor self)", buildUnary<Unary::Sqrt>},
      {"sigmoid(Tensor self)", buildUnary<Unary::Sigmoid>},
      {"silu(Tensor self)", buildUnary<Unary::Silu>},
      {"relu(Tensor self)", buildUnary<Unary::Relu>},
      {"cos(Tensor self)", buildUnary<Unary::Cos>},
      {"sin(Tensor self)", buildUnary<Unary::Sin>},
      {"log(Tensor self)", buildUnary<Unary::Log>},
      {"abs(Tensor self)", buildUnary<Unary::Abs>},
      {"erf(Tensor self)", buildUnary<Unary::Erf>},
      {"reciprocal(Tensor self)", buildUnary<Unary::Reciprocal>},
      {"gelu(Tensor self, *, str approximate=\"none\")", buildGelu},
      {"clamp(Tensor self, Scalar? min=None, Scalar? max=None)", buildClamp},
      {"clamp_min(Tensor self, Scalar min)", buildClampMin},
      // Comparisons and masks.
      {"eq.Tensor(Tensor self, Tensor other)", buildCompareTensor<P::Eq>},
      {"ne.Tensor(Tensor self, Tensor other)", buildCompareTensor<P::Ne>},
      {"lt.Tensor(Tensor self, Tensor other)", buildCompareTensor<P::Lt>},
      {"le.Tensor(Tensor self, Tensor other)", buildCompareTensor<P::Le>},
      {"gt.Tensor(Tensor self, Tensor other)", buildCompareTensor<P::Gt>},
      {"ge.Tensor(Tensor self, Tensor other)", buildCompareTensor<P::Ge>},
      {"eq.Scalar(Tensor self, Scalar other)", buildCompareScalar<P::Eq>},
      {"ne.Scalar(Tensor self, Scalar other)", buildCompareScalar<P::Ne>},
      {"lt.Scalar(Tensor self, Scalar other)", buildCompareScalar<P::Lt>},
      {"le.Scalar(Tensor self, Scalar other)", buildCompareScalar<P::Le>},
      {"gt.Scalar(Tensor self, Scalar other)", buildCompareScalar<P::Gt>},
      {"ge.Scalar(Tensor self, Scalar other)", buildCompareScalar<P::Ge>},
      {"logical_not(Tensor self)", buildLogicalNot},
      {"bitwise_not(Tensor self)", buildLogicalNot},
      {"bitwise_and.Tensor(Tensor self, Tensor other)", buildLogical<true>},
      {"bitwise_or.Tensor(Tensor self, Tensor other)", buildLogical<false>},
      {"__and__.Tensor(Tensor self, Tensor other)", buildLogical<true>},
      {"__or__.Tensor(Tensor self, Tensor other)", buildLogical<false>},
      {"logical_and(Tensor self, Tensor other)", buildLogical<true>},
      {"logical_or(Tensor self, Tensor other)", buildLogical<false>},
      {"where.self(Tensor condition, Tensor self, Tensor other)", buildWhere},
      {"where.ScalarOther(Tensor condition, Tensor self, Scalar other)",
       buildWhereScalarOther},
      {"where.ScalarSelf(Tensor condition, Scalar self, Tensor other)",
       buildWhereScalarSelf},
      {"masked_fill.Scalar(Tensor self, Tensor mask, Scalar value)",
       buildMaskedFillScalar},
      {"masked_fill.Tensor(Tensor self, Tensor mask, Tensor value)",
       buildMaskedFillTensor},
      {"triu(Tensor self, int diagonal=0)", buildTriu},
      {"tril(Tensor self, int diagonal=0)", buildTril},
      // Reductions, normalisation, softmax, selection.
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
