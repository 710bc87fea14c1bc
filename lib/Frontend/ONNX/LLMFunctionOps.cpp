//===- LLMFunctionOps.cpp - opset 23 RotaryEmbedding and Attention
//----------===//
//
// ONNX op handlers; the importer's state is in Importer.h.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

namespace pimc::onnx::detail {

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
    return fail(n, "inconsistent Q/K/V shapes " + shapeString(qs) + ", " +
                       shapeString(ks) + ", " + shapeString(vs));
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

} // namespace pimc::onnx::detail
