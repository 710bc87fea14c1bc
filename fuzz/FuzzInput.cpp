//===- FuzzInput.cpp - scratch files for path-based readers ---------------===//
#include "FuzzInput.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace llvm;

namespace {

std::string &scratchDir() {
  static std::string dir;
  return dir;
}

void removeScratch() {
  if (!scratchDir().empty())
    (void)sys::fs::remove_directories(scratchDir());
}

} // namespace

std::string pimc::fuzz::scratchPath(StringRef name) {
  std::string &dir = scratchDir();
  if (dir.empty()) {
    SmallString<128> path;
    if (std::error_code ec =
            sys::fs::createUniqueDirectory("pimc-fuzz", path)) {
      errs() << "fuzz harness: cannot create a scratch directory: "
             << ec.message() << "\n";
      std::abort();
    }
    dir = std::string(path);
    std::atexit(removeScratch);
  }
  SmallString<128> path(dir);
  sys::path::append(path, name);
  return std::string(path);
}

std::string pimc::fuzz::writeScratch(StringRef name, StringRef bytes) {
  std::string path = scratchPath(name);
  std::error_code ec;
  raw_fd_ostream os(path, ec);
  if (!ec) {
    os << bytes;
    os.close();
    ec = os.error();
  }
  if (ec) {
    errs() << "fuzz harness: cannot write " << path << ": " << ec.message()
           << "\n";
    std::abort();
  }
  return path;
}

void pimc::fuzz::sink(uint64_t value) {
  static volatile uint64_t sinkValue;
  sinkValue = sinkValue + value;
}
