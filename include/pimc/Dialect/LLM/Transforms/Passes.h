//===- Passes.h - llm -> llm raising passes ---------------------*- C++ -*-===//
#ifndef PIMC_DIALECT_LLM_TRANSFORMS_PASSES_H
#define PIMC_DIALECT_LLM_TRANSFORMS_PASSES_H

#include "pimc/Dialect/LLM/IR/LLMDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace pimc::ckpt {
class WeightStore;
} // namespace pimc::ckpt

namespace pimc::llm {

#define GEN_PASS_DECL
#include "pimc/Dialect/LLM/Transforms/Passes.h.inc"

/// The rewrite patterns of each raising pass, for drivers that want to
/// combine them with their own. `weights` (may be null) lets the patterns
/// read llm.weight tensors when they must evaluate a table or mask that the
/// model keeps in a buffer; it must outlive the patterns.
void populateRaiseNormPatterns(mlir::RewritePatternSet &patterns);
void populateRaiseGatedMLPPatterns(mlir::RewritePatternSet &patterns);
void populateRaiseAttentionPatterns(mlir::RewritePatternSet &patterns,
                                    const ckpt::WeightStore *weights);
void populateRaiseRopePatterns(mlir::RewritePatternSet &patterns,
                               const ckpt::WeightStore *weights);
/// Sparse per-expert dispatch (llm.nonzero + gather + index_add) -> the
/// dense per-expert sum that populateRaiseMoEPatterns raises.
void populateDensifySparseDispatchPatterns(mlir::RewritePatternSet &patterns);
void populateRaiseMoEPatterns(mlir::RewritePatternSet &patterns,
                              const ckpt::WeightStore *weights);

/// Adds the whole raising pipeline (`llm-raise`): every raising pass, then
/// canonicalization and CSE so the layout shuffles around the fused ops fold.
/// `weightFiles` are the safetensors files of the imported graph (may be
/// empty: buffer-backed rotary tables and masks then stay unraised).
void buildRaisePipeline(mlir::OpPassManager &pm,
                        llvm::ArrayRef<std::string> weightFiles = {});

/// Runs the `llm-raise` pipeline on an imported graph (what `pimc import`
/// does by default); `weightFiles` as for buildRaisePipeline. Diagnostics go
/// to the module's context.
mlir::LogicalResult raiseGraph(mlir::ModuleOp module,
                               llvm::ArrayRef<std::string> weightFiles = {});

/// llm-synthesize-decode on `module`'s @forward (Passes.td). Returns
/// success without change when @forward already is a decode step
/// (token ids, offset, KV caches).
mlir::LogicalResult synthesizeDecodeStep(mlir::ModuleOp module,
                                         int64_t maxContext);
/// True when @forward takes (token ids, index offset, KV caches...).
bool isDecodeStep(mlir::ModuleOp module);

/// Registers the raising passes and the `llm-raise` pipeline.
void registerRaisePasses();

} // namespace pimc::llm

#endif // PIMC_DIALECT_LLM_TRANSFORMS_PASSES_H
