//===- HostOps.h - host kernels of compiled models --------------*- C++ -*-===//
//
// Every host kernel of a compiled model carries typed host ops (program
// format 2.0, pimsim/HostOp.h; docs/backend-abi.md, "Host kernels"):
// embedding, rms_norm, add, rope, gated_act, pack, v_stage, sum, linear,
// attn_combine, logits and call, run in order on the program's `act` region
// in f32. HostOps loads them once, when a program is loaded (errors name the
// kernel and the op), binds the checkpoint tensors they read, and executes a
// kernel's ops through a Device with the reference kernels
// (pimc/Numerics/Kernels.h).
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_RUNTIME_HOSTOPS_H
#define PIMC_RUNTIME_HOSTOPS_H

#include "pimc/Numerics/Kernels.h"
#include "pimc/Runtime/Device.h"

#include "pimsim/HostOp.h"

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

/// The host-op ABI (pimsim/HostOp.h), under the runtime's names.
using ElemFormat = pimsim::ElemFormat;
using BufferRef = pimsim::ActBuffer;
using HostTensorRef = pimsim::HostTensor;
using HostOpKind = pimsim::HostOpKind;
using GatedActFn = pimsim::GatedActFn;
using HostCallValue = pimsim::CallValue;
inline llvm::StringRef formatName(ElemFormat f) {
  return pimsim::elemFormatName(f);
}
inline unsigned formatBytes(ElemFormat f) { return pimsim::elemFormatBytes(f); }
inline llvm::StringRef hostOpName(HostOpKind k) {
  return pimsim::hostOpKindName(k);
}
/// f32 -> format, round to nearest even (little-endian bytes at `out`).
void encodeElement(ElemFormat format, float value, uint8_t *out);
float decodeElement(ElemFormat format, const uint8_t *in);

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

/// One op as the runtime runs it: the program's typed op (pimsim::HostOp,
/// checked by pimsim::hostOpProblems when the program was read) plus what
/// loading resolved: the reference's rotary parameters and, for a `call`,
/// the index of its function.
struct HostOp : pimsim::HostOp {
  ref::RopeParams ropeParams; // rope
  int64_t function = -1;      // call: index into HostOps::functions()
};

class HostOps {
public:
  /// Loads the ops of every host kernel of `program`, checking them again
  /// (pimsim::hostOpProblems; the rotary parameters against the reference's
  /// rules; at most one `logits`). Errors name the kernel and the op: "host
  /// kernel 'layer0.norm' (1), op 0 (rms_norm): 'eps' must be ...".
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
  /// L0 of the program's longrope `rope` ops, 0 when it has none.
  int64_t longRopeL0() const { return longRopeOriginal; }
  /// The length of the model-level forward call the next steps belong to
  /// (ref::applyRope's callLength; 0: each step is its own call).
  void setRopeCallLength(int64_t n) { ropeCallLength = n; }

private:
  int64_t longRopeOriginal = 0, ropeCallLength = 0;
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
