//===- InterpreterImpl.h - the interpreter's state (internal) -*- C++ -*-===//
//
// Internal to lib/Reference: run-time tensors, weight and cache bindings,
// and Interpreter::Impl, shared by Interpreter.cpp (binding, calls, the
// model-level ops) and ExecuteGraphOps.cpp (the primitive ops of the graph
// frontends).
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_REFERENCE_INTERPRETERIMPL_H
#define PIMC_REFERENCE_INTERPRETERIMPL_H

#include "pimc/Checkpoint/GPTQ.h"
#include "pimc/Dialect/LLM/IR/RopeParams.h"
#include "pimc/Reference/Interpreter.h"

#include "pimc/Dialect/LLM/IR/LLMBuilders.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Numerics/Kernels.h"
#include "pimc/Support/Shape.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>

namespace pimc::ref::detail {

using namespace ::mlir;
using llvm::Error;
using llvm::Expected;

struct Tensor {
  SmallVector<int64_t, 4> shape;
  std::vector<float> f;   // f32 tensors
  std::vector<int64_t> i; // integer tensors
  bool isInt = false;
  int64_t numel() const {
    return std::accumulate(shape.begin(), shape.end(), int64_t(1),
                           std::multiplies<int64_t>());
  }
};
using TensorPtr = std::shared_ptr<Tensor>;

inline TensorPtr makeF32(ArrayRef<int64_t> shape) {
  auto t = std::make_shared<Tensor>();
  t->shape.assign(shape.begin(), shape.end());
  t->f.assign(t->numel(), 0.0f);
  return t;
}

/// A checkpoint tensor bound to an llm.weight.
struct WeightBinding {
  DenseMatrix dense;         // 2-D dense weights (data stays in the file)
  std::vector<float> vector; // other ranks (norm scales, biases), widened
  std::vector<int64_t> ints; // i64 / i1 weights (graph buffers)
  bool isInt = false;
  std::unique_ptr<QuantMatrix> quant;
  int64_t rank = 0;
  SmallVector<int64_t, 4> shape;
  // The weight as an activation tensor, made on first use as one (graph
  // frontends feed parameters to element-wise ops and matmuls).
  TensorPtr asTensor;
};

/// One state argument of the step: a KV cache, or a recurrent layer's
/// state (`recurrent`: `state` of `stateShape`, zero before position 0).
/// `filled` counts the positions either holds.
struct CacheState {
  bool recurrent = false;
  SmallVector<int64_t, 3> stateShape;
  std::vector<float> state;
  int64_t maxLength = 0, heads = 0, headDim = 0;
  /// A latent cache's values are the keys' first valuePrefix dims (not
  /// stored); 0: values [filled, heads, headDim] of their own.
  int64_t valuePrefix = 0;
  std::vector<float> keys, values; // [filled, heads, headDim]
  int64_t filled = 0;
  void clear() {
    keys.clear();
    values.clear();
    std::fill(state.begin(), state.end(), 0.0f);
    filled = 0;
  }
};

struct RTValue {
  TensorPtr tensor;
  int64_t index = 0;
  WeightBinding *weight = nullptr;
  CacheState *cache = nullptr;
};
using Env = llvm::DenseMap<Value, RTValue>;

/// `like`-typed (f32 or integer) zero tensor of `shape`.
inline TensorPtr makeLike(const Tensor &like, ArrayRef<int64_t> shape) {
  auto t = std::make_shared<Tensor>();
  t->shape.assign(shape.begin(), shape.end());
  t->isInt = like.isInt;
  if (t->isInt)
    t->i.assign(t->numel(), 0);
  else
    t->f.assign(t->numel(), 0.0f);
  return t;
}

/// Calls fn(src data, dst data) on the f32 or the integer vectors, so data
/// movement is written once for both.
template <typename Fn>
inline void onData(const Tensor &src, Tensor &dst, Fn fn) {
  if (src.isInt)
    fn(src.i, dst.i);
  else
    fn(src.f, dst.f);
}

/// The weight as an activation tensor (widened to f32, dequantized, or its
/// integers), made once.
inline TensorPtr weightTensor(WeightBinding &w) {
  if (w.asTensor)
    return w.asTensor;
  auto t = std::make_shared<Tensor>();
  t->shape = w.shape;
  if (w.isInt) {
    t->isInt = true;
    t->i = w.ints;
  } else if (w.quant) {
    const QuantMatrix &q = *w.quant;
    int64_t groups = q.cols / q.groupSize;
    t->f.resize(q.rows * q.cols);
    for (int64_t n = 0; n < q.rows; ++n)
      for (int64_t k = 0; k < q.cols; ++k) {
        int64_t g = n * groups + k / q.groupSize;
        t->f[n * q.cols + k] =
            q.scales[g] *
            static_cast<float>(int32_t(q.codes[n * q.cols + k]) - q.zeros[g]);
      }
  } else if (w.rank == 2) {
    t->f.resize(w.dense.rows * w.dense.cols);
    widenToF32(w.dense.storage, w.dense.data, t->f.size(), t->f.data());
  } else {
    t->f = w.vector;
  }
  w.asTensor = t;
  return t;
}

/// The runtime tensor of `v`; a weight used as an activation is
/// materialised on first use.
inline Tensor &tensorOf(Env &env, Value v) {
  RTValue &rv = env[v];
  if (!rv.tensor && rv.weight)
    rv.tensor = weightTensor(*rv.weight);
  return *rv.tensor;
}

inline std::string locString(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  // Graph importers name ops after their graph node (NameLoc); parsed IR
  // has file:line:col.
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    os << name.getName().getValue();
  else if (auto file = dyn_cast<FileLineColLoc>(op->getLoc()))
    os << file.getFilename().getValue() << ":" << file.getLine() << ":"
       << file.getColumn();
  else
    op->getLoc().print(os);
  return s;
}

inline Error opError(Operation *op, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::formatv("'{0}' at {1}: {2}",
                                               op->getName().getStringRef(),
                                               locString(op), msg.str()));
}

