//===- Interpreter.cpp - reference interpreter of llm IR ------------------===//
//
// A straight-line walk over the entry block: every value maps to a runtime
// value (f32 or integer tensor, index, bound weight, KV cache) and every op
// to a kernel in Kernels.h. After each op the runtime shapes are checked
// against the static dimensions of the result types, so the IR's types are
// enforced, not trusted.
//
//===----------------------------------------------------------------------===//
#include "pimc/Reference/Interpreter.h"
#include "pimc/Dialect/LLM/IR/RopeParams.h"

#include "pimc/Dialect/LLM/IR/LLMBuilders.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Numerics/Kernels.h"

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

using namespace mlir;
using namespace pimc;
using namespace pimc::ref;
using llvm::Error;
using llvm::Expected;

namespace {

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

TensorPtr makeF32(ArrayRef<int64_t> shape) {
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

struct CacheState {
  int64_t maxLength = 0, heads = 0, headDim = 0;
  std::vector<float> keys, values; // [filled, heads, headDim]
  int64_t filled = 0;
  void clear() {
    keys.clear();
    values.clear();
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
TensorPtr makeLike(const Tensor &like, ArrayRef<int64_t> shape) {
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
template <typename Fn> void onData(const Tensor &src, Tensor &dst, Fn fn) {
  if (src.isInt)
    fn(src.i, dst.i);
  else
    fn(src.f, dst.f);
}

/// The weight as an activation tensor (widened to f32, dequantized, or its
/// integers), made once.
TensorPtr weightTensor(WeightBinding &w) {
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
Tensor &tensorOf(Env &env, Value v) {
  RTValue &rv = env[v];
  if (!rv.tensor && rv.weight)
    rv.tensor = weightTensor(*rv.weight);
  return *rv.tensor;
}

std::string locString(Operation *op) {
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

Error opError(Operation *op, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::formatv("'{0}' at {1}: {2}",
                                               op->getName().getStringRef(),
                                               locString(op), msg.str()));
}

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

std::optional<StorageType> storageOf(Type t) {
  if (t.isF32())
    return StorageType::F32;
  if (t.isF16())
    return StorageType::F16;
  if (t.isBF16())
    return StorageType::BF16;
  return std::nullopt;
}

std::optional<StorageType> storageOf(ckpt::DType d) {
  switch (d) {
  case ckpt::DType::F32:
    return StorageType::F32;
  case ckpt::DType::F16:
    return StorageType::F16;
  case ckpt::DType::BF16:
    return StorageType::BF16;
  default:
    return std::nullopt;
  }
}

/// outer x n x inner view of a shape around `axis`.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisView axisView(ArrayRef<int64_t> shape, int64_t axis) {
  AxisView v;
  for (int64_t i = 0; i < axis; ++i)
    v.outer *= shape[i];
  v.n = shape[axis];
  for (int64_t i = axis + 1; i < static_cast<int64_t>(shape.size()); ++i)
    v.inner *= shape[i];
  return v;
}

} // namespace

struct Interpreter::Impl {
  ModuleOp module;
  func::FuncOp entry;
  const ckpt::WeightStore *weights = nullptr;
  llvm::DenseMap<Operation *, std::unique_ptr<WeightBinding>> bindings;
  std::vector<std::unique_ptr<CacheState>> caches; // one per cache argument
  int64_t vocab = 0, maxContext = 0;
  bool plainTensors = false; // call() signature rather than forward()

  Error bindWeights();
  Error checkCacheLinearity();
  Expected<std::vector<float>> run(ArrayRef<int64_t> tokens, int64_t offset);
  Expected<std::vector<HostTensor>> call(ArrayRef<HostTensor> inputs);
  /// Executes the entry block up to its return, which it returns.
  Expected<func::ReturnOp> executeBody(Env &env);
  Error execute(Operation *op, Env &env);
  /// The primitive ops of the graph frontends (docs/frontend-graphs.md).
  Error executeGraphOp(Operation *op, Env &env);
  /// `v` as a weight: its binding, or for a computed tensor (a parameter
  /// transposed or sliced by a frontend) a binding over its data, kept in
  /// `temps` until the op is done.
  const WeightBinding *
  weightOf(Env &env, Value v,
           std::vector<std::unique_ptr<WeightBinding>> &temps);
};

const WeightBinding *Interpreter::Impl::weightOf(
    Env &env, Value v, std::vector<std::unique_ptr<WeightBinding>> &temps) {
  RTValue &rv = env[v];
  if (rv.weight)
    return rv.weight;
  Tensor &t = *rv.tensor;
  auto b = std::make_unique<WeightBinding>();
  b->rank = t.shape.size();
  b->shape = t.shape;
  if (b->rank == 2)
    b->dense = {StorageType::F32, t.f.data(), t.shape[0], t.shape[1]};
  else
    b->vector = t.f;
  temps.push_back(std::move(b));
  return temps.back().get();
}

Error Interpreter::Impl::bindWeights() {
  std::string problems;
  unsigned count = 0;
  auto problem = [&](const llvm::Twine &msg) {
    ++count;
    problems += "\n  " + msg.str();
  };
  entry.walk([&](llm::WeightOp op) {
    StringRef name = op.getName();
    auto binding = std::make_unique<WeightBinding>();
    if (auto qt = dyn_cast<llm::QuantizedWeightType>(op.getType())) {
      const ckpt::TensorView *qw = weights->lookup((name + ".qweight").str());
      const ckpt::TensorView *qz = weights->lookup((name + ".qzeros").str());
      const ckpt::TensorView *sc = weights->lookup((name + ".scales").str());
      if (!qw || !qz || !sc) {
        problem(llvm::formatv("quantized weight '{0}': missing {0}.qweight, "
                              "{0}.qzeros or {0}.scales",
                              name));
        return;
      }
      auto scaleStorage = storageOf(sc->dtype);
      if (!scaleStorage || qw->dtype != ckpt::DType::I32 ||
          qz->dtype != ckpt::DType::I32) {
        problem(llvm::formatv("quantized weight '{0}': qweight/qzeros must be "
                              "I32 and scales F16/BF16/F32",
                              name));
        return;
      }
      int64_t N = qt.getRows(), K = qt.getCols(), G = qt.getGroupSize();
      unsigned bits = qt.getBits();
      if (qw->numElements() * 32 != K * N * bits ||
          qz->numElements() * 32 != (K / G) * N * bits ||
          sc->numElements() != (K / G) * N) {
        problem(llvm::formatv("quantized weight '{0}': tensor sizes do not "
                              "match {1}",
                              name, shapeStr(qt.getShape())));
        return;
      }
      auto q =
          unpackGptq(reinterpret_cast<const int32_t *>(qw->data),
                     reinterpret_cast<const int32_t *>(qz->data), sc->data,
                     *scaleStorage, N, K, G, bits, qt.getPacking() == "gptq");
      if (!q) {
        problem(llvm::formatv("quantized weight '{0}': {1}", name,
                              llvm::toString(q.takeError())));
        return;
      }
      // Symmetric schemes: the zero is the code range's midpoint, whatever
      // the stored qzeros say.
      if (qt.isSymmetric())
        std::fill(q->zeros.begin(), q->zeros.end(), 1 << (bits - 1));
      binding->quant = std::make_unique<QuantMatrix>(std::move(*q));
      binding->rank = 2;
      binding->shape.assign(qt.getShape().begin(), qt.getShape().end());
      bindings[op] = std::move(binding);
      return;
    }
    auto type = cast<RankedTensorType>(op.getType());
    const ckpt::TensorView *view = weights->lookup(name);
    if (!view) {
      problem(llvm::formatv("weight '{0}' is not in the checkpoint", name));
      return;
    }
    binding->shape.assign(type.getShape().begin(), type.getShape().end());
    if (auto intType = dyn_cast<IntegerType>(type.getElementType())) {
      ckpt::DType want =
          intType.getWidth() == 1 ? ckpt::DType::Bool : ckpt::DType::I64;
      if (view->dtype != want) {
        problem(llvm::formatv("weight '{0}' has dtype {1} in the checkpoint "
                              "but {2} in the IR (needs {3})",
                              name, ckpt::dtypeName(view->dtype), intType,
                              ckpt::dtypeName(want)));
        return;
      }
      if (ArrayRef<int64_t>(view->shape) != type.getShape()) {
        problem(llvm::formatv("weight '{0}' has shape {1} in the checkpoint "
                              "but {2} in the IR",
                              name, shapeStr(view->shape),
                              shapeStr(type.getShape())));
        return;
      }
      binding->isInt = true;
      binding->rank = type.getRank();
      int64_t n = view->numElements();
      binding->ints.resize(n);
      for (int64_t i = 0; i < n; ++i) {
        if (want == ckpt::DType::Bool) {
          binding->ints[i] = view->data[i] != 0;
        } else {
          int64_t v;
          std::memcpy(&v, view->data + 8 * i, sizeof(v));
          binding->ints[i] = v;
        }
      }
      bindings[op] = std::move(binding);
      return;
    }
    auto storage = storageOf(view->dtype);
    if (!storage || storage != storageOf(type.getElementType())) {
      problem(llvm::formatv("weight '{0}' has dtype {1} in the checkpoint but "
                            "{2} in the IR",
                            name, ckpt::dtypeName(view->dtype),
                            type.getElementType()));
      return;
    }
    if (ArrayRef<int64_t>(view->shape) != type.getShape()) {
      problem(llvm::formatv("weight '{0}' has shape {1} in the checkpoint but "
                            "{2} in the IR",
                            name, shapeStr(view->shape),
                            shapeStr(type.getShape())));
      return;
    }
    binding->rank = type.getRank();
    if (type.getRank() == 2) {
      binding->dense = {*storage, view->data, type.getDimSize(0),
                        type.getDimSize(1)};
    } else {
      binding->vector.resize(view->numElements());
      widenToF32(*storage, view->data, view->numElements(),
                 binding->vector.data());
    }
    bindings[op] = std::move(binding);
  });
  if (count)
    return llvm::createStringError(
        llvm::formatv("{0} weight(s) cannot be bound:{1}", count, problems));
  return Error::success();
}

Error Interpreter::Impl::checkCacheLinearity() {
  // Appends update caches in place, which is only sound if a cache value is
  // appended to at most once and never read after that.
  Error err = Error::success();
  auto check = [&](Value v) {
    if (!isa<llm::KVCacheType>(v.getType()) || err)
      return;
    unsigned appends = 0;
    for (Operation *user : v.getUsers())
      appends += isa<llm::KVCacheAppendOp>(user);
    if (appends > 1 ||
        (appends == 1 && llvm::any_of(v.getUsers(), [](Operation *u) {
           return isa<llm::KVCacheReadOp>(u);
         })))
      err = llvm::createStringError(
          "a KV cache value is used after being appended to; the "
          "interpreter requires linear use of caches");
  };
  for (BlockArgument arg : entry.getArguments())
    check(arg);
  entry.walk([&](Operation *op) {
    for (Value r : op->getResults())
      check(r);
  });
  return err;
}

Interpreter::Interpreter(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Interpreter::~Interpreter() = default;

Expected<std::unique_ptr<Interpreter>>
Interpreter::create(ModuleOp module, const ckpt::WeightStore &weights,
                    StringRef entryName) {
  auto impl = std::make_unique<Impl>();
  impl->module = module;
  impl->weights = &weights;
  impl->entry = module.lookupSymbol<func::FuncOp>(entryName);
  if (!impl->entry || impl->entry.isExternal())
    return llvm::createStringError(
        llvm::formatv("module has no function '@{0}' to run", entryName));
  FunctionType type = impl->entry.getFunctionType();
  impl->plainTensors =
      llvm::all_of(type.getInputs(),
                   [](Type t) { return isa<RankedTensorType>(t); }) &&
      llvm::all_of(type.getResults(),
                   [](Type t) { return isa<RankedTensorType>(t); });
  // A one-argument tensor<?xi64> function is run the language-model way
  // only through forward(); call() works on it too.
  if (impl->plainTensors) {
    for (auto [i, t] : llvm::enumerate(type.getInputs())) {
      Type elem = cast<RankedTensorType>(t).getElementType();
      if (!elem.isF32() && !isa<IntegerType>(elem))
        return llvm::createStringError(llvm::formatv(
            "entry argument {0} has type {1}; call() takes f32, integer and "
            "i1 tensors",
            i, t));
    }
  } else {
    if (type.getNumInputs() < 2 || !isa<RankedTensorType>(type.getInput(0)) ||
        !type.getInput(1).isIndex() || type.getNumResults() < 1)
      return llvm::createStringError(
          "entry function must take (tokens: tensor<?xi64>, offset: index, "
          "caches...) and return (logits, caches...), or take and return "
          "only tensors");
    for (unsigned i = 2; i < type.getNumInputs(); ++i) {
      auto cache = dyn_cast<llm::KVCacheType>(type.getInput(i));
      if (!cache)
        return llvm::createStringError(
            llvm::formatv("entry argument {0} must be a !llm.kv_cache", i));
      auto state = std::make_unique<CacheState>();
      state->maxLength = cache.getMaxLength();
      state->heads = cache.getKvHeads();
      state->headDim = cache.getHeadDim();
      impl->maxContext = std::max(impl->maxContext, cache.getMaxLength());
      impl->caches.push_back(std::move(state));
    }
  }
  if (type.getNumResults() > 0)
    if (auto logits = dyn_cast<RankedTensorType>(type.getResult(0));
        logits && logits.getRank() > 0)
      impl->vocab = logits.getShape().back();
  if (Error e = impl->checkCacheLinearity())
    return e;
  if (Error e = impl->bindWeights())
    return e;
  return std::unique_ptr<Interpreter>(new Interpreter(std::move(impl)));
}

int64_t Interpreter::vocabSize() const { return impl->vocab; }
int64_t Interpreter::maxContext() const { return impl->maxContext; }

void Interpreter::resetCaches() {
  for (auto &c : impl->caches)
    c->clear();
}

Expected<std::vector<float>> Interpreter::forward(ArrayRef<int64_t> tokens,
                                                  int64_t offset) {
  if (impl->plainTensors)
    return llvm::createStringError(llvm::formatv(
        "@{0} takes plain tensors; run it with call(), not forward()",
        impl->entry.getName()));
  return impl->run(tokens, offset);
}

HostTensor HostTensor::fromF32(std::vector<int64_t> shape,
                               std::vector<float> data) {
  HostTensor t;
  t.dtype = DType::F32;
  t.shape = std::move(shape);
  t.f32 = std::move(data);
  return t;
}

HostTensor HostTensor::fromI64(std::vector<int64_t> shape,
                               std::vector<int64_t> data) {
  HostTensor t;
  t.dtype = DType::I64;
  t.shape = std::move(shape);
  t.i64 = std::move(data);
  return t;
}

HostTensor HostTensor::fromBool(std::vector<int64_t> shape,
                                std::vector<int64_t> data) {
  HostTensor t = fromI64(std::move(shape), std::move(data));
  t.dtype = DType::Bool;
  return t;
}

int64_t HostTensor::numElements() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t(1),
                         std::multiplies<int64_t>());
}

StringRef HostTensor::dtypeName() const {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::I64:
    return "i64";
  case DType::Bool:
    return "i1";
  }
  return "?";
}

Expected<std::vector<float>> Interpreter::Impl::run(ArrayRef<int64_t> tokens,
                                                    int64_t offset) {
  if (tokens.empty())
    return llvm::createStringError("forward needs at least one token");
  auto idsType = cast<RankedTensorType>(entry.getArgument(0).getType());
  if (idsType.getRank() != 1 ||
      (!idsType.isDynamicDim(0) &&
       idsType.getDimSize(0) != static_cast<int64_t>(tokens.size())))
    return llvm::createStringError(
        llvm::formatv("entry takes tokens of type {0}, got {1} tokens", idsType,
                      tokens.size()));
  Env env;
  Block &body = entry.front();
  auto ids = std::make_shared<Tensor>();
  ids->isInt = true;
  ids->shape = {static_cast<int64_t>(tokens.size())};
  ids->i.assign(tokens.begin(), tokens.end());
  env[body.getArgument(0)].tensor = ids;
  env[body.getArgument(1)].index = offset;
  for (unsigned i = 2; i < body.getNumArguments(); ++i)
    env[body.getArgument(i)].cache = caches[i - 2].get();

  Expected<func::ReturnOp> ret = executeBody(env);
  if (!ret)
    return ret.takeError();
  RTValue logits = env.lookup(ret->getOperand(0));
  if (!logits.tensor)
    return llvm::createStringError("entry must return a tensor first");
  // Caches are updated in place; a function may still return them in
  // another order, so rebind slots to what it returned.
  std::vector<CacheState *> order;
  for (unsigned i = 1; i < ret->getNumOperands(); ++i)
    order.push_back(env.lookup(ret->getOperand(i)).cache);
  for (unsigned i = 0; i < order.size() && i < caches.size(); ++i)
    if (order[i] != caches[i].get())
      return llvm::createStringError(
          "entry must return each cache in its argument's position");
  if (logits.tensor->isInt)
    return std::vector<float>(logits.tensor->i.begin(), logits.tensor->i.end());
  return logits.tensor->f;
}

Expected<func::ReturnOp> Interpreter::Impl::executeBody(Env &env) {
  for (Operation &op : entry.front().getOperations()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op))
      return ret;
    if (Error e = execute(&op, env))
      return e;
  }
  return llvm::createStringError("entry function has no return");
}

