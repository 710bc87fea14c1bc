//===- AttentionOps.cpp - opset 23+ Attention -----------------------------===//
//
// ONNX's Attention as the operator specification defines it (the onnx
// package's reference implementation is the oracle): Q, K, V in 3-D
// [B, S, heads * D] or 4-D [B, heads, S, D]; past_key / past_value prepended
// to K / V along the sequence (present_key / present_value are the results);
// GQA by repeating each kv head for consecutive query heads; scores
// (Q K^T) * scale, then softcap, then the bias: attn_mask (boolean: true
// attends; float: added; a shorter last dimension padded with false /
// -inf) and is_causal, bottom-right aligned (query i sees key j iff
// j <= i + past length); opset 25's left/right windows around each query's
// position; softmax; rows whose bias hides every key are zero;
// times V. qk_matmul_output per qk_matmul_output_mode (0: scaled product,
// 1: after softcap, 2: after the bias, 3: the probabilities).
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

namespace pimc::onnx::detail {

namespace {

/// The additive bias of one attention: a boolean `visible` mask or a float
/// `add`itive one (either may be null), [.., lq, lk] broadcastable.
struct AttentionBias {
  Value visible, add;
  /// Known at import: the [lq, lk] visibility shared by every batch and
  /// head (nullopt when a run-time or per-head mask decides it).
  std::optional<std::vector<bool>> constantRows;
};

} // namespace

LogicalResult Importer::attention(NodeCtx &n) {
  auto q = required(n, 0);
  auto k = required(n, 1);
  auto v = required(n, 2);
  if (failed(q) || failed(k) || failed(v))
    return failure();
  if (n.in(6))
    return fail(n, "nonpad_kv_seqlen (an external cache with per-batch valid "
                   "lengths) is not supported");
  if (bool(n.in(4)) != bool(n.in(5)))
    return fail(n, "past_key and past_value must be given together");
  int64_t mode = n.getInt("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3)
    return fail(
        n, formatv("qk_matmul_output_mode {0}: expected 0, 1, 2 or 3", mode)
               .str());
  float softcap = n.getFloat("softcap", 0.0f);
  if (softcap < 0)
    return fail(n, "softcap must not be negative");
  size_t rank = (*q)->shape.size();
  if (rank != (*k)->shape.size() || rank != (*v)->shape.size() ||
      (rank != 3 && rank != 4))
    return fail(n, "Q, K and V must all be 3-D or all 4-D");
  if (n.opset >= 25 && rank == 4 &&
      (n.getInt("q_num_heads", 0) || n.getInt("kv_num_heads", 0)))
    return fail(n, "q_num_heads and kv_num_heads are for 3-D inputs (opset "
                   "25 forbids them with 4-D ones)");
  // Opset 25: a window around each query's absolute position (-1: none).
  int64_t left = n.getInt("left_window_size", -1);
  int64_t right = n.getInt("right_window_size", -1);
  if (left < -1 || right < -1)
    return fail(n, "left_window_size and right_window_size must be -1 or "
                   "non-negative");
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
  // The cache: past keys and values come first along the sequence.
  int64_t past = 0;
  if (Tensor *pk = n.in(4)) {
    Tensor *pv = n.in(5);
    auto ks = shapeOf(kv), vs = shapeOf(vv);
    if (pk->shape.size() != 4 || pv->shape.size() != 4 ||
        pk->shape[0] != ks[0] || pk->shape[1] != ks[1] ||
        pk->shape[3] != ks[3] || pv->shape[0] != vs[0] ||
        pv->shape[1] != vs[1] || pv->shape[3] != vs[3] ||
        pk->shape[2] != pv->shape[2])
      return fail(n, "past_key " + shapeString(pk->shape) + " and past_value " +
                         shapeString(pv->shape) +
                         " must be [batch, kv_heads, past, head_size] of K " +
                         shapeString(ks) + " and V " + shapeString(vs));
    past = pk->shape[2];
    auto prepend = [&](Tensor &p, Value cur) {
      if (past == 0)
        return cur;
      SmallVector<int64_t> s(shapeOf(cur));
      s[2] += past;
      return Value(llm::ConcatOp::create(b, n.loc, tensorType(s, Kind::F32),
                                         ValueRange{asF32(p, n.loc), cur},
                                         b.getI64IntegerAttr(2)));
    };
    kv = prepend(*pk, kv);
    vv = prepend(*pv, vv);
  }
  setValue(n, 1, kv);
  setValue(n, 2, vv);
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
  Value kr = repeatHeads(kv, d), vr = repeatHeads(vv, dv);
  SmallVector<int64_t> sshape = {bsz, hq, lq, lk};
  RankedTensorType st = tensorType(sshape, Kind::F32);
  Value scores = llm::MatmulOp::create(b, n.loc, st, qv,
                                       transposeBy(kr, {0, 1, 3, 2}, n.loc));
  float scale = n.getFloat("scale", 1.0f / std::sqrt(float(d)));
  scores = llm::ScaleOp::create(b, n.loc, st, scores, b.getF32FloatAttr(scale));
  Value qkOut = scores;
  if (softcap > 0) {
    // softcap * tanh(s / softcap), before the bias so hidden keys stay -inf.
    Value t = llm::ScaleOp::create(b, n.loc, st, scores,
                                   b.getF32FloatAttr(1.0f / softcap));
    t = llm::TanhOp::create(b, n.loc, st, t);
    scores = llm::ScaleOp::create(b, n.loc, st, t, b.getF32FloatAttr(softcap));
    if (mode == 1)
      qkOut = scores;
  }

  // The bias: the mask (last dimension padded to lk) and the causal part.
  AttentionBias bias;
  bool causal = n.getInt("is_causal", 0) != 0;
  if (causal || left >= 0 || right >= 0) {
    // Query i sits at position i + past: causal hides keys after it, the
    // window keys more than `left` before or `right` after it.
    if (failed(checkFoldable(n, {lq, lk}, "the causal / window mask")))
      return failure();
    TensorData t;
    t.kind = Kind::I1;
    t.shape = {lq, lk};
    std::vector<bool> rows;
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lk; ++j) {
        int64_t diff = i + past - j;
        bool seen = (!causal || diff >= 0) && (left < 0 || diff <= left) &&
                    (right < 0 || -diff <= right);
        t.i64.push_back(seen);
        rows.push_back(seen);
      }
    bias.visible = broadcast(constantValue(t, n.loc), sshape, n.loc);
    bias.constantRows = rows;
  }
  if (Tensor *mask = n.in(3)) {
    SmallVector<int64_t> ms = mask->shape;
    if (ms.empty() || ms.back() > lk || ms.size() > 4)
      return fail(n, "attn_mask " + shapeString(ms) +
                         " must broadcast to [batch, q_heads, q_length, "
                         "total_length " +
                         std::to_string(lk) + "]");
    bool isBool = mask->kind == Kind::I1;
    Value m = isBool ? materialize(*mask, n.loc) : asF32(*mask, n.loc);
    if (ms.back() < lk) {
      // A shorter mask hides the keys it does not cover.
      SmallVector<int64_t> pad = ms, full = ms;
      pad.back() = lk - ms.back();
      full.back() = lk;
      Value fill = splatConstant(pad, isBool ? Kind::I1 : Kind::F32,
                                 isBool ? 0.0 : -INFINITY, n.loc);
      m = llm::ConcatOp::create(
          b, n.loc, tensorType(full, isBool ? Kind::I1 : Kind::F32),
          ValueRange{m, fill}, b.getI64IntegerAttr(ms.size() - 1));
    }
    m = broadcast(m, sshape, n.loc);
    if (!m)
      return fail(n, "attn_mask " + shapeString(ms) +
                         " does not broadcast to " + shapeString(sshape));
    bias.constantRows.reset();
    if (isBool) {
      bias.visible = bias.visible
                         ? Value(llm::SelectOp::create(
                               b, n.loc, m.getType(), bias.visible, m,
                               splatConstant(sshape, Kind::I1, 0, n.loc)))
                         : m;
    } else {
      bias.add = m;
    }
  }
  Value ninf = splatConstant(sshape, Kind::F32, -INFINITY, n.loc);
  if (bias.add)
    scores = llm::AddOp::create(b, n.loc, st, scores, bias.add);
  if (bias.visible)
    scores = llm::SelectOp::create(b, n.loc, st, bias.visible, scores, ninf);
  if (mode == 2)
    qkOut = scores;
  Value probs =
      llm::SoftmaxOp::create(b, n.loc, st, scores, b.getI64IntegerAttr(3));

  // Rows whose bias hides every key are zero (not the softmax's NaN): known
  // at import for the causal / window part, checked at run time for a mask.
  if (bias.visible || bias.add) {
    bool needGuard = true;
    if (bias.constantRows) {
      needGuard = false;
      for (int64_t i = 0; i < lq && !needGuard; ++i)
        needGuard = llvm::none_of(llvm::seq<int64_t>(0, lk), [&](int64_t j) {
          return (*bias.constantRows)[i * lk + j];
        });
    }
    if (needGuard) {
      Value additive =
          bias.visible ? Value(llm::SelectOp::create(
                             b, n.loc, st, bias.visible,
                             splatConstant(sshape, Kind::F32, 0, n.loc), ninf))
                       : splatConstant(sshape, Kind::F32, 0, n.loc);
      if (bias.add)
        additive = llm::AddOp::create(b, n.loc, st, additive, bias.add);
      SmallVector<int64_t> rows = {bsz, hq, lq, 1};
      Value top = llm::ReduceOp::create(
          b, n.loc, tensorType(rows, Kind::F32), additive,
          llm::ReduceKindAttr::get(b.getContext(), llm::ReduceKind::Max),
          b.getI64IntegerAttr(3), b.getBoolAttr(true));
      Value hidden = llm::CompareOp::create(
          b, n.loc, tensorType(rows, Kind::I1), llm::ComparePredicate::Eq, top,
          splatConstant(rows, Kind::F32, -INFINITY, n.loc));
      probs = llm::SelectOp::create(
          b, n.loc, st, broadcast(hidden, sshape, n.loc),
          splatConstant(sshape, Kind::F32, 0, n.loc), probs);
    }
  }
  if (mode == 3)
    qkOut = probs;
  setValue(n, 3, qkOut);
  Value y = llm::MatmulOp::create(
      b, n.loc, tensorType({bsz, hq, lq, dv}, Kind::F32), probs, vr);
  if (rank == 3) {
    y = transposeBy(y, {0, 2, 1, 3}, n.loc);
    y = reshapeTo(y, {bsz, lq, hq * dv}, n.loc);
  }
  setValue(n, 0, y);
  return success();
}

} // namespace pimc::onnx::detail
