//===- FuzzProgram.cpp - .pimb programs -----------------------------------===//
//
// The input is a .pimb program (flatbuffer): read and structurally checked,
// validated against the hbm3-pim target, its host-kernel parameters and
// weight layouts parsed, and printed (the disassembler must accept what the
// reader accepts).
//
//===----------------------------------------------------------------------===//
#include "FuzzInput.h"
#include "ProgramRoundTrip.h"
#include "pimc/Runtime/HostOps.h"
#include "pimc/Runtime/Session.h"
#include "pimsim/Program.h"
#include "pimsim/Target.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace pimc;

static const pimsim::Target &target() {
  static pimsim::Target t = [] {
    auto loaded = pimsim::loadTarget(PIMC_TARGETS_DIR "/hbm3-pim.json");
    if (!loaded) {
      llvm::errs() << llvm::toString(loaded.takeError()) << "\n";
      std::abort();
    }
    return std::move(*loaded);
  }();
  return t;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto program =
      pimsim::parseProgramBuffer(llvm::ArrayRef(data, size), "program.pimb");
  if (!program) {
    fuzz::ignore(program);
    return 0;
  }
  // The reader and the assembler accept the same programs.
  fuzz::requireReassembles(*program);
  auto host = rt::HostOps::parse(*program);
  fuzz::ignore(host);
  if (llvm::Error err = pimsim::validateProgram(*program, target())) {
    fuzz::ignore(std::move(err));
    return 0;
  }
  for (const pimsim::WeightBinding &w : program->weights) {
    auto layout = rt::parseGemvRows(w, *program, target());
    fuzz::ignore(layout);
  }
  return 0;
}
