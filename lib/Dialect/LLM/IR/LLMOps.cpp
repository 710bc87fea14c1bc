//===- LLMOps.cpp - llm dialect operations --------------------------------===//
//
// Verifiers check shapes wherever they are static: a dynamic dimension
// (sequence length) is compatible with anything, and the interpreter checks
// it at run time.
//
//===----------------------------------------------------------------------===//
#include "VerifyHelpers.h"
#include "pimc/Dialect/LLM/IR/LLMBuilders.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Dialect/LLM/IR/RopeParams.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;
using namespace pimc::llm;
using namespace pimc::llm::detail;

namespace {

/// Shared check for y = x W^T: input [..., K], weight [N, K], result [..., N].
LogicalResult verifyProjection(Operation *op, Value input, Type weight,
                               Value result) {
  auto in = ranked(input);
  auto out = ranked(result);
  if (!in || !out || in.getRank() < 1)
    return op->emitOpError()
           << "input and result must be ranked tensors of rank >= 1";
  if (in.getRank() != out.getRank())
    return op->emitOpError() << "result rank " << out.getRank()
                             << " differs from input rank " << in.getRank();
  ArrayRef<int64_t> w = weightShape(weight);
  if (w.size() != 2)
    return op->emitOpError() << "weight must be [N, K], got rank " << w.size();
  if (!compatible(in.getShape().back(), w[1]))
    return op->emitOpError()
           << "input features " << dimStr(in.getShape().back())
           << " do not match weight K = " << w[1];
  if (!compatible(out.getShape().back(), w[0]))
    return op->emitOpError()
           << "result features " << dimStr(out.getShape().back())
           << " do not match weight N = " << w[0];
  for (int64_t i = 0; i + 1 < in.getRank(); ++i)
    if (!compatible(in.getDimSize(i), out.getDimSize(i)))
      return op->emitOpError()
             << "result dimension " << i << " does not match input";
  return success();
}

/// Data-movement ops keep the element type.
LogicalResult verifySameElementType(Operation *op, Value input, Value result) {
  Type a = getElementTypeOrSelf(input.getType());
  Type b = getElementTypeOrSelf(result.getType());
  if (a != b)
    return op->emitOpError() << "result element type " << b
                             << " must equal the input element type " << a;
  return success();
}

LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank)
    return op->emitOpError()
           << "axis " << axis << " is out of range for rank " << rank;
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Weights and layers
//===----------------------------------------------------------------------===//

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError() << "needs a non-empty checkpoint tensor name";
  if (auto t = dyn_cast<RankedTensorType>(getType()))
    if (!t.hasStaticShape())
      return emitOpError() << "weight '" << getName()
                           << "' must have a static shape, got " << t;
  return success();
}

LogicalResult EmbeddingOp::verify() {
  if (failed(requireRank(*this, getTable(), "table", 2)) ||
      failed(requireRank(*this, getIds(), "ids", 1)) ||
      failed(requireRank(*this, getResult(), "result", 2)))
    return failure();
  if (failed(requireDim(*this, getResult(), "result", 0,
                        ranked(getIds()).getDimSize(0), "tokens")) ||
      failed(requireDim(*this, getResult(), "result", 1,
                        ranked(getTable()).getDimSize(1), "hidden")))
    return failure();
  return success();
}

LogicalResult PositionsOp::verify() {
  auto t = ranked(getResult());
  if (!t || t.getRank() != 1)
    return emitOpError() << "result must be a rank-1 tensor";
  if (t.isDynamicDim(0) != bool(getCount()))
    return emitOpError() << (getCount() ? "a static result takes no count"
                                        : "a dynamic result needs a count");
  return success();
}

LogicalResult LinearOp::verify() {
  if (failed(verifyProjection(*this, getInput(), getWeight().getType(),
                              getResult())))
    return failure();
  if (Value bias = getBias()) {
    if (failed(requireRank(*this, bias, "bias", 1)) ||
        failed(requireDim(*this, bias, "bias", 0,
                          weightShape(getWeight().getType())[0], "N")))
      return failure();
  }
  return success();
}

LogicalResult LMHeadOp::verify() {
  return verifyProjection(*this, getInput(), getWeight().getType(),
                          getResult());
}

LogicalResult RMSNormOp::verify() {
  auto in = ranked(getInput());
  if (!in || in.getRank() < 1)
    return emitOpError() << "input must be a ranked tensor of rank >= 1";
  if (!getWeight() && getStyle() == NormStyle::Gemma)
    return emitOpError() << "the gemma style (1 + w) needs a weight";
  if (getWeight() &&
      (failed(requireRank(*this, getWeight(), "weight", 1)) ||
       failed(requireDim(*this, getWeight(), "weight", 0, in.getShape().back(),
                         "normalised features"))))
    return failure();
  if (getEpsilon().convertToFloat() < 0.0f)
    return emitOpError() << "epsilon must be non-negative";
  return success();
}

