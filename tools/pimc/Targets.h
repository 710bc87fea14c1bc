//===- Targets.h - where pimc finds a target file by name -------*- C++ -*-===//
//
// `pimc compile`, `pimc run` and `pimc support` default to a target by name
// (hbm3-pim, or the one a program was compiled for). The file is found
// wherever pimc runs from: ./targets/<name>.json, then
// $PIMC_TARGETS_DIR/<name>.json, then the source tree's targets/ this pimc
// was built from.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_TOOLS_PIMC_TARGETS_H
#define PIMC_TOOLS_PIMC_TARGETS_H

#include "llvm/Support/Error.h"

#include <string>

namespace pimc {

inline constexpr const char *kDefaultTarget = "hbm3-pim";

/// The path of target `name`, or an error listing the places looked at.
llvm::Expected<std::string> findTarget(llvm::StringRef name);

} // namespace pimc

#endif // PIMC_TOOLS_PIMC_TARGETS_H
