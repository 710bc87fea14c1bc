//===- Safetensors.h - memory-mapped safetensors checkpoints ----*- C++ -*-===//
//
// Reads Hugging Face safetensors files (single file or sharded through
// model.safetensors.index.json) without copying tensor data: every file is
// memory-mapped and a tensor is a view into the mapping. Every header is
// validated before any data is touched (header length, JSON, dtype names,
// shapes, data_offsets inside the file, size = numel * element size, no
// overlap), and every failure names the file and tensor.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_CHECKPOINT_SAFETENSORS_H
#define PIMC_CHECKPOINT_SAFETENSORS_H

#include "pimc/Numerics/Kernels.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace pimc::ckpt {

/// Element types that can appear in a safetensors header.
enum class DType {
  Bool,
  U8,
  I8,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64,
  F8_E4M3,
  F8_E5M2,
  F8_E8M0
};

/// The spelling used in safetensors headers ("BF16", "F32", ...).
llvm::StringRef dtypeName(DType dtype);
/// Parses a header spelling; std::nullopt for unknown names.
std::optional<DType> parseDType(llvm::StringRef name);
/// Size of one element in bytes.
unsigned dtypeSize(DType dtype);
/// The kernels' storage type of an F32, F16 or BF16 tensor; std::nullopt
/// for any other dtype.
std::optional<ref::StorageType> floatStorage(DType dtype);

/// A read-only view of one tensor inside a memory-mapped file.
struct TensorView {
  std::string name;
  DType dtype;
  llvm::SmallVector<int64_t, 4> shape;
  const uint8_t *data = nullptr; // Start of the tensor's bytes.
  uint64_t numBytes = 0;
  std::string file; // File the tensor lives in (for diagnostics).

  int64_t numElements() const;
};

/// One safetensors file, memory-mapped.
class SafetensorsFile {
public:
  /// Maps and validates `path`. Errors name the file and, where one is
  /// involved, the tensor.
  static llvm::Expected<std::unique_ptr<SafetensorsFile>>
  open(llvm::StringRef path);

  llvm::ArrayRef<TensorView> tensors() const { return tensorList; }
  const llvm::StringMap<std::string> &metadata() const { return meta; }
  llvm::StringRef path() const { return filePath; }

private:
  std::string filePath;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  std::vector<TensorView> tensorList;
  llvm::StringMap<std::string> meta;
};

/// The name of rows [begin, end) of tensor `base` ("base[begin:end]"): a
/// fused projection's part (qkv_proj's q rows, gate_up_proj's gate rows).
/// WeightStore::lookup resolves it to a view of the stored rows, so the
/// importer, the interpreter and the runtime read the part like a tensor.
std::string rowSliceName(llvm::StringRef base, int64_t begin, int64_t end);

/// The name of index `index` along dimension 0 of tensor `base`
/// ("base[index]"), with that dimension dropped: one expert's matrix of a
/// fused [experts, ...] tensor (gpt-oss's mlp.experts.gate_up_proj[e] is
/// [H, 2I]). WeightStore::lookup resolves it to a view (no copy) of shape
/// [d1, ...]; `base` must have at least two dimensions.
std::string indexName(llvm::StringRef base, int64_t index);

/// The name of rows begin, begin + step, ... (below end) of tensor `base`
/// ("base[begin:end:step]"; step 1 prints as rowSliceName's
/// "base[begin:end]"): one half of an interleaved fused projection
/// (gpt-oss's gate weight is columns 0::2 of gate_up_proj[e], i.e.
/// stridedRowsName(transposedName(indexName(t, e)), 0, 2I, 2)). For
/// step > 1 the rows are not contiguous, so WeightStore::lookup copies them
/// once, in the stored dtype; rows of a transpose (`X^T[a:b:s]`) are copied
/// straight from X's columns, never through the whole transpose.
std::string stridedRowsName(llvm::StringRef base, int64_t begin, int64_t end,
                            int64_t step);

/// The name of the transpose of the 2-D tensor `base` ("base^T"): a
/// transformers Conv1D weight (GPT-2's c_attn, c_proj, c_fc), stored
/// [in, out], read in nn.Linear's [out, in] layout. WeightStore::lookup
/// materializes the transpose once (the model's own size; the mapped file
/// is only read), so the importer, the interpreter, the compiler and the
/// runtime read it like a stored tensor. Row views compose:
/// rowSliceName(transposedName(t), a, b) is rows a..b of the transpose,
/// i.e. columns a..b of the stored Conv1D weight (copied by themselves
/// unless the whole transpose is already materialized). `base` may itself
/// be a derived name (transposedName(indexName(t, e)) copies expert e's
/// matrix only).
std::string transposedName(llvm::StringRef base);

