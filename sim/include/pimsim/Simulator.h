//===- Simulator.h - pimsim's C++ API ---------------------------*- C++ -*-===//
//
// What the runtime (HAL) drives: load a target and a program, write and read
// device memory, run an entry point, get the statistics. An entry point's
// steps are split into phases at its barrier steps; within a phase every
// stream's macro-ops are expanded into requests for their channels (which
// progress independently) while the host model times the phase's host
// kernels and the near-memory units time the kernels placed on them (1.2),
// and the phase takes as long as the slowest of the three.
//
//===----------------------------------------------------------------------===//
#ifndef PIMSIM_SIMULATOR_H
#define PIMSIM_SIMULATOR_H

#include "pimsim/Engine.h"
#include "pimsim/Program.h"
#include "pimsim/Target.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pimsim {

class FunctionalModel;
struct RequestOperand;

enum class SimMode { Functional, Timing };

struct PhaseReport {
  double startSeconds = 0; // when the phase starts on the run's timeline
  int64_t pimCycles = 0;
  /// hostSeconds: the host model's time of the phase's host kernels;
  /// nearMemorySeconds (1.2): the summed time of its kernels that run on a
  /// near-memory unit (HostKernel::unit). Both sums include `call`s.
  double pimSeconds = 0, hostSeconds = 0, nearMemorySeconds = 0;
  int64_t requests = 0, hostKernels = 0;
  int64_t nearMemoryKernels = 0; // (1.2) kernels with a unit
  /// Streams launched in the phase (Program::streams indices, step order)
  /// and, per stream, the cycle of its last command relative to the phase
  /// start (0 for a stream that issued nothing).
  std::vector<int64_t> streams, streamCycles;
  /// Kernels run in the phase (Program::kernels indices) in the order the
  /// runner sees them: the `call`s, as their rendezvous are reached, then
  /// the entry's kernel steps in step order; and the time of each (same
  /// order): the host model's, or for a kernel on a near-memory unit,
  /// latency_cycles + ceil(elements / elements_per_cycle) memory cycles.
  std::vector<int64_t> kernels;
  std::vector<double> kernelSeconds;
};

struct RunReport {
  std::string entry;
  Stats pim; // summed over phases
  double hostSeconds = 0;
  double nearMemorySeconds = 0; // (1.2) summed over phases
  /// Sum over phases of max(PIM, host, near memory). PIM includes the
  /// kernels `call`ed from streams (the channels wait for them); host is
  /// the sum of the entry's host kernel steps; near memory is the busiest
  /// unit's sum of the entry's kernel steps on it (different units run
  /// concurrently, kernels on the same unit one after another).
  double seconds = 0;
  std::vector<PhaseReport> phases;
  llvm::json::Value toJSON(const Target &target) const;
};

/// Device memory as rows that exist once written (functional mode).
class SparseMemory {
public:
  explicit SparseMemory(int64_t rowBytes) : rowBytes(rowBytes) {}
  void write(uint64_t addr, llvm::ArrayRef<uint8_t> bytes);
  void read(uint64_t addr, llvm::MutableArrayRef<uint8_t> out) const;
  size_t rowsTouched() const { return rows.size(); }

private:
  int64_t rowBytes;
  std::map<uint64_t, std::vector<uint8_t>> rows; // keyed by addr / rowBytes
};

/// Runs a host kernel's work (e.g. on the region data, in functional mode),
/// also for kernels on a near-memory unit (the caller computes their
/// numerics; pimsim only times them). Called with the kernel's index in
/// Program::kernels, the kernel, and the run's parameter values (one per
/// Program::params). An error aborts the run.
using HostKernelRunner =
    std::function<llvm::Error(int64_t kernelIndex, const HostKernel &kernel,
                              llvm::ArrayRef<int64_t> paramValues)>;

class Simulator {
public:
  Simulator(Target target, SimMode mode);
  ~Simulator();
  Simulator(const Simulator &) = delete;
  Simulator &operator=(const Simulator &) = delete;

