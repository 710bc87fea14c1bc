//===- Simulator.cpp - program execution on the engine --------------------===//
#include "pimsim/Simulator.h"
#include "pimsim/Functional.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

using namespace llvm;
using namespace pimsim;

//===----------------------------------------------------------------------===//
// SparseMemory
//===----------------------------------------------------------------------===//

void SparseMemory::write(uint64_t addr, ArrayRef<uint8_t> bytes) {
  while (!bytes.empty()) {
    uint64_t key = addr / rowBytes, at = addr % rowBytes;
    size_t n = std::min<size_t>(bytes.size(), rowBytes - at);
    std::vector<uint8_t> &row = rows[key];
    if (row.empty())
      row.assign(rowBytes, 0);
    std::memcpy(row.data() + at, bytes.data(), n);
    bytes = bytes.drop_front(n);
    addr += n;
  }
}

void SparseMemory::read(uint64_t addr, MutableArrayRef<uint8_t> out) const {
  while (!out.empty()) {
    uint64_t key = addr / rowBytes, at = addr % rowBytes;
    size_t n = std::min<size_t>(out.size(), rowBytes - at);
    auto it = rows.find(key);
    if (it == rows.end())
      std::memset(out.data(), 0, n); // never-written memory reads as zero
    else
      std::memcpy(out.data(), it->second.data() + at, n);
    out = out.drop_front(n);
    addr += n;
  }
}

//===----------------------------------------------------------------------===//
// Simulator
//===----------------------------------------------------------------------===//

Simulator::Simulator(Target target, SimMode mode)
    : tgt(std::move(target)), simMode(mode), memory(tgt.org.rowBytes()) {}

Simulator::~Simulator() = default;

Error Simulator::loadProgram(Program program) {
  if (Error e = validateProgram(program, tgt))
    return e;
  if (simMode == SimMode::Functional)
    if (Error e = checkFunctionalTarget(tgt))
      return e;
  functional.reset();
  regionData.clear();
  prog = std::make_unique<Program>(std::move(program));
  if (simMode == SimMode::Functional) {
    // Regions are sparse too (4 KiB pages that exist once written), so a
    // program's multi-GB weight regions cost nothing until used.
    regionData.assign(prog->regions.size(), SparseMemory(4096));
    functional =
        std::make_unique<FunctionalModel>(tgt, *prog, memory, regionData);
  }
  return Error::success();
}

Expected<int64_t> Simulator::regionIndex(StringRef region, uint64_t offset,
                                         size_t bytes, StringRef what) const {
  if (simMode != SimMode::Functional)
    return createStringError("regions hold no data in timing mode");
  if (!prog)
    return createStringError("no program loaded");
  for (size_t i = 0; i < prog->regions.size(); ++i) {
    const Region &r = prog->regions[i];
    if (r.name != region)
      continue;
    if (offset > static_cast<uint64_t>(r.bytes) ||
        bytes > static_cast<uint64_t>(r.bytes) - offset)
      return createStringError(formatv(
          "{0} of {1} bytes at offset {2} is outside region '{3}' ({4} bytes)",
          what, bytes, offset, r.name, r.bytes));
    return static_cast<int64_t>(i);
  }
  return createStringError(formatv("program has no region '{0}'", region));
}

Error Simulator::writeRegion(StringRef region, uint64_t offset,
                             ArrayRef<uint8_t> bytes) {
  auto index = regionIndex(region, offset, bytes.size(), "write");
  if (!index)
    return index.takeError();
  regionData[*index].write(offset, bytes);
  return Error::success();
}

Expected<std::vector<uint8_t>>
Simulator::readRegion(StringRef region, uint64_t offset, size_t bytes) const {
  auto index = regionIndex(region, offset, bytes, "read");
  if (!index)
    return index.takeError();
  std::vector<uint8_t> out(bytes);
  regionData[*index].read(offset, out);
  return out;
}

