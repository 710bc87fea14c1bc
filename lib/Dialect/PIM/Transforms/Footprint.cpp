//===- Footprint.cpp - what a step of an entry may touch ------------------===//
//
// Footprints for pim-schedule and pim-plan-memory (Footprint.h).
//
//===----------------------------------------------------------------------===//
#include "Footprint.h"

#include "pimc/Dialect/PIM/IR/PIMHostOp.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;
using namespace pimc::pim;

bool Footprint::conflicts(const Footprint &o) const {
  if (everything || o.everything)
    return true;
  for (const Access &a : accesses)
    for (const Access &b : o.accesses)
      if (a.conflicts(b))
        return true;
  return false;
}

BufferLayout pimc::pim::bufferLayout(ProgramOp program) {
  BufferLayout layout;
  auto buffers = program.getBody().front().getOps<BufferOp>();
  layout.placed = llvm::all_of(
      buffers, [](BufferOp b) { return b.getOffset().has_value(); });
  if (layout.placed) {
    layout.offsets = placedBuffers(program);
    return layout;
  }
  int64_t next = 0;
  for (BufferOp b : buffers) {
    layout.offsets[b.getSymName()] = next;
    next += llvm::alignTo(b.getBytes(), 64);
  }
  return layout;
}

FootprintBuilder::FootprintBuilder(ProgramOp program, int64_t accessBytes)
    : accessBytes(accessBytes), ctx(program.getContext()),
      act(StringAttr::get(program.getContext(), "act")),
      buffers(bufferLayout(program)) {
  for (auto p : program.getBody().front().getOps<ParamOp>()) {
    params[p.getSymName()] = {p.getMin(), p.getMax() + 1};
    if (p.getDevice())
      deviceRoots[p.getSymName()] = p.getSymName().str();
    else if (auto src = p.getSrcAttr();
             src && deviceRoots.count(src.getValue()))
      deviceRoots[p.getSymName()] = deviceRoots[src.getValue()];
  }
}

Access FootprintBuilder::deviceParam(StringRef name, bool written) const {
  // '@' is in no region name: the location is the parameter's alone.
  return {StringAttr::get(ctx, "@param:" + name),
          {0, 1},
          {},
          written,
          /*exact=*/true};
}

Footprint FootprintBuilder::of(SymbolTable &symbols, StringRef name) {
  if (auto k = symbols.lookup<KernelOp>(name))
    return of(k);
  if (auto s = symbols.lookup<StreamOp>(name))
    return of(s);
  Footprint f;
  f.everything = true;
  return f;
}

Footprint FootprintBuilder::of(KernelOp kernel) {
  Footprint f;
  auto intern = [](pimsim::HostTensor) -> int64_t { return 0; };
  auto param = [](StringRef) -> int64_t { return 0; };
  auto buffer = lookupIn(buffers.offsets);
  for (auto h : kernel.getBody().front().getOps<HostOp>()) {
    pimsim::HostOp op;
    if (readHostOp(h.getName(), h.getArgs(), intern, param, buffer, op)) {
      f.everything = true; // the verifier says what is wrong
      continue;
    }
    pimsim::forEachHostBuffer(
        op, [&](const pimsim::ActBuffer &b, bool written) {
          f.accesses.push_back({act,
                                {b.offset, b.offset + b.bytes()},
                                {},
                                written,
                                /*exact=*/true});
        });
  }
  if (ArrayAttr sets = kernel.getSetsAttr())
    for (Attribute a : sets)
      if (auto param =
              cast<DictionaryAttr>(a).getAs<FlatSymbolRefAttr>("param"))
        f.accesses.push_back(deviceParam(param.getValue(), /*written=*/true));
  return f;
}

Footprint FootprintBuilder::of(StreamOp stream) {
  Footprint f;
  ArrayRef<int64_t> ch = stream.getChannels();
  channels = {ch[0], ch[0] + ch[1]};
  loops.clear();
  fixedLoops.clear();
  usesUnits = false;
  walk(stream.getBody().front(), f);
  // The PIM units of its channels (global buffer, accumulators, mode
  // registers): two streams that use them on a shared channel would
  // interleave their broadcasts and MACs, so they never run concurrently.
  if (usesUnits)
    f.accesses.push_back({StringAttr::get(ctx, "@units"),
                          channels,
                          {},
                          /*written=*/true,
                          /*exact=*/false});
  // The device parameters its fields use: read before any of its ops run
  // (the stream is expanded with their values).
  if (deviceRoots.empty())
    return f;
  llvm::StringSet<> used;
  stream.walk([&](Operation *op) {
    op->getAttrDictionary().walk([&](IndexAttr index) {
      for (Attribute p : index.getParams())
        if (auto it = deviceRoots.find(cast<FlatSymbolRefAttr>(p).getValue());
            it != deviceRoots.end() && used.insert(it->second).second)
          f.accesses.insert(f.accesses.begin(),
                            deviceParam(it->second, /*written=*/false));
    });
  });
  return f;
}

