//===- Backend.h - llm -> pim lowering and program serialization -*- C++ -*-===//
//
// The backend turns a decode-shaped llm module (func @forward from the HF
// importer) into a placed `pim.program` for one target, and a pim.program
// into a pimsim program (the .pimb ABI, docs/backend-abi.md). Strategy and
// decisions: docs/backend.md.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_BACKEND_BACKEND_H
#define PIMC_BACKEND_BACKEND_H

#include "pimsim/Program.h"
#include "pimsim/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>

namespace pimc::pim {
class ProgramOp;
}

namespace pimc::backend {

struct BackendOptions {
  /// KV-cache positions to provision; 0: the model's maximum context capped
  /// by what the target's attention mapping supports.
  int64_t maxContext = 0;
  /// Per op class ("linear", "attention", ...) a forced placement ("pim",
  /// "host"); empty: the cost model decides.
  std::map<std::string, std::string> dispatch;
  std::string targetName, targetHash;
  /// Use only the first N channels of the device (0: all), e.g. to leave
  /// the rest to another model.
  int64_t channels = 0;
  /// Parts S of the sequence each KV head's attention is split over (each
  /// on its own channels, merged by attn_combine; docs/backend.md, "Split
  /// attention"); 0: the cost model decides; 1: no split.
  int64_t attentionSplit = 0;
};

/// Whether lowerToPIM has a lowering for `op` (what `pimc support` reports
/// and the lowering checks before it starts).
bool isLowerableOp(mlir::Operation *op);

/// Dispatch: annotates every llm op of @forward with `pim.dispatch`
/// ("pim" | "host") and `pim.cost` ({pim_ns, host_ns}) from the target's
/// cost model. Fails (with diagnostics) on ops no unit can run.
mlir::LogicalResult annotateDispatch(mlir::ModuleOp module,
                                     const pimsim::Target &target,
                                     const BackendOptions &options);

/// Lowers the annotated llm module to a pim.program appended to `module`
/// (placement, fusion, scheduling, memory planning). Errors are emitted as
/// diagnostics on the offending op; a model that does not fit says by how
/// much and what takes the space.
mlir::FailureOr<pim::ProgramOp> lowerToPIM(mlir::ModuleOp module,
                                           const pimsim::Target &target,
                                           const BackendOptions &options);

/// Serializes a pim.program to a pimsim program (validated against the
/// target).
llvm::Expected<pimsim::Program> serialize(pim::ProgramOp program,
                                          const pimsim::Target &target);
/// The pimsim assembly text of a pim.program (what serialize assembles).
llvm::Expected<std::string> toAssembly(pim::ProgramOp program,
                                       const pimsim::Target &target);

} // namespace pimc::backend

#endif // PIMC_BACKEND_BACKEND_H

#include "mlir/Pass/Pass.h"
#include <memory>

namespace pimc::backend {
/// The two steps as passes on the module, so MLIR's pass instrumentation
/// (IR printing, timing) applies. `target` and `options` must outlive them.
std::unique_ptr<mlir::Pass> createDispatchPass(const pimsim::Target &target,
                                               const BackendOptions &options);
std::unique_ptr<mlir::Pass> createLowerToPIMPass(const pimsim::Target &target,
                                                 const BackendOptions &options);
} // namespace pimc::backend
