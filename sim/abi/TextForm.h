//===- TextForm.h - shared pieces of the program text form -----*- C++ -*-===//
//
// Internal to the ABI library: ProgramText.cpp (the assembler and
// disassembler) and HostOpText.cpp (the host-op lines of a .kernel) share
// the spelling of strings and dimensions.
//
//===----------------------------------------------------------------------===//
#ifndef PIMSIM_ABI_TEXTFORM_H
#define PIMSIM_ABI_TEXTFORM_H

#include "pimsim/Program.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace pimsim::detail {

/// `s` in double quotes with \" \\ \n \t \xHH escapes.
std::string quoted(llvm::StringRef s);
/// `s` as a bare word when the lexer reads it back unchanged, else quoted.
std::string word(llvm::StringRef s);
/// "4096x4096"; "" for no dimensions.
std::string dimsText(llvm::ArrayRef<int64_t> dims);

/// One key=value argument of a host-op line, as lexed.
struct TextArg {
  llvm::StringRef key, value;
  bool quoted = false;
  unsigned valueCol = 0; // 1-based column of the value
};
/// A problem at a column of the line.
struct TextProblem {
  unsigned col = 0;
  std::string message;
};

/// One host op as a line of a .kernel: the kind, then its fields in
/// hostOpFields order (optional ones when not at their default). Buffers
/// print as FORMAT[ELEMENTS]@OFFSET, host tensors as their quoted name,
/// parameters by name, call values as `arg=` / `result=` entries.
void printHostOp(const HostOp &op, const Program &program,
                 llvm::raw_ostream &os);
/// Parses the fields of a host op of `kind` into `op`; host tensors and
/// parameters are looked up by name in `program`.
std::optional<TextProblem> parseHostOp(HostOpKind kind,
                                       llvm::ArrayRef<TextArg> args,
                                       const Program &program, HostOp &op);

} // namespace pimsim::detail

#endif // PIMSIM_ABI_TEXTFORM_H
