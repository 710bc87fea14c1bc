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
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

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

/// The name of the transpose of the 2-D tensor `base` ("base^T"): a
/// transformers Conv1D weight (GPT-2's c_attn, c_proj, c_fc), stored
/// [in, out], read in nn.Linear's [out, in] layout. WeightStore::lookup
/// materializes the transpose once (the model's own size; the mapped file
/// is only read), so the importer, the interpreter, the compiler and the
/// runtime read it like a stored tensor. Row views compose:
/// rowSliceName(transposedName(t), a, b) is rows a..b of the transpose,
/// i.e. columns a..b of the stored Conv1D weight.
std::string transposedName(llvm::StringRef base);

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

  /// nullptr when no tensor has that name. A rowSliceName whose base
  /// resolves and whose rows lie inside it names a view of those rows (no
  /// copy): the same dtype, shape [end - begin, ...] and contiguous bytes.
  /// A transposedName of a stored 2-D tensor names its transpose (copied
  /// once, on first lookup; shape [cols, rows], the same dtype).
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
  const TensorView *rowView(llvm::StringRef name) const;
  const TensorView *transposedView(llvm::StringRef name) const;

  std::vector<std::unique_ptr<SafetensorsFile>> files;
  llvm::StringMap<const TensorView *> byName;
  /// Row and transposed views handed out so far (pointers stay valid).
  mutable llvm::StringMap<std::unique_ptr<TensorView>> views;
  /// The bytes of each materialized transpose, by its name.
  mutable llvm::StringMap<std::vector<uint8_t>> transposedBytes;
  mutable std::mutex viewsMutex;
};

} // namespace pimc::ckpt

#endif // PIMC_CHECKPOINT_SAFETENSORS_H