LogicalResult RopeOp::verify() {
  if (failed(requireRank(*this, getInput(), "input", 3)))
    return failure();
  int64_t headDim = ranked(getInput()).getDimSize(2);
  int64_t d = getRotaryDim();
  if (d <= 0 || d % 2 != 0)
    return emitOpError() << "rotary_dim must be positive and even, got " << d;
  if (!ShapedType::isDynamic(headDim) && d > headDim)
    return emitOpError() << "rotary_dim " << d << " exceeds head_dim "
                         << headDim;
  if (failed(verifyRopeAttributesPresent()))
    return failure();
  // The value rules live in one place (ref::ropeParamsProblem).
  if (std::string why = ref::ropeParamsProblem(ropeParamsOf(*this));
      !why.empty())
    return emitOpError() << why;
  return success();
}

LogicalResult RopeOp::verifyRopeAttributesPresent() {
  auto need = [&](bool present, StringRef attr) -> LogicalResult {
    if (!present)
      return emitOpError() << "rope kind '" << stringifyRopeKind(getKind())
                           << "' requires attribute '" << attr << "'";
    return success();
  };
  switch (getKind()) {
  case RopeKind::Default:
    return success();
  case RopeKind::Linear:
    return need(getFactor().has_value(), "factor");
  case RopeKind::Dynamic:
    if (failed(need(getFactor().has_value(), "factor")))
      return failure();
    return need(getMaxPositionEmbeddings().has_value(),
                "max_position_embeddings");
  case RopeKind::Yarn:
    if (failed(need(getFactor().has_value(), "factor")))
      return failure();
    return need(getOriginalMaxPositionEmbeddings().has_value(),
                "original_max_position_embeddings");
  case RopeKind::Llama3:
    if (failed(need(getFactor().has_value(), "factor")) ||
        failed(need(getLowFreqFactor().has_value(), "low_freq_factor")) ||
        failed(need(getHighFreqFactor().has_value(), "high_freq_factor")) ||
        failed(need(getOriginalMaxPositionEmbeddings().has_value(),
                    "original_max_position_embeddings")))
      return failure();
    return success();
  case RopeKind::LongRope:
    if (failed(need(getFactor().has_value(), "factor")) ||
        failed(need(getOriginalMaxPositionEmbeddings().has_value(),
                    "original_max_position_embeddings")) ||
        failed(need(getShortFactor().has_value(), "short_factor")) ||
        failed(need(getLongFactor().has_value(), "long_factor")))
      return failure();
    return success();
  }
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(requireRank(*this, getQuery(), "query", 3)) ||
      failed(requireRank(*this, getKey(), "key", 3)) ||
      failed(requireRank(*this, getValue(), "value", 3)) ||
      failed(requireRank(*this, getResult(), "result", 3)))
    return failure();
  auto q = ranked(getQuery()), k = ranked(getKey()), v = ranked(getValue());
  int64_t nh = q.getDimSize(1), nkv = k.getDimSize(1);
  if (!ShapedType::isDynamic(nh) && !ShapedType::isDynamic(nkv) &&
      (nkv == 0 || nh % nkv != 0))
    return emitOpError() << "query heads (" << nh
                         << ") must be a multiple of key/value heads (" << nkv
                         << ")";
  if (failed(requireDim(*this, getKey(), "key", 2, q.getDimSize(2),
                        "head_dim of query")) ||
      failed(requireDim(*this, getValue(), "value", 0, k.getDimSize(0),
                        "key length")) ||
      failed(requireDim(*this, getValue(), "value", 1, nkv, "key heads")) ||
      failed(requireDim(*this, getResult(), "result", 0, q.getDimSize(0),
                        "queries")) ||
      failed(requireDim(*this, getResult(), "result", 1, nh, "query heads")) ||
      failed(requireDim(*this, getResult(), "result", 2, v.getDimSize(2),
                        "value head_dim")))
    return failure();
  if (auto w = getSlidingWindow(); w && *w <= 0)
    return emitOpError() << "sliding_window must be positive, got " << *w;
  if (auto c = getLogitSoftcap(); c && c->convertToFloat() <= 0.0f)
    return emitOpError() << "logit_softcap must be positive";
  if (!getCausal() && getSlidingWindow())
    return emitOpError() << "sliding_window requires causal attention";
  if (std::optional<ArrayRef<float>> slopes = getAlibiSlopes()) {
    if (!ShapedType::isDynamic(nh) && int64_t(slopes->size()) != nh)
      return emitOpError() << "alibi_slopes has " << slopes->size()
                           << " slopes for " << nh << " query heads";
    for (auto [h, m] : llvm::enumerate(*slopes))
      if (!std::isfinite(m))
        return emitOpError() << "alibi_slopes[" << h << "] is not finite";
  }
  if (Value sinks = getSinks()) {
    auto s = ranked(sinks);
    if (s.getRank() != 1 || !compatible(s.getDimSize(0), nh))
      return emitOpError() << "sinks must be [" << dimStr(nh)
                           << "] (one logit per query head), got " << s;
  }
  if (auto c = getChunkSize(); c && *c <= 0)
    return emitOpError() << "chunk_size must be positive, got " << *c;
  if (getChunkSize() && getSlidingWindow())
    return emitOpError() << "chunk_size and sliding_window exclude each other";
  if (bool(getTemperatureFloorScale()) != bool(getTemperatureScale()))
    return emitOpError() << "temperature_floor_scale and temperature_scale "
                            "come together";
  if (auto f = getTemperatureFloorScale(); f && *f <= 0)
    return emitOpError() << "temperature_floor_scale must be positive, got "
                         << *f;
  if (auto a = getTemperatureScale(); a && !std::isfinite(a->convertToFloat()))
    return emitOpError() << "temperature_scale must be finite";
  return success();
}

