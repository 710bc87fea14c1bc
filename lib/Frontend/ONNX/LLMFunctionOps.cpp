//===- LLMFunctionOps.cpp - opset 23 RotaryEmbedding ---------------------===//
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

} // namespace pimc::onnx::detail
