//===- HostOps.h - host kernels of compiled models --------------*- C++ -*-===//
//
// Every host kernel of a compiled model carries `params` = {"ops": [...]}
// (docs/backend-abi.md, "Host kernels"): embedding, rms_norm, add, rope,
// gated_act, pack, v_stage, sum, attn_combine and logits, run in order on the
// program's `act` region in f32. HostOps parses them once, when a program is
// loaded, into a compact op list (every field checked; errors name the kernel
// and the op), binds the checkpoint tensors they read, and executes a kernel's
// ops through a Device with the reference kernels (pimc/Numerics/Kernels.h).
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_RUNTIME_HOSTOPS_H
#define PIMC_RUNTIME_HOSTOPS_H

#include "pimc/Numerics/Kernels.h"
#include "pimc/Runtime/Device.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pimc::ckpt {
class WeightStore;
} // namespace pimc::ckpt

namespace pimc::rt {

/// Element formats of act-region buffers.
enum class ElemFormat { F32, FP16, BF16 };
llvm::StringRef formatName(ElemFormat format); // "f32", "fp16", "bf16"
std::optional<ElemFormat> parseFormat(llvm::StringRef name);
unsigned formatBytes(ElemFormat format);
/// f32 -> format, round to nearest even (little-endian bytes at `out`).
void encodeElement(ElemFormat format, float value, uint8_t *out);
float decodeElement(ElemFormat format, const uint8_t *in);

/// `n` elements of `fmt` at byte offset `off` of the act region.
struct BufferRef {
  int64_t offset = 0, elements = 0;
  ElemFormat format = ElemFormat::F32;
  int64_t bytes() const { return elements * formatBytes(format); }
};

/// A checkpoint tensor the host ops read as f32 (embedding tables, norm
/// weights, biases), with the shape the program was compiled for.
struct HostTensorRef {
  std::string name;
  std::vector<int64_t> shape;
  int64_t elements() const;
};

enum class HostOpKind {
  Embedding,
  RmsNorm,
  Add,
  Rope,
  GatedAct,
  Pack,
  VStage,
  Sum,
  Linear,
  Logits,
  AttnCombine,
  Call
};
llvm::StringRef hostOpName(HostOpKind kind); // "embedding", "rms_norm", ...

enum class GatedActFn { Silu, Gelu, GeluTanh };

/// A value passed to or returned by a host function: f32 elements, or
/// integers (token ids; a rank-0 integer is an index argument).
struct HostValue {
  std::vector<int64_t> shape;
  std::vector<float> f32;
  std::vector<int64_t> i64;
  bool integer = false;
  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// Runs the functions of a program's `call` host ops: llm ops without a
/// device lowering, outlined by the compiler (docs/backend.md, "Host
/// fallback"), as MLIR text. The runtime has no MLIR; the reference
/// interpreter implements this (pimc/Reference/HostFunctions.h) and the
/// driver hands it to the session (SessionOptions::hostFunctions).
class HostFunctionRunner {
public:
  virtual ~HostFunctionRunner() = default;
  /// Parses function i from texts[i] and binds its weights from `store`.
  /// Errors name the function.
  virtual llvm::Error load(llvm::ArrayRef<std::string> texts,
                           const ckpt::WeightStore &store) = 0;
  /// Runs function `index` on `args` (in its argument order).
  virtual llvm::Expected<std::vector<HostValue>>
  call(int64_t index, llvm::ArrayRef<HostValue> args) const = 0;
};

/// One argument or result of a `call`: a buffer of the act region with the
/// function's shape for it, or (arguments) the `pos` / `token` parameter.
struct HostCallValue {
  enum class Kind { Buffer, Position, Token };
  Kind kind = Kind::Buffer;
  BufferRef buffer;
  std::vector<int64_t> shape;
};

/// One parsed op. Which fields mean something depends on `kind`:
///   embedding  tensor (table [V, H]), out
///   rms_norm   in, out, tensor (weight [D]), eps, groups, gemma
///   add        a, b (or tensor when b is a host tensor), out
///   rope       in, out, heads, headDim, rope
///   gated_act  a (gate), b (up), out, act
///   pack       in, out, blocks, block, inStride, outStride, replicate,
///              scale
///   v_stage    in, out, heads, headDim, lanes, param
///   sum        in, out, parts, inStride (the stride between parts)
///   attn_combine in (parts partial outputs, inStride apart), b (stats:
///              [max, sum] per head, outStride apart per part), out, parts,
///              heads, block (elements per head), param (pos), partKeys
///   logits     in
///   call       function, callArgs, callResults
struct HostOp {
  HostOpKind kind = HostOpKind::Logits;
  BufferRef in, out, a, b;
  int64_t tensor = -1; // index into HostOps::tensors(), -1: none
  float eps = 0;
  int64_t groups = 1; // rms_norm: vectors; v_stage: staging column groups
  bool gemma = false;
  bool clear = true; // v_stage: zero the staging when a column starts
  int64_t heads = 0, headDim = 0;
  int64_t replicas = 1; // v_stage: device copies of each KV head (GQA)
  ref::RopeParams rope;
  GatedActFn act = GatedActFn::Silu;
  int64_t blocks = 0, block = 0, inStride = 0, outStride = 0, replicate = 1;
  float scale = 1;
  int64_t lanes = 0;
  int64_t param = -1;    // v_stage: index into Program::params
  int64_t parts = 0;     // sum, attn_combine
  int64_t partKeys = 0;  // attn_combine: keys per part of the sequence
  int64_t function = -1; // call: index into HostOps::functions()
  std::vector<HostCallValue> callArgs, callResults;
};

class HostOps {
public:
  /// Parses the `params` of every host kernel of `program`. Errors name the
  /// kernel and the op: "host kernel 'layer0.norm' (1), op 0 (rms_norm):
  /// 'eps' must be a number".
  static llvm::Expected<HostOps> parse(const pimsim::Program &program);