/// Checks a [T, kv_heads, head_dim] tensor against a cache type.
static LogicalResult verifyAgainstCache(Operation *op, Value v, StringRef what,
                                        KVCacheType cache) {
  bool value = what == "value";
  if (failed(requireRank(op, v, what, 3)) ||
      failed(requireDim(op, v, what, 1, cache.getKvHeads(), "kv_heads")) ||
      failed(requireDim(
          op, v, what, 2, value ? cache.getValueDim() : cache.getHeadDim(),
          value && cache.getValuePrefix() ? "value_prefix" : "head_dim")))
    return failure();
  int64_t len = ranked(v).getDimSize(0);
  if (!ShapedType::isDynamic(len) && len > cache.getMaxLength())
    return op->emitOpError()
           << what << " length " << len << " exceeds the cache's max_length "
           << cache.getMaxLength();
  return success();
}

LogicalResult KVCacheAppendOp::verify() {
  auto cache = getCache().getType(); // == result type (AllTypesMatch)
  if (failed(verifyAgainstCache(*this, getKey(), "key", cache)) ||
      failed(verifyAgainstCache(*this, getValue(), "value", cache)) ||
      failed(requireDim(*this, getValue(), "value", 0,
                        ranked(getKey()).getDimSize(0), "tokens")))
    return failure();
  return success();
}

LogicalResult KVCacheReadOp::verify() {
  auto cache = getCache().getType();
  if (failed(verifyAgainstCache(*this, getKey(), "key", cache)) ||
      failed(verifyAgainstCache(*this, getValue(), "value", cache)) ||
      failed(requireDim(*this, getValue(), "value", 0,
                        ranked(getKey()).getDimSize(0), "length")))
    return failure();
  return success();
}

/// input [T, nh, K], weight [nh, N, K] ([nh, K, N] transposed), result
/// [T, nh, N].
LogicalResult HeadLinearOp::verify() {
  auto w = cast<RankedTensorType>(getWeight().getType());
  if (failed(requireRank(*this, getInput(), "input", 3)) ||
      failed(requireRank(*this, getResult(), "result", 3)))
    return failure();
  if (w.getRank() != 3)
    return emitOpError() << "weight must be [heads, N, K], got " << w;
  int64_t heads = w.getDimSize(0);
  int64_t K = w.getDimSize(getTransposeWeight() ? 1 : 2);
  int64_t N = w.getDimSize(getTransposeWeight() ? 2 : 1);
  if (failed(requireDim(*this, getInput(), "input", 1, heads, "heads")) ||
      failed(requireDim(*this, getInput(), "input", 2, K, "K")) ||
      failed(requireDim(*this, getResult(), "result", 1, heads, "heads")) ||
      failed(requireDim(*this, getResult(), "result", 2, N, "N")) ||
      failed(requireDim(*this, getResult(), "result", 0,
                        ranked(getInput()).getDimSize(0), "tokens")))
    return failure();
  return success();
}

LogicalResult GatedMLPOp::verify() {
  if (getActivation() == Activation::ClampedSwiglu)
    return emitOpError() << "clamped_swiglu (limit, alpha) is an llm.moe "
                            "expert activation";
  for (auto [what, w] : {std::pair<StringRef, Value>{"gate", getGate()},
                         {"up", getUp()},
                         {"down", getDown()}})
    if (weightShape(w.getType()).size() != 2)
      return emitOpError() << what << " weight must be 2-D, got "
                           << w.getType();
  ArrayRef<int64_t> gate = weightShape(getGate().getType());
  ArrayRef<int64_t> up = weightShape(getUp().getType());
  ArrayRef<int64_t> down = weightShape(getDown().getType());
  if (gate != up)
    return emitOpError() << "gate [" << gate[0] << ", " << gate[1]
                         << "] and up [" << up[0] << ", " << up[1]
                         << "] weights must have the same shape";
  if (down[0] != gate[1] || down[1] != gate[0])
    return emitOpError() << "down weight must be [" << gate[1] << ", "
                         << gate[0] << "], got [" << down[0] << ", " << down[1]
                         << "]";
  if (getInput().getType() != getResult().getType())
    return emitOpError() << "result type must equal the input type";
  auto in = ranked(getInput());
  if (!in || in.getRank() < 1)
    return emitOpError() << "input must be a ranked tensor of rank >= 1";
  if (!compatible(in.getShape().back(), gate[1]))
    return emitOpError() << "input features " << dimStr(in.getShape().back())
                         << " do not match the hidden size " << gate[1]
                         << " of the gate/up weights";
  return success();
}

