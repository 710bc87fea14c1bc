//===- PIMHostOp.h - pim.host_op <-> the typed host-op ABI ------*- C++ -*-===//
//
// A `pim.host_op "rms_norm" {in = {off, n, fmt}, weight = {tensor, shape},
// eps = ...}` carries one host op of the program format (pimsim/HostOp.h)
// as a dictionary keyed by the ABI's field keys (pimsim::hostOpFields):
// buffers as {off, n, fmt} (or {buf = @b, off, n, fmt}, `off` relative to a
// pim.buffer that pim-plan-memory has not placed yet), host tensors as {tensor,
// shape}, `rope` as a dictionary of the rotary fields, the `param` by name, a
// call's `args` and `results` as [{buffer | param, shape}]. readHostOp is the
// one reader: the op verifier calls it, and serialization builds the program's
// typed ops with it.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_DIALECT_PIM_IR_PIMHOSTOP_H
#define PIMC_DIALECT_PIM_IR_PIMHOSTOP_H

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"

#include "pimsim/HostOp.h"

#include <optional>
#include <string>

namespace pimc::pim {

/// Interns a host tensor (the index it gets in Program::hostTensors).
using InternHostTensor = llvm::function_ref<int64_t(pimsim::HostTensor)>;
/// The index of the program parameter `name`, or -1.
using LookupParam = llvm::function_ref<int64_t(llvm::StringRef)>;
/// The byte offset in act of the pim.buffer `name`, or nothing when it is
/// not a buffer of the program or not placed yet.
using LookupBuffer =
    llvm::function_ref<std::optional<int64_t>(llvm::StringRef)>;
/// A LookupBuffer over buffer offsets by name (placedBuffers); the map must
/// outlive it.
inline auto lookupIn(const llvm::StringMap<int64_t> &offsets) {
  return [&offsets](llvm::StringRef name) -> std::optional<int64_t> {
    auto it = offsets.find(name);
    if (it == offsets.end())
      return std::nullopt;
    return it->second;
  };
}

/// Reads host op `name` with fields `args` into `out`. Returns what is
/// wrong ("'eps' must be a number", "unknown field 'x' for rms_norm
/// (fields: in, out, weight, eps, groups, gemma)"), or nothing.
std::optional<std::string> readHostOp(llvm::StringRef name,
                                      mlir::DictionaryAttr args,
                                      InternHostTensor intern,
                                      LookupParam param, LookupBuffer buffer,
                                      pimsim::HostOp &out);

} // namespace pimc::pim

#endif // PIMC_DIALECT_PIM_IR_PIMHOSTOP_H
