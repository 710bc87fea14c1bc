//===- Interpreter.h - reference interpreter of llm IR ----------*- C++ -*-===//
//
// Executes an llm module's forward function on the CPU with each op's
// documented numerics (f32 activations, f32 accumulation), keeping one KV
// cache per cache argument across calls. It is the golden model every
// lowering is compared against, so it favours plain loops over cleverness;
// the heavy kernels (linear, attention) use both cores.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_REFERENCE_INTERPRETER_H
#define PIMC_REFERENCE_INTERPRETER_H

#include "pimc/Frontend/HF/Safetensors.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <vector>

namespace pimc::ref {

class Interpreter {
public:
  ~Interpreter();

  /// Binds `module`'s function `entry` to `weights`: every llm.weight is
  /// looked up (name, dtype, shape) and quantized weights are unpacked once.
  /// Errors name the weight and what differs. `module` and `weights` must
  /// outlive the interpreter.
  static llvm::Expected<std::unique_ptr<Interpreter>>
  create(mlir::ModuleOp module, const hf::WeightStore &weights,
         llvm::StringRef entry = "forward");

  /// Runs the entry function on `tokens` at positions [offset, offset + T);
  /// returns the first result (the logits; row-major, integer results
  /// converted to f32) and keeps the updated caches for the next call.
  llvm::Expected<std::vector<float>> forward(llvm::ArrayRef<int64_t> tokens,
                                             int64_t offset);

  /// Forgets all cached keys and values.
  void resetCaches();

  int64_t vocabSize() const;
  int64_t maxContext() const;

  struct Impl;

private:
  explicit Interpreter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

struct GenerationResult {
  std::vector<int64_t> tokens;            // newly generated ids
  std::vector<std::vector<float>> logits; // logits that produced each token
  double prefillSeconds = 0, decodeSeconds = 0;
};

/// Greedy decoding: prefill `prompt`, then one token at a time. Row i of
/// `logits` is the distribution token i was taken from (argmax, lowest
/// index on ties). `keepLogits` false drops them to save memory.
llvm::Expected<GenerationResult> generateGreedy(Interpreter &interp,
                                                llvm::ArrayRef<int64_t> prompt,
                                                int64_t maxNewTokens,
                                                bool keepLogits);

} // namespace pimc::ref

#endif // PIMC_REFERENCE_INTERPRETER_H
