//===- SupportCommand.h - `pimc support` ------------------------*- C++ -*-===//
//
// `pimc support <model>`: the coverage report of a model (config features,
// llm ops, backend placement), text or JSON. Parses its own arguments, like
// `pimc run`; pimc's main calls it before cl::ParseCommandLineOptions.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_TOOLS_PIMC_SUPPORTCOMMAND_H
#define PIMC_TOOLS_PIMC_SUPPORTCOMMAND_H

/// argv[0] is the subcommand ("support"). Returns 0 when everything is
/// supported, 3 when the report lists unsupported items, 1 on errors.
int pimcSupportMain(int argc, char **argv);

#endif // PIMC_TOOLS_PIMC_SUPPORTCOMMAND_H
