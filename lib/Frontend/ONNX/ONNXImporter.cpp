//===- ONNXImporter.cpp - ONNX graph -> llm dialect -----------------------===//
//
// One pass over the (topologically ordered) ONNX graph. Each node is
// dispatched through a table keyed by (domain, op_type, opset range). Values
// whose contents are known at import time (initializers, Constant, Shape of
// a static tensor and the integer arithmetic torch.onnx puts on shapes) are
// folded, because llm ops take shapes, axes and sizes as attributes; a
// folded value becomes IR (arith.constant, or llm.weight for large float
// initializers) only when an op consumes it at run time.
//
//===----------------------------------------------------------------------===//
#include "ONNXModel.h"

#include "pimc/Dialect/LLM/IR/LLMBuilders.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Reference/HostTensorIO.h"
#include "pimc/Reference/Interpreter.h"
#include "pimc/Support/Numeric.h"

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

using namespace mlir;
using namespace pimc;
using namespace pimc::onnx;
using llvm::Expected;
using llvm::formatv;
using llvm::StringRef;
using llvm::Twine;
using Kind = TensorData::Kind;

namespace {

/// Highest opset the table claims for any op; a model importing a newer
/// opset is still read, but ops whose rules end earlier are unsupported.
constexpr int64_t kMaxOpset = 23;

/// A node's domain with "ai.onnx" spelled "" (the key of the default
/// domain). `domain` must outlive the result: pass the node's own string,
/// never a temporary.
StringRef defaultDomain(const std::string &domain) {
  return domain == "ai.onnx" ? StringRef() : StringRef(domain);
}
StringRef defaultDomain(std::string &&) = delete;

/// The number of elements of `shape`, saturated at INT64_MAX (importer
/// shapes keep within kMaxTensorElements; a saturated count only ever
/// fails a limit check).
int64_t numElements(ArrayRef<int64_t> shape) {
  if (llvm::is_contained(shape, 0))
    return 0;
  return shapeExtent(shape);
}

/// `a * b` or `a + b` for sizes, nullopt on int64 overflow.
std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (llvm::MulOverflow(a, b, r))
    return std::nullopt;
  return r;
}
std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (llvm::AddOverflow(a, b, r))
    return std::nullopt;
  return r;
}

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

