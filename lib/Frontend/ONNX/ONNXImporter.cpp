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
#include "Importer.h"

using namespace mlir;
using namespace pimc;
using namespace pimc::onnx;
using namespace pimc::onnx::detail;

namespace pimc::onnx::detail {

//===----------------------------------------------------------------------===//
// The op table
//===----------------------------------------------------------------------===//

const OpRule kRules[] = {
    // Element-wise arithmetic (numpy broadcasting since opset 7).
    {"", "Add", 7, kMaxOpset, &Importer::elementwiseBinary},
    {"", "Sub", 7, kMaxOpset, &Importer::elementwiseBinary},
    {"", "Mul", 7, kMaxOpset, &Importer::elementwiseBinary},
    {"", "Div", 7, kMaxOpset, &Importer::elementwiseBinary},
    {"", "Mod", 10, kMaxOpset, &Importer::mod},
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
    {"", "CastLike", 15, kMaxOpset, &Importer::castLike},
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
    {"", "Size", 1, kMaxOpset, &Importer::size},
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
  ckpt::DType dtype = !half ? ckpt::DType::F32
                            : (init.elemType == ::onnx::TensorProto::FLOAT16
                                   ? ckpt::DType::F16
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
  SmallVector<std::string> constantNames; // inputs given as constants
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
    const TensorData *constant = nullptr;
    if (options.constantInputs) {
      auto it = options.constantInputs->find(in.name());
      if (it != options.constantInputs->end())
        constant = &it->second;
    }
    if (constant) {
      if (constant->kind != *kind || !fits(constant->shape))
        return makeError(
            path + ": the constant given for graph input '" + in.name() +
            "' has shape " + shapeString(constant->shape) +
            (constant->kind != *kind ? " and another element type" : "") +
            ", which does not fit its declared shape " + shapeString(declared));
      shape.assign(constant->shape.begin(), constant->shape.end());
    } else if (given != options.inputShapes.end()) {
      if (!fits(given->second))
        return makeError(path + ": the shape " + shapeString(given->second) +
                         " given for graph input '" + in.name() +
                         "' does not fit its declared shape " +
                         shapeString(declared));
      shape.assign(given->second.begin(), given->second.end());
    } else if (symbolic && example) {
      // Symbolic dimensions (dynamic_axes) take the example's sizes; the
      // function is specialised to them and the interpreter checks every
      // input's shape against its argument type at run time.
      if (!fits(example->shape))
        return makeError(
            path + ": the example value of graph input '" + in.name() +
            "' has shape " + shapeString(example->shape) +
            ", which does not fit its declared shape " + shapeString(declared));
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
                       shapeString(shape) + ": " + problem);
    if (constant) {
      // Not an argument: ops on it fold where they can.
      Tensor t;
      t.kind = constant->kind;
      t.shape = shape;
      t.constant = std::make_shared<const TensorData>(*constant);
      t.onnxType = tt.elem_type();
      tensors[in.name()] = std::move(t);
      constantNames.push_back(in.name());
      continue;
    }
    argTypes.push_back(tensorType(shape, *kind));
    argNames.push_back(in.name());
    argOnnxTypes.push_back(tt.elem_type());
  }
  if (options.constantInputs)
    for (const auto &[name, value] : *options.constantInputs)
      if (!llvm::is_contained(constantNames, name))
        return makeError(path + ": a constant is given for '" + name +
                         "', which is not a graph input");
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
                                 path, what, name,
                                 shapeString(it->second.shape),
                                 shapeString(t.shape),
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
           llvm::is_contained(argNames, out) ||
           llvm::is_contained(constantNames, out)))
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
  for (const std::string &name : options.outputs)
    if (llvm::none_of(g.output(),
                      [&](const auto &out) { return out.name() == name; }))
      return makeError(path + ": '" + name + "' is not a graph output");
  for (const auto &out : g.output()) {
    if (!options.outputs.empty() &&
        !llvm::is_contained(options.outputs, out.name()))
      continue;
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
                         "' is declared " + shapeString(declared) +
                         " but computes " + shapeString(t.shape));
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

} // namespace pimc::onnx::detail

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
