//===- Targets.cpp - where pimc finds a target file by name ---------------===//
#include "Targets.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <vector>

using namespace llvm;

Expected<std::string> pimc::findTarget(StringRef name) {
  std::vector<std::string> dirs = {"targets"};
  if (std::optional<std::string> env = sys::Process::GetEnv("PIMC_TARGETS_DIR"))
    dirs.push_back(*env);
  dirs.push_back(PIMC_SOURCE_TARGETS_DIR);
  std::string tried;
  for (const std::string &dir : dirs) {
    SmallString<256> path(dir);
    sys::path::append(path, name + ".json");
    if (sys::fs::exists(path))
      return std::string(path);
    tried += (tried.empty() ? "" : ", ") + std::string(path);
  }
  return createStringError("no target file for '" + name.str() +
                           "' (looked at " + tried +
                           "); pass --target or set PIMC_TARGETS_DIR");
}