bool Interpreter::takesPlainTensors() const { return impl->plainTensors; }

Expected<std::vector<HostTensor>>
Interpreter::call(ArrayRef<HostTensor> inputs) {
  return impl->call(inputs);
}

Expected<std::vector<HostTensor>>
Interpreter::Impl::call(ArrayRef<HostTensor> inputs) {
  if (!plainTensors)
    return llvm::createStringError(llvm::formatv(
        "@{0} takes token ids, an offset and KV caches; run it with "
        "forward(), not call()",
        entry.getName()));
  FunctionType type = entry.getFunctionType();
  if (inputs.size() != type.getNumInputs())
    return llvm::createStringError(
        llvm::formatv("@{0} takes {1} input(s), got {2}", entry.getName(),
                      type.getNumInputs(), inputs.size()));
  Env env;
  Block &body = entry.front();
  for (auto [i, in] : llvm::enumerate(inputs)) {
    auto argType = cast<RankedTensorType>(type.getInput(i));
    Type elem = argType.getElementType();
    HostTensor::DType want = elem.isF32()        ? HostTensor::DType::F32
                             : elem.isInteger(1) ? HostTensor::DType::Bool
                                                 : HostTensor::DType::I64;
    auto wantName = want == HostTensor::DType::F32    ? "f32"
                    : want == HostTensor::DType::Bool ? "i1"
                                                      : "i64";
    if (in.dtype != want)
      return llvm::createStringError(llvm::formatv(
          "input {0}: expected {1} elements for argument type {2}, got {3}", i,
          wantName, argType, in.dtypeName()));
    bool shapeOk = static_cast<int64_t>(in.shape.size()) == argType.getRank();
    for (int64_t d = 0; shapeOk && d < argType.getRank(); ++d)
      shapeOk = argType.isDynamicDim(d) ? in.shape[d] >= 0
                                        : in.shape[d] == argType.getDimSize(d);
    if (!shapeOk)
      return llvm::createStringError(
          llvm::formatv("input {0}: shape {1} does not match argument type {2}",
                        i, shapeStr(in.shape), argType));
    size_t have = in.isInteger() ? in.i64.size() : in.f32.size();
    if (static_cast<int64_t>(have) != in.numElements())
      return llvm::createStringError(llvm::formatv(
          "input {0}: shape {1} has {2} elements but {3} values were given", i,
          shapeStr(in.shape), in.numElements(), have));
    auto t = std::make_shared<Tensor>();
    t->shape.assign(in.shape.begin(), in.shape.end());
    t->isInt = in.isInteger();
    if (t->isInt) {
      t->i = in.i64;
      if (want == HostTensor::DType::Bool)
        for (int64_t &v : t->i)
          v = v != 0;
    } else {
      t->f = in.f32;
    }
    env[body.getArgument(i)].tensor = std::move(t);
  }

  Expected<func::ReturnOp> ret = executeBody(env);
  if (!ret)
    return ret.takeError();
  std::vector<HostTensor> results;
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    RTValue &rv = env[v];
    TensorPtr t = rv.tensor;
    if (!t && rv.weight)
      t = weightTensor(*rv.weight); // a weight returned as it is
    if (!t)
      return llvm::createStringError(
          llvm::formatv("result {0} is not a tensor value", i));
    Type elem = cast<RankedTensorType>(v.getType()).getElementType();
    HostTensor h;
    h.shape.assign(t->shape.begin(), t->shape.end());
    if (t->isInt) {
      h.dtype =
          elem.isInteger(1) ? HostTensor::DType::Bool : HostTensor::DType::I64;
      h.i64 = t->i;
    } else {
      h.f32 = t->f;
    }
    results.push_back(std::move(h));
  }
  return results;
}

