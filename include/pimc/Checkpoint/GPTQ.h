//===- GPTQ.h - GPTQ-packed linear weights in a checkpoint ------*- C++ -*-===//
//
// A GPTQ linear weight W [N out, K in] is not stored under its own name but
// as components next to it (specs/llm-architectures.md section 5.2), where
// <p> is the weight's name without ".weight":
//   <p>.qweight [K / perWord, N]  i32  code (k, n) in word (k / perWord, n),
//                                      bits [(k % perWord) * b, +b)
//   <p>.qzeros  [K / G, N / perWord] i32 zero (g, n), packed along N
//   <p>.scales  [K / G, N]        f16 | bf16 | f32
//   <p>.g_idx   [K]               i32, optional: the group of input k
// with b bits per code, perWord = 32 / b and group size G. pimc reads the
// components in this one place: the importer, the interpreter and the
// runtime all find, check and unpack them here.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_CHECKPOINT_GPTQ_H
#define PIMC_CHECKPOINT_GPTQ_H

#include "pimc/Checkpoint/Safetensors.h"
#include "pimc/Numerics/Kernels.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace pimc::ckpt {

/// How the codes of one GPTQ weight are stored.
struct GptqScheme {
  unsigned bits = 4;        // 4 or 8
  int64_t groupSize = 128;  // G; K for one group per row
  bool symmetric = true;    // the zero is 2^(b-1), whatever qzeros says
  bool zeroMinusOne = true; // "gptq" stores z - 1, "gptq_v2" stores z
  /// The scales' dtype the IR or program was built for; unset: any of F16,
  /// BF16, F32 (an importer reads it from the checkpoint).
  std::optional<DType> scaleDType;
};

/// The checkpoint name of one component: "<weight minus .weight>.<part>".
std::string gptqTensorName(llvm::StringRef weight, llvm::StringRef part);

/// Why `scheme` cannot describe an [N, K] weight, or "" when it can (bits,
/// group size dividing K, both dims filling whole 32-bit words).
std::string gptqShapeProblem(int64_t N, int64_t K, const GptqScheme &scheme);

/// The checkpoint tensors of one GPTQ weight (gIdx may be null).
struct GptqTensors {
  const TensorView *qweight = nullptr, *qzeros = nullptr, *scales = nullptr,
                   *gIdx = nullptr;
};

/// Finds the components of the [N, K] weight `weight` in `store` and checks
/// each one's dtype and shape, and that g_idx (when present) is the plain
/// k / G order (act-order checkpoints are not supported). Every problem is
/// appended to `problems`, naming the tensor; the result holds what was
/// found.
GptqTensors findGptqTensors(const WeightStore &store, llvm::StringRef weight,
                            int64_t N, int64_t K, const GptqScheme &scheme,
                            std::vector<std::string> &problems);

/// The same, as one error listing every problem.
llvm::Expected<GptqTensors> findGptqTensors(const WeightStore &store,
                                            llvm::StringRef weight, int64_t N,
                                            int64_t K,
                                            const GptqScheme &scheme);

/// Unpacks checked components into the kernels' form: codes [N, K], scales
/// and zeros [N, K / G] (a symmetric scheme's zeros are 2^(b-1)).
llvm::Expected<ref::QuantMatrix> unpackGptq(const GptqTensors &tensors,
                                            int64_t N, int64_t K,
                                            const GptqScheme &scheme);

} // namespace pimc::ckpt

#endif // PIMC_CHECKPOINT_GPTQ_H