/// Flat index into an operand of shape `in` broadcast (numpy) to `out` of
/// the element at flat index `flat` of the result.
int64_t broadcastIndex(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
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
  LogicalResult reduce(NodeCtx &n);
  LogicalResult topk(NodeCtx &n);
  LogicalResult cumsum(NodeCtx &n);
  LogicalResult trilu(NodeCtx &n);
  LogicalResult shape(NodeCtx &n);
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
    return fail(n, what + " " + shapeStr(shape) + ": " + problem);
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
                           what, shapeStr(shape), numElements(shape),
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

//===----------------------------------------------------------------------===//
// The op table
//===----------------------------------------------------------------------===//

const OpRule kRules[] = {
    // Element-wise arithmetic (numpy broadcasting since opset 7).
    {"", "Add", 7, kMaxOpset, &Importer::elementwiseBinary},
    {"", "Sub", 7, kMaxOpset, &Importer::elementwiseBinary},
    {"", "Mul", 7, kMaxOpset, &Importer::elementwiseBinary},
    {"", "Div", 7, kMaxOpset, &Importer::elementwiseBinary},
    {"", "Pow", 7, kMaxOpset, &Importer::elementwiseBinary},
    {"", "Min", 8, kMaxOpset, &Importer::variadicMinMax},
    {"", "Max", 8, kMaxOpset, &Importer::variadicMinMax},
    {"", "Neg", 6, kMaxOpset, &Importer::unary},
    {"", "Abs", 6, kMaxOpset, &Importer::unary},
    {"", "Sqrt", 6, kMaxOpset, &Importer::unary},
    {"", "Reciprocal", 6, kMaxOpset, &Importer::unary},
    {"", "Exp", 6, kMaxOpset, &Importer::unary},
    {"", "Log", 6, kMaxOpset, &Importer::unary},
    {"", "Tanh", 6, kMaxOpset, &Importer::unary},
    {"", "Erf", 9, kMaxOpset, &Importer::unary},
    {"", "Sigmoid", 6, kMaxOpset, &Importer::unary},
    {"", "Relu", 6, kMaxOpset, &Importer::unary},
    {"", "Cos", 7, kMaxOpset, &Importer::unary},
    {"", "Sin", 7, kMaxOpset, &Importer::unary},
    {"", "Softmax", 1, kMaxOpset, &Importer::softmax},
    {"", "LogSoftmax", 1, kMaxOpset, &Importer::softmax},
    {"", "Gelu", 20, kMaxOpset, &Importer::gelu},
    {"com.microsoft", "Gelu", 1, 1, &Importer::gelu},
    {"com.microsoft", "FastGelu", 1, 1, &Importer::gelu},
    {"", "LayerNormalization", 17, kMaxOpset, &Importer::layerNorm},
    {"", "RMSNormalization", 23, kMaxOpset, &Importer::rmsNorm},
    {"", "SimplifiedLayerNormalization", 1, kMaxOpset, &Importer::rmsNorm},
    // Opset 23 LLM functions, decomposed into primitives that the raising
    // passes fuse again (so both spellings reach the same fused ops).
    {"", "RotaryEmbedding", 23, kMaxOpset, &Importer::rotaryEmbedding},
    {"", "Attention", 23, kMaxOpset, &Importer::attention},
    {"com.microsoft", "SimplifiedLayerNormalization", 1, 1, &Importer::rmsNorm},
    // Products.
    {"", "MatMul", 1, kMaxOpset, &Importer::matmul},
    {"", "Gemm", 7, kMaxOpset, &Importer::gemm},
    {"", "Einsum", 12, kMaxOpset, &Importer::einsum},
    // Data movement.
    {"", "Gather", 1, kMaxOpset, &Importer::gather},
    {"", "Reshape", 5, kMaxOpset, &Importer::reshape},
    {"", "Squeeze", 1, kMaxOpset, &Importer::squeeze},
    {"", "Unsqueeze", 1, kMaxOpset, &Importer::squeeze},
    {"", "Flatten", 1, kMaxOpset, &Importer::flatten},
    {"", "Transpose", 1, kMaxOpset, &Importer::transpose},
    {"", "Concat", 4, kMaxOpset, &Importer::concat},
    {"", "Split", 2, kMaxOpset, &Importer::split},
    {"", "Slice", 10, kMaxOpset, &Importer::slice},
    {"", "Expand", 8, kMaxOpset, &Importer::expand},
    {"", "Tile", 6, kMaxOpset, &Importer::tile},
    {"", "ScatterElements", 11, kMaxOpset, &Importer::scatterElements},
    // Data-dependent size: specialised on example inputs.
    {"", "NonZero", 9, kMaxOpset, &Importer::nonzero},
    {"", "Where", 9, kMaxOpset, &Importer::where},
    {"", "Identity", 1, kMaxOpset, &Importer::identity},
    // Comparisons and logic.
    {"", "Equal", 7, kMaxOpset, &Importer::compare},
    {"", "Less", 7, kMaxOpset, &Importer::compare},
    {"", "Greater", 7, kMaxOpset, &Importer::compare},
    {"", "LessOrEqual", 12, kMaxOpset, &Importer::compare},
    {"", "GreaterOrEqual", 12, kMaxOpset, &Importer::compare},
    {"", "IsNaN", 9, kMaxOpset, &Importer::isNaN},
    {"", "Not", 1, kMaxOpset, &Importer::logical},
    {"", "And", 7, kMaxOpset, &Importer::logical},
    {"", "Or", 7, kMaxOpset, &Importer::logical},
    {"", "Cast", 6, kMaxOpset, &Importer::castElements},
    // Reductions and friends.
    {"", "ReduceMean", 1, kMaxOpset, &Importer::reduce},
    {"", "ReduceSum", 1, kMaxOpset, &Importer::reduce},
    {"", "ReduceMax", 1, kMaxOpset, &Importer::reduce},
    {"", "ReduceMin", 1, kMaxOpset, &Importer::reduce},
    {"", "ReduceProd", 1, kMaxOpset, &Importer::reduce},
    {"", "TopK", 10, kMaxOpset, &Importer::topk},
    {"", "CumSum", 11, kMaxOpset, &Importer::cumsum},
    {"", "Trilu", 14, kMaxOpset, &Importer::trilu},
    // Shapes and constants (folded at import).
    {"", "Shape", 1, kMaxOpset, &Importer::shape},
    {"", "ConstantOfShape", 9, kMaxOpset, &Importer::constantOfShape},
    {"", "Range", 11, kMaxOpset, &Importer::range},
    {"", "Constant", 1, kMaxOpset, &Importer::constant},
    // Quantization at the boundary (computed in f32).
    {"", "DequantizeLinear", 10, kMaxOpset, &Importer::dequantize},
    {"", "QuantizeLinear", 10, kMaxOpset, &Importer::quantize},
};

const OpRule *findRule(StringRef domain, StringRef opType, int64_t opset) {
  if (domain == "ai.onnx")
    domain = "";
  for (const OpRule &r : kRules)
    if (domain == r.domain && opType == r.opType && opset >= r.minOpset &&
        opset <= r.maxOpset)
      return &r;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

LogicalResult Importer::checkOutputs(NodeCtx &n) {
  for (size_t i = 0; i < n.numOutputs(); ++i) {
    auto it = tensors.find(n.node.output(i));
    if (!n.outputUsed(i) || it == tensors.end())
      continue;
    const Tensor &t = it->second;
    if (failed(checkShape(n, t.shape, "output '" + n.node.output(i) + "'")))
      return failure();
    // A Constant's data is the model's own; what nodes compute is counted.
    if (!t.constant || !counted.insert(t.constant.get()).second ||
        n.opType() == "Constant")
      continue;
    foldedTotal += numElements(t.constant->shape);
    if (foldedTotal > kMaxFoldedTotal)
      return fail(n, formatv("the constants computed at import time reach {0} "
                             "elements; the limit is {1} (2^26)",
                             foldedTotal, kMaxFoldedTotal)
                         .str());
  }
  return success();
}

Value Importer::constantValue(const TensorData &d, Location loc) {
  RankedTensorType type = tensorType(d.shape, d.kind);
  DenseElementsAttr attr;
  if (d.kind == Kind::F32) {
    attr = DenseElementsAttr::get(type, ArrayRef<float>(d.f32));
  } else if (d.kind == Kind::I64) {
    attr = DenseElementsAttr::get(type, ArrayRef<int64_t>(d.i64));
  } else {
    SmallVector<bool> bits;
    for (int64_t v : d.i64)
      bits.push_back(v != 0);
    attr = DenseElementsAttr::get(type, ArrayRef<bool>(bits));
  }
  return arith::ConstantOp::create(b, loc, attr);
}

Value Importer::weightValue(Tensor &t, bool transposed, Location loc) {
  const DecodedTensor &init = *t.initializer;
  bool half = init.elemType == ::onnx::TensorProto::FLOAT16 ||
              init.elemType == ::onnx::TensorProto::BFLOAT16;
  ckpt::DType dtype =
      !half ? ckpt::DType::F32
            : (init.elemType == ::onnx::TensorProto::FLOAT16 ? ckpt::DType::F16
                                                             : ckpt::DType::BF16);
  std::string key = init.data.name + (transposed ? ".T" : "");
  SmallVector<int64_t> shape = t.shape;
  if (transposed)
    std::swap(shape[0], shape[1]);
  if (!weightNames.contains(key)) {
    weightNames.insert(key);
    WeightTensor w;
    w.name = key;
    w.dtype = dtype;
    w.shape = shape;
    unsigned es = half ? 2 : 4;
    std::vector<uint8_t> src;
    if (half || (init.elemType == ::onnx::TensorProto::FLOAT &&
                 init.data.f32.empty())) {
      src = init.raw;
    } else {
      src.resize(init.data.f32.size() * 4);
      if (!src.empty())
        std::memcpy(src.data(), init.data.f32.data(), src.size());
    }
    if (!transposed) {
      w.bytes = std::move(src);
    } else {
      int64_t rows = t.shape[0], cols = t.shape[1];
      w.bytes.resize(src.size());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          std::memcpy(&w.bytes[(c * rows + r) * es], &src[(r * cols + c) * es],
                      es);
    }
    weights.push_back(std::move(w));
  }
  Type elem = !half ? b.getF32Type()
                    : (dtype == ckpt::DType::F16 ? Type(b.getF16Type())
                                               : Type(b.getBF16Type()));
  return llm::WeightOp::create(b, loc, RankedTensorType::get(shape, elem),
                               b.getStringAttr(key));
}

Value Importer::materialize(Tensor &t, Location loc) {
  if (t.value)
    return t.value;
  // Constants live at the top of the function so every use is dominated.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(b.getInsertionBlock());
  if (t.initializer) {
    Value w = weightValue(t, /*transposed=*/false, loc);
    if (cast<RankedTensorType>(w.getType()).getElementType().isF32())
      t.value = w;
    else
      t.value =
          llm::ConvertOp::create(b, loc, tensorType(t.shape, Kind::F32), w);
    return t.value;
  }
  t.value = constantValue(*t.constant, loc);
  return t.value;
}

Value Importer::convertTo(Value v, Kind k, Location loc) {
  if (kindOfType(v.getType()) == k)
    return v;
  return llm::ConvertOp::create(b, loc, tensorType(shapeOf(v), k), v);
}

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

Value Importer::emitBinaryF32(StringRef op, Value a, Value c, Location loc) {
  Type t = a.getType();
  if (op == "Add")
    return llm::AddOp::create(b, loc, t, a, c);
  if (op == "Sub")
    return llm::SubOp::create(b, loc, t, a, c);
  if (op == "Mul")
    return llm::MulOp::create(b, loc, t, a, c);
  if (op == "Div")
    return llm::DivOp::create(b, loc, t, a, c);
  if (op == "Pow")
    return llm::PowOp::create(b, loc, t, a, c);
  if (op == "Max")
    return llm::MaximumOp::create(b, loc, t, a, c);
  return llm::MinimumOp::create(b, loc, t, a, c);
}

std::optional<TensorData>
Importer::foldBinary(StringRef op, const TensorData &a, const TensorData &c) {
  // Only integer shape arithmetic is folded; float math runs in the IR so
  // that it follows the interpreter's numerics.
  if (a.kind != Kind::I64 || c.kind != Kind::I64)
    return std::nullopt;
  auto shape = llm::broadcastShapes(a.shape, c.shape);
  if (failed(shape) || !foldable(*shape))
    return std::nullopt;
  TensorData r;
  r.kind = Kind::I64;
  r.shape.assign(shape->begin(), shape->end());
  int64_t n = numElements(r.shape);
  auto index = [&](const TensorData &t, int64_t flat) {
    return broadcastIndex(t.shape, r.shape, flat);
  };
  for (int64_t i = 0; i < n; ++i) {
    int64_t x = a.i64[index(a, i)], y = c.i64[index(c, i)];
    // int64 arithmetic wraps (two's complement), as onnxruntime's does.
    uint64_t ux = x, uy = y;
    int64_t v;
    if (op == "Add")
      v = int64_t(ux + uy);
    else if (op == "Sub")
      v = int64_t(ux - uy);
    else if (op == "Mul")
      v = int64_t(ux * uy);
    else if (op == "Div") {
      if (y == 0)
        return std::nullopt;
      v = y == -1 ? int64_t(0 - ux) : x / y;
    } else if (op == "Max")
      v = std::max(x, y);
    else if (op == "Min")
      v = std::min(x, y);
    else
      return std::nullopt;
    r.i64.push_back(v);
  }
  return r;
}

LogicalResult Importer::elementwiseBinary(NodeCtx &n) {
  auto a = required(n, 0);
  auto c = required(n, 1);
  if (failed(a) || failed(c))
    return failure();
  if ((*a)->constant && (*c)->constant)
    if (auto folded =
            foldBinary(n.opType(), *(*a)->constant, *(*c)->constant)) {
      setConstant(n, 0, std::move(*folded));
      return success();
    }
  auto shape = llm::broadcastShapes((*a)->shape, (*c)->shape);
  if (failed(shape))
    return fail(n, "operand shapes " + shapeStr((*a)->shape) + " and " +
                       shapeStr((*c)->shape) + " do not broadcast");
  // Integer arithmetic runs in f32 (exact below 2^24) and converts back;
  // Pow's result takes the base's type.
  Kind resultKind = (*a)->kind == Kind::I1 ? Kind::I64 : (*a)->kind;
  if (setIfEmpty(n, 0, *shape, resultKind))
    return success();
  Value x = broadcast(asF32(**a, n.loc), *shape, n.loc);
  Value y = broadcast(asF32(**c, n.loc), *shape, n.loc);
  if (!x || !y)
    return failure();
  Value r = emitBinaryF32(n.opType(), x, y, n.loc);
  setValue(n, 0, convertTo(r, resultKind, n.loc));
  return success();
}

LogicalResult Importer::variadicMinMax(NodeCtx &n) {
  if (n.numInputs() == 0 || !n.in(0))
    return fail(n, "needs at least one input");
  SmallVector<int64_t> shape = n.in(0)->shape;
  for (size_t i = 1; i < n.numInputs(); ++i) {
    auto s = llm::broadcastShapes(shape, n.in(i)->shape);
    if (failed(s))
      return fail(n, "operand shapes do not broadcast");
    shape.assign(s->begin(), s->end());
  }
  Kind k = n.in(0)->kind;
  if (n.numInputs() == 1) {
    setTensor(n, 0, *n.in(0));
    return success();
  }
  Value acc = broadcast(asF32(*n.in(0), n.loc), shape, n.loc);
  for (size_t i = 1; i < n.numInputs(); ++i) {
    Value v = broadcast(asF32(*n.in(i), n.loc), shape, n.loc);
    if (!acc || !v)
      return failure();
    acc = emitBinaryF32(n.opType(), acc, v, n.loc);
  }
  setValue(n, 0, convertTo(acc, k, n.loc));
  return success();
}

LogicalResult Importer::unary(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  Kind k = (*x)->kind;
  StringRef op = n.opType();
  if (k != Kind::F32 && op != "Neg" && op != "Abs" && op != "Relu")
    return fail(n, "input must be a float tensor");
  if (setIfEmpty(n, 0, (*x)->shape, k))
    return success();
  Value v = asF32(**x, n.loc);
  Type t = v.getType();
  Value r;
  if (op == "Neg")
    r = llm::NegOp::create(b, n.loc, t, v);
  else if (op == "Abs")
    r = llm::AbsOp::create(b, n.loc, t, v);
  else if (op == "Sqrt")
    r = llm::SqrtOp::create(b, n.loc, t, v);
  else if (op == "Reciprocal")
    r = llm::ReciprocalOp::create(b, n.loc, t, v);
  else if (op == "Exp")
    r = llm::ExpOp::create(b, n.loc, t, v);
  else if (op == "Log")
    r = llm::LogOp::create(b, n.loc, t, v);
  else if (op == "Tanh")
    r = llm::TanhOp::create(b, n.loc, t, v);
  else if (op == "Erf")
    r = llm::ErfOp::create(b, n.loc, t, v);
  else if (op == "Sigmoid")
    r = llm::SigmoidOp::create(b, n.loc, t, v);
  else if (op == "Relu")
    r = llm::ReluOp::create(b, n.loc, t, v);
  else if (op == "Cos")
    r = llm::CosOp::create(b, n.loc, t, v);
  else
    r = llm::SinOp::create(b, n.loc, t, v);
  setValue(n, 0, convertTo(r, k, n.loc));
  return success();
}

LogicalResult Importer::gelu(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  bool tanhForm =
      n.opType() == "FastGelu" || n.getString("approximate", "none") == "tanh";
  if (n.opType() == "FastGelu" && n.in(1))
    return fail(n, "FastGelu with a bias input is not supported");
  Value v = asF32(**x, n.loc);
  setValue(
      n, 0,
      llm::GeluOp::create(b, n.loc, v.getType(), v, b.getBoolAttr(tanhForm)));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

LogicalResult Importer::softmax(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  int64_t rank = (*x)->shape.size();
  // Before opset 13 the input is coerced to 2-D at `axis` (default 1) and
  // normalised over the flattened trailing part.
  bool coerce = n.opset < 13;
  auto axis = normalizeAxis(n.getInt("axis", coerce ? 1 : -1), rank, n,
                            "attribute 'axis'");
  if (failed(axis))
    return failure();
  if (setIfEmpty(n, 0, (*x)->shape, Kind::F32))
    return success();
  Value v = asF32(**x, n.loc);
  SmallVector<int64_t> orig = (*x)->shape;
  int64_t ax = *axis;
  if (coerce) {
    int64_t outer = numElements(ArrayRef<int64_t>(orig).take_front(ax));
    int64_t inner = numElements(ArrayRef<int64_t>(orig).drop_front(ax));
    v = reshapeTo(v, {outer, inner}, n.loc);
    ax = 1;
  }
  Value r;
  if (n.opType() == "Softmax") {
    r = llm::SoftmaxOp::create(b, n.loc, v.getType(), v,
                               b.getI64IntegerAttr(ax));
  } else {
    // log_softmax = (x - max) - log(sum(exp(x - max))): no log of an
    // underflowed probability.
    SmallVector<int64_t> shape(shapeOf(v));
    Value mx = reduceAxes(v, llm::ReduceKind::Max, {ax}, true, n.loc);
    Value shifted = llm::SubOp::create(b, n.loc, v.getType(), v,
                                       broadcast(mx, shape, n.loc));
    Value e = llm::ExpOp::create(b, n.loc, v.getType(), shifted);
    Value s = reduceAxes(e, llm::ReduceKind::Sum, {ax}, true, n.loc);
    Value l = llm::LogOp::create(b, n.loc, s.getType(), s);
    r = llm::SubOp::create(b, n.loc, v.getType(), shifted,
                           broadcast(l, shape, n.loc));
  }
  setValue(n, 0, reshapeTo(r, orig, n.loc));
  return success();
}

LogicalResult Importer::layerNorm(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  SmallVector<int64_t> shape = (*x)->shape;
  int64_t rank = shape.size();
  auto axis = normalizeAxis(n.getInt("axis", -1), rank, n, "attribute 'axis'");
  if (failed(axis))
    return failure();
  float eps = n.getFloat("epsilon", 1e-5f);
  ArrayRef<int64_t> normShape = ArrayRef<int64_t>(shape).drop_front(*axis);
  Value v = asF32(**x, n.loc);
  Value w, bias;
  if (Tensor *s = n.in(1)) {
    w = broadcast(asF32(*s, n.loc), normShape, n.loc);
    if (!w)
      return failure();
  }
  if (Tensor *bt = n.in(2)) {
    bias = broadcast(asF32(*bt, n.loc), normShape, n.loc);
    if (!bias)
      return failure();
  }
  setValue(n, 0,
           llm::LayerNormOp::create(b, n.loc, v.getType(), v, w, bias,
                                    b.getF32FloatAttr(eps),
                                    b.getI64IntegerAttr(*axis - rank)));
  if (n.outputUsed(1) || n.outputUsed(2)) {
    // The optional statistics outputs: mean and 1/sqrt(var + eps) over the
    // normalised dimensions, kept as size-1 dimensions.
    SmallVector<int64_t> axes;
    for (int64_t i = *axis; i < rank; ++i)
      axes.push_back(i);
    SmallVector<int64_t> statShape(shape.begin(), shape.begin() + *axis);
    statShape.append(rank - *axis, 1);
    Value mean = reduceAxes(v, llm::ReduceKind::Mean, axes, true, n.loc);
    Value centered = llm::SubOp::create(b, n.loc, v.getType(), v,
                                        broadcast(mean, shape, n.loc));
    Value sq = llm::MulOp::create(b, n.loc, v.getType(), centered, centered);
    Value var = reduceAxes(sq, llm::ReduceKind::Mean, axes, true, n.loc);
    Value epsT = splatConstant(statShape, Kind::F32, eps, n.loc);
    Value sum = llm::AddOp::create(b, n.loc, var.getType(), var, epsT);
    setValue(n, 1, mean);
    setValue(n, 2, llm::RsqrtOp::create(b, n.loc, sum.getType(), sum));
  }
  return success();
}

LogicalResult Importer::rmsNorm(NodeCtx &n) {
  auto x = required(n, 0);
  auto s = required(n, 1);
  if (failed(x) || failed(s))
    return failure();
  int64_t rank = (*x)->shape.size();
  auto axis = normalizeAxis(n.getInt("axis", -1), rank, n, "attribute 'axis'");
  if (failed(axis))
    return failure();
  if (*axis != rank - 1)
    return fail(n, "only normalisation over the last axis is supported (axis " +
                       Twine(*axis) + ")");
  if (n.outputUsed(1) || n.outputUsed(2))
    return fail(n, "the inv_std_var output is not supported");
  Value v = asF32(**x, n.loc);
  Value w = broadcast(asF32(**s, n.loc), {(*x)->shape.back()}, n.loc);
  if (!w)
    return failure();
  setValue(
      n, 0,
      llm::RMSNormOp::create(b, n.loc, v.getType(), v, w,
                             b.getF32FloatAttr(n.getFloat("epsilon", 1e-5f))));
  return success();
}

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

Value Importer::emitMatmul(Value a, Value c, Location loc) {
  // llm.matmul takes rank >= 2; ONNX/numpy 1-D operands are a row (lhs) or
  // a column (rhs) vector whose unit dimension is dropped afterwards.
  SmallVector<int64_t> sa(shapeOf(a)), sc(shapeOf(c));
  bool vecA = sa.size() == 1, vecC = sc.size() == 1;
  if (vecA)
    a = reshapeTo(a, {1, sa[0]}, loc);
  if (vecC)
    c = reshapeTo(c, {sc[0], 1}, loc);
  sa.assign(shapeOf(a).begin(), shapeOf(a).end());
  sc.assign(shapeOf(c).begin(), shapeOf(c).end());
  auto batch = llm::broadcastShapes(ArrayRef<int64_t>(sa).drop_back(2),
                                    ArrayRef<int64_t>(sc).drop_back(2));
  SmallVector<int64_t> out(batch->begin(), batch->end());
  out.push_back(sa[sa.size() - 2]);
  out.push_back(sc.back());
  Value r = llm::MatmulOp::create(b, loc, tensorType(out, Kind::F32), a, c);
  SmallVector<int64_t> final(batch->begin(), batch->end());
  if (!vecA)
    final.push_back(sa[sa.size() - 2]);
  if (!vecC)
    final.push_back(sc.back());
  return reshapeTo(r, final, loc);
}

Value Importer::emitLinear(Tensor &a, Tensor &init, bool weightIsNK, Value bias,
                           Location loc) {
  // llm.linear wants W as [N, K]; an ONNX MatMul / Gemm(transB = 0) weight
  // is [K, N], so its transpose is stored (under "<name>.T").
  Value x = asF32(a, loc);
  Value w;
  if (init.initializer) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(b.getInsertionBlock());
    w = weightValue(init, /*transposed=*/!weightIsNK, loc);
  } else {
    TensorData d = *init.constant;
    if (!weightIsNK) {
      int64_t rows = d.shape[0], cols = d.shape[1];
      d.f32.clear();
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t r = 0; r < rows; ++r)
          d.f32.push_back(init.constant->f32[r * cols + c]);
      d.shape = {cols, rows};
    }
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(b.getInsertionBlock());
    w = constantValue(d, loc);
  }
  int64_t nOut = shapeOf(w)[0];
  SmallVector<int64_t> out(shapeOf(x));
  out.back() = nOut;
  return llm::LinearOp::create(b, loc, tensorType(out, Kind::F32), x, w, bias);
}

static bool isFloatInitializer(const Tensor *t) {
  return t && (t->initializer || t->constant) && t->kind == Kind::F32 &&
         t->shape.size() == 2;
}

LogicalResult Importer::matmul(NodeCtx &n) {
  auto a = required(n, 0);
  auto c = required(n, 1);
  if (failed(a) || failed(c))
    return failure();
  SmallVector<int64_t> sa = (*a)->shape, sc = (*c)->shape;
  if (sa.empty() || sc.empty())
    return fail(n, "operands must have rank >= 1");
  int64_t ka = sa.back(), kc = sc.size() == 1 ? sc[0] : sc[sc.size() - 2];
  if (ka != kc)
    return fail(n, "inner dimensions differ: " + shapeStr(sa) + " x " +
                       shapeStr(sc));
  if (sa.size() >= 2 && sc.size() >= 2 &&
      failed(llm::broadcastShapes(ArrayRef<int64_t>(sa).drop_back(2),
                                  ArrayRef<int64_t>(sc).drop_back(2))))
    return fail(n, "batch dimensions do not broadcast: " + shapeStr(sa) +
                       " x " + shapeStr(sc));
  if (isFloatInitializer(*c) && !(*a)->constant && sa.size() >= 2) {
    setValue(n, 0, emitLinear(**a, **c, /*weightIsNK=*/false, Value(), n.loc));
    return success();
  }
  setValue(n, 0, emitMatmul(asF32(**a, n.loc), asF32(**c, n.loc), n.loc));
  return success();
}

LogicalResult Importer::gemm(NodeCtx &n) {
  auto a = required(n, 0);
  auto c = required(n, 1);
  if (failed(a) || failed(c))
    return failure();
  if ((*a)->shape.size() != 2 || (*c)->shape.size() != 2)
    return fail(n, "A and B must be 2-D");
  float alpha = n.getFloat("alpha", 1.0f), beta = n.getFloat("beta", 1.0f);
  bool transA = n.getInt("transA", 0), transB = n.getInt("transB", 0);
  int64_t m = (*a)->shape[transA ? 1 : 0], k = (*a)->shape[transA ? 0 : 1];
  int64_t kb = (*c)->shape[transB ? 1 : 0], nOut = (*c)->shape[transB ? 0 : 1];
  if (k != kb)
    return fail(n, "inner dimensions differ");
  Value y;
  if (isFloatInitializer(*c) && !transA) {
    y = emitLinear(**a, **c, /*weightIsNK=*/transB, Value(), n.loc);
  } else {
    Value av = asF32(**a, n.loc), bv = asF32(**c, n.loc);
    if (transA)
      av = transposeBy(av, {1, 0}, n.loc);
    if (transB)
      bv = transposeBy(bv, {1, 0}, n.loc);
    y = emitMatmul(av, bv, n.loc);
  }
  if (alpha != 1.0f)
    y = llm::ScaleOp::create(b, n.loc, y.getType(), y,
                             b.getF32FloatAttr(alpha));
  if (Tensor *bias = n.in(2)) {
    Value bv = asF32(*bias, n.loc);
    if (beta != 1.0f)
      bv = llm::ScaleOp::create(b, n.loc, bv.getType(), bv,
                                b.getF32FloatAttr(beta));
    bv = broadcast(bv, {m, nOut}, n.loc);
    if (!bv)
      return failure();
    y = llm::AddOp::create(b, n.loc, y.getType(), y, bv);
  }
  setValue(n, 0, y);
  return success();
}

LogicalResult Importer::einsum(NodeCtx &n) {
  // The matmul-like equations: every label of an operand is distinct; a
  // label in both operands and the output is a batch dim, in both but not
  // the output is contracted, in one operand only is free (or summed first
  // when absent from the output).
  std::string eq;
  for (char ch : n.getString("equation", ""))
    if (ch != ' ')
      eq.push_back(ch);
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow), out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
  } else {
    // Implicit output: the labels that occur once, in alphabetical order.
    for (char ch = 'A'; ch <= 'z'; ++ch)
      if (std::count(lhs.begin(), lhs.end(), ch) == 1)
        out.push_back(ch);
  }
  SmallVector<StringRef> termRefs;
  llvm::SplitString(lhs, termRefs, ",");
  SmallVector<std::string> terms;
  for (StringRef t : termRefs)
    terms.push_back(t.str());
  if (terms.size() != n.numInputs() || terms.empty() || terms.size() > 2)
    return fail(n, "only one- and two-operand equations are supported");
  for (size_t i = 0; i < terms.size(); ++i)
    if (!n.in(i))
      return fail(n, "input missing");
  // An ellipsis stands for the leading dimensions not named by letters;
  // they get the labels '0'..'9' (never ONNX labels), right-aligned across
  // operands as numpy broadcasting aligns them.
  int64_t ellipsisRank = 0;
  for (auto [i, term] : llvm::enumerate(terms))
    if (term.find("...") != std::string::npos)
      ellipsisRank =
          std::max<int64_t>(ellipsisRank, int64_t(n.in(i)->shape.size()) -
                                              int64_t(term.size() - 3));
  if (ellipsisRank > 10)
    return fail(n, "the ellipsis covers too many dimensions");
  auto expand = [&](std::string &term, int64_t rank) -> LogicalResult {
    size_t pos = term.find("...");
    if (pos == std::string::npos)
      return success();
    int64_t count = rank - int64_t(term.size() - 3);
    if (count < 0)
      return failure();
    std::string labels;
    for (int64_t k = ellipsisRank - count; k < ellipsisRank; ++k)
      labels.push_back(char('0' + k));
    term.replace(pos, 3, labels);
    return success();
  };
  bool explicitOut = arrow != std::string::npos;
  for (auto [i, term] : llvm::enumerate(terms))
    if (failed(expand(term, n.in(i)->shape.size())))
      return fail(n, "term '" + term + "' has more labels than input " +
                         Twine(i) + " has dimensions");
  if (explicitOut) {
    if (failed(expand(out, ellipsisRank + int64_t(out.size()) - 3)))
      return fail(n, "bad ellipsis in the output");
  } else if (ellipsisRank) {
    std::string lead;
    for (int64_t k = 0; k < ellipsisRank; ++k)
      lead.push_back(char('0' + k));
    out = lead + out;
  }
  std::map<char, int64_t> sizes;
  SmallVector<Value> vals;
  for (auto [i, term] : llvm::enumerate(terms)) {
    Tensor *t = n.in(i);
    if (term.size() != t->shape.size())
      return fail(n, "term '" + term + "' does not match the rank of input " +
                         Twine(i));
    for (auto [p, ch] : llvm::enumerate(term)) {
      auto [it, inserted] = sizes.insert({ch, t->shape[p]});
      if (!inserted && it->second != t->shape[p])
        return fail(n, formatv("label '{0}' has sizes {1} and {2} (broadcast "
                               "labels are not supported)",
                               ch, it->second, t->shape[p]));
    }
    Value v = asF32(*t, n.loc);
    // A label repeated in one term takes the diagonal: move both dims last,
    // flatten them and gather positions k * (d + 1).
    for (size_t p1 = 0; p1 < term.size(); ++p1) {
      size_t p2 = term.find(term[p1], p1 + 1);
      if (p2 == std::string::npos)
        continue;
      if (term.find(term[p1], p2 + 1) != std::string::npos)
        return fail(n, "label '" + Twine(term[p1]) +
                           "' occurs more than twice "
                           "in '" +
                           term + "'");
      SmallVector<int64_t> perm;
      std::string rest;
      for (size_t q = 0; q < term.size(); ++q)
        if (q != p1 && q != p2) {
          perm.push_back(q);
          rest.push_back(term[q]);
        }
      perm.push_back(p1);
      perm.push_back(p2);
      v = transposeBy(v, perm, n.loc);
      int64_t d = sizes[term[p1]];
      if (failed(checkFoldable(n, {d}, "the diagonal positions")))
        return failure();
      SmallVector<int64_t> flat;
      for (char ch : rest)
        flat.push_back(sizes[ch]);
      SmallVector<int64_t> diagShape = flat;
      flat.push_back(d * d);
      diagShape.push_back(d);
      v = reshapeTo(v, flat, n.loc);
      TensorData idx;
      idx.kind = Kind::I64;
      idx.shape = {d};
      for (int64_t k = 0; k < d; ++k)
        idx.i64.push_back(k * (d + 1));
      v = llm::GatherOp::create(b, n.loc, tensorType(diagShape, Kind::F32), v,
                                constantValue(idx, n.loc),
                                b.getI64IntegerAttr(diagShape.size() - 1));
      term = rest + term[p1];
      p1 = size_t(-1); // rescan the new term
    }
    vals.push_back(v);
  }
  auto sizeOf = [&](char ch) -> int64_t {
    auto it = sizes.find(ch);
    return it == sizes.end() ? -1 : it->second;
  };
  // Sum labels that appear in one operand only and not in the output.
  for (auto [i, term] : llvm::enumerate(terms)) {
    std::string kept;
    SmallVector<int64_t> axes;
    for (auto [p, ch] : llvm::enumerate(term)) {
      bool inOther =
          terms.size() == 2 && terms[1 - i].find(ch) != std::string::npos;
      if (out.find(ch) == std::string::npos && !inOther)
        axes.push_back(p);
      else
        kept.push_back(ch);
    }
    if (!axes.empty())
      vals[i] = reduceAxes(vals[i], llm::ReduceKind::Sum, axes, false, n.loc);
    term = kept;
  }
  for (char ch : out)
    if (sizeOf(ch) < 0)
      return fail(n, "output label '" + Twine(ch) + "' is not in any input");
  std::string cur;
  Value r;
  if (terms.size() == 1) {
    r = vals[0];
    cur = terms[0];
  } else {
    std::string batch, ctr, freeA, freeB;
    for (char ch : terms[0]) {
      bool inB = terms[1].find(ch) != std::string::npos;
      bool inOut = out.find(ch) != std::string::npos;
      if (inB && inOut)
        batch.push_back(ch);
      else if (inB)
        ctr.push_back(ch);
      else
        freeA.push_back(ch);
    }
    for (char ch : terms[1])
      if (terms[0].find(ch) == std::string::npos)
        freeB.push_back(ch);
    auto permFor = [&](const std::string &from, const std::string &to) {
      SmallVector<int64_t> perm;
      for (char ch : to)
        perm.push_back(from.find(ch));
      return perm;
    };
    auto prod = [&](const std::string &labels) {
      int64_t p = 1;
      for (char ch : labels)
        p *= sizeOf(ch);
      return p;
    };
    SmallVector<int64_t> bshape;
    for (char ch : batch)
      bshape.push_back(sizeOf(ch));
    int64_t bn = prod(batch), m = prod(freeA), k = prod(ctr), nn = prod(freeB);
    Value a =
        transposeBy(vals[0], permFor(terms[0], batch + freeA + ctr), n.loc);
    a = reshapeTo(a, {bn, m, k}, n.loc);
    Value c =
        transposeBy(vals[1], permFor(terms[1], batch + ctr + freeB), n.loc);
    c = reshapeTo(c, {bn, k, nn}, n.loc);
    r = llm::MatmulOp::create(b, n.loc, tensorType({bn, m, nn}, Kind::F32), a,
                              c);
    cur = batch + freeA + freeB;
    SmallVector<int64_t> shape;
    for (char ch : cur)
      shape.push_back(sizeOf(ch));
    r = reshapeTo(r, shape, n.loc);
  }
  if (cur.size() != out.size())
    return fail(n, "output labels '" + out + "' do not match the inputs");
  SmallVector<int64_t> perm;
  for (char ch : out)
    perm.push_back(cur.find(ch));
  setValue(n, 0, transposeBy(r, perm, n.loc));
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Gathers `indices` (flat positions along `axis`) from a constant.
static TensorData gatherConstant(const TensorData &d, int64_t axis,
                                 ArrayRef<int64_t> idx,
                                 ArrayRef<int64_t> idxShape) {
  TensorData r;
  r.kind = d.kind;
  r.shape.assign(d.shape.begin(), d.shape.begin() + axis);
  r.shape.append(idxShape.begin(), idxShape.end());
  r.shape.append(d.shape.begin() + axis + 1, d.shape.end());
  int64_t outer = numElements(ArrayRef<int64_t>(d.shape).take_front(axis));
  int64_t inner = numElements(ArrayRef<int64_t>(d.shape).drop_front(axis + 1));
  int64_t dim = d.shape[axis];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : idx)
      for (int64_t in = 0; in < inner; ++in) {
        int64_t src = (o * dim + i) * inner + in;
        if (d.kind == Kind::F32)
          r.f32.push_back(d.f32[src]);
        else
          r.i64.push_back(d.i64[src]);
      }
  return r;
}

