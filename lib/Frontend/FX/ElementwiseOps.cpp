//===- ElementwiseOps.cpp - ATen element-wise arithmetic
//--------------------===//
//
// The FX importer's builders for element-wise arithmetic, and their rows of the
// op table (ATen schema syntax, as torch declares them).
//
//===----------------------------------------------------------------------===//

#include "FXOpHelpers.h"

using namespace pimc;
using namespace pimc::fx;
using namespace pimc::fx::detail;

namespace {

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

/// torch computes a float16 / bfloat16 result in that type, so an integer
/// tensor operand is converted to it first (ALiBi's positions times bf16
/// slopes: positions beyond 256 round). Scalars (rank 0) keep their value,
/// as torch's kernels read them at f32.
Value promotedOperand(OpContext &c, Value v) {
  if (!c.narrowResult() || isFloat(v) || rankOf(v) == 0)
    return v;
  return c.roundToTraced(0, toElem(c, v, c.b.getF32Type()));
}

/// `lhs op rhs` in the result's element type. Integer results are computed
/// in f32 and converted back (exact below 2^24: indices, counts).
LogicalResult binary(OpContext &c, Binary kind, Value lhs, Value rhs) {
  RankedTensorType rt = c.resultType();
  lhs = promotedOperand(c, lhs);
  rhs = promotedOperand(c, rhs);
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
  Value a = promotedOperand(c, c.tensor("self"));
  Value b = promotedOperand(c, c.tensor("other"));
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

} // namespace

llvm::ArrayRef<OpEntry> pimc::fx::detail::elementwiseOpEntries() {
  static const OpEntry entries[] = {
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
  };
  return entries;
}
