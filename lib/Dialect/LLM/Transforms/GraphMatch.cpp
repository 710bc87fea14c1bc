//===- GraphMatch.cpp - matching helpers for the raising patterns ---------===//
#include "GraphMatch.h"
#include "pimc/Checkpoint/Safetensors.h"
#include "pimc/Numerics/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <tuple>

using namespace mlir;

namespace pimc::llm {

namespace {

/// True if `cast` only widens (or keeps) a float type to f32, so it changes
/// no value.
bool isExactWidening(CastOp cast) {
  auto in = cast.getInput().getType().getElementType();
  auto out = cast.getResult().getType().getElementType();
  return out.isF32() && (in.isF32() || in.isF16() || in.isBF16());
}

} // namespace

Value stripWidening(Value v) {
  while (v) {
    if (auto cast = defOp<CastOp>(v); cast && isExactWidening(cast)) {
      v = cast.getInput();
      continue;
    }
    break;
  }
  return v;
}

Value stripBroadcast(Value v) {
  while (v) {
    v = stripWidening(v);
    if (auto b = defOp<BroadcastOp>(v)) {
      v = b.getInput();
      continue;
    }
    break;
  }
  return v;
}

std::optional<double> matchSplat(Value v) {
  v = stripBroadcast(v);
  // A reshape of a splat is the same splat.
  while (auto r = defOp<ReshapeOp>(v))
    v = stripBroadcast(r.getInput());
  auto cst = defOp<arith::ConstantOp>(v);
  if (!cst)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(cst.getValue());
  if (!dense || !dense.isSplat())
    return std::nullopt;
  Type et = dense.getElementType();
  if (isa<FloatType>(et))
    return dense.getSplatValue<APFloat>().convertToDouble();
  if (et.isInteger(1))
    return dense.getSplatValue<bool>() ? 1.0 : 0.0;
  if (isa<IntegerType>(et))
    return static_cast<double>(dense.getSplatValue<APInt>().getSExtValue());
  return std::nullopt;
}

Value stripUnitReshape(Value v) {
  while (auto r = defOp<ReshapeOp>(v)) {
    auto in = dyn_cast<RankedTensorType>(r.getInput().getType());
    auto out = dyn_cast<RankedTensorType>(r.getType());
    if (!in || !out)
      break;
    ArrayRef<int64_t> a = in.getShape(), b = out.getShape();
    auto dropOnes = [](ArrayRef<int64_t> s) {
      while (!s.empty() && s.front() == 1)
        s = s.drop_front();
      return s;
    };
    if (dropOnes(a) != dropOnes(b))
      break;
    v = r.getInput();
  }
  return v;
}

Value stripRowReshape(Value v) {
  while (auto r = defOp<ReshapeOp>(v)) {
    auto in = dyn_cast<RankedTensorType>(r.getInput().getType());
    auto out = dyn_cast<RankedTensorType>(r.getType());
    if (!in || !out || in.getRank() < 1 || out.getRank() < 1 ||
        in.getShape().back() != out.getShape().back())
      break;
    v = r.getInput();
  }
  return v;
}

bool isLastAxis(int64_t axis, int64_t rank) {
  return axis == -1 || axis == rank - 1;
}

int64_t ConstTensor::index(ArrayRef<int64_t> at) const {
  int64_t idx = 0;
  for (auto [i, d] : llvm::enumerate(shape))
    idx = idx * d + at[i];
  return idx;
}

namespace {

double roundF32(double x) { return static_cast<double>(static_cast<float>(x)); }

int64_t product(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Row-major strides of `shape`.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// Numpy broadcast of `t` to `shape` (right-aligned; size-1 or missing dims
/// expand). Nullopt if the shapes are incompatible.
std::optional<ConstTensor> broadcastTo(const ConstTensor &t,
                                       ArrayRef<int64_t> shape) {
  int64_t rank = shape.size(), inRank = t.shape.size();
  if (inRank > rank)
    return std::nullopt;
  SmallVector<int64_t> inStrides = stridesOf(t.shape);
  // Stride of each result dim in the input (0 where it broadcasts).
  SmallVector<int64_t> src(rank, 0);
  for (int64_t i = 0; i < inRank; ++i) {
    int64_t d = t.shape[i], r = rank - inRank + i;
    if (d != shape[r] && d != 1)
      return std::nullopt;
    src[r] = d == 1 ? 0 : inStrides[i];
  }
  ConstTensor out;
  out.shape.assign(shape.begin(), shape.end());
  int64_t n = product(shape);
  out.data.resize(n);
  SmallVector<int64_t> outStrides = stridesOf(shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = 0;
    for (int64_t d = 0; d < rank; ++d) {
      off += (rem / outStrides[d]) * src[d];
      rem %= outStrides[d];
    }
    out.data[i] = t.data[off];
  }
  return out;
}

SmallVector<int64_t> staticShape(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return {};
  return SmallVector<int64_t>(t.getShape());
}

class Evaluator {
public:
  Evaluator(const ckpt::WeightStore *weights, int64_t maxElements)
      : weights(weights), maxElements(maxElements) {}

  void bind(Value v, const ConstTensor &t) { memo[v] = t; }

  std::optional<ConstTensor> eval(Value v) {
    auto it = memo.find(v);
    if (it != memo.end())
      return it->second;
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || !type.hasStaticShape() || type.getNumElements() > maxElements)
      return std::nullopt;
    Operation *def = v.getDefiningOp();
    if (!def)
      return std::nullopt;
    std::optional<ConstTensor> r = evalOp(def, v);
    if (r && r->shape != staticShape(v))
      r = std::nullopt;
    memo[v] = r;
    return r;
  }

private:
  const ckpt::WeightStore *weights;
  int64_t maxElements;
  llvm::DenseMap<Value, std::optional<ConstTensor>> memo;

  std::optional<ConstTensor> constant(arith::ConstantOp op) {
    auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!dense)
      return std::nullopt;
    auto type = cast<ShapedType>(dense.getType());
    ConstTensor t;
    t.shape.assign(type.getShape().begin(), type.getShape().end());
    Type et = type.getElementType();
    if (isa<FloatType>(et)) {
      for (APFloat f : dense.getValues<APFloat>())
        t.data.push_back(f.convertToDouble());
    } else if (et.isInteger(1)) {
      for (bool b : dense.getValues<bool>())
        t.data.push_back(b ? 1.0 : 0.0);
    } else if (isa<IntegerType>(et)) {
      for (APInt i : dense.getValues<APInt>())
        t.data.push_back(static_cast<double>(i.getSExtValue()));
    } else {
      return std::nullopt;
    }
    return t;
  }

