//===- Schedule.cpp - pim-schedule: barriers from what each step touches --===//
//
// The steps of an entry between two barriers run concurrently
// (docs/pimsim-isa.md, "Entry points"). pim-build-program lists the steps
// in model order with no barriers; this pass puts one before each step that
// touches what a step since the last barrier writes, or writes what such a
// step touches (read after write, write after read, write after write), and
// one at the end, so an entry returns with its work done.
//
// A step's footprint is what its ops can touch (Footprint.h). It runs
// before pim-plan-memory, which reads buffer lifetimes from the barriers:
// distinct buffers are distinct bytes until then.
//
//===----------------------------------------------------------------------===//
#include "Footprint.h"

#include "pimc/Dialect/PIM/Transforms/Passes.h"

#include "mlir/IR/SymbolTable.h"

namespace pimc::pim {
#define GEN_PASS_DEF_PIMSCHEDULE
#include "pimc/Dialect/PIM/Transforms/Passes.h.inc"
} // namespace pimc::pim

using namespace mlir;
using namespace pimc::pim;

namespace {

/// Inserts the barriers of one entry.
void schedule(EntryOp entry, SymbolTable &symbols, FootprintBuilder &fp) {
  MLIRContext *ctx = entry.getContext();
  Attribute barrier = StringAttr::get(ctx, "barrier");
  SmallVector<Attribute> out;
  SmallVector<Footprint> inFlight; // steps since the last barrier
  for (Attribute step : entry.getSteps()) {
    if (step == barrier) {
      if (!out.empty() && out.back() != barrier)
        out.push_back(barrier);
      inFlight.clear();
      continue;
    }
    Footprint f = fp.of(symbols, cast<FlatSymbolRefAttr>(step).getValue());
    if (llvm::any_of(inFlight,
                     [&](const Footprint &g) { return g.conflicts(f); })) {
      out.push_back(barrier);
      inFlight.clear();
    }
    out.push_back(step);
    inFlight.push_back(std::move(f));
  }
  if (!out.empty() && out.back() != barrier)
    out.push_back(barrier);
  entry.setStepsAttr(ArrayAttr::get(ctx, out));
}

struct SchedulePass : public pimc::pim::impl::PIMScheduleBase<SchedulePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<pimsim::Target> target = TargetAttr::lookup(module);
    if (failed(target))
      return signalPassFailure();
    for (auto program : module.getOps<ProgramOp>()) {
      SymbolTable symbols(program);
      FootprintBuilder fp(program, target->org.accessBytes);
      for (auto entry : program.getBody().front().getOps<EntryOp>())
        schedule(entry, symbols, fp);
    }
  }
};

} // namespace