LogicalResult Importer::gather(NodeCtx &n) {
  auto x = required(n, 0);
  auto idx = required(n, 1);
  if (failed(x) || failed(idx))
    return failure();
  if ((*idx)->kind != Kind::I64)
    return fail(n, "indices must be integers");
  int64_t rank = (*x)->shape.size();
  if (rank == 0)
    return fail(n, "data must have rank >= 1");
  auto axis = normalizeAxis(n.getInt("axis", 0), rank, n, "attribute 'axis'");
  if (failed(axis))
    return failure();
  int64_t dim = (*x)->shape[*axis];
  SmallVector<int64_t> idxShape = (*idx)->shape;
  SmallVector<int64_t> outShape((*x)->shape.begin(),
                                (*x)->shape.begin() + *axis);
  outShape.append(idxShape.begin(), idxShape.end());
  outShape.append((*x)->shape.begin() + *axis + 1, (*x)->shape.end());
  if (failed(checkShape(n, outShape, "the result")))
    return failure();
  if ((*idx)->constant) {
    SmallVector<int64_t> flat;
    for (int64_t i : (*idx)->constant->i64) {
      if (i < -dim || i >= dim)
        return fail(
            n, formatv("index {0} is out of range for dimension {1}", i, dim));
      flat.push_back(i < 0 ? i + dim : i);
    }
    if ((*x)->constant && foldable(outShape)) {
      setConstant(n, 0, gatherConstant(*(*x)->constant, *axis, flat, idxShape));
      return success();
    }
    if (setIfEmpty(n, 0, outShape, (*x)->kind))
      return success();
    TensorData d;
    d.kind = Kind::I64;
    d.shape = {int64_t(flat.size())};
    d.i64.assign(flat.begin(), flat.end());
    Value data = materialize(**x, n.loc);
    Value iv = constantValue(d, n.loc);
    SmallVector<int64_t> gshape((*x)->shape);
    gshape[*axis] = flat.size();
    Value g = llm::GatherOp::create(b, n.loc, tensorType(gshape, (*x)->kind),
                                    data, iv, b.getI64IntegerAttr(*axis));
    setValue(n, 0, reshapeTo(g, outShape, n.loc));
    return success();
  }
  if (setIfEmpty(n, 0, outShape, (*x)->kind))
    return success();
  Value iv =
      reshapeTo(materialize(**idx, n.loc), {numElements(idxShape)}, n.loc);
  if ((*x)->initializer && rank == 2 && *axis == 0) {
    // A row lookup in a weight table is the embedding (token ids must be
    // in [0, rows); ONNX's negative indices are a run-time error here).
    Value table;
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(b.getInsertionBlock());
      table = weightValue(**x, /*transposed=*/false, n.loc);
    }
    Value e = llm::EmbeddingOp::create(
        b, n.loc,
        tensorType({numElements(idxShape), (*x)->shape[1]}, Kind::F32), table,
        iv);
    setValue(n, 0, reshapeTo(e, outShape, n.loc));
    return success();
  }
  Value data = materialize(**x, n.loc);
  SmallVector<int64_t> gshape((*x)->shape);
  gshape[*axis] = numElements(idxShape);
  Value g = llm::GatherOp::create(b, n.loc, tensorType(gshape, (*x)->kind),
                                  data, iv, b.getI64IntegerAttr(*axis));
  setValue(n, 0, reshapeTo(g, outShape, n.loc));
  return success();
}

/// `t` with a new shape: folded for constants, llm.reshape otherwise.
static Tensor reshaped(const Tensor &t, ArrayRef<int64_t> shape) {
  Tensor r = t;
  r.shape.assign(shape.begin(), shape.end());
  r.value = Value();
  r.initializer = nullptr;
  if (t.constant) {
    auto d = std::make_shared<TensorData>(*t.constant);
    d->shape.assign(shape.begin(), shape.end());
    r.constant = d;
  }
  return r;
}

LogicalResult Importer::reshape(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  auto spec = intsInput(n, 1, "shape");
  if (failed(spec))
    return failure();
  bool allowZero = n.getInt("allowzero", 0);
  SmallVector<int64_t> shape;
  int64_t inferAt = -1;
  for (auto [i, d] : llvm::enumerate(*spec)) {
    if (d == 0 && !allowZero) {
      if (i >= (*x)->shape.size())
        return fail(n, "shape entry 0 at " + Twine(i) +
                           " has no input dimension to copy");
      d = (*x)->shape[i];
    }
    if (d == -1) {
      if (inferAt >= 0)
        return fail(n, formatv("shape[{0}] is a second -1 (shape {1})", i,
                               shapeStr(*spec)));
      inferAt = i;
      shape.push_back(1);
      continue;
    }
    if (d < 0)
      return fail(n, formatv("shape[{0}] = {1} is invalid", i, d));
    shape.push_back(d);
  }
  if (failed(checkShape(n, shape, "the input 'shape'")))
    return failure();
  int64_t known = numElements(shape);
  int64_t total = numElements((*x)->shape);
  if (inferAt >= 0) {
    if (known == 0 || total % known)
      return fail(n, "cannot infer -1 in " + shapeStr(*spec) + " for " +
                         shapeStr((*x)->shape));
    shape[inferAt] = total / known;
  }
  if (numElements(shape) != total)
    return fail(n, "cannot reshape " + shapeStr((*x)->shape) + " to " +
                       shapeStr(shape));
  if (setIfEmpty(n, 0, shape, (*x)->kind))
    return success();
  Tensor r = reshaped(**x, shape);
  if (!r.constant)
    r.value = reshapeTo(materialize(**x, n.loc), shape, n.loc);
  setTensor(n, 0, r);
  return success();
}

LogicalResult Importer::squeeze(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  bool unsq = n.opType() == "Unsqueeze";
  SmallVector<int64_t> axes;
  bool haveAxes = false;
  if (n.opset >= 13) {
    if (n.in(1)) {
      auto a = intsInput(n, 1, "axes");
      if (failed(a))
        return failure();
      axes = *a;
      haveAxes = true;
    }
  } else if (auto a = n.getInts("axes")) {
    axes = *a;
    haveAxes = true;
  }
  SmallVector<int64_t> in = (*x)->shape, out;
  if (unsq) {
    if (!haveAxes)
      return fail(n, "axes are required");
    int64_t outRank = in.size() + axes.size();
    SmallVector<bool> isNew(outRank, false);
    for (auto [i, a] : llvm::enumerate(axes)) {
      auto na = normalizeAxis(a, outRank, n, "axes[" + std::to_string(i) + "]");
      if (failed(na))
        return failure();
      if (isNew[*na])
        return fail(n, "repeated axis " + Twine(a));
      isNew[*na] = true;
    }
    size_t j = 0;
    for (int64_t i = 0; i < outRank; ++i)
      out.push_back(isNew[i] ? 1 : in[j++]);
  } else {
    SmallVector<bool> drop(in.size(), false);
    if (!haveAxes) {
      for (auto [i, d] : llvm::enumerate(in))
        drop[i] = d == 1;
    }
    for (auto [i, a] : llvm::enumerate(axes)) {
      auto na =
          normalizeAxis(a, in.size(), n, "axes[" + std::to_string(i) + "]");
      if (failed(na))
        return failure();
      if (in[*na] != 1)
        return fail(n,
                    formatv("cannot squeeze axis {0} of size {1}", a, in[*na]));
      drop[*na] = true;
    }
    for (auto [i, d] : llvm::enumerate(in))
      if (!drop[i])
        out.push_back(d);
  }
  Tensor r = reshaped(**x, out);
  if (!r.constant)
    r.value = reshapeTo(materialize(**x, n.loc), out, n.loc);
  setTensor(n, 0, r);
  return success();
}