Error Simulator::setDeviceParams(const HostKernel &kernel,
                                 std::vector<int64_t> &params) const {
  if (simMode != SimMode::Functional || kernel.sets.empty())
    return Error::success();
  for (const ParamSet &set : kernel.sets) {
    const Param &prm = prog->params[set.param];
    uint8_t raw[4];
    regionData[set.region].read(set.offset, raw);
    int64_t v = static_cast<int32_t>(support::endian::read32le(raw));
    if (v < prm.min || v > prm.max)
      return createStringError(formatv(
          "host kernel '{0}' sets parameter '{1}' to {2}, outside [{3}, {4}] "
          "(read from region '{5}' at {6})",
          kernel.name, prm.name, v, prm.min, prm.max,
          prog->regions[set.region].name, set.offset));
    params[set.param] = v;
  }
  updateDerivedParams(*prog, params);
  return Error::success();
}

Error Simulator::writeMemory(uint64_t addr, ArrayRef<uint8_t> bytes) {
  if (simMode != SimMode::Functional)
    return createStringError("device memory holds no data in timing mode");
  if (addr + bytes.size() > static_cast<uint64_t>(tgt.org.totalBytes()))
    return createStringError(
        formatv("write of {0} bytes at {1:x} is outside the device ({2} bytes)",
                bytes.size(), addr, tgt.org.totalBytes()));
  memory.write(addr, bytes);
  return Error::success();
}

Expected<std::vector<uint8_t>> Simulator::readMemory(uint64_t addr,
                                                     size_t bytes) const {
  if (simMode != SimMode::Functional)
    return createStringError("device memory holds no data in timing mode");
  if (addr + bytes > static_cast<uint64_t>(tgt.org.totalBytes()))
    return createStringError(
        formatv("read of {0} bytes at {1:x} is outside the device ({2} bytes)",
                bytes, addr, tgt.org.totalBytes()));
  std::vector<uint8_t> out(bytes);
  memory.read(addr, out);
  return out;
}

namespace {

/// Expands one channel's instruction list, loops unrolled.
class StreamExpander {
public:
  StreamExpander(const Target &target, int64_t channel, int64_t channelIndex,
                 ArrayRef<int64_t> params, std::vector<Request> &out,
                 std::vector<RequestOperand> *operands)
      : tgt(target), org(target.org), channel(channel),
        channelIndex(channelIndex), params(params), out(out),
        operands(operands) {}

  /// Records `sync` / `call` as rendezvous cuts instead of per-channel
  /// barriers (used by Simulator::run).
  void setCuts(std::vector<Simulator::StreamCut> *c, int64_t stream) {
    cuts = c;
    streamIndex = stream;
  }