  /// The checkpoint tensors the ops read, each once.
  const std::vector<HostTensorRef> &tensors() const { return tensorRefs; }
  /// Binds every tensor from `store` (f32, f16, bf16 or f64; read as f32).
  /// Errors name the tensor and both shapes when a shape differs.
  llvm::Error bindTensors(const ckpt::WeightStore &store);
  bool tensorsBound() const { return bound; }

  /// The MLIR text of each `call` op's function, in op order.
  const std::vector<std::string> &functions() const { return functionTexts; }
  /// The runner of the `call` ops; needed (before bindTensors) when the
  /// program has any.
  void setFunctionRunner(std::unique_ptr<HostFunctionRunner> r) {
    runner = std::move(r);
  }

  /// Runs kernel `kernel`'s ops on `device`'s act region. `params` are the
  /// run's parameter values in Program::params order. Needs bound tensors.
  /// Errors name the op ("op 0 (embedding): token 7 is outside ..."); the
  /// device's run adds the kernel.
  llvm::Error run(Device &device, int64_t kernel,
                  llvm::ArrayRef<int64_t> params) const;

  /// The ops of kernel `kernel` (empty for an out-of-range index).
  llvm::ArrayRef<HostOp> ops(int64_t kernel) const;
  /// The buffer the `logits` op marks (none if the program has no such op).
  std::optional<BufferRef> logits() const { return logitsBuffer; }
  /// Index of the `pos` / `token` parameter in Program::params, -1: none.
  int64_t posParam() const { return posIndex; }
  int64_t tokenParam() const { return tokenIndex; }
  /// Rows of the embedding table (the vocabulary), 0 if no embedding op.
  int64_t embeddingRows() const { return vocabRows; }

private:
  friend class HostOpsParser;
  struct BoundTensor {
    ref::StorageType storage = ref::StorageType::F32;
    const void *data = nullptr; // a view into the checkpoint mapping
    std::vector<float> owned;   // f64 tensors, converted once
  };
  void widen(int64_t tensor, int64_t first, int64_t count, float *out) const;
  llvm::Error runOp(Device &device, const HostOp &op,
                    llvm::ArrayRef<int64_t> params) const;
  llvm::Error runCall(Device &device, const HostOp &op,
                      llvm::ArrayRef<int64_t> params) const;

  std::vector<std::vector<HostOp>> kernelOps; // per kernel
  std::vector<HostTensorRef> tensorRefs;
  std::vector<BoundTensor> boundTensors;
  std::vector<std::string> functionTexts;
  std::unique_ptr<HostFunctionRunner> runner;
  bool bound = false;
  std::optional<BufferRef> logitsBuffer;
  int64_t posIndex = -1, tokenIndex = -1, vocabRows = 0;
  std::string actRegion = "act";
};

} // namespace pimc::rt

#endif // PIMC_RUNTIME_HOSTOPS_H
