//===- Importer.h - the ONNX importer's state and op handlers -*- C++ -*-===//
//
// Internal to lib/Frontend/ONNX. The importer walks the graph in order and
// hands each node to the handler its op type and opset select (the rule
// table in ONNXImporter.cpp). Handlers live in one file per family of ops:
// ElementwiseOps, NormOps, MatmulOps, MovementOps, NonZeroOps (data-dependent
// counts), ReductionOps, ConstantOps (shapes and constants), LLMFunctionOps
// (opset 23 RotaryEmbedding and Attention).
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_FRONTEND_ONNX_IMPORTER_H
#define PIMC_FRONTEND_ONNX_IMPORTER_H

#include "ONNXModel.h"

#include "pimc/Dialect/LLM/IR/LLMBuilders.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Reference/HostTensorIO.h"
#include "pimc/Reference/Interpreter.h"
#include "pimc/Support/Numeric.h"
#include "pimc/Support/Shape.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <cmath>
#include <map>
#include <numeric>
#include <set>

namespace pimc::onnx::detail {

using namespace ::mlir;
using llvm::Expected;
using llvm::formatv;
using llvm::StringRef;
using llvm::Twine;
using Kind = TensorData::Kind;

/// The newest opset the table claims (ONNX 1.23's). Every rule that reaches
/// it was reviewed against the op's versions up to it (docs/onnx-importer.md,
/// "Opsets"); a model importing a newer opset is still read, but its ops are
/// unsupported until reviewed.
inline constexpr int64_t kMaxOpset = 28;

/// A node's domain with "ai.onnx" spelled "" (the key of the default
/// domain). `domain` must outlive the result: pass the node's own string,
/// never a temporary.
inline StringRef defaultDomain(const std::string &domain) {
  return domain == "ai.onnx" ? StringRef() : StringRef(domain);
}
StringRef defaultDomain(std::string &&) = delete;

/// The number of elements of `shape`, saturated at INT64_MAX (importer
/// shapes keep within kMaxTensorElements; a saturated count only ever
/// fails a limit check).
inline int64_t numElements(ArrayRef<int64_t> shape) {
  if (llvm::is_contained(shape, 0))
    return 0;
  return shapeExtent(shape);
}

/// `a * b` or `a + b` for sizes, nullopt on int64 overflow.
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (llvm::MulOverflow(a, b, r))
    return std::nullopt;
  return r;
}
inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (llvm::AddOverflow(a, b, r))
    return std::nullopt;
  return r;
}

/// Flat index into an operand of shape `in` broadcast (numpy) to `out` of
/// the element at flat index `flat` of the result.
inline int64_t broadcastIndex(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                              int64_t flat) {
  int64_t off = 0, stride = 1;
  int64_t lead = int64_t(out.size() - in.size());
  for (int64_t i = int64_t(out.size()) - 1; i >= 0; --i) {
    int64_t coord = flat % out[i];
    flat /= out[i];
    if (i >= lead) {
      int64_t d = in[i - lead];
      off += (d == 1 ? 0 : coord) * stride;
      stride *= d;
    }
  }
  return off;
}

/// A graph value during import: known contents (`constant`), IR (`value`),
/// or both once a constant has been materialized.
struct Tensor {
  Kind kind = Kind::F32;
  SmallVector<int64_t> shape;
  Value value;
  std::shared_ptr<const TensorData> constant;
  /// Set for float initializers above the inline limit: they become
  /// llm.weight instead of arith.constant.
  const DecodedTensor *initializer = nullptr;
  /// A graph input's value given in ImportOptions::inputValues: used only
  /// where an op needs an import-time constant.
  const TensorData *bound = nullptr;
  /// The ONNX element type of graph inputs and initializers (0 otherwise),
  /// for ops whose result type follows an operand's (QuantizeLinear).
  int32_t onnxType = 0;
};

class Importer;

struct NodeCtx {
  const ::onnx::NodeProto &node;
  int64_t opset;
  Location loc;
  std::string label;               // node name, or its first output's name
  SmallVector<Tensor *, 4> inputs; // nullptr for omitted optional inputs