inline std::optional<StorageType> storageOf(Type t) {
  if (t.isF32())
    return StorageType::F32;
  if (t.isF16())
    return StorageType::F16;
  if (t.isBF16())
    return StorageType::BF16;
  return std::nullopt;
}

/// The checkpoint dtype of an f32, f16 or bf16 IR element type.
inline std::optional<ckpt::DType> checkpointDType(Type t) {
  if (t.isF32())
    return ckpt::DType::F32;
  if (t.isF16())
    return ckpt::DType::F16;
  if (t.isBF16())
    return ckpt::DType::BF16;
  return std::nullopt;
}

/// outer x n x inner view of a shape around `axis`.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};
inline AxisView axisView(ArrayRef<int64_t> shape, int64_t axis) {
  AxisView v;
  for (int64_t i = 0; i < axis; ++i)
    v.outer *= shape[i];
  v.n = shape[axis];
  for (int64_t i = axis + 1; i < static_cast<int64_t>(shape.size()); ++i)
    v.inner *= shape[i];
  return v;
}

} // namespace pimc::ref::detail

namespace pimc::ref {
using namespace detail;

struct Interpreter::Impl {
  ModuleOp module;
  func::FuncOp entry;
  const ckpt::WeightStore *weights = nullptr;
  llvm::DenseMap<Operation *, std::unique_ptr<WeightBinding>> bindings;
  std::vector<std::unique_ptr<CacheState>> caches; // one per cache argument
  int64_t vocab = 0, maxContext = 0;
  bool plainTensors = false;  // call() signature rather than forward()
  int64_t longRopeL0 = 0;     // a longrope llm.rope's L0 (0: none)
  int64_t ropeCallLength = 0; // applyRope's callLength

  Error bindWeights();
  Error checkCacheLinearity();
  Expected<std::vector<float>> run(ArrayRef<int64_t> tokens, int64_t offset);
  Expected<std::vector<HostTensor>> call(ArrayRef<HostTensor> inputs);
  /// Executes the entry block up to its return, which it returns.
  Expected<func::ReturnOp> executeBody(Env &env);
  Error execute(Operation *op, Env &env);
  /// The primitive ops of the graph frontends (docs/frontend-graphs.md).
  Error executeGraphOp(Operation *op, Env &env);
  /// The recurrent layers (ExecuteRecurrentOps.cpp); `handled` is false
  /// for any other op.
  Error executeRecurrentOp(Operation *op, Env &env, bool &handled);
  /// `v` as a weight: its binding, or for a computed tensor (a parameter
  /// transposed or sliced by a frontend) a binding over its data, kept in
  /// `temps` until the op is done.
  const WeightBinding *
  weightOf(Env &env, Value v,
           std::vector<std::unique_ptr<WeightBinding>> &temps);
};

} // namespace pimc::ref

#endif // PIMC_REFERENCE_INTERPRETERIMPL_H