  /// A dense float weight from the store, checked against its IR type.
  std::optional<ConstTensor> weight(WeightOp op) {
    if (!weights)
      return std::nullopt;
    const ckpt::TensorView *t = weights->lookup(op.getName());
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!t || !type || ArrayRef<int64_t>(t->shape) != type.getShape())
      return std::nullopt;
    ConstTensor out;
    out.shape.assign(type.getShape().begin(), type.getShape().end());
    int64_t n = t->numElements();
    out.data.reserve(n);
    for (int64_t i = 0; i < n; ++i) {
      switch (t->dtype) {
      case ckpt::DType::F32: {
        float f;
        std::memcpy(&f, t->data + 4 * i, 4);
        out.data.push_back(f);
        break;
      }
      case ckpt::DType::F16:
      case ckpt::DType::BF16: {
        uint16_t bits;
        std::memcpy(&bits, t->data + 2 * i, 2);
        APFloat f(t->dtype == ckpt::DType::F16 ? APFloat::IEEEhalf()
                                               : APFloat::BFloat(),
                  APInt(16, bits));
        out.data.push_back(f.convertToDouble());
        break;
      }
      default:
        return std::nullopt;
      }
    }
    return out;
  }

  std::optional<ConstTensor> unary(Value in, Value result,
                                   const std::function<double(double)> &fn) {
    auto a = eval(in);
    if (!a)
      return std::nullopt;
    bool isFloat =
        result && isa<FloatType>(getElementTypeOrSelf(result.getType()));
    for (double &x : a->data)
      x = isFloat ? roundF32(fn(x)) : fn(x);
    return a;
  }

