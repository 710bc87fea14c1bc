//===- RecurrentOps.cpp - recurrent layers and their state ----------------===//
//
// Verifiers of !llm.recurrent_state and of the ops that update it
// (LLMRecurrentOps.td). Each checks the tokens' feature sizes against the
// state's shape, so that a state cache that does not match the config is
// refused by name before anything runs.
//
//===----------------------------------------------------------------------===//
#include "VerifyHelpers.h"

#include "pimc/Dialect/LLM/IR/LLMDialect.h"

#include <numeric>

using namespace mlir;
using namespace pimc::llm;
using namespace pimc::llm::detail;

LogicalResult
RecurrentStateType::verify(function_ref<InFlightDiagnostic()> emitError,
                           ArrayRef<int64_t> shape, Type elementType) {
  if (shape.empty() || llvm::any_of(shape, [](int64_t d) { return d <= 0; }))
    return emitError() << "recurrent_state shape must be non-empty with "
                          "positive sizes";
  if (!elementType.isF32())
    return emitError() << "recurrent_state element_type must be f32, got "
                       << elementType;
  return success();
}

int64_t RecurrentStateType::getNumElements() const {
  return std::accumulate(getShape().begin(), getShape().end(), int64_t(1),
                         std::multiplies<int64_t>());
}

ArrayRef<int64_t> pimc::llm::stateShape(Type stateType) {
  if (auto s = dyn_cast<RecurrentStateType>(stateType))
    return s.getShape();
  return cast<RankedTensorType>(stateType).getShape();
}

namespace {

/// `v` is [T, n] with T the tokens of `like` (dynamic or equal).
LogicalResult requireTokens(Operation *op, Value v, StringRef what, int64_t n,
                            Value like, StringRef meaning) {
  if (failed(requireRank(op, v, what, 2)) ||
      failed(requireDim(op, v, what, 1, n, meaning)) ||
      failed(requireDim(op, v, what, 0, ranked(like).getDimSize(0), "tokens")))
    return failure();
  return success();
}

/// A parameter vector of `n` elements (or the given shape).
LogicalResult requireShape(Operation *op, Value v, StringRef what,
                           ArrayRef<int64_t> shape) {
  auto t = ranked(v);
  if (t.getShape() != shape) {
    std::string want;
    for (int64_t d : shape)
      want += (want.empty() ? "" : "x") + std::to_string(d);
    return op->emitOpError() << what << " must be [" << want << "], got " << t;
  }
  return success();
}

LogicalResult requireStateRank(Operation *op, Value state, size_t rank,
                               StringRef layout) {
  if (stateShape(state.getType()).size() != rank)
    return op->emitOpError()
           << "state must be " << layout << ", got " << state.getType();
  return success();
}

} // namespace

LogicalResult CausalConv1dOp::verify() {
  if (failed(requireStateRank(*this, getState(), 2, "[channels, kernel - 1]")))
    return failure();
  ArrayRef<int64_t> s = stateShape(getState().getType());
  int64_t C = s[0], K = s[1] + 1;
  auto w = cast<RankedTensorType>(getWeight().getType());
  bool asStored = w.getRank() == 3 && w.getDimSize(1) == 1;
  if (failed(requireShape(*this, getWeight(), "weight",
                          asStored ? SmallVector<int64_t>{C, 1, K}
                                   : SmallVector<int64_t>{C, K})))
    return failure();
  if (getBias() && failed(requireShape(*this, getBias(), "bias", {C})))
    return failure();
  if (failed(requireRank(*this, getInput(), "input", 2)) ||
      failed(requireDim(*this, getInput(), "input", 1, C, "channels")) ||
      failed(requireTokens(*this, getResult(), "result", C, getInput(),
                           "channels")))
    return failure();
  return success();
}

int64_t SSMScanOp::getNumHeads() { return stateShape(getState().getType())[0]; }
int64_t SSMScanOp::getHeadDim() { return stateShape(getState().getType())[1]; }
int64_t SSMScanOp::getStateSize() {
  return stateShape(getState().getType())[2];
}

