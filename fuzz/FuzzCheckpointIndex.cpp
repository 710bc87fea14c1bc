//===- FuzzCheckpointIndex.cpp - model.safetensors.index.json -------------===//
//
// The input is the shard index of a checkpoint directory that holds one
// valid shard, `model-00001-of-00001.safetensors` (tensor "w", f32 [2]).
// The index names the shard of every tensor; a name outside the directory
// must be rejected, never opened.
//
//===----------------------------------------------------------------------===//
#include "FuzzInput.h"
#include "pimc/Checkpoint/Safetensors.h"

#include "llvm/Support/Path.h"

#include <cstring>

using namespace pimc;

static std::string checkpointDir() {
  static std::string dir = [] {
    std::string header = R"({"w":{"dtype":"F32","shape":[2],)"
                         R"("data_offsets":[0,8]}})";
    while (header.size() % 8)
      header += ' ';
    std::string file(8, '\0');
    uint64_t n = header.size();
    std::memcpy(&file[0], &n, 8); // little-endian hosts only (x86, arm)
    file += header + std::string(8, '\0');
    std::string shard =
        fuzz::writeScratch("model-00001-of-00001.safetensors", file);
    return llvm::sys::path::parent_path(shard).str();
  }();
  return dir;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string dir = checkpointDir();
  fuzz::writeScratch("model.safetensors.index.json", fuzz::asText(data, size));
  auto store = ckpt::WeightStore::openDirectory(dir);
  if (!store) {
    fuzz::ignore(store);
    return 0;
  }
  uint64_t sum = (*store)->totalBytes();
  for (const std::string &name : (*store)->names())
    if (const ckpt::TensorView *t = (*store)->lookup(name))
      sum += t->numBytes ? t->data[t->numBytes - 1] : 0;
  fuzz::sink(sum);
  return 0;
}