//===----------------------------------------------------------------------===//
// Element-wise, reductions
//===----------------------------------------------------------------------===//

OpFoldResult ScaleOp::fold(FoldAdaptor) {
  if (getFactor().convertToFloat() == 1.0f)
    return getInput();
  return {};
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

LogicalResult ReduceOp::verify() {
  auto in = ranked(getInput());
  auto out = ranked(getResult());
  if (!in || !out)
    return emitOpError() << "input and result must be ranked";
  if (failed(verifyAxis(*this, getAxis(), in.getRank())))
    return failure();
  SmallVector<int64_t> expected(in.getShape());
  if (getKeepDim())
    expected[getAxis()] = 1;
  else
    expected.erase(expected.begin() + getAxis());
  if (out.getRank() != static_cast<int64_t>(expected.size()))
    return emitOpError() << "result rank " << out.getRank() << ", expected "
                         << expected.size();
  for (auto [i, e] : llvm::enumerate(expected))
    if (!compatible(out.getDimSize(i), e))
      return emitOpError() << "result dimension " << i << " is "
                           << dimStr(out.getDimSize(i)) << ", expected "
                           << dimStr(e);
  return success();
}

LogicalResult SoftmaxOp::verify() {
  auto in = ranked(getInput());
  if (!in)
    return emitOpError() << "input must be ranked";
  return verifyAxis(*this, getAxis(), in.getRank());
}

LogicalResult ArgmaxOp::verify() {
  auto in = ranked(getInput());
  auto out = ranked(getResult());
  if (!in || in.getRank() < 1)
    return emitOpError() << "input must be a ranked tensor of rank >= 1";
  if (out.getRank() != in.getRank() - 1)
    return emitOpError() << "result must drop the last dimension of the input";
  for (int64_t i = 0; i < out.getRank(); ++i)
    if (!compatible(out.getDimSize(i), in.getDimSize(i)))
      return emitOpError() << "result dimension " << i
                           << " does not match the input";
  return success();
}

//===----------------------------------------------------------------------===//
// Tensor ops
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = ranked(getInput());
  auto out = ranked(getResult());
  if (!in || !out)
    return emitOpError() << "input and result must be ranked";
  if (failed(verifySameElementType(*this, getInput(), getResult())))
    return failure();
  if (out.getNumDynamicDims() > 1)
    return emitOpError() << "at most one result dimension may be dynamic";
  if (in.hasStaticShape() && out.hasStaticShape() &&
      in.getNumElements() != out.getNumElements())
    return emitOpError() << "element count changes from " << in.getNumElements()
                         << " to " << out.getNumElements();
  if (in.hasStaticShape() != out.hasStaticShape())
    return emitOpError() << "input and result must both be static or both "
                            "have a dynamic dimension";
  // With a dynamic dimension on both sides any static parts can agree for
  // some sizes (?x6 -> ?x4 holds for an even ?); the interpreter checks the
  // element count at run time.
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

namespace {
/// reshape(reshape(x)) -> reshape(x): row-major order is preserved by both.
struct FoldReshapeChain : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<ReshapeOp>();
    if (!inner)
      return failure();
    auto src = ranked(inner.getInput());
    auto dst = ranked(op.getResult());
    if (src.hasStaticShape() != dst.hasStaticShape())
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, dst, inner.getInput());
    return success();
  }
};

/// transpose(transpose(x, p1), p2) -> transpose(x, p1 o p2).
struct ComposeTransposes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<TransposeOp>();
    if (!inner)
      return failure();
    ArrayRef<int64_t> p1 = inner.getPermutation(), p2 = op.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t i : p2)
      composed.push_back(p1[i]);
    rewriter.replaceOpWithNewOp<TransposeOp>(op, op.getType(), inner.getInput(),
                                             composed);
    return success();
  }
};
} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<FoldReshapeChain>(context);
}

