//===- ElementwiseOps.cpp - element-wise ops
//--------------------------------===//
//
// ONNX op handlers; the importer's state is in Importer.h.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

namespace pimc::onnx::detail {

Value Importer::emitBinaryF32(StringRef op, Value a, Value c, Location loc) {
  Type t = a.getType();
  if (op == "Add")
    return llm::AddOp::create(b, loc, t, a, c);
  if (op == "Sub")
    return llm::SubOp::create(b, loc, t, a, c);
  if (op == "Mul")
    return llm::MulOp::create(b, loc, t, a, c);
  if (op == "Div")
    return llm::DivOp::create(b, loc, t, a, c);
  if (op == "Pow")
    return llm::PowOp::create(b, loc, t, a, c);
  if (op == "Max")
    return llm::MaximumOp::create(b, loc, t, a, c);
  return llm::MinimumOp::create(b, loc, t, a, c);
}

std::optional<TensorData>
Importer::foldBinary(StringRef op, const TensorData &a, const TensorData &c) {
  // Only integer shape arithmetic is folded; float math runs in the IR so
  // that it follows the interpreter's numerics.
  if (a.kind != Kind::I64 || c.kind != Kind::I64)
    return std::nullopt;
  auto shape = llm::broadcastShapes(a.shape, c.shape);
  if (failed(shape) || !foldable(*shape))
    return std::nullopt;
  TensorData r;
  r.kind = Kind::I64;
  r.shape.assign(shape->begin(), shape->end());
  int64_t n = numElements(r.shape);
  auto index = [&](const TensorData &t, int64_t flat) {
    return broadcastIndex(t.shape, r.shape, flat);
  };
  for (int64_t i = 0; i < n; ++i) {
    int64_t x = a.i64[index(a, i)], y = c.i64[index(c, i)];
    // int64 arithmetic wraps (two's complement), as onnxruntime's does.
    uint64_t ux = x, uy = y;
    int64_t v;
    if (op == "Add")
      v = int64_t(ux + uy);
    else if (op == "Sub")
      v = int64_t(ux - uy);
    else if (op == "Mul")
      v = int64_t(ux * uy);
    else if (op == "Div") {
      if (y == 0)
        return std::nullopt;
      v = y == -1 ? int64_t(0 - ux) : x / y;
    } else if (op == "Max")
      v = std::max(x, y);
    else if (op == "Min")
      v = std::min(x, y);
    else
      return std::nullopt;
    r.i64.push_back(v);
  }
  return r;
}

LogicalResult Importer::elementwiseBinary(NodeCtx &n) {
  auto a = required(n, 0);
  auto c = required(n, 1);
  if (failed(a) || failed(c))
    return failure();
  if ((*a)->constant && (*c)->constant)
    if (auto folded =
            foldBinary(n.opType(), *(*a)->constant, *(*c)->constant)) {
      setConstant(n, 0, std::move(*folded));
      return success();
    }
  auto shape = llm::broadcastShapes((*a)->shape, (*c)->shape);
  if (failed(shape))
    return fail(n, "operand shapes " + shapeString((*a)->shape) + " and " +
                       shapeString((*c)->shape) + " do not broadcast");
  // Integer arithmetic runs in f32 (exact below 2^24) and converts back;
  // Pow's result takes the base's type.
  Kind resultKind = (*a)->kind == Kind::I1 ? Kind::I64 : (*a)->kind;
  if (setIfEmpty(n, 0, *shape, resultKind))
    return success();
  Value x = broadcast(asF32(**a, n.loc), *shape, n.loc);
  Value y = broadcast(asF32(**c, n.loc), *shape, n.loc);
  if (!x || !y)
    return failure();
  Value r = emitBinaryF32(n.opType(), x, y, n.loc);
  setValue(n, 0, convertTo(r, resultKind, n.loc));
  return success();
}

LogicalResult Importer::mod(NodeCtx &n) {
  // Integers are computed exactly at import when both are constants;
  // otherwise llm.mod in f32 (exact below 2^24 for integers).
  auto a = required(n, 0);
  auto c = required(n, 1);
  if (failed(a) || failed(c))
    return failure();
  bool fmod = n.getInt("fmod", 0) != 0;
  if ((*a)->kind == Kind::I1 || (*c)->kind == Kind::I1)
    return fail(n, "Mod of booleans is not defined");
  if ((*a)->kind != (*c)->kind)
    return fail(n, "A and B must have one element type");
  auto shape = llm::broadcastShapes((*a)->shape, (*c)->shape);
  if (failed(shape))
    return fail(n, "operand shapes " + shapeString((*a)->shape) + " and " +
                       shapeString((*c)->shape) + " do not broadcast");
  Kind k = (*a)->kind;
  if (k == Kind::I64 && (*a)->constant && (*c)->constant && foldable(*shape)) {
    TensorData r;
    r.kind = Kind::I64;
    r.shape.assign(shape->begin(), shape->end());
    for (int64_t i = 0, e = numElements(r.shape); i < e; ++i) {
      int64_t x = (*a)->constant->i64[broadcastIndex((*a)->shape, *shape, i)];
      int64_t y = (*c)->constant->i64[broadcastIndex((*c)->shape, *shape, i)];
      if (y == 0)
        return fail(n, "integer Mod by zero");
      int64_t m = y == -1 ? 0 : x % y; // C truncation
      if (!fmod && m != 0 && ((m < 0) != (y < 0)))
        m += y;
      r.i64.push_back(m);
    }
    setConstant(n, 0, std::move(r));
    return success();
  }
  if (setIfEmpty(n, 0, *shape, k))
    return success();
  Value x = broadcast(asF32(**a, n.loc), *shape, n.loc);
  Value y = broadcast(asF32(**c, n.loc), *shape, n.loc);
  if (!x || !y)
    return failure();
  Value r = llm::ModOp::create(b, n.loc, x.getType(), x, y, fmod);
  setValue(n, 0, convertTo(r, k, n.loc));
  return success();
}

LogicalResult Importer::variadicMinMax(NodeCtx &n) {
  if (n.numInputs() == 0 || !n.in(0))
    return fail(n, "needs at least one input");
  SmallVector<int64_t> shape = n.in(0)->shape;
  for (size_t i = 1; i < n.numInputs(); ++i) {
    auto s = llm::broadcastShapes(shape, n.in(i)->shape);
    if (failed(s))
      return fail(n, "operand shapes do not broadcast");
    shape.assign(s->begin(), s->end());
  }
  Kind k = n.in(0)->kind;
  if (n.numInputs() == 1) {
    setTensor(n, 0, *n.in(0));
    return success();
  }
  Value acc = broadcast(asF32(*n.in(0), n.loc), shape, n.loc);
  for (size_t i = 1; i < n.numInputs(); ++i) {
    Value v = broadcast(asF32(*n.in(i), n.loc), shape, n.loc);
    if (!acc || !v)
      return failure();
    acc = emitBinaryF32(n.opType(), acc, v, n.loc);
  }
  setValue(n, 0, convertTo(acc, k, n.loc));
  return success();
}

LogicalResult Importer::unary(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  Kind k = (*x)->kind;
  StringRef op = n.opType();
  if (k != Kind::F32 && op != "Neg" && op != "Abs" && op != "Relu")
    return fail(n, "input must be a float tensor");
  if (setIfEmpty(n, 0, (*x)->shape, k))
    return success();
  // Integer shape arithmetic folds (an expanded LayerNormalization negates
  // its axis); int64 negation wraps, as onnxruntime's.
  if (k == Kind::I64 && (*x)->constant && !(*x)->initializer) {
    TensorData d = *(*x)->constant;
    for (int64_t &i : d.i64) {
      uint64_t u = i;
      i = op == "Neg"   ? int64_t(0 - u)
          : op == "Abs" ? (i < 0 ? int64_t(0 - u) : i)
                        : std::max<int64_t>(i, 0);
    }
    setConstant(n, 0, std::move(d));
    return success();
  }
  Value v = asF32(**x, n.loc);
  Type t = v.getType();
  Value r;
  if (op == "Neg")
    r = llm::NegOp::create(b, n.loc, t, v);
  else if (op == "Abs")
    r = llm::AbsOp::create(b, n.loc, t, v);
  else if (op == "Sqrt")
    r = llm::SqrtOp::create(b, n.loc, t, v);
  else if (op == "Reciprocal")
    r = llm::ReciprocalOp::create(b, n.loc, t, v);
  else if (op == "Exp")
    r = llm::ExpOp::create(b, n.loc, t, v);
  else if (op == "Log")
    r = llm::LogOp::create(b, n.loc, t, v);
  else if (op == "Tanh")
    r = llm::TanhOp::create(b, n.loc, t, v);
  else if (op == "Erf")
    r = llm::ErfOp::create(b, n.loc, t, v);
  else if (op == "Sigmoid")
    r = llm::SigmoidOp::create(b, n.loc, t, v);
  else if (op == "Relu")
    r = llm::ReluOp::create(b, n.loc, t, v);
  else if (op == "Cos")
    r = llm::CosOp::create(b, n.loc, t, v);
  else
    r = llm::SinOp::create(b, n.loc, t, v);
  setValue(n, 0, convertTo(r, k, n.loc));
  return success();
}

LogicalResult Importer::gelu(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  bool tanhForm =
      n.opType() == "FastGelu" || n.getString("approximate", "none") == "tanh";
  if (n.opType() == "FastGelu" && n.in(1))
    return fail(n, "FastGelu with a bias input is not supported");
  Value v = asF32(**x, n.loc);
  setValue(
      n, 0,
      llm::GeluOp::create(b, n.loc, v.getType(), v, b.getBoolAttr(tanhForm)));
  return success();
}

} // namespace pimc::onnx::detail
