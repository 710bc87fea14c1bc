//===- PIMTensorOps.cpp - verifiers of the pim tensor-level ops -----------===//
//
// The ops convert-llm-to-pim writes into @forward (PIMTensorOps.td).
//
//===----------------------------------------------------------------------===//
#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace pimc::pim;

/// Rows N of a dense weight [N, K]; a quantized weight (an llm type) is
/// checked by the llm dialect's verifier.
static std::optional<int64_t> weightRows(Type t) {
  if (auto s = dyn_cast<RankedTensorType>(t); s && s.getRank() == 2)
    return s.getDimSize(0);
  return std::nullopt;
}

/// An expert GEMV's extra rules: E groups of the results' shapes, no
/// biases, a slot inside the routing's k.
static LogicalResult verifyExperts(GemvOp op) {
  size_t r = op.getResults().size(), n = op.getWeights().size();
  if (!op.getExperts()) {
    if (op.getExpertSlot())
      return op.emitOpError("has an expert_slot but no experts");
    if (n != r)
      return op.emitOpError()
             << "has " << r << " results for " << n << " weights";
    return success();
  }
  if (r == 0 || n % r != 0)
    return op.emitOpError() << n << " expert weights are not a whole number "
                            << "of groups of " << r << " (one per result)";
  for (size_t i = r; i < n; ++i)
    if (op.getWeights()[i].getType() != op.getWeights()[i % r].getType())
      return op.emitOpError() << "expert " << i / r << " weight " << i % r
                              << " has another type than expert 0's";
  int64_t E = int64_t(n / r);
  for (Value bias : op.getBiases()) {
    auto bt = cast<RankedTensorType>(bias.getType());
    if (bt.getRank() != 2 || bt.getDimSize(0) != E)
      return op.emitOpError() << "an expert GEMV's biases are [" << E
                              << ", N] (a row per expert), got " << bt;
  }
  auto e = cast<RankedTensorType>(op.getExperts().getType());
  if (e.getRank() != 1 || !e.getElementType().isInteger(32))
    return op.emitOpError("experts is an i32 [k] tensor");
  std::optional<int64_t> slot = op.getExpertSlot();
  if (!slot || *slot < 0 || (!e.isDynamicDim(0) && *slot >= e.getDimSize(0)))
    return op.emitOpError()
           << "expert_slot must be in [0, " << e.getDimSize(0) << ")";
  return success();
}

LogicalResult GemvOp::verify() {
  size_t n = getResults().size();
  if (getWeights().empty())
    return emitOpError("has no weights");
  if (failed(verifyExperts(*this)))
    return failure();
  if (getBiased().size() != n)
    return emitOpError() << "`biased` has " << getBiased().size()
                         << " entries for " << n << " weights";
  size_t biases = llvm::count(getBiased(), true);
  if (getBiases().size() != biases)
    return emitOpError() << "`biased` marks " << biases << " weights, "
                         << getBiases().size() << " biases given";
  auto in = cast<RankedTensorType>(getInput().getType());
  for (auto [i, w, r] : llvm::enumerate(getStreamedWeights(), getResults())) {
    auto rt = cast<RankedTensorType>(r.getType());
    if (rt.getRank() != in.getRank())
      return emitOpError() << "result " << i << " has rank " << rt.getRank()
                           << ", the input " << in.getRank();
    std::optional<int64_t> rows = weightRows(w.getType());
    if (rows && !ShapedType::isDynamic(rt.getShape().back()) &&
        *rows != rt.getShape().back())
      return emitOpError() << "result " << i << " has " << rt.getShape().back()
                           << " outputs, its weight " << *rows << " rows";
  }
  return success();
}

LogicalResult MoERouteOp::verify() {
  auto l = cast<RankedTensorType>(getLogits().getType());
  auto w = cast<RankedTensorType>(getWeights().getType());
  auto e = cast<RankedTensorType>(getExperts().getType());
  if (l.getRank() != 2 || l.getDimSize(0) > 1)
    return emitOpError("logits are one token's [1, E]");
  int64_t E = l.getDimSize(1), k = getTopK();
  if (k < 1 || (!ShapedType::isDynamic(E) && k > E))
    return emitOpError() << "top_k " << k << " must be in [1, " << E
                         << "] (the experts)";
  int64_t nw = k + (getSharedLogit() ? 1 : 0);
  if (w.getShape() != ArrayRef<int64_t>{nw} || !w.getElementType().isF32())
    return emitOpError() << "weights are f32 [" << nw << "]";
  if (Value s = getSharedLogit()) {
    auto st = cast<RankedTensorType>(s.getType());
    if (st.getRank() != 2 || st.getDimSize(0) > 1 || st.getDimSize(1) != 1 ||
        !st.getElementType().isF32())
      return emitOpError("shared_logit is one token's f32 [1, 1]");
  }
  if (e.getShape() != ArrayRef<int64_t>{k} || !e.getElementType().isInteger(32))
    return emitOpError() << "experts are i32 [" << k << "]";
  if (!(getScale().convertToDouble() > 0))
    return emitOpError("scale must be positive");
  return success();
}

LogicalResult MoECombineOp::verify() {
  auto w = cast<RankedTensorType>(getWeights().getType());
  if (w.getRank() != 1 || w.getDimSize(0) != int64_t(getOuts().size()))
    return emitOpError() << "weights are [" << getOuts().size()
                         << "], one per expert output";
  for (Value o : getOuts())
    if (o.getType() != getResult().getType())
      return emitOpError("every expert output has the result's type");
  return success();
}

LogicalResult GatedActOp::verify() {
  if (!llvm::is_contained({"silu", "gelu", "gelu_tanh", "clamped_swiglu"},
                          getActivation()))
    return emitOpError() << "unknown activation '" << getActivation()
                         << "' (silu, gelu, gelu_tanh, clamped_swiglu)";
  bool clamped = getActivation() == "clamped_swiglu";
  if (clamped != getLimit().has_value() || clamped != getAlpha().has_value())
    return emitOpError("limit and alpha are set exactly for clamped_swiglu");
  return success();
}

LogicalResult AttentionOp::verify() {
  auto q = cast<RankedTensorType>(getQuery().getType());
  auto k = cast<RankedTensorType>(getKey().getType());
  auto v = cast<RankedTensorType>(getValue().getType());
  if (q.getRank() != 3 || k.getRank() != 3 || v.getRank() != 3)
    return emitOpError("query, key and value are [1, heads, head_dim]");
  if (k.getShape() != v.getShape())
    return emitOpError("key and value differ in shape");
  int64_t H = q.getDimSize(1), KVH = k.getDimSize(1);
  if (KVH <= 0 || H % KVH != 0)
    return emitOpError() << H << " query heads are not a multiple of " << KVH
                         << " KV heads";
  if (getCache().getType() != getNewCache().getType())
    return emitOpError("the updated cache has another type than the cache");
  if (auto w = getSlidingWindow(); w && *w <= 0)
    return emitOpError() << "sliding window " << *w << " is not positive";
  if (Value s = getSinks()) {
    auto st = cast<RankedTensorType>(s.getType());
    if (st.getRank() != 1 || st.getDimSize(0) != H)
      return emitOpError() << "sinks are [" << H << "], one per query head";
  }
  return success();
}