LogicalResult TransposeOp::verify() {
  auto in = ranked(getInput());
  auto out = ranked(getResult());
  if (!in || !out)
    return emitOpError() << "input and result must be ranked";
  if (failed(verifySameElementType(*this, getInput(), getResult())))
    return failure();
  ArrayRef<int64_t> perm = getPermutation();
  if (out.getRank() != in.getRank())
    return emitOpError() << "result rank " << out.getRank()
                         << " must equal the input rank " << in.getRank();
  if (static_cast<int64_t>(perm.size()) != in.getRank())
    return emitOpError() << "permutation size " << perm.size()
                         << " must equal the rank " << in.getRank();
  llvm::SmallVector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return emitOpError() << "permutation must be a permutation of [0, "
                           << in.getRank() << ")";
    seen[p] = true;
  }
  for (auto [i, p] : llvm::enumerate(perm))
    if (!compatible(out.getDimSize(i), in.getDimSize(p)))
      return emitOpError() << "result dimension " << i
                           << " must be input dimension " << p << " ("
                           << dimStr(in.getDimSize(p)) << ")";
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  for (auto [i, p] : llvm::enumerate(getPermutation()))
    if (static_cast<int64_t>(i) != p)
      return {};
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<ComposeTransposes>(context);
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  auto out = ranked(getResult());
  if (!out)
    return emitOpError() << "result must be ranked";
  int64_t rank = out.getRank();
  if (failed(verifyAxis(*this, getAxis(), rank)))
    return failure();
  int64_t total = 0;
  for (Value in : getInputs()) {
    auto t = ranked(in);
    if (!t || t.getRank() != rank)
      return emitOpError() << "every input must have rank " << rank;
    if (failed(verifySameElementType(*this, in, getResult())))
      return failure();
    for (int64_t i = 0; i < rank; ++i)
      if (i != getAxis() && !compatible(t.getDimSize(i), out.getDimSize(i)))
        return emitOpError()
               << "input dimension " << i << " does not match the result";
    if (ShapedType::isDynamic(total) || t.isDynamicDim(getAxis()))
      total = ShapedType::kDynamic;
    else
      total += t.getDimSize(getAxis());
  }
  if (!compatible(total, out.getDimSize(getAxis())))
    return emitOpError() << "result dimension " << getAxis() << " must be "
                         << dimStr(total);
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  return {};
}

LogicalResult SliceOp::verify() {
  auto in = ranked(getInput());
  auto out = ranked(getResult());
  if (!in || !out || in.getRank() != out.getRank())
    return emitOpError() << "input and result must be ranked with equal rank";
  if (failed(verifyAxis(*this, getAxis(), in.getRank())))
    return failure();
  if (failed(verifySameElementType(*this, getInput(), getResult())))
    return failure();
  if (getSize() <= 0)
    return emitOpError() << "size must be positive, got " << getSize();
  int64_t dim = in.getDimSize(getAxis());
  if (!ShapedType::isDynamic(dim)) {
    int64_t start = getStart() < 0 ? dim + getStart() : getStart();
    if (start < 0 || start + getSize() > dim)
      return emitOpError() << "slice [" << getStart() << ", +" << getSize()
                           << ") is out of range for dimension size " << dim;
  } else if (getStart() < 0 && -getStart() < getSize()) {
    return emitOpError() << "a slice starting " << -getStart()
                         << " from the end cannot have size " << getSize();
  }
  for (int64_t i = 0; i < in.getRank(); ++i) {
    int64_t expected = i == getAxis() ? getSize() : in.getDimSize(i);
    if (!compatible(out.getDimSize(i), expected))
      return emitOpError() << "result dimension " << i << " must be "
                           << dimStr(expected);
  }
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  auto in = ranked(getInput());
  int64_t dim = in.getDimSize(getAxis());
  if (!ShapedType::isDynamic(dim) && getSize() == dim &&
      (getStart() == 0 || getStart() == -dim) && in == ranked(getResult()))
    return getInput();
  return {};
}

LogicalResult GatherOp::verify() {
  auto in = ranked(getInput());
  auto out = ranked(getResult());
  auto idx = ranked(getIndices());
  if (!in || !out || !idx)
    return emitOpError() << "input, indices and result must be ranked";
  if (failed(verifyAxis(*this, getAxis(), in.getRank())))
    return failure();
  SmallVector<int64_t> expected(in.getShape().take_front(getAxis()));
  llvm::append_range(expected, idx.getShape());
  llvm::append_range(expected, in.getShape().drop_front(getAxis() + 1));
  if (out.getRank() != static_cast<int64_t>(expected.size()))
    return emitOpError() << "result rank " << out.getRank() << ", expected "
                         << expected.size()
                         << " (input rank - 1 + indices rank)";
  for (auto [i, e] : llvm::enumerate(expected))
    if (!compatible(out.getDimSize(i), e))
      return emitOpError() << "result dimension " << i << " must be "
                           << dimStr(e);
  return verifySameElementType(*this, getInput(), getResult());
}

//===----------------------------------------------------------------------===//
// Primitive ops of the graph frontends
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  auto a = ranked(getLhs()), b = ranked(getRhs()), out = ranked(getResult());
  if (a.getRank() < 2 || b.getRank() < 2)
    return emitOpError() << "operands must have rank >= 2, got " << a << " and "
                         << b;
  int64_t M = a.getDimSize(a.getRank() - 2), K = a.getShape().back();
  int64_t Kb = b.getDimSize(b.getRank() - 2), N = b.getShape().back();
  if (!compatible(K, Kb))
    return emitOpError() << "contraction sizes differ: lhs has K = "
                         << dimStr(K) << ", rhs has K = " << dimStr(Kb);
  auto batch =
      broadcastShapes(a.getShape().drop_back(2), b.getShape().drop_back(2));
  if (failed(batch))
    return emitOpError() << "batch dimensions of " << a << " and " << b
                         << " do not broadcast";
  SmallVector<int64_t> expected = *batch;
  expected.push_back(M);
  expected.push_back(N);
  if (out.getRank() != static_cast<int64_t>(expected.size()))
    return emitOpError() << "result rank " << out.getRank() << ", expected "
                         << expected.size();
  for (auto [i, e] : llvm::enumerate(expected))
    if (!compatible(out.getDimSize(i), e))
      return emitOpError() << "result dimension " << i << " is "
                           << dimStr(out.getDimSize(i)) << ", expected "
                           << dimStr(e);
  return success();
}

