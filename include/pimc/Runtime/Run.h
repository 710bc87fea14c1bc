//===- Run.h - run a compiled model end to end ------------------*- C++ -*-===//
//
// The session driver behind `pimc run`: read the program, find and check
// the target, open the checkpoint, generate, and build the performance
// report. Tools parse their options into a RunRequest and print the
// outcome; everything in between lives here, so a driver for another
// device (an FPGA, silicon) reuses it.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_RUNTIME_RUN_H
#define PIMC_RUNTIME_RUN_H

#include "pimc/Runtime/Device.h"
#include "pimc/Runtime/Report.h"
#include "pimc/Runtime/Session.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pimc::rt {

struct RunRequest {
  std::string program; // the .pimb
  /// The target file; empty: `findTarget(<the program's target name>)`.
  std::string target;
  std::function<llvm::Expected<std::string>(llvm::StringRef name)> findTarget;
  /// Checkpoint directory: needed in functional mode, checked in timing.
  std::string weights;
  /// The runner of host calls (SessionOptions::hostFunctions).
  std::function<std::unique_ptr<HostFunctionRunner>()> hostFunctions;
  std::vector<int64_t> prompt;
  bool functional = true; // false: timing only, no values
  int64_t maxNewTokens = 16;
  int64_t startPos = 0; // timing mode only
  SamplingOptions sampling;
  bool keepLogits = false;
  bool allowTargetMismatch = false;
  /// Progress: each step as it completes, with how many of `total` are done.
  std::function<void(const StepRecord &, int64_t done, int64_t total)> onStep;
  /// Warnings that do not stop the run (a target file that differs from
  /// the one compiled for).
  std::function<void(llvm::StringRef)> onWarning;
};

struct RunOutcome {
  std::unique_ptr<SimDevice> device;
  std::unique_ptr<ModelSession> session;
  GenerationResult result;
  PerfReport report;
};

/// Runs `request` end to end. Errors name the file (program, target or
/// checkpoint) and what is wrong, in one line.
llvm::Expected<RunOutcome> runCompiledModel(const RunRequest &request);

/// `--prompt-ids 1,2,3`: comma-separated non-negative token ids.
llvm::Expected<std::vector<int64_t>> parsePromptIds(llvm::StringRef text);

/// The logits of every generated token, f32 little-endian [tokens, vocab].
llvm::Error writeLogits(llvm::StringRef path, const GenerationResult &result);

/// The outcome as `pimc run` prints it: prompt, tokens, the report.
void printRunOutcome(const RunOutcome &outcome, llvm::raw_ostream &os,
                     unsigned top);

} // namespace pimc::rt

#endif // PIMC_RUNTIME_RUN_H
