//===- ProgramRoundTrip.h - the reader/assembler agreement ------*- C++ -*-===//
//
// A program that pimsim's reader or assembler accepts prints, and the printed
// text assembles to the same program; otherwise the harness aborts (a
// finding). Shared by the .pimb and the assembler harnesses.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_FUZZ_PROGRAMROUNDTRIP_H
#define PIMC_FUZZ_PROGRAMROUNDTRIP_H

#include "pimsim/Program.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <string>

namespace pimc::fuzz {

inline void requireReassembles(const pimsim::Program &program) {
  std::string text;
  llvm::raw_string_ostream os(text);
  pimsim::printProgram(program, os);
  auto again = pimsim::parseProgramText(text, "printed.s");
  if (again && *again == program)
    return;
  llvm::errs() << "the printed program does not re-assemble to itself:\n"
               << (again ? std::string("(a different program)")
                         : llvm::toString(again.takeError()))
               << "\n"
               << text;
  std::abort();
}

} // namespace pimc::fuzz

#endif // PIMC_FUZZ_PROGRAMROUNDTRIP_H