  StringRef opType() const { return node.op_type(); }
  size_t numInputs() const { return inputs.size(); }
  Tensor *in(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  size_t numOutputs() const { return node.output_size(); }
  bool outputUsed(size_t i) const {
    return i < size_t(node.output_size()) && !node.output(i).empty();
  }

  const ::onnx::AttributeProto *attr(StringRef name) const {
    for (const auto &a : node.attribute())
      if (a.name() == name)
        return &a;
    return nullptr;
  }
  int64_t getInt(StringRef name, int64_t dflt) const {
    const auto *a = attr(name);
    return a ? a->i() : dflt;
  }
  float getFloat(StringRef name, float dflt) const {
    const auto *a = attr(name);
    return a ? a->f() : dflt;
  }
  std::string getString(StringRef name, StringRef dflt) const {
    const auto *a = attr(name);
    return a ? a->s() : dflt.str();
  }
  std::optional<SmallVector<int64_t>> getInts(StringRef name) const {
    const auto *a = attr(name);
    if (!a)
      return std::nullopt;
    return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
  }
};

using Handler = LogicalResult (Importer::*)(NodeCtx &);

struct OpRule {
  const char *domain; // "" is the default ai.onnx domain
  const char *opType;
  int64_t minOpset, maxOpset;
  Handler handler;
};

class Importer {
public:
  Importer(MLIRContext &ctx, const ::onnx::ModelProto &model, StringRef path,
           const ImportOptions &options)
      : ctx(ctx), model(model), path(path.str()),
        baseDir(llvm::sys::path::parent_path(path).str()), options(options),
        b(&ctx) {}

  Expected<ImportedModel> run();

  // Handlers (one per family of ops; the table below maps op types here).
  LogicalResult elementwiseBinary(NodeCtx &n);
  LogicalResult mod(NodeCtx &n);
  LogicalResult variadicMinMax(NodeCtx &n);
  LogicalResult unary(NodeCtx &n);
  LogicalResult softmax(NodeCtx &n);
  LogicalResult layerNorm(NodeCtx &n);
  LogicalResult rmsNorm(NodeCtx &n);
  LogicalResult gelu(NodeCtx &n);
  LogicalResult matmul(NodeCtx &n);
  LogicalResult gemm(NodeCtx &n);
  LogicalResult einsum(NodeCtx &n);
  LogicalResult gather(NodeCtx &n);
  LogicalResult reshape(NodeCtx &n);
  LogicalResult squeeze(NodeCtx &n);
  LogicalResult flatten(NodeCtx &n);
  LogicalResult transpose(NodeCtx &n);
  LogicalResult concat(NodeCtx &n);
  LogicalResult split(NodeCtx &n);
  LogicalResult slice(NodeCtx &n);
  LogicalResult expand(NodeCtx &n);
  LogicalResult tile(NodeCtx &n);
  LogicalResult scatterElements(NodeCtx &n);
  LogicalResult nonzero(NodeCtx &n);
  LogicalResult where(NodeCtx &n);
  LogicalResult compare(NodeCtx &n);
  LogicalResult isNaN(NodeCtx &n);
  LogicalResult logical(NodeCtx &n);
  LogicalResult castElements(NodeCtx &n);
  LogicalResult castLike(NodeCtx &n);
  /// Cast's work, to the ONNX element type `to`.
  LogicalResult castTo(NodeCtx &n, int32_t to);
  LogicalResult reduce(NodeCtx &n);
  LogicalResult topk(NodeCtx &n);
  LogicalResult cumsum(NodeCtx &n);
  LogicalResult trilu(NodeCtx &n);
  LogicalResult shape(NodeCtx &n);
  LogicalResult size(NodeCtx &n);
  LogicalResult constantOfShape(NodeCtx &n);
  LogicalResult range(NodeCtx &n);
  LogicalResult constant(NodeCtx &n);
  LogicalResult identity(NodeCtx &n);
  LogicalResult dequantize(NodeCtx &n);
  LogicalResult rotaryEmbedding(NodeCtx &n);
  LogicalResult attention(NodeCtx &n);
  LogicalResult quantize(NodeCtx &n);

private:
  // Errors.
  LogicalResult fail(const NodeCtx &n, const Twine &msg) {
    if (error.empty())
      error = formatv("{0}: node '{1}' ({2}): {3}", path, n.label,
                      n.node.op_type(), msg)
                  .str();
    return failure();
  }
  llvm::Error makeError(const Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
  }

  // Types and IR helpers.
  Type elemType(Kind k) {
    switch (k) {
    case Kind::F32:
      return b.getF32Type();
    case Kind::I64:
      return b.getI64Type();
    case Kind::I1:
      return b.getI1Type();
    }
    return {};
  }
  RankedTensorType tensorType(ArrayRef<int64_t> shape, Kind k) {
    return RankedTensorType::get(shape, elemType(k));
  }
  static Kind kindOfType(Type t) {
    Type e = cast<ShapedType>(t).getElementType();
    if (e.isInteger(1))
      return Kind::I1;
    if (e.isInteger())
      return Kind::I64;
    return Kind::F32;
  }
  static ArrayRef<int64_t> shapeOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  }

