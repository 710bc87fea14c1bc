//===- KernelExpr.h - integer expressions of kernel files ------*- C++ -*-===//
//
// The compile-time expressions of kernels/*.pimasm (`.let`, `.applies`,
// `.cost`, `${...}`): 64-bit integers, names, + - * / % (floor division and
// a non-negative remainder of a positive divisor), comparisons (== != < <=
// > >=, value 1 or 0), && || !, parentheses and min(a, b), max(a, b),
// cdiv(a, b) (ceiling division). Every operation is checked: overflow and
// division by zero are errors, never wrapped values.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_CONVERSION_LLMTOPIM_KERNELEXPR_H
#define PIMC_CONVERSION_LLMTOPIM_KERNELEXPR_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace pimc::kernels {

/// The value of a name, or an error (an unknown or unbound name).
using NameLookup = llvm::function_ref<llvm::Expected<int64_t>(llvm::StringRef)>;

/// Evaluates `text`; errors are plain messages ("division by zero in
/// 'k / 0'"), the caller adds the position.
llvm::Expected<int64_t> evalExpr(llvm::StringRef text, NameLookup lookup);

/// Whether `name` is an identifier `[A-Za-z_][A-Za-z0-9_]*`.
bool isIdentifier(llvm::StringRef name);

} // namespace pimc::kernels

#endif // PIMC_CONVERSION_LLMTOPIM_KERNELEXPR_H
