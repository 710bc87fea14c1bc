//===- Paths.h - paths a model file names, confined to its directory ------===//
//
// Model files name other files: ONNX external data, the shards of a
// safetensors index, an FX graph's parameters file. Like onnxruntime, pimc
// follows such a name only when it resolves inside the directory of the file
// that names it: no absolute paths, no `..` out of it, no symbolic link
// leading out of it.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_SUPPORT_PATHS_H
#define PIMC_SUPPORT_PATHS_H

#include "llvm/Support/Error.h"

#include <string>

namespace pimc {

/// `dir` joined with `name` when the result lies inside `dir` (checked on
/// the lexically normalised path and, when it exists, on the real path);
/// otherwise an error "<what> '<name>' is outside the directory '<dir>'"
/// (or "... is an absolute path").
llvm::Expected<std::string>
resolveInside(llvm::StringRef dir, llvm::StringRef name, llvm::StringRef what);

} // namespace pimc

#endif // PIMC_SUPPORT_PATHS_H
