//===- HostFallback.h - llm ops the host runs on the interpreter -*- C++
//-*-===//
//
// Internal to lib/Conversion/LLMToPIM. An llm op with neither a device
// lowering nor a dedicated host op still compiles: pim-build-program
// outlines it, with the pure ops that compute its non-activation operands
// (weights, constants, positions), into a function of its own, and emits a
// `call` host op that runs that function on the reference interpreter at run
// time (docs/backend.md, "Host fallback"). The model is slower, never
// uncompilable, and never approximated.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_CONVERSION_LLMTOPIM_HOSTFALLBACK_H
#define PIMC_CONVERSION_LLMTOPIM_HOSTFALLBACK_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace pimc::pim::detail {

/// One outlined op: `module { func.func @host(args) -> (f32 results) }`.
struct HostCall {
  /// How each function argument is bound at run time.
  enum class Arg { Buffer, Position, Token };
  std::string text; // the function's module, printed
  llvm::SmallVector<mlir::Value> args;
  llvm::SmallVector<Arg> kinds;
  llvm::SmallVector<mlir::Value> results; // the op's f32 tensor results
  int64_t weightBytes = 0, flops = 0;
};

/// True when `op` has no f32 tensor result: it is not run on its own but
/// recomputed inside each call that needs it (integer positions, ids).
bool isMaterializedLazily(mlir::Operation *op);

/// True when pim-build-program makes `op` a `call` host op: an llm op
/// without a device lowering or a dedicated host op, with an f32 result.
bool becomesHostCall(mlir::Operation *op);

/// pim-fuse-host-calls' mark: the ops of one run share its value.
inline constexpr llvm::StringLiteral kHostGroupAttrName = "pim.host_group";

/// Outlines `ops` (one op, or a pim.host_group run in block order) as one
/// function. `tokens` and `offset` are @forward's token ids and position;
/// `inAct(v)` tells whether `v` already has an act-region buffer. The
/// function returns the f32 results used outside `ops`. Fails (with an
/// error on the op) when an operand cannot be computed on the host from
/// those (a KV cache, an op with side effects).
mlir::FailureOr<HostCall>
outlineHostCall(llvm::ArrayRef<mlir::Operation *> ops, mlir::Value tokens,
                mlir::Value offset,
                llvm::function_ref<bool(mlir::Value)> inAct);

} // namespace pimc::pim::detail

#endif // PIMC_CONVERSION_LLMTOPIM_HOSTFALLBACK_H
