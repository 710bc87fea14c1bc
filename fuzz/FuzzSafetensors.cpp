//===- FuzzSafetensors.cpp - safetensors header and data ------------------===//
//
// The input is a .safetensors file. Every tensor the reader accepts is
// touched at both ends of its data, so a view outside the file shows.
//
//===----------------------------------------------------------------------===//
#include "FuzzInput.h"
#include "pimc/Checkpoint/Safetensors.h"

using namespace pimc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path =
      fuzz::writeScratch("model.safetensors", fuzz::asText(data, size));
  auto file = ckpt::SafetensorsFile::open(path);
  if (!file) {
    fuzz::ignore(file);
    return 0;
  }
  uint64_t sum = 0;
  for (const ckpt::TensorView &t : (*file)->tensors()) {
    sum += static_cast<uint64_t>(t.numElements());
    if (t.numBytes)
      sum += t.data[0] + t.data[t.numBytes - 1];
  }
  for (const auto &kv : (*file)->metadata())
    sum += kv.getValue().size();
  fuzz::sink(sum);
  return 0;
}