/// The name of rows [begin, end) of every block of `block` rows of the 2-D
/// tensor `base` ("base{block:begin:end}"), as a 3-D [rows / block,
/// end - begin, cols] tensor: per-head parts of a head-blocked projection
/// (MLA's kv_b_proj [nh * (dn + dv), r]: W_UK is {dn + dv:0:dn}, W_UV
/// {dn + dv:dn:dn + dv}). WeightStore::lookup copies the rows once unless
/// they are whole blocks (then a view).
std::string blockRowsName(llvm::StringRef base, int64_t block, int64_t begin,
                          int64_t end);
/// The same rows kept 2-D ("base<block:begin:end>"), [rows / block * (end -
/// begin), cols]: Qwen3-Next's per-key-head [q | k | v | z] projection read
/// as one q, k, v or z weight.
std::string flatBlockRowsName(llvm::StringRef base, int64_t block,
                              int64_t begin, int64_t end);

/// All tensors of a checkpoint directory: `model.safetensors`, or the shards
/// listed by `model.safetensors.index.json` (each shard opened once; every
/// tensor of the weight_map must be present in the shard it names).
class WeightStore {
public:
  static llvm::Expected<std::unique_ptr<WeightStore>>
  openDirectory(llvm::StringRef checkpointDir);
  /// A store over explicitly given files (used by tests).
  static llvm::Expected<std::unique_ptr<WeightStore>>
  openFiles(llvm::ArrayRef<std::string> paths);

  /// The tensor named `name`, or nullptr. A stored tensor's name wins;
  /// otherwise the name is derived, parsed from the right, each suffix
  /// applying to whatever the rest (its base) resolves to:
  ///   base[i]       index i along dim 0, dropped: shape [d1, ...], a view
  ///                 (no copy); the base needs rank >= 2 and i < d0.
  ///   base[a:b]     rows a..b-1: shape [b - a, ...], a view (no copy);
  ///                 the base needs rank >= 1 and a < b <= d0.
  ///   base[a:b:s]   rows a, a + s, ... < b (s >= 1; s == 1 is [a:b]):
  ///                 shape [ceil((b - a) / s), ...], copied once for s > 1.
  ///   base^T        the transpose of a 2-D base: shape [d1, d0], copied
  ///                 once.
  ///   base{B:a:b}   rows a..b-1 of each block of B rows of a 2-D base
  ///                 (B divides d0, a < b <= B): shape [d0 / B, b - a, d1],
  ///                 a view when b - a == B, else copied once.
  /// Integers are decimal, nothing else (no sign, no spaces). Rows or an
  /// index of a transpose (`X^T[a:b:s]`, `X^T[i]`) that is not already
  /// materialized are copied straight from X's columns, never through the
  /// whole transpose. Every derived tensor has its base's dtype and file,
  /// is resolved once and kept for the store's life (the pointer stays
  /// valid); lookup is thread-safe. A malformed name (bad integer, index or
  /// rows outside the base, b <= a, s == 0, transpose of a non-2-D tensor,
  /// index of a rank < 2 tensor, blocks that do not divide
  /// the rows, unknown base) is nullptr.
  const TensorView *lookup(llvm::StringRef name) const;
  /// Tensor names in a stable (sorted) order.
  std::vector<std::string> names() const;
  /// Total bytes of all tensor data.
  uint64_t totalBytes() const;
  /// "sha256:<hex>" of the tensor table: every tensor's name, dtype and
  /// shape, in name order (not the data). Two checkpoints with the same
  /// digest have interchangeable tensors as far as a program can tell.
  std::string tableDigest() const;

private:
  /// One derived tensor (a view, or bytes it owns), built exactly once.
  struct Derived {
    std::once_flag once;
    std::atomic<bool> ready{false};
    TensorView view;
    std::vector<uint8_t> bytes; // Materialized data; empty for a view.
  };
  /// The derived tensor `name` if it is already built, else nullptr.
  const TensorView *built(llvm::StringRef name) const;
  /// The derived tensor `name`, built by `build` on first use (without
  /// viewsMutex held, so `build` may look up other names).
  const TensorView *
  derive(llvm::StringRef name,
         llvm::function_ref<void(TensorView &, std::vector<uint8_t> &)> build)
      const;

  std::vector<std::unique_ptr<SafetensorsFile>> files;
  llvm::StringMap<const TensorView *> byName;
  /// Derived tensors handed out so far, by name (pointers stay valid).
  mutable llvm::StringMap<std::unique_ptr<Derived>> views;
  /// Guards `views` (not the building of an entry).
  mutable std::mutex viewsMutex;
};

} // namespace pimc::ckpt

#endif // PIMC_CHECKPOINT_SAFETENSORS_H