/// The smallest and largest value of a field (a constant or #pim.index)
/// over `ch`, the enclosing loops and the parameters; failure when it is
/// neither.
FailureOr<Range> FootprintBuilder::bounds(Attribute value) {
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
int64_t FootprintBuilder::maxOf(DictionaryAttr fields, StringRef key,
                                int64_t dflt) {
  Attribute v = fields.get(key);
  if (!v)
    return dflt;
  FailureOr<Range> r = bounds(v);
  return succeeded(r) ? r->hi : -1;
}

void FootprintBuilder::walk(Block &body, Footprint &f) {
  for (Operation &op : body) {
    if (auto loop = dyn_cast<LoopOp>(op)) {
      FailureOr<Range> count = bounds(loop.getCount());
      if (failed(count)) {
        f.everything = true;
        continue;
      }
      loops.push_back(std::max<int64_t>(count->hi, 1));
      fixedLoops.push_back(count->lo == count->hi);
      walk(loop.getBody().front(), f);
      loops.pop_back();
      fixedLoops.pop_back();
    } else if (auto macro = dyn_cast<MacroOp>(op)) {
      add(macro, f);
    } else {
      f.everything = true;
    }
  }
}

/// What macro op `m` touches (docs/pimsim-isa.md, "The ops").
void FootprintBuilder::add(MacroOp m, Footprint &f) {
  std::optional<pimsim::Opcode> op = pimsim::parseOpcode(m.getOp());
  if (!op) {
    f.everything = true;
    return;
  }
  using pimsim::Opcode;
  usesUnits |= !llvm::is_contained(
      {Opcode::Ld, Opcode::St, Opcode::Barrier, Opcode::Sync}, *op);
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

void FootprintBuilder::addRows(DictionaryAttr fields, bool written,
                               Footprint &f) {
  Attribute value = fields.get("row");
  FailureOr<Range> row = value ? bounds(value) : FailureOr<Range>(failure());
  if (failed(row)) {
    f.everything = true;
    return;
  }
  f.accesses.push_back({{}, {row->lo, row->hi + 1}, channels, written});
}

void FootprintBuilder::addData(DictionaryAttr fields, int64_t bytes,
                               bool written, Footprint &f) {
  auto data = fields.getAs<DataAttr>("data");
  if (!data)
    return; // no host-visible data (e.g. sfm without statistics)
  FailureOr<Range> at = bounds(data.getOffset());
  if (failed(at) || bytes < 0) {
    f.everything = true;
    return;
  }
  // A buffer: bytes of act from its offset.
  StringAttr region = data.getRegion().getAttr();
  if (auto it = buffers.offsets.find(region.getValue());
      it != buffers.offsets.end()) {
    region = act;
    at->lo += it->second;
    at->hi += it->second;
  }
  Attribute count = fields.get("count");
  bool exact = region == act && dense(data.getOffset(), bytes) &&
               (!count || isa<IntegerAttr>(count));
  f.accesses.push_back({region, {at->lo, at->hi + bytes}, {}, written, exact});
}

/// Whether the `width` bytes from each value of `value` cover its bounds
/// with no gap, in every run: no parameter, fixed loop trip counts, and
/// each variable's step at most the extent of the steps below it (a
/// mixed-radix walk of the range).
bool FootprintBuilder::dense(Attribute value, int64_t width) {
  std::string error;
  FailureOr<LinearIndex> index = decomposeIndex(value, error);
  if (failed(index) || width <= 0)
    return false;
  SmallVector<std::pair<int64_t, int64_t>> steps; // (|step|, values)
  for (const IndexTerm &t : index->terms) {
    int64_t n = 0;
    if (t.var == IndexTerm::Var::Channel)
      n = channels.hi - channels.lo;
    else if (t.var == IndexTerm::Var::Loop && t.loop < loops.size() &&
             fixedLoops[t.loop])
      n = loops[t.loop];
    else
      return false;
    if (n > 1)
      steps.push_back({std::abs(t.step), n});
  }
  llvm::sort(steps);
  int64_t extent = width;
  for (auto [step, n] : steps) {
    if (step > extent)
      return false;
    extent += step * (n - 1);
  }
  return true;
}