LogicalResult Importer::flatten(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  int64_t rank = (*x)->shape.size();
  auto axis = normalizeAxis(n.getInt("axis", 1), rank, n, "attribute 'axis'",
                            /*inclusiveEnd=*/true);
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> s = (*x)->shape;
  SmallVector<int64_t> out = {numElements(s.take_front(*axis)),
                              numElements(s.drop_front(*axis))};
  Tensor r = reshaped(**x, out);
  if (!r.constant)
    r.value = reshapeTo(materialize(**x, n.loc), out, n.loc);
  setTensor(n, 0, r);
  return success();
}

LogicalResult Importer::transpose(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  int64_t rank = (*x)->shape.size();
  SmallVector<int64_t> perm;
  if (auto p = n.getInts("perm"))
    perm = *p;
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  SmallVector<bool> seen(rank, false);
  if (int64_t(perm.size()) != rank)
    return fail(n, "perm has " + Twine(perm.size()) + " entries for rank " +
                       Twine(rank));
  for (auto [i, p] : llvm::enumerate(perm)) {
    auto np = normalizeAxis(p, rank, n, "perm[" + std::to_string(i) + "]");
    if (failed(np))
      return failure();
    if (seen[*np])
      return fail(n, "perm is not a permutation");
    seen[*np] = true;
    p = *np;
  }
  SmallVector<int64_t> out;
  for (int64_t p : perm)
    out.push_back((*x)->shape[p]);
  if (setIfEmpty(n, 0, out, (*x)->kind))
    return success();
  setValue(n, 0, transposeBy(materialize(**x, n.loc), perm, n.loc));
  return success();
}

LogicalResult Importer::concat(NodeCtx &n) {
  if (n.numInputs() == 0)
    return fail(n, "needs at least one input");
  for (size_t i = 0; i < n.numInputs(); ++i)
    if (!n.in(i))
      return fail(n, "input " + Twine(i) + " is missing");
  Tensor &first = *n.in(0);
  int64_t rank = first.shape.size();
  auto axis = normalizeAxis(n.getInt("axis", 0), rank, n, "attribute 'axis'");
  if (failed(axis))
    return failure();
  SmallVector<int64_t> out = first.shape;
  out[*axis] = 0;
  bool allConst = true;
  for (size_t i = 0; i < n.numInputs(); ++i) {
    Tensor &t = *n.in(i);
    if (int64_t(t.shape.size()) != rank || t.kind != first.kind)
      return fail(n, "inputs differ in rank or element type");
    for (int64_t d = 0; d < rank; ++d)
      if (d != *axis && t.shape[d] != first.shape[d])
        return fail(n, "input " + Twine(i) + " shape " + shapeStr(t.shape) +
                           " does not match " + shapeStr(first.shape));
    out[*axis] = checkedAdd(out[*axis], t.shape[*axis])
                     .value_or(std::numeric_limits<int64_t>::max());
    allConst &= bool(t.constant) && !t.initializer;
  }
  if (failed(checkShape(n, out, "the result")))
    return failure();
  if (allConst && foldable(out)) {
    // Fold (shape vectors): interleave the inputs' slabs along the axis.
    TensorData r;
    r.kind = first.kind;
    r.shape = out;
    int64_t outer = numElements(ArrayRef<int64_t>(out).take_front(*axis));
    int64_t inner = numElements(ArrayRef<int64_t>(out).drop_front(*axis + 1));
    for (int64_t o = 0; o < outer; ++o)
      for (size_t i = 0; i < n.numInputs(); ++i) {
        const TensorData &d = *n.in(i)->constant;
        int64_t slab = d.shape[*axis] * inner;
        for (int64_t e = 0; e < slab; ++e) {
          if (r.kind == Kind::F32)
            r.f32.push_back(d.f32[o * slab + e]);
          else
            r.i64.push_back(d.i64[o * slab + e]);
        }
      }
    setConstant(n, 0, std::move(r));
    return success();
  }
  if (setIfEmpty(n, 0, out, first.kind))
    return success();
  SmallVector<Value> vals;
  for (size_t i = 0; i < n.numInputs(); ++i)
    if (n.in(i)->shape[*axis] != 0)
      vals.push_back(materialize(*n.in(i), n.loc));
  if (vals.size() == 1) {
    setValue(n, 0, vals[0]);
    return success();
  }
  setValue(n, 0,
           llm::ConcatOp::create(b, n.loc, tensorType(out, first.kind), vals,
                                 b.getI64IntegerAttr(*axis)));
  return success();
}

LogicalResult Importer::split(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  int64_t rank = (*x)->shape.size();
  auto axis = normalizeAxis(n.getInt("axis", 0), rank, n, "attribute 'axis'");
  if (failed(axis))
    return failure();
  int64_t dim = (*x)->shape[*axis];
  SmallVector<int64_t> sizes;
  if (n.opset >= 13 && n.in(1)) {
    auto s = intsInput(n, 1, "split");
    if (failed(s))
      return failure();
    sizes = *s;
  } else if (n.opset < 13 && n.getInts("split")) {
    sizes = *n.getInts("split");
  } else {
    int64_t parts = n.opset >= 18 ? n.getInt("num_outputs", n.numOutputs())
                                  : int64_t(n.numOutputs());
    if (parts <= 0)
      return fail(n, "no outputs");
    if (parts != int64_t(n.numOutputs()))
      return fail(n, formatv("attribute 'num_outputs' = {0} but the node has "
                             "{1} outputs",
                             parts, n.numOutputs()));
    // Opset 18: the last chunk is smaller when the split is uneven.
    int64_t chunk = (dim + parts - 1) / parts;
    if (n.opset < 18 && dim % parts)
      return fail(n, formatv("dimension {0} does not split into {1} equal "
                             "parts",
                             dim, parts));
    for (int64_t i = 0, left = dim; i < parts; ++i, left -= chunk)
      sizes.push_back(std::min(chunk, left));
  }
  if (sizes.size() != n.numOutputs())
    return fail(n, formatv("{0} split sizes for {1} outputs", sizes.size(),
                           n.numOutputs()));
  int64_t sum = 0;
  for (auto [i, s] : llvm::enumerate(sizes)) {
    if (s < 0)
      return fail(n, formatv("split[{0}] = {1} is negative", i, s));
    sum = checkedAdd(sum, s).value_or(std::numeric_limits<int64_t>::max());
  }
  if (sum != dim)
    return fail(
        n, formatv("split sizes add up to {0}, dimension is {1}", sum, dim));
  int64_t start = 0;
  for (auto [i, s] : llvm::enumerate(sizes)) {
    SmallVector<int64_t> shape = (*x)->shape;
    shape[*axis] = s;
    if (!setIfEmpty(n, i, shape, (*x)->kind)) {
      Value v = materialize(**x, n.loc);
      setValue(n, i,
               llm::SliceOp::create(b, n.loc, tensorType(shape, (*x)->kind), v,
                                    b.getI64IntegerAttr(*axis),
                                    b.getI64IntegerAttr(start),
                                    b.getI64IntegerAttr(s)));
    }
    start += s;
  }
  return success();
}

