//===- SynthesizeDecode.cpp - llm-synthesize-decode -----------------------===//
//
// A causal LM traced over T tokens (positions 0..T-1, no cache) becomes the
// one-token decode step the backend compiles, with a KV cache per attention
// (Passes.td). Each op is re-typed with its sequence dimension at 1; the
// sequence dimension of every value is tracked from the token ids, and an op
// is only carried over when it provably acts per position. Everything that
// does not is an error naming the op: the step is exact or it is not made.
//
//===----------------------------------------------------------------------===//
#include "pimc/Dialect/LLM/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

namespace pimc::llm {
#define GEN_PASS_DEF_SYNTHESIZEDECODE
#include "pimc/Dialect/LLM/Transforms/Passes.h.inc"
} // namespace pimc::llm

using namespace mlir;
using namespace pimc;
using namespace pimc::llm;

namespace {

/// No sequence dimension (weights, constants, values derived only from them).
constexpr int64_t kNone = -1;

int64_t normAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

RankedTensorType rankedOf(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

/// The (input, weight [V, H]) of a vocabulary projection: a linear without
/// bias, or x @ transpose(W) (an ONNX export of a tied head).
FailureOr<std::pair<Value, Value>> headOperands(Operation *def) {
  if (auto lin = dyn_cast_or_null<LinearOp>(def); lin && !lin.getBias())
    return std::pair<Value, Value>(lin.getInput(), lin.getWeight());
  auto mm = dyn_cast_or_null<MatmulOp>(def);
  auto tr = mm ? mm.getRhs().getDefiningOp<TransposeOp>() : TransposeOp();
  if (!tr || !tr.getInput().getDefiningOp<WeightOp>() ||
      rankedOf(tr.getInput()).getRank() != 2 ||
      tr.getPermutation() != ArrayRef<int64_t>{1, 0} ||
      !rankedOf(tr.getInput()).getElementType().isF32())
    return failure();
  return std::pair<Value, Value>(mm.getLhs(), tr.getInput());
}

/// Ops whose operands all have the result's sequence dimension.
bool isPerElement(Operation *op) {
  return op->hasTrait<OpTrait::Elementwise>() ||
         isa<CastOp, ConvertOp, CompareOp, SelectOp>(op);
}

/// The value of a splat constant, else null.
DenseElementsAttr splatOf(Value v) {
  DenseElementsAttr dense;
  if (!matchPattern(v, m_Constant(&dense)) || !dense.isSplat())
    return {};
  return dense;
}

/// The op that projects to the vocabulary under the logits, looking through
/// reshapes, scalings by a constant (Cohere's logit_scale, Granite's
/// 1 / logits_scaling) and a tanh (Gemma 2's final softcap) after the head,
/// which stay where they are.
Operation *headDef(Value logits) {
  Operation *def = logits.getDefiningOp();
  while (def) {
    if (isa<ReshapeOp, ScaleOp, TanhOp>(def))
      def = def->getOperand(0).getDefiningOp();
    else if (isa<MulOp, DivOp>(def) && splatOf(def->getOperand(1)))
      def = def->getOperand(0).getDefiningOp();
    else if (isa<MulOp>(def) && splatOf(def->getOperand(0)))
      def = def->getOperand(1).getDefiningOp();
    else
      break;
  }
  return def;
}

class Synthesizer {
public:
  Synthesizer(func::FuncOp src, int64_t maxContext)
      : src(src), maxContext(maxContext), b(src.getContext()) {}

  FailureOr<func::FuncOp> run();

private:
  LogicalResult fail(Operation *op, const Twine &why) {
    return op->emitError() << "cannot synthesize a decode step: " << why;
  }
  int64_t axisOf(Value v) const {
    auto it = axes.find(v);
    return it == axes.end() ? kNone : it->second;
  }
  /// `t` with its sequence dimension `axis` at 1.
  Type stepType(Type t, int64_t axis) const;
  LogicalResult visit(Operation *op);
  LogicalResult visitSpecial(Operation *op, bool &handled);
  FailureOr<int64_t> resultAxis(Operation *op);
  FailureOr<int64_t> elementwiseAxis(Operation *op);
  FailureOr<int64_t> reshapeAxis(ReshapeOp op);
  FailureOr<int64_t> broadcastAxis(BroadcastOp op);
  FailureOr<int64_t> matmulAxis(MatmulOp op);
  LogicalResult attention(AttentionOp op);
  bool isArangeT(arith::ConstantOp c, int64_t &dim) const;

  func::FuncOp src, dst;
  int64_t maxContext;
  OpBuilder b;
  IRMapping map;
  llvm::DenseMap<Value, int64_t> axes; // of the source graph's values
  int64_t T = 0;
  Value offset;
  SmallVector<Value> caches; // the appended caches, returned after the logits
};

Type Synthesizer::stepType(Type t, int64_t axis) const {
  auto r = dyn_cast<RankedTensorType>(t);
  if (axis == kNone || !r)
    return t;
  SmallVector<int64_t> shape(r.getShape());
  shape[axis] = 1;
  return r.clone(shape);
}

/// A constant integer tensor holding arange(T) along one dimension (every
/// other dimension 1): the positions of a graph traced at offset 0.
bool Synthesizer::isArangeT(arith::ConstantOp c, int64_t &dim) const {
  auto type = dyn_cast<RankedTensorType>(c.getType());
  auto dense = dyn_cast<DenseIntElementsAttr>(c.getValue());
  if (!type || !dense || !type.getElementType().isInteger(64))
    return false;
  dim = kNone;
  for (auto [i, d] : llvm::enumerate(type.getShape())) {
    if (d == T && dim == kNone)
      dim = i;
    else if (d != 1)
      return false;
  }
  if (dim == kNone)
    return false;
  int64_t i = 0;
  for (const APInt &v : dense.getValues<APInt>())
    if (v.getSExtValue() != i++)
      return false;
  return true;
}

FailureOr<int64_t> Synthesizer::elementwiseAxis(Operation *op) {
  int64_t axis = kNone;
  for (Value v : op->getOperands()) {
    int64_t a = axisOf(v);
    if (a == kNone)
      continue;
    if (axis != kNone && a != axis)
      return fail(op, "its operands have the sequence in different dims");
    axis = a;
  }
  if (axis == kNone)
    return kNone;
  for (Value v : op->getOperands())
    if (auto t = rankedOf(v); t && axisOf(v) == kNone && !splatOf(v) &&
                              (axis >= t.getRank() || t.getDimSize(axis) != 1))
      return fail(op, "an operand that does not depend on the tokens is laid "
                      "out along the sequence (a constant traced at " +
                          Twine(T) + " positions)");
  return axis;
}

/// The sequence dimension survives a reshape when the dims before it keep
/// their product and it stays a dimension of its own.
FailureOr<int64_t> Synthesizer::reshapeAxis(ReshapeOp op) {
  int64_t a = axisOf(op.getInput());
  if (a == kNone)
    return kNone;
  ArrayRef<int64_t> in = rankedOf(op.getInput()).getShape();
  ArrayRef<int64_t> out = rankedOf(op.getResult()).getShape();
  int64_t before = 1;
  for (int64_t i = 0; i < a; ++i)
    before *= in[i];
  int64_t p = 1;
  for (int64_t j = 0; j < static_cast<int64_t>(out.size()); ++j) {
    if (p == before && out[j] == T)
      return j;
    p *= out[j];
  }
  return fail(op, "the reshape merges or splits the sequence dimension");
}

/// A broadcast of a value without the sequence may create it: the one new
/// (or size-1) dimension of size T.
FailureOr<int64_t> Synthesizer::broadcastAxis(BroadcastOp op) {
  auto in = rankedOf(op.getInput());
  ArrayRef<int64_t> out = rankedOf(op.getResult()).getShape();
  int64_t lead = static_cast<int64_t>(out.size()) - in.getRank();
  if (int64_t a = axisOf(op.getInput()); a != kNone)
    return a + lead;
  int64_t axis = kNone;
  for (int64_t j = 0; j < static_cast<int64_t>(out.size()); ++j) {
    bool grown = j < lead || in.getDimSize(j - lead) == 1;
    if (!grown || out[j] != T)
      continue;
    if (axis != kNone)
      return fail(op, "more than one broadcast dimension has the sequence "
                      "length " +
                          Twine(T));
    axis = j;
  }
  return axis;
}

FailureOr<int64_t> Synthesizer::matmulAxis(MatmulOp op) {
  int64_t la = axisOf(op.getLhs()), ra = axisOf(op.getRhs());
  int64_t lr = rankedOf(op.getLhs()).getRank();
  int64_t rr = rankedOf(op.getRhs()).getRank();
  int64_t res = rankedOf(op.getResult()).getRank();
  if (la == lr - 1 || (ra != kNone && ra == rr - 2))
    return fail(op, "the product contracts over the sequence (an attention "
                    "that was not raised to llm.attention)");
  if (la != kNone && ra != kNone)
    return fail(op, "both factors depend on the sequence");
  if (la != kNone)
    return la + (res - lr);
  if (ra != kNone)
    return ra + (res - rr);
  return kNone;
}

FailureOr<int64_t> Synthesizer::resultAxis(Operation *op) {
  auto requireNotAt = [&](int64_t axis, int64_t a, StringRef what) {
    return a != kNone && axis == a
               ? fail(op, Twine(what) + " runs along the sequence "
                                        "dimension (mixes positions)")
               : success();
  };
  auto weightsOnly = [&](ValueRange vs) {
    for (Value v : vs)
      if (axisOf(v) != kNone)
        return fail(op, "a weight operand depends on the tokens");
    return success();
  };
  if (auto e = dyn_cast<EmbeddingOp>(op)) {
    if (failed(weightsOnly(e.getTable())))
      return failure();
    return axisOf(e.getIds());
  }
  // Ops on the last (feature) dimension of their first operand; the other
  // operands are weights.
  if (isa<LinearOp, LMHeadOp, GatedMLPOp, MoEOp, RMSNormOp>(op)) {
    Value x = op->getOperand(0);
    int64_t a = axisOf(x);
    if (failed(requireNotAt(rankedOf(x).getRank() - 1, a,
                            "the feature dimension")) ||
        failed(weightsOnly(op->getOperands().drop_front())))
      return failure();
    return a;
  }
  if (auto n = dyn_cast<LayerNormOp>(op)) {
    int64_t a = axisOf(n.getInput());
    int64_t rank = rankedOf(n.getInput()).getRank();
    if (failed(requireNotAt(normAxis(n.getAxis(), rank), a, "the norm")))
      return failure();
    return a;
  }
  if (auto s = dyn_cast<SoftmaxOp>(op)) {
    int64_t a = axisOf(s.getInput());
    int64_t rank = rankedOf(s.getInput()).getRank();
    if (failed(requireNotAt(normAxis(s.getAxis(), rank), a, "the softmax")))
      return failure();
    return a;
  }
  if (auto r = dyn_cast<ReduceOp>(op)) {
    int64_t a = axisOf(r.getInput());
    int64_t rank = rankedOf(r.getInput()).getRank();
    int64_t ax = normAxis(r.getAxis(), rank);
    if (failed(requireNotAt(ax, a, "the reduction")))
      return failure();
    return a == kNone || r.getKeepDim() || ax > a ? a : a - 1;
  }
  if (auto t = dyn_cast<TopkOp>(op)) {
    int64_t a = axisOf(t.getInput());
    int64_t rank = rankedOf(t.getInput()).getRank();
    if (failed(requireNotAt(normAxis(t.getAxis(), rank), a, "the top-k")))
      return failure();
    return a;
  }
  if (auto am = dyn_cast<ArgmaxOp>(op)) {
    int64_t a = axisOf(am.getInput());
    int64_t rank = rankedOf(am.getInput()).getRank();
    if (failed(requireNotAt(rank - 1, a, "the argmax")))
      return failure();
    return a;
  }
  if (auto c = dyn_cast<CumsumOp>(op)) {
    int64_t a = axisOf(c.getInput());
    int64_t rank = rankedOf(c.getInput()).getRank();
    if (failed(requireNotAt(normAxis(c.getAxis(), rank), a, "the prefix sum")))
      return failure();
    return a;
  }
  if (auto g = dyn_cast<GatherOp>(op)) {
    // result = input[:axis] + indices.shape + input[axis+1:]
    int64_t ia = axisOf(g.getInput()), xa = axisOf(g.getIndices());
    int64_t ax = normAxis(g.getAxis(), rankedOf(g.getInput()).getRank());
    int64_t irank = rankedOf(g.getIndices()).getRank();
    if (ia != kNone && xa != kNone)
      return fail(op, "both the table and the indices depend on the tokens");
    if (xa != kNone)
      return ax + xa;
    if (failed(requireNotAt(ax, ia, "the gather")))
      return failure();
    return ia == kNone || ia < ax ? ia : ia - 1 + irank;
  }
  if (auto r = dyn_cast<ReshapeOp>(op))
    return reshapeAxis(r);
  if (auto t = dyn_cast<TransposeOp>(op)) {
    int64_t a = axisOf(t.getInput());
    if (a == kNone)
      return kNone;
    for (auto [i, p] : llvm::enumerate(t.getPermutation()))
      if (p == a)
        return static_cast<int64_t>(i);
    return fail(op, "invalid permutation");
  }
  if (auto bc = dyn_cast<BroadcastOp>(op))
    return broadcastAxis(bc);
  if (auto c = dyn_cast<ConcatOp>(op)) {
    FailureOr<int64_t> a = elementwiseAxis(op);
    if (failed(a))
      return failure();
    int64_t rank = rankedOf(c.getResult()).getRank();
    if (failed(requireNotAt(normAxis(c.getAxis(), rank), *a, "the concat")))
      return failure();
    return a;
  }
  if (auto s = dyn_cast<SliceOp>(op)) {
    int64_t a = axisOf(s.getInput());
    int64_t rank = rankedOf(s.getInput()).getRank();
    if (failed(requireNotAt(normAxis(s.getAxis(), rank), a, "the slice")))
      return failure();
    return a;
  }
  if (auto mm = dyn_cast<MatmulOp>(op))
    return matmulAxis(mm);
  if (isPerElement(op))
    return elementwiseAxis(op);
  return fail(op, "'" + op->getName().getStringRef() +
                      "' is not known to act per position");
}

LogicalResult Synthesizer::attention(AttentionOp op) {
  for (Value v : {op.getQuery(), op.getKey(), op.getValue()})
    if (axisOf(v) != 0)
      return fail(op, "the attention's query, key and value must all be the "
                      "sequence's tokens (dimension 0)");
  if (!op.getCausal())
    return fail(op, "the attention is not causal: a later token would "
                    "change an earlier one's output");
  auto k = rankedOf(op.getKey()), v = rankedOf(op.getValue());
  if (k.getShape() != v.getShape())
    return fail(op, "keys and values of different shapes need two caches");
  MLIRContext *ctx = b.getContext();
  auto cacheType = KVCacheType::get(ctx, maxContext, k.getDimSize(1),
                                    k.getDimSize(2), b.getF32Type());
  Block &body = dst.getBody().front();
  Value cache = body.addArgument(cacheType, op.getLoc());
  Location loc = op.getLoc();
  Value appended =
      KVCacheAppendOp::create(b, loc, cache, map.lookup(op.getKey()),
                              map.lookup(op.getValue()), offset);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value length = arith::AddIOp::create(b, loc, offset, one);
  auto kvType = RankedTensorType::get(
      {ShapedType::kDynamic, k.getDimSize(1), k.getDimSize(2)}, b.getF32Type());
  auto read = KVCacheReadOp::create(b, loc, kvType, kvType, appended, length);
  Operation *at = b.clone(*op, map);
  at->setOperand(1, read.getKey());
  at->setOperand(2, read.getValue());
  at->getResult(0).setType(stepType(op.getType(), 0));
  map.map(op.getResult(), at->getResult(0));
  axes[op.getResult()] = 0;
  caches.push_back(appended);
  return success();
}

/// Ops the step does differently from the trace. `handled` false: the op is
/// carried over as it is, re-typed.
LogicalResult Synthesizer::visitSpecial(Operation *op, bool &handled) {
  handled = true;
  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    int64_t dim;
    if (!isArangeT(c, dim)) {
      handled = false;
      return success();
    }
    auto ty = cast<RankedTensorType>(c.getType());
    Value pos = PositionsOp::create(
        b, c.getLoc(), RankedTensorType::get({1}, ty.getElementType()), offset,
        Value());
    if (ty.getRank() != 1)
      pos = ReshapeOp::create(b, c.getLoc(), stepType(ty, dim), pos);
    map.map(c.getResult(), pos);
    axes[c.getResult()] = dim;
    return success();
  }
  if (auto r = dyn_cast<RopeOp>(op)) {
    if (axisOf(r.getInput()) != 0)
      return fail(op, "the rotary embedding's input must be the sequence's "
                      "tokens (dimension 0)");
    if (!matchPattern(r.getOffset(), m_Zero()))
      return fail(op, "the rotary embedding was traced at a non-zero offset");
    Operation *n = b.clone(*op, map);
    n->setOperand(1, offset);
    n->getResult(0).setType(stepType(r.getType(), 0));
    map.map(r.getResult(), n->getResult(0));
    axes[r.getResult()] = 0;
    return success();
  }
  if (auto at = dyn_cast<AttentionOp>(op))
    return attention(at);
  if (auto s = dyn_cast<SliceOp>(op)) {
    int64_t a = axisOf(s.getInput());
    int64_t rank = rankedOf(s.getInput()).getRank();
    if (a == kNone || normAxis(s.getAxis(), rank) != a) {
      handled = false;
      return success();
    }
    if (s.getSize() != 1 || (s.getStart() != -1 && s.getStart() != T - 1))
      return fail(op, "only the last token may be sliced along the sequence");
    // The step's one token is the last one.
    map.map(s.getResult(), map.lookup(s.getInput()));
    axes[s.getResult()] = a;
    return success();
  }
  if (isa<tensor::DimOp, arith::AddIOp, arith::SubIOp>(op))
    return fail(op, "index arithmetic on the traced sizes is not supported");
  handled = false;
  return success();
}

LogicalResult Synthesizer::visit(Operation *op) {
  if (isa<WeightOp>(op)) {
    b.clone(*op, map);
    return success();
  }
  bool handled;
  if (failed(visitSpecial(op, handled)))
    return failure();
  if (handled)
    return success();
  if (op->getNumResults() == 0 || op->getNumRegions() != 0)
    return fail(op, "'" + op->getName().getStringRef() +
                        "' is not known to act per position");
  FailureOr<int64_t> a =
      isa<arith::ConstantOp>(op) ? FailureOr<int64_t>(kNone) : resultAxis(op);
  if (failed(a))
    return failure();
  Operation *n = b.clone(*op, map);
  for (auto [old, neu] : llvm::zip(op->getResults(), n->getResults())) {
    neu.setType(stepType(old.getType(), *a));
    axes[old] = *a;
  }
  // A splat constant traced at T positions (a `1 +` materialised to the
  // activation's shape) holds the same value at every one: one position.
  if (*a != kNone && (isPerElement(op) || isa<ConcatOp>(op)))
    for (OpOperand &o : n->getOpOperands())
      if (DenseElementsAttr splat = splatOf(o.get());
          splat && rankedOf(o.get()).getRank() > *a &&
          rankedOf(o.get()).getDimSize(*a) != 1) {
        auto type = cast<RankedTensorType>(stepType(o.get().getType(), *a));
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(n);
        o.set(arith::ConstantOp::create(b, n->getLoc(), type,
                                        splat.resizeSplat(type)));
      }
  return success();
}

FailureOr<func::FuncOp> Synthesizer::run() {
  FunctionType type = src.getFunctionType();
  auto ids = type.getNumInputs() == 1
                 ? dyn_cast<RankedTensorType>(type.getInput(0))
                 : RankedTensorType();
  if (!ids || !isa<IntegerType>(ids.getElementType()) || ids.getRank() < 1 ||
      ids.getRank() > 2 || (ids.getRank() == 2 && ids.getDimSize(0) != 1) ||
      !ids.hasStaticShape())
    return src.emitError()
           << "cannot synthesize a decode step: @forward must take only the "
              "token ids ([T] or [1, T] integers), it takes "
           << type;
  int64_t seqDim = ids.getRank() - 1;
  T = ids.getDimSize(seqDim);
  if (T < 2)
    return src.emitError() << "cannot synthesize a decode step: the graph "
                              "was traced with "
                           << T
                           << " token; trace at least 2 so the sequence "
                              "dimension can be told apart";
  if (type.getNumResults() < 1)
    return src.emitError("cannot synthesize a decode step: @forward returns "
                         "nothing");

  MLIRContext *ctx = src.getContext();
  Location loc = src.getLoc();
  auto tokensType = RankedTensorType::get({1}, ids.getElementType());
  b.setInsertionPoint(src);
  dst = func::FuncOp::create(
      b, loc, "forward.step",
      FunctionType::get(ctx, {tokensType, b.getIndexType()}, {}));
  Block *body = dst.addEntryBlock();
  b.setInsertionPointToStart(body);
  offset = body->getArgument(1);
  Value tokens = body->getArgument(0);
  if (ids.getRank() == 2)
    tokens = ReshapeOp::create(b, loc, stepType(ids, 1), tokens);
  map.map(src.getArgument(0), tokens);
  axes[src.getArgument(0)] = seqDim;

  for (Operation &op : src.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (axisOf(ret.getOperand(0)) == kNone)
        return fail(ret, "the first result (the logits) does not depend on "
                         "the tokens");
      SmallVector<Value> results;
      for (Value v : ret.getOperands())
        results.push_back(map.lookup(v));
      // The projection to the vocabulary is the head.
      Operation *def = headDef(results[0]);
      if (FailureOr<std::pair<Value, Value>> head = headOperands(def);
          succeeded(head)) {
        b.setInsertionPoint(def);
        Value lm =
            LMHeadOp::create(b, def->getLoc(), def->getResult(0).getType(),
                             head->first, head->second);
        def->getResult(0).replaceAllUsesWith(lm);
        if (results[0] == def->getResult(0))
          results[0] = lm;
        Operation *tr = def->getNumOperands() == 2
                            ? def->getOperand(1).getDefiningOp<TransposeOp>()
                            : nullptr;
        def->erase();
        if (tr && tr->use_empty())
          tr->erase();
        b.setInsertionPointToEnd(body);
      }
      llvm::append_range(results, caches);
      func::ReturnOp::create(b, ret.getLoc(), results);
      SmallVector<Type> resultTypes;
      for (Value v : results)
        resultTypes.push_back(v.getType());
      dst.setFunctionType(
          FunctionType::get(ctx, body->getArgumentTypes(), resultTypes));
      return dst;
    }
    if (failed(visit(&op)))
      return failure();
  }
  return src.emitError("cannot synthesize a decode step: @forward has no "
                       "return");
}

