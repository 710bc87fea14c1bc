//===- SupportCommand.h - `pimc support` ------------------------*- C++ -*-===//
//
// `pimc support <model>`: the coverage report of a model (config features,
// llm ops, backend placement), text or JSON. pimc.cpp declares the
// subcommand's options (cl::SubCommand) and hands their values here.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_TOOLS_PIMC_SUPPORTCOMMAND_H
#define PIMC_TOOLS_PIMC_SUPPORTCOMMAND_H

#include <string>

/// The options of `pimc support`, as parsed.
struct SupportCommandOptions {
  std::string input;  // checkpoint dir, config.json, graph.json, .onnx, .mlir
  std::string target; // "": hbm3-pim found by findTarget
  std::string output = "-";
  std::string exampleInputs; // ONNX: as pimc import --example-inputs
  bool json = false;
};

/// Runs `pimc support`. Returns 0 when everything is supported, 3 when the
/// report lists unsupported items, 1 on errors.
int pimcSupport(const SupportCommandOptions &options);

#endif // PIMC_TOOLS_PIMC_SUPPORTCOMMAND_H
