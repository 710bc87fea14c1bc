//===- Engine.h - cycle-level DRAM/PIM command engine -----------*- C++ -*-===//
//
// Requests (plain loads/stores and PIM requests, the AttAcc request types of
// specs/pim-hardware.md section 7.2) enter per-channel controllers; each
// controller expands them into DRAM commands from the bank state (ACT / PRE /
// ACTAB / PREA / ... then the final command) and issues at most one row and
// one column command per cycle, each only once every constraint of the
// target's table holds. Plain reads/writes are scheduled FR-FCFS (ready row
// hits first, then oldest); PIM requests keep queue order and go before
// plain traffic; barriers order a channel's PIM queue. Refresh: one REFab per
// pseudo-channel every nREFI. Idle cycles are skipped: the engine jumps to
// the next cycle at which some command can become issuable. A DeviceState
// carries the DRAM (timers, open rows, refresh schedule) from one run to the
// next, as a program's phases run on one device.
//
//===----------------------------------------------------------------------===//
#ifndef PIMSIM_ENGINE_H
#define PIMSIM_ENGINE_H

#include "pimsim/Target.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pimsim {

enum class RequestType : uint8_t {
  Read,     // LD: 32 B read
  Write,    // ST: 32 B write
  MacAB,    // PIM_MAC_AB: one column MAC in every bank of the channel
  MacSB,    // PIM_MAC_SB: banks with the request's bank index
  MacPB,    // PIM_MAC_PB: the request's bank in both pseudo-channels
  WrGB,     // PIM_WR_GB: 32 B into the channel's GEMV (global) buffer
  MvSB,     // PIM_MV_SB: GEMV output -> softmax buffer
  MvGB,     // PIM_MV_GB: softmax buffer -> GEMV buffer
  Sfm,      // PIM_SFM: softmax unit
  SetModel, // PIM_SET_MODEL
  SetHead,  // PIM_SET_HEAD
  Barrier,  // PIM_BARRIER: ordering point in the channel's PIM queue
  RdAcc,    // read the PIM accumulators (32 B) back to the host
  EwMul,    // element-wise multiply in the PIM units (one column, all banks)
  Af,       // activation function in the PIM units
};
llvm::StringRef requestTypeName(RequestType type); // "LD", "PIM_MAC_AB", ...
std::optional<RequestType> parseRequestType(llvm::StringRef name);

/// The latest arrival cycle a request may carry (about 2^50 cycles, days of
/// device time): keeps every cycle computation far from overflow.
constexpr int64_t kMaxArrivalCycle = int64_t(1) << 50;

struct Request {
  RequestType type = RequestType::Read;
  uint64_t addr = 0;   // byte address (decoded with the target's mapping)
  int64_t arrival = 0; // earliest cycle it may enter its queue (from start)
  uint32_t tag = 0;    // caller's id, passed back to observers
};

/// Told about every command as it issues (tests, functional model, traces).
class CommandObserver {
public:
  virtual ~CommandObserver();
  virtual void onCommand(int64_t cycle, Command cmd, const DecodedAddress &addr,
                         const Request *req) = 0;
  /// False for an observer that ignores commands without a request
  /// (refresh): the engine then still skips idle refresh intervals in bulk,
  /// where only refresh issues. True (the default) keeps every command.
  virtual bool seesRefresh() const { return true; }
};

struct ChannelStats {
  int64_t rowSlotBusy = 0, columnSlotBusy = 0; // cycles with a command issued
  int64_t commands = 0;
  int64_t lastCycle = 0; // cycle of the channel's last command (timeline)
};

struct Stats {
  /// From the run's start to the cycle after its last command (or read
  /// data) completes.
  int64_t cycles = 0;
  double seconds = 0;
  std::array<int64_t, kNumCommands> commandCounts{};
  int64_t requests = 0;
  int64_t rowHits = 0, rowMisses = 0; // RD/WR/MAC*: addressed row already open?
  int64_t bytesRead = 0,
          bytesWritten = 0; // over the pins (RD, WR, WRGB, RDACC)
  int64_t bytesMac = 0;     // read inside the banks by MAC*
  std::vector<ChannelStats> channels;
  /// Per bank (global bank index): cycles of the run with a row open.
  std::vector<int64_t> bankBusyCycles;
  double energyPj = 0;

  double externalBandwidth() const; // bytes/s over the pins
  double internalBandwidth() const; // MAC bytes/s inside the banks
  llvm::json::Value toJSON(const Target &target) const;
};

/// The path (".pim.energyPj", "[3]") of the first number in `v` that is not
/// finite, or nothing: JSON has no inf or nan, so writers refuse such values.
std::optional<std::string> nonFiniteField(const llvm::json::Value &v,
                                          const std::string &path = "");

struct EngineOptions {
  bool refresh = true;
  CommandObserver *observer = nullptr;
  /// Skip whole refresh intervals while every channel idles (exact; off
  /// only to test that it is). Not with an observer that sees refresh
  /// (CommandObserver::seesRefresh), which must be told every command.
  bool skipIdleRefresh = true;
};

/// The device between runs: per channel the timing state (ready cycles and
/// windows), the open rows, the refresh schedule and the controller's write
/// mode, and the clock, i.e. the cycle at which the last run ended. A run
/// given the state continues on that device: rows stay open, timers and the
/// refresh schedule carry over, and the idle cycles between the clock and
/// the run's start refresh on schedule. Cycles on this timeline are what
/// observers see and what ChannelStats::lastCycle holds. A fresh state is a
/// device with every bank closed at cycle 0.
class DeviceState {
public:
  DeviceState();
  ~DeviceState();
  DeviceState(DeviceState &&);
  DeviceState &operator=(DeviceState &&);

  int64_t clock() const; // the cycle after the last run

  struct Impl;

private:
  friend class Engine;
  std::unique_ptr<Impl> impl;
};

class Engine {
public:
  Engine(const Target &target, EngineOptions options = {});
  ~Engine();

  /// Trace semantics: requests enter their channel's queue in order, as many
  /// per cycle as the queues accept; a full queue stalls the whole stream.
  /// Errors (an address outside the device, an invalid request) name the
  /// request index.
  llvm::Expected<Stats> runTrace(llvm::ArrayRef<Request> requests);

  /// Independent per-channel streams (program mode): channel c consumes
  /// streams[c] in order; channels do not wait for each other.
  llvm::Expected<Stats>
  runStreams(llvm::ArrayRef<std::vector<Request>> streams);

  /// runStreams on `state`, from cycle `start` (at least state.clock()) of
  /// its timeline: request arrivals count from `start`, Stats::cycles from
  /// `start` to the run's end, and the state's clock moves to that end. The
  /// state must come from runs of engines with the same target and options;
  /// after a failed run it is unusable.
  llvm::Expected<Stats> runStreams(llvm::ArrayRef<std::vector<Request>> streams,
                                   DeviceState &state, int64_t start);

  struct Impl;

private:
  std::unique_ptr<Impl> impl;
};

} // namespace pimsim

#endif // PIMSIM_ENGINE_H
