//===- HostFunctions.h - host calls on the reference interpreter -*- C++
//-*-===//
//
// The runtime's HostFunctionRunner (pimc/Runtime/HostOps.h) for the `call`
// host ops of compiled programs: each function is MLIR text of llm ops the
// device cannot run, executed with the interpreter's numerics (the same
// numerics the golden runs use). The runtime stays free of MLIR; drivers
// that run programs (pimc run) pass this runner to the session.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_REFERENCE_HOSTFUNCTIONS_H
#define PIMC_REFERENCE_HOSTFUNCTIONS_H

#include "pimc/Runtime/HostOps.h"

#include <memory>

namespace pimc::ref {

std::unique_ptr<rt::HostFunctionRunner> createInterpreterHostFunctions();

} // namespace pimc::ref

#endif // PIMC_REFERENCE_HOSTFUNCTIONS_H
