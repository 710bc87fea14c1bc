//===- Simulator.cpp - program execution on the engine --------------------===//
#include "pimsim/Simulator.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstring>

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

Error Simulator::loadProgram(Program program) {
  if (Error e = validateProgram(program, tgt))
    return e;
  prog = std::make_unique<Program>(std::move(program));
  return Error::success();
}

Error Simulator::writeMemory(uint64_t addr, ArrayRef<uint8_t> bytes) {
  if (simMode != SimMode::Functional)
    return createStringError("device memory holds no data in timing mode");
  if (addr + bytes.size() > static_cast<uint64_t>(tgt.org.totalBytes()))
    return createStringError(formatv(
        "write of {0} bytes at {1:x} is outside the device ({2} bytes)",
        bytes.size(), addr, tgt.org.totalBytes()));
  memory.write(addr, bytes);
  return Error::success();
}

Expected<std::vector<uint8_t>> Simulator::readMemory(uint64_t addr,
                                                     size_t bytes) const {
  if (simMode != SimMode::Functional)
    return createStringError("device memory holds no data in timing mode");
  if (addr + bytes > static_cast<uint64_t>(tgt.org.totalBytes()))
    return createStringError(formatv(
        "read of {0} bytes at {1:x} is outside the device ({2} bytes)", bytes,
        addr, tgt.org.totalBytes()));
  std::vector<uint8_t> out(bytes);
  memory.read(addr, out);
  return out;
}

namespace {

/// Expands one channel's instruction list, loops unrolled.
class StreamExpander {
public:
  StreamExpander(const Target &target, int64_t channel, int64_t channelIndex,
                 std::vector<Request> &out)
      : tgt(target), org(target.org), channel(channel),
        channelIndex(channelIndex), out(out) {}

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
      return inst.at(field, loopIndices, channelIndex);
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
    // Consecutive columns of one op may run past the end of a row into the
    // next one (a weight tile spanning rows).
    auto columns = [&](RequestType type, int64_t bank, int64_t row,
                       int64_t col, int64_t count) {
      for (int64_t i = 0; i < count; ++i) {
        int64_t linear = col + i;
        emit(type, bank, row + linear / org.columns, linear % org.columns);
      }
    };
    auto repeat = [&](RequestType type, int64_t bank, int64_t row,
                      int64_t count) {
      for (int64_t i = 0; i < count; ++i)
        emit(type, bank, row, 0);
    };
    int64_t bursts = std::max<int64_t>(
        1, (f(Field::Bytes) + org.accessBytes - 1) / org.accessBytes);
    switch (inst.op) {
    case Opcode::MacAB:
      columns(RequestType::MacAB, 0, f(Field::Row), f(Field::Col),
              f(Field::Count));
      return Error::success();
    case Opcode::MacSB:
      columns(RequestType::MacSB, f(Field::Bank), f(Field::Row),
              f(Field::Col), f(Field::Count));
      return Error::success();
    case Opcode::MacPB:
      columns(RequestType::MacPB, f(Field::Bank), f(Field::Row),
              f(Field::Col), f(Field::Count));
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
      columns(RequestType::Write, f(Field::Bank), f(Field::Row),
              f(Field::Col), f(Field::Count));
      return Error::success();
    case Opcode::Barrier:
    case Opcode::Sync: // a per-channel ordering point until streams can
                       // rendezvous across channels
      emit(RequestType::Barrier, 0, 0, 0);
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
    case Opcode::Call:
    case Opcode::Loop:
      break;
    }
    return createStringError(formatv("'{0}' inside a stream is not supported "
                                     "by the executor yet",
                                     opcodeName(inst.op)));
  }

  void emit(RequestType type, int64_t bank, int64_t row, int64_t col) {
    Request r;
    r.type = type;
    r.addr = encodeAddress(tgt, bankAddress(org, channel, bank, row, col));
    out.push_back(r);
  }

