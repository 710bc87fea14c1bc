//===- Device.h - the runtime's hardware abstraction layer ------*- C++ -*-===//
//
// A Device is what the runtime drives: one PIM device described by a target
// file, running compiled programs (docs/pimsim-isa.md, docs/backend-abi.md).
// The interface speaks only the program ABI (pimsim::Program, its regions,
// entries and host kernels) and byte addresses, never simulator internals,
// so that an FPGA or silicon driver can implement it the same way SimDevice
// implements it over pimsim. See docs/runtime.md.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_RUNTIME_DEVICE_H
#define PIMC_RUNTIME_DEVICE_H

#include "pimsim/Program.h"
#include "pimsim/Simulator.h"
#include "pimsim/Target.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pimc::rt {

/// Called for each host-kernel step of a run, after the streams of its
/// phase: `paramValues` holds every program parameter (Program::params
/// order) resolved for this run. The runner may read and write regions.
using KernelRunner = std::function<llvm::Error(
    int64_t kernelIndex, const pimsim::HostKernel &kernel,
    llvm::ArrayRef<int64_t> paramValues)>;

/// Input parameter values of a run, by name ("pos", "token").
using ParamInputs = std::map<std::string, int64_t>;

/// One region of the loaded program as the device placed it.
struct RegionInfo {
  std::string name;
  pimsim::RegionKind kind = pimsim::RegionKind::Scratch;
  int64_t bytes = 0;
  int64_t channels = 0; // channels the region spans
};

/// The device's memory: geometry and the regions the loaded program holds.
struct MemoryInfo {
  uint64_t totalBytes = 0;
  int64_t channels = 0, banksPerChannel = 0, rows = 0, columns = 0;
  int64_t accessBytes = 0; // bytes of one column access
  std::vector<RegionInfo> regions;
};

class Device {
public:
  virtual ~Device();

  /// The device description (organisation, timings, PIM unit, host model).
  virtual const pimsim::Target &target() const = 0;
  /// True when the device holds and computes data; false for a timing-only
  /// model, which has no memory contents and never calls the runner.
  virtual bool functional() const = 0;
  /// One line for reports: "pimsim (functional) on hbm3-pim".
  virtual std::string describe() const = 0;

  /// Loads (and validates) a program. This allocates the program's memory
  /// map: its regions exist and read as zero afterwards.
  virtual llvm::Error loadProgram(pimsim::Program program) = 0;
  /// The loaded program, or nullptr.
  virtual const pimsim::Program *program() const = 0;
  /// The geometry and the loaded program's regions.
  MemoryInfo describeMemory() const;

  /// The byte address of (channel, flat bank, row, column) in this device's
  /// address mapping (what writeMemory takes).
  virtual uint64_t address(int64_t channel, int64_t bank, int64_t row,
                           int64_t column) const = 0;
  /// Raw device memory (functional devices only).
  virtual llvm::Error writeMemory(uint64_t addr,
                                  llvm::ArrayRef<uint8_t> bytes) = 0;
  virtual llvm::Expected<std::vector<uint8_t>> readMemory(uint64_t addr,
                                                          size_t bytes) = 0;
  /// Host-visible region data of the loaded program (functional devices).
  virtual llvm::Error writeRegion(llvm::StringRef region, uint64_t offset,
                                  llvm::ArrayRef<uint8_t> bytes) = 0;
  virtual llvm::Expected<std::vector<uint8_t>>
  readRegion(llvm::StringRef region, uint64_t offset, size_t bytes) = 0;

  /// Runs entry point `entry` with the given input parameters. `runner`
  /// executes the host kernels (functional devices; may be empty); its
  /// errors abort the run and come back prefixed with the kernel's name.
  virtual llvm::Expected<pimsim::RunReport> run(llvm::StringRef entry,
                                                const ParamInputs &inputs,
                                                const KernelRunner &runner) = 0;

  /// The report of the most recent successful run, if any.
  const pimsim::RunReport *lastReport() const {
    return last ? &*last : nullptr;
  }
  /// Successful runs and their summed simulated (or measured) seconds.
  int64_t runs() const { return runCount; }
  double totalSeconds() const { return secondsTotal; }

protected:
  /// Implementations call this after every successful run.
  void recordRun(const pimsim::RunReport &report);

private:
  std::optional<pimsim::RunReport> last;
  int64_t runCount = 0;
  double secondsTotal = 0;
};

/// A Device over the pimsim cycle-level simulator, functional (data) or
/// timing-only. Cycles and statistics are identical in the two modes.
class SimDevice : public Device {
public:
  SimDevice(pimsim::Target target, bool functional);
  ~SimDevice() override;

  const pimsim::Target &target() const override { return sim->target(); }
  bool functional() const override;
  std::string describe() const override;

  llvm::Error loadProgram(pimsim::Program program) override;
  const pimsim::Program *program() const override { return sim->program(); }

  uint64_t address(int64_t channel, int64_t bank, int64_t row,
                   int64_t column) const override;
  llvm::Error writeMemory(uint64_t addr,
                          llvm::ArrayRef<uint8_t> bytes) override;
  llvm::Expected<std::vector<uint8_t>> readMemory(uint64_t addr,
                                                  size_t bytes) override;
  llvm::Error writeRegion(llvm::StringRef region, uint64_t offset,
                          llvm::ArrayRef<uint8_t> bytes) override;
  llvm::Expected<std::vector<uint8_t>>
  readRegion(llvm::StringRef region, uint64_t offset, size_t bytes) override;

  llvm::Expected<pimsim::RunReport> run(llvm::StringRef entry,
                                        const ParamInputs &inputs,
                                        const KernelRunner &runner) override;

  /// Simulator-only: observe every DRAM command of the following runs
  /// (command-level traces); nullptr to stop.
  void setCommandObserver(pimsim::CommandObserver *observer) {
    commandObserver = observer;
  }

private:
  std::unique_ptr<pimsim::Simulator> sim;
  pimsim::CommandObserver *commandObserver = nullptr;
};

} // namespace pimc::rt

#endif // PIMC_RUNTIME_DEVICE_H
