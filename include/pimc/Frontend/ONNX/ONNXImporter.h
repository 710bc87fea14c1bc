//===- ONNXImporter.h - ONNX model -> llm dialect ---------------*- C++ -*-===//
//
// Reads an ONNX ModelProto (with external data) and builds the llm IR of its
// graph through a table of (op_type, opset range) rules, following the
// contract of docs/frontend-graphs.md. Unsupported ops are all reported in
// one error. The protobuf and ONNX headers stay inside lib/Frontend/ONNX;
// this header only exposes plain data.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_FRONTEND_ONNX_ONNXIMPORTER_H
#define PIMC_FRONTEND_ONNX_ONNXIMPORTER_H

#include "pimc/Checkpoint/Safetensors.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pimc::onnx {

/// A tensor read from a serialized TensorProto (the node tests' input_N.pb /
/// output_N.pb), converted the way the importer converts graph values:
/// every float type to f32, every integer type to i64, bool to i64 0/1.
struct TensorData {
  enum class Kind { F32, I64, I1 };
  std::string name;
  std::string onnxType; // ONNX spelling of the stored type ("DOUBLE", ...)
  Kind kind = Kind::F32;
  llvm::SmallVector<int64_t> shape;
  std::vector<float> f32;   // Kind::F32
  std::vector<int64_t> i64; // Kind::I64 and Kind::I1
};

struct ImportOptions {
  /// Initializers with at most this many elements (and every integer or
  /// boolean initializer) become `arith.constant`; larger float ones become
  /// `llm.weight` whose data is returned in ImportedModel::weights.
  int64_t maxInlineElements = 64;
  /// Values of graph inputs, by name, that the importer may use where an op
  /// needs an import-time constant (Reshape's shape, Slice's starts, TopK's
  /// k, axes, ...): it specializes the graph on them. The inputs stay
  /// function arguments and every other use reads them at run time.
  const std::map<std::string, TensorData> *inputValues = nullptr;
  /// Example values of graph inputs, by name, for ops whose result shape
  /// depends on the data (NonZero): the importer runs the ops the node
  /// depends on in the reference interpreter on these values and takes the
  /// result's size from them (the emitted llm.nonzero checks that count at
  /// run time). Unlike inputValues the graph is not specialised on the
  /// values otherwise. Where an input has no example value, its inputValues
  /// entry (if any) is used. An input with symbolic dimensions that
  /// inputShapes does not fix takes its example's shape.
  const std::map<std::string, TensorData> *exampleInputs = nullptr;
  /// Static shapes for graph inputs, by name, for inputs with symbolic
  /// dimensions (dynamic_axes), checked against the fixed ones. Symbolic
  /// dimensions of one name must get one size over all graph inputs.
  std::map<std::string, llvm::SmallVector<int64_t>> inputShapes;
  /// Graph inputs replaced by import-time constants, by name: such an input
  /// is no function argument, and the ops it feeds fold where they can (a
  /// decoder with past's prompt form, DecoderWithPast.h). Each value must
  /// fit the input's declared shape and element kind.
  const std::map<std::string, TensorData> *constantInputs = nullptr;
  /// The graph outputs the function returns, in graph order; empty: all.
  /// Every name must be a graph output.
  std::vector<std::string> outputs;
};

/// A tensor the importer lifted out of the model for `llm.weight` (raw
/// little-endian bytes in `dtype`, row-major `shape`).
struct WeightTensor {
  std::string name;
  ckpt::DType dtype;
  llvm::SmallVector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

struct ImportedModel {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<WeightTensor> weights;
};

/// Imports `path` (a .onnx file; external data relative to its directory).
/// The module holds `func.func @forward` with one argument per graph input
/// that is not an initializer and one result per graph output.
llvm::Expected<ImportedModel> importModelFile(mlir::MLIRContext &context,
                                              llvm::StringRef path,
                                              const ImportOptions &options);

/// Writes `weights` as one safetensors file (what `pimc import` puts next to
/// its output and what the interpreter binds llm.weight names to).
llvm::Error writeWeights(llvm::StringRef path,
                         llvm::ArrayRef<WeightTensor> weights);

/// Reads one TensorProto file. Errors name the file (and the tensor).
/// `valueType` is the ONNX type of the graph value the tensor is for (0:
/// unknown): the ONNX test data stores BFLOAT16 values as UINT16 bit
/// patterns, which are then decoded as bfloat16.
llvm::Expected<TensorData> readTensorFile(llvm::StringRef path,
                                          int32_t valueType = 0);

/// The values of the graph inputs of the model at `modelPath` (those that
/// are not initializers), by name, from the safetensors file `tensorsPath`
/// in `pimc run-ref --inputs` layout: input_0, input_1, ... in graph input
/// order. For ImportOptions::exampleInputs (`pimc import --example-inputs`).
/// Errors name the file.
llvm::Expected<std::map<std::string, TensorData>>
readInputValues(llvm::StringRef modelPath, llvm::StringRef tensorsPath);

/// Op types (default domain) of the model at `path` and its default-domain
/// opset, for the conformance runner's scope decision.
struct ModelSummary {
  int64_t opset = 0;
  std::vector<std::string> opTypes; // one per node, in graph order
  std::vector<std::string> inputs;  // graph inputs that are not initializers
  /// ONNX element types of those inputs and of the graph outputs; 0 for a
  /// value that is not a tensor (sequence, optional, map).
  std::vector<int32_t> inputTypes, outputTypes;
  /// Declared shapes of those inputs (-1: symbolic; nullopt: no shape).
  std::vector<std::optional<llvm::SmallVector<int64_t>>> inputDims;
  std::vector<std::string> outputs; // graph output names
};
llvm::Expected<ModelSummary> summarizeModelFile(llvm::StringRef path);

/// Whether the importer's op table has a rule for `opType` of `domain` (""
/// or "ai.onnx" for the default domain) at `opset` (for `pimc support`).
bool isSupportedOp(llvm::StringRef domain, llvm::StringRef opType,
                   int64_t opset);

/// Registers the dialects the imported IR uses.
void registerImportDialects(mlir::MLIRContext &context);

} // namespace pimc::onnx

#endif // PIMC_FRONTEND_ONNX_ONNXIMPORTER_H