  Error expand(ArrayRef<Instruction> body) {
    for (const Instruction &inst : body)
      if (Error e = expandOne(inst))
        return e;
    return Error::success();
  }

private:
  Error expandOne(const Instruction &inst) {
    if (!inst.channels.empty() && !channelSetContains(inst.channels, channel))
      return Error::success();
    auto f = [&](Field field) {
      return inst.at(field, loopIndices, channelIndex, params);
    };
    if (inst.op == Opcode::Loop) {
      int64_t count = f(Field::Count);
      loopIndices.push_back(0);
      for (int64_t i = 0; i < count; ++i) {
        loopIndices.back() = i;
        if (Error e = expand(inst.body))
          return e;
      }
      loopIndices.pop_back();
      return Error::success();
    }
    // Functional mode: the data operand of each request (burst i of the
    // op), recorded in the side table indexed by Request::tag.
    if (operands)
      if (Error e = checkFunctional(inst, f))
        return e;
    auto operand = [&](int64_t i) {
      if (!operands)
        return;
      RequestOperand o;
      o.region = inst.dataRegion;
      o.offset = f(Field::Data) + i * org.accessBytes;
      if (inst.op == Opcode::WrGB)
        o.gbOffset = f(Field::Offset) + i * org.accessBytes;
      else if (inst.op == Opcode::MacAB || inst.op == Opcode::MacSB ||
               inst.op == Opcode::MacPB)
        o.gbOffset = f(Field::Offset); // base of the MAC's input
      else if (inst.op == Opcode::RdAcc)
        o.gbOffset = i * (org.accessBytes / 4); // first PIM unit
      else if (inst.op == Opcode::MvSB)         // its first PIM unit
        o.gbOffset =
            f(Field::Bank) / tgt.pim.banksPerUnit + i * (org.accessBytes / 4);
      else if (inst.op == Opcode::Sfm) {
        o.length = f(Field::Length);
        o.fn = inst.fn;
      }
      if (inst.op == Opcode::MacAB || inst.op == Opcode::MacSB ||
          inst.op == Opcode::MacPB || inst.op == Opcode::RdAcc ||
          inst.op == Opcode::MvSB)
        o.reg = f(Field::Reg); // accumulator register (1.3)
      pending = o;
    };
    // Consecutive columns of one op may run past the end of a row into the
    // next one (a weight tile spanning rows).
    auto columns = [&](RequestType type, int64_t bank, int64_t row, int64_t col,
                       int64_t count) {
      for (int64_t i = 0; i < count; ++i) {
        int64_t linear = col + i;
        operand(i);
        emit(type, bank, row + linear / org.columns, linear % org.columns);
      }
    };
    auto repeat = [&](RequestType type, int64_t bank, int64_t row,
                      int64_t count) {
      for (int64_t i = 0; i < count; ++i) {
        operand(i);
        emit(type, bank, row, 0);
      }
    };
    int64_t bursts = std::max<int64_t>(
        1, (f(Field::Bytes) + org.accessBytes - 1) / org.accessBytes);
    switch (inst.op) {
    case Opcode::MacAB:
      columns(RequestType::MacAB, 0, f(Field::Row), f(Field::Col),
              f(Field::Count));
      return Error::success();
    case Opcode::MacSB:
      columns(RequestType::MacSB, f(Field::Bank), f(Field::Row), f(Field::Col),
              f(Field::Count));
      return Error::success();
    case Opcode::MacPB:
      columns(RequestType::MacPB, f(Field::Bank), f(Field::Row), f(Field::Col),
              f(Field::Count));
      return Error::success();
    case Opcode::WrGB:
      repeat(RequestType::WrGB, f(Field::Bank), f(Field::Row), bursts);
      return Error::success();
    case Opcode::WrBias:
      repeat(RequestType::WrGB, 0, 0, f(Field::Count));
      return Error::success();
    case Opcode::RdAcc:
    case Opcode::RdAf:
      repeat(RequestType::RdAcc, 0, 0, f(Field::Count));
      return Error::success();
    case Opcode::MvSB:
      repeat(RequestType::MvSB, f(Field::Bank), f(Field::Row),
             std::max<int64_t>(1, f(Field::Count)));
      return Error::success();
    case Opcode::MvGB:
      repeat(RequestType::MvGB, f(Field::Bank), f(Field::Row),
             std::max<int64_t>(1, f(Field::Count)));
      return Error::success();
    case Opcode::Sfm:
      // ALiBi and the cap (2.2) are passes of the unit over the scores
      // before the softmax, one PIM_SFM each whose operand carries them:
      // the bias, then the cap, then the softmax.
      if (!inst.alibi.empty()) {
        int64_t head = f(Field::Head);
        if (head < 0 || head >= int64_t(inst.alibi.size()))
          return createStringError(
              formatv("sfm head={0} is outside its {1} alibi slopes", head,
                      inst.alibi.size()));
        operand(0);
        if (operands) {
          pending.slope = inst.alibi[size_t(head)];
          pending.key0 = f(Field::Key0);
          pending.alibiScale = inst.alibiScale;
        }
        emit(RequestType::Sfm, 0, 0, 0);
      }
      if (inst.cap != 0.0f) {
        operand(0);
        if (operands)
          pending.cap = inst.cap;
        emit(RequestType::Sfm, 0, 0, 0);
      }
      operand(0);
      emit(RequestType::Sfm, 0, 0, 0);
      return Error::success();
    case Opcode::EwMul:
      columns(RequestType::EwMul, 0, f(Field::Row), f(Field::Col),
              f(Field::Count));
      return Error::success();
    case Opcode::Af:
      repeat(RequestType::Af, 0, 0, std::max<int64_t>(1, f(Field::Count)));
      return Error::success();
    case Opcode::Ld:
      columns(RequestType::Read, f(Field::Bank), f(Field::Row), f(Field::Col),
              f(Field::Count));
      return Error::success();
    case Opcode::St:
      columns(RequestType::Write, f(Field::Bank), f(Field::Row), f(Field::Col),
              f(Field::Count));
      return Error::success();
    case Opcode::Barrier:
      emit(RequestType::Barrier, 0, 0, 0);
      return Error::success();
    case Opcode::Sync:
    case Opcode::Call:
      // A rendezvous of all of the stream's channels; without a cut list
      // (expandStream's public form) it orders like a barrier.
      if (!inst.channels.empty())
        return createStringError(formatv(
            "'{0}' is a rendezvous of the whole stream and cannot be narrowed "
            "with channels=",
            opcodeName(inst.op)));
      if (!cuts) {
        emit(RequestType::Barrier, 0, 0, 0);
        return Error::success();
      }
      cuts->push_back({out.size(),
                       inst.op == Opcode::Call ? f(Field::Kernel) : -1,
                       streamIndex, cutOrdinal++});
      return Error::success();
    case Opcode::SetModel:
      emit(RequestType::SetModel, 0, 0, 0);
      return Error::success();
    case Opcode::SetHead:
      emit(RequestType::SetHead, 0, 0, 0);
      return Error::success();
    case Opcode::WrAB:
    case Opcode::CopyBkGb:
    case Opcode::CopyGbBk:
    case Opcode::EwAdd:
    case Opcode::SetCfr:
    case Opcode::Loop:
      break;
    }
    return createStringError(formatv("'{0}' inside a stream is not supported "
                                     "by the executor yet",
                                     opcodeName(inst.op)));
  }

