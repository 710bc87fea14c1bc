//===- RopeParams.h - an llm.rope op as the reference's RopeParams -*- C++ -*-//
//
// One translation from llm.rope's attributes to ref::RopeParams, used by the
// op's verifier (ref::ropeParamsProblem holds the value rules) and by the
// interpreter.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_DIALECT_LLM_IR_ROPEPARAMS_H
#define PIMC_DIALECT_LLM_IR_ROPEPARAMS_H

#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Numerics/Kernels.h"

namespace pimc::llm {

/// The rotary embedding `op` computes. Absent optional attributes take the
/// reference's defaults (yarn's factor: 0, which the verifier rejects).
ref::RopeParams ropeParamsOf(RopeOp op);

} // namespace pimc::llm

#endif // PIMC_DIALECT_LLM_IR_ROPEPARAMS_H
