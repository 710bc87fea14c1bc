//===- Passes.h - llm -> pim backend passes and pipeline --------*- C++ -*-===//
//
// The backend as registered passes (Passes.td) and the one pipeline,
// `pim-backend`, that `pimc compile`, `pimc support` and `pimc-opt` run.
// Strategy and decisions: docs/backend.md.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_CONVERSION_LLMTOPIM_PASSES_H
#define PIMC_CONVERSION_LLMTOPIM_PASSES_H

#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "pimsim/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>

namespace pimc::pim {

#define GEN_PASS_DECL
#include "pimc/Conversion/LLMToPIM/Passes.h.inc"

/// What the backend needs besides the target (the options of
/// pim-build-program and pim-dispatch, for callers outside a pass).
struct BackendOptions {
  /// KV-cache positions to provision; 0: the model's maximum context capped
  /// by what the target's attention mapping supports.
  int64_t maxContext = 0;
  /// Per op class ("linear", "attention", "elementwise") a forced unit
  /// ("pim", "host"), as parseDispatchOverrides checks them; empty: the
  /// cost model decides.
  std::map<std::string, std::string> dispatch;
  /// The target file's content hash, recorded in the program.
  std::string targetHash;
  /// Use only the first N channels of the device (0: all), e.g. to leave
  /// the rest to another model.
  int64_t channels = 0;
  /// Parts S of the sequence each KV head's attention is split over (each
  /// on its own channels, merged by attn_combine; docs/backend.md, "Split
  /// attention"); 0: the cost model decides; 1: no split.
  int64_t attentionSplit = 0;
};

/// What pim-dispatch records on each llm op (and the conversion carries to
/// the pim op it becomes): the unit ("pim" | "host") and {pim_ns, host_ns}.
inline constexpr llvm::StringLiteral kDispatchAttrName = "pim.dispatch";
inline constexpr llvm::StringLiteral kCostAttrName = "pim.cost";
/// On an llm.moe: the unit its router GEMV runs on ("pim" | "host").
inline constexpr llvm::StringLiteral kRouterDispatchAttrName =
    "pim.router_dispatch";

/// Whether pim-dispatch placed `op` on the host.
bool dispatchedToHost(mlir::Operation *op);

/// The module attribute where pim-dispatch records its forced classes
/// ({class = unit}) for the passes after it.
inline constexpr llvm::StringLiteral kDispatchForceAttrName =
    "pim.dispatch_force";

/// Module attributes pim-tile records for pim-build-program: the KV
/// positions provisioned and the channels in use; and, on the pim
/// tensor-level ops, a PIM GEMV's K parts and an attention's sequence
/// parts.
inline constexpr llvm::StringLiteral kMaxContextAttrName = "pim.max_context";
inline constexpr llvm::StringLiteral kChannelsAttrName = "pim.channels";
inline constexpr llvm::StringLiteral kKPartsAttrName = "pim.k_parts";
inline constexpr llvm::StringLiteral kSplitAttrName = "pim.split";

/// The classes pim-dispatch forced ({class: unit}), from the module.
std::map<std::string, std::string> forcedDispatch(mlir::ModuleOp module);

/// Reads `class=unit` dispatch overrides (pim-dispatch's `force`, pimc's
/// --dispatch); errors name the entry.
llvm::Expected<std::map<std::string, std::string>>
parseDispatchOverrides(llvm::ArrayRef<std::string> entries);

/// Whether the backend compiles `op`: on the device, with a dedicated host
/// op, or (any other llm op) as a host call of the op on the reference
/// interpreter (what the contract checks).
bool isLowerableOp(mlir::Operation *op);
/// Whether `op` has a lowering of its own (device or dedicated host op),
/// not the generic host call (what `pimc support` reports).
bool hasOwnLowering(mlir::Operation *op);
/// An llm.layer_norm over the last dimension whose weight (and bias, if
/// any) are rank-1 llm.weights: a `layer_norm` host op (plus an `add` of
/// the bias), which a near-memory unit may run like rms_norm.
bool isVectorLayerNorm(mlir::Operation *op);
/// A static-cache decode step (transformers' StaticCache exported as a pure
/// function): @forward(token [1] or [1, 1], position (the same, or index),
/// states: static f32 tensors) -> (logits, the states updated, in order).
/// The states stay in device memory between steps.
bool isStateStep(mlir::func::FuncOp forward);

/// pim-dispatch on `module` for `target`.
mlir::LogicalResult annotateDispatch(mlir::ModuleOp module,
                                     const pimsim::Target &target,
                                     const BackendOptions &options);

/// pim-check-contract on `module`.
mlir::LogicalResult checkBackendContract(mlir::ModuleOp module);

/// convert-llm-to-pim on `module`'s @forward.
mlir::LogicalResult convertLLMToPIM(mlir::ModuleOp module);

/// pim-tile on `module` (after convert-llm-to-pim): the mapping decisions
/// as attributes. Errors are diagnostics on the op that does not map.
mlir::LogicalResult tileForTarget(mlir::ModuleOp module,
                                  const pimsim::Target &target,
                                  const BackendOptions &options);

/// pim-build-program on `module` (after pim-tile): the
/// pim.program appended to it. Errors are diagnostics on the offending op.
mlir::FailureOr<ProgramOp> buildProgram(mlir::ModuleOp module,
                                        const pimsim::Target &target,
                                        const BackendOptions &options);

/// The phases of `pim-backend`, for drivers that stop in between.
enum class BackendPhase {
  Dispatch, // pim-register-target, pim-dispatch: annotated llm IR
  Convert,  // pim-check-contract, convert-llm-to-pim, pim-tile,
            // pim-select-kernels: pim tensor-level ops with their mapping
  Program,  // pim-build-program: a pim.program
};

struct BackendPipelineOptions
    : public mlir::PassPipelineOptions<BackendPipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("target description file")};
  ListOption<std::string> dispatch{
      *this, "dispatch", llvm::cl::desc("class=unit dispatch overrides")};
  Option<int64_t> maxContext{*this, "max-context",
                             llvm::cl::desc("KV-cache positions (0: auto)"),
                             llvm::cl::init(0)};
  Option<int64_t> channels{*this, "channels",
                           llvm::cl::desc("channels to use (0: all)"),
                           llvm::cl::init(0)};
  Option<int64_t> attentionSplit{
      *this, "attention-split",
      llvm::cl::desc("attention parts per KV head (0: auto)"),
      llvm::cl::init(0)};
  Option<std::string> kernels{
      *this, "kernels",
      llvm::cl::desc("generated | library | library:NAME,... | auto: the "
                     "generated lowering or the kernel library per op (auto: "
                     "by cost)"),
      llvm::cl::init("auto")};
};

/// Adds the passes of phases [first, last] of `pim-backend`.
void buildBackendPipeline(mlir::OpPassManager &pm,
                          const BackendPipelineOptions &options,
                          BackendPhase first = BackendPhase::Dispatch,
                          BackendPhase last = BackendPhase::Program);

/// Registers the backend passes (pim and llm -> pim) and `pim-backend`.
void registerBackendPasses();

} // namespace pimc::pim

#endif // PIMC_CONVERSION_LLMTOPIM_PASSES_H