  /// Functional mode rejects ops whose data semantics are not modelled and
  /// data ops without a `data=` operand.
  template <typename F> Error checkFunctional(const Instruction &inst, F &f) {
    switch (inst.op) {
    case Opcode::EwMul:
    case Opcode::Af:
    case Opcode::WrBias:
    case Opcode::RdAf:
      return createStringError(formatv(
          "functional mode does not model '{0}' yet", opcodeName(inst.op)));
    case Opcode::WrGB:
    case Opcode::RdAcc:
    case Opcode::Ld:
    case Opcode::St:
      if (inst.dataRegion < 0)
        return createStringError(formatv(
            "'{0}' needs 'data=' in functional mode", opcodeName(inst.op)));
      break;
    default:
      break;
    }
    if (inst.op == Opcode::MvSB) {
      int64_t units = org.banksPerChannel() / tgt.pim.banksPerUnit;
      int64_t first = f(Field::Bank) / tgt.pim.banksPerUnit;
      int64_t n = std::max<int64_t>(1, f(Field::Count)) * (org.accessBytes / 4);
      if (first + n > units)
        return createStringError(formatv(
            "mv_sb bank={0} count={1} moves PIM units {2}..{3}, but a channel "
            "has {4}",
            f(Field::Bank), f(Field::Count), first, first + n - 1, units));
    }
    if (inst.op == Opcode::RdAcc) {
      int64_t units = org.banksPerChannel() / tgt.pim.banksPerUnit;
      int64_t n = f(Field::Count) * (org.accessBytes / 4);
      if (n > units)
        return createStringError(formatv(
            "rd_acc count={0} reads {1} accumulators, but a channel has {2} "
            "PIM units",
            f(Field::Count), n, units));
    }
    return Error::success();
  }

  void emit(RequestType type, int64_t bank, int64_t row, int64_t col) {
    Request r;
    r.type = type;
    r.addr = encodeAddress(tgt, bankAddress(org, channel, bank, row, col));
    if (operands) {
      r.tag = static_cast<uint32_t>(operands->size());
      operands->push_back(pending);
      pending = RequestOperand();
    }
    out.push_back(r);
  }