  std::optional<ConstTensor>
  binary(Value lhs, Value rhs, Value result,
         const std::function<double(double, double)> &fn) {
    auto a = eval(lhs), b = eval(rhs);
    if (!a || !b || a->shape != b->shape)
      return std::nullopt;
    bool isFloat =
        result && isa<FloatType>(getElementTypeOrSelf(result.getType()));
    for (auto [x, y] : llvm::zip(a->data, b->data))
      x = isFloat ? roundF32(fn(x, y)) : fn(x, y);
    return a;
  }

  std::optional<ConstTensor> transpose(Value in, ArrayRef<int64_t> perm) {
    auto a = eval(in);
    if (!a)
      return std::nullopt;
    int64_t rank = a->shape.size();
    ConstTensor out;
    for (int64_t p : perm)
      out.shape.push_back(a->shape[p]);
    SmallVector<int64_t> inStrides = stridesOf(a->shape);
    SmallVector<int64_t> outStrides = stridesOf(out.shape);
    out.data.resize(a->data.size());
    for (int64_t i = 0, n = a->data.size(); i < n; ++i) {
      int64_t rem = i, off = 0;
      for (int64_t d = 0; d < rank; ++d) {
        off += (rem / outStrides[d]) * inStrides[perm[d]];
        rem %= outStrides[d];
      }
      out.data[i] = a->data[off];
    }
    return out;
  }

