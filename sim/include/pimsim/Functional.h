//===- Functional.h - pimsim's functional (data) model ----------*- C++ -*-===//
//
// The functional mode's data model: DRAM contents (a SparseMemory), the
// host-visible regions, one global buffer and one fp32 softmax buffer per
// channel, and pim_unit.accumulators registers of `lanes` fp32 values per
// PIM unit (program format 1.3: the `reg` of mac_* / rd_acc / mv_sb). It is a
// CommandObserver: the Simulator attaches it to the engine and it applies
// each command's effect when the command issues (WRGB, MACAB / MACSB /
// MACPB, RDACC, RD, WR, MVSB, SFM, MVGB), so the data follows the engine's
// issue order. Each request's operand comes from a side table indexed by
// Request::tag that the executor fills in functional mode only. Semantics:
// docs/pimsim-isa.md, "Functional model".
//
//===----------------------------------------------------------------------===//
#ifndef PIMSIM_FUNCTIONAL_H
#define PIMSIM_FUNCTIONAL_H

#include "pimsim/Engine.h"
#include "pimsim/Program.h"
#include "pimsim/Target.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pimsim {

class SparseMemory;

/// What the functional model needs of one request beyond its address.
struct RequestOperand {
  int64_t region = -1;             // data region (-1: none)
  int64_t offset = 0;              // byte offset in the region
  int64_t gbOffset = 0;            // WRGB: byte offset in the global buffer;
                                   // MAC*: byte base of the input in it;
                                   // RDACC / MVSB: first PIM unit of the burst
  int64_t length = 0;              // SFM: elements
  Function fn = Function::Softmax; // SFM: softmax or exp
  int64_t reg = 0;                 // MAC* / RDACC / MVSB: accumulator
                                   // register of each PIM unit (1.3)
  float cap = 0.0f; // SFM (2.2): non-zero on the cap pass of a capped sfm,
                    // which only replaces each score s by cap * tanh(s / cap)
  /// SFM (2.2): on the bias pass of an ALiBi sfm, score i gets
  /// bf16(slope * bf16(key0 + i)) * alibiScale added (alibiScale 0: no
  /// pass).
  float slope = 0.0f, alibiScale = 0.0f;
  int64_t key0 = 0;
};

/// IEEE binary16 / bfloat16 to fp32 (exact).
float fp16ToFloat(uint16_t bits);
float bf16ToFloat(uint16_t bits);
/// fp32 to IEEE binary16 / bfloat16, round to nearest even (overflow to
/// infinity, NaN stays a quiet NaN).
uint16_t floatToFp16(float value);
uint16_t floatToBf16(float value);
/// The PIM unit's pairwise fp32 adder tree: ((v0+v1)+(v2+v3))+... (recursive
/// halves; an odd element is carried to the next level).
float pairwiseSum(llvm::ArrayRef<float> values);

/// Checks that functional mode supports the target's PIM unit.
llvm::Error checkFunctionalTarget(const Target &target);

class FunctionalModel : public CommandObserver {
public:
  /// `regions`: one sparse buffer per program region (host-visible data).
  FunctionalModel(const Target &target, const Program &program,
                  SparseMemory &dram, std::vector<SparseMemory> &regions);
  ~FunctionalModel() override;

  /// The side table of the phase about to run (indexed by Request::tag).
  void setOperands(const std::vector<RequestOperand> *ops) { operands = ops; }
  void onCommand(int64_t cycle, Command cmd, const DecodedAddress &addr,
                 const Request *req) override;
  /// Refresh moves no data.
  bool seesRefresh() const override { return false; }
  /// The first problem met while applying commands (success if none).
  llvm::Error takeError();

private:
  struct ChannelState {
    std::vector<uint8_t> globalBuffer; // allocated on first use
    std::vector<float> acc;            // units x accumulators x lanes
    std::vector<float> softmax;        // softmaxCapacity fp32 values
    int64_t sbFill = 0;   // values appended by mv_sb since the last reset
    int64_t sbRead = 0;   // next softmax-buffer value mv_gb moves
    int64_t gbCursor = 0; // global-buffer byte offset of the next mv_gb
    bool sbReset = false; // an sfm ran: the next mv_sb starts a new buffer
  };
  ChannelState &state(int64_t channel);
  void fail(std::string message);
  void mac(int64_t channel, llvm::ArrayRef<int64_t> banks, int64_t row,
           int64_t col, int64_t gbOffset, int64_t reg);
  float element(const uint8_t *p) const;
  /// False (and fails) unless `reg` names an accumulator register.
  bool checkRegister(llvm::StringRef what, int64_t reg);
  /// The reduced result of register `reg` of PIM unit `unit` (rd_acc,
  /// mv_sb); clears that register only.
  float takeAccumulator(ChannelState &s, int64_t unit, int64_t reg);
  void moveToSoftmax(int64_t channel, int64_t firstUnit, int64_t reg);
  /// Runs the unit in place; for softmax, `stats` gets [max, sum] (1.4).
  /// False when it failed.
  bool softmaxUnit(int64_t channel, int64_t length, Function fn,
                   float stats[2]);
  void moveToGlobalBuffer(int64_t channel);
  /// The cap pass of `sfm cap=` (2.2): the first `length` scores become
  /// tanh(s / cap) * cap in f32, the reference's order. False when it failed.
  bool capScores(int64_t channel, int64_t length, float cap);
  /// The bias pass of an ALiBi sfm (2.2): score i += bf16(slope * bf16(key0
  /// + i)) * scale in f32. False when it failed.
  bool biasScores(int64_t channel, const RequestOperand &op);

  const Target &tgt;
  const Program &prog;
  SparseMemory &dram;
  std::vector<SparseMemory> &regions;
  const std::vector<RequestOperand> *operands = nullptr;
  std::vector<ChannelState> channels;
  int64_t units = 0;           // PIM units per channel
  int64_t accumulators = 1;    // accumulator registers per PIM unit
  int64_t softmaxCapacity = 0; // softmax-buffer values per channel
  bool bf16 = false, treeReduction = false;
  std::string error;
};

} // namespace pimsim

#endif // PIMSIM_FUNCTIONAL_H