  const Target &tgt;
  const Organization &org;
  int64_t channel;
  int64_t channelIndex;     // position of `channel` in the stream's channel set
  ArrayRef<int64_t> params; // parameter values
  std::vector<Request> &out;
  std::vector<RequestOperand> *operands; // functional mode only
  RequestOperand pending;                // the next request's operand
  std::vector<int64_t> loopIndices;
  std::vector<Simulator::StreamCut> *cuts = nullptr;
  int64_t streamIndex = 0, cutOrdinal = 0;
};

/// Sends every command to each observer of a list, in order.
class FanOutObserver : public CommandObserver {
public:
  explicit FanOutObserver(std::vector<CommandObserver *> list)
      : list(std::move(list)) {}
  void onCommand(int64_t cycle, Command cmd, const DecodedAddress &addr,
                 const Request *req) override {
    for (CommandObserver *o : list)
      o->onCommand(cycle, cmd, addr, req);
  }
  bool seesRefresh() const override {
    return llvm::any_of(list,
                        [](CommandObserver *o) { return o->seesRefresh(); });
  }

private:
  std::vector<CommandObserver *> list;
};

/// Records, per stream of the phase, the cycle of its last command relative
/// to the phase start (engine cycles are on the run's timeline). A request is
/// found by its position in its channel's request list (the engine passes
/// pointers into the sub-phase's lists), and the stream by the segments of
/// that list.
class StreamCycleObserver : public CommandObserver {
public:
  explicit StreamCycleObserver(int64_t channels)
      : channels(channels), base(channels), first(channels),
        segments(channels) {}
  void startPhase(size_t streams) { last.assign(streams, 0); }
  void addSegment(int64_t channel, size_t start, int64_t slot) {
    segments[channel].push_back({start, slot});
  }
  void clearSegments() {
    for (auto &s : segments)
      s.clear();
  }
  /// Sub-phase work of `channel` starts at request `start` of its list.
  void setWork(int64_t channel, const Request *data, size_t start) {
    base[channel] = data;
    first[channel] = start;
  }
  bool seesRefresh() const override { return false; } // requests only
  void onCommand(int64_t cycle, Command, const DecodedAddress &addr,
                 const Request *req) override {
    if (!req)
      return;
    int64_t c = addr.stack * perStack() + addr.channel;
    if (c < 0 || c >= channels || !base[c] || segments[c].empty())
      return;
    size_t index = static_cast<size_t>(req - base[c]) + first[c];
    const auto &seg = segments[c];
    auto it =
        std::upper_bound(seg.begin(), seg.end(), index,
                         [](size_t i, const std::pair<size_t, int64_t> &s) {
                           return i < s.first;
                         });
    if (it == seg.begin())
      return;
    int64_t slot = std::prev(it)->second;
    last[slot] = std::max(last[slot], cycle - phaseStart);
  }
  std::vector<int64_t> lastCycles() const { return last; }
  void setChannelsPerStack(int64_t n) { channelsPerStack = n; }
  int64_t phaseStart = 0; // the phase's start, in cycles of the timeline

private:
  int64_t perStack() const { return channelsPerStack; }
  int64_t channels;
  int64_t channelsPerStack = 1;
  std::vector<const Request *> base;
  std::vector<size_t> first;
  // Per channel: (first request index, stream slot), by index.
  std::vector<std::vector<std::pair<size_t, int64_t>>> segments;
  std::vector<int64_t> last;
};

/// The unit a near-memory kernel runs on (validateProgram checked it).
const NearMemoryUnit *kernelUnit(const Target &t, const HostKernel &k) {
  for (const NearMemoryUnit &u : t.nearMemory)
    if (u.name == k.unit)
      return &u;
  return nullptr;
}

/// latency_cycles + ceil(elements / elements_per_cycle) memory cycles.
double nearMemoryKernelSeconds(const Target &t, const NearMemoryUnit &u,
                               const HostKernel &k) {
  double cycles = double(u.latencyCycles);
  if (k.elements > 0 && u.elementsPerCycle > 0)
    cycles += std::ceil(double(k.elements) / u.elementsPerCycle);
  return cycles * t.tCKps * 1e-12;
}

double hostKernelSeconds(const HostModel &host, const HostKernel &k) {
  double compute = host.flops > 0 ? double(k.flops) / host.flops : 0;
  double memory =
      host.bandwidthBytes > 0 ? double(k.bytes) / host.bandwidthBytes : 0;
  return host.launchNs * 1e-9 + std::max(compute, memory);
}

void addPhaseStats(Stats &total, const Stats &s) {
  total.cycles += s.cycles;
  total.seconds += s.seconds;
  for (unsigned i = 0; i < kNumCommands; ++i)
    total.commandCounts[i] += s.commandCounts[i];
  total.requests += s.requests;
  total.rowHits += s.rowHits;
  total.rowMisses += s.rowMisses;
  total.bytesRead += s.bytesRead;
  total.bytesWritten += s.bytesWritten;
  total.bytesMac += s.bytesMac;
  total.energyPj += s.energyPj;
  if (total.channels.size() < s.channels.size())
    total.channels.resize(s.channels.size());
  for (size_t c = 0; c < s.channels.size(); ++c) {
    total.channels[c].rowSlotBusy += s.channels[c].rowSlotBusy;
    total.channels[c].columnSlotBusy += s.channels[c].columnSlotBusy;
    total.channels[c].commands += s.channels[c].commands;
    if (s.channels[c].commands > 0) // on the run's timeline
      total.channels[c].lastCycle = s.channels[c].lastCycle;
  }
  if (total.bankBusyCycles.size() < s.bankBusyCycles.size())
    total.bankBusyCycles.resize(s.bankBusyCycles.size());
  for (size_t b = 0; b < s.bankBusyCycles.size(); ++b)
    total.bankBusyCycles[b] += s.bankBusyCycles[b];
}

} // namespace

