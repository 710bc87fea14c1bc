//===- HostKernels.h - what a host kernel is, from its host ops -*- C++ -*-===//
//
// A host kernel (pim.kernel) runs a list of host ops. Its pimsim kind, the
// work the host model times (flops, bytes), the near-memory unit that can
// run it and its cost estimate follow from the ops alone: pim-build-program
// asks for one op's kernel, pim-fuse-host-kernels for a fused run's.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_CONVERSION_LLMTOPIM_HOSTKERNELS_H
#define PIMC_CONVERSION_LLMTOPIM_HOSTKERNELS_H

#include "CostModel.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <string>
#include <utility>

namespace pimc::pim {

/// A host op as pim.host_op holds it: the kind's name and its fields.
using HostOpFields = std::pair<llvm::StringRef, mlir::DictionaryAttr>;

struct KernelSummary {
  std::string kind;     // pimsim kernel kind of the op that dominates
  int64_t elements = 0; // elements the ops read and write
  int64_t flops = 0, bytes = 0;
  /// The near-memory unit that runs every op (null: the host). A kernel
  /// that exchanges data with the host (token in, logits out, calls) stays
  /// on the host, and so does every kernel when `elementwiseOnHost`.
  const pimsim::NearMemoryUnit *unit = nullptr;
  double costNs = 0; // the unit's or the host model's time
};

KernelSummary summarizeHostOps(llvm::ArrayRef<HostOpFields> ops,
                               const detail::Machine &m,
                               bool elementwiseOnHost);

} // namespace pimc::pim

#endif // PIMC_CONVERSION_LLMTOPIM_HOSTKERNELS_H