LogicalResult BroadcastOp::verify() {
  auto in = ranked(getInput()), out = ranked(getResult());
  if (failed(verifySameElementType(*this, getInput(), getResult())))
    return failure();
  if (in.getRank() > out.getRank())
    return emitOpError() << "cannot broadcast rank " << in.getRank()
                         << " to the lower rank " << out.getRank();
  int64_t lead = out.getRank() - in.getRank();
  for (int64_t i = 0; i < in.getRank(); ++i) {
    int64_t d = in.getDimSize(i), r = out.getDimSize(lead + i);
    if (d != 1 && !compatible(d, r))
      return emitOpError() << "input dimension " << i << " (" << dimStr(d)
                           << ") must be 1 or equal result dimension "
                           << lead + i << " (" << dimStr(r) << ")";
  }
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType() &&
      ranked(getResult()).hasStaticShape())
    return getInput();
  return {};
}

namespace {
/// broadcast(broadcast(x)) -> broadcast(x): every dimension of x is 1 or
/// equal to the middle one, which is 1 or equal to the last, so x
/// broadcasts to the last shape directly.
struct ComposeBroadcasts : OpRewritePattern<BroadcastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<BroadcastOp>();
    if (!inner)
      return failure();
    rewriter.replaceOpWithNewOp<BroadcastOp>(op, op.getType(),
                                             inner.getInput());
    return success();
  }
};
} // namespace

void BroadcastOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<ComposeBroadcasts>(context);
}

LogicalResult CompareOp::verify() {
  auto in = ranked(getLhs()), out = ranked(getResult());
  if (in.getShape() != out.getShape())
    return emitOpError() << "result shape must equal the operand shape " << in;
  if (in.getElementType().isInteger(1) &&
      getPredicate() != ComparePredicate::Eq &&
      getPredicate() != ComparePredicate::Ne)
    return emitOpError() << "i1 operands only support eq and ne";
  return success();
}

LogicalResult SelectOp::verify() {
  auto cond = ranked(getCondition()), val = ranked(getTrueValue());
  if (cond.getShape() != val.getShape())
    return emitOpError() << "condition shape " << cond
                         << " must equal the value shape " << val
                         << " (broadcast it first)";
  return success();
}

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

/// Maps a possibly negative axis into [0, rank); -1 when out of range.
static int64_t normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < 0)
    axis += rank;
  return axis >= 0 && axis < rank ? axis : -1;
}

static LogicalResult verifySignedAxis(Operation *op, int64_t axis,
                                      int64_t rank) {
  if (normalizeAxis(axis, rank) < 0)
    return op->emitOpError()
           << "axis " << axis << " is out of range for rank " << rank;
  return success();
}

int64_t TopkOp::getNormalizedAxis() {
  return normalizeAxis(getAxis(), ranked(getInput()).getRank());
}

LogicalResult NonzeroOp::verify() {
  auto in = ranked(getInput());
  auto out = ranked(getResult());
  if (!in || !out || !out.hasStaticShape() || out.getRank() != 2)
    return emitOpError() << "result must be a static [count, rank] tensor";
  if (out.getDimSize(1) != in.getRank())
    return emitOpError() << "result has " << out.getDimSize(1)
                         << " index columns, the input rank is "
                         << in.getRank();
  if (in.hasStaticShape() && out.getDimSize(0) > in.getNumElements())
    return emitOpError() << "count " << out.getDimSize(0)
                         << " exceeds the input's " << in.getNumElements()
                         << " elements";
  return success();
}

LogicalResult TopkOp::verify() {
  auto in = ranked(getInput());
  if (!in || in.getRank() < 1)
    return emitOpError() << "input must be a ranked tensor of rank >= 1";
  if (failed(verifySignedAxis(*this, getAxis(), in.getRank())))
    return failure();
  int64_t axis = getNormalizedAxis();
  int64_t n = in.getDimSize(axis);
  if (getK() < 1)
    return emitOpError() << "k must be positive, got " << getK();
  if (!ShapedType::isDynamic(n) && getK() > n)
    return emitOpError() << "k = " << getK() << " exceeds the axis size " << n;
  SmallVector<int64_t> expected(in.getShape());
  expected[axis] = getK();
  for (auto [what, v] : {std::pair<StringRef, Value>{"values", getValues()},
                         {"indices", getIndices()}}) {
    auto t = ranked(v);
    if (t.getRank() != in.getRank())
      return emitOpError() << what << " must have rank " << in.getRank();
    for (auto [i, e] : llvm::enumerate(expected))
      if (!compatible(t.getDimSize(i), e))
        return emitOpError()
               << what << " dimension " << i << " is "
               << dimStr(t.getDimSize(i)) << ", expected " << dimStr(e);
  }
  return success();
}