Error Interpreter::Impl::execute(Operation *op, Env &env) {
  auto tensorOf = [&](Value v) -> Tensor & { return ::tensorOf(env, v); };
  auto setTensor = [&](Value v, TensorPtr t) { env[v].tensor = std::move(t); };
  std::vector<std::unique_ptr<WeightBinding>> temps;
  auto weightOf = [&](Value v) { return this->weightOf(env, v, temps); };

  Error err =
      llvm::TypeSwitch<Operation *, Error>(op)
          .Case([&](arith::ConstantOp c) -> Error {
            if (auto attr = dyn_cast<IntegerAttr>(c.getValue())) {
              env[c.getResult()].index = attr.getInt();
              return Error::success();
            }
            auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
            auto type = dyn_cast<RankedTensorType>(c.getType());
            if (!dense || !type)
              return opError(op, "only integer/index scalars and dense tensor "
                                 "constants are supported");
            auto t = std::make_shared<Tensor>();
            t->shape.assign(type.getShape().begin(), type.getShape().end());
            Type elem = type.getElementType();
            if (elem.isF32()) {
              for (APFloat v : dense.getValues<APFloat>())
                t->f.push_back(v.convertToFloat());
            } else if (auto intType = dyn_cast<IntegerType>(elem)) {
              t->isInt = true;
              for (APInt v : dense.getValues<APInt>())
                t->i.push_back(intType.getWidth() == 1 ? v.getBoolValue()
                                                       : v.getSExtValue());
            } else {
              return opError(op, llvm::formatv("constant of type {0}: only "
                                               "f32, integer and i1 tensors "
                                               "are supported",
                                               type));
            }
            setTensor(c.getResult(), t);
            return Error::success();
          })
          .Case([&](arith::AddIOp a) -> Error {
            env[a.getResult()].index =
                env[a.getLhs()].index + env[a.getRhs()].index;
            return Error::success();
          })
          .Case([&](arith::SubIOp a) -> Error {
            env[a.getResult()].index =
                env[a.getLhs()].index - env[a.getRhs()].index;
            return Error::success();
          })
          .Case([&](tensor::DimOp d) -> Error {
            auto idx = d.getConstantIndex();
            Tensor &t = tensorOf(d.getSource());
            if (!idx || *idx < 0 ||
                *idx >= static_cast<int64_t>(t.shape.size()))
              return opError(op, "needs a constant, in-range dimension");
            env[d.getResult()].index = t.shape[*idx];
            return Error::success();
          })
          .Case([&](llm::WeightOp w) -> Error {
            auto it = bindings.find(op);
            if (it == bindings.end())
              return opError(op, "weight was not bound");
            env[w.getResult()].weight = it->second.get();
            return Error::success();
          })
          .Case([&](llm::EmbeddingOp e) -> Error {
            const WeightBinding *table = weightOf(e.getTable());
            Tensor &ids = tensorOf(e.getIds());
            auto out = makeF32({ids.shape[0], table->dense.cols});
            if (Error err = embedding(table->dense, ids.i.data(), ids.shape[0],
                                      out->f.data()))
              return opError(op, llvm::toString(std::move(err)));
            setTensor(e.getResult(), out);
            return Error::success();
          })
          .Case<llm::LinearOp, llm::LMHeadOp>([&](auto lin) -> Error {
            Tensor &x = tensorOf(lin.getInput());
            const WeightBinding *w = weightOf(lin.getWeight());
            int64_t K = w->quant ? w->quant->cols : w->dense.cols;
            int64_t N = w->quant ? w->quant->rows : w->dense.rows;
            if (x.shape.back() != K)
              return opError(op, llvm::formatv("input has {0} features, "
                                               "weight expects {1}",
                                               x.shape.back(), K));
            const float *bias = nullptr;
            if constexpr (std::is_same_v<decltype(lin), llm::LinearOp>)
              if (Value b = lin.getBias()) {
                const WeightBinding *bw = weightOf(b);
                if (static_cast<int64_t>(bw->vector.size()) != N)
                  return opError(op, llvm::formatv("bias has {0} elements, "
                                                   "the weight {1} rows",
                                                   bw->vector.size(), N));
                bias = bw->vector.data();
              }
            SmallVector<int64_t, 4> shape(x.shape);
            shape.back() = N;
            auto out = makeF32(shape);
            int64_t rows = x.numel() / K;
            if (w->quant)
              linear(x.f.data(), rows, *w->quant, bias, out->f.data());
            else
              linear(x.f.data(), rows, w->dense, bias, out->f.data());
            setTensor(lin.getResult(), out);
            return Error::success();
          })
          .Case([&](llm::RMSNormOp n) -> Error {
            Tensor &x = tensorOf(n.getInput());
            const WeightBinding *w = weightOf(n.getWeight());
            int64_t dim = x.shape.back();
            if (static_cast<int64_t>(w->vector.size()) != dim)
              return opError(op, llvm::formatv("input has {0} features, the "
                                               "weight {1}",
                                               dim, w->vector.size()));
            auto out = makeF32(x.shape);
            rmsNorm(x.f.data(), x.numel() / dim, dim, w->vector.data(),
                    n.getEpsilon().convertToFloat(),
                    n.getStyle() == llm::NormStyle::Gemma, out->f.data());
            setTensor(n.getResult(), out);
            return Error::success();
          })
          .Case([&](llm::RopeOp r) -> Error {
            Tensor &x = tensorOf(r.getInput());
            auto out = std::make_shared<Tensor>(x);
            int64_t offset = env[r.getOffset()].index;
            RopeParams p = llm::ropeParamsOf(r);
            if (p.rotaryDim > x.shape[2])
              return opError(op, "rotary_dim exceeds head_dim");
            applyRope(out->f.data(), x.shape[0], x.shape[1], x.shape[2], offset,
                      p);
            setTensor(r.getResult(), out);
            return Error::success();
          })
          .Case([&](llm::AttentionOp a) -> Error {
            Tensor &q = tensorOf(a.getQuery());
            Tensor &k = tensorOf(a.getKey());
            Tensor &v = tensorOf(a.getValue());
            int64_t T = q.shape[0], nh = q.shape[1], hd = q.shape[2];
            int64_t S = k.shape[0], nkv = k.shape[1], hdv = v.shape[2];
            if (S < T)
              return opError(
                  op, llvm::formatv("{0} queries but only {1} keys", T, S));
            if (nkv == 0 || nh % nkv != 0 || k.shape[2] != hd ||
                v.shape[0] != S || v.shape[1] != nkv)
              return opError(op, "query/key/value shapes disagree");
            AttentionParams p;
            p.scale = a.getScale().convertToFloat();
            p.causal = a.getCausal();
            p.slidingWindow = a.getSlidingWindow().value_or(0);
            if (auto c = a.getLogitSoftcap())
              p.logitSoftcap = c->convertToFloat();
            auto out = makeF32({T, nh, hdv});
            attention(q.f.data(), k.f.data(), v.f.data(), T, S, nh, nkv, hd,
                      hdv, p, out->f.data());
            setTensor(a.getResult(), out);
            return Error::success();
          })
          .Case([&](llm::KVCacheAppendOp a) -> Error {
            CacheState *c = env[a.getCache()].cache;
            Tensor &k = tensorOf(a.getKey());
            Tensor &v = tensorOf(a.getValue());
            int64_t offset = env[a.getOffset()].index;
            int64_t T = k.shape[0];
            if (k.shape != v.shape || k.shape.size() != 3 ||
                k.shape[1] != c->heads || k.shape[2] != c->headDim)
              return opError(op,
                             llvm::formatv("key {0} and value {1} must both be "
                                           "[T, {2}, {3}] for this cache",
                                           shapeStr(k.shape), shapeStr(v.shape),
                                           c->heads, c->headDim));
            if (offset < 0 || offset + T > c->maxLength)
              return opError(
                  op, llvm::formatv("positions [{0}, {1}) exceed the cache's "
                                    "max_length {2}",
                                    offset, offset + T, c->maxLength));
            if (offset > c->filled)
              return opError(
                  op, llvm::formatv("append at {0} would leave a gap after "
                                    "the {1} cached positions",
                                    offset, c->filled));
            int64_t row = c->heads * c->headDim;
            c->keys.resize((offset + T) * row);
            c->values.resize((offset + T) * row);
            std::copy(k.f.begin(), k.f.end(), c->keys.begin() + offset * row);
            std::copy(v.f.begin(), v.f.end(), c->values.begin() + offset * row);
            c->filled = offset + T;
            env[a.getResult()].cache = c;
            return Error::success();
          })
          .Case([&](llm::KVCacheReadOp r) -> Error {
            CacheState *c = env[r.getCache()].cache;
            int64_t len = env[r.getLength()].index;
            if (len < 0 || len > c->filled)
              return opError(op, llvm::formatv("reads {0} positions but only "
                                               "{1} are cached",
                                               len, c->filled));
            int64_t row = c->heads * c->headDim;
            auto k = makeF32({len, c->heads, c->headDim});
            auto v = makeF32({len, c->heads, c->headDim});
            std::copy(c->keys.begin(), c->keys.begin() + len * row,
                      k->f.begin());
            std::copy(c->values.begin(), c->values.begin() + len * row,
                      v->f.begin());
            setTensor(r.getKey(), k);
            setTensor(r.getValue(), v);
            return Error::success();
          })
          .Case([&](llm::GatedMLPOp m) -> Error {
            Tensor &x = tensorOf(m.getInput());
            auto dims = [](const WeightBinding *w) {
              return w->quant ? std::make_pair(w->quant->rows, w->quant->cols)
                              : std::make_pair(w->dense.rows, w->dense.cols);
            };
            const WeightBinding *g = weightOf(m.getGate());
            const WeightBinding *u = weightOf(m.getUp());
            const WeightBinding *d = weightOf(m.getDown());
            auto [I, H] = dims(g);
            // Dynamic weight shapes pass the verifier; the GEMVs below
            // need them consistent.
            if (dims(u) != std::make_pair(I, H) ||
                dims(d) != std::make_pair(H, I))
              return opError(op, "gate, up and down weight shapes disagree "
                                 "at run time");
            if (x.shape.back() != H)
              return opError(op, llvm::formatv("input has {0} features, the "
                                               "gate/up weights expect {1}",
                                               x.shape.back(), H));
            int64_t rows = x.numel() / H;
            std::vector<float> gate(rows * I), up(rows * I);
            auto apply = [&](const WeightBinding *w, const float *in,
                             float *y) {
              if (w->quant)
                linear(in, rows, *w->quant, nullptr, y);
              else
                linear(in, rows, w->dense, nullptr, y);
            };
            apply(g, x.f.data(), gate.data());
            apply(u, x.f.data(), up.data());
            llm::Activation act = m.getActivation();
            for (int64_t i = 0; i < rows * I; ++i) {
              float a = act == llm::Activation::Silu   ? silu(gate[i])
                        : act == llm::Activation::Gelu ? geluErf(gate[i])
                                                       : geluTanh(gate[i]);
              gate[i] = a * up[i];
            }
            auto out = makeF32(x.shape);
            apply(d, gate.data(), out->f.data());
            setTensor(m.getResult(), out);
            return Error::success();
          })
          .Case<llm::AddOp, llm::SubOp, llm::MulOp, llm::DivOp, llm::MaximumOp,
                llm::MinimumOp, llm::PowOp>([&](auto bin) -> Error {
            Tensor &a = tensorOf(bin.getLhs());
            Tensor &b = tensorOf(bin.getRhs());
            if (a.shape != b.shape)
              return opError(op, "operand shapes differ at run time");
            auto out = makeF32(a.shape);
            using OpT = decltype(bin);
            for (size_t i = 0; i < a.f.size(); ++i) {
              float x = a.f[i], y = b.f[i];
              float r;
              if constexpr (std::is_same_v<OpT, llm::AddOp>)
                r = x + y;
              else if constexpr (std::is_same_v<OpT, llm::SubOp>)
                r = x - y;
              else if constexpr (std::is_same_v<OpT, llm::MulOp>)
                r = x * y;
              else if constexpr (std::is_same_v<OpT, llm::DivOp>)
                r = x / y;
              else if constexpr (std::is_same_v<OpT, llm::MinimumOp>)
                // torch.minimum: NaN in either operand gives NaN.
                r = std::isnan(x) || std::isnan(y) ? x + y : std::min(x, y);
              else if constexpr (std::is_same_v<OpT, llm::PowOp>)
                r = std::pow(x, y);
              else
                r = std::max(x, y);
              out->f[i] = r;
            }
            setTensor(bin.getResult(), out);
            return Error::success();
          })
          .Case<llm::NegOp, llm::ExpOp, llm::TanhOp, llm::RsqrtOp,
                llm::SigmoidOp, llm::SiluOp, llm::GeluOp, llm::ScaleOp,
                llm::SqrtOp, llm::LogOp, llm::CosOp, llm::SinOp, llm::AbsOp,
                llm::ErfOp, llm::ReciprocalOp, llm::ReluOp>(
              [&](auto un) -> Error {
                Tensor &x = tensorOf(un.getInput());
                auto out = makeF32(x.shape);
                using OpT = decltype(un);
                for (size_t i = 0; i < x.f.size(); ++i) {
                  float v = x.f[i];
                  float r;
                  if constexpr (std::is_same_v<OpT, llm::NegOp>)
                    r = -v;
                  else if constexpr (std::is_same_v<OpT, llm::ExpOp>)
                    r = std::exp(v);
                  else if constexpr (std::is_same_v<OpT, llm::TanhOp>)
                    r = std::tanh(v);
                  else if constexpr (std::is_same_v<OpT, llm::RsqrtOp>)
                    r = 1.0f / std::sqrt(v);
                  else if constexpr (std::is_same_v<OpT, llm::SigmoidOp>)
                    r = sigmoid(v);
                  else if constexpr (std::is_same_v<OpT, llm::SiluOp>)
                    r = silu(v);
                  else if constexpr (std::is_same_v<OpT, llm::GeluOp>)
                    r = un.getApproximate() ? geluTanh(v) : geluErf(v);
                  else if constexpr (std::is_same_v<OpT, llm::SqrtOp>)
                    r = std::sqrt(v);
                  else if constexpr (std::is_same_v<OpT, llm::LogOp>)
                    r = std::log(v);
                  else if constexpr (std::is_same_v<OpT, llm::CosOp>)
                    r = std::cos(v);
                  else if constexpr (std::is_same_v<OpT, llm::SinOp>)
                    r = std::sin(v);
                  else if constexpr (std::is_same_v<OpT, llm::AbsOp>)
                    r = std::fabs(v);
                  else if constexpr (std::is_same_v<OpT, llm::ErfOp>)
                    r = std::erf(v);
                  else if constexpr (std::is_same_v<OpT, llm::ReciprocalOp>)
                    r = 1.0f / v;
                  else if constexpr (std::is_same_v<OpT, llm::ReluOp>)
                    r = v < 0.0f ? 0.0f : v; // NaN passes through

                  else
                    r = v * un.getFactor().convertToFloat();
                  out->f[i] = r;
                }
                setTensor(un.getResult(), out);
                return Error::success();
              })
          .Case([&](llm::CastOp c) -> Error {
            Tensor &x = tensorOf(c.getInput());
            auto out = std::make_shared<Tensor>(x);
            Type elem = cast<ShapedType>(c.getType()).getElementType();
            for (float &v : out->f) {
              if (elem.isBF16())
                v = bf16ToFloat(floatToBf16(v));
              else if (elem.isF16())
                v = f16ToFloat(floatToF16(v));
            }
            setTensor(c.getResult(), out);
            return Error::success();
          })
          .Case([&](llm::ReduceOp r) -> Error {
            Tensor &x = tensorOf(r.getInput());
            AxisView v = axisView(x.shape, r.getAxis());
            SmallVector<int64_t, 4> shape(x.shape);
            if (r.getKeepDim())
              shape[r.getAxis()] = 1;
            else
              shape.erase(shape.begin() + r.getAxis());
            auto out = makeF32(shape);
            for (int64_t o = 0; o < v.outer; ++o)
              for (int64_t in = 0; in < v.inner; ++in) {
                llm::ReduceKind kind = r.getKind();
                const float inf = std::numeric_limits<float>::infinity();
                float acc = kind == llm::ReduceKind::Max    ? -inf
                            : kind == llm::ReduceKind::Min  ? inf
                            : kind == llm::ReduceKind::Prod ? 1.0f
                                                            : 0.0f;
                for (int64_t j = 0; j < v.n; ++j) {
                  float e = x.f[(o * v.n + j) * v.inner + in];
                  switch (kind) {
                  case llm::ReduceKind::Max:
                    acc = std::max(acc, e);
                    break;
                  case llm::ReduceKind::Min:
                    acc = std::min(acc, e);
                    break;
                  case llm::ReduceKind::Prod:
                    acc *= e;
                    break;
                  case llm::ReduceKind::Sum:
                  case llm::ReduceKind::Mean:
                    acc += e;
                    break;
                  }
                }
                if (r.getKind() == llm::ReduceKind::Mean)
                  acc /= static_cast<float>(v.n);
                out->f[o * v.inner + in] = acc;
              }
            setTensor(r.getResult(), out);
            return Error::success();
          })
          .Case([&](llm::SoftmaxOp s) -> Error {
            Tensor &x = tensorOf(s.getInput());
            AxisView v = axisView(x.shape, s.getAxis());
            auto out = makeF32(x.shape);
            std::vector<float> row(v.n);
            for (int64_t o = 0; o < v.outer; ++o)
              for (int64_t in = 0; in < v.inner; ++in) {
                for (int64_t j = 0; j < v.n; ++j)
                  row[j] = x.f[(o * v.n + j) * v.inner + in];
                softmaxRows(row.data(), 1, v.n);
                for (int64_t j = 0; j < v.n; ++j)
                  out->f[(o * v.n + j) * v.inner + in] = row[j];
              }
            setTensor(s.getResult(), out);
            return Error::success();
          })
          .Case([&](llm::ArgmaxOp a) -> Error {
            Tensor &x = tensorOf(a.getInput());
            int64_t n = x.shape.back();
            auto out = std::make_shared<Tensor>();
            out->isInt = true;
            out->shape.assign(x.shape.begin(), x.shape.end() - 1);
            for (int64_t r = 0; r < x.numel() / n; ++r) {
              const float *row = x.f.data() + r * n;
              out->i.push_back(std::max_element(row, row + n) - row);
            }
            setTensor(a.getResult(), out);
            return Error::success();
          })
          .Case([&](llm::ReshapeOp r) -> Error {
            Tensor &x = tensorOf(r.getInput());
            auto type = cast<RankedTensorType>(r.getType());
            int64_t known = 1;
            for (int64_t d : type.getShape())
              if (!ShapedType::isDynamic(d))
                known *= d;
            if (known == 0 || x.numel() % known != 0)
              return opError(op, llvm::formatv("cannot reshape {0} elements "
                                               "into {1}",
                                               x.numel(), type));
            auto out = std::make_shared<Tensor>(x);
            out->shape.clear();
            for (int64_t d : type.getShape())
              out->shape.push_back(ShapedType::isDynamic(d) ? x.numel() / known
                                                            : d);
            if (out->numel() != x.numel())
              return opError(op, llvm::formatv("cannot reshape {0} elements "
                                               "into {1}",
                                               x.numel(), type));
            setTensor(r.getResult(), out);
            return Error::success();
          })
          .Case([&](llm::TransposeOp t) -> Error {
            Tensor &x = tensorOf(t.getInput());
            ArrayRef<int64_t> perm = t.getPermutation();
            int64_t rank = x.shape.size();
            SmallVector<int64_t, 4> shape, inStride(rank, 1);
            for (int64_t i = rank - 2; i >= 0; --i)
              inStride[i] = inStride[i + 1] * x.shape[i + 1];
            for (int64_t p : perm)
              shape.push_back(x.shape[p]);
            auto out = makeLike(x, shape);
            std::vector<int64_t> source(out->numel());
            SmallVector<int64_t, 4> idx(rank, 0);
            for (int64_t lin = 0; lin < out->numel(); ++lin) {
              int64_t src = 0;
              for (int64_t i = 0; i < rank; ++i)
                src += idx[i] * inStride[perm[i]];
              source[lin] = src;
              for (int64_t i = rank - 1; i >= 0; --i) {
                if (++idx[i] < shape[i])
                  break;
                idx[i] = 0;
              }
            }
            onData(x, *out, [&](const auto &in, auto &o) {
              for (size_t lin = 0; lin < source.size(); ++lin)
                o[lin] = in[source[lin]];
            });
            setTensor(t.getResult(), out);
            return Error::success();
          })
          .Case([&](llm::ConcatOp c) -> Error {
            int64_t axis = c.getAxis();
            SmallVector<int64_t, 4> shape(tensorOf(c.getInputs()[0]).shape);
            shape[axis] = 0;
            for (Value in : c.getInputs()) {
              Tensor &t = tensorOf(in);
              for (size_t i = 0; i < shape.size(); ++i)
                if (static_cast<int64_t>(i) != axis && t.shape[i] != shape[i])
                  return opError(op, "inputs disagree outside the axis");
              shape[axis] += t.shape[axis];
            }
            auto out = makeLike(tensorOf(c.getInputs()[0]), shape);
            AxisView ov = axisView(shape, axis);
            int64_t at = 0;
            for (Value in : c.getInputs()) {
              Tensor &t = tensorOf(in);
              AxisView v = axisView(t.shape, axis);
              onData(t, *out, [&](const auto &src, auto &dst) {
                for (int64_t o = 0; o < v.outer; ++o)
                  std::copy_n(src.begin() + o * v.n * v.inner, v.n * v.inner,
                              dst.begin() + (o * ov.n + at) * ov.inner);
              });
              at += v.n;
            }
            setTensor(c.getResult(), out);
            return Error::success();
          })
          .Case([&](llm::SliceOp s) -> Error {
            Tensor &x = tensorOf(s.getInput());
            int64_t axis = s.getAxis();
            int64_t dim = x.shape[axis];
            int64_t start =
                s.getStart() < 0 ? dim + s.getStart() : s.getStart();
            if (start < 0 || start + s.getSize() > dim)
              return opError(op, llvm::formatv("slice [{0}, +{1}) out of range "
                                               "for size {2}",
                                               s.getStart(), s.getSize(), dim));
            SmallVector<int64_t, 4> shape(x.shape);
            shape[axis] = s.getSize();
            auto out = makeLike(x, shape);
            AxisView v = axisView(x.shape, axis);
            onData(x, *out, [&](const auto &src, auto &dst) {
              for (int64_t o = 0; o < v.outer; ++o)
                std::copy_n(src.begin() + (o * v.n + start) * v.inner,
                            s.getSize() * v.inner,
                            dst.begin() + o * s.getSize() * v.inner);
            });
            setTensor(s.getResult(), out);
            return Error::success();
          })
          .Case([&](llm::GatherOp g) -> Error {
            Tensor &x = tensorOf(g.getInput());
            Tensor &idx = tensorOf(g.getIndices());
            int64_t axis = g.getAxis();
            AxisView v = axisView(x.shape, axis);
            SmallVector<int64_t, 4> shape(x.shape.begin(),
                                          x.shape.begin() + axis);
            shape.append(idx.shape.begin(), idx.shape.end());
            shape.append(x.shape.begin() + axis + 1, x.shape.end());
            auto out = makeLike(x, shape);
            int64_t count = idx.numel();
            for (int64_t j = 0; j < count; ++j) {
              int64_t at = idx.i[j];
              if (at < -v.n || at >= v.n)
                return opError(op, llvm::formatv("index {0} out of range "
                                                 "for size {1}",
                                                 at, v.n));
            }
            onData(x, *out, [&](const auto &src, auto &dst) {
              for (int64_t o = 0; o < v.outer; ++o)
                for (int64_t j = 0; j < count; ++j) {
                  int64_t at = idx.i[j] < 0 ? idx.i[j] + v.n : idx.i[j];
                  std::copy_n(src.begin() + (o * v.n + at) * v.inner, v.inner,
                              dst.begin() + (o * count + j) * v.inner);
                }
            });
            setTensor(g.getResult(), out);
            return Error::success();
          })
          .Default(
              [&](Operation *) -> Error { return executeGraphOp(op, env); });
  if (err)
    return err;

  // Enforce the result types' static dimensions on the runtime shapes
  // (weights were checked against the checkpoint when they were bound).
  if (isa<llm::WeightOp>(op))
    return Error::success();
  for (Value r : op->getResults()) {
    auto type = dyn_cast<RankedTensorType>(r.getType());
    if (!type)
      continue;
    const TensorPtr &t = env[r].tensor;
    if (!t || static_cast<int64_t>(t->shape.size()) != type.getRank())
      return opError(op, "result rank differs from its type at run time");
    if (t->isInt != isa<IntegerType>(type.getElementType()))
      return opError(op, llvm::formatv("result holds {0} data at run time but "
                                       "has type {1}",
                                       t->isInt ? "integer" : "float", type));
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (!type.isDynamicDim(i) && type.getDimSize(i) != t->shape[i])
        return opError(op, llvm::formatv("result has shape {0} at run time "
                                         "but type {1}",
                                         shapeStr(t->shape), type));
  }
  return Error::success();
}

