//===- SupportCommand.h - `pimc support` ------------------------*- C++ -*-===//
//
// `pimc support <model>`: the coverage report of a model (config features,
// llm ops, backend placement), text or JSON. pimc.cpp declares the
// subcommand's options (cl::SubCommand) and hands their values here.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_TOOLS_PIMC_SUPPORTCOMMAND_H
#define PIMC_TOOLS_PIMC_SUPPORTCOMMAND_H

#include "pimc/Checkpoint/ArchFeatures.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

/// The options of `pimc support`, as parsed.
struct SupportCommandOptions {
  /// One model (checkpoint dir, config.json, graph.json, .onnx, .mlir), or
  /// with `matrix` one config directory (or config.json) per model.
  std::vector<std::string> inputs;
  std::string target; // "": hbm3-pim found by findTarget
  std::string output = "-";
  std::string exampleInputs; // ONNX: as pimc import --example-inputs
  bool json = false;
  bool matrix = false;
};

/// Runs `pimc support`. Returns 0 when everything is supported, 3 when the
/// report lists unsupported items, 1 on errors.
int pimcSupport(const SupportCommandOptions &options);

/// One model's row of the matrix: `pimc support`'s verdict on a Hugging
/// Face config.json (imported without weights) and its architecture
/// features.
struct ModelSupport {
  std::string modelType;
  bool supported = false;
  std::string why; // not supported: the first reason
  std::vector<pimc::ckpt::FeatureUse> arch;
};
llvm::Expected<ModelSupport> analyzeModelSupport(const std::string &configPath,
                                                 const std::string &target);

/// `pimc support --matrix` (SupportMatrix.cpp); `options.target` is set.
int pimcSupportMatrix(const SupportCommandOptions &options);

#endif // PIMC_TOOLS_PIMC_SUPPORTCOMMAND_H
