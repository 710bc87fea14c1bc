//===- FuzzWeightNames.cpp - derived tensor names of a weight store -------===//
//------===//
//
// The input is a tensor name as a program or an importer hands it to
// WeightStore::lookup: a stored tensor with index, row-range, strided-row,
// transpose and block-row suffixes ("t[1]^T[0:6:2]", "t{B:a:b}",
// "t<B:a:b>"). The store holds a few small tensors of every rank the grammar
// meets. Every view the store resolves is
// touched at both ends, its size is checked against the tensor it derives
// from, and a fresh store per input bounds what the cache may hold.
//
//===----------------------------------------------------------------------===//
#include "FuzzInput.h"
#include "pimc/Checkpoint/Safetensors.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace pimc;

namespace {
/// experts [3, 4, 6] bf16, w [5, 7] f32, b [8] f16: header and data.
std::string storeFile() {
  std::string header =
      R"({"experts":{"dtype":"BF16","shape":[3,4,6],"data_offsets":[0,144]},)"
      R"("w":{"dtype":"F32","shape":[5,7],"data_offsets":[144,284]},)"
      R"("b":{"dtype":"F16","shape":[8],"data_offsets":[284,300]}})";
  std::string bytes;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    bytes.push_back(char((n >> (8 * i)) & 0xff));
  bytes += header;
  for (int i = 0; i < 300; ++i)
    bytes.push_back(char(i * 37 + 11));
  return bytes;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path =
      fuzz::writeScratch("names.safetensors", storeFile());
  auto store = ckpt::WeightStore::openFiles({path});
  if (!store) { // the harness's file: never the input's fault
    llvm::errs() << llvm::toString(store.takeError()) << "\n";
    std::abort();
  }
  const ckpt::TensorView *t = (*store)->lookup(fuzz::asText(data, size));
  if (!t)
    return 0;
  // A view is never larger than the largest stored tensor (a name can only
  // select, reorder or drop elements).
  if (t->numBytes > 144 || uint64_t(t->numElements()) * 4 < t->numBytes)
    std::abort();
  uint64_t sum = t->numElements();
  if (t->numBytes)
    sum += t->data[0] + t->data[t->numBytes - 1];
  fuzz::sink(sum);
  return 0;
}
