//===- Target.h - PIM device description (targets/*.json) -------*- C++ -*-===//
//
// A target file describes one PIM device: organisation, address mapping,
// DRAM timings (cycles of the memory clock), the table of timing constraints
// between commands, the PIM unit, near-memory units, the host model and
// energy per operation. The compiler and pimsim read the same file. Loading
// checks every field and names the wrong one (docs/target-schema.md).
//
// No MLIR here: pimsim builds with LLVM Support only.
//
//===----------------------------------------------------------------------===//
#ifndef PIMSIM_TARGET_H
#define PIMSIM_TARGET_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pimsim {

/// Levels of the DRAM hierarchy, outermost first. A constraint acts on the
/// node at its level on the issuing command's address path.
enum class Level : uint8_t { Channel, PseudoChannel, Sid, BankGroup, Bank };
constexpr unsigned kNumLevels = 5;
llvm::StringRef levelName(Level level); // "channel", "pseudo_channel", ...
std::optional<Level> parseLevel(llvm::StringRef name);

/// Address fields a byte address decodes into (plus the discarded offset
/// within one access).
enum class AddrField : uint8_t {
  Stack,
  Channel,
  PseudoChannel,
  Sid,
  BankGroup,
  Bank,
  Row,
  Column
};
llvm::StringRef addrFieldName(AddrField field); // "stack", "channel", ...
std::optional<AddrField> parseAddrField(llvm::StringRef name);

/// DRAM and PIM commands. Semantics (which banks a command touches and how
/// it changes bank state) are fixed in the engine; timing between commands
/// comes from the target's constraint table.
enum class Command : uint8_t {
  ACT,
  PRE,
  PREA,
  PRESB,
  PREPB,
  RD,
  WR,
  REFab,
  REFsb,
  ACTAB,
  ACTSB,
  ACTPB,
  MACAB,
  MACSB,
  MACPB,
  WRGB,
  MVSB,
  MVGB,
  SFM,
  RDACC, // read PIM accumulators out to the host (AiM RD_MAC / RDCP)
  EWMUL, // element-wise multiply in the PIM units (AiM EWMUL)
  AF,    // activation function lookup in the PIM units (AiM AF)
  SETM,
  SETH
};
constexpr unsigned kNumCommands = 24;
llvm::StringRef commandName(Command cmd); // "ACT", "MACAB", ...
std::optional<Command> parseCommand(llvm::StringRef name);
/// Row commands (ACT*, PRE*, REF*) share the row-command slot of a channel;
/// everything else uses the column slot (one of each per cycle).
bool isRowCommand(Command cmd);

struct Organization {
  int64_t stacks = 1;
  int64_t channels = 0;       // per stack
  int64_t pseudoChannels = 1; // per channel
  int64_t sids = 1;           // per pseudo-channel ("rank")
  int64_t bankGroups = 1;     // per SID
  int64_t banks = 1;          // per bank group
  int64_t rows = 0;
  int64_t columns = 0;     // per row
  int64_t accessBytes = 0; // bytes one column command moves (32)

  int64_t banksPerChannel() const {
    return pseudoChannels * sids * bankGroups * banks;
  }
  int64_t rowBytes() const { return columns * accessBytes; }
  int64_t bytesPerChannel() const {
    return banksPerChannel() * rows * rowBytes();
  }
  int64_t totalChannels() const { return stacks * channels; }
  int64_t totalBytes() const { return totalChannels() * bytesPerChannel(); }
};

/// `to` may not issue until `cycles` after the most recent `from` on the
/// same node of `level` (with `window` = N > 1: after the N-th most recent,
/// which models tFAW with N = 4).
struct TimingConstraint {
  Level level = Level::Channel;
  std::vector<Command> from, to;
  std::string param; // the timing parameter name, e.g. "nRCDRD"
  int64_t cycles = 0;
  int window = 1;
};

