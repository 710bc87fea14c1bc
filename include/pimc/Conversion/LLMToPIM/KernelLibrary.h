//===- KernelLibrary.h - hand-written macro-op kernels ---------*- C++ -*-===//
//
// The kernel library (docs/kernel-library.md): stream bodies written by hand
// in pimsim's text form (kernels/*.pimasm), embedded in the binary at build
// time. A kernel file declares
//   * the op it serves (`.kernel NAME op=gemv|attention`),
//   * its compile-time arguments (`.arg`: shapes, rows, the target's
//     organisation) and values derived from them (`.let`),
//   * the runtime parameters its body names (`.runtime`: kv_len, ...) and
//     parameters it derives from them (`.param`, created in the program),
//   * the activation buffers its `data=` fields address (`.data`: x, out,
//     ...; the backend binds each to a pim.buffer and an offset in it),
//   * its applicability (`.applies`: the shape class it serves) and its
//     estimated cycles (`.cost`), both over arguments the compiler knows
//     before placement,
//   * the stream body (`.body`), with `${EXPR}` for compile-time values.
// Instantiation substitutes the values, assembles the body with pimsim's own
// text parser (parseProgramText) and hands back its instructions; the
// backend turns them into pim.macro / pim.loop ops (KernelSelect.cpp).
//
// No MLIR here: the reader is fuzzed on its own (fuzz/FuzzKernelFile.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_CONVERSION_LLMTOPIM_KERNELLIBRARY_H
#define PIMC_CONVERSION_LLMTOPIM_KERNELLIBRARY_H

#include "pimsim/Program.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>
#include <vector>

namespace pimc::kernels {

/// An integer expression of a kernel file, where it was written.
struct Expr {
  std::string text;
  int line = 0;
};

/// `.param NAME src=S [add=E] [div=E] [mod=E] min=E max=E`: a runtime
/// parameter the kernel derives from S (a `.runtime` name or an earlier
/// `.param`) as pimsim derives parameters (docs/pimsim-isa.md,
/// "Parameters"), with compile-time expressions for its fields.
struct DerivedParam {
  std::string name, src;
  Expr add, div, mod, min, max;
};

/// A derived parameter's fields, evaluated.
struct DerivedValues {
  std::string name, src;
  int64_t add = 0, div = 1, mod = 0, min = 0, max = 0;
};

/// One kernel file, as read (nothing evaluated yet).
struct KernelFile {
  std::string file;              // the source name, for messages
  std::string name;              // "gemv_fit"
  std::string op;                // the op kind it serves: "gemv" or "attention"
  std::vector<std::string> args; // compile-time arguments, in order
  std::vector<std::string> runtime; // runtime parameters the body names
                                    // (the `.param` ones too, in order)
  std::vector<std::string> data;    // the act buffers its `data=` fields name
  std::vector<DerivedParam> derived;
  std::vector<std::pair<std::string, Expr>> lets;
  std::vector<Expr> applies;
  Expr cost;
  std::string body;
  int bodyLine = 0; // line of the body's first line in the file
};

/// Reads a kernel file. Errors are "file:line: message".
llvm::Expected<KernelFile> parseKernelFile(llvm::StringRef text,
                                           llvm::StringRef file);

/// Argument values for one instantiation: every `.arg` of the kernel must
/// be given (a missing one is an error naming it) and no other; `partial`
/// allows missing ones, which then fail only the expressions that use them
/// (selection binds the shape arguments before placement).
class Bindings {
public:
  static llvm::Expected<Bindings>
  bind(const KernelFile &kernel, const std::map<std::string, int64_t> &args,
       bool partial = false);
  /// The value of an argument or `.let`, or an error.
  llvm::Expected<int64_t> value(llvm::StringRef name) const;
  /// Evaluates `e` over the arguments and lets.
  llvm::Expected<int64_t> eval(const Expr &e) const;
  const KernelFile &kernel() const { return *k; }

private:
  const KernelFile *k = nullptr;
  std::map<std::string, int64_t> values;
  std::map<std::string, const Expr *> lets;
  mutable std::map<std::string, int64_t> letValues;
  mutable std::vector<std::string> evaluating; // `.let` cycle detection
};

/// Whether the kernel serves these arguments: "" if every `.applies` holds,
/// else the first one that does not ("k_rows * elems <= gb_elems").
llvm::Expected<std::string> whyNot(const Bindings &b);

/// The kernel's `.param`s with their fields evaluated (min <= max, div >= 1,
/// mod >= 0, or an error naming the line).
llvm::Expected<std::vector<DerivedValues>> derivedParams(const Bindings &b);

/// The kernel's body with every `${EXPR}` substituted.
llvm::Expected<std::string> substitute(const Bindings &b);

/// The instantiated body: its instructions as pimsim parsed them, with
/// parameter strides naming `kernel.runtime[p]` as parameter p and `data=`
/// on region i naming `kernel.data[i]` (offsets from that buffer's start).
/// Errors carry the kernel file's line.
llvm::Expected<std::vector<pimsim::Instruction>> instantiate(const Bindings &b);

/// The library: every kernels/*.pimasm, embedded at build time, read once.
/// An embedded file that does not read is a build defect: the error names
/// it.
llvm::Expected<const std::vector<KernelFile> &> library();

/// A kernel of the library by name, or nullptr.
const KernelFile *findKernel(llvm::StringRef name);

} // namespace pimc::kernels

#endif // PIMC_CONVERSION_LLMTOPIM_KERNELLIBRARY_H
