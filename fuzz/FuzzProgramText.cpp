//===- FuzzProgramText.cpp - the pimsim assembler -------------------------===//
//
// The input is program text (`pimsim asm`). A program the assembler accepts
// prints, and the printed text assembles to the same program.
//
//===----------------------------------------------------------------------===//
#include "FuzzInput.h"
#include "ProgramRoundTrip.h"
#include "pimsim/Program.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace pimc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto program =
      pimsim::parseProgramText(fuzz::asText(data, size), "program.s");
  if (!program) {
    fuzz::ignore(program);
    return 0;
  }
  fuzz::requireReassembles(*program);
  return 0;
}
