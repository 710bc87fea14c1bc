//===- PlanMemory.cpp - pim-plan-memory: activation buffers into `act` ----===//
//
// pim-build-program allocates every activation buffer as a `pim.buffer`
// (host ops name it `{buf = @a3, off, n, fmt}`, macro ops
// `#pim.data<@a3, offset>`, offsets relative to it) and places the device
// regions (KV cache, weights). This pass gives each buffer its byte offset
// in the `act` region (the buffer's `offset`: the references stay, and
// serialization resolves them), places `act` after the rows the other
// regions use, checks that the model fits the target and records the act
// bytes (`pim.act_bytes`).
//
// Reuse by lifetime. It runs after pim-schedule: the steps of an entry
// between two barriers run together (an epoch), and a barrier ends every
// step before it. A buffer is live from the first epoch whose steps touch
// it to the last (footprints, Footprint.h); buffers whose lifetimes do not
// overlap may share bytes, which no step can then see.
//
// A buffer's contents last one run of an entry. Live throughout are the
// buffers that may hold a value from an earlier run (a step reads bytes of
// it that the run has not written by then: an op that keeps part of its
// output, pack and v_stage, reads it first, and a macro op's write counts
// only when it covers its range with no gap), that two entries use, that
// no step touches, and that the runtime reads after the run (the logits).
// Offsets are first-fit in order of first use, 64-byte aligned
// (docs/backend.md "Memory plan"). A buffer no op names is dropped.
//
//===----------------------------------------------------------------------===//
#include "Footprint.h"

#include "pimc/Dialect/PIM/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <limits>
#include <map>
#include <numeric>

namespace pimc::pim {
#define GEN_PASS_DEF_PIMPLANMEMORY
#include "pimc/Dialect/PIM/Transforms/Passes.h.inc"
} // namespace pimc::pim

using namespace mlir;
using namespace pimc::pim;

namespace {

/// When a buffer is live: epochs (runs of an entry's steps between
/// barriers, numbered over the entries in order) `first` to `last`.
struct Lifetime {
  int64_t first = -1, last = -1; // -1: no step touches it
  int64_t entry = -1;            // the entry whose steps touch it
  bool always = false;           // live throughout the program
};

/// The bytes a run has written so far: disjoint, merged ranges.
class Coverage {
public:
  void add(Range r) {
    if (r.lo >= r.hi)
      return;
    auto it = spans.upper_bound(r.lo);
    if (it != spans.begin() && std::prev(it)->second >= r.lo)
      --it;
    while (it != spans.end() && it->first <= r.hi) {
      r.lo = std::min(r.lo, it->first);
      r.hi = std::max(r.hi, it->second);
      it = spans.erase(it);
    }
    spans[r.lo] = r.hi;
  }
  bool covers(Range r) const {
    if (r.lo >= r.hi)
      return true;
    auto it = spans.upper_bound(r.lo);
    return it != spans.begin() && std::prev(it)->second >= r.hi;
  }

private:
  std::map<int64_t, int64_t> spans; // lo -> hi
};

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
    for (BufferOp b : buffers)
      if (b.getOffset())
        return b.emitOpError("is placed, but the program has no 'act' region");
    FailureOr<pimsim::Target> t = TargetAttr::lookup(module);
    if (failed(t))
      return failure();
    target = std::move(*t);
    eraseUnused(buffers);
    int64_t bytes = assignOffsets(buffers, lifetimes(buffers));
    if (failed(placeRegion(bytes)))
      return failure();
    program->setAttr(
        "pim.act_bytes",
        IntegerAttr::get(IntegerType::get(program.getContext(), 64), bytes));
    return success();
  }