struct PimUnit {
  int64_t banksPerUnit = 1;     // 1: one unit per bank; 2: one per 2 banks
  int64_t lanes = 16;           // MAC lanes per unit (elements per column)
  std::string inputFormat;      // "bf16" | "fp16": multiplicand format
  std::string accumulateFormat; // "fp32"
  /// How a MAC's lane products are reduced (functional mode):
  /// "lanes": acc[l] += p_l per lane, the lanes summed by a pairwise fp32
  /// adder tree only when the accumulators are read (AttAcc / HBM-PIM SIMD);
  /// "tree": each MAC sums its products with the pairwise tree and adds the
  /// sum to one fp32 accumulator (AiM).
  std::string reduction;
  std::vector<std::string> nativeFormats; // weight formats the unit reads
  int64_t accumulators = 1;               // accumulator registers per unit
  int64_t globalBufferBytes = 0;          // input (GEMV) buffer per channel
  /// Functions of the per-bank activation-function (AF) unit ("gelu", ...);
  /// empty: the device has no AF unit (AiM AF / AF16).
  std::vector<std::string> activationFunctions;
};

struct NearMemoryUnit {
  std::string name;        // "softmax", "reduce", ...
  std::string placement;   // "buffer_die" | "controller"
  double elementsPerCycle; // throughput
  int64_t latencyCycles;
  /// Host ops the unit can run instead of the host (the compiler's host-op
  /// names: "rms_norm", "add", "rope", ...); empty: none (the unit only
  /// serves its own macro-ops, e.g. `sfm`). A HostKernel with
  /// `unit == name` runs here (docs/target-schema.md).
  std::vector<std::string> functions;
  /// Options of the unit's own macro-op (docs/target-schema.md): "softcap",
  /// the softmax unit's `sfm cap=` (program format 2.2).
  std::vector<std::string> features;
};

struct HostModel {
  double flops = 0;          // peak FLOP/s
  double bandwidthBytes = 0; // host memory bandwidth, bytes/s
  double linkBytes = 0;      // host <-> PIM link, bytes/s
  double launchNs = 0;       // fixed cost per host kernel
};

struct Energy {
  double actPj = 0;        // per activation (one bank)
  double readPjPerBit = 0; // column access, bank level
  double ioPjPerBit = 0;   // to the host over the pins
  double macPjPerByte = 0; // PIM ALU
  double refreshPj = 0;    // per REFab
};

struct Target {
  std::string name;
  std::string description;
  double tCKps = 0; // memory clock period, picoseconds
  Organization org;
  std::vector<AddrField> mapping;   // most significant field first
  llvm::StringMap<int64_t> timings; // every named timing, in cycles
  std::vector<TimingConstraint> constraints;
  PimUnit pim;
  std::vector<NearMemoryUnit> nearMemory;
  HostModel host;
  Energy energy;
  int64_t queueDepth = 32; // per-channel request queue entries

  /// The near-memory unit called `name`, or nullptr.
  const NearMemoryUnit *nearMemoryUnit(llvm::StringRef name) const;
  /// A named timing; error naming it when the target lacks it.
  llvm::Expected<int64_t> timing(llvm::StringRef name) const;
  /// Peak bandwidth over the pins (all channels), bytes/s.
  double externalPeakBytesPerSec() const;
  /// Peak all-bank MAC read bandwidth (all channels, every bank reads one
  /// access per MACAB spacing nCCDAB), bytes/s.
  double internalPeakBytesPerSec() const;
};

/// Loads and validates a target file. Errors name the file and the field
/// (e.g. "targets/x.json: timings.nRCDRD: missing").
llvm::Expected<Target> loadTarget(llvm::StringRef path);
llvm::Expected<Target> parseTarget(llvm::StringRef jsonText,
                                   llvm::StringRef sourceName);

/// A decoded byte address.
struct DecodedAddress {
  int64_t stack = 0, channel = 0, pseudoChannel = 0, sid = 0, bankGroup = 0,
          bank = 0, row = 0, column = 0;
};
/// Decodes with the target's mapping (fields taken from the low bits of the
/// shifted address, most significant field first; bits above are ignored).
DecodedAddress decodeAddress(const Target &target, uint64_t addr);
uint64_t encodeAddress(const Target &target, const DecodedAddress &a);

} // namespace pimsim

#endif // PIMSIM_TARGET_H