LogicalResult Importer::slice(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  auto starts = intsInput(n, 1, "starts");
  if (failed(starts))
    return failure();
  auto ends = intsInput(n, 2, "ends");
  if (failed(ends))
    return failure();
  int64_t rank = (*x)->shape.size();
  SmallVector<int64_t> axes, steps;
  if (n.in(3)) {
    auto a = intsInput(n, 3, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    for (int64_t i = 0; i < int64_t(starts->size()); ++i)
      axes.push_back(i);
  }
  if (n.in(4)) {
    auto s = intsInput(n, 4, "steps");
    if (failed(s))
      return failure();
    steps = *s;
  } else {
    steps.assign(starts->size(), 1);
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return fail(n, "starts, ends, axes and steps differ in length");
  Tensor cur = **x;
  for (size_t i = 0; i < axes.size(); ++i) {
    auto axis =
        normalizeAxis(axes[i], rank, n, "axes[" + std::to_string(i) + "]");
    if (failed(axis))
      return failure();
    int64_t dim = cur.shape[*axis], step = steps[i];
    if (step == 0)
      return fail(n, formatv("steps[{0}] is 0", i));
    // ONNX clamping: starts/ends are clamped to [0, dim] for positive
    // steps and [-1, dim - 1] for negative ones, after adding dim to
    // negative values.
    auto clampIdx = [&](int64_t v) {
      if (v < 0)
        v += dim;
      return step > 0 ? std::clamp<int64_t>(v, 0, dim)
                      : std::clamp<int64_t>(v, -1, dim - 1);
    };
    int64_t s = clampIdx((*starts)[i]), e = clampIdx((*ends)[i]);
    // |step| beyond dim takes one element, as dim + 1 does (no overflow).
    int64_t mag = std::min<uint64_t>(
        step > 0 ? uint64_t(step) : 0 - uint64_t(step), uint64_t(dim) + 1);
    int64_t span = step > 0 ? e - s : s - e;
    int64_t count = span > 0 ? (span - 1) / mag + 1 : 0;
    SmallVector<int64_t> shape = cur.shape;
    shape[*axis] = count;
    bool contiguous = step == 1;
    if (!contiguous &&
        failed(checkFoldable(n, {count}, "the positions of a strided slice")))
      return failure();
    SmallVector<int64_t> idx;
    if (!contiguous || (cur.constant && !cur.initializer))
      for (int64_t j = 0; j < count; ++j)
        idx.push_back(s + j * (step > 0 ? mag : -mag));
    Tensor next;
    next.kind = cur.kind;
    next.shape = shape;
    if (numElements(shape) == 0) {
      TensorData d;
      d.kind = cur.kind;
      d.shape = shape;
      next.constant = std::make_shared<TensorData>(std::move(d));
    } else if (cur.constant && !cur.initializer) {
      next.constant = std::make_shared<TensorData>(
          gatherConstant(*cur.constant, *axis, idx, {int64_t(idx.size())}));
    } else if (count == dim && contiguous) {
      next = cur;
    } else if (contiguous) {
      next.value = llm::SliceOp::create(
          b, n.loc, tensorType(shape, cur.kind), materialize(cur, n.loc),
          b.getI64IntegerAttr(*axis), b.getI64IntegerAttr(s),
          b.getI64IntegerAttr(count));
    } else {
      // Strided or reversed: a gather with the constant positions.
      TensorData d;
      d.kind = Kind::I64;
      d.shape = {int64_t(idx.size())};
      d.i64.assign(idx.begin(), idx.end());
      next.value = llm::GatherOp::create(
          b, n.loc, tensorType(shape, cur.kind), materialize(cur, n.loc),
          constantValue(d, n.loc), b.getI64IntegerAttr(*axis));
    }
    cur = next;
  }
  setTensor(n, 0, cur);
  return success();
}

LogicalResult Importer::expand(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  auto spec = intsInput(n, 1, "shape");
  if (failed(spec) || failed(checkShape(n, *spec, "the input 'shape'")))
    return failure();
  auto shape = llm::broadcastShapes((*x)->shape, *spec);
  if (failed(shape))
    return fail(n, "cannot expand " + shapeStr((*x)->shape) + " to " +
                       shapeStr(*spec));
  if (setIfEmpty(n, 0, *shape, (*x)->kind))
    return success();
  setValue(n, 0, broadcast(materialize(**x, n.loc), *shape, n.loc));
  return success();
}

LogicalResult Importer::tile(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  auto reps = intsInput(n, 1, "repeats");
  if (failed(reps))
    return failure();
  int64_t rank = (*x)->shape.size();
  if (int64_t(reps->size()) != rank)
    return fail(n, formatv("repeats has {0} entries for an input of rank {1}",
                           reps->size(), rank));
  SmallVector<int64_t> outShape;
  for (int64_t a = 0; a < rank; ++a) {
    if ((*reps)[a] < 0)
      return fail(n, formatv("repeats[{0}] = {1} is negative", a, (*reps)[a]));
    auto d = checkedMul((*x)->shape[a], (*reps)[a]);
    if (!d)
      return fail(n, formatv("repeats[{0}] = {1} times dimension {2} "
                             "overflows int64",
                             a, (*reps)[a], (*x)->shape[a]));
    outShape.push_back(*d);
  }
  if (failed(checkShape(n, outShape, "the result")))
    return failure();
  if (setIfEmpty(n, 0, outShape, (*x)->kind))
    return success();
  if ((*x)->constant && (*x)->kind != Kind::F32 && !(*x)->initializer &&
      foldable(outShape)) {
    // Integer shape arithmetic: out[i] = x[i mod shape].
    TensorData r;
    r.kind = (*x)->kind;
    r.shape = outShape;
    SmallVector<int64_t> idx(rank);
    for (int64_t i = 0, e = numElements(outShape); i < e; ++i) {
      int64_t rem = i, off = 0, stride = 1;
      for (int64_t a = rank - 1; a >= 0; --a) {
        idx[a] = rem % outShape[a];
        rem /= outShape[a];
      }
      for (int64_t a = rank - 1; a >= 0; --a) {
        off += (idx[a] % (*x)->shape[a]) * stride;
        stride *= (*x)->shape[a];
      }
      r.i64.push_back((*x)->constant->i64[off]);
    }
    setConstant(n, 0, std::move(r));
    return success();
  }
  // Per repeated axis a: [.., d, ..] -> [.., 1, d, ..] -> broadcast to
  // [.., r, d, ..] -> [.., r * d, ..] (copies of the whole axis, in order).
  Value v = materialize(**x, n.loc);
  for (int64_t a = 0; a < rank; ++a) {
    int64_t r = (*reps)[a];
    if (r == 1)
      continue;
    SmallVector<int64_t> cur(shapeOf(v));
    SmallVector<int64_t> unit(cur);
    unit.insert(unit.begin() + a, 1);
    SmallVector<int64_t> wide(cur);
    wide.insert(wide.begin() + a, r);
    SmallVector<int64_t> merged(cur);
    merged[a] *= r;
    v = reshapeTo(broadcast(reshapeTo(v, unit, n.loc), wide, n.loc), merged,
                  n.loc);
  }
  setValue(n, 0, v);
  return success();
}

LogicalResult Importer::scatterElements(NodeCtx &n) {
  auto x = required(n, 0);
  auto idx = required(n, 1);
  auto upd = required(n, 2);
  if (failed(x) || failed(idx) || failed(upd))
    return failure();
  if ((*idx)->kind != Kind::I64)
    return fail(n, "indices must be integers");
  if ((*x)->kind != (*upd)->kind)
    return fail(n, "data and updates differ in element type");
  ArrayRef<int64_t> dShape = (*x)->shape, sShape = (*idx)->shape;
  int64_t rank = dShape.size();
  if (rank == 0)
    return fail(n, "data must have rank >= 1");
  if (int64_t(sShape.size()) != rank || (*upd)->shape != (*idx)->shape)
    return fail(n, "indices " + shapeStr(sShape) + " and updates " +
                       shapeStr((*upd)->shape) +
                       " must have the same shape, of data's rank " +
                       std::to_string(rank));
  auto axis = normalizeAxis(n.getInt("axis", 0), rank, n, "attribute 'axis'");
  if (failed(axis))
    return failure();
  for (int64_t a = 0; a < rank; ++a)
    if (a != *axis && sShape[a] != dShape[a])
      return fail(n, "indices " + shapeStr(sShape) + " cover part of data " +
                         shapeStr(dShape) + " outside axis " +
                         std::to_string(*axis) +
                         "; only a full extent is supported there");
  std::string reduction = n.getString("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" &&
      reduction != "max" && reduction != "min")
    return fail(n, "unknown reduction '" + reduction + "'");
  int64_t m = dShape[*axis];
  if (failed(checkFoldable(n, {m}, "the positions along the axis")))
    return failure();
  if (setIfEmpty(n, 0, dShape, (*x)->kind))
    return success();
  if (numElements(sShape) == 0) {
    setTensor(n, 0, **x);
    return success();
  }
  if ((*idx)->constant)
    for (int64_t i : (*idx)->constant->i64)
      if (i < -m || i >= m)
        return fail(
            n, formatv("index {0} is out of range for dimension {1}", i, m));
  if ((*x)->kind != Kind::F32)
    return fail(n, "only f32 data is supported (run-time integer "
                   "scatters have no llm primitive)");
  // As a one-hot contraction on [.., m (target), cnt (source), ..]: source
  // element (.., s, ..) writes to target t when its index is t (or t - m).
  SmallVector<int64_t> wide(sShape);
  wide.insert(wide.begin() + *axis, m);
  SmallVector<int64_t> srcView(sShape);
  srcView.insert(srcView.begin() + *axis, 1);
  SmallVector<int64_t> iotaView(rank + 1, 1);
  iotaView[*axis] = m;
  auto iota = [&](int64_t shift) {
    TensorData d;
    d.kind = Kind::I64;
    d.shape = iotaView;
    for (int64_t t = 0; t < m; ++t)
      d.i64.push_back(t + shift);
    return broadcast(constantValue(d, n.loc), wide, n.loc);
  };
  Value iv = broadcast(reshapeTo(materialize(**idx, n.loc), srcView, n.loc),
                       wide, n.loc);
  auto i1Type = tensorType(wide, Kind::I1);
  Value hit = llm::CompareOp::create(b, n.loc, i1Type,
                                     llm::ComparePredicate::Eq, iv, iota(0));
  bool maybeNegative =
      !(*idx)->constant ||
      llvm::any_of((*idx)->constant->i64, [](int64_t i) { return i < 0; });
  if (maybeNegative) {
    Value neg = llm::CompareOp::create(b, n.loc, i1Type,
                                       llm::ComparePredicate::Eq, iv, iota(-m));
    hit = llm::SelectOp::create(b, n.loc, i1Type, hit, hit, neg);
  }
  Value uv = broadcast(reshapeTo(materialize(**upd, n.loc), srcView, n.loc),
                       wide, n.loc);
  Value data = materialize(**x, n.loc);
  auto f32Type = tensorType(wide, Kind::F32);
  // Reduces the selected updates (`fill` elsewhere) over the source axis.
  auto gathered = [&](llm::ReduceKind kind, double fill) {
    Value sel =
        llm::SelectOp::create(b, n.loc, f32Type, hit, uv,
                              splatConstant(wide, Kind::F32, fill, n.loc));
    return reduceAxes(sel, kind, {*axis + 1}, /*keepDims=*/false, n.loc);
  };
  Value out;
  auto dType = tensorType(dShape, Kind::F32);
  if (reduction == "add") {
    out = llm::AddOp::create(b, n.loc, dType, data,
                             gathered(llm::ReduceKind::Sum, 0));
  } else if (reduction == "mul") {
    out = llm::MulOp::create(b, n.loc, dType, data,
                             gathered(llm::ReduceKind::Prod, 1));
  } else if (reduction == "max") {
    out = llm::MaximumOp::create(b, n.loc, dType, data,
                                 gathered(llm::ReduceKind::Max, -INFINITY));
  } else if (reduction == "min") {
    out = llm::MinimumOp::create(b, n.loc, dType, data,
                                 gathered(llm::ReduceKind::Min, INFINITY));
  } else {
    // none: ONNX leaves duplicate indices undefined; they sum here.
    Value written = gathered(llm::ReduceKind::Sum, 0);
    Value count = llm::SelectOp::create(
        b, n.loc, f32Type, hit, splatConstant(wide, Kind::F32, 1, n.loc),
        splatConstant(wide, Kind::F32, 0, n.loc));
    Value covered = llm::CompareOp::create(
        b, n.loc, tensorType(dShape, Kind::I1), llm::ComparePredicate::Gt,
        reduceAxes(count, llm::ReduceKind::Sum, {*axis + 1}, false, n.loc),
        splatConstant(dShape, Kind::F32, 0, n.loc));
    out = llm::SelectOp::create(b, n.loc, dType, covered, written, data);
  }
  setValue(n, 0, out);
  return success();
}

//===----------------------------------------------------------------------===//
// NonZero: a data-dependent count, specialised on example inputs
//===----------------------------------------------------------------------===//

FailureOr<TensorData> Importer::probe(NodeCtx &n, Value v) {
  // The ops `v` depends on (all in the function's one block) and the
  // arguments they read.
  Block *block = b.getInsertionBlock();
  llvm::SmallPtrSet<Operation *, 32> needed;
  std::set<unsigned> args;
  SmallVector<Value> work{v};
  while (!work.empty()) {
    Value cur = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(cur)) {
      args.insert(arg.getArgNumber());
      continue;
    }
    Operation *def = cur.getDefiningOp();
    if (!needed.insert(def).second)
      continue;
    for (Value operand : def->getOperands())
      work.push_back(operand);
  }
  std::vector<ref::HostTensor> inputs;
  for (unsigned i : args) {
    const std::string &name = argNames[i];
    const TensorData *d = nullptr;
    for (const auto *m : {options.exampleInputs, options.inputValues})
      if (!d && m) {
        auto it = m->find(name);
        if (it != m->end())
          d = &it->second;
      }
    if (!d) {
      (void)fail(n, "the size of the result depends on the values of graph "
                    "input '" +
                        name +
                        "', which has no example value: give "
                        "example inputs (pimc import --example-inputs "
                        "in.safetensors) to specialise the count on them");
      return failure();
    }
    std::vector<int64_t> shape(d->shape.begin(), d->shape.end());
    ref::HostTensor t;
    if (d->kind == Kind::F32)
      t = ref::HostTensor::fromF32(shape, d->f32);
    else if (d->kind == Kind::I64)
      t = ref::HostTensor::fromI64(shape, d->i64);
    else
      t = ref::HostTensor::fromBool(shape, d->i64);
    inputs.push_back(std::move(t));
  }

  // A scratch module returning `v`, and the weights it reads.
  OpBuilder sb(&ctx);
  OwningOpRef<ModuleOp> scratch(ModuleOp::create(n.loc));
  sb.setInsertionPointToEnd(scratch->getBody());
  SmallVector<Type> types;
  for (unsigned i : args)
    types.push_back(block->getArgument(i).getType());
  auto func = func::FuncOp::create(sb, n.loc, "probe",
                                   sb.getFunctionType(types, {v.getType()}));
  Block *entry = func.addEntryBlock();
  IRMapping map;
  for (auto [k, i] : llvm::enumerate(args))
    map.map(block->getArgument(i), entry->getArgument(k));
  sb.setInsertionPointToStart(entry);
  llvm::StringSet<> used;
  for (Operation &op : *block)
    if (needed.contains(&op)) {
      sb.clone(op, map);
      if (auto w = dyn_cast<llm::WeightOp>(op))
        used.insert(w.getName());
    }
  func::ReturnOp::create(sb, n.loc, map.lookup(v));

  SmallString<128> tmp;
  std::vector<std::string> files;
  if (!used.empty()) {
    int fd;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "pimc-onnx-probe", "safetensors", fd, tmp)) {
      (void)fail(n, "cannot create a temporary file for the weights of the "
                    "example run: " +
                        ec.message());
      return failure();
    }
    llvm::sys::Process::SafelyCloseFileDescriptor(fd);
    files.push_back(std::string(tmp));
  }
  llvm::scope_exit removeTmp([&] {
    if (!tmp.empty())
      llvm::sys::fs::remove(tmp);
  });
  auto failWith = [&](llvm::Error err) -> FailureOr<TensorData> {
    (void)fail(n, "running the graph on the example inputs to find the "
                  "result's size failed: " +
                      llvm::toString(std::move(err)));
    return failure();
  };
  if (!files.empty()) {
    std::vector<WeightTensor> subset;
    for (const WeightTensor &w : weights)
      if (used.contains(w.name))
        subset.push_back(w);
    if (llvm::Error err = writeWeights(tmp, subset))
      return failWith(std::move(err));
  }
  auto store = ckpt::WeightStore::openFiles(files);
  if (!store)
    return failWith(store.takeError());
  auto interp = ref::Interpreter::create(*scratch, **store, "probe");
  if (!interp)
    return failWith(interp.takeError());
  auto results = (*interp)->call(inputs);
  if (!results)
    return failWith(results.takeError());
  const ref::HostTensor &r = results->front();
  TensorData out;
  out.shape.assign(r.shape.begin(), r.shape.end());
  if (r.dtype == ref::HostTensor::DType::F32) {
    out.kind = Kind::F32;
    out.f32 = r.f32;
  } else {
    out.kind = r.dtype == ref::HostTensor::DType::I64 ? Kind::I64 : Kind::I1;
    out.i64 = r.i64;
  }
  return out;
}

LogicalResult Importer::nonzero(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> shape = (*x)->shape;
  int64_t rank = shape.size();
  if (rank == 0)
    return fail(n, "a scalar input is not supported");
  // Row-major flat positions of the nonzero elements of `d`.
  auto positions = [](const TensorData &d) {
    SmallVector<int64_t> pos;
    int64_t count = d.kind == Kind::F32 ? d.f32.size() : d.i64.size();
    for (int64_t e = 0; e < count; ++e)
      if (d.kind == Kind::F32 ? d.f32[e] != 0.0f : d.i64[e] != 0)
        pos.push_back(e);
    return pos;
  };
  if ((*x)->constant) {
    SmallVector<int64_t> pos = positions(*(*x)->constant);
    int64_t count = pos.size();
    if (failed(checkFoldable(n, {rank, count}, "the result")))
      return failure();
    TensorData d;
    d.kind = Kind::I64;
    d.shape = {rank, count};
    d.i64.assign(rank * count, 0);
    for (auto [i, p] : llvm::enumerate(pos)) {
      int64_t rest = p;
      for (int64_t dim = rank - 1; dim >= 0; --dim) {
        d.i64[dim * count + i] = rest % shape[dim];
        rest /= shape[dim];
      }
    }
    setConstant(n, 0, std::move(d));
    return success();
  }
  // The count on the example inputs: a graph input's own value, or the
  // ops computing the input run on them.
  Value mask = materialize(**x, n.loc);
  TensorData example;
  if ((*x)->bound) {
    example = *(*x)->bound;
  } else if (options.exampleInputs || options.inputValues) {
    auto probed = probe(n, mask);
    if (failed(probed))
      return failure();
    example = std::move(*probed);
  } else {
    return fail(n, "the size of the result depends on the values of input '" +
                       n.node.input(0) +
                       "', a run-time value: give example inputs (pimc "
                       "import --example-inputs in.safetensors, "
                       "ImportOptions::exampleInputs) to specialise the count "
                       "on them");
  }
  int64_t count = positions(example).size();
  // An empty result would be a constant (llm ops do not produce empty
  // tensors) that folds its users away: the graph would then compute
  // something else, unchecked, on data where the mask is not empty (a
  // sparse MoE expert that got no token would vanish).
  if (count == 0)
    return fail(n, "input '" + n.node.input(0) +
                       "' has no nonzero element on the example inputs; an "
                       "empty result cannot be checked at run time (its "
                       "users would fold away): give example inputs on "
                       "which it selects at least one element");
  Value nz = llm::NonzeroOp::create(b, n.loc,
                                    tensorType({count, rank}, Kind::I64), mask);
  setValue(n, 0, transposeBy(nz, {1, 0}, n.loc));
  return success();
}

LogicalResult Importer::where(NodeCtx &n) {
  auto c = required(n, 0);
  auto x = required(n, 1);
  auto y = required(n, 2);
  if (failed(c) || failed(x) || failed(y))
    return failure();
  if ((*x)->kind != (*y)->kind)
    return fail(n, "X and Y differ in element type");
  auto s1 = llm::broadcastShapes((*c)->shape, (*x)->shape);
  if (failed(s1))
    return fail(n, "shapes do not broadcast");
  auto shape = llm::broadcastShapes(*s1, (*y)->shape);
  if (failed(shape))
    return fail(n, "shapes do not broadcast");
  if (setIfEmpty(n, 0, *shape, (*x)->kind))
    return success();
  if ((*c)->constant && (*x)->constant && (*y)->constant &&
      (*c)->kind != Kind::F32 && (*x)->kind != Kind::F32 &&
      !(*x)->initializer && !(*y)->initializer && foldable(*shape)) {
    TensorData r;
    r.kind = (*x)->kind;
    r.shape.assign(shape->begin(), shape->end());
    for (int64_t i = 0, e = numElements(*shape); i < e; ++i) {
      bool cond = (*c)->constant->i64[broadcastIndex((*c)->shape, *shape, i)];
      const Tensor &src = cond ? **x : **y;
      r.i64.push_back(src.constant->i64[broadcastIndex(src.shape, *shape, i)]);
    }
    setConstant(n, 0, std::move(r));
    return success();
  }
  Value cv = broadcast(convertTo(materialize(**c, n.loc), Kind::I1, n.loc),
                       *shape, n.loc);
  Value xv = broadcast(materialize(**x, n.loc), *shape, n.loc);
  Value yv = broadcast(materialize(**y, n.loc), *shape, n.loc);
  setValue(n, 0, llm::SelectOp::create(b, n.loc, xv.getType(), cv, xv, yv));
  return success();
}

LogicalResult Importer::compare(NodeCtx &n) {
  auto a = required(n, 0);
  auto c = required(n, 1);
  if (failed(a) || failed(c))
    return failure();
  auto shape = llm::broadcastShapes((*a)->shape, (*c)->shape);
  if (failed(shape))
    return fail(n, "operand shapes " + shapeStr((*a)->shape) + " and " +
                       shapeStr((*c)->shape) + " do not broadcast");
  if (setIfEmpty(n, 0, *shape, Kind::I1))
    return success();
  StringRef op = n.opType();
  if ((*a)->constant && (*c)->constant && (*a)->kind != Kind::F32 &&
      (*c)->kind != Kind::F32 && foldable(*shape)) {
    // Integer comparisons on shapes (torch.onnx's Expand/Reshape guards).
    TensorData r;
    r.kind = Kind::I1;
    r.shape.assign(shape->begin(), shape->end());
    for (int64_t i = 0, e = numElements(*shape); i < e; ++i) {
      int64_t x = (*a)->constant->i64[broadcastIndex((*a)->shape, *shape, i)];
      int64_t y = (*c)->constant->i64[broadcastIndex((*c)->shape, *shape, i)];
      r.i64.push_back(op == "Equal"         ? x == y
                      : op == "Less"        ? x < y
                      : op == "LessOrEqual" ? x <= y
                      : op == "Greater"     ? x > y
                                            : x >= y);
    }
    setConstant(n, 0, std::move(r));
    return success();
  }
  llm::ComparePredicate pred = op == "Equal"         ? llm::ComparePredicate::Eq
                               : op == "Less"        ? llm::ComparePredicate::Lt
                               : op == "LessOrEqual" ? llm::ComparePredicate::Le
                               : op == "Greater"     ? llm::ComparePredicate::Gt
                                                 : llm::ComparePredicate::Ge;
  // Mixed int/float operands compare in f32; booleans compare as i1.
  Kind k = (*a)->kind == (*c)->kind ? (*a)->kind : Kind::F32;
  Value x =
      broadcast(convertTo(materialize(**a, n.loc), k, n.loc), *shape, n.loc);
  Value y =
      broadcast(convertTo(materialize(**c, n.loc), k, n.loc), *shape, n.loc);
  setValue(n, 0,
           llm::CompareOp::create(b, n.loc, tensorType(*shape, Kind::I1), pred,
                                  x, y));
  return success();
}

