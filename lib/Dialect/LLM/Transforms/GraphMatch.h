//===- GraphMatch.h - matching helpers for the raising patterns -*- C++ -*-===//
//
// The importers make broadcasting explicit and widen stored weights with
// casts, so the same mathematical expression reaches the raising patterns in
// several spellings. These helpers look through those spellings and
// evaluate constant subgraphs (masks, rotary tables) so the patterns can
// check what a graph computes instead of how it is written.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_LIB_DIALECT_LLM_TRANSFORMS_GRAPHMATCH_H
#define PIMC_LIB_DIALECT_LLM_TRANSFORMS_GRAPHMATCH_H

#include "pimc/Dialect/LLM/IR/LLMDialect.h"

#include "mlir/IR/PatternMatch.h"

#include <optional>
#include <vector>

namespace pimc::ckpt {
class WeightStore;
} // namespace pimc::ckpt

namespace pimc::llm {

/// `v` before any llm.broadcast and exact-widening casts.
mlir::Value stripBroadcast(mlir::Value v);

/// `v` before exact conversions to f32 (llm.cast f16/bf16/f32 -> f32 and
/// identity llm.convert), which the importers insert for `.float()` and for
/// widening stored weights.
mlir::Value stripWidening(mlir::Value v);

/// The value of `v` if it is a constant whose elements are all equal (an
/// arith.constant splat, possibly broadcast, reshaped or widened).
std::optional<double> matchSplat(mlir::Value v);

/// `v` before reshapes that only add or drop leading size-1 dimensions
/// (torch.matmul on [1, h, L, d] is traced as bmm on [h, L, d] views).
mlir::Value stripUnitReshape(mlir::Value v);

/// `v` before reshapes that keep the last dimension (the flattening of
/// leading dims around nn.Linear's mm: [1, T, H] <-> [T, H]).
mlir::Value stripRowReshape(mlir::Value v);

/// True if `axis` names the last dimension of a rank-`rank` tensor.
bool isLastAxis(int64_t axis, int64_t rank);

/// Calls `fn(a, b)` and, if it fails, `fn(b, a)` for the two operands of a
/// commutative binary op.
template <typename Fn>
bool matchEitherOrder(mlir::Operation *op, Fn &&fn) {
  if (op->getNumOperands() != 2)
    return false;
  return fn(op->getOperand(0), op->getOperand(1)) ||
         fn(op->getOperand(1), op->getOperand(0));
}

/// The defining op of `v` if it is an `OpTy`, else null.
template <typename OpTy>
OpTy defOp(mlir::Value v) {
  return v ? v.getDefiningOp<OpTy>() : OpTy();
}

/// A tensor evaluated at compile time. Values are held as double: f32
/// results are rounded to f32 after every op (so tables match what the
/// interpreter computes), i64 and i1 values are exact.
struct ConstTensor {
  llvm::SmallVector<int64_t> shape;
  std::vector<double> data;

  int64_t numElements() const { return static_cast<int64_t>(data.size()); }
  /// Row-major index of a multi-index.
  int64_t index(llvm::ArrayRef<int64_t> at) const;
};

/// Evaluates `v` if it depends only on constants, through the element-wise,
/// shape and matmul ops the importers emit for masks and rotary tables.
/// llm.weight tensors are read from `weights` when given (float buffers such
/// as inv_freq or a causal-mask buffer are weights in imported graphs).
/// `bindings` gives values to chosen non-constant values (the MoE pattern
/// runs a routing subgraph on sample logits). Gives up (nullopt) on
/// anything else or above `maxElements` elements.
std::optional<ConstTensor>
evaluateConstant(mlir::Value v, const ckpt::WeightStore *weights = nullptr,
                 const llvm::DenseMap<mlir::Value, ConstTensor> *bindings =
                     nullptr,
                 int64_t maxElements = 1 << 22);

/// Reshapes `v` to `shape` (static) with llm.reshape unless it already has
/// that shape.
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                      llvm::ArrayRef<int64_t> shape);

/// Transposes `v` by `perm` unless the permutation is the identity.
mlir::Value transposeBy(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                        llvm::ArrayRef<int64_t> perm);

} // namespace pimc::llm

#endif // PIMC_LIB_DIALECT_LLM_TRANSFORMS_GRAPHMATCH_H
