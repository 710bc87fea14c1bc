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

LogicalResult GemvOp::verify() {
  size_t n = getWeights().size();
  if (n == 0)
    return emitOpError("has no weights");
  if (getResults().size() != n)
    return emitOpError() << "has " << getResults().size() << " results for "
                         << n << " weights";
  if (getBiased().size() != n)
    return emitOpError() << "`biased` has " << getBiased().size()
                         << " entries for " << n << " weights";
  size_t biases = llvm::count(getBiased(), true);
  if (getBiases().size() != biases)
    return emitOpError() << "`biased` marks " << biases << " weights, "
                         << getBiases().size() << " biases given";
  auto in = cast<RankedTensorType>(getInput().getType());
  for (auto [i, w, r] : llvm::enumerate(getWeights(), getResults())) {
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

LogicalResult GatedActOp::verify() {
  if (!llvm::is_contained({"silu", "gelu", "gelu_tanh"}, getActivation()))
    return emitOpError() << "unknown activation '" << getActivation()
                         << "' (silu, gelu, gelu_tanh)";
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
  return success();
}
