//===- Backend.h - pim.program -> pimsim program ----------------*- C++ -*-===//
//
// Serialization of a `pim.program` (what the pim-backend pipeline,
// pimc/Conversion/LLMToPIM/Passes.h, appends to the module) into a pimsim
// program: the .pimb ABI, docs/backend-abi.md.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_BACKEND_BACKEND_H
#define PIMC_BACKEND_BACKEND_H

#include "pimsim/Program.h"
#include "pimsim/Target.h"

#include "llvm/Support/Error.h"

#include <string>

namespace pimc::pim {
class ProgramOp;
}

namespace pimc::backend {

/// Builds the pimsim program of a pim.program, validated against the
/// target (its text form: pimsim::printProgram).
llvm::Expected<pimsim::Program> serialize(pim::ProgramOp program,
                                          const pimsim::Target &target);

} // namespace pimc::backend

#endif // PIMC_BACKEND_BACKEND_H