  const Target &target() const { return tgt; }
  SimMode mode() const { return simMode; }

  /// Checks the program against the target (validateProgram) and keeps it.
  /// Functional mode: also checks that the target's PIM unit is modelled,
  /// and resets the regions (all zero), global buffers and accumulators.
  llvm::Error loadProgram(Program program);
  const Program *program() const { return prog.get(); }

  /// Device memory (functional mode only; timing mode holds no data).
  llvm::Error writeMemory(uint64_t addr, llvm::ArrayRef<uint8_t> bytes);
  llvm::Expected<std::vector<uint8_t>> readMemory(uint64_t addr,
                                                  size_t bytes) const;

  /// Host-visible data of the loaded program's region `region` (functional
  /// mode only): a flat byte buffer of region.bytes, zero after loadProgram.
  /// Errors name the region when the range is outside it.
  llvm::Error writeRegion(llvm::StringRef region, uint64_t offset,
                          llvm::ArrayRef<uint8_t> bytes);
  llvm::Expected<std::vector<uint8_t>>
  readRegion(llvm::StringRef region, uint64_t offset, size_t bytes) const;

  /// Runs entry point `entry` of the loaded program with no input
  /// parameters (a program with input parameters needs the form below).
  llvm::Expected<RunReport> run(llvm::StringRef entry,
                                CommandObserver *observer = nullptr);

  /// Runs entry point `entry` with input parameters `inputs`
  /// (resolveParams). Each phase runs its streams on the engine, all on one
  /// device whose DRAM state and time carry across phases; then
  /// `runner` (if set, in either mode) is called for each of the phase's
  /// kernel steps, in step order. A `call K` in a stream calls `runner` at
  /// the rendezvous, before any channel goes on. The runner may use
  /// writeRegion / readRegion. An error from it aborts the run and is
  /// returned.
  llvm::Expected<RunReport> run(llvm::StringRef entry,
                                const std::map<std::string, int64_t> &inputs,
                                const HostKernelRunner &runner = nullptr,
                                CommandObserver *observer = nullptr);

  /// The requests one channel runs for a stream (macro-op expansion with
  /// loops and strides unrolled), in issue order, with parameter values
  /// `params` (one per Program::params).
  llvm::Error expandStream(const Stream &stream, int64_t channel,
                           std::vector<Request> &out,
                           llvm::ArrayRef<int64_t> params = {}) const;

  /// A rendezvous point of a stream's channels (`sync`, or `call` of a host
  /// kernel) at `position` in a channel's request list.
  struct StreamCut {
    size_t position = 0;
    int64_t kernel = -1;             // host kernel of a `call`, -1 for `sync`
    int64_t stream = 0, ordinal = 0; // which cut of which stream
  };

private:
  llvm::Error expandStream(const Stream &stream, int64_t channel,
                           std::vector<Request> &out,
                           llvm::ArrayRef<int64_t> params,
                           std::vector<RequestOperand> *operands,
                           std::vector<StreamCut> *cuts = nullptr,
                           int64_t streamIndex = 0) const;
  llvm::Expected<int64_t> regionIndex(llvm::StringRef region, uint64_t offset,
                                      size_t bytes, llvm::StringRef what) const;
  /// (2.3) Functional mode: the device parameters `kernel` sets, read from
  /// the int32s it left in its regions (each must lie in the parameter's
  /// range), and the parameters derived from them. Timing mode computes no
  /// data, so they keep their timing values.
  llvm::Error setDeviceParams(const HostKernel &kernel,
                              std::vector<int64_t> &params) const;

  Target tgt;
  SimMode simMode;
  std::unique_ptr<Program> prog;
  SparseMemory memory;
  // Functional mode only: region data (one per program region) and the model.
  std::vector<SparseMemory> regionData;
  std::unique_ptr<FunctionalModel> functional;
};

} // namespace pimsim

#endif // PIMSIM_SIMULATOR_H