  /// The IR value of `t`, materializing a constant on first use.
  Value materialize(Tensor &t, Location loc);
  Value constantValue(const TensorData &d, Location loc);
  /// `v` converted to element kind `k` (llm.convert), or `v` itself.
  Value convertTo(Value v, Kind k, Location loc);
  /// `t` as f32 IR: integer and boolean tensors are converted.
  Value asF32(Tensor &t, Location loc) {
    return convertTo(materialize(t, loc), Kind::F32, loc);
  }
  Value reshapeTo(Value v, ArrayRef<int64_t> shape, Location loc) {
    if (shapeOf(v) == shape)
      return v;
    auto type = RankedTensorType::get(
        shape, cast<RankedTensorType>(v.getType()).getElementType());
    return llm::ReshapeOp::create(b, loc, type, v);
  }
  Value transposeBy(Value v, ArrayRef<int64_t> perm, Location loc) {
    bool identity = true;
    for (auto [i, p] : llvm::enumerate(perm))
      identity &= int64_t(i) == p;
    if (identity)
      return v;
    ArrayRef<int64_t> in = shapeOf(v);
    SmallVector<int64_t> out;
    for (int64_t p : perm)
      out.push_back(in[p]);
    auto type = RankedTensorType::get(
        out, cast<RankedTensorType>(v.getType()).getElementType());
    return llm::TransposeOp::create(b, loc, type, v,
                                    b.getDenseI64ArrayAttr(perm));
  }
  Value broadcast(Value v, ArrayRef<int64_t> shape, Location loc) {
    return llm::broadcastTo(b, loc, v, shape);
  }
  /// A splat constant (one stored value, whatever the shape's size).
  Value splatConstant(ArrayRef<int64_t> shape, Kind k, double value,
                      Location loc) {
    RankedTensorType type = tensorType(shape, k);
    DenseElementsAttr attr =
        k == Kind::F32   ? DenseElementsAttr::get(type, float(value))
        : k == Kind::I64 ? DenseElementsAttr::get(type, int64_t(value))
                         : DenseElementsAttr::get(type, value != 0);
    return arith::ConstantOp::create(b, loc, attr);
  }
  /// Result of an op whose output has zero elements: a constant (llm ops
  /// are not asked to produce empty tensors).
  bool setIfEmpty(NodeCtx &n, size_t out, ArrayRef<int64_t> shape, Kind k) {
    if (numElements(shape) != 0)
      return false;
    TensorData d;
    d.kind = k;
    d.shape.assign(shape.begin(), shape.end());
    setConstant(n, out, std::move(d));
    return true;
  }

  // Outputs.
  void setValue(NodeCtx &n, size_t i, Value v) {
    if (!n.outputUsed(i))
      return;
    Tensor t;
    t.value = v;
    t.kind = kindOfType(v.getType());
    auto shape = shapeOf(v);
    t.shape.assign(shape.begin(), shape.end());
    tensors[n.node.output(i)] = std::move(t);
  }
  void setConstant(NodeCtx &n, size_t i, TensorData d) {
    if (!n.outputUsed(i))
      return;
    Tensor t;
    t.kind = d.kind;
    t.shape = d.shape;
    t.constant = std::make_shared<const TensorData>(std::move(d));
    tensors[n.node.output(i)] = std::move(t);
  }
  void setTensor(NodeCtx &n, size_t i, const Tensor &t) {
    if (n.outputUsed(i))
      tensors[n.node.output(i)] = t;
  }

