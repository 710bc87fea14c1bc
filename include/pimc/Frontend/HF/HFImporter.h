//===- HFImporter.h - Hugging Face checkpoint -> llm dialect ----*- C++ -*-===//
//
// Builds the llm IR of a decoder-only model from its config and the tensor
// headers of its safetensors files. Weights are referred to by name
// (llm.weight), never copied into the IR. Every expected tensor is checked
// (present, dtype, shape) and all problems are reported in one error.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_FRONTEND_HF_HFIMPORTER_H
#define PIMC_FRONTEND_HF_HFIMPORTER_H

#include "pimc/Checkpoint/HFConfig.h"
#include "pimc/Checkpoint/Safetensors.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace pimc::hf {

struct ImportOptions {
  /// KV-cache capacity (positions) of the forward function; 0 picks
  /// min(max_position_embeddings, 4096), or 4096 for dynamic NTK RoPE
  /// (which scales past max_position_embeddings).
  int64_t maxContext = 0;
};

/// Name of the entry point the importer emits:
///   func.func @forward(%tokens: tensor<?xi64>, %offset: index,
///                      %cache_0: !llm.kv_cache<...>, ...)
///       -> (tensor<1xVxf32>, !llm.kv_cache<...>, ...)
/// It runs T new tokens at positions [offset, offset + T), appends their
/// keys and values to each layer's cache and returns the logits of the last
/// token and the updated caches.
inline constexpr llvm::StringLiteral kForwardFunction = "forward";

/// Imports `<dir>/config.json` + safetensors into a new module. Every
/// tensor is checked against `weights`; with no weights (nullptr) the model
/// is timing-only: tensors take their shapes from the config and their
/// dtype from its torch_dtype.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importCheckpoint(mlir::MLIRContext &context, const ckpt::ModelConfig &config,
                 const ckpt::WeightStore *weights,
                 const ImportOptions &options);

/// Convenience: parses the config, opens the weights and imports.
struct ImportedModel {
  ckpt::ModelConfig config;
  std::unique_ptr<ckpt::WeightStore> weights;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};
llvm::Expected<ImportedModel> importCheckpointDir(mlir::MLIRContext &context,
                                                  llvm::StringRef dir,
                                                  const ImportOptions &options);

/// The tensor table a timing-only model records (`llm.source_tensors`):
/// no checkpoint's digest equals it.
inline constexpr llvm::StringLiteral kTimingOnly =
    "none (timing-only: compiled from config.json without weights)";

/// A timing-only model from a config.json alone (ImportedModel::weights is
/// null), so full-size models can be compiled and timed before any weights
/// exist.
llvm::Expected<ImportedModel> importConfigFile(mlir::MLIRContext &context,
                                               llvm::StringRef configPath,
                                               const ImportOptions &options);

/// Registers the dialects the imported IR uses.
void registerImportDialects(mlir::MLIRContext &context);

} // namespace pimc::hf

#endif // PIMC_FRONTEND_HF_HFIMPORTER_H