// IsNaN as `x != x`: only NaN compares unequal to itself (torch.onnx's
// scaled_dot_product_attention zeroes the NaN rows of a fully masked softmax
// this way).
LogicalResult Importer::isNaN(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  if ((*x)->kind != Kind::F32)
    return fail(n, "input must be a float tensor");
  if (setIfEmpty(n, 0, (*x)->shape, Kind::I1))
    return success();
  if ((*x)->constant) {
    TensorData r;
    r.kind = Kind::I1;
    r.shape = (*x)->shape;
    for (float v : (*x)->constant->f32)
      r.i64.push_back(std::isnan(v));
    setConstant(n, 0, std::move(r));
    return success();
  }
  Value v = materialize(**x, n.loc);
  setValue(n, 0,
           llm::CompareOp::create(b, n.loc, tensorType((*x)->shape, Kind::I1),
                                  llm::ComparePredicate::Ne, v, v));
  return success();
}

LogicalResult Importer::logical(NodeCtx &n) {
  auto a = required(n, 0);
  if (failed(a))
    return failure();
  if ((*a)->kind != Kind::I1)
    return fail(n, "inputs must be boolean");
  if (n.opType() == "Not") {
    if (setIfEmpty(n, 0, (*a)->shape, Kind::I1))
      return success();
    Value x = materialize(**a, n.loc);
    Value f = splatConstant((*a)->shape, Kind::I1, 0, n.loc);
    setValue(n, 0,
             llm::CompareOp::create(b, n.loc, x.getType(),
                                    llm::ComparePredicate::Eq, x, f));
    return success();
  }
  auto c = required(n, 1);
  if (failed(c))
    return failure();
  if ((*c)->kind != Kind::I1)
    return fail(n, "inputs must be boolean");
  auto shape = llm::broadcastShapes((*a)->shape, (*c)->shape);
  if (failed(shape))
    return fail(n, "shapes do not broadcast");
  if (setIfEmpty(n, 0, *shape, Kind::I1))
    return success();
  Value x = broadcast(materialize(**a, n.loc), *shape, n.loc);
  Value y = broadcast(materialize(**c, n.loc), *shape, n.loc);
  // a && b = a ? b : false; a || b = a ? true : b.
  bool isAnd = n.opType() == "And";
  Value k = splatConstant(*shape, Kind::I1, isAnd ? 0 : 1, n.loc);
  setValue(n, 0,
           isAnd ? llm::SelectOp::create(b, n.loc, x.getType(), x, y, k)
                 : llm::SelectOp::create(b, n.loc, x.getType(), x, k, y));
  return success();
}

