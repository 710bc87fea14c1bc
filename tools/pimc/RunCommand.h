//===- RunCommand.h - `pimc run` --------------------------------*- C++ -*-===//
//
// `pimc run model.pimb ...`: runs a compiled model on pimsim through the
// runtime (lib/Runtime). It parses its own arguments (no llvm::cl globals),
// so pimc's main calls it before cl::ParseCommandLineOptions:
//
//   if (argc > 1 && llvm::StringRef(argv[1]) == "run")
//     return pimcRunMain(argc - 1, argv + 1);
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_TOOLS_PIMC_RUNCOMMAND_H
#define PIMC_TOOLS_PIMC_RUNCOMMAND_H

/// argv[0] is the subcommand ("run"); the options follow. Returns the exit
/// code: 0 on success, 1 with a one-line error on stderr otherwise.
int pimcRunMain(int argc, char **argv);

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <vector>

/// `--prompt-ids 1,2,3`: comma-separated non-negative token ids (shared by
/// `pimc run` and `pimc run-ref`).
llvm::Expected<std::vector<int64_t>> pimcParsePromptIds(llvm::StringRef text);

#endif // PIMC_TOOLS_PIMC_RUNCOMMAND_H
