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

#include "pimc/Checkpoint/Safetensors.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <vector>

namespace pimc::ref {

/// A host tensor passed to or returned by Interpreter::call: a row-major
/// shape and f32 data (DType::F32) or 64-bit integer data (DType::I64, and
/// DType::Bool as 0/1).
struct HostTensor {
  enum class DType { F32, I64, Bool };
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<float> f32;   // DType::F32
  std::vector<int64_t> i64; // DType::I64, DType::Bool

  static HostTensor fromF32(std::vector<int64_t> shape,
                            std::vector<float> data);
  static HostTensor fromI64(std::vector<int64_t> shape,
                            std::vector<int64_t> data);
  static HostTensor fromBool(std::vector<int64_t> shape,
                             std::vector<int64_t> data);
  int64_t numElements() const;
  bool isInteger() const { return dtype != DType::F32; }
  /// "f32", "i64" or "i1".
  llvm::StringRef dtypeName() const;
};

class Interpreter {
public:
  ~Interpreter();

  /// Binds `module`'s function `entry` to `weights`: every llm.weight is
  /// looked up (name, dtype, shape) and quantized weights are unpacked once.
  /// Errors name the weight and what differs. `module` and `weights` must
  /// outlive the interpreter. The entry is either a language model
  /// (tokens: tensor<?xi64>, offset: index, caches...) -> (logits,
  /// caches...), run with forward(), or a function of plain tensors, run
  /// with call(); a function without llm.weight needs no weights (an empty
  /// store will do).
  /// `plain` true: the entry is run with call() whatever its signature,
  /// and may take `index` arguments (a rank-0 I64 input each): the host
  /// functions of compiled programs.
  static llvm::Expected<std::unique_ptr<Interpreter>>
  create(mlir::ModuleOp module, const ckpt::WeightStore &weights,
         llvm::StringRef entry = "forward", bool plain = false);

  /// Runs the entry function on `tokens` at positions [offset, offset + T);
  /// returns the first result (the logits; row-major, integer results
  /// converted to f32) and keeps the updated caches for the next call.
  llvm::Expected<std::vector<float>> forward(llvm::ArrayRef<int64_t> tokens,
                                             int64_t offset);

  /// Runs an entry function whose arguments and results are all tensors
  /// (f32, i64/i32 or i1 elements) on `inputs`, one per argument in order.
  /// Each input must have the argument's rank, static dimensions and
  /// element type (f32 <-> F32, integers <-> I64, i1 <-> Bool); errors name
  /// the input. Returns the results in order.
  llvm::Expected<std::vector<HostTensor>>
  call(llvm::ArrayRef<HostTensor> inputs);

  /// True when the entry takes plain tensors (call()), false for the
  /// token/KV-cache signature (forward()).
  bool takesPlainTensors() const;

  /// Forgets all cached keys and values.
  void resetCaches();

  /// The length of the model-level forward call the next forward() calls
  /// belong to (0: each call is its own; see ref::applyRope).
  void setRopeCallLength(int64_t n);
  /// L0 of the model's longrope embeddings, 0 when it has none.
  int64_t longRopeL0() const;

  /// Tokens per forward() call when the entry's token type is static (a
  /// synthesized decode step takes one), 0 when any number goes.
  int64_t tokensPerStep() const;

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
  /// Cached tokens run again because a step crossed longrope's L0.
  int64_t recomputedTokens = 0;
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
