//===- Passes.h - llm -> llm raising passes ---------------------*- C++ -*-===//
#ifndef PIMC_DIALECT_LLM_TRANSFORMS_PASSES_H
#define PIMC_DIALECT_LLM_TRANSFORMS_PASSES_H

#include "pimc/Dialect/LLM/IR/LLMDialect.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace pimc::llm {

#define GEN_PASS_DECL
#include "pimc/Dialect/LLM/Transforms/Passes.h.inc"

/// The rewrite patterns of each raising pass, for drivers that want to
/// combine them with their own.
void populateRaiseNormPatterns(mlir::RewritePatternSet &patterns);
void populateRaiseGatedMLPPatterns(mlir::RewritePatternSet &patterns);
void populateRaiseAttentionPatterns(mlir::RewritePatternSet &patterns);
void populateRaiseRopePatterns(mlir::RewritePatternSet &patterns);

/// Adds the whole raising pipeline (`llm-raise`): every raising pass, then
/// canonicalization and CSE so the layout shuffles around the fused ops fold.
void buildRaisePipeline(mlir::OpPassManager &pm);

/// Registers the raising passes and the `llm-raise` pipeline.
void registerRaisePasses();

} // namespace pimc::llm

#endif // PIMC_DIALECT_LLM_TRANSFORMS_PASSES_H