LogicalResult SSMScanOp::verify() {
  if (failed(requireStateRank(*this, getState(), 3,
                              "[heads, head_dim, state_size]")))
    return failure();
  int64_t nh = getNumHeads(), P = getHeadDim(), N = getStateSize();
  int64_t G = getGroups();
  if (G <= 0 || nh % G)
    return emitOpError() << "groups " << G << " must divide the " << nh
                         << " heads";
  if (getDtMax() && getDtMax()->convertToFloat() < getDtMin().convertToFloat())
    return emitOpError() << "dt_max must not be below dt_min";
  auto aLog = cast<RankedTensorType>(getALog().getType());
  bool perState = aLog.getRank() == 2;
  if (failed(requireShape(*this, getALog(), "a_log",
                          perState ? SmallVector<int64_t>{nh, N}
                                   : SmallVector<int64_t>{nh})) ||
      failed(requireShape(*this, getD(), "d", {nh})) ||
      failed(requireShape(*this, getDtBias(), "dt_bias", {nh})))
    return failure();
  if (failed(requireRank(*this, getX(), "x", 2)) ||
      failed(requireDim(*this, getX(), "x", 1, nh * P, "heads x head_dim")) ||
      failed(requireTokens(*this, getDt(), "dt", nh, getX(), "heads")) ||
      failed(requireTokens(*this, getB(), "b", G * N, getX(),
                           "groups x state_size")) ||
      failed(requireTokens(*this, getC(), "c", G * N, getX(),
                           "groups x state_size")) ||
      failed(requireTokens(*this, getResult(), "result", nh * P, getX(),
                           "heads x head_dim")))
    return failure();
  return success();
}

LogicalResult GatedDeltaRuleOp::verify() {
  if (failed(requireStateRank(*this, getState(), 3, "[value_heads, dk, dv]")))
    return failure();
  ArrayRef<int64_t> s = stateShape(getState().getType());
  int64_t nv = s[0], dk = s[1], dv = s[2];
  int64_t nk = getKeyHeads();
  if (nk <= 0 || nv % nk)
    return emitOpError() << "key_heads " << nk << " must divide the " << nv
                         << " value heads";
  if (failed(requireShape(*this, getALog(), "a_log", {nv})) ||
      failed(requireShape(*this, getDtBias(), "dt_bias", {nv})))
    return failure();
  if (failed(requireRank(*this, getQuery(), "query", 2)) ||
      failed(requireDim(*this, getQuery(), "query", 1, nk * dk,
                        "key_heads x dk")) ||
      failed(requireTokens(*this, getKey(), "key", nk * dk, getQuery(),
                           "key_heads x dk")) ||
      failed(requireTokens(*this, getValue(), "value", nv * dv, getQuery(),
                           "value_heads x dv")) ||
      failed(
          requireTokens(*this, getA(), "a", nv, getQuery(), "value_heads")) ||
      failed(
          requireTokens(*this, getB(), "b", nv, getQuery(), "value_heads")) ||
      failed(requireTokens(*this, getResult(), "result", nv * dv, getQuery(),
                           "value_heads x dv")))
    return failure();
  return success();
}

LogicalResult GatedRMSNormOp::verify() {
  if (failed(requireRank(*this, getInput(), "input", 2)))
    return failure();
  int64_t D = ranked(getInput()).getDimSize(1);
  if (ShapedType::isDynamic(D))
    return emitOpError() << "input features must be static";
  int64_t group = getGroupSize().value_or(D);
  if (group <= 0 || D % group)
    return emitOpError() << "group_size " << group << " must divide the " << D
                         << " features";
  auto w = cast<RankedTensorType>(getWeight().getType());
  if (w.getRank() != 1 || (w.getDimSize(0) != D && w.getDimSize(0) != group))
    return emitOpError() << "weight must be [" << D << "] or [" << group
                         << "] (shared by the groups), got " << w;
  return success();
}