/// A learned position table bounds the context: the rows of every table
/// the positions index.
int64_t positionTableRows(func::FuncOp f, int64_t maxContext) {
  auto fromPositions = [](Value ids) {
    while (auto r = ids.getDefiningOp<ReshapeOp>())
      ids = r.getInput();
    return ids.getDefiningOp<PositionsOp>() != nullptr;
  };
  auto cap = [&](Value table) {
    maxContext =
        std::min(maxContext, cast<ShapedType>(table.getType()).getDimSize(0));
  };
  f.walk([&](Operation *op) {
    if (auto e = dyn_cast<EmbeddingOp>(op); e && fromPositions(e.getIds()))
      cap(e.getTable());
    if (auto g = dyn_cast<GatherOp>(op);
        g && g.getAxis() == 0 && fromPositions(g.getIndices()))
      cap(g.getInput());
  });
  return maxContext;
}

} // namespace

bool pimc::llm::isDecodeStep(ModuleOp module) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return false;
  FunctionType type = forward.getFunctionType();
  return type.getNumInputs() >= 2 && type.getInput(1).isIndex();
}

LogicalResult pimc::llm::synthesizeDecodeStep(ModuleOp module,
                                              int64_t maxContext) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("no func.func @forward");
  // Already a decode step, not a token-id model at all, or a step with
  // inputs besides the ids (a static-cache step, or a prompt graph with a
  // mask): the backend's contract check says what it expects.
  FunctionType type = forward.getFunctionType();
  auto ids = type.getNumInputs() > 0
                 ? dyn_cast<RankedTensorType>(type.getInput(0))
                 : RankedTensorType();
  if (isDecodeStep(module) || !ids || !isa<IntegerType>(ids.getElementType()) ||
      type.getNumInputs() != 1)
    return success();
  if (maxContext < 1)
    return module.emitError("llm-synthesize-decode: max-context must be "
                            "positive");
  FailureOr<func::FuncOp> step = Synthesizer(forward, maxContext).run();
  if (failed(step))
    return failure();
  // The cache capacity follows a learned position table, when there is one.
  int64_t context = positionTableRows(*step, maxContext);
  if (context != maxContext) {
    step->erase();
    step = Synthesizer(forward, context).run();
    if (failed(step))
      return failure();
  }
  forward.erase();
  step->setName("forward");
  module->setAttr(
      "llm.max_context",
      IntegerAttr::get(IntegerType::get(module.getContext(), 64), context));
  return success();
}

namespace {
struct SynthesizeDecodePass
    : public pimc::llm::impl::SynthesizeDecodeBase<SynthesizeDecodePass> {
  using SynthesizeDecodeBase::SynthesizeDecodeBase;
  void runOnOperation() override {
    if (failed(synthesizeDecodeStep(getOperation(), maxContext)))
      signalPassFailure();
  }
};
} // namespace
