//===- PlanMemory.cpp - pim-plan-memory: activation buffers into `act` ----===//
//
// pim-build-program allocates every activation buffer as a `pim.buffer`
// (host ops name it `{buf = @a3, off, n, fmt}`, macro ops
// `#pim.data<@a3, offset>`, offsets relative to it) and places the device
// regions (KV cache, weights). This pass gives each buffer its byte offset
// in the `act` region (the buffer's `offset`: the references stay, and
// serialization and pim-schedule resolve them, so planning is linear in
// the buffers), places `act` after the rows the other regions use, checks
// that the model fits the target and records the act bytes
// (`pim.act_bytes`).
//
// Offsets: each buffer its own 64-byte aligned range, in program order
// (no reuse, so no aliasing between phases; docs/backend.md "Memory plan").
//
//===----------------------------------------------------------------------===//
#include "pimc/Dialect/PIM/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

namespace pimc::pim {
#define GEN_PASS_DEF_PIMPLANMEMORY
#include "pimc/Dialect/PIM/Transforms/Passes.h.inc"
} // namespace pimc::pim

using namespace mlir;
using namespace pimc::pim;

namespace {

class Planner {
public:
  Planner(ModuleOp module, ProgramOp program)
      : module(module), program(program) {}

  /// Plans the program for the module's target (looked up only when there
  /// is something to place).
  LogicalResult run() {
    Block &body = program.getBody().front();
    SmallVector<BufferOp> buffers(body.getOps<BufferOp>());
    bool hasAct = llvm::any_of(body.getOps<RegionOp>(), [](RegionOp r) {
      return r.getSymName() == "act";
    });
    auto unplaced = llvm::find_if(
        buffers, [](BufferOp b) { return !b.getOffset().has_value(); });
    if (hasAct && unplaced != buffers.end())
      return unplaced->emitOpError(
          "cannot be placed: the program already has an 'act' region");
    if (hasAct)
      return success(); // planned before
    FailureOr<pimsim::Target> t = TargetAttr::lookup(module);
    if (failed(t))
      return failure();
    target = std::move(*t);
    int64_t bytes = 0;
    for (BufferOp b : buffers) {
      if (b.getOffset())
        return b.emitOpError("is placed, but the program has no 'act' region");
      b.setOffset(bytes);
      bytes += llvm::alignTo(b.getBytes(), 64);
    }
    if (failed(placeRegion(bytes)))
      return failure();
    program->setAttr(
        "pim.act_bytes",
        IntegerAttr::get(IntegerType::get(program.getContext(), 64), bytes));
    return success();
  }

private:
  /// `act` after the last row of the other regions, on the weights'
  /// channels; the model must fit the target's rows.
  LogicalResult placeRegion(int64_t bytes) {
    Block &body = program.getBody().front();
    int64_t kvRows = 0, wRows = 0, firstFree = 0, channels = 0, banks = 0;
    Operation *after = nullptr;
    for (auto r : body.getOps<RegionOp>()) {
      ArrayRef<int64_t> rows = r.getRows();
      firstFree = std::max(firstFree, rows[0] + rows[1]);
      if (r.getKind() == "kv_cache")
        kvRows += rows[1];
      if (r.getKind() == "weights") {
        wRows += rows[1];
        channels = r.getChannels()[1];
        banks = r.getBanks()[1];
      }
      after = r;
    }
    if (!after)
      return program.emitOpError(
          "has no weights region to place the activations next to");
    int64_t rowBytes = target.org.rowBytes();
    int64_t perRow = channels * banks * rowBytes;
    int64_t aRows = llvm::divideCeil(std::max<int64_t>(bytes, 64), perRow);
    int64_t need = firstFree + aRows, rows = target.org.rows;
    if (need > rows) {
      auto maxContext = program->getAttrOfType<IntegerAttr>("pim.max_context");
      auto mb = [&](int64_t n) { return n * double(perRow) / 1e6; };
      return module.emitError()
             << "model does not fit target '" << program.getTarget()
             << "': it needs " << need << " DRAM rows per bank, the target has "
             << rows << " (short by " << need - rows
             << " rows = " << llvm::formatv("{0:F1}", mb(need - rows))
             << " MB); weights take " << wRows << " rows ("
             << llvm::formatv("{0:F1}", mb(wRows)) << " MB placed), the KV "
             << "cache " << kvRows << " rows ("
             << (maxContext ? maxContext.getInt() : 0)
             << " positions; --max-context lowers it), activations " << aRows
             << " rows";
    }
    OpBuilder rb(after->getContext());
    rb.setInsertionPointAfter(after);
    RegionOp::create(rb, after->getLoc(), rb.getStringAttr("act"),
                     rb.getStringAttr("activations"),
                     rb.getDenseI64ArrayAttr({0, channels}),
                     rb.getDenseI64ArrayAttr({0, banks}),
                     rb.getDenseI64ArrayAttr({firstFree, aRows}),
                     rb.getI64IntegerAttr(llvm::alignTo(bytes, 64)));
    return success();
  }

  ModuleOp module;
  ProgramOp program;
  pimsim::Target target;
};

struct PlanMemoryPass
    : public pimc::pim::impl::PIMPlanMemoryBase<PlanMemoryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto program : module.getOps<ProgramOp>())
      if (failed(Planner(module, program).run()))
        return signalPassFailure();
  }
};

} // namespace
