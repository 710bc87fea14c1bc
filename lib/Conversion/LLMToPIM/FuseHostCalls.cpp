//===- FuseHostCalls.cpp - pim-fuse-host-calls ----------------------------===//
//
// Marks each maximal run of consecutive host-fallback ops in @forward (only
// pure ops without f32 results, weights and constants between them) with
// `pim.host_group`; pim-build-program outlines a run as one function and
// one `call` host op (HostFallback.h).
//
//===----------------------------------------------------------------------===//
#include "HostFallback.h"
#include "pimc/Conversion/LLMToPIM/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace pimc::pim {
#define GEN_PASS_DEF_PIMFUSEHOSTCALLS
#include "pimc/Conversion/LLMToPIM/Passes.h.inc"
} // namespace pimc::pim

using namespace mlir;
using namespace pimc;
using namespace pimc::pim;
using namespace pimc::pim::detail;

namespace {

/// Ops a host call recomputes inside its function when it needs them, so
/// they do not separate two host calls.
bool isRecomputed(Operation *op) {
  return isMemoryEffectFree(op) && op->getNumRegions() == 0 &&
         (op->getNumOperands() == 0 || isMaterializedLazily(op));
}

struct FuseHostCallsPass
    : public pimc::pim::impl::PIMFuseHostCallsBase<FuseHostCallsPass> {
  void runOnOperation() override {
    auto forward = getOperation().lookupSymbol<func::FuncOp>("forward");
    if (!forward)
      return;
    Builder b(&getContext());
    int64_t groups = 0;
    SmallVector<Operation *> run;
    auto close = [&] {
      if (run.size() >= 2) {
        for (Operation *op : run)
          op->setAttr(kHostGroupAttrName, b.getI64IntegerAttr(groups));
        ++groups;
      }
      run.clear();
    };
    for (Operation &op : forward.getBody().front()) {
      if (becomesHostCall(&op))
        run.push_back(&op);
      else if (!isRecomputed(&op))
        close();
    }
    close();
  }
};

} // namespace