  std::optional<ConstTensor> slice(Value in, int64_t axis, int64_t start,
                                   int64_t size) {
    auto a = eval(in);
    if (!a)
      return std::nullopt;
    int64_t rank = a->shape.size();
    if (axis < 0)
      axis += rank;
    int64_t dim = a->shape[axis];
    if (start < 0)
      start += dim;
    if (start < 0 || size < 0 || start + size > dim)
      return std::nullopt;
    int64_t outer = product(ArrayRef<int64_t>(a->shape).take_front(axis));
    int64_t inner = product(ArrayRef<int64_t>(a->shape).drop_front(axis + 1));
    ConstTensor out;
    out.shape = a->shape;
    out.shape[axis] = size;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t s = start; s < start + size; ++s)
        for (int64_t i = 0; i < inner; ++i)
          out.data.push_back(a->data[(o * dim + s) * inner + i]);
    return out;
  }

  std::optional<ConstTensor> concat(ValueRange inputs, int64_t axis) {
    SmallVector<ConstTensor> parts;
    for (Value in : inputs) {
      auto a = eval(in);
      if (!a)
        return std::nullopt;
      parts.push_back(std::move(*a));
    }
    int64_t rank = parts.front().shape.size();
    if (axis < 0)
      axis += rank;
    ConstTensor out;
    out.shape = parts.front().shape;
    out.shape[axis] = 0;
    for (const ConstTensor &p : parts)
      out.shape[axis] += p.shape[axis];
    int64_t outer = product(ArrayRef<int64_t>(out.shape).take_front(axis));
    for (int64_t o = 0; o < outer; ++o)
      for (const ConstTensor &p : parts) {
        int64_t chunk = p.numElements() / std::max<int64_t>(outer, 1);
        out.data.insert(out.data.end(), p.data.begin() + o * chunk,
                        p.data.begin() + (o + 1) * chunk);
      }
    return out;
  }

  std::optional<ConstTensor> evalOp(Operation *def, Value v) {
    SmallVector<int64_t> shape = staticShape(v);
    return llvm::TypeSwitch<Operation *, std::optional<ConstTensor>>(def)
        .Case([&](arith::ConstantOp op) { return constant(op); })
        .Case([&](WeightOp op) { return weight(op); })
        .Case([&](ReshapeOp op) -> std::optional<ConstTensor> {
          auto a = eval(op.getInput());
          if (!a)
            return std::nullopt;
          a->shape = shape;
          return a;
        })
        .Case([&](TransposeOp op) {
          return transpose(op.getInput(), op.getPermutation());
        })
        .Case([&](SliceOp op) {
          return slice(op.getInput(), op.getAxis(), op.getStart(),
                       op.getSize());
        })
        .Case([&](ConcatOp op) { return concat(op.getInputs(), op.getAxis()); })
        .Case([&](CastOp op) -> std::optional<ConstTensor> {
          Type to = getElementTypeOrSelf(op.getType());
          if (!isa<FloatType>(to))
            return std::nullopt;
          // Widening is exact; narrowing rounds as the interpreter does.
          return unary(op.getInput(), Value(), [to](double a) -> double {
            if (to.isBF16())
              return ref::roundToBf16(float(a));
            if (to.isF16())
              return ref::roundToF16(float(a));
            return a;
          });
        })
        .Case([&](AddOp op) {
          return binary(op.getLhs(), op.getRhs(), v,
                        [](double a, double b) { return a + b; });
        })
        .Case([&](SubOp op) {
          return binary(op.getLhs(), op.getRhs(), v,
                        [](double a, double b) { return a - b; });
        })
        .Case([&](MulOp op) {
          return binary(op.getLhs(), op.getRhs(), v,
                        [](double a, double b) { return a * b; });
        })
        .Case([&](DivOp op) {
          return binary(op.getLhs(), op.getRhs(), v,
                        [](double a, double b) { return a / b; });
        })
        .Case([&](MaximumOp op) {
          return binary(op.getLhs(), op.getRhs(), v,
                        [](double a, double b) { return std::max(a, b); });
        })
        .Case([&](NegOp op) {
          return unary(op.getInput(), v, [](double a) { return -a; });
        })
        .Case([&](ExpOp op) {
          return unary(op.getInput(), v, [](double a) {
            return std::exp(static_cast<float>(a));
          });
        })
        .Case([&](RsqrtOp op) {
          return unary(op.getInput(), v, [](double a) {
            return 1.0f / std::sqrt(static_cast<float>(a));
          });
        })
        .Case([&](ScaleOp op) {
          double f = op.getFactor().convertToDouble();
          return unary(op.getInput(), v, [f](double a) { return a * f; });
        })
        .Default([&](Operation *op) -> std::optional<ConstTensor> {
          return evalPrimitive(op, v, shape);
        });
  }

  std::optional<ConstTensor> evalPrimitive(Operation *op, Value v,
                                           ArrayRef<int64_t> shape);
  std::optional<ConstTensor> matmul(MatmulOp m, ArrayRef<int64_t> shape);
  std::optional<ConstTensor> reduce(ReduceOp r);
  std::optional<ConstTensor> cumsum(CumsumOp c);
  std::optional<ConstTensor> softmax(SoftmaxOp s);
  std::optional<ConstTensor> topk(TopkOp t, unsigned result);

  /// Splits `shape` around `axis` into (outer, size, inner) extents.
  static std::tuple<int64_t, int64_t, int64_t> around(ArrayRef<int64_t> shape,
                                                      int64_t axis) {
    return {product(shape.take_front(axis)), shape[axis],
            product(shape.drop_front(axis + 1))};
  }
  std::optional<ConstTensor> gather(GatherOp g, ArrayRef<int64_t> shape);
};

