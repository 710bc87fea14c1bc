//===- Report.h - performance report of a model run -------------*- C++ -*-===//
//
// Summarises the per-token RunReports of a ModelSession run: simulated time
// per token for prefill and decode, tokens/s, DRAM traffic, the bytes each
// token must move (weights + KV cache) against the target's power-capped
// internal peak (the roofline), the PIM / host split, and the streams and
// host kernels that take the time. Also the `--stats` JSON and a
// Chrome/Perfetto trace at stream / host-kernel granularity. Field
// meanings: docs/runtime.md.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_RUNTIME_REPORT_H
#define PIMC_RUNTIME_REPORT_H

#include "pimc/Runtime/HostOps.h"
#include "pimc/Runtime/Session.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pimc::rt {

/// What one token must move at least: the compiler's memory plan
/// (pimsim::MemoryPlan; zero when the program records none).
struct ModelFootprint {
  double weightBytes = 0;         // the weights one token reads
  double residentWeightBytes = 0; // device-resident weights, one copy
  double kvBytesPerPosition = 0; // K and V of one position, every layer
  int64_t layers = 0;            // attention layers with a device KV cache
};
ModelFootprint modelFootprint(const pimsim::Program &program);

/// Time attributed to a stream or host kernel over a run part.
struct NamedTime {
  std::string name;
  double seconds = 0; // total over the part's tokens
  int64_t count = 0;  // launches
  std::string unit;   // kernels: the near-memory unit, empty for the host
  // Streams: the layer and op the program records (pimsim::StreamInfo);
  // a program without stream metadata counts each stream as its own op.
  std::string layer, op;
  // Streams: the library kernel the stream ran (2.1 StreamInfo::kernel),
  // empty for the generated lowering or when not recorded.
  std::string kernel;
};

/// Prefill or decode. Per-token values are means over the part's tokens.
struct PartSummary {
  int64_t tokens = 0;
  int64_t firstPos = 0, lastPos = 0;
  double seconds = 0;     // simulated, total
  double meanSeconds = 0; // simulated, per token
  double tokensPerSecond = 0;
  // Critical path split (per token): each phase's length goes to the side
  // that is longest in it: PIM streams, host kernels or near-memory kernels.
  double pimBoundSeconds = 0, hostBoundSeconds = 0, nearMemoryBoundSeconds = 0;
  // Busy time (per token): PIM engine time, host-model time of the host
  // kernels, and time of the kernels on near-memory units.
  double pimBusySeconds = 0, hostBusySeconds = 0, nearMemoryBusySeconds = 0;
  // Traffic (per token): in the banks (MAC reads) and over the pins.
  double bytesMac = 0, bytesRead = 0, bytesWritten = 0;
  // Required bytes (per token): weights + KV of positions 0..pos.
  double weightBytes = 0, kvBytes = 0, requiredBytes = 0;
  double rooflineSeconds = 0; // requiredBytes / internal peak
  double energyPj = 0;
  double requests = 0, commands = 0, rowHits = 0, rowMisses = 0, sfm = 0;
  double wallSeconds = 0;                  // host time of the simulation, total
  std::vector<NamedTime> streams, kernels; // by time, descending
};

struct PerfReport {
  std::string device, target;
  bool computed = true; // tokens computed (functional)
  int64_t channels = 0, channelsUsed = 0;
  double internalPeak = 0, externalPeak = 0; // bytes/s, whole device
  ModelFootprint footprint;
  PartSummary prefill, decode;
  /// Prefill steps that ran cached tokens again because a step crossed
  /// longrope's L0 (counted in `prefill`).
  int64_t recomputedTokens = 0, longRopeL0 = 0;
};

PerfReport buildReport(const Device &device, const pimsim::Program &program,
                       llvm::ArrayRef<StepRecord> steps);

/// The readable report (after the token ids). `top`: streams and kernels
/// listed.
void printReport(const PerfReport &report, llvm::raw_ostream &os,
                 unsigned top = 8);

/// `--stats`: the summary plus one record per step.
llvm::json::Value reportJSON(const PerfReport &report,
                             const GenerationResult &result,
                             const pimsim::Program &program);

/// `--trace`: Chrome/Perfetto trace events. One span per token; PIM streams
/// on tracks by their position in the phase (start = phase start, length =
/// the stream's last command); host kernels back to back from their
/// phase's start (the host model times them, it does not place them).
llvm::json::Value traceJSON(const pimsim::Program &program,
                            const pimsim::Target &target,
                            llvm::ArrayRef<StepRecord> steps);

/// "12.345 us", "1.200 ms", ...
std::string humanSeconds(double seconds);
/// "1.23 MB", "456 B", ... (decimal units)
std::string humanBytes(double bytes);

} // namespace pimc::rt

#endif // PIMC_RUNTIME_REPORT_H
