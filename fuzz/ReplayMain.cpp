//===- ReplayMain.cpp - run a fuzz harness over files (no libFuzzer) ------===//
//
//   pimc-fuzz-<name> <file | dir>...
//
// Runs LLVMFuzzerTestOneInput once per file (a directory: its regular files,
// sorted), as libFuzzer does when given files. A crash, sanitizer report or
// abort fails the run; rejected inputs are the expected outcome. Prints the
// number of inputs replayed.
//
//===----------------------------------------------------------------------===//
#include "FuzzInput.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <string>
#include <vector>

using namespace llvm;

static bool collect(StringRef arg, std::vector<std::string> &files) {
  if (!sys::fs::is_directory(arg)) {
    if (!sys::fs::exists(arg)) {
      errs() << "error: " << arg << ": no such file or directory\n";
      return false;
    }
    files.push_back(arg.str());
    return true;
  }
  std::vector<std::string> found;
  std::error_code ec;
  for (sys::fs::directory_iterator it(arg, ec), end; it != end && !ec;
       it.increment(ec))
    if (sys::fs::is_regular_file(it->path()))
      found.push_back(it->path());
  if (ec) {
    errs() << "error: " << arg << ": " << ec.message() << "\n";
    return false;
  }
  std::sort(found.begin(), found.end());
  files.insert(files.end(), found.begin(), found.end());
  return true;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    errs() << "usage: " << argv[0] << " <file | dir>...\n"
           << "Replays inputs through the fuzz harness (build with "
              "-DPIMC_FUZZ=ON for libFuzzer).\n";
    return 2;
  }
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i)
    if (!collect(argv[i], files))
      return 1;
  for (const std::string &f : files) {
    auto buf = MemoryBuffer::getFile(f, /*IsText=*/false,
                                     /*RequiresNullTerminator=*/false);
    if (!buf) {
      errs() << "error: " << f << ": " << buf.getError().message() << "\n";
      return 1;
    }
    // A copy the size of the input exactly, so that reads past the end are
    // caught by ASan as they are under libFuzzer.
    std::vector<uint8_t> data((*buf)->getBuffer().begin(),
                              (*buf)->getBuffer().end());
    LLVMFuzzerTestOneInput(data.data(), data.size());
  }
  outs() << "replayed " << files.size() << " input(s)\n";
  return 0;
}