private:
  /// Drops the buffers no op names (a value pim-build-program allocated
  /// and then kept elsewhere): they need no bytes. A macro op names a
  /// buffer only in `data` (its other fields are numbers, indices over
  /// pim.params and strings); other ops are searched whole.
  void eraseUnused(SmallVectorImpl<BufferOp> &buffers) {
    llvm::StringSet<> used;
    program.getBody().walk([&](Operation *op) {
      if (auto m = dyn_cast<MacroOp>(op)) {
        if (auto data = m.getFields().getAs<DataAttr>("data"))
          used.insert(data.getRegion().getValue());
        return;
      }
      op->getAttrDictionary().walk(
          [&](FlatSymbolRefAttr ref) { used.insert(ref.getValue()); });
    });
    llvm::erase_if(buffers, [&](BufferOp b) {
      if (used.contains(b.getSymName()))
        return false;
      b.erase();
      return true;
    });
  }

  /// Each buffer's lifetime, from the footprints of the entries' steps.
  SmallVector<Lifetime> lifetimes(MutableArrayRef<BufferOp> buffers) {
    FootprintBuilder fp(program, target.org.accessBytes);
    SmallVector<Range> spans; // in the layout without reuse: ascending
    for (BufferOp b : buffers) {
      int64_t at = fp.layout().offsets.lookup(b.getSymName());
      spans.push_back({at, at + b.getBytes()});
    }
    SmallVector<Lifetime> live(buffers.size());
    SmallVector<Coverage> written(buffers.size()); // by the run so far
    SymbolTable symbols(program);
    Attribute barrier = StringAttr::get(program.getContext(), "barrier");
    int64_t epoch = 0, entry = 0;
    auto touch = [&](size_t i, const Access &a) {
      Lifetime &l = live[i];
      l.always |= l.entry >= 0 && l.entry != entry;
      l.entry = entry;
      if (l.first < 0)
        l.first = epoch;
      l.last = epoch;
      Range r{std::max(a.where.lo, spans[i].lo),
              std::min(a.where.hi, spans[i].hi)};
      if (!a.written && !written[i].covers(r))
        l.always = true; // it may read a value from an earlier run
      else if (a.written && a.exact)
        written[i].add(r);
    };
    for (auto e : program.getBody().front().getOps<EntryOp>()) {
      for (Attribute step : e.getSteps()) {
        if (step == barrier) {
          ++epoch;
          continue;
        }
        Footprint f = fp.of(symbols, cast<FlatSymbolRefAttr>(step).getValue());
        if (f.everything)
          for (auto [i, span] : llvm::enumerate(spans))
            touch(i, Access{fp.actRegion(), span, Range{}});
        for (const Access &a : f.accesses) {
          if (a.region != fp.actRegion())
            continue;
          auto it = llvm::upper_bound(
              spans, a.where.lo,
              [](int64_t lo, const Range &s) { return lo < s.lo; });
          for (size_t i = it == spans.begin() ? 0 : it - spans.begin() - 1;
               i < spans.size() && spans[i].lo < a.where.hi; ++i)
            if (a.where.overlaps(spans[i]))
              touch(i, a);
        }
      }
      ++epoch; // entries never run together
      ++entry;
    }
    for (Lifetime &l : live)
      l.always |= l.first < 0;
    for (size_t i : readAfterTheRun(buffers))
      live[i].always = true;
    return live;
  }

  /// The buffers the runtime reads after a run (the `logits` op's input).
  SmallVector<size_t> readAfterTheRun(MutableArrayRef<BufferOp> buffers) {
    llvm::StringMap<size_t> index;
    for (auto [i, b] : llvm::enumerate(buffers))
      index[b.getSymName()] = i;
    SmallVector<size_t> out;
    for (auto k : program.getBody().front().getOps<KernelOp>())
      for (auto h : k.getBody().front().getOps<HostOp>()) {
        if (h.getName() != "logits")
          continue;
        auto in = h.getArgs().getAs<DictionaryAttr>("in");
        auto ref = in ? in.getAs<FlatSymbolRefAttr>("buf") : nullptr;
        if (ref && index.count(ref.getValue()))
          out.push_back(index.lookup(ref.getValue()));
      }
    return out;
  }

  /// Offsets, first-fit in order of first use: each buffer at the lowest
  /// 64-byte aligned offset clear of the buffers placed so far whose
  /// lifetimes overlap its own. Returns the bytes of act used.
  int64_t assignOffsets(MutableArrayRef<BufferOp> buffers,
                        ArrayRef<Lifetime> live) {
    constexpr int64_t kEver = std::numeric_limits<int64_t>::max();
    auto span = [&](size_t i) -> std::pair<int64_t, int64_t> {
      if (live[i].always)
        return {-1, kEver};
      return {live[i].first, live[i].last};
    };
    SmallVector<size_t> order(buffers.size());
    std::iota(order.begin(), order.end(), 0);
    llvm::stable_sort(order, [&](size_t a, size_t b) {
      return span(a).first < span(b).first;
    });
    struct Placed {
      int64_t offset, bytes;
      size_t index;
    };
    SmallVector<Placed> placed;
    int64_t total = 0;
    for (size_t i : order) {
      auto [first, last] = span(i);
      SmallVector<Placed> clash;
      for (const Placed &p : placed) {
        auto [pf, pl] = span(p.index);
        if (pf <= last && first <= pl)
          clash.push_back(p);
      }
      llvm::sort(clash, [](const Placed &a, const Placed &b) {
        return a.offset < b.offset;
      });
      int64_t bytes = llvm::alignTo(buffers[i].getBytes(), 64), at = 0;
      for (const Placed &c : clash) {
        if (at + bytes <= c.offset)
          break;
        at = std::max(at, c.offset + c.bytes);
      }
      buffers[i].setOffset(at);
      placed.push_back({at, bytes, i});
      total = std::max(total, at + bytes);
    }
    return total;
  }

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
      auto experts =
          program->getAttrOfType<IntegerAttr>("pim.expert_weight_rows");
      auto mb = [&](int64_t n) { return n * double(perRow) / 1e6; };
      InFlightDiagnostic d = module.emitError();
      d << "model does not fit target '" << program.getTarget()
        << "': it needs " << need << " DRAM rows per bank, the target has "
        << rows << " (short by " << need - rows
        << " rows = " << llvm::formatv("{0:F1}", mb(need - rows))
        << " MB); weights take " << wRows << " rows ("
        << llvm::formatv("{0:F1}", mb(wRows)) << " MB placed), the KV "
        << "cache " << kvRows << " rows ("
        << (maxContext ? maxContext.getInt() : 0)
        << " positions; --max-context lowers it), activations " << aRows
        << " rows";
      // Each expert's rows are reserved on every channel, though its GEMV
      // may use fewer (docs/backend.md, "MoE on PIM").
      if (experts)
        d << "; of the weights, the MoE experts take " << experts.getInt()
          << " rows (--dispatch moe=host runs them as host calls)";
      return d;
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