  /// The contents of input `i`, which must be known at import time.
  FailureOr<const TensorData *> constantInput(NodeCtx &n, size_t i,
                                              StringRef role) {
    Tensor *t = n.in(i);
    if (!t) {
      (void)fail(n, "input " + Twine(i) + " (" + role + ") is missing");
      return failure();
    }
    if (t->bound)
      return t->bound;
    if (!t->constant) {
      (void)fail(n, "input '" + n.node.input(i) + "' (" + role +
                        ") must be an initializer or Constant (or computed "
                        "from them); it is a run-time value");
      return failure();
    }
    return t->constant.get();
  }
  /// Integer list from a constant input (axes, shape, starts, ...).
  FailureOr<SmallVector<int64_t>> intsInput(NodeCtx &n, size_t i,
                                            StringRef role) {
    auto c = constantInput(n, i, role);
    if (failed(c))
      return failure();
    if ((*c)->kind == Kind::F32) {
      (void)fail(n, "input '" + n.node.input(i) + "' (" + role +
                        ") must be an integer tensor");
      return failure();
    }
    return SmallVector<int64_t>((*c)->i64.begin(), (*c)->i64.end());
  }
  /// The one place an axis (or a perm entry) from the model is checked:
  /// `axis` of `field` (the attribute or input naming it) for an operand of
  /// `rank`, in [-rank, rank) with negative values counting from the end.
  /// A rank-0 operand has no axis. With `inclusiveEnd` the range is
  /// [-rank, rank] (Flatten's split point).
  FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank, NodeCtx &n,
                                   StringRef field, bool inclusiveEnd = false) {
    int64_t hi = inclusiveEnd ? rank : rank - 1;
    if (hi < 0) {
      (void)fail(n, formatv("{0} = {1}: the input has rank 0, which has no "
                            "axis",
                            field, axis));
      return failure();
    }
    if (axis < -rank || axis > hi) {
      (void)fail(n, formatv("{0} = {1} is out of range for rank {2} (valid: "
                            "[{3}, {4}])",
                            field, axis, rank, -rank, hi));
      return failure();
    }
    return axis < 0 ? axis + rank : axis;
  }
  /// Checks a shape the model asks for (`what` names it in the error).
  LogicalResult checkShape(NodeCtx &n, ArrayRef<int64_t> shape,
                           const Twine &what) {
    std::string problem = shapeProblem(shape);
    if (problem.empty())
      return success();
    return fail(n, what + " " + shapeString(shape) + ": " + problem);
  }
  /// Whether a tensor of `shape` may be computed on the host at import time.
  static bool foldable(ArrayRef<int64_t> shape) {
    return numElements(shape) <= kMaxFoldedElements;
  }
  /// Fails unless a tensor of `shape` (`what`) may be computed on the host.
  LogicalResult checkFoldable(NodeCtx &n, ArrayRef<int64_t> shape,
                              const Twine &what) {
    if (foldable(shape))
      return success();
    return fail(n, formatv("{0} of shape {1} ({2} elements) would be computed "
                           "at import time; the limit is {3} (2^24) elements",
                           what, shapeString(shape), numElements(shape),
                           kMaxFoldedElements)
                       .str());
  }
  FailureOr<Tensor *> required(NodeCtx &n, size_t i) {
    if (Tensor *t = n.in(i))
      return t;
    (void)fail(n, "input " + Twine(i) + " is missing");
    return failure();
  }

  /// Checks the node's outputs against the limits on tensors and on what
  /// the import computes on the host in total.
  LogicalResult checkOutputs(NodeCtx &n);

  /// Element-wise f32 op `opType` on equal-shaped f32 values.
  Value emitBinaryF32(StringRef opType, Value a, Value c, Location loc);
  /// Folds an element-wise op on constants (shape arithmetic).
  std::optional<TensorData> foldBinary(StringRef opType, const TensorData &a,
                                       const TensorData &c);
  Value reduceAxes(Value v, llm::ReduceKind kind, ArrayRef<int64_t> axes,
                   bool keepDims, Location loc);
  Value emitLinear(Tensor &a, Tensor &weightInit, bool weightIsNK, Value bias,
                   Location loc);
  Value weightValue(Tensor &t, bool transposed, Location loc);
  Value emitMatmul(Value a, Value c, Location loc);
  /// The value of `v` on the example inputs: the ops it depends on, run in
  /// the reference interpreter. Errors name the node `n`.
  FailureOr<TensorData> probe(NodeCtx &n, Value v);

  MLIRContext &ctx;
  const ::onnx::ModelProto &model;
  std::string path, baseDir;
  ImportOptions options;
  OpBuilder b;
  std::string error;
  std::map<std::string, Tensor> tensors;
  std::vector<std::unique_ptr<DecodedTensor>> initializers;
  std::vector<WeightTensor> weights;
  llvm::StringSet<> weightNames;
  std::vector<std::shared_ptr<TensorData>> boundValues;
  /// Constants counted against kMaxFoldedTotal (model data is not).
  llvm::SmallPtrSet<const TensorData *, 16> counted;
  int64_t foldedTotal = 0;
  SmallVector<std::string> argNames; // graph inputs, one per argument
  llvm::StringMap<int64_t> opsets;
};

} // namespace pimc::onnx::detail

#endif // PIMC_FRONTEND_ONNX_IMPORTER_H
