//===- RunCommand.h - `pimc run` --------------------------------*- C++ -*-===//
//
// `pimc run model.pimb ...`: runs a compiled model on pimsim through the
// runtime's session driver (pimc/Runtime/Run.h) and prints the tokens and
// the report. pimc.cpp declares the subcommand's options (cl::SubCommand)
// and hands their values here.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_TOOLS_PIMC_RUNCOMMAND_H
#define PIMC_TOOLS_PIMC_RUNCOMMAND_H

#include "pimc/Runtime/Session.h"

#include <cstdint>
#include <string>

/// The options of `pimc run`, as parsed.
struct RunCommandOptions {
  std::string program, target, weights, promptIds, mode = "functional";
  std::string stats, trace, logitsOut;
  int64_t maxNewTokens = 16, startPos = 0, top = 8;
  pimc::rt::SamplingOptions sampling;
  bool json = false, allowMismatch = false, verbose = false;
  /// The runner of the program's host calls (pimc: the reference
  /// interpreter's; see rt::SessionOptions::hostFunctions).
  std::function<std::unique_ptr<pimc::rt::HostFunctionRunner>()> hostFunctions;
};

/// Runs `pimc run`. Returns the exit code: 0 on success, 1 with a one-line
/// error on stderr otherwise.
int pimcRun(const RunCommandOptions &options);

#endif // PIMC_TOOLS_PIMC_RUNCOMMAND_H