namespace {
/// For every element of a tensor of shape `out`, the linear index of the
/// element of a tensor of shape `in` that numpy broadcasting reads (`in`
/// right-aligned; its size-1 and missing dimensions repeat). Fails when a
/// dimension of `in` is neither 1 nor the matching one of `out`.
Expected<std::vector<int64_t>> broadcastSource(ArrayRef<int64_t> in,
                                               ArrayRef<int64_t> out) {
  int64_t rank = out.size(), lead = rank - static_cast<int64_t>(in.size());
  if (lead < 0)
    return llvm::createStringError(
        llvm::formatv("cannot broadcast {0} to the lower rank {1}",
                      shapeStr(in), shapeStr(out)));
  SmallVector<int64_t, 4> stride(rank, 0);
  int64_t step = 1;
  for (int64_t i = in.size() - 1; i >= 0; --i) {
    if (in[i] != 1 && in[i] != out[lead + i])
      return llvm::createStringError(llvm::formatv(
          "cannot broadcast {0} to {1}", shapeStr(in), shapeStr(out)));
    stride[lead + i] = in[i] == 1 ? 0 : step;
    step *= in[i];
  }
  int64_t numel = std::accumulate(out.begin(), out.end(), int64_t(1),
                                  std::multiplies<int64_t>());
  std::vector<int64_t> source(numel);
  SmallVector<int64_t, 4> idx(rank, 0);
  int64_t at = 0;
  for (int64_t lin = 0; lin < numel; ++lin) {
    source[lin] = at;
    for (int64_t i = rank - 1; i >= 0; --i) {
      at += stride[i];
      if (++idx[i] < out[i])
        break;
      at -= stride[i] * out[i];
      idx[i] = 0;
    }
  }
  return source;
}

LinearWeight linearWeight(const WeightBinding *w) {
  LinearWeight lw;
  if (w->quant)
    lw.quant = w->quant.get();
  else
    lw.dense = &w->dense;
  return lw;
}

GateActivation gateActivationOf(llm::Activation a) {
  switch (a) {
  case llm::Activation::Silu:
    return GateActivation::Silu;
  case llm::Activation::Gelu:
    return GateActivation::Gelu;
  case llm::Activation::GeluTanh:
    return GateActivation::GeluTanh;
  }
  return GateActivation::Silu;
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}
} // namespace

