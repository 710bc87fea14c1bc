//===- Schedule.cpp - pim-schedule: barriers from what each step touches --===//
//
// The steps of an entry between two barriers run concurrently
// (docs/pimsim-isa.md, "Entry points"). pim-build-program lists the steps
// in model order with no barriers; this pass puts one before each step that
// touches what a step since the last barrier writes, or writes what such a
// step touches (read after write, write after read, write after write), and
// one at the end, so an entry returns with its work done.
//
// A step's footprint is what its ops can touch, over every value their loop
// variables, `ch` and the parameters can take: byte ranges of the
// host-visible regions (a kernel's host-op buffers, a macro op's `data`),
// and DRAM rows on the stream's channels (`row` of MACs, loads and stores).
// A macro op whose effect this pass does not know touches everything.
// It runs after pim-plan-memory: every buffer has its offset in act.
//
//===----------------------------------------------------------------------===//
#include "pimc/Dialect/PIM/IR/PIMHostOp.h"
#include "pimc/Dialect/PIM/Transforms/Passes.h"

#include "mlir/IR/SymbolTable.h"

#include <algorithm>

namespace pimc::pim {
#define GEN_PASS_DEF_PIMSCHEDULE
#include "pimc/Dialect/PIM/Transforms/Passes.h.inc"
} // namespace pimc::pim

using namespace mlir;
using namespace pimc::pim;

namespace {

/// [lo, hi): half-open, so an empty range overlaps nothing.
struct Range {
  int64_t lo = 0, hi = 0;
  bool overlaps(const Range &o) const {
    return lo < hi && o.lo < o.hi && lo < o.hi && o.lo < hi;
  }
};

/// One access: bytes of a host-visible region (`region` set), or rows of
/// the DRAM on a channel range.
struct Access {
  StringAttr region; // null: DRAM rows
  Range where;       // bytes of the region, or rows
  Range channels;    // DRAM only
  bool written = false;
  bool conflicts(const Access &o) const {
    if (!written && !o.written)
      return false;
    if (region != o.region || !where.overlaps(o.where))
      return false;
    return region || channels.overlaps(o.channels);
  }
};

/// What one step may touch.
struct Footprint {
  SmallVector<Access> accesses;
  bool everything = false; // an effect this pass does not model
  bool conflicts(const Footprint &o) const {
    if (everything || o.everything)
      return true;
    for (const Access &a : accesses)
      for (const Access &b : o.accesses)
        if (a.conflicts(b))
          return true;
    return false;
  }
};

/// Footprints of a program's streams and kernels.
class FootprintBuilder {
public:
  FootprintBuilder(ProgramOp program, int64_t accessBytes)
      : accessBytes(accessBytes),
        act(StringAttr::get(program.getContext(), "act")) {
    for (auto p : program.getBody().front().getOps<ParamOp>())
      params[p.getSymName()] = {p.getMin(), p.getMax() + 1};
    buffers = placedBuffers(program);
  }

  Footprint of(KernelOp kernel) {
    Footprint f;
    for (auto h : kernel.getBody().front().getOps<HostOp>()) {
      pimsim::HostOp op;
      auto intern = [](pimsim::HostTensor) -> int64_t { return 0; };
      auto param = [](StringRef) -> int64_t { return 0; };
      auto buffer = [&](StringRef name) -> std::optional<int64_t> {
        auto it = buffers.find(name);
        if (it == buffers.end())
          return std::nullopt;
        return it->second;
      };
      if (readHostOp(h.getName(), h.getArgs(), intern, param, buffer, op)) {
        f.everything = true; // the verifier says what is wrong
        continue;
      }
      pimsim::forEachHostBuffer(
          op, [&](const pimsim::ActBuffer &b, bool written) {
            f.accesses.push_back(
                {act, {b.offset, b.offset + b.bytes()}, {}, written});
          });
    }
    return f;
  }

  Footprint of(StreamOp stream) {
    Footprint f;
    ArrayRef<int64_t> ch = stream.getChannels();
    channels = {ch[0], ch[0] + ch[1]};
    loops.clear();
    walk(stream.getBody().front(), f);
    return f;
  }

private:
  /// The smallest and largest value of a field (a constant or #pim.index)
  /// over `ch`, the enclosing loops and the parameters; failure when it is
  /// neither.
  FailureOr<Range> bounds(Attribute value) {
    std::string error;
    FailureOr<LinearIndex> index = decomposeIndex(value, error);
    if (failed(index))
      return failure();
    Range r{index->base, index->base};
    for (const IndexTerm &t : index->terms) {
      Range v; // the variable's values, [lo, hi]
      if (t.var == IndexTerm::Var::Channel) {
        v = {0, channels.hi - channels.lo - 1};
      } else if (t.var == IndexTerm::Var::Loop) {
        if (t.loop >= loops.size())
          return failure();
        v = {0, loops[t.loop] - 1};
      } else {
        auto it = params.find(t.param.getValue());
        if (it == params.end())
          return failure();
        v = {it->second.lo, it->second.hi - 1};
      }
      int64_t a = t.step * v.lo, b = t.step * v.hi;
      r.lo += std::min(a, b);
      r.hi += std::max(a, b);
    }
    return r;
  }