std::optional<ConstTensor> Evaluator::evalPrimitive(Operation *op, Value v,
                                                    ArrayRef<int64_t> shape) {
  return llvm::TypeSwitch<Operation *, std::optional<ConstTensor>>(op)
      .Case([&](BroadcastOp b) -> std::optional<ConstTensor> {
        auto a = eval(b.getInput());
        if (!a)
          return std::nullopt;
        return broadcastTo(*a, shape);
      })
      .Case([&](ConvertOp c) -> std::optional<ConstTensor> {
        Type et = getElementTypeOrSelf(c.getType());
        return unary(c.getInput(), Value(), [et](double a) {
          if (et.isInteger(1))
            return a != 0.0 ? 1.0 : 0.0;
          if (isa<IntegerType>(et))
            return std::trunc(a);
          return roundF32(a);
        });
      })
      .Case([&](CompareOp c) -> std::optional<ConstTensor> {
        ComparePredicate pred = c.getPredicate();
        return binary(c.getLhs(), c.getRhs(), Value(),
                      [pred](double a, double b) -> double {
                        switch (pred) {
                        case ComparePredicate::Eq:
                          return a == b;
                        case ComparePredicate::Ne:
                          return a != b;
                        case ComparePredicate::Lt:
                          return a < b;
                        case ComparePredicate::Le:
                          return a <= b;
                        case ComparePredicate::Gt:
                          return a > b;
                        case ComparePredicate::Ge:
                          return a >= b;
                        }
                        return 0.0;
                      });
      })
      .Case([&](SelectOp sel) -> std::optional<ConstTensor> {
        auto c = eval(sel.getCondition()), t = eval(sel.getTrueValue()),
             f = eval(sel.getFalseValue());
        if (!c || !t || !f || c->shape != t->shape || t->shape != f->shape)
          return std::nullopt;
        for (auto [x, y, z] : llvm::zip(t->data, c->data, f->data))
          x = y != 0.0 ? x : z;
        return t;
      })
      .Case([&](PowOp p) {
        return binary(p.getLhs(), p.getRhs(), v, [](double a, double b) {
          return std::pow(static_cast<float>(a), static_cast<float>(b));
        });
      })
      .Case([&](MinimumOp m) {
        return binary(m.getLhs(), m.getRhs(), v,
                      [](double a, double b) { return std::min(a, b); });
      })
      .Case([&](CosOp c) {
        return unary(c.getInput(), v,
                     [](double a) { return std::cos(static_cast<float>(a)); });
      })
      .Case([&](SinOp c) {
        return unary(c.getInput(), v,
                     [](double a) { return std::sin(static_cast<float>(a)); });
      })
      .Case([&](SqrtOp c) {
        return unary(c.getInput(), v,
                     [](double a) { return std::sqrt(static_cast<float>(a)); });
      })
      .Case([&](ReciprocalOp c) {
        return unary(c.getInput(), v,
                     [](double a) { return 1.0f / static_cast<float>(a); });
      })
      .Case([&](MatmulOp m) { return matmul(m, shape); })
      .Case([&](SigmoidOp c) {
        return unary(c.getInput(), v, [](double a) {
          return 1.0f / (1.0f + std::exp(-static_cast<float>(a)));
        });
      })
      .Case([&](SiluOp c) {
        return unary(c.getInput(), v, [](double a) {
          float x = static_cast<float>(a);
          return x / (1.0f + std::exp(-x));
        });
      })
      .Case([&](TanhOp c) {
        return unary(c.getInput(), v,
                     [](double a) { return std::tanh(static_cast<float>(a)); });
      })
      .Case([&](AbsOp c) {
        return unary(c.getInput(), v, [](double a) { return std::fabs(a); });
      })
      .Case([&](ReluOp c) {
        return unary(c.getInput(), v, [](double a) { return a > 0 ? a : 0.0; });
      })
      .Case([&](LogOp c) {
        return unary(c.getInput(), v,
                     [](double a) { return std::log(static_cast<float>(a)); });
      })
      .Case([&](ErfOp c) {
        return unary(c.getInput(), v,
                     [](double a) { return std::erf(static_cast<float>(a)); });
      })
      .Case([&](CumsumOp c) { return cumsum(c); })
      .Case([&](ReduceOp r) { return reduce(r); })
      .Case([&](SoftmaxOp sm) { return softmax(sm); })
      .Case([&](TopkOp t) {
        return topk(t, cast<OpResult>(v).getResultNumber());
      })
      .Case([&](GatherOp g) { return gather(g, shape); })
      .Default([&](Operation *) -> std::optional<ConstTensor> {
        return std::nullopt;
      });
}