Error Interpreter::Impl::executeGraphOp(Operation *op, Env &env) {
  auto tensorOf = [&](Value v) -> Tensor & { return ::tensorOf(env, v); };
  auto setTensor = [&](Value v, TensorPtr t) { env[v].tensor = std::move(t); };
  std::vector<std::unique_ptr<WeightBinding>> temps;
  auto weightOf = [&](Value v) { return this->weightOf(env, v, temps); };

  return llvm::TypeSwitch<Operation *, Error>(op)
      .Case([&](llm::MatmulOp m) -> Error {
        Tensor &a = tensorOf(m.getLhs());
        Tensor &b = tensorOf(m.getRhs());
        int64_t ra = a.shape.size(), rb = b.shape.size();
        int64_t M = a.shape[ra - 2], K = a.shape[ra - 1];
        int64_t N = b.shape[rb - 1];
        if (b.shape[rb - 2] != K)
          return opError(op,
                         llvm::formatv("contraction sizes differ at run "
                                       "time: {0} x {1}",
                                       shapeStr(a.shape), shapeStr(b.shape)));
        ArrayRef<int64_t> batchA = ArrayRef<int64_t>(a.shape).drop_back(2);
        ArrayRef<int64_t> batchB = ArrayRef<int64_t>(b.shape).drop_back(2);
        auto batch = llm::broadcastShapes(batchA, batchB);
        if (failed(batch))
          return opError(op,
                         llvm::formatv("batch dimensions of {0} and {1} "
                                       "do not broadcast",
                                       shapeStr(a.shape), shapeStr(b.shape)));
        auto srcA = broadcastSource(batchA, *batch);
        auto srcB = broadcastSource(batchB, *batch);
        if (!srcA || !srcB) {
          llvm::consumeError(srcA.takeError());
          llvm::consumeError(srcB.takeError());
          return opError(op, "batch dimensions do not broadcast");
        }
        SmallVector<int64_t, 4> shape(batch->begin(), batch->end());
        shape.push_back(M);
        shape.push_back(N);
        auto out = makeF32(shape);
        for (size_t bi = 0; bi < srcA->size(); ++bi) {
          const float *A = a.f.data() + (*srcA)[bi] * M * K;
          const float *B = b.f.data() + (*srcB)[bi] * K * N;
          float *C = out->f.data() + bi * M * N;
          // k outermost per row: each C[m, n] sums its products in
          // increasing k.
          for (int64_t i = 0; i < M; ++i)
            for (int64_t k = 0; k < K; ++k) {
              float av = A[i * K + k];
              for (int64_t j = 0; j < N; ++j)
                C[i * N + j] += av * B[k * N + j];
            }
        }
        setTensor(m.getResult(), out);
        return Error::success();
      })
      .Case([&](llm::BroadcastOp b) -> Error {
        Tensor &x = tensorOf(b.getInput());
        auto type = cast<RankedTensorType>(b.getType());
        // Dynamic result dimensions take the input's size (or 1 if the
        // input lacks the dimension).
        SmallVector<int64_t, 4> shape;
        int64_t lead = type.getRank() - static_cast<int64_t>(x.shape.size());
        for (int64_t i = 0; i < type.getRank(); ++i)
          shape.push_back(!type.isDynamicDim(i) ? type.getDimSize(i)
                          : i >= lead           ? x.shape[i - lead]
                                                : 1);
        auto source = broadcastSource(x.shape, shape);
        if (!source)
          return opError(op, llvm::toString(source.takeError()));
        auto out = makeLike(x, shape);
        onData(x, *out, [&](const auto &in, auto &o) {
          for (size_t i = 0; i < source->size(); ++i)
            o[i] = in[(*source)[i]];
        });
        setTensor(b.getResult(), out);
        return Error::success();
      })
      .Case([&](llm::CompareOp c) -> Error {
        Tensor &a = tensorOf(c.getLhs());
        Tensor &b = tensorOf(c.getRhs());
        if (a.shape != b.shape)
          return opError(op, "operand shapes differ at run time");
        auto out = std::make_shared<Tensor>();
        out->isInt = true;
        out->shape = a.shape;
        out->i.resize(a.numel());
        llm::ComparePredicate pred = c.getPredicate();
        auto cmp = [pred](auto x, auto y) -> bool {
          switch (pred) {
          case llm::ComparePredicate::Eq:
            return x == y;
          case llm::ComparePredicate::Ne:
            return x != y;
          case llm::ComparePredicate::Lt:
            return x < y;
          case llm::ComparePredicate::Le:
            return x <= y;
          case llm::ComparePredicate::Gt:
            return x > y;
          case llm::ComparePredicate::Ge:
            return x >= y;
          }
          return false;
        };
        for (int64_t i = 0; i < a.numel(); ++i)
          out->i[i] = a.isInt ? cmp(a.i[i], b.i[i]) : cmp(a.f[i], b.f[i]);
        setTensor(c.getResult(), out);
        return Error::success();
      })
      .Case([&](llm::SelectOp sel) -> Error {
        Tensor &cond = tensorOf(sel.getCondition());
        Tensor &a = tensorOf(sel.getTrueValue());
        Tensor &b = tensorOf(sel.getFalseValue());
        if (cond.shape != a.shape || a.shape != b.shape)
          return opError(op, "operand shapes differ at run time");
        auto out = makeLike(a, a.shape);
        for (int64_t i = 0; i < a.numel(); ++i) {
          if (a.isInt)
            out->i[i] = cond.i[i] ? a.i[i] : b.i[i];
          else
            out->f[i] = cond.i[i] ? a.f[i] : b.f[i];
        }
        setTensor(sel.getResult(), out);
        return Error::success();
      })
      .Case([&](llm::ConvertOp c) -> Error {
        Tensor &x = tensorOf(c.getInput());
        Type elem = cast<RankedTensorType>(c.getType()).getElementType();
        auto out = std::make_shared<Tensor>();
        out->shape = x.shape;
        int64_t n = x.numel();
        if (elem.isF32()) {
          out->f.resize(n);
          for (int64_t i = 0; i < n; ++i)
            out->f[i] = x.isInt ? static_cast<float>(x.i[i]) : x.f[i];
        } else if (elem.isInteger(1)) {
          out->isInt = true;
          out->i.resize(n);
          for (int64_t i = 0; i < n; ++i)
            out->i[i] = x.isInt ? x.i[i] != 0 : x.f[i] != 0.0f;
        } else {
          out->isInt = true;
          out->i.resize(n);
          for (int64_t i = 0; i < n; ++i) {
            if (x.isInt) {
              out->i[i] = x.i[i];
              continue;
            }
            float v = x.f[i];
            // [-2^63, 2^63) is exactly the range that truncates into i64.
            if (!(v >= -0x1p63f && v < 0x1p63f))
              return opError(op, llvm::formatv("element {0} = {1} does not "
                                               "fit in i64",
                                               i, v));
            out->i[i] = static_cast<int64_t>(v);
          }
        }
        setTensor(c.getResult(), out);
        return Error::success();
      })
      .Case([&](llm::NonzeroOp nz) -> Error {
        Tensor &x = tensorOf(nz.getInput());
        int64_t rank = x.shape.size(), n = x.numel();
        auto want = cast<RankedTensorType>(nz.getType()).getDimSize(0);
        auto out = std::make_shared<Tensor>();
        out->isInt = true;
        out->shape = {want, rank};
        out->i.assign(want * rank, 0);
        int64_t count = 0;
        for (int64_t e = 0; e < n; ++e) {
          bool set = x.isInt ? x.i[e] != 0 : x.f[e] != 0.0f;
          if (!set)
            continue;
          if (count < want) {
            // The row-major multi-index of element e.
            int64_t rest = e;
            for (int64_t d = rank - 1; d >= 0; --d) {
              out->i[count * rank + d] = rest % x.shape[d];
              rest /= x.shape[d];
            }
          }
          ++count;
        }
        if (count != want)
          return opError(
              op, llvm::formatv("{0} nonzero elements, the graph was traced "
                                "with {1} (its shape is specialised to the "
                                "traced data; raise the graph or re-trace "
                                "with these inputs)",
                                count, want));
        setTensor(nz.getResult(), out);
        return Error::success();
      })
      .Case([&](llm::TopkOp t) -> Error {
        Tensor &x = tensorOf(t.getInput());
        int64_t axis = normalizeAxis(t.getAxis(), x.shape.size());
        AxisView v = axisView(x.shape, axis);
        int64_t k = t.getK();
        if (k > v.n)
          return opError(
              op, llvm::formatv("k = {0} exceeds the axis size {1}", k, v.n));
        SmallVector<int64_t, 4> shape(x.shape);
        shape[axis] = k;
        auto values = makeF32(shape);
        auto indices = std::make_shared<Tensor>();
        indices->isInt = true;
        indices->shape = shape;
        indices->i.resize(values->numel());
        topk(x.f.data(), v.outer, v.n, v.inner, k, t.getLargest(),
             values->f.data(), indices->i.data());
        setTensor(t.getValues(), values);
        setTensor(t.getIndices(), indices);
        return Error::success();
      })
      .Case([&](llm::CumsumOp c) -> Error {
        Tensor &x = tensorOf(c.getInput());
        int64_t axis = normalizeAxis(c.getAxis(), x.shape.size());
        AxisView v = axisView(x.shape, axis);
        auto out = makeLike(x, x.shape);
        bool exclusive = c.getExclusive(), reverse = c.getReverse();
        onData(x, *out, [&](const auto &in, auto &o) {
          using T = typename std::decay_t<decltype(in)>::value_type;
          // i64 sums wrap like numpy; unsigned arithmetic avoids UB.
          using Acc = std::conditional_t<std::is_integral_v<T>, uint64_t, T>;
          for (int64_t oi = 0; oi < v.outer; ++oi)
            for (int64_t ii = 0; ii < v.inner; ++ii) {
              Acc acc = 0;
              for (int64_t s = 0; s < v.n; ++s) {
                int64_t j = reverse ? v.n - 1 - s : s;
                int64_t at = (oi * v.n + j) * v.inner + ii;
                Acc e = static_cast<Acc>(in[at]);
                if (!exclusive)
                  acc += e;
                o[at] = static_cast<T>(acc);
                if (exclusive)
                  acc += e;
              }
            }
        });
        setTensor(c.getResult(), out);
        return Error::success();
      })
      .Case([&](llm::LayerNormOp ln) -> Error {
        Tensor &x = tensorOf(ln.getInput());
        int64_t axis = normalizeAxis(ln.getAxis(), x.shape.size());
        int64_t n = 1;
        for (size_t i = axis; i < x.shape.size(); ++i)
          n *= x.shape[i];
        const float *w = nullptr, *b = nullptr;
        for (auto [v, ptr] :
             {std::pair<Value, const float **>{ln.getWeight(), &w},
              {ln.getBias(), &b}}) {
          if (!v)
            continue;
          Tensor &t = tensorOf(v);
          if (t.numel() != n)
            return opError(op, llvm::formatv("weight/bias has {0} elements, "
                                             "the normalised shape {1}",
                                             t.numel(), n));
          *ptr = t.f.data();
        }
        auto out = makeF32(x.shape);
        layerNorm(x.f.data(), n ? x.numel() / n : 0, n, w, b,
                  ln.getEpsilon().convertToFloat(), out->f.data());
        setTensor(ln.getResult(), out);
        return Error::success();
      })
      .Case([&](llm::MoEOp m) -> Error {
        Tensor &x = tensorOf(m.getInput());
        int64_t T = x.shape[0], H = x.shape[1];
        const WeightBinding *router = weightOf(m.getRouterWeight());
        int64_t E = m.getNumExperts();
        if (router->dense.cols != H || router->dense.rows != E)
          return opError(op, llvm::formatv("router weight is [{0}, {1}], "
                                           "expected [{2}, {3}]",
                                           router->dense.rows,
                                           router->dense.cols, E, H));
        const float *bias = nullptr;
        if (Value b = m.getRouterBias()) {
          const WeightBinding *bw = weightOf(b);
          if (static_cast<int64_t>(bw->vector.size()) != E)
            return opError(op, llvm::formatv("router bias has {0} elements "
                                             "for {1} experts",
                                             bw->vector.size(), E));
          bias = bw->vector.data();
        }
        std::vector<ExpertWeights> experts;
        for (int64_t e = 0; e < E; ++e)
          experts.push_back({linearWeight(weightOf(m.getGate()[e])),
                             linearWeight(weightOf(m.getUp()[e])),
                             linearWeight(weightOf(m.getDown()[e]))});
        // With a dynamic hidden size the verifier could not tie the expert
        // weights to the input; check before the GEMVs read them.
        auto fits = [&](const ExpertWeights &w) {
          return w.gate.cols() == H && w.up.cols() == H && w.down.rows() == H &&
                 w.up.rows() == w.gate.rows() && w.down.cols() == w.gate.rows();
        };
        for (auto [e, w] : llvm::enumerate(experts))
          if (!fits(w))
            return opError(op, llvm::formatv("expert {0} weights do not fit "
                                             "the hidden size {1}",
                                             e, H));
        std::optional<ExpertWeights> shared;
        if (m.hasSharedExpert())
          shared = ExpertWeights{linearWeight(weightOf(m.getSharedGate())),
                                 linearWeight(weightOf(m.getSharedUp())),
                                 linearWeight(weightOf(m.getSharedDown()))};
        if (shared && !fits(*shared))
          return opError(op, llvm::formatv("shared expert weights do not fit "
                                           "the hidden size {0}",
                                           H));
        std::optional<LinearWeight> sharedGate;
        if (Value g = m.getSharedExpertGate()) {
          if (!shared)
            return opError(op, "shared_expert_gate without a shared expert");
          sharedGate = linearWeight(weightOf(g));
          if (sharedGate->rows() != 1 || sharedGate->cols() != H)
            return opError(op, llvm::formatv("shared_expert_gate weight is "
                                             "[{0}, {1}], expected [1, {2}]",
                                             sharedGate->rows(),
                                             sharedGate->cols(), H));
        }
        MoEParams p;
        p.topK = m.getTopK();
        p.sigmoidScoring = m.getScoring() == llm::MoEScoring::Sigmoid;
        p.topkThenScore = m.getOrder() == llm::MoERoutingOrder::TopkThenScore;
        p.renormalize = m.getRenormalize();
        p.routedScalingFactor = m.getRoutedScalingFactor().convertToFloat();
        p.weightOnInput = m.getWeightOnInput();
        p.activation = gateActivationOf(m.getActivation());
        auto out = makeF32(x.shape);
        moe(x.f.data(), T, H, linearWeight(router), bias, experts,
            shared ? &*shared : nullptr, p, out->f.data(),
            sharedGate ? &*sharedGate : nullptr);
        setTensor(m.getResult(), out);
        return Error::success();
      })
      .Default([&](Operation *) -> Error {
        return opError(op, "is not supported by the reference interpreter");
      });
}

