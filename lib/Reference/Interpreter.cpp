//===- Interpreter.cpp - reference interpreter of llm IR ------------------===//
//
// A straight-line walk over the entry block: every value maps to a runtime
// value (f32 or integer tensor, index, bound weight, KV cache) and every op
// to a kernel in Kernels.h. After each op the runtime shapes are checked
// against the static dimensions of the result types, so the IR's types are
// enforced, not trusted.
//
//===----------------------------------------------------------------------===//
#include "InterpreterImpl.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>

using namespace mlir;
using namespace pimc;
using namespace pimc::ref;
using namespace pimc::ref::detail;
using llvm::Error;
using llvm::Expected;

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
      ckpt::GptqScheme scheme;
      scheme.bits = qt.getBits();
      scheme.groupSize = qt.getGroupSize();
      scheme.symmetric = qt.isSymmetric();
      scheme.zeroMinusOne = qt.getPacking() == "gptq";
      scheme.scaleDType = checkpointDType(qt.getScaleType());
      int64_t N = qt.getRows(), K = qt.getCols();
      auto parts = ckpt::findGptqTensors(*weights, name, N, K, scheme);
      auto q = parts ? ckpt::unpackGptq(*parts, N, K, scheme)
                     : Expected<QuantMatrix>(parts.takeError());
      if (!q) {
        problem(llvm::formatv("quantized weight '{0}': {1}", name,
                              llvm::toString(q.takeError())));
        return;
      }
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
                              name, shapeString(view->shape),
                              shapeString(type.getShape())));
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
    auto storage = ckpt::floatStorage(view->dtype);
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
                            name, shapeString(view->shape),
                            shapeString(type.getShape())));
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
    if (isa<llm::RecurrentStateType>(v.getType()) && !err) {
      // Every recurrent op consumes its state: one use, or none.
      if (!v.use_empty() && !v.hasOneUse())
        err = llvm::createStringError(
            "a recurrent state value has more than one use; the "
            "interpreter requires linear use of states");
      return;
    }
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
                    StringRef entryName, bool plain) {
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
                   [&](Type t) {
                     return isa<RankedTensorType>(t) || (plain && t.isIndex());
                   }) &&
      llvm::all_of(type.getResults(),
                   [](Type t) { return isa<RankedTensorType>(t); });
  if (plain && !impl->plainTensors)
    return llvm::createStringError(llvm::formatv(
        "@{0} must take tensors and indices and return tensors", entryName));
  // A one-argument tensor<?xi64> function is run the language-model way
  // only through forward(); call() works on it too.
  if (impl->plainTensors) {
    for (auto [i, t] : llvm::enumerate(type.getInputs())) {
      if (t.isIndex())
        continue;
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
      if (auto rec = dyn_cast<llm::RecurrentStateType>(type.getInput(i))) {
        auto state = std::make_unique<CacheState>();
        state->recurrent = true;
        state->stateShape.assign(rec.getShape().begin(), rec.getShape().end());
        state->state.assign(rec.getNumElements(), 0.0f);
        impl->caches.push_back(std::move(state));
        continue;
      }
      auto cache = dyn_cast<llm::KVCacheType>(type.getInput(i));
      if (!cache)
        return llvm::createStringError(
            llvm::formatv("entry argument {0} must be a !llm.kv_cache or an "
                          "!llm.recurrent_state",
                          i));
      auto state = std::make_unique<CacheState>();
      state->maxLength = cache.getMaxLength();
      state->heads = cache.getKvHeads();
      state->headDim = cache.getHeadDim();
      state->valuePrefix = cache.getValuePrefix();
      impl->maxContext = std::max(impl->maxContext, cache.getMaxLength());
      impl->caches.push_back(std::move(state));
    }
  }
  // A step without KV caches (no attention, or only recurrent states) is
  // bounded by the module's context, if it states one.
  if (!impl->plainTensors && impl->maxContext == 0) {
    auto ctx = module->getAttrOfType<IntegerAttr>("llm.max_context");
    impl->maxContext = ctx ? ctx.getInt() : int64_t(1) << 40;
  }
  if (type.getNumResults() > 0)
    if (auto logits = dyn_cast<RankedTensorType>(type.getResult(0));
        logits && logits.getRank() > 0)
      impl->vocab = logits.getShape().back();
  if (Error e = impl->checkCacheLinearity())
    return e;
  if (Error e = impl->bindWeights())
    return e;
  impl->entry.walk([&](llm::RopeOp r) {
    if (r.getKind() == llm::RopeKind::LongRope)
      impl->longRopeL0 = r.getOriginalMaxPositionEmbeddings().value_or(0);
  });
  return std::unique_ptr<Interpreter>(new Interpreter(std::move(impl)));
}

