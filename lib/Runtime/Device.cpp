//===- Device.cpp - the runtime's hardware abstraction layer --------------===//
#include "pimc/Runtime/Device.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace pimc::rt {

Device::~Device() = default;

MemoryInfo Device::describeMemory() const {
  const pimsim::Organization &org = target().org;
  MemoryInfo info;
  info.totalBytes = uint64_t(org.totalBytes());
  info.channels = org.totalChannels();
  info.banksPerChannel = org.banksPerChannel();
  info.rows = org.rows;
  info.columns = org.columns;
  info.accessBytes = org.accessBytes;
  if (const pimsim::Program *p = program())
    for (const pimsim::Region &r : p->regions)
      info.regions.push_back({r.name, r.kind, r.bytes, r.channels.count});
  return info;
}

void Device::recordRun(const pimsim::RunReport &report) {
  last = report;
  ++runCount;
  secondsTotal += report.seconds;
}

SimDevice::SimDevice(pimsim::Target target, bool functional)
    : sim(std::make_unique<pimsim::Simulator>(
          std::move(target), functional ? pimsim::SimMode::Functional
                                        : pimsim::SimMode::Timing)) {}

SimDevice::~SimDevice() = default;

bool SimDevice::functional() const {
  return sim->mode() == pimsim::SimMode::Functional;
}

std::string SimDevice::describe() const {
  return formatv("pimsim ({0}) on {1}", functional() ? "functional" : "timing",
                 target().name)
      .str();
}

Error SimDevice::loadProgram(pimsim::Program program) {
  return sim->loadProgram(std::move(program));
}

uint64_t SimDevice::address(int64_t channel, int64_t bank, int64_t row,
                            int64_t column) const {
  const pimsim::Target &t = target();
  return pimsim::encodeAddress(
      t, pimsim::bankAddress(t.org, channel, bank, row, column));
}

Error SimDevice::writeMemory(uint64_t addr, ArrayRef<uint8_t> bytes) {
  return sim->writeMemory(addr, bytes);
}

Expected<std::vector<uint8_t>> SimDevice::readMemory(uint64_t addr,
                                                     size_t bytes) {
  return sim->readMemory(addr, bytes);
}

Error SimDevice::writeRegion(StringRef region, uint64_t offset,
                             ArrayRef<uint8_t> bytes) {
  return sim->writeRegion(region, offset, bytes);
}

Expected<std::vector<uint8_t>>
SimDevice::readRegion(StringRef region, uint64_t offset, size_t bytes) {
  return sim->readRegion(region, offset, bytes);
}

Expected<pimsim::RunReport> SimDevice::run(StringRef entry,
                                           const ParamInputs &inputs,
                                           const KernelRunner &runner) {
  pimsim::HostKernelRunner simRunner;
  if (runner)
    simRunner = runner;
  auto report = sim->run(entry, inputs, simRunner, commandObserver);
  if (report)
    recordRun(*report);
  return report;
}

} // namespace pimc::rt