Expected<GenerationResult> pimc::ref::generateGreedy(Interpreter &interp,
                                                     ArrayRef<int64_t> prompt,
                                                     int64_t maxNewTokens,
                                                     bool keepLogits) {
  using Clock = std::chrono::steady_clock;
  GenerationResult result;
  if (prompt.empty())
    return llvm::createStringError("the prompt is empty");
  if (static_cast<int64_t>(prompt.size()) + maxNewTokens - 1 >
      interp.maxContext())
    return llvm::createStringError(llvm::formatv(
        "prompt ({0} tokens) + {1} new tokens exceed the maximum context of "
        "{2}",
        prompt.size(), maxNewTokens, interp.maxContext()));
  interp.resetCaches();
  int64_t offset = 0;
  std::vector<int64_t> step(prompt.begin(), prompt.end());
  for (int64_t i = 0; i < maxNewTokens; ++i) {
    auto start = Clock::now();
    auto logits = interp.forward(step, offset);
    if (!logits)
      return logits.takeError();
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    (i == 0 ? result.prefillSeconds : result.decodeSeconds) += secs;
    int64_t next =
        std::max_element(logits->begin(), logits->end()) - logits->begin();
    offset += step.size();
    result.tokens.push_back(next);
    if (keepLogits)
      result.logits.push_back(std::move(*logits));
    step.assign(1, next);
  }
  return result;
}