int64_t Interpreter::vocabSize() const { return impl->vocab; }
int64_t Interpreter::tokensPerStep() const {
  if (impl->plainTensors)
    return 0;
  auto ids = cast<RankedTensorType>(impl->entry.getArgument(0).getType());
  return ids.getRank() == 1 && !ids.isDynamicDim(0) ? ids.getDimSize(0) : 0;
}
int64_t Interpreter::maxContext() const { return impl->maxContext; }

void Interpreter::setRopeCallLength(int64_t n) { impl->ropeCallLength = n; }
int64_t Interpreter::longRopeL0() const { return impl->longRopeL0; }

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
    if (type.getInput(i).isIndex()) {
      if (in.dtype != HostTensor::DType::I64 || !in.shape.empty() ||
          in.i64.size() != 1)
        return llvm::createStringError(llvm::formatv(
            "input {0}: an index argument takes one i64 of shape []", i));
      env[body.getArgument(i)].index = in.i64[0];
      continue;
    }
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
                        i, shapeString(in.shape), argType));
    size_t have = in.isInteger() ? in.i64.size() : in.f32.size();
    if (static_cast<int64_t>(have) != in.numElements())
      return llvm::createStringError(llvm::formatv(
          "input {0}: shape {1} has {2} elements but {3} values were given", i,
          shapeString(in.shape), in.numElements(), have));
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
  auto tensorOf = [&](Value v) -> Tensor & { return detail::tensorOf(env, v); };
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
          .Case([&](llm::PositionsOp p) -> Error {
            int64_t n = p.getCount() ? env[p.getCount()].index
                                     : p.getType().getDimSize(0);
            int64_t offset = env[p.getOffset()].index;
            auto t = std::make_shared<Tensor>();
            t->shape = {n};
            t->isInt = true;
            for (int64_t i = 0; i < n; ++i)
              t->i.push_back(offset + i);
            setTensor(p.getResult(), t);
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
          .Case([&](llm::HeadLinearOp l) -> Error {
            Tensor &x = tensorOf(l.getInput());
            const WeightBinding *w = weightOf(l.getWeight());
            bool transposed = l.getTransposeWeight();
            if (x.shape.size() != 3 || w->shape.size() != 3 ||
                w->shape[0] != x.shape[1] ||
                w->shape[transposed ? 1 : 2] != x.shape[2])
              return opError(op, llvm::formatv("input {0} does not fit the "
                                               "per-head weight {1}",
                                               shapeString(x.shape),
                                               shapeString(w->shape)));
            int64_t heads = w->shape[0], K = x.shape[2],
                    N = w->shape[transposed ? 2 : 1];
            auto out = makeF32({x.shape[0], heads, N});
            headLinear(x.f.data(), x.shape[0], heads, K, N, w->vector.data(),
                       transposed, out->f.data());
            setTensor(l.getResult(), out);
            return Error::success();
          })
          .Case([&](llm::RMSNormOp n) -> Error {
            Tensor &x = tensorOf(n.getInput());
            const WeightBinding *w =
                n.getWeight() ? weightOf(n.getWeight()) : nullptr;
            int64_t dim = x.shape.back();
            if (w && static_cast<int64_t>(w->vector.size()) != dim)
              return opError(op, llvm::formatv("input has {0} features, the "
                                               "weight {1}",
                                               dim, w->vector.size()));
            auto out = makeF32(x.shape);
            rmsNorm(x.f.data(), x.numel() / dim, dim,
                    w ? w->vector.data() : nullptr,
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
                      p, ropeCallLength);
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
            if (auto slopes = a.getAlibiSlopes())
              p.alibiSlopes.assign(slopes->begin(), slopes->end());
            p.chunkSize = a.getChunkSize().value_or(0);
            p.temperatureFloorScale = a.getTemperatureFloorScale().value_or(0);
            if (auto t = a.getTemperatureScale())
              p.temperatureScale = t->convertToFloat();
            if (Value sinks = a.getSinks()) {
              const WeightBinding *w = weightOf(sinks);
              if (int64_t(w->vector.size()) != nh)
                return opError(op, llvm::formatv("sinks have {0} logits for "
                                                 "{1} query heads",
                                                 w->vector.size(), nh));
              p.sinks = w->vector;
            }
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
            int64_t vDim = c->valuePrefix ? c->valuePrefix : c->headDim;
            if (k.shape.size() != 3 || v.shape.size() != 3 || v.shape[0] != T ||
                k.shape[1] != c->heads || v.shape[1] != c->heads ||
                k.shape[2] != c->headDim || v.shape[2] != vDim)
              return opError(
                  op, llvm::formatv("key {0} and value {1} must be "
                                    "[T, {2}, {3}] and [T, {2}, {4}] for "
                                    "this cache",
                                    shapeString(k.shape), shapeString(v.shape),
                                    c->heads, c->headDim, vDim));
            if (c->valuePrefix)
              for (int64_t r = 0; r < T * c->heads; ++r)
                if (!std::equal(v.f.begin() + r * vDim,
                                v.f.begin() + (r + 1) * vDim,
                                k.f.begin() + r * c->headDim))
                  return opError(
                      op, llvm::formatv("the value is not the first {0} dims "
                                        "of the key, as a latent cache "
                                        "(value_prefix) stores it",
                                        vDim));
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
            std::copy(k.f.begin(), k.f.end(), c->keys.begin() + offset * row);
            if (!c->valuePrefix) {
              c->values.resize((offset + T) * row);
              std::copy(v.f.begin(), v.f.end(),
                        c->values.begin() + offset * row);
            }
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
            int64_t vDim = c->valuePrefix ? c->valuePrefix : c->headDim;
            auto k = makeF32({len, c->heads, c->headDim});
            auto v = makeF32({len, c->heads, vDim});
            std::copy(c->keys.begin(), c->keys.begin() + len * row,
                      k->f.begin());
            if (!c->valuePrefix)
              std::copy(c->values.begin(), c->values.begin() + len * row,
                        v->f.begin());
            else
              for (int64_t r = 0; r < len * c->heads; ++r)
                std::copy_n(c->keys.begin() + r * c->headDim, vDim,
                            v->f.begin() + r * vDim);
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
          .Case([&](llm::ModOp mod) -> Error {
            Tensor &a = tensorOf(mod.getLhs());
            Tensor &b = tensorOf(mod.getRhs());
            if (a.shape != b.shape)
              return opError(op, "operand shapes differ at run time");
            auto out = makeF32(a.shape);
            for (size_t i = 0; i < a.f.size(); ++i)
              out->f[i] = floorOrTruncMod(a.f[i], b.f[i], mod.getFmod());
            setTensor(mod.getResult(), out);
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
                v = roundToBf16(v);
              else if (elem.isF16())
                v = roundToF16(v);
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
          .Default([&](Operation *) -> Error {
            bool handled = false;
            if (Error e = executeRecurrentOp(op, env, handled); e || handled)
              return e;
            return executeGraphOp(op, env);
          });
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
                                         shapeString(t->shape), type));
  }
  return Error::success();
}
