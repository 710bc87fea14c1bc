//===- Paths.cpp - paths a model file names, confined to its directory ----===//
#include "pimc/Support/Paths.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

using namespace llvm;

/// Whether `path` is `dir` or below it (both absolute and normalised).
static bool isWithin(StringRef path, StringRef dir) {
  if (!path.starts_with(dir))
    return false;
  return path.size() == dir.size() ||
         sys::path::is_separator(path[dir.size()]) ||
         sys::path::is_separator(dir.back());
}

Expected<std::string> pimc::resolveInside(StringRef dir, StringRef name,
                                          StringRef what) {
  auto outside = [&](StringRef why) {
    return createStringError(formatv("{0} '{1}' {2} the directory '{3}'", what,
                                     name, why, dir.empty() ? "." : dir));
  };
  if (name.empty())
    return createStringError(formatv("{0} is an empty path", what));
  if (name.contains('\0'))
    return createStringError(formatv("{0} contains a NUL byte", what));
  if (sys::path::is_absolute(name) || sys::path::has_root_name(name))
    return createStringError(
        formatv("{0} '{1}' is an absolute path; it must name a file inside "
                "the directory '{2}'",
                what, name, dir.empty() ? "." : dir));
  SmallString<256> rel(name);
  sys::path::remove_dots(rel, /*remove_dot_dot=*/true);
  if (rel == ".." || StringRef(rel).starts_with("../") ||
      StringRef(rel).starts_with("..\\"))
    return outside("is outside");
  SmallString<256> joined(dir.empty() ? "." : dir);
  sys::path::append(joined, rel);
  // Symbolic links: compare real paths when the file exists.
  SmallString<256> realDir, realPath;
  if (!sys::fs::real_path(dir.empty() ? "." : dir, realDir) &&
      !sys::fs::real_path(joined, realPath) && !isWithin(realPath, realDir))
    return outside("leads (through a symbolic link) outside");
  return std::string(joined);
}