  /// The largest value of an optional size field (default 1).
  int64_t maxOf(DictionaryAttr fields, StringRef key, int64_t dflt = 1) {
    Attribute v = fields.get(key);
    if (!v)
      return dflt;
    FailureOr<Range> r = bounds(v);
    return succeeded(r) ? r->hi : -1;
  }

  void walk(Block &body, Footprint &f) {
    for (Operation &op : body) {
      if (auto loop = dyn_cast<LoopOp>(op)) {
        FailureOr<Range> count = bounds(loop.getCount());
        if (failed(count)) {
          f.everything = true;
          continue;
        }
        loops.push_back(std::max<int64_t>(count->hi, 1));
        walk(loop.getBody().front(), f);
        loops.pop_back();
      } else if (auto macro = dyn_cast<MacroOp>(op)) {
        add(macro, f);
      } else {
        f.everything = true;
      }
    }
  }

  /// What macro op `m` touches (docs/pimsim-isa.md, "The ops").
  void add(MacroOp m, Footprint &f) {
    std::optional<pimsim::Opcode> op = pimsim::parseOpcode(m.getOp());
    if (!op) {
      f.everything = true;
      return;
    }
    using pimsim::Opcode;
    DictionaryAttr fields = m.getFields();
    switch (*op) {
    case Opcode::Barrier:
    case Opcode::Sync:
    case Opcode::SetModel:
    case Opcode::SetHead:
    case Opcode::SetCfr:
    case Opcode::MvSB:
    case Opcode::MvGB:
    case Opcode::WrBias:
    case Opcode::EwMul:
    case Opcode::EwAdd:
    case Opcode::Af:
      break; // the channel's own buffers and registers only
    case Opcode::MacAB:
    case Opcode::MacSB:
    case Opcode::MacPB:
    case Opcode::CopyBkGb:
      addRows(fields, /*written=*/false, f);
      break;
    case Opcode::CopyGbBk:
    case Opcode::WrAB:
      addRows(fields, /*written=*/true, f);
      break;
    case Opcode::WrGB:
      addData(fields, maxOf(fields, "bytes", 0), /*written=*/false, f);
      break;
    case Opcode::St:
      addRows(fields, /*written=*/true, f);
      addData(fields, maxOf(fields, "count") * accessBytes, false, f);
      break;
    case Opcode::Ld:
      addRows(fields, /*written=*/false, f);
      addData(fields, maxOf(fields, "count") * accessBytes, true, f);
      break;
    case Opcode::RdAcc:
    case Opcode::RdAf:
      addData(fields, maxOf(fields, "count") * accessBytes, true, f);
      break;
    case Opcode::Sfm:
      addData(fields, 8, /*written=*/true, f); // [max, sum] (1.4)
      break;
    case Opcode::Call:
    case Opcode::Loop:
      f.everything = true;
      break;
    }
  }

  void addRows(DictionaryAttr fields, bool written, Footprint &f) {
    Attribute value = fields.get("row");
    FailureOr<Range> row = value ? bounds(value) : FailureOr<Range>(failure());
    if (failed(row)) {
      f.everything = true;
      return;
    }
    f.accesses.push_back({{}, {row->lo, row->hi + 1}, channels, written});
  }

  void addData(DictionaryAttr fields, int64_t bytes, bool written,
               Footprint &f) {
    auto data = fields.getAs<DataAttr>("data");
    if (!data)
      return; // no host-visible data (e.g. sfm without statistics)
    FailureOr<Range> at = bounds(data.getOffset());
    if (failed(at) || bytes < 0) {
      f.everything = true;
      return;
    }
    // A placed buffer: bytes of act from its offset.
    StringAttr region = data.getRegion().getAttr();
    if (auto it = buffers.find(region.getValue()); it != buffers.end()) {
      region = act;
      at->lo += it->second;
      at->hi += it->second;
    }
    f.accesses.push_back({region, {at->lo, at->hi + bytes}, {}, written});
  }

  int64_t accessBytes;
  StringAttr act;
  llvm::StringMap<Range> params;    // values [min, max + 1)
  llvm::StringMap<int64_t> buffers; // placed pim.buffers: offset in act
  Range channels;                   // of the current stream
  SmallVector<int64_t> loops;       // trip counts (maximum) of enclosing loops
};

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
    Footprint f;
    StringRef name = cast<FlatSymbolRefAttr>(step).getValue();
    if (auto k = symbols.lookup<KernelOp>(name))
      f = fp.of(k);
    else if (auto s = symbols.lookup<StreamOp>(name))
      f = fp.of(s);
    else
      f.everything = true;
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
      // Footprints are in act: buffers must have their place there.
      for (auto b : program.getBody().front().getOps<BufferOp>())
        if (!b.getOffset()) {
          b.emitError("pim-schedule: buffer is not placed in act "
                      "(run pim-plan-memory first)");
          return signalPassFailure();
        }
      SymbolTable symbols(program);
      FootprintBuilder fp(program, target->org.accessBytes);
      for (auto entry : program.getBody().front().getOps<EntryOp>())
        schedule(entry, symbols, fp);
    }
  }
};

} // namespace
