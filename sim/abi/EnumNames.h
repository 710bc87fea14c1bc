//===- EnumNames.h - enum <-> name tables (internal) ------------*- C++ -*-===//
//
// pimsim's enums are dense (0..N-1), so a name table indexed by the value
// serves both directions.
//
//===----------------------------------------------------------------------===//
#ifndef PIMSIM_LIB_ENUMNAMES_H
#define PIMSIM_LIB_ENUMNAMES_H

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <optional>

namespace pimsim::detail {

template <typename E, typename S, size_t N>
llvm::StringRef nameOf(const S (&names)[N], E value) {
  auto i = static_cast<size_t>(value);
  return i < N ? llvm::StringRef(names[i]) : llvm::StringRef("<unknown>");
}

template <typename E, typename S, size_t N>
std::optional<E> parseName(const S (&names)[N], llvm::StringRef name) {
  for (size_t i = 0; i < N; ++i)
    if (llvm::StringRef(names[i]) == name)
      return static_cast<E>(i);
  return std::nullopt;
}

} // namespace pimsim::detail

#endif // PIMSIM_LIB_ENUMNAMES_H
