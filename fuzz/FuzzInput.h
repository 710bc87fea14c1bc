//===- FuzzInput.h - shared pieces of pimc's fuzz harnesses -----*- C++ -*-===//
//
// Every harness defines LLVMFuzzerTestOneInput. Built with -DPIMC_FUZZ=ON
// (clang, scripts/fuzz.sh) it links libFuzzer with ASan and UBSan; otherwise
// ReplayMain.cpp supplies main(), which runs the harness over files and
// directories (the test suite replays the committed corpus that way).
//
// A reader that takes a path gets the input through a per-process scratch
// directory, removed at exit.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_FUZZ_FUZZINPUT_H
#define PIMC_FUZZ_FUZZINPUT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace pimc::fuzz {

/// The scratch directory (created on first use) joined with `name`.
std::string scratchPath(llvm::StringRef name);

/// Writes `bytes` to scratchPath(name) and returns the path. Aborts when the
/// scratch file cannot be written: that is the harness's failure, not the
/// input's.
std::string writeScratch(llvm::StringRef name, llvm::StringRef bytes);

/// Drops an expected error (hostile inputs are mostly rejected).
template <typename T> void ignore(llvm::Expected<T> &v) {
  if (!v)
    llvm::consumeError(v.takeError());
}
inline void ignore(llvm::Error err) { llvm::consumeError(std::move(err)); }

/// Keeps a value alive so that reads of parsed data are not optimised away.
void sink(uint64_t value);

inline llvm::StringRef asText(const uint8_t *data, size_t size) {
  return llvm::StringRef(reinterpret_cast<const char *>(data), size);
}

} // namespace pimc::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif // PIMC_FUZZ_FUZZINPUT_H
