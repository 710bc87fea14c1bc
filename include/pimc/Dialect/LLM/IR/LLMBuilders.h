//===- LLMBuilders.h - helpers for building llm IR from graphs --*- C++ -*-===//
//
// Shared by the FX and ONNX importers (docs/frontend-graphs.md section 2):
// graphs broadcast implicitly (numpy rules), llm element-wise ops do not, so
// the importers make every broadcast an explicit llm.broadcast with these.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_DIALECT_LLM_IR_LLMBUILDERS_H
#define PIMC_DIALECT_LLM_IR_LLMBUILDERS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

namespace pimc::llm {

/// numpy broadcasting of two shapes: right-aligned, a size-1 or missing
/// dimension takes the other's size. A dynamic dimension against a static
/// one takes the static size (against another dynamic one it stays dynamic).
/// Fails when two static sizes differ and neither is 1.
mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// `value` (a ranked tensor) broadcast to `shape`: `value` itself when its
/// shape already is `shape`, else a new llm.broadcast (which also adds the
/// missing leading dimensions). Emits an error at `loc` and returns null
/// when the shapes are not broadcast-compatible.
mlir::Value broadcastTo(mlir::OpBuilder &builder, mlir::Location loc,
                        mlir::Value value, llvm::ArrayRef<int64_t> shape);

/// Broadcasts `lhs` and `rhs` (ranked tensors) to their common numpy shape,
/// replacing them in place. Emits an error at `loc` naming both shapes and
/// fails when they are incompatible.
mlir::LogicalResult broadcastBinaryOperands(mlir::OpBuilder &builder,
                                            mlir::Location loc,
                                            mlir::Value &lhs, mlir::Value &rhs);

} // namespace pimc::llm

#endif // PIMC_DIALECT_LLM_IR_LLMBUILDERS_H