Error Simulator::expandStream(const Stream &stream, int64_t channel,
                              std::vector<Request> &out,
                              ArrayRef<int64_t> params) const {
  return expandStream(stream, channel, out, params, nullptr);
}

Error Simulator::expandStream(const Stream &stream, int64_t channel,
                              std::vector<Request> &out,
                              ArrayRef<int64_t> params,
                              std::vector<RequestOperand> *operands,
                              std::vector<StreamCut> *cuts,
                              int64_t streamIndex) const {
  int64_t index = 0, position = -1;
  for (const Range &r : stream.channels) {
    if (r.contains(channel))
      position = index + (channel - r.first);
    index += r.count;
  }
  if (position < 0)
    return createStringError(formatv("stream '{0}' does not run on channel {1}",
                                     stream.name, channel));
  StreamExpander expander(tgt, channel, position, params, out, operands);
  if (cuts)
    expander.setCuts(cuts, streamIndex);
  if (Error e = expander.expand(stream.body))
    return createStringError(formatv("stream '{0}', channel {1}: {2}",
                                     stream.name, channel,
                                     toString(std::move(e))));
  return Error::success();
}

Expected<RunReport> Simulator::run(StringRef entryName,
                                   CommandObserver *observer) {
  return run(entryName, {}, nullptr, observer);
}

