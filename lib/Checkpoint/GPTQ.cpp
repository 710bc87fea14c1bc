//===- GPTQ.cpp - GPTQ-packed linear weights in a checkpoint --------------===//
//
// Finding, checking and unpacking the components of a GPTQ weight; the
// layout is in GPTQ.h, the bit-level unpacking in ref::unpackGptq.
//
//===----------------------------------------------------------------------===//

#include "pimc/Checkpoint/GPTQ.h"
#include "pimc/Support/Shape.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace pimc::ckpt {

std::string gptqTensorName(StringRef weight, StringRef part) {
  StringRef base = weight;
  base.consume_back(".weight");
  return (base + "." + part).str();
}

std::string gptqShapeProblem(int64_t N, int64_t K, const GptqScheme &scheme) {
  if (scheme.bits != 4 && scheme.bits != 8)
    return formatv("GPTQ bits {0} is not 4 or 8", scheme.bits).str();
  if (N <= 0 || K <= 0)
    return formatv("GPTQ weight shape [{0}, {1}] is not positive", N, K).str();
  if (scheme.groupSize <= 0 || K % scheme.groupSize != 0 ||
      K % 32 * scheme.bits % 32 != 0 || N % 32 * scheme.bits % 32 != 0)
    return formatv("GPTQ needs group_size ({0}) to divide in_features ({1}) "
                   "and both dimensions to fill 32-bit words at {2} bits",
                   scheme.groupSize, K, scheme.bits)
        .str();
  return "";
}

namespace {

/// Looks up one component and checks its dtype and shape.
const TensorView *findComponent(const WeightStore &store, StringRef weight,
                                StringRef part, ArrayRef<DType> dtypes,
                                ArrayRef<int64_t> shape, bool optional,
                                std::vector<std::string> &problems) {
  std::string name = gptqTensorName(weight, part);
  const TensorView *t = store.lookup(name);
  if (!t) {
    if (!optional)
      problems.push_back(formatv("missing tensor '{0}' (expected shape {1})",
                                 name, shapeString(shape)));
    return nullptr;
  }
  bool ok = true;
  if (!is_contained(dtypes, t->dtype)) {
    std::string allowed;
    for (DType d : dtypes)
      allowed += (allowed.empty() ? "" : " or ") + dtypeName(d).str();
    problems.push_back(formatv("tensor '{0}' has dtype {1}, expected {2}", name,
                               dtypeName(t->dtype), allowed));
    ok = false;
  }
  if (ArrayRef<int64_t>(t->shape) != shape) {
    problems.push_back(formatv("tensor '{0}' has shape {1}, expected {2}", name,
                               shapeString(t->shape), shapeString(shape)));
    ok = false;
  }
  return ok ? t : nullptr;
}

/// g_idx[k] must be k / G: the kernels group inputs in order.
void checkGroupIndex(const TensorView &gIdx, int64_t K, int64_t G,
                     std::vector<std::string> &problems) {
  for (int64_t k = 0; k < K; ++k) {
    int32_t g = int32_t(support::endian::read32le(gIdx.data + 4 * k));
    if (g != k / G) {
      problems.push_back(
          formatv("tensor '{0}': input {1} is in group {2}, not {3}: act-order "
                  "(desc_act) GPTQ checkpoints are not supported",
                  gIdx.name, k, g, k / G));
      return;
    }
  }
}

} // namespace

GptqTensors findGptqTensors(const WeightStore &store, StringRef weight,
                            int64_t N, int64_t K, const GptqScheme &scheme,
                            std::vector<std::string> &problems) {
  GptqTensors t;
  if (std::string why = gptqShapeProblem(N, K, scheme); !why.empty()) {
    problems.push_back(formatv("'{0}': {1}", weight, why));
    return t;
  }
  int64_t perWord = 32 / scheme.bits, groups = K / scheme.groupSize;
  t.qweight = findComponent(store, weight, "qweight", {DType::I32},
                            {K / perWord, N}, false, problems);
  t.qzeros = findComponent(store, weight, "qzeros", {DType::I32},
                           {groups, N / perWord}, false, problems);
  SmallVector<DType, 3> scaleDTypes = {DType::F16, DType::BF16, DType::F32};
  if (scheme.scaleDType)
    scaleDTypes = {*scheme.scaleDType};
  t.scales = findComponent(store, weight, "scales", scaleDTypes, {groups, N},
                           false, problems);
  t.gIdx =
      findComponent(store, weight, "g_idx", {DType::I32}, {K}, true, problems);
  if (t.gIdx)
    checkGroupIndex(*t.gIdx, K, scheme.groupSize, problems);
  return t;
}

Expected<GptqTensors> findGptqTensors(const WeightStore &store,
                                      StringRef weight, int64_t N, int64_t K,
                                      const GptqScheme &scheme) {
  std::vector<std::string> problems;
  GptqTensors t = findGptqTensors(store, weight, N, K, scheme, problems);
  if (!problems.empty())
    return createStringError(join(problems, "; "));
  return t;
}

Expected<ref::QuantMatrix> unpackGptq(const GptqTensors &t, int64_t N,
                                      int64_t K, const GptqScheme &scheme) {
  if (!t.qweight || !t.qzeros || !t.scales)
    return createStringError("GPTQ unpack: the weight's components were not "
                             "found and checked");
  std::optional<ref::StorageType> scaleStorage = floatStorage(t.scales->dtype);
  if (!scaleStorage)
    return createStringError("GPTQ unpack: '" + t.scales->name +
                             "' is not F32, F16 or BF16");
  auto q =
      ref::unpackGptq(reinterpret_cast<const int32_t *>(t.qweight->data),
                      reinterpret_cast<const int32_t *>(t.qzeros->data),
                      t.scales->data, *scaleStorage, N, K, scheme.groupSize,
                      int(scheme.bits), scheme.zeroMinusOne);
  if (!q)
    return q.takeError();
  // Symmetric schemes: the zero is the code range's midpoint, whatever the
  // stored qzeros say.
  if (scheme.symmetric)
    std::fill(q->zeros.begin(), q->zeros.end(), 1 << (scheme.bits - 1));
  return q;
}

} // namespace pimc::ckpt