std::optional<ConstTensor> Evaluator::matmul(MatmulOp m,
                                             ArrayRef<int64_t> shape) {
  auto a = eval(m.getLhs()), b = eval(m.getRhs());
  if (!a || !b || a->shape.size() < 2 || b->shape.size() < 2)
    return std::nullopt;
  int64_t rank = shape.size();
  int64_t M = shape[rank - 2], N = shape[rank - 1];
  int64_t K = a->shape.back();
  if (b->shape[b->shape.size() - 2] != K)
    return std::nullopt;
  // Broadcast the batch dims of both operands to the result's.
  SmallVector<int64_t> aShape(shape.drop_back(2)), bShape(shape.drop_back(2));
  aShape.append({M, K});
  bShape.append({K, N});
  auto ab = broadcastTo(*a, aShape), bb = broadcastTo(*b, bShape);
  if (!ab || !bb)
    return std::nullopt;
  int64_t batch = product(shape.drop_back(2));
  ConstTensor out;
  out.shape.assign(shape.begin(), shape.end());
  out.data.assign(batch * M * N, 0.0);
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t r = 0; r < M; ++r)
      for (int64_t c = 0; c < N; ++c) {
        float acc = 0.0f;
        for (int64_t k = 0; k < K; ++k)
          acc += static_cast<float>(ab->data[(i * M + r) * K + k]) *
                 static_cast<float>(bb->data[(i * K + k) * N + c]);
        out.data[(i * M + r) * N + c] = acc;
      }
  return out;
}

std::optional<ConstTensor> Evaluator::reduce(ReduceOp r) {
  auto a = eval(r.getInput());
  if (!a)
    return std::nullopt;
  int64_t rank = a->shape.size(), axis = r.getAxis();
  if (axis < 0)
    axis += rank;
  int64_t outer, n, inner;
  std::tie(outer, n, inner) = around(a->shape, axis);
  ConstTensor out;
  out.shape = a->shape;
  if (r.getKeepDim())
    out.shape[axis] = 1;
  else
    out.shape.erase(out.shape.begin() + axis);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      float acc = 0;
      for (int64_t k = 0; k < n; ++k) {
        float x = static_cast<float>(a->data[(o * n + k) * inner + i]);
        switch (r.getKind()) {
        case ReduceKind::Sum:
        case ReduceKind::Mean:
          acc = k ? acc + x : x;
          break;
        case ReduceKind::Max:
          acc = k ? std::max(acc, x) : x;
          break;
        case ReduceKind::Min:
          acc = k ? std::min(acc, x) : x;
          break;
        case ReduceKind::Prod:
          acc = k ? acc * x : x;
          break;
        }
      }
      if (r.getKind() == ReduceKind::Mean)
        acc /= static_cast<float>(n);
      out.data.push_back(acc);
    }
  return out;
}

std::optional<ConstTensor> Evaluator::cumsum(CumsumOp c) {
  auto a = eval(c.getInput());
  if (!a)
    return std::nullopt;
  bool isFloat = isa<FloatType>(getElementTypeOrSelf(c.getType()));
  int64_t rank = a->shape.size(), axis = c.getAxis();
  if (axis < 0)
    axis += rank;
  int64_t outer, n, inner;
  std::tie(outer, n, inner) = around(a->shape, axis);
  ConstTensor out = *a;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      for (int64_t step = 0; step < n; ++step) {
        int64_t k = c.getReverse() ? n - 1 - step : step;
        int64_t at = (o * n + k) * inner + i;
        double x = a->data[at];
        if (!c.getExclusive())
          acc = isFloat ? roundF32(acc + x) : acc + x;
        out.data[at] = acc;
        if (c.getExclusive())
          acc = isFloat ? roundF32(acc + x) : acc + x;
      }
    }
  return out;
}