LogicalResult Importer::castElements(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  int64_t to = n.getInt("to", 0);
  std::optional<Kind> k = kindOf(int32_t(to));
  if (!k)
    return fail(n, "cast to " + typeName(int32_t(to)) + " is not supported");
  if (setIfEmpty(n, 0, (*x)->shape, *k))
    return success();
  if ((*x)->constant && !(*x)->initializer && *k != Kind::F32 &&
      (*x)->kind != Kind::F32) {
    TensorData d = *(*x)->constant;
    if (*k == Kind::I1)
      for (int64_t &v : d.i64)
        v = v != 0;
    d.kind = *k;
    setConstant(n, 0, std::move(d));
    return success();
  }
  // A bound input stays known through Cast (window sizes cast to float
  // feed Range); the run-time value is still computed below.
  std::shared_ptr<TensorData> bound;
  if ((*x)->bound && *k != Kind::I1) {
    bound = std::make_shared<TensorData>(*(*x)->bound);
    if (bound->kind == Kind::F32 && *k != Kind::F32)
      for (float f : bound->f32)
        bound->i64.push_back(saturatingInt64(f));
    else if (bound->kind != Kind::F32 && *k == Kind::F32)
      for (int64_t i : bound->i64)
        bound->f32.push_back(float(i));
    bound->kind = *k;
    boundValues.push_back(bound);
  }
  Value v = convertTo(materialize(**x, n.loc), *k, n.loc);
  // f16/bf16 results are f32 tensors holding values rounded to that format.
  if (to == ::onnx::TensorProto::FLOAT16 ||
      to == ::onnx::TensorProto::BFLOAT16) {
    Type narrow = to == ::onnx::TensorProto::FLOAT16 ? Type(b.getF16Type())
                                                     : Type(b.getBF16Type());
    Value r = llm::CastOp::create(
        b, n.loc, RankedTensorType::get((*x)->shape, narrow), v);
    v = llm::CastOp::create(b, n.loc, v.getType(), r);
  }
  setValue(n, 0, v);
  if (bound && n.outputUsed(0))
    tensors[n.node.output(0)].bound = bound.get();
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

Value Importer::reduceAxes(Value v, llm::ReduceKind kind,
                           ArrayRef<int64_t> axes, bool keepDims,
                           Location loc) {
  // One llm.reduce per axis, keeping dimensions so the remaining axis
  // numbers stay valid; mean of means is exact in the count.
  SmallVector<int64_t> shape(shapeOf(v));
  for (int64_t a : axes) {
    shape[a] = 1;
    v = llm::ReduceOp::create(b, loc, tensorType(shape, Kind::F32), v,
                              llm::ReduceKindAttr::get(&ctx, kind),
                              b.getI64IntegerAttr(a), b.getBoolAttr(true));
  }
  if (!keepDims) {
    SmallVector<int64_t> out;
    for (auto [i, d] : llvm::enumerate(shape))
      if (!llvm::is_contained(axes, int64_t(i)))
        out.push_back(d);
    v = reshapeTo(v, out, loc);
  }
  return v;
}

LogicalResult Importer::reduce(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  StringRef op = n.opType();
  // Axes moved from an attribute to an input in opset 13 (ReduceSum) and
  // 18 (the others).
  int64_t inputSince = op == "ReduceSum" ? 13 : 18;
  SmallVector<int64_t> axes;
  bool haveAxes = false;
  if (n.opset >= inputSince) {
    if (n.in(1)) {
      auto a = intsInput(n, 1, "axes");
      if (failed(a))
        return failure();
      axes = *a;
      haveAxes = !axes.empty();
    }
  } else if (auto a = n.getInts("axes")) {
    axes = *a;
    haveAxes = !axes.empty();
  }
  bool keep = n.getInt("keepdims", 1);
  int64_t rank = (*x)->shape.size();
  if (!haveAxes) {
    if (n.getInt("noop_with_empty_axes", 0)) {
      setTensor(n, 0, **x);
      return success();
    }
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  for (auto [i, a] : llvm::enumerate(axes)) {
    auto na = normalizeAxis(a, rank, n, "axes[" + std::to_string(i) + "]");
    if (failed(na))
      return failure();
    a = *na;
  }
  llvm::sort(axes);
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  SmallVector<int64_t> outShape;
  for (int64_t i = 0; i < rank; ++i) {
    bool red = llvm::is_contained(axes, i);
    if (!red)
      outShape.push_back((*x)->shape[i]);
    else if (keep)
      outShape.push_back(1);
  }
  Kind resultKind = (*x)->kind == Kind::I1 ? Kind::I64 : (*x)->kind;
  if (numElements((*x)->shape) == 0) {
    // Reducing nothing: the identity of the reduction (ONNX defines it).
    double ident = op == "ReduceProd"   ? 1.0
                   : op == "ReduceMax"  ? -INFINITY
                   : op == "ReduceMin"  ? INFINITY
                   : op == "ReduceMean" ? NAN
                                        : 0.0;
    if (resultKind != Kind::F32 && !std::isfinite(ident))
      ident = 0;
    if (!foldable(outShape)) {
      setValue(n, 0, splatConstant(outShape, resultKind, ident, n.loc));
      return success();
    }
    TensorData d;
    d.kind = resultKind;
    d.shape = outShape;
    if (resultKind == Kind::F32)
      d.f32.assign(numElements(outShape), float(ident));
    else
      d.i64.assign(numElements(outShape),
                   int64_t(std::isfinite(ident) ? ident : 0));
    setConstant(n, 0, std::move(d));
    return success();
  }
  llm::ReduceKind kind = op == "ReduceSum"    ? llm::ReduceKind::Sum
                         : op == "ReduceMean" ? llm::ReduceKind::Mean
                         : op == "ReduceMax"  ? llm::ReduceKind::Max
                         : op == "ReduceMin"  ? llm::ReduceKind::Min
                                              : llm::ReduceKind::Prod;
  Value r = reduceAxes(asF32(**x, n.loc), kind, axes, keep, n.loc);
  setValue(n, 0, convertTo(r, resultKind, n.loc));
  return success();
}

LogicalResult Importer::topk(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  auto kv = intsInput(n, 1, "K");
  if (failed(kv))
    return failure();
  if (kv->size() != 1)
    return fail(n, "K must have one element");
  int64_t rank = (*x)->shape.size();
  auto axis = normalizeAxis(n.getInt("axis", -1), rank, n, "attribute 'axis'");
  if (failed(axis))
    return failure();
  int64_t k = (*kv)[0];
  if (k < 0 || k > (*x)->shape[*axis])
    return fail(n, formatv("K = {0} is out of range for dimension {1}", k,
                           (*x)->shape[*axis]));
  bool largest = n.getInt("largest", 1);
  SmallVector<int64_t> shape = (*x)->shape;
  shape[*axis] = k;
  Value v = asF32(**x, n.loc);
  auto op = llm::TopkOp::create(
      b, n.loc, tensorType(shape, Kind::F32), tensorType(shape, Kind::I64), v,
      b.getI64IntegerAttr(k), b.getI64IntegerAttr(*axis),
      b.getBoolAttr(largest));
  setValue(n, 0, convertTo(op.getValues(), (*x)->kind, n.loc));
  setValue(n, 1, op.getIndices());
  return success();
}

LogicalResult Importer::cumsum(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  auto ax = intsInput(n, 1, "axis");
  if (failed(ax))
    return failure();
  if (ax->size() != 1)
    return fail(n, "axis must have one element");
  auto axis = normalizeAxis((*ax)[0], (*x)->shape.size(), n, "input 'axis'");
  if (failed(axis))
    return failure();
  Kind k = (*x)->kind == Kind::I1 ? Kind::I64 : (*x)->kind;
  Value v = convertTo(materialize(**x, n.loc), k, n.loc);
  setValue(n, 0,
           llm::CumsumOp::create(b, n.loc, v.getType(), v,
                                 b.getI64IntegerAttr(*axis),
                                 b.getBoolAttr(n.getInt("exclusive", 0)),
                                 b.getBoolAttr(n.getInt("reverse", 0))));
  return success();
}

LogicalResult Importer::trilu(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  int64_t k = 0;
  if (n.in(1)) {
    auto kv = intsInput(n, 1, "k");
    if (failed(kv))
      return failure();
    if (kv->size() != 1)
      return fail(n, "k must have one element");
    k = (*kv)[0];
  }
  SmallVector<int64_t> shape = (*x)->shape;
  if (shape.size() < 2)
    return fail(n, "input must have rank >= 2");
  if (setIfEmpty(n, 0, shape, (*x)->kind))
    return success();
  bool upper = n.getInt("upper", 1);
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  if (failed(checkFoldable(n, {rows, cols}, "the mask")))
    return failure();
  // Keep element (i, j) when j - i >= k (upper) or j - i <= k (lower).
  TensorData mask;
  mask.kind = Kind::I1;
  mask.shape = {rows, cols};
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.i64.push_back(upper ? j - i >= k : j - i <= k);
  Value v = materialize(**x, n.loc);
  Value m = broadcast(constantValue(mask, n.loc), shape, n.loc);
  Value zero = splatConstant(shape, (*x)->kind, 0, n.loc);
  setValue(n, 0, llm::SelectOp::create(b, n.loc, v.getType(), m, v, zero));
  return success();
}

//===----------------------------------------------------------------------===//
// Shapes and constants
//===----------------------------------------------------------------------===//

LogicalResult Importer::shape(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  int64_t rank = (*x)->shape.size();
  int64_t start = n.getInt("start", 0), end = n.getInt("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  TensorData d;
  d.kind = Kind::I64;
  for (int64_t i = start; i < end; ++i)
    d.i64.push_back((*x)->shape[i]);
  d.shape = {int64_t(d.i64.size())};
  setConstant(n, 0, std::move(d));
  return success();
}

LogicalResult Importer::constantOfShape(NodeCtx &n) {
  auto spec = intsInput(n, 0, "shape");
  if (failed(spec))
    return failure();
  TensorData d;
  d.kind = Kind::F32;
  float fvalue = 0;
  int64_t ivalue = 0;
  if (const auto *a = n.attr("value")) {
    auto t = decodeTensor(a->t(), baseDir, path, "attribute value of node");
    if (!t)
      return fail(n, llvm::toString(t.takeError()));
    if (numElements(t->data.shape) != 1)
      return fail(n, "value must have one element");
    d.kind = t->data.kind;
    if (d.kind == Kind::F32)
      fvalue = t->data.f32[0];
    else
      ivalue = t->data.i64[0];
  }
  if (failed(checkShape(n, *spec, "the input 'shape'")) ||
      failed(checkFoldable(n, *spec, "the result")))
    return failure();
  d.shape.assign(spec->begin(), spec->end());
  if (d.kind == Kind::F32)
    d.f32.assign(numElements(d.shape), fvalue);
  else
    d.i64.assign(numElements(d.shape), ivalue);
  setConstant(n, 0, std::move(d));
  return success();
}

LogicalResult Importer::range(NodeCtx &n) {
  SmallVector<const TensorData *> args;
  for (size_t i = 0; i < 3; ++i) {
    auto c = constantInput(n, i, i == 0 ? "start" : i == 1 ? "limit" : "delta");
    if (failed(c))
      return failure();
    if (numElements((*c)->shape) != 1)
      return fail(n, "start, limit and delta must be scalars");
    args.push_back(*c);
  }
  Kind k = args[0]->kind;
  if (k == Kind::I1 || args[1]->kind != k || args[2]->kind != k)
    return fail(n, "start, limit and delta must all be integers or all be "
                   "floats");
  auto scalar = [&](const TensorData *d) {
    return d->kind == Kind::F32 ? double(d->f32[0]) : double(d->i64[0]);
  };
  double start = scalar(args[0]), limit = scalar(args[1]),
         delta = scalar(args[2]);
  if (delta == 0)
    return fail(n, "delta is 0");
  // Checked in double before any conversion: NaN, infinities and counts
  // beyond int64 are caught by the same comparison.
  double count = std::max(std::ceil((limit - start) / delta), 0.0);
  if (!(count <= double(kMaxFoldedElements)))
    return fail(n, formatv("the result has {0:F0} elements; the limit of a "
                           "tensor computed at import time is {1} (2^24)",
                           count, kMaxFoldedElements)
                       .str());
  TensorData d;
  d.kind = k;
  d.shape = {int64_t(count)};
  for (int64_t i = 0; i < d.shape[0]; ++i) {
    if (k == Kind::F32) {
      d.f32.push_back(float(args[0]->f32[0] + float(i) * args[2]->f32[0]));
      continue;
    }
    auto step = checkedMul(i, args[2]->i64[0]);
    auto v = step ? checkedAdd(args[0]->i64[0], *step) : std::nullopt;
    if (!v)
      return fail(n, formatv("element {0} overflows int64", i));
    d.i64.push_back(*v);
  }
  setConstant(n, 0, std::move(d));
  return success();
}

LogicalResult Importer::constant(NodeCtx &n) {
  TensorData d;
  if (const auto *a = n.attr("value")) {
    auto t = decodeTensor(a->t(), baseDir, path, "attribute value of node");
    if (!t)
      return fail(n, llvm::toString(t.takeError()));
    d = std::move(t->data);
  } else if (const auto *a = n.attr("value_float")) {
    d.kind = Kind::F32;
    d.f32 = {a->f()};
  } else if (const auto *a = n.attr("value_floats")) {
    d.kind = Kind::F32;
    d.f32.assign(a->floats().begin(), a->floats().end());
    d.shape = {int64_t(d.f32.size())};
  } else if (const auto *a = n.attr("value_int")) {
    d.kind = Kind::I64;
    d.i64 = {a->i()};
  } else if (const auto *a = n.attr("value_ints")) {
    d.kind = Kind::I64;
    d.i64.assign(a->ints().begin(), a->ints().end());
    d.shape = {int64_t(d.i64.size())};
  } else {
    return fail(n, "only value, value_float(s) and value_int(s) constants "
                   "are supported (sparse and string constants are not)");
  }
  setConstant(n, 0, std::move(d));
  return success();
}

LogicalResult Importer::identity(NodeCtx &n) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
  setTensor(n, 0, **x);
  return success();
}

LogicalResult Importer::dequantize(NodeCtx &n) {
  // y = (x - zero_point) * scale, per tensor or along `axis`.
  auto x = required(n, 0);
  auto s = required(n, 1);
  if (failed(x) || failed(s))
    return failure();
  SmallVector<int64_t> shape = (*x)->shape;
  int64_t rank = shape.size();
  auto expandParam = [&](Tensor &t) -> Value {
    Value v = asF32(t, n.loc);
    if (t.shape.size() == 1 && rank > 0 && numElements(t.shape) != 1) {
      auto axis =
          normalizeAxis(n.getInt("axis", 1), rank, n, "attribute 'axis'");
      if (failed(axis))
        return Value();
      SmallVector<int64_t> bshape(rank, 1);
      bshape[*axis] = t.shape[0];
      v = reshapeTo(v, bshape, n.loc);
    }
    return broadcast(v, shape, n.loc);
  };
  Value xv = asF32(**x, n.loc);
  if (Tensor *zp = n.in(2)) {
    Value z = expandParam(*zp);
    if (!z)
      return failure();
    xv = llm::SubOp::create(b, n.loc, xv.getType(), xv, z);
  }
  Value sv = expandParam(**s);
  if (!sv)
    return failure();
  setValue(n, 0, llm::MulOp::create(b, n.loc, xv.getType(), xv, sv));
  return success();
}

LogicalResult Importer::quantize(NodeCtx &n) {
  // y = saturate(round_half_even(x / scale) + zero_point), built from
  // primitives: truncation by llm.convert, then the half-way correction.
  auto x = required(n, 0);
  auto s = required(n, 1);
  if (failed(x) || failed(s))
    return failure();
  Tensor *zp = n.in(2);
  int32_t outType = zp ? zp->onnxType : int32_t(::onnx::TensorProto::UINT8);
  double lo, hi;
  if (outType == ::onnx::TensorProto::UINT8)
    lo = 0, hi = 255;
  else if (outType == ::onnx::TensorProto::INT8)
    lo = -128, hi = 127;
  else
    return fail(n, "only uint8 and int8 outputs are supported (zero point is " +
                       typeName(outType) + ")");
  SmallVector<int64_t> shape = (*x)->shape;
  int64_t rank = shape.size();
  auto expandParam = [&](Tensor &t) -> Value {
    Value v = asF32(t, n.loc);
    if (t.shape.size() == 1 && rank > 0 && numElements(t.shape) != 1) {
      auto axis =
          normalizeAxis(n.getInt("axis", 1), rank, n, "attribute 'axis'");
      if (failed(axis))
        return Value();
      SmallVector<int64_t> bshape(rank, 1);
      bshape[*axis] = t.shape[0];
      v = reshapeTo(v, bshape, n.loc);
    }
    return broadcast(v, shape, n.loc);
  };
  Value sv = expandParam(**s);
  if (!sv)
    return failure();
  Type ft = tensorType(shape, Kind::F32);
  Location l = n.loc;
  auto trunc = [&](Value v) {
    return convertTo(convertTo(v, Kind::I64, l), Kind::F32, l);
  };
  auto splat = [&](double v) { return splatConstant(shape, Kind::F32, v, l); };
  auto cmp = [&](llm::ComparePredicate p, Value a, Value c) -> Value {
    return llm::CompareOp::create(b, l, tensorType(shape, Kind::I1), p, a, c);
  };
  Value r = llm::DivOp::create(b, l, ft, asF32(**x, l), sv);
  Value t = trunc(r);
  Value d = llm::SubOp::create(b, l, ft, r, t);
  Value ad = llm::AbsOp::create(b, l, ft, d);
  Value sign = llm::SelectOp::create(
      b, l, ft, cmp(llm::ComparePredicate::Lt, d, splat(0)), splat(-1),
      splat(1));
  Value halfT = llm::MulOp::create(b, l, ft, t, splat(0.5));
  Value odd = cmp(llm::ComparePredicate::Ne, halfT, trunc(halfT));
  Value tie = cmp(llm::ComparePredicate::Eq, ad, splat(0.5));
  Value tieUp = llm::SelectOp::create(b, l, tie.getType(), tie, odd,
                                      splatConstant(shape, Kind::I1, 0, l));
  Value up = llm::SelectOp::create(
      b, l, tie.getType(), cmp(llm::ComparePredicate::Gt, ad, splat(0.5)),
      splatConstant(shape, Kind::I1, 1, l), tieUp);
  Value q = llm::SelectOp::create(b, l, ft, up,
                                  llm::AddOp::create(b, l, ft, t, sign), t);
  if (zp) {
    Value z = expandParam(*zp);
    if (!z)
      return failure();
    q = llm::AddOp::create(b, l, ft, q, z);
  }
  q = llm::MaximumOp::create(b, l, ft, q, splat(lo));
  q = llm::MinimumOp::create(b, l, ft, q, splat(hi));
  setValue(n, 0, convertTo(q, Kind::I64, l));
  return success();
}

//===----------------------------------------------------------------------===//
// Opset 23 LLM functions
//===----------------------------------------------------------------------===//

LogicalResult Importer::rotaryEmbedding(NodeCtx &n) {
  auto x = required(n, 0);
  auto cosT = required(n, 1);
  auto sinT = required(n, 2);
  if (failed(x) || failed(cosT) || failed(sinT))
    return failure();
  SmallVector<int64_t> in = (*x)->shape;
  int64_t numHeads = n.getInt("num_heads", 0);
  bool interleaved = n.getInt("interleaved", 0);
  // Work in [B, S, H, D]: 4-D inputs are [B, H, S, D], 3-D are [B, S, H*D].
  Value v = asF32(**x, n.loc);
  int64_t bsz, seq, heads, dim;
  if (in.size() == 4) {
    bsz = in[0], heads = in[1], seq = in[2], dim = in[3];
    v = transposeBy(v, {0, 2, 1, 3}, n.loc);
  } else if (in.size() == 3) {
    if (numHeads <= 0 || in[2] % numHeads)
      return fail(n, "a 3-D input needs num_heads dividing its hidden size");
    bsz = in[0], seq = in[1], heads = numHeads, dim = in[2] / numHeads;
    v = reshapeTo(v, {bsz, seq, heads, dim}, n.loc);
  } else {
    return fail(n, "input must be 3-D or 4-D");
  }
  int64_t rot = n.getInt("rotary_embedding_dim", 0);
  if (rot == 0)
    rot = dim;
  if (rot % 2 || rot > dim)
    return fail(n, formatv("rotary_embedding_dim {0} must be even and at most "
                           "the head size {1}",
                           rot, dim));
  int64_t half = rot / 2;
  // cos/sin: [B, S, rot/2] directly, or gathered by position_ids [B, S].
  auto table = [&](Tensor &t) -> Value {
    Value c = asF32(t, n.loc);
    if (Tensor *pos = n.in(3)) {
      if (t.shape.size() != 2 || t.shape[1] != half ||
          pos->shape != SmallVector<int64_t>{bsz, seq}) {
        (void)fail(n, "with position_ids the caches must be [max_pos, " +
                          Twine(half) + "] and position_ids [B, S]");
        return Value();
      }
      Value ids = reshapeTo(materialize(*pos, n.loc), {bsz * seq}, n.loc);
      c = llm::GatherOp::create(b, n.loc,
                                tensorType({bsz * seq, half}, Kind::F32), c,
                                ids, b.getI64IntegerAttr(0));
    } else if (numElements(t.shape) != bsz * seq * half) {
      (void)fail(n, "the caches must be [B, S, " + Twine(half) + "]");
      return Value();
    }
    c = reshapeTo(c, {bsz, seq, 1, half}, n.loc);
    return broadcast(c, {bsz, seq, heads, half}, n.loc);
  };
  Value cosV = table(**cosT), sinV = table(**sinT);
  if (!cosV || !sinV)
    return failure();
  auto sliceLast = [&](Value t, int64_t start, int64_t size) {
    return llm::SliceOp::create(
        b, n.loc, tensorType({bsz, seq, heads, size}, Kind::F32), t,
        b.getI64IntegerAttr(3), b.getI64IntegerAttr(start),
        b.getI64IntegerAttr(size));
  };
  Value x1, x2;
  if (interleaved) {
    if (failed(checkFoldable(n, {half}, "the even/odd positions")))
      return failure();
    TensorData even, odd;
    even.kind = odd.kind = Kind::I64;
    even.shape = odd.shape = {half};
    for (int64_t i = 0; i < half; ++i) {
      even.i64.push_back(2 * i);
      odd.i64.push_back(2 * i + 1);
    }
    Type t = tensorType({bsz, seq, heads, half}, Kind::F32);
    x1 = llm::GatherOp::create(b, n.loc, t, v, constantValue(even, n.loc),
                               b.getI64IntegerAttr(3));
    x2 = llm::GatherOp::create(b, n.loc, t, v, constantValue(odd, n.loc),
                               b.getI64IntegerAttr(3));
  } else {
    x1 = sliceLast(v, 0, half);
    x2 = sliceLast(v, half, half);
  }
  Type ht = x1.getType();
  Value real = llm::SubOp::create(b, n.loc, ht,
                                  llm::MulOp::create(b, n.loc, ht, cosV, x1),
                                  llm::MulOp::create(b, n.loc, ht, sinV, x2));
  Value imag = llm::AddOp::create(b, n.loc, ht,
                                  llm::MulOp::create(b, n.loc, ht, sinV, x1),
                                  llm::MulOp::create(b, n.loc, ht, cosV, x2));
  Value rotated;
  if (interleaved) {
    Value r = reshapeTo(real, {bsz, seq, heads, half, 1}, n.loc);
    Value i = reshapeTo(imag, {bsz, seq, heads, half, 1}, n.loc);
    Value pairs = llm::ConcatOp::create(
        b, n.loc, tensorType({bsz, seq, heads, half, 2}, Kind::F32),
        ValueRange{r, i}, b.getI64IntegerAttr(4));
    rotated = reshapeTo(pairs, {bsz, seq, heads, rot}, n.loc);
  } else {
    rotated = llm::ConcatOp::create(
        b, n.loc, tensorType({bsz, seq, heads, rot}, Kind::F32),
        ValueRange{real, imag}, b.getI64IntegerAttr(3));
  }
  if (rot < dim)
    rotated = llm::ConcatOp::create(
        b, n.loc, tensorType({bsz, seq, heads, dim}, Kind::F32),
        ValueRange{rotated, sliceLast(v, rot, dim - rot)},
        b.getI64IntegerAttr(3));
  if (in.size() == 4)
    rotated = transposeBy(rotated, {0, 2, 1, 3}, n.loc);
  setValue(n, 0, reshapeTo(rotated, in, n.loc));
  return success();
}

LogicalResult Importer::attention(NodeCtx &n) {
  auto q = required(n, 0);
  auto k = required(n, 1);
  auto v = required(n, 2);
  if (failed(q) || failed(k) || failed(v))
    return failure();
  if (n.in(4) || n.in(5) || n.outputUsed(1) || n.outputUsed(2) ||
      n.outputUsed(3))
    return fail(n, "past_key/past_value, present_* and qk_matmul_output are "
                   "not supported");
  if (n.getFloat("softcap", 0.0f) != 0.0f)
    return fail(n, "softcap is not supported");
  size_t rank = (*q)->shape.size();
  if (rank != (*k)->shape.size() || rank != (*v)->shape.size() ||
      (rank != 3 && rank != 4))
    return fail(n, "Q, K and V must all be 3-D or all 4-D");
  // To [B, heads, S, D].
  auto heads4 = [&](Tensor &t, int64_t numHeads, Value &out) -> LogicalResult {
    Value val = asF32(t, n.loc);
    if (rank == 4) {
      out = val;
      return success();
    }
    if (numHeads <= 0 || t.shape[2] % numHeads)
      return fail(n, "3-D inputs need q_num_heads / kv_num_heads dividing "
                     "the hidden size");
    int64_t d = t.shape[2] / numHeads;
    val = reshapeTo(val, {t.shape[0], t.shape[1], numHeads, d}, n.loc);
    out = transposeBy(val, {0, 2, 1, 3}, n.loc);
    return success();
  };
  Value qv, kv, vv;
  if (failed(heads4(**q, n.getInt("q_num_heads", 0), qv)) ||
      failed(heads4(**k, n.getInt("kv_num_heads", 0), kv)) ||
      failed(heads4(**v, n.getInt("kv_num_heads", 0), vv)))
    return failure();
  SmallVector<int64_t> qs(shapeOf(qv)), ks(shapeOf(kv)), vs(shapeOf(vv));
  int64_t bsz = qs[0], hq = qs[1], lq = qs[2], d = qs[3];
  int64_t hk = ks[1], lk = ks[2], dv = vs[3];
  if (ks[0] != bsz || vs[0] != bsz || ks[3] != d || vs[1] != hk ||
      vs[2] != lk || hk == 0 || hq % hk)
    return fail(n, "inconsistent Q/K/V shapes " + shapeStr(qs) + ", " +
                       shapeStr(ks) + ", " + shapeStr(vs));
  // Grouped-query attention: each K/V head serves hq / hk query heads.
  auto repeatHeads = [&](Value t, int64_t last) {
    if (hk == hq)
      return t;
    int64_t g = hq / hk;
    t = reshapeTo(t, {bsz, hk, 1, lk, last}, n.loc);
    t = broadcast(t, {bsz, hk, g, lk, last}, n.loc);
    return reshapeTo(t, {bsz, hq, lk, last}, n.loc);
  };
  kv = repeatHeads(kv, d);
  vv = repeatHeads(vv, dv);
  Value kt = transposeBy(kv, {0, 1, 3, 2}, n.loc);
  Value scores = llm::MatmulOp::create(
      b, n.loc, tensorType({bsz, hq, lq, lk}, Kind::F32), qv, kt);
  float scale = n.getFloat("scale", 1.0f / std::sqrt(float(d)));
  scores = llm::ScaleOp::create(b, n.loc, scores.getType(), scores,
                                b.getF32FloatAttr(scale));
  SmallVector<int64_t> sshape = {bsz, hq, lq, lk};
  if (Tensor *mask = n.in(3)) {
    Value m = materialize(*mask, n.loc);
    if (mask->kind == Kind::I1) {
      m = broadcast(m, sshape, n.loc);
      Value ninf = splatConstant(sshape, Kind::F32, -INFINITY, n.loc);
      if (!m)
        return failure();
      scores =
          llm::SelectOp::create(b, n.loc, scores.getType(), m, scores, ninf);
    } else {
      m = broadcast(convertTo(m, Kind::F32, n.loc), sshape, n.loc);
      if (!m)
        return failure();
      scores = llm::AddOp::create(b, n.loc, scores.getType(), scores, m);
    }
  }
  if (n.getInt("is_causal", 0)) {
    // Query i sees keys j <= i (upper-left aligned, as without a past).
    if (failed(checkFoldable(n, {lq, lk}, "the causal mask")))
      return failure();
    TensorData tri;
    tri.kind = Kind::I1;
    tri.shape = {lq, lk};
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lk; ++j)
        tri.i64.push_back(j <= i);
    Value m = broadcast(constantValue(tri, n.loc), sshape, n.loc);
    Value ninf = splatConstant(sshape, Kind::F32, -INFINITY, n.loc);
    scores = llm::SelectOp::create(b, n.loc, scores.getType(), m, scores, ninf);
  }
  Value probs = llm::SoftmaxOp::create(b, n.loc, scores.getType(), scores,
                                       b.getI64IntegerAttr(3));
  Value y = llm::MatmulOp::create(
      b, n.loc, tensorType({bsz, hq, lq, dv}, Kind::F32), probs, vv);
  if (rank == 3) {
    y = transposeBy(y, {0, 2, 1, 3}, n.loc);
    y = reshapeTo(y, {bsz, lq, hq * dv}, n.loc);
  }
  setValue(n, 0, y);
  return success();
}

//===----------------------------------------------------------------------===//
// The graph
//===----------------------------------------------------------------------===//

Expected<ImportedModel> Importer::run() {
  const ::onnx::GraphProto &g = model.graph();
  for (const auto &op : model.opset_import())
    opsets[op.domain() == "ai.onnx" ? "" : op.domain()] = op.version();
  if (!opsets.count(""))
    opsets[""] = 1;

  auto nodeLabel = [](const ::onnx::NodeProto &node) {
    if (!node.name().empty())
      return node.name();
    return node.output_size() ? node.output(0) : std::string("<unnamed>");
  };

  // Every unsupported op of the model, reported together.
  {
    struct Miss {
      std::string key;
      int64_t count = 0;
      SmallVector<std::string, 3> names;
    };
    std::vector<Miss> misses;
    for (const auto &node : g.node()) {
      StringRef domain = defaultDomain(node.domain());
      int64_t opset = opsets.lookup(domain);
      if (findRule(domain, node.op_type(), opset))
        continue;
      std::string key = (domain.empty() ? "" : domain.str() + ".") +
                        node.op_type() + " (opset " + std::to_string(opset) +
                        ")";
      auto it =
          llvm::find_if(misses, [&](const Miss &m) { return m.key == key; });
      if (it == misses.end()) {
        misses.push_back({key, 0, {}});
        it = std::prev(misses.end());
      }
      ++it->count;
      if (it->names.size() < 3)
        it->names.push_back(nodeLabel(node));
    }
    if (!misses.empty()) {
      std::string msg =
          formatv("{0}: {1} unsupported op(s): ", path, misses.size());
      for (auto [i, m] : llvm::enumerate(misses)) {
        msg += (i ? "; " : "") + m.key + " x" + std::to_string(m.count) +
               " (first: " + llvm::join(m.names, ", ") + ")";
      }
      return makeError(msg);
    }
  }

  auto module = ModuleOp::create(UnknownLoc::get(&ctx));
  OwningOpRef<ModuleOp> owned(module);
  b.setInsertionPointToEnd(module.getBody());

  // Initializers.
  llvm::StringSet<> initNames;
  ExternalFiles externalFiles;
  for (const auto &t : g.initializer()) {
    // A weight's values are not needed at import time: keep its bytes only.
    int64_t count = 1;
    bool valid = true;
    for (int64_t dim : t.dims()) {
      valid &= dim >= 0;
      if (dim > 0)
        count = count > INT64_MAX / dim ? INT64_MAX : count * dim;
      else
        count = 0;
    }
    bool isWeight = valid && kindOf(t.data_type()) == Kind::F32 &&
                    count > options.maxInlineElements;
    auto d = decodeTensor(t, baseDir, path, "initializer", &externalFiles,
                          /*bytesOnly=*/isWeight);
    if (!d)
      return d.takeError();
    initNames.insert(t.name());
    initializers.push_back(std::make_unique<DecodedTensor>(std::move(*d)));
    const DecodedTensor &init = *initializers.back();
    Tensor tensor;
    tensor.onnxType = init.elemType;
    tensor.kind = init.data.kind;
    tensor.shape = init.data.shape;
    if (isWeight)
      tensor.initializer = &init;
    else
      tensor.constant = std::shared_ptr<const TensorData>(
          std::shared_ptr<const TensorData>(), &init.data);
    counted.insert(&init.data);
    tensors[t.name()] = std::move(tensor);
  }
  if (g.sparse_initializer_size())
    return makeError(path + ": sparse initializers are not supported");

  // Arguments: graph inputs that are not initializers.
  SmallVector<Type> argTypes;
  SmallVector<int32_t> argOnnxTypes;
  // Symbolic dimension name -> (size, first input naming it, its dimension).
  std::map<std::string, std::tuple<int64_t, std::string, int64_t>> dimParams;
  for (const auto &in : g.input()) {
    if (initNames.contains(in.name()))
      continue;
    if (!in.type().has_tensor_type())
      return makeError(path + ": graph input '" + in.name() +
                       "' is not a tensor (sequences, maps and optionals are "
                       "not supported)");
    const auto &tt = in.type().tensor_type();
    auto kind = kindOf(tt.elem_type());
    if (!kind)
      return makeError(path + ": graph input '" + in.name() +
                       "' has element type " + typeName(tt.elem_type()) +
                       ", which is not supported");
    auto given = options.inputShapes.find(in.name());
    const TensorData *example = nullptr;
    if (options.exampleInputs) {
      auto it = options.exampleInputs->find(in.name());
      if (it != options.exampleInputs->end())
        example = &it->second;
    }
    // The declared shape (symbolic dimensions -1) and the dimension names.
    SmallVector<int64_t> declared;
    SmallVector<std::string> params;
    bool symbolic = !tt.has_shape();
    for (const auto &dim : tt.shape().dim()) {
      bool fixed = dim.has_dim_value();
      if (fixed && dim.dim_value() < 0)
        return makeError(formatv("{0}: graph input '{1}': dimension {2} is "
                                 "{3}; dimensions must be non-negative",
                                 path, in.name(), declared.size(),
                                 dim.dim_value())
                             .str());
      symbolic |= !fixed;
      declared.push_back(fixed ? dim.dim_value() : -1);
      params.push_back(fixed ? "" : dim.dim_param());
    }
    auto fits = [&](ArrayRef<int64_t> s) {
      if (!tt.has_shape())
        return true;
      if (s.size() != declared.size())
        return false;
      for (auto [want, got] : llvm::zip_equal(declared, s))
        if (want >= 0 && want != got)
          return false;
      return true;
    };
    SmallVector<int64_t> shape = declared;
    if (given != options.inputShapes.end()) {
      if (!fits(given->second))
        return makeError(path + ": the shape " + shapeStr(given->second) +
                         " given for graph input '" + in.name() +
                         "' does not fit its declared shape " +
                         shapeStr(declared));
      shape.assign(given->second.begin(), given->second.end());
    } else if (symbolic && example) {
      // Symbolic dimensions (dynamic_axes) take the example's sizes; the
      // function is specialised to them and the interpreter checks every
      // input's shape against its argument type at run time.
      if (!fits(example->shape))
        return makeError(path + ": the example value of graph input '" +
                         in.name() + "' has shape " + shapeStr(example->shape) +
                         ", which does not fit its declared shape " +
                         shapeStr(declared));
      shape.assign(example->shape.begin(), example->shape.end());
    } else if (!tt.has_shape()) {
      return makeError(path + ": graph input '" + in.name() +
                       "' has no shape; the importer needs static shapes "
                       "(give one with --input-shape, or example inputs "
                       "with --example-inputs)");
    } else if (symbolic) {
      size_t first = llvm::find(declared, -1) - declared.begin();
      return makeError(
          path + ": graph input '" + in.name() + "' has " +
          (params[first].empty()
               ? "an unnamed symbolic dimension (" + std::to_string(first) + ")"
               : "a symbolic dimension '" + params[first] + "'") +
          "; the importer needs static shapes (give one "
          "with --input-shape " +
          in.name() + "=..., or example inputs with --example-inputs)");
    }
    // ONNX names a dimension to say that every tensor naming it has the
    // same size: the sizes chosen for one name must agree.
    for (auto [i, param] : llvm::enumerate(params)) {
      if (param.empty() || i >= shape.size())
        continue;
      auto [it, inserted] =
          dimParams.try_emplace(param, shape[i], in.name(), int64_t(i));
      auto &[size, firstInput, firstDim] = it->second;
      if (!inserted && size != shape[i])
        return makeError(formatv("{0}: symbolic dimension '{1}' is {2} in "
                                 "graph input '{3}' (dimension {4}) but {5} "
                                 "in graph input '{6}' (dimension {7}); "
                                 "dimensions of one name must have one size",
                                 path, param, size, firstInput, firstDim,
                                 shape[i], in.name(), i)
                             .str());
    }
    if (std::string problem = shapeProblem(shape); !problem.empty())
      return makeError(path + ": graph input '" + in.name() + "': shape " +
                       shapeStr(shape) + ": " + problem);
    argTypes.push_back(tensorType(shape, *kind));
    argNames.push_back(in.name());
    argOnnxTypes.push_back(tt.elem_type());
  }
  for (const auto &[name, shape] : options.inputShapes)
    if (!llvm::is_contained(argNames, name))
      return makeError(path + ": --input-shape names '" + name +
                       "', which is not a graph input");
  auto func = func::FuncOp::create(
      b, NameLoc::get(b.getStringAttr(g.name().empty() ? "graph" : g.name())),
      "forward", b.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  for (auto [i, name] : llvm::enumerate(argNames)) {
    Tensor t;
    t.onnxType = argOnnxTypes[i];
    t.value = entry->getArgument(i);
    t.kind = kindOfType(argTypes[i]);
    auto shape = cast<RankedTensorType>(argTypes[i]).getShape();
    t.shape.assign(shape.begin(), shape.end());
    // A value given for the input (`what`) must have its shape and kind.
    auto given = [&](const std::map<std::string, TensorData> *values,
                     StringRef what) -> Expected<const TensorData *> {
      if (!values)
        return nullptr;
      auto it = values->find(name);
      if (it == values->end())
        return nullptr;
      if (it->second.kind != t.kind ||
          ArrayRef<int64_t>(it->second.shape) != ArrayRef<int64_t>(t.shape))
        return makeError(formatv("{0}: {1} graph input '{2}' has shape {3}, "
                                 "the input is {4}{5}",
                                 path, what, name, shapeStr(it->second.shape),
                                 shapeStr(t.shape),
                                 it->second.kind != t.kind
                                     ? " (and the element types differ)"
                                     : "")
                             .str());
      return &it->second;
    };
    auto bound = given(options.inputValues, "the value given for");
    if (!bound)
      return bound.takeError();
    t.bound = *bound;
    if (auto example = given(options.exampleInputs, "the example value of");
        !example)
      return example.takeError();
    tensors[name] = std::move(t);
  }

  // Diagnostics from op builders (broadcast errors) land in `error`.
  // Diagnostics from op builders and the verifier are located at a node.
  const ::onnx::NodeProto *current = nullptr;
  ScopedDiagnosticHandler diag(&ctx, [&](Diagnostic &d) {
    if (!error.empty())
      return success();
    if (current)
      error = formatv("{0}: node '{1}' ({2}): {3}", path, nodeLabel(*current),
                      current->op_type(), d.str());
    else if (auto name = dyn_cast<NameLoc>(d.getLocation()))
      error =
          (path + ": at '" + name.getName().getValue() + "': " + d.str()).str();
    else
      error = path + ": " + d.str();
    return success();
  });
  llvm::StringSet<> produced;

  for (const auto &node : g.node()) {
    StringRef domain = defaultDomain(node.domain());
    int64_t opset = opsets.lookup(domain);
    const OpRule *rule = findRule(domain, node.op_type(), opset);
    std::string label = nodeLabel(node);
    NodeCtx n{node, opset, NameLoc::get(b.getStringAttr(label)), label, {}};
    for (const std::string &in : node.input()) {
      if (in.empty()) {
        n.inputs.push_back(nullptr);
        continue;
      }
      auto it = tensors.find(in);
      if (it == tensors.end())
        return makeError(formatv("{0}: node '{1}' ({2}): input '{3}' is not "
                                 "produced by any earlier node, initializer "
                                 "or graph input",
                                 path, label, node.op_type(), in)
                             .str());
      n.inputs.push_back(&it->second);
    }
    for (const std::string &out : node.output())
      if (!out.empty() &&
          (!produced.insert(out).second || initNames.contains(out) ||
           llvm::is_contained(argNames, out)))
        return makeError(formatv("{0}: node '{1}' ({2}): output '{3}' is "
                                 "already defined (ONNX graphs assign each "
                                 "tensor once)",
                                 path, label, node.op_type(), out)
                             .str());
    current = &node;
    if (failed((this->*rule->handler)(n)) || failed(checkOutputs(n)) ||
        !error.empty()) {
      if (error.empty())
        error = formatv("{0}: node '{1}' ({2}): import failed", path, label,
                        node.op_type());
      return makeError(error);
    }
  }

  current = nullptr;

  // Results.
  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const auto &out : g.output()) {
    auto it = tensors.find(out.name());
    if (it == tensors.end())
      return makeError(path + ": graph output '" + out.name() +
                       "' is not produced by any node");
    Tensor &t = it->second;
    if (out.type().has_tensor_type() && out.type().tensor_type().has_shape()) {
      const auto &dims = out.type().tensor_type().shape().dim();
      bool match = dims.size() == int(t.shape.size());
      for (int i = 0; match && i < dims.size(); ++i)
        if (dims[i].has_dim_value() && dims[i].dim_value() != t.shape[i])
          match = false;
      if (!match) {
        SmallVector<int64_t> declared;
        for (const auto &d : dims)
          declared.push_back(d.has_dim_value() ? d.dim_value() : -1);
        return makeError(path + ": graph output '" + out.name() +
                         "' is declared " + shapeStr(declared) +
                         " but computes " + shapeStr(t.shape));
      }
    }
    Location loc = NameLoc::get(b.getStringAttr(out.name()));
    Value v = materialize(t, loc);
    results.push_back(v);
    resultTypes.push_back(v.getType());
  }
  b.setInsertionPointToEnd(entry);
  func::ReturnOp::create(b, UnknownLoc::get(&ctx), results);
  func.setType(b.getFunctionType(argTypes, resultTypes));

  if (failed(verify(module)) || !error.empty())
    return makeError(error.empty() ? path + ": the imported IR does not verify"
                                   : error);
  ImportedModel result;
  result.module = std::move(owned);
  result.weights = std::move(weights);
  return result;
}

} // namespace