  const Target &tgt;
  const Organization &org;
  int64_t channel;
  int64_t channelIndex; // position of `channel` in the stream's channel set
  std::vector<Request> &out;
  std::vector<int64_t> loopIndices;
};

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
    total.channels[c].lastCycle = s.channels[c].lastCycle;
  }
  if (total.bankBusyCycles.size() < s.bankBusyCycles.size())
    total.bankBusyCycles.resize(s.bankBusyCycles.size());
  for (size_t b = 0; b < s.bankBusyCycles.size(); ++b)
    total.bankBusyCycles[b] += s.bankBusyCycles[b];
}

} // namespace

Error Simulator::expandStream(const Stream &stream, int64_t channel,
                              std::vector<Request> &out) const {
  int64_t index = 0, position = -1;
  for (const Range &r : stream.channels) {
    if (r.contains(channel))
      position = index + (channel - r.first);
    index += r.count;
  }
  if (position < 0)
    return createStringError(formatv("stream '{0}' does not run on channel {1}",
                                     stream.name, channel));
  StreamExpander expander(tgt, channel, position, out);
  if (Error e = expander.expand(stream.body))
    return createStringError(formatv("stream '{0}', channel {1}: {2}",
                                     stream.name, channel,
                                     toString(std::move(e))));
  return Error::success();
}

Expected<RunReport> Simulator::run(StringRef entryName,
                                   CommandObserver *observer) {
  if (!prog)
    return createStringError("no program loaded");
  if (simMode == SimMode::Functional)
    return createStringError("functional mode is not implemented yet; run "
                             "with --mode timing");
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

  RunReport report;
  report.entry = entryName.str();
  int64_t channels = tgt.org.totalChannels();
  auto runPhase = [&](std::vector<std::vector<Request>> &streams,
                      double hostSeconds, int64_t kernels) -> Error {
    PhaseReport phase;
    phase.hostSeconds = hostSeconds;
    phase.hostKernels = kernels;
    for (auto &s : streams)
      phase.requests += s.size();
    if (phase.requests) {
      EngineOptions options;
      options.observer = observer;
      Engine engine(tgt, options);
      auto stats = engine.runStreams(streams);
      if (!stats)
        return stats.takeError();
      phase.pimCycles = stats->cycles;
      phase.pimSeconds = stats->seconds;
      addPhaseStats(report.pim, *stats);
    }
    report.hostSeconds += hostSeconds;
    report.seconds += std::max(phase.pimSeconds, hostSeconds);
    report.phases.push_back(phase);
    for (auto &s : streams)
      s.clear();
    return Error::success();
  };

  std::vector<std::vector<Request>> streams(channels);
  double hostSeconds = 0;
  int64_t kernels = 0;
  for (const EntryStep &step : entry->steps) {
    switch (step.kind) {
    case StepKind::Stream: {
      const Stream &stream = prog->streams[step.index];
      for (const Range &r : stream.channels)
        for (int64_t c = r.first; c < r.end(); ++c)
          if (Error e = expandStream(stream, c, streams[c]))
            return std::move(e);
      break;
    }
    case StepKind::Kernel:
      hostSeconds += hostKernelSeconds(tgt.host, prog->kernels[step.index]);
      ++kernels;
      break;
    case StepKind::Barrier:
      if (Error e = runPhase(streams, hostSeconds, kernels))
        return std::move(e);
      hostSeconds = 0;
      kernels = 0;
      break;
    }
  }
  if (Error e = runPhase(streams, hostSeconds, kernels))
    return std::move(e);
  return report;
}

json::Value RunReport::toJSON(const Target &target) const {
  json::Array phaseList;
  for (const PhaseReport &p : phases)
    phaseList.push_back(json::Object{{"pim_cycles", p.pimCycles},
                                     {"pim_seconds", p.pimSeconds},
                                     {"host_seconds", p.hostSeconds},
                                     {"requests", p.requests},
                                     {"host_kernels", p.hostKernels}});
  return json::Object{{"entry", entry},
                      {"seconds", seconds},
                      {"host_seconds", hostSeconds},
                      {"phases", std::move(phaseList)},
                      {"pim", pim.toJSON(target)}};
}
