//===- CostModel.h - what the target offers the backend --------*- C++ -*-===//
//
// Internal to lib/Conversion/LLMToPIM: sizes of weights and activations,
// and the target's cost model (docs/backend.md, "Cost model"), shared by
// dispatch and the conversion.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_CONVERSION_LLMTOPIM_COSTMODEL_H
#define PIMC_CONVERSION_LLMTOPIM_COSTMODEL_H

#include "pimc/Dialect/LLM/IR/LLMDialect.h"

#include "pimsim/Target.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <string>

namespace pimc::pim::detail {

using namespace ::mlir;

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The shape of an activation tensor for one token: a dynamic (token)
/// dimension is T = 1; a recurrent state's is its own; a value that is not
/// a tensor has shape [].
inline SmallVector<int64_t> tokenShape(Type type) {
  SmallVector<int64_t> shape;
  if (auto s = dyn_cast<llm::RecurrentStateType>(type))
    shape.assign(s.getShape().begin(), s.getShape().end());
  if (auto t = dyn_cast<ShapedType>(type))
    for (int64_t d : t.getShape())
      shape.push_back(ShapedType::isDynamic(d) ? 1 : d);
  return shape;
}

/// Elements of an activation tensor for one token.
inline int64_t tokenElements(Type type) {
  int64_t n = 1;
  for (int64_t d : tokenShape(type))
    n *= d;
  return n;
}

/// Bytes a weight occupies as stored in the checkpoint.
inline int64_t weightBytes(Type type) {
  if (auto q = dyn_cast<llm::QuantizedWeightType>(type))
    return q.getRows() * q.getCols() * q.getBits() / 8;
  auto t = cast<ShapedType>(type);
  return t.getNumElements() * t.getElementTypeBitWidth() / 8;
}

inline std::pair<int64_t, int64_t> weightShape(Type type) {
  if (auto q = dyn_cast<llm::QuantizedWeightType>(type))
    return {q.getRows(), q.getCols()};
  auto t = cast<ShapedType>(type);
  return {t.getDimSize(0), t.getDimSize(1)};
}

/// What the target offers the cost model.
struct Machine {
  const pimsim::Target &t;
  int64_t C, B, lanes, cols, E, gbBytes, gbEl, units, perBurst, rowBytes;
  std::string fmt;
  bool softmaxUnit = false;
  double pimBytesPerSec, hostBytesPerSec, hostFlops, launchNs;
  int64_t ccdab = 4;
  // Cycle estimates of the fixed costs of the GEMV schedule (calibrated on
  // pimsim runs of hbm3-pim GEMVs): a row switch, a group's readout and a
  // buffer segment's barrier.
  double rowSwitch = 45, readout = 80, segment = 30;

  explicit Machine(const pimsim::Target &t) : t(t) {
    C = t.org.totalChannels();
    B = t.org.banksPerChannel();
    lanes = t.pim.lanes;
    cols = t.org.columns;
    E = cols * lanes;
    gbBytes = t.pim.globalBufferBytes;
    gbEl = gbBytes / 2;
    units = B / std::max<int64_t>(1, t.pim.banksPerUnit);
    perBurst = t.org.accessBytes / 4;
    rowBytes = t.org.rowBytes();
    fmt = t.pim.inputFormat;
    for (const pimsim::NearMemoryUnit &u : t.nearMemory)
      softmaxUnit |= u.name == "softmax";
    pimBytesPerSec = t.internalPeakBytesPerSec();
    hostBytesPerSec = t.host.bandwidthBytes;
    hostFlops = t.host.flops;
    launchNs = t.host.launchNs;
    if (auto it = t.timings.find("nCCDAB"); it != t.timings.end())
      ccdab = it->second;
  }
  /// Estimated time of a memory-bound op on the PIM units: its bytes at the
  /// internal (power-capped) peak plus one input broadcast over the link.
  double pimNs(int64_t bytes, int64_t inputBytes) const {
    double link = t.host.linkBytes > 0 ? inputBytes / t.host.linkBytes : 0;
    return (bytes / pimBytesPerSec + link) * 1e9;
  }
  /// Estimated host time: launch + max(compute, memory).
  double hostNs(int64_t bytes, int64_t flops) const {
    return launchNs +
           std::max(flops / hostFlops, bytes / hostBytesPerSec) * 1e9;
  }
};

/// The most parts one attention is split into (each part takes ten runtime
/// parameters; a program has at most 64).
constexpr int64_t kMaxSplit = 4;

/// Keys per part when maxT keys are split over S parts: a whole number of
/// V staging columns (lanes), so pos % lanes is the lane in every part.
inline int64_t splitKeys(const Machine &m, int64_t maxT, int64_t S) {
  return ceilDiv(ceilDiv(maxT, S), m.lanes) * m.lanes;
}

/// KV-head copies R of an attention with H q heads and KVH KV heads: the
/// largest divisor of the group size with KVH R channels.
inline int64_t replicasFor(const Machine &m, int64_t H, int64_t KVH) {
  int64_t G = H / KVH;
  for (int64_t cand = G; cand >= 1; --cand)
    if (G % cand == 0 && KVH * cand <= m.C)
      return cand;
  return 1;
}

/// The near-memory unit that runs `function` (e.g. "add", "attn_combine"),
/// unless the elementwise class is forced to the host.
inline const pimsim::NearMemoryUnit *nearMemoryUnitFor(const Machine &m,
                                                       llvm::StringRef function,
                                                       bool elementwiseForced) {
  if (elementwiseForced)
    return nullptr;
  const pimsim::NearMemoryUnit *unit = nullptr;
  for (const pimsim::NearMemoryUnit &u : m.t.nearMemory)
    if (llvm::is_contained(u.functions, function) && !unit)
      unit = &u;
  return unit;
}

} // namespace pimc::pim::detail

#endif // PIMC_CONVERSION_LLMTOPIM_COSTMODEL_H
