//===- HostOpCodec.h - host ops and the memory plan as flatbuffers -*- C++
//-*-===//
//
// Internal to the ABI library: Program.cpp's reader and writer call these
// for the 2.0 tables (HostOp, HostTensor, MemoryPlan of program.fbs).
//
//===----------------------------------------------------------------------===//
#ifndef PIMSIM_ABI_HOSTOPCODEC_H
#define PIMSIM_ABI_HOSTOPCODEC_H

#include "pimsim/Program.h"
#include "pimsim/program_generated.h"

#include <cstring>

namespace pimsim::detail {

/// The verifier aligns vectors to 4 bytes only, so elements of 8-byte
/// structs and scalars are copied out rather than read in place.
template <typename T> T load(const void *p) {
  T value;
  std::memcpy(static_cast<void *>(&value), p, sizeof(T));
  return value;
}
/// A vector of longs (null: empty).
std::vector<int64_t> longs(const flatbuffers::Vector<int64_t> *v);

using HostOpsOffset =
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::HostOp>>>;
using HostTensorsOffset = flatbuffers::Offset<
    flatbuffers::Vector<flatbuffers::Offset<fb::HostTensor>>>;

/// Empty lists and an empty plan are left out (null offsets).
HostOpsOffset encodeHostOps(flatbuffers::FlatBufferBuilder &fbb,
                            const std::vector<HostOp> &ops);
HostTensorsOffset encodeHostTensors(flatbuffers::FlatBufferBuilder &fbb,
                                    const std::vector<HostTensor> &tensors);
flatbuffers::Offset<fb::MemoryPlan>
encodeMemoryPlan(flatbuffers::FlatBufferBuilder &fbb, const MemoryPlan &plan);

/// From verified tables (null: empty).
std::vector<HostOp>
decodeHostOps(const flatbuffers::Vector<flatbuffers::Offset<fb::HostOp>> *v);
std::vector<HostTensor> decodeHostTensors(
    const flatbuffers::Vector<flatbuffers::Offset<fb::HostTensor>> *v);
MemoryPlan decodeMemoryPlan(const fb::MemoryPlan *plan);

} // namespace pimsim::detail

#endif // PIMSIM_ABI_HOSTOPCODEC_H