Expected<RunReport> Simulator::run(StringRef entryName,
                                   const std::map<std::string, int64_t> &inputs,
                                   const HostKernelRunner &runner,
                                   CommandObserver *observer) {
  if (!prog)
    return createStringError("no program loaded");
  const Entry *entry = nullptr;
  for (const Entry &e : prog->entries)
    if (e.name == entryName)
      entry = &e;
  if (!entry) {
    std::string known;
    for (const Entry &e : prog->entries)
      known += (known.empty() ? "" : ", ") + e.name;
    return createStringError(formatv(
        "program has no entry point '{0}' (it has: {1})", entryName, known));
  }
  auto resolved = resolveParams(*prog, inputs);
  if (!resolved)
    return resolved.takeError();
  // Device parameters (2.3) change when the kernels that set them complete.
  std::vector<int64_t> &params = *resolved;

  RunReport report;
  report.entry = entryName.str();
  int64_t channels = tgt.org.totalChannels();
  // Functional mode: the phase's side table of request operands (indexed by
  // Request::tag) and the observer chain. Timing mode has neither.
  std::vector<RequestOperand> phaseOperands;
  std::vector<RequestOperand> *operands = functional ? &phaseOperands : nullptr;
  // Every run records each stream's last command (PhaseReport::
  // streamCycles); the functional model and the caller's observer follow.
  StreamCycleObserver streamCycles(channels);
  streamCycles.setChannelsPerStack(tgt.org.channels);
  std::vector<CommandObserver *> chain = {&streamCycles};
  if (functional)
    chain.push_back(functional.get());
  if (observer)
    chain.push_back(observer);
  FanOutObserver engineObserver(chain);
  // One device for the whole run: every phase and sub-phase continues on
  // the DRAM state the previous one left (open rows, timers, refresh
  // schedule), at its start on the run's timeline.
  EngineOptions options;
  options.observer = &engineObserver;
  Engine engine(tgt, options);
  DeviceState device;
  auto toCycles = [&](double seconds) -> int64_t {
    return std::llround(seconds * 1e12 / tgt.tCKps);
  };

  auto callRunner = [&](int64_t kernel) -> Error {
    if (!runner)
      return setDeviceParams(prog->kernels[kernel], params);
    if (Error e = runner(kernel, prog->kernels[kernel], params))
      return createStringError(formatv("host kernel '{0}': {1}",
                                       prog->kernels[kernel].name,
                                       toString(std::move(e))));
    return setDeviceParams(prog->kernels[kernel], params);
  };

  // Runs the requests of one sub-phase (everything between two rendezvous
  // cuts) on the device from `startSeconds`.
  auto runRequests = [&](std::vector<std::vector<Request>> &work,
                         PhaseReport &phase, double startSeconds) -> Error {
    int64_t requests = 0;
    for (auto &w : work)
      requests += w.size();
    if (!requests)
      return Error::success();
    phase.requests += requests;
    if (functional) {
      if (phaseOperands.size() > UINT32_MAX)
        return createStringError(
            "functional mode: more than 2^32 requests in one phase");
      functional->setOperands(&phaseOperands);
    }
    if (!(startSeconds * 1e12 / tgt.tCKps <= double(kMaxArrivalCycle)))
      return createStringError(
          formatv("simulated time {0} s is beyond the limit of {1} cycles "
                  "(host kernels too long?)",
                  startSeconds, kMaxArrivalCycle));
    int64_t start = std::max(device.clock(), toCycles(startSeconds));
    auto stats = engine.runStreams(work, device, start);
    if (functional)
      functional->setOperands(nullptr);
    if (!stats)
      return stats.takeError();
    if (functional)
      if (Error e = functional->takeError())
        return e;
    phase.pimCycles += stats->cycles;
    phase.pimSeconds += stats->seconds;
    addPhaseStats(report.pim, *stats);
    return Error::success();
  };

  // Times kernel `kernel` on the host model or its near-memory unit and
  // adds it to the phase's sums.
  auto timeKernel = [&](PhaseReport &phase, int64_t kernel) -> double {
    const HostKernel &k = prog->kernels[kernel];
    double t;
    if (const NearMemoryUnit *u =
            k.unit.empty() ? nullptr : kernelUnit(tgt, k)) {
      t = nearMemoryKernelSeconds(tgt, *u, k);
      phase.nearMemorySeconds += t;
      ++phase.nearMemoryKernels;
    } else {
      t = hostKernelSeconds(tgt.host, k);
      phase.hostSeconds += t;
      ++phase.hostKernels;
    }
    return t;
  };

  std::vector<std::vector<StreamCut>> cuts(channels);
  std::vector<int64_t> phaseStreams, phaseKernels;
  auto runPhase = [&](std::vector<std::vector<Request>> &streams) -> Error {
    PhaseReport phase;
    phase.startSeconds = report.seconds;
    phase.streams = phaseStreams;
    streamCycles.startPhase(phaseStreams.size());
    streamCycles.phaseStart = toCycles(phase.startSeconds);
    double hostSeconds = 0; // of the entry's kernel steps
    // Of the entry's kernel steps, per near-memory unit.
    std::map<std::string, double> unitSeconds;
    // Sub-phase k runs every channel's requests up to its k-th cut; the
    // channels then meet, and the host kernels `call`ed there run before any
    // channel goes on. Each call runs once however many channels reach it.
    size_t subPhases = 1;
    for (const auto &c : cuts)
      subPhases = std::max(subPhases, c.size() + 1);
    std::set<std::pair<int64_t, int64_t>> called;
    double pimSeconds = 0;
    std::vector<std::vector<Request>> work(channels);
    for (size_t k = 0; k < subPhases; ++k) {
      for (int64_t c = 0; c < channels; ++c) {
        size_t begin = k == 0                   ? 0
                       : k - 1 < cuts[c].size() ? cuts[c][k - 1].position
                                                : streams[c].size();
        size_t end =
            k < cuts[c].size() ? cuts[c][k].position : streams[c].size();
        work[c].assign(streams[c].begin() + begin, streams[c].begin() + end);
        streamCycles.setWork(c, work[c].data(), begin);
      }
      double before = phase.pimSeconds;
      if (Error e = runRequests(work, phase, phase.startSeconds + pimSeconds))
        return e;
      pimSeconds += phase.pimSeconds - before;
      for (int64_t c = 0; c < channels; ++c)
        if (k < cuts[c].size() && cuts[c][k].kernel >= 0 &&
            called.insert({cuts[c][k].stream, cuts[c][k].ordinal}).second) {
          int64_t kernel = cuts[c][k].kernel;
          double t = timeKernel(phase, kernel);
          pimSeconds += t;
          phase.kernels.push_back(kernel);
          phase.kernelSeconds.push_back(t);
          if (Error e = callRunner(kernel))
            return e;
        }
    }
    // The entry's kernels: timed as overlapping the streams, run (by the
    // runner) after them.
    for (int64_t kernel : phaseKernels) {
      double t = timeKernel(phase, kernel);
      if (const std::string &unit = prog->kernels[kernel].unit; !unit.empty())
        unitSeconds[unit] += t;
      else
        hostSeconds += t;
      phase.kernels.push_back(kernel);
      phase.kernelSeconds.push_back(t);
      if (Error e = callRunner(kernel))
        return e;
    }
    phase.streamCycles = streamCycles.lastCycles();
    report.hostSeconds += phase.hostSeconds;
    report.nearMemorySeconds += phase.nearMemorySeconds;
    // Kernels launched by the entry overlap the streams (and the host and
    // each near-memory unit one another); calls do not.
    double nearMemorySeconds = 0;
    for (const auto &[unit, t] : unitSeconds)
      nearMemorySeconds = std::max(nearMemorySeconds, t);
    report.seconds += std::max({pimSeconds, hostSeconds, nearMemorySeconds});
    report.phases.push_back(std::move(phase));
    for (auto &s : streams)
      s.clear();
    for (auto &c : cuts)
      c.clear();
    phaseOperands.clear();
    phaseStreams.clear();
    phaseKernels.clear();
    streamCycles.clearSegments();
    return Error::success();
  };

  std::vector<std::vector<Request>> streams(channels);
  int64_t expanded = 0; // requests of the whole run (kMaxExpandedWork)
  for (const EntryStep &step : entry->steps) {
    switch (step.kind) {
    case StepKind::Stream: {
      const Stream &stream = prog->streams[step.index];
      int64_t slot = phaseStreams.size();
      phaseStreams.push_back(step.index);
      for (const Range &r : stream.channels)
        for (int64_t c = r.first; c < r.end(); ++c) {
          size_t before = streams[c].size();
          streamCycles.addSegment(c, before, slot);
          if (Error e = expandStream(stream, c, streams[c], params, operands,
                                     &cuts[c], step.index))
            return e;
          expanded += static_cast<int64_t>(streams[c].size() - before);
          if (expanded > kMaxExpandedWork)
            return createStringError(formatv(
                "entry '{0}': its stream launches expand to more than {1} "
                "requests (the limit of one run)",
                entryName, kMaxExpandedWork));
        }
      break;
    }
    case StepKind::Kernel:
      phaseKernels.push_back(step.index);
      break;
    case StepKind::Barrier:
      if (Error e = runPhase(streams))
        return e;
      break;
    }
  }
  if (Error e = runPhase(streams))
    return e;
  return report;
}

json::Value RunReport::toJSON(const Target &target) const {
  json::Array phaseList;
  for (const PhaseReport &p : phases)
    phaseList.push_back(
        json::Object{{"start_seconds", p.startSeconds},
                     {"pim_cycles", p.pimCycles},
                     {"pim_seconds", p.pimSeconds},
                     {"host_seconds", p.hostSeconds},
                     {"near_memory_seconds", p.nearMemorySeconds},
                     {"requests", p.requests},
                     {"host_kernels", p.hostKernels},
                     {"near_memory_kernels", p.nearMemoryKernels},
                     {"streams", json::Array(p.streams)},
                     {"stream_cycles", json::Array(p.streamCycles)},
                     {"kernels", json::Array(p.kernels)},
                     {"kernel_seconds", json::Array(p.kernelSeconds)}});
  return json::Object{{"entry", entry},
                      {"seconds", seconds},
                      {"host_seconds", hostSeconds},
                      {"near_memory_seconds", nearMemorySeconds},
                      {"phases", std::move(phaseList)},
                      {"pim", pim.toJSON(target)}};
}
