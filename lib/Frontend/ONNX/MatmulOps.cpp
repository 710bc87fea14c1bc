//===- MatmulOps.cpp - MatMul, Gemm, Einsum
//---------------------------------===//
//
// ONNX op handlers; the importer's state is in Importer.h.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

namespace pimc::onnx::detail {

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
    return fail(n, "inner dimensions differ: " + shapeString(sa) + " x " +
                       shapeString(sc));
  if (sa.size() >= 2 && sc.size() >= 2 &&
      failed(llm::broadcastShapes(ArrayRef<int64_t>(sa).drop_back(2),
                                  ArrayRef<int64_t>(sc).drop_back(2))))
    return fail(n, "batch dimensions do not broadcast: " + shapeString(sa) +
                       " x " + shapeString(sc));
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

} // namespace pimc::onnx::detail