void pimc::onnx::registerImportDialects(MLIRContext &context) {
  context
      .loadDialect<llm::LLMDialect, func::FuncDialect, arith::ArithDialect>();
}

Expected<ImportedModel>
pimc::onnx::importModelFile(MLIRContext &context, StringRef path,
                            const ImportOptions &options) {
  registerImportDialects(context);
  auto model = parseModelFile(path);
  if (!model)
    return model.takeError();
  Importer importer(context, **model, path, options);
  return importer.run();
}

bool pimc::onnx::isSupportedOp(StringRef domain, StringRef opType,
                               int64_t opset) {
  return findRule(domain, opType, opset) != nullptr;
}

Expected<std::map<std::string, TensorData>>
pimc::onnx::readInputValues(StringRef modelPath, StringRef tensorsPath) {
  auto summary = summarizeModelFile(modelPath);
  if (!summary)
    return summary.takeError();
  auto tensors = ref::readHostTensors(tensorsPath, "input_");
  if (!tensors)
    return tensors.takeError();
  if (tensors->size() != summary->inputs.size())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        formatv("{0}: holds {1} input(s) (input_0, ...), the model '{2}' has "
                "{3} graph input(s)",
                tensorsPath, tensors->size(), modelPath,
                summary->inputs.size()));
  std::map<std::string, TensorData> values;
  for (auto [name, t] : llvm::zip_equal(summary->inputs, *tensors)) {
    TensorData d;
    d.name = name;
    d.shape.assign(t.shape.begin(), t.shape.end());
    if (t.dtype == ref::HostTensor::DType::F32) {
      d.kind = Kind::F32;
      d.onnxType = "FLOAT";
      d.f32 = std::move(t.f32);
    } else {
      bool isBool = t.dtype == ref::HostTensor::DType::Bool;
      d.kind = isBool ? Kind::I1 : Kind::I64;
      d.onnxType = isBool ? "BOOL" : "INT64";
      d.i64 = std::move(t.i64);
    }
    values[name] = std::move(d);
  }
  return values;
}
