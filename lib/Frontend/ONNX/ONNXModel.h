//===- ONNXModel.h - protobuf-facing helpers (private) ----------*- C++ -*-===//
//
// Private to lib/Frontend/ONNX: the only header that includes the ONNX
// protobuf definitions.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_LIB_FRONTEND_ONNX_ONNXMODEL_H
#define PIMC_LIB_FRONTEND_ONNX_ONNXMODEL_H

#include "pimc/Frontend/ONNX/ONNXImporter.h"

#include "onnx/onnx_pb.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <optional>

namespace pimc::onnx {

/// ONNX spelling of an element type ("FLOAT", "DOUBLE", ...).
std::string typeName(int32_t elemType);
/// How the importer represents an ONNX element type; nullopt when it cannot
/// (STRING, COMPLEX*, UNDEFINED).
std::optional<TensorData::Kind> kindOf(int32_t elemType);

float halfToFloat(uint16_t bits);
float bfloat16ToFloat(uint16_t bits);

/// A TensorProto's values converted to TensorData, plus its stored bytes
/// when they came as raw/external data or f32/f16/bf16 typed fields (the
/// weight writer keeps f16/bf16 weights in their stored format).
struct DecodedTensor {
  TensorData data;
  int32_t elemType = 0;
  std::vector<uint8_t> raw;
};

/// Limits on what a model may ask of the importer (docs/onnx-importer.md,
/// "Limits"). A tensor has at most kMaxRank dimensions, each non-negative,
/// whose product, a zero-sized dimension counted as 1 (so that no partial
/// product of a shape overflows), is at most kMaxTensorElements (as the FX
/// importer's meta check).
constexpr int64_t kMaxRank = 64;
constexpr int64_t kMaxTensorElements = int64_t(1) << 40;
/// The largest tensor one node may compute on the host at import time
/// (ConstantOfShape, Range, folded shape arithmetic, masks and index
/// tables), and the most elements all nodes together may compute.
constexpr int64_t kMaxFoldedElements = int64_t(1) << 24;
constexpr int64_t kMaxFoldedTotal = int64_t(1) << 26;

/// The product of `shape`'s dimensions with 0 counted as 1, saturated at
/// INT64_MAX.
int64_t shapeExtent(llvm::ArrayRef<int64_t> shape);
/// Why `shape` breaks the limits above (a negative dimension, too many
/// dimensions or elements), or "" when it does not.
std::string shapeProblem(llvm::ArrayRef<int64_t> shape);

/// External data files, each mapped once per import.
using ExternalFiles = llvm::StringMap<std::unique_ptr<llvm::MemoryBuffer>>;

/// Decodes `t`; `what` ("initializer", "attribute", ...) and `file` name it
/// in errors. External data is resolved relative to `baseDir` (mapped
/// through `files` when given). With `bytesOnly`, a FLOAT/FLOAT16/BFLOAT16
/// tensor stored as bytes keeps only `raw` (a weight: its values are not
/// needed at import time).
llvm::Expected<DecodedTensor>
decodeTensor(const ::onnx::TensorProto &t, llvm::StringRef baseDir,
             llvm::StringRef file, llvm::StringRef what,
             ExternalFiles *files = nullptr, bool bytesOnly = false);

llvm::Expected<std::unique_ptr<::onnx::ModelProto>>
parseModelFile(llvm::StringRef path);

} // namespace pimc::onnx

#endif // PIMC_LIB_FRONTEND_ONNX_ONNXMODEL_H