std::optional<ConstTensor> Evaluator::softmax(SoftmaxOp s) {
  auto a = eval(s.getInput());
  if (!a)
    return std::nullopt;
  int64_t rank = a->shape.size(), axis = s.getAxis();
  if (axis < 0)
    axis += rank;
  int64_t outer, n, inner;
  std::tie(outer, n, inner) = around(a->shape, axis);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&, o, i](int64_t k) -> double & {
        return a->data[(o * n + k) * inner + i];
      };
      float m = -INFINITY, sum = 0;
      for (int64_t k = 0; k < n; ++k)
        m = std::max(m, static_cast<float>(at(k)));
      for (int64_t k = 0; k < n; ++k)
        sum += std::exp(static_cast<float>(at(k)) - m);
      for (int64_t k = 0; k < n; ++k)
        at(k) = std::exp(static_cast<float>(at(k)) - m) / sum;
    }
  return a;
}

std::optional<ConstTensor> Evaluator::topk(TopkOp t, unsigned result) {
  auto a = eval(t.getInput());
  if (!a)
    return std::nullopt;
  int64_t rank = a->shape.size(), axis = t.getAxis(), k = t.getK();
  if (axis < 0)
    axis += rank;
  int64_t outer, n, inner;
  std::tie(outer, n, inner) = around(a->shape, axis);
  if (k > n)
    return std::nullopt;
  ConstTensor out;
  out.shape = a->shape;
  out.shape[axis] = k;
  out.data.assign(outer * k * inner, 0.0);
  SmallVector<int64_t> order(n);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&, o, i](int64_t j) {
        return a->data[(o * n + j) * inner + i];
      };
      for (int64_t j = 0; j < n; ++j)
        order[j] = j;
      // Sorted by value, ties to the lower index (llm.topk).
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
        return t.getLargest() ? at(x) > at(y) : at(x) < at(y);
      });
      for (int64_t j = 0; j < k; ++j)
        out.data[(o * k + j) * inner + i] =
            result == 0 ? at(order[j]) : static_cast<double>(order[j]);
    }
  return out;
}

std::optional<ConstTensor> Evaluator::gather(GatherOp g,
                                             ArrayRef<int64_t> shape) {
  auto in = eval(g.getInput()), idx = eval(g.getIndices());
  if (!in)
    return std::nullopt;
  if (!idx)
    return std::nullopt;
  int64_t rank = in->shape.size(), axis = g.getAxis();
  if (axis < 0)
    axis += rank;
  int64_t outer = product(ArrayRef<int64_t>(in->shape).take_front(axis));
  int64_t inner = product(ArrayRef<int64_t>(in->shape).drop_front(axis + 1));
  int64_t dim = in->shape[axis];
  ConstTensor out;
  out.shape.assign(shape.begin(), shape.end());
  for (int64_t o = 0; o < outer; ++o)
    for (double di : idx->data) {
      int64_t i = static_cast<int64_t>(di);
      if (i < 0)
        i += dim;
      if (i < 0 || i >= dim)
        return std::nullopt;
      for (int64_t j = 0; j < inner; ++j)
        out.data.push_back(in->data[(o * dim + i) * inner + j]);
    }
  return out;
}

} // namespace

std::optional<ConstTensor>
evaluateConstant(Value v, const ckpt::WeightStore *weights,
                 const llvm::DenseMap<Value, ConstTensor> *bindings,
                 int64_t maxElements) {
  Evaluator e(weights, maxElements);
  if (bindings)
    for (const auto &[value, tensor] : *bindings)
      e.bind(value, tensor);
  return e.eval(v);
}

Value reshapeTo(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape)
    return v;
  return ReshapeOp::create(b, loc, type.clone(shape), v);
}

Value transposeBy(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm) {
  bool identity = true;
  for (auto [i, p] : llvm::enumerate(perm))
    identity &= static_cast<int64_t>(i) == p;
  if (identity)
    return v;
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type.getDimSize(p));
  return TransposeOp::create(b, loc, type.clone(shape), v, perm);
}

} // namespace pimc::llm
