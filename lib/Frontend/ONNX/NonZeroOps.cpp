//===- NonZeroOps.cpp - data-dependent counts and selection
//-----------------===//
//
// ONNX op handlers; the importer's state is in Importer.h.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

namespace pimc::onnx::detail {

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
    return fail(n, "operand shapes " + shapeString((*a)->shape) + " and " +
                       shapeString((*c)->shape) + " do not broadcast");
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
  return castTo(n, int32_t(n.getInt("to", 0)));
}

LogicalResult Importer::castLike(NodeCtx &n) {
  // The element type of `target_type`: known for graph inputs,
  // initializers and Cast results; integers and booleans are one kind each.
  auto like = required(n, 1);
  if (failed(like))
    return failure();
  int32_t to = (*like)->onnxType;
  if (to == 0 && (*like)->kind == Kind::I1)
    to = ::onnx::TensorProto::BOOL;
  else if (to == 0 && (*like)->kind == Kind::I64)
    to = ::onnx::TensorProto::INT64;
  else if (to == 0)
    return fail(n, "the float type of target_type '" + n.node.input(1) +
                       "' is not known at import (it is computed; f16, bf16 "
                       "and f32 round differently)");
  return castTo(n, to);
}

LogicalResult Importer::castTo(NodeCtx &n, int32_t to) {
  auto x = required(n, 0);
  if (failed(x))
    return failure();
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
  if (n.outputUsed(0)) {
    tensors[n.node.output(0)].onnxType = to;
    if (bound)
      tensors[n.node.output(0)].bound = bound.get();
  }
  return success();
}

} // namespace pimc::onnx::detail
