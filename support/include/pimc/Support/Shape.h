//===- Shape.h - how messages print a tensor shape --------------*- C++ -*-===//
//
// Every diagnostic that shows a shape prints it the same way: "[2, ?, 64]",
// with "?" for a dynamic dimension (MLIR's ShapedType::kDynamic, INT64_MIN).
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_SUPPORT_SHAPE_H
#define PIMC_SUPPORT_SHAPE_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <limits>
#include <string>

namespace pimc {

inline std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += shape[i] == std::numeric_limits<int64_t>::min()
             ? std::string("?")
             : std::to_string(shape[i]);
  }
  return s + "]";
}

} // namespace pimc

#endif // PIMC_SUPPORT_SHAPE_H