LogicalResult CumsumOp::verify() {
  return verifySignedAxis(*this, getAxis(), ranked(getInput()).getRank());
}

int64_t LayerNormOp::getNormalizedAxis() {
  return normalizeAxis(getAxis(), ranked(getInput()).getRank());
}

LogicalResult LayerNormOp::verify() {
  auto in = ranked(getInput());
  if (!in || in.getRank() < 1)
    return emitOpError() << "input must be a ranked tensor of rank >= 1";
  if (failed(verifySignedAxis(*this, getAxis(), in.getRank())))
    return failure();
  ArrayRef<int64_t> normalized = in.getShape().drop_front(getNormalizedAxis());
  for (auto [what, v] : {std::pair<StringRef, Value>{"weight", getWeight()},
                         {"bias", getBias()}}) {
    if (!v)
      continue;
    auto t = ranked(v);
    bool ok = t.getRank() == static_cast<int64_t>(normalized.size());
    for (int64_t i = 0; ok && i < t.getRank(); ++i)
      ok = compatible(t.getDimSize(i), normalized[i]);
    if (!ok) {
      std::string shape;
      for (auto [i, d] : llvm::enumerate(normalized))
        shape += (i ? "x" : "") + dimStr(d);
      return emitOpError() << what << " " << t
                           << " must have the normalised shape [" << shape
                           << "]";
    }
  }
  if (getEpsilon().convertToFloat() < 0.0f)
    return emitOpError() << "epsilon must be non-negative";
  return success();
}

LogicalResult MoEOp::verify() {
  auto in = ranked(getInput());
  if (!in || in.getRank() != 2)
    return emitOpError() << "input must be [tokens, hidden], got "
                         << getInput().getType();
  int64_t H = in.getDimSize(1);
  auto router = ranked(getRouterWeight());
  if (router.getRank() != 2)
    return emitOpError() << "router weight must be [experts, hidden], got "
                         << router;
  int64_t E = router.getDimSize(0);
  if (!compatible(router.getDimSize(1), H))
    return emitOpError() << "router weight " << router
                         << " does not match the hidden size " << dimStr(H);
  if (getGate().empty())
    return emitOpError() << "needs at least one expert";
  if (getGate().size() != getUp().size() ||
      getGate().size() != getDown().size())
    return emitOpError() << "needs as many up (" << getUp().size()
                         << ") and down (" << getDown().size()
                         << ") weights as gate weights (" << getGate().size()
                         << ")";
  // The expert count is the number of weight operands; a dynamic router
  // dimension is checked by the interpreter.
  if (!compatible(E, getGate().size()))
    return emitOpError() << "has " << getGate().size()
                         << " experts but the router scores " << E;
  E = getGate().size();
  if (Value bias = getRouterBias()) {
    auto b = ranked(bias);
    if (b.getRank() != 1 || !compatible(b.getDimSize(0), E))
      return emitOpError() << "router bias must be [" << E << "], got " << b;
  }
  if (getTopK() < 1 || getTopK() > E)
    return emitOpError() << "top_k = " << getTopK() << " must be in [1, " << E
                         << "]";
  if (getRoutedScalingFactor().convertToFloat() <= 0.0f)
    return emitOpError() << "routed_scaling_factor must be positive";
  // One gated MLP: gate and up [I, H], down [H, I].
  auto checkExpert = [&](const Twine &what, Value g, Value u,
                         Value d) -> LogicalResult {
    ArrayRef<int64_t> gs = weightShape(g.getType()),
                      us = weightShape(u.getType()),
                      ds = weightShape(d.getType());
    if (gs.size() != 2 || us.size() != 2 || ds.size() != 2)
      return emitOpError() << what << " weights must be 2-D";
    if (gs != us)
      return emitOpError() << what << " gate [" << gs[0] << ", " << gs[1]
                           << "] and up [" << us[0] << ", " << us[1]
                           << "] weights must have the same shape";
    if (!compatible(gs[1], H))
      return emitOpError() << what << " gate/up weights [" << gs[0] << ", "
                           << gs[1] << "] do not match the hidden size "
                           << dimStr(H);
    if (ds[0] != gs[1] || ds[1] != gs[0])
      return emitOpError() << what << " down weight must be [" << gs[1] << ", "
                           << gs[0] << "], got [" << ds[0] << ", " << ds[1]
                           << "]";
    return success();
  };
  for (int64_t e = 0; e < E; ++e)
    if (failed(checkExpert("expert " + Twine(e), getGate()[e], getUp()[e],
                           getDown()[e])))
      return failure();
  bool sg = static_cast<bool>(getSharedGate()),
       su = static_cast<bool>(getSharedUp()),
       sd = static_cast<bool>(getSharedDown());
  if (sg != su || sg != sd)
    return emitOpError()
           << "the shared expert needs all of gate, up and down weights";
  if (sg && failed(checkExpert("shared expert", getSharedGate(), getSharedUp(),
                               getSharedDown())))
    return failure();
  if (failed(verifyExpertBiases()) || failed(verifyActivation()) ||
      failed(verifyRouting()))
    return failure();
  if (Value g = getSharedExpertGate()) {
    if (!sg)
      return emitOpError()
             << "shared_expert_gate needs a shared expert to gate";
    ArrayRef<int64_t> gs = weightShape(g.getType());
    if (gs.size() != 2 || gs[0] != 1 || !compatible(gs[1], H))
      return emitOpError() << "shared_expert_gate weight must be [1, "
                           << dimStr(H) << "], got " << g.getType();
  }
  return success();
}

