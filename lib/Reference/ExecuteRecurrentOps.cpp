//===- ExecuteRecurrentOps.cpp - the recurrent layers ---------------------===//
//
// The interpreter's semantics of llm.causal_conv1d, llm.ssm_scan,
// llm.gated_delta_rule and llm.gated_rms_norm (LLMRecurrentOps.td), on the
// numerics of pimc/Numerics/Recurrent.h. A recurrent op updates its
// state argument in place (linear use, checked when the interpreter is
// made) and checks that the state holds exactly the positions before the
// step: a recurrence cannot be rewound or skip positions.
//
//===----------------------------------------------------------------------===//
#include "InterpreterImpl.h"

#include "pimc/Numerics/Recurrent.h"

using namespace mlir;
using namespace pimc;
using namespace pimc::ref;
using namespace pimc::ref::detail;
using llvm::Error;

namespace {

/// The errors of `values` joined (success when every one holds a value);
/// each stays usable after.
template <typename... Ts> Error errorsOf(llvm::Expected<Ts> &...values) {
  Error all = Error::success();
  ((all = llvm::joinErrors(std::move(all), values.takeError())), ...);
  return all;
}

/// The state buffer the op updates in place. A recurrent state argument
/// is checked to hold positions [0, offset) and advanced by T positions,
/// the op's new state being the same buffer; a state given as a tensor (a
/// host function's plain value) is copied into the new state's tensor.
llvm::Expected<float *> updatedState(Operation *op, Env &env, Value stateValue,
                                     Value newState, Value offsetValue,
                                     int64_t T) {
  if (isa<RankedTensorType>(stateValue.getType())) {
    const Tensor &in = tensorOf(env, stateValue);
    auto next = makeF32(llm::stateShape(stateValue.getType()));
    if (in.isInt || in.f.size() != next->f.size())
      return opError(op, llvm::formatv("its state is {0} at run time, "
                                       "expected {1}",
                                       shapeString(in.shape),
                                       shapeString(next->shape)));
    next->f = in.f;
    env[newState].tensor = next;
    return next->f.data();
  }
  CacheState *s = env[stateValue].cache;
  int64_t offset = env[offsetValue].index;
  if (!s || !s->recurrent)
    return opError(op, "its state is not a recurrent state argument");
  if (offset != s->filled)
    return opError(op, llvm::formatv("the step starts at position {0} but the "
                                     "recurrent state holds {1} positions; a "
                                     "recurrent state cannot be rewound or "
                                     "skip positions (reset it to start a "
                                     "sequence)",
                                     offset, s->filled));
  s->filled += T;
  env[newState].cache = s;
  return s->state.data();
}

/// A [T, n] activation of the op, checked at run time.
llvm::Expected<const Tensor *> rows(Operation *op, Env &env, Value v,
                                    StringRef what, int64_t T, int64_t n) {
  const Tensor &t = tensorOf(env, v);
  if (t.isInt || t.shape.size() != 2 || t.shape[0] != T || t.shape[1] != n)
    return opError(op, llvm::formatv("{0} is {1} at run time, expected "
                                     "[{2}, {3}]",
                                     what, shapeString(t.shape), T, n));
  return &t;
}

/// A parameter (weight or tensor) widened to f32, with its element count
/// checked.
llvm::Expected<const float *> params(Operation *op, Env &env, Value v,
                                     StringRef what, int64_t n) {
  const Tensor &t = tensorOf(env, v);
  if (t.isInt || int64_t(t.f.size()) != n)
    return opError(op, llvm::formatv("{0} has {1} elements at run time, "
                                     "expected {2}",
                                     what, t.f.size(), n));
  return t.f.data();
}

Error runConv(llm::CausalConv1dOp c, Env &env) {
  Operation *op = c;
  const Tensor &u = tensorOf(env, c.getInput());
  ArrayRef<int64_t> shape = llm::stateShape(c.getState().getType());
  int64_t C = shape[0], K = shape[1] + 1, T = u.shape[0];
  auto in = rows(op, env, c.getInput(), "input", T, C);
  if (!in)
    return in.takeError();
  auto w = params(op, env, c.getWeight(), "weight", C * K);
  if (!w)
    return w.takeError();
  const float *bias = nullptr;
  if (c.getBias()) {
    auto b = params(op, env, c.getBias(), "bias", C);
    if (!b)
      return b.takeError();
    bias = *b;
  }
  auto s =
      updatedState(op, env, c.getState(), c.getNewState(), c.getOffset(), T);
  if (!s)
    return s.takeError();
  auto out = makeF32({T, C});
  causalConv1d(u.f.data(), T, C, K, *w, bias, c.getSilu(), *s, out->f.data());
  env[c.getResult()].tensor = out;
  return Error::success();
}

Error runScan(llm::SSMScanOp scan, Env &env) {
  Operation *op = scan;
  SSMShape sh;
  sh.heads = scan.getNumHeads();
  sh.headDim = scan.getHeadDim();
  sh.stateSize = scan.getStateSize();
  sh.groups = scan.getGroups();
  sh.decayPerState =
      cast<RankedTensorType>(scan.getALog().getType()).getRank() == 2;
  sh.dtMin = scan.getDtMin().convertToFloat();
  sh.clampMax = scan.getDtMax().has_value();
  sh.dtMax = sh.clampMax ? scan.getDtMax()->convertToFloat() : 0.0f;
  int64_t nh = sh.heads, T = tensorOf(env, scan.getX()).shape[0];
  int64_t GN = sh.groups * sh.stateSize;
  auto x = rows(op, env, scan.getX(), "x", T, nh * sh.headDim);
  auto dt = rows(op, env, scan.getDt(), "dt", T, nh);
  auto b = rows(op, env, scan.getB(), "b", T, GN);
  auto c = rows(op, env, scan.getC(), "c", T, GN);
  auto aLog = params(op, env, scan.getALog(), "a_log",
                     sh.decayPerState ? nh * sh.stateSize : nh);
  auto d = params(op, env, scan.getD(), "d", nh);
  auto dtBias = params(op, env, scan.getDtBias(), "dt_bias", nh);
  if (Error e = errorsOf(x, dt, b, c, aLog, d, dtBias))
    return e;
  auto s = updatedState(op, env, scan.getState(), scan.getNewState(),
                        scan.getOffset(), T);
  if (!s)
    return s.takeError();
  auto out = makeF32({T, nh * sh.headDim});
  ssmScan(sh, T, (*x)->f.data(), (*dt)->f.data(), (*b)->f.data(),
          (*c)->f.data(), *aLog, *d, *dtBias, *s, out->f.data());
  env[scan.getResult()].tensor = out;
  return Error::success();
}

Error runDeltaRule(llm::GatedDeltaRuleOp r, Env &env) {
  Operation *op = r;
  ArrayRef<int64_t> shape = llm::stateShape(r.getState().getType());
  DeltaRuleShape sh;
  sh.valueHeads = shape[0];
  sh.keyDim = shape[1];
  sh.valueDim = shape[2];
  sh.keyHeads = r.getKeyHeads();
  int64_t nv = sh.valueHeads, T = tensorOf(env, r.getQuery()).shape[0];
  auto q = rows(op, env, r.getQuery(), "query", T, sh.keyHeads * sh.keyDim);
  auto k = rows(op, env, r.getKey(), "key", T, sh.keyHeads * sh.keyDim);
  auto v = rows(op, env, r.getValue(), "value", T, nv * sh.valueDim);
  auto a = rows(op, env, r.getA(), "a", T, nv);
  auto b = rows(op, env, r.getB(), "b", T, nv);
  auto aLog = params(op, env, r.getALog(), "a_log", nv);
  auto dtBias = params(op, env, r.getDtBias(), "dt_bias", nv);
  if (Error e = errorsOf(q, k, v, a, b, aLog, dtBias))
    return e;
  auto s =
      updatedState(op, env, r.getState(), r.getNewState(), r.getOffset(), T);
  if (!s)
    return s.takeError();
  auto out = makeF32({T, nv * sh.valueDim});
  gatedDeltaRule(sh, T, (*q)->f.data(), (*k)->f.data(), (*v)->f.data(),
                 (*a)->f.data(), (*b)->f.data(), *aLog, *dtBias, *s,
                 out->f.data());
  env[r.getResult()].tensor = out;
  return Error::success();
}

Error runGatedNorm(llm::GatedRMSNormOp n, Env &env) {
  Operation *op = n;
  const Tensor &y = tensorOf(env, n.getInput());
  int64_t T = y.shape[0], D = y.shape[1];
  int64_t group = n.getGroupSize().value_or(D);
  auto z = rows(op, env, n.getGate(), "gate", T, D);
  if (!z)
    return z.takeError();
  const Tensor &w = tensorOf(env, n.getWeight());
  if (int64_t(w.f.size()) != D && int64_t(w.f.size()) != group)
    return opError(op, llvm::formatv("weight has {0} elements at run time, "
                                     "expected {1} or {2}",
                                     w.f.size(), D, group));
  auto out = makeF32({T, D});
  gatedRmsNorm(y.f.data(), (*z)->f.data(), T, D, group, w.f.data(),
               int64_t(w.f.size()), n.getEpsilon().convertToFloat(),
               n.getNormBeforeGate(), out->f.data());
  env[n.getResult()].tensor = out;
  return Error::success();
}

} // namespace

Error Interpreter::Impl::executeRecurrentOp(Operation *op, Env &env,
                                            bool &handled) {
  handled = true;
  if (auto c = dyn_cast<llm::CausalConv1dOp>(op))
    return runConv(c, env);
  if (auto s = dyn_cast<llm::SSMScanOp>(op))
    return runScan(s, env);
  if (auto r = dyn_cast<llm::GatedDeltaRuleOp>(op))
    return runDeltaRule(r, env);
  if (auto n = dyn_cast<llm::GatedRMSNormOp>(op))
    return runGatedNorm(n, env);
  handled = false;
  return Error::success();
}
