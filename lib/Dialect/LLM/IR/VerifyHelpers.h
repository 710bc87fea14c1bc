//===- VerifyHelpers.h - shape checks shared by llm verifiers -*- C++ -*-===//
//
// Internal to lib/Dialect/LLM/IR: the checks every op verifier uses. A
// dynamic dimension (the sequence length) is compatible with anything.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_DIALECT_LLM_IR_VERIFYHELPERS_H
#define PIMC_DIALECT_LLM_IR_VERIFYHELPERS_H

#include "pimc/Dialect/LLM/IR/LLMDialect.h"

#include "mlir/IR/BuiltinTypes.h"

#include <string>

namespace pimc::llm::detail {

using namespace ::mlir;

inline bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

inline std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

/// The [N, K] shape of a dense or quantized weight.
inline ArrayRef<int64_t> weightShape(Type type) {
  if (auto q = dyn_cast<QuantizedWeightType>(type))
    return q.getShape();
  return cast<RankedTensorType>(type).getShape();
}

inline RankedTensorType ranked(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

/// Checks that `v` is a ranked tensor of rank `rank`.
inline LogicalResult requireRank(Operation *op, Value v, StringRef what,
                                 int64_t rank) {
  auto t = ranked(v);
  if (!t)
    return op->emitOpError() << what << " must be a ranked tensor";
  if (t.getRank() != rank)
    return op->emitOpError()
           << what << " must have rank " << rank << ", got " << t;
  return success();
}

/// Checks dimension `dim` of `v` against `expected` (either may be dynamic).
inline LogicalResult requireDim(Operation *op, Value v, StringRef what,
                                int64_t dim, int64_t expected,
                                StringRef meaning) {
  int64_t got = ranked(v).getDimSize(dim);
  if (!compatible(got, expected))
    return op->emitOpError()
           << what << " dimension " << dim << " (" << meaning << ") is "
           << dimStr(got) << ", expected " << dimStr(expected);
  return success();
}

} // namespace pimc::llm::detail

#endif // PIMC_DIALECT_LLM_IR_VERIFYHELPERS_H