/// Gate and up biases [E, I] and down biases [E, H], all or none.
LogicalResult MoEOp::verifyExpertBiases() {
  Value g = getGateBias(), u = getUpBias(), d = getDownBias();
  if (!g && !u && !d)
    return success();
  if (!g || !u || !d)
    return emitOpError() << "expert biases need all of gate, up and down";
  int64_t E = getNumExperts();
  int64_t I = weightShape(getGate()[0].getType())[0];
  int64_t H = weightShape(getDown()[0].getType())[0];
  for (auto [bias, what, n] :
       {std::tuple<Value, StringRef, int64_t>{g, "gate", I},
        {u, "up", I},
        {d, "down", H}}) {
    auto b = ranked(bias);
    if (b.getRank() != 2 || !compatible(b.getDimSize(0), E) ||
        !compatible(b.getDimSize(1), n))
      return emitOpError() << what << " biases must be [" << E << ", "
                           << dimStr(n) << "] (a row per expert), got " << b;
  }
  return success();
}

/// DeepSeek's selection: a correction bias [E], G groups that divide E, the
/// best topk_group of them holding at least top_k experts, a group score of
/// 1..E/G experts; both score before top-k.
LogicalResult MoEOp::verifyRouting() {
  int64_t E = getNumExperts(), G = getNGroup();
  if (Value b = getScoreCorrectionBias()) {
    auto bt = ranked(b);
    if (bt.getRank() != 1 || !compatible(bt.getDimSize(0), E))
      return emitOpError() << "score_correction_bias must be [" << E
                           << "], got " << bt;
  }
  if (hasDeepSeekRouting() && getOrder() != MoERoutingOrder::ScoreThenTopk)
    return emitOpError() << "group-limited routing and score_correction_bias "
                            "select on the scores: order must be "
                            "score_then_topk";
  if (G < 1 || E % G != 0)
    return emitOpError() << "n_group = " << G << " must divide the " << E
                         << " experts";
  int64_t keep = getTopkGroup().value_or(G);
  if (keep < 1 || keep > G)
    return emitOpError() << "topk_group = " << keep << " must be in [1, " << G
                         << "]";
  if (getTopK() > keep * (E / G))
    return emitOpError() << "top_k = " << getTopK() << " exceeds the "
                         << keep * (E / G) << " experts of the " << keep
                         << " kept groups";
  if (getGroupScoreTopk() < 1 || getGroupScoreTopk() > E / G)
    return emitOpError() << "group_score_topk = " << getGroupScoreTopk()
                         << " must be in [1, " << E / G << "]";
  float eps = getRenormalizeEpsilon().convertToFloat();
  if (!(std::isfinite(eps) && eps >= 0.0f))
    return emitOpError() << "renormalize_epsilon must be finite and "
                            "non-negative";
  return success();
}

/// swiglu_limit and swiglu_alpha exactly with clamped_swiglu.
LogicalResult MoEOp::verifyActivation() {
  bool clamped = getActivation() == Activation::ClampedSwiglu;
  std::optional<APFloat> limit = getSwigluLimit(), alpha = getSwigluAlpha();
  if (clamped != limit.has_value() || clamped != alpha.has_value())
    return emitOpError() << "swiglu_limit and swiglu_alpha are set exactly "
                            "when the activation is clamped_swiglu";
  if (!clamped)
    return success();
  if (hasSharedExpert())
    return emitOpError() << "clamped_swiglu is the routed experts' "
                            "activation; a shared expert is a gated MLP "
                            "(silu, gelu, gelu_tanh)";
  float l = limit->convertToFloat(), a = alpha->convertToFloat();
  if (!(std::isfinite(l) && l > 0.0f))
    return emitOpError() << "swiglu_limit must be positive and finite, got "
                         << l;
  if (!std::isfinite(a))
    return emitOpError() << "swiglu_alpha must be finite, got " << a;
  return success();
}

#define GET_OP_CLASSES
#include "pimc/Dialect/LLM/IR/LLMOps.cpp.inc"
