//===- RaiseMoE.cpp - dense-formulation MoE -> llm.moe --------------------===//
//
// The dense formulation of a top-k MoE block,
//   routing = scatter(zeros, topk(renorm(softmax(router(x)))))      [T, E]
//   y = sum_e routing[:, e, None] * expert_e(x)    (stack on dim 1, sum)
// with every expert already raised to llm.gated_mlp. The routing subgraph is
// not matched op by op: importers spell scatter/one-hot in many ways. It is
// checked by what it computes: the pattern finds the router projection,
// evaluates the routing subgraph on sample logits and compares it with
// llm.moe's routing for each (scoring, order, renormalize) variant and the
// top-k of the graph's llm.topk, recovering routed_scaling_factor. The
// samples are random with no ties, so a subgraph that agrees on all of them
// computes the same piecewise function of the logits in practice; rounding
// differs only in the last bits of the f32 softmax and sums.
//
// The sparse dispatch formulation (HF Mixtral's loop: per expert, torch.where
// over the routing mask picks (token, slot) pairs, the expert runs on those
// rows and index_add_ scatters its weighted output back) reaches us with
// llm.nonzero at its traced count. DensifySparseDispatch rewrites each
// scatter into the dense per-expert term gate_e * expert_e(x), with gate_e =
// sum over slots of the routing weights where the mask holds; the add chain
// of such terms is then raised like the ONNX export of a dense loop. Each
// piece (the index_add's one-hot, the row gather, the weight gather) is
// checked by evaluating it on sample nonzero positions.
//
//===----------------------------------------------------------------------===//
#include "GraphMatch.h"
#include "pimc/Dialect/LLM/Transforms/Passes.h"

#include "pimc/Dialect/LLM/IR/LLMBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

using namespace mlir;

namespace pimc::llm {

namespace {

/// Relative tolerance between the graph's routing weights and llm.moe's.
constexpr double kRoutingTolerance = 1e-5;
/// Tolerance of the sparse-dispatch scatter check: the sampled terms are
/// O(1) and the graph rounds them to f32, a wrong scatter is off by O(1).
constexpr double kScatterTolerance = 1e-6;
/// Sample logits per check; each is a fresh [T, E] matrix.
constexpr int kRoutingSamples = 4;

struct RoutingConfig {
  MoEScoring scoring;
  MoERoutingOrder order;
  bool renormalize;
  double scale = 1.0;
};

/// llm.moe's routing weights (zero for experts outside the top k).
std::vector<double> referenceRouting(const ConstTensor &logits, int64_t k,
                                     const RoutingConfig &c) {
  int64_t T = logits.shape[0], E = logits.shape[1];
  std::vector<double> out(T * E, 0.0);
  std::vector<float> s(E);
  std::vector<int64_t> order(E);
  for (int64_t t = 0; t < T; ++t) {
    const double *l = &logits.data[t * E];
    auto score = [&](ArrayRef<int64_t> over, std::vector<float> &dst) {
      if (c.scoring == MoEScoring::Sigmoid) {
        for (int64_t e : over)
          dst[e] = 1.0f / (1.0f + std::exp(-static_cast<float>(l[e])));
        return;
      }
      float m = -INFINITY, sum = 0;
      for (int64_t e : over)
        m = std::max(m, static_cast<float>(l[e]));
      for (int64_t e : over)
        sum += std::exp(static_cast<float>(l[e]) - m);
      for (int64_t e : over)
        dst[e] = std::exp(static_cast<float>(l[e]) - m) / sum;
    };
    for (int64_t e = 0; e < E; ++e)
      order[e] = e;
    bool scoreFirst = c.order == MoERoutingOrder::ScoreThenTopk;
    if (scoreFirst)
      score(order, s);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return scoreFirst ? s[a] > s[b] : l[a] > l[b];
    });
    ArrayRef<int64_t> chosen = ArrayRef<int64_t>(order).take_front(k);
    if (!scoreFirst)
      score(chosen, s);
    float sum = 0;
    for (int64_t e : chosen)
      sum += s[e];
    for (int64_t e : chosen)
      out[t * E + e] = c.renormalize ? s[e] / sum : s[e];
  }
  return out;
}

/// The experts of `stacked` = concat([e_0[:, None], e_1[:, None], ...], 1)
/// when each e_i is an llm.gated_mlp on the same input with the same
/// activation.
std::optional<SmallVector<GatedMLPOp>> matchStackedExperts(Value stacked) {
  auto cat = defOp<ConcatOp>(stacked);
  auto type = dyn_cast<RankedTensorType>(stacked.getType());
  if (!cat || !type || type.getRank() != 3 ||
      (cat.getAxis() != 1 && cat.getAxis() != -2))
    return std::nullopt;
  SmallVector<GatedMLPOp> experts;
  for (Value in : cat.getInputs()) {
    auto r = defOp<ReshapeOp>(in);
    if (!r)
      return std::nullopt;
    auto rt = cast<RankedTensorType>(r.getType());
    auto it = dyn_cast<RankedTensorType>(r.getInput().getType());
    if (!it || it.getRank() != 2 || rt.getDimSize(1) != 1 ||
        rt.getDimSize(0) != it.getDimSize(0) ||
        rt.getDimSize(2) != it.getDimSize(1))
      return std::nullopt;
    auto mlp = defOp<GatedMLPOp>(r.getInput());
    if (!mlp)
      return std::nullopt;
    if (!experts.empty() &&
        (mlp.getInput() != experts.front().getInput() ||
         mlp.getActivation() != experts.front().getActivation()))
      return std::nullopt;
    experts.push_back(mlp);
  }
  return experts;
}

/// The ops `v` depends on, up to `limit` of them (breadth first).
SmallVector<Operation *> backwardSlice(Value v, size_t limit) {
  llvm::SetVector<Operation *> seen;
  SmallVector<Value> work{v};
  while (!work.empty() && seen.size() < limit) {
    Value cur = work.pop_back_val();
    Operation *def = cur.getDefiningOp();
    if (!def || !seen.insert(def))
      continue;
    for (Value operand : def->getOperands())
      work.push_back(operand);
  }
  return SmallVector<Operation *>(seen.begin(), seen.end());
}

/// Evaluates the routing weights [T, E] on `bind`: `columns` is either one
/// [T, E] value or E per-expert [T, 1] values (column e for expert e).
std::optional<ConstTensor>
evaluateRouting(ArrayRef<Value> columns, int64_t T, int64_t E,
                const hf::WeightStore *weights,
                const llvm::DenseMap<Value, ConstTensor> &bind) {
  if (columns.size() == 1) {
    std::optional<ConstTensor> got =
        evaluateConstant(columns.front(), weights, &bind);
    if (!got || got->numElements() != T * E)
      return std::nullopt;
    return got;
  }
  if (static_cast<int64_t>(columns.size()) != E)
    return std::nullopt;
  ConstTensor all;
  all.shape = {T, E};
  all.data.assign(T * E, 0.0);
  for (auto [e, col] : llvm::enumerate(columns)) {
    std::optional<ConstTensor> got = evaluateConstant(col, weights, &bind);
    if (!got || got->numElements() != T)
      return std::nullopt;
    for (int64_t t = 0; t < T; ++t)
      all.data[t * E + e] = got->data[t];
  }
  return all;
}

/// Finds the routing function of `routing` ([T, E], or its E columns) over
/// the logits of `router`: nullopt unless one llm.moe variant reproduces it
/// on every sample.
std::optional<RoutingConfig> identifyRouting(ArrayRef<Value> routing,
                                             LinearOp router, int64_t k,
                                             const hf::WeightStore *weights) {
  auto lt = cast<RankedTensorType>(router.getType());
  if (!lt.hasStaticShape() || lt.getRank() != 2)
    return std::nullopt;
  int64_t T = lt.getDimSize(0), E = lt.getDimSize(1);
  SmallVector<RoutingConfig> candidates;
  for (MoEScoring scoring : {MoEScoring::Softmax, MoEScoring::Sigmoid})
    for (bool renorm : {true, false})
      for (MoERoutingOrder order :
           {MoERoutingOrder::ScoreThenTopk, MoERoutingOrder::TopkThenScore})
        candidates.push_back({scoring, order, renorm});
  std::mt19937 rng(0x5eed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<bool> alive(candidates.size(), true);
  std::vector<std::optional<double>> scale(candidates.size());
  for (int sample = 0; sample < kRoutingSamples; ++sample) {
    ConstTensor logits;
    logits.shape = {T, E};
    for (int64_t i = 0; i < T * E; ++i)
      logits.data.push_back(normal(rng));
    llvm::DenseMap<Value, ConstTensor> bind;
    bind[router.getResult()] = logits;
    std::optional<ConstTensor> got =
        evaluateRouting(routing, T, E, weights, bind);
    if (!got)
      return std::nullopt;
    for (auto [i, c] : llvm::enumerate(candidates)) {
      if (!alive[i])
        continue;
      std::vector<double> want = referenceRouting(logits, k, c);
      for (int64_t j = 0; j < T * E && alive[i]; ++j) {
        if (!scale[i] && std::fabs(want[j]) > 1e-3)
          scale[i] = got->data[j] / want[j];
        double w = want[j] * scale[i].value_or(1.0);
        alive[i] = std::fabs(got->data[j] - w) <=
                   kRoutingTolerance * std::max(1.0, std::fabs(w));
      }
    }
  }
  for (auto [i, c] : llvm::enumerate(candidates))
    if (alive[i] && scale[i] && *scale[i] > 0) {
      RoutingConfig found = c;
      found.scale = *scale[i];
      // Snap the scale recovered from f32 values to the nearest f32.
      found.scale = static_cast<float>(found.scale);
      if (std::fabs(found.scale - 1.0) <= 1e-6)
        found.scale = 1.0;
      return found;
    }
  return std::nullopt;
}

/// Which router expert each of the per-expert gates `columns` belongs to:
/// logits where token t strongly prefers expert t mod E make that expert's
/// gate the largest in row t under every scoring/order llm.moe has. Returns
/// expert -> column, nullopt unless that is a bijection (needs T >= E).
std::optional<SmallVector<int64_t>>
expertOfColumns(ArrayRef<Value> columns, LinearOp router,
                const hf::WeightStore *weights) {
  auto lt = cast<RankedTensorType>(router.getType());
  int64_t T = lt.getDimSize(0), E = lt.getDimSize(1);
  if (T < E || static_cast<int64_t>(columns.size()) != E)
    return std::nullopt;
  ConstTensor logits;
  logits.shape = {T, E};
  for (int64_t t = 0; t < T; ++t)
    for (int64_t e = 0; e < E; ++e)
      logits.data.push_back(e == t % E ? 20.0 : 0.1 * ((t * 7 + e * 3) % 11));
  llvm::DenseMap<Value, ConstTensor> bind;
  bind[router.getResult()] = logits;
  std::optional<ConstTensor> got =
      evaluateRouting(columns, T, E, weights, bind);
  if (!got)
    return std::nullopt;
  SmallVector<int64_t> columnOf(E, -1);
  for (int64_t t = 0; t < T; ++t) {
    const double *row = &got->data[t * E];
    int64_t best = std::max_element(row, row + E) - row;
    int64_t &slot = columnOf[t % E];
    if (row[best] <= 0 || (slot >= 0 && slot != best))
      return std::nullopt;
    slot = best;
  }
  SmallVector<int64_t> sorted(columnOf);
  llvm::sort(sorted);
  for (int64_t e = 0; e < E; ++e)
    if (sorted[e] != e)
      return std::nullopt;
  return columnOf;
}

/// The router projection of `x` ([E, H] weight, [T, E] result) and the
/// single llm.topk in the subgraphs of `routing`; the failure reason in
/// `why`.
std::optional<std::pair<LinearOp, TopkOp>>
findRouterAndTopk(ArrayRef<Value> routing, Value x, int64_t E,
                  StringRef &why) {
  auto xType = cast<RankedTensorType>(x.getType());
  int64_t H = xType.getDimSize(1);
  LinearOp router;
  TopkOp topk;
  llvm::SetVector<Operation *> slice;
  for (Value r : routing)
    for (Operation *op : backwardSlice(r, 256))
      slice.insert(op);
  for (Operation *op : slice) {
    if (auto l = dyn_cast<LinearOp>(op)) {
      auto w = dyn_cast<RankedTensorType>(l.getWeight().getType());
      if (!w || w.getShape() != ArrayRef<int64_t>{E, H} ||
          stripRowReshape(l.getInput()) != stripRowReshape(x) ||
          l.getType() != RankedTensorType::get({xType.getDimSize(0), E},
                                               xType.getElementType()))
        continue;
      if (router && router != l) {
        why = "two router projections";
        return std::nullopt;
      }
      router = l;
    }
    if (auto t = dyn_cast<TopkOp>(op)) {
      if (topk && topk != t) {
        why = "more than one top-k";
        return std::nullopt;
      }
      topk = t;
    }
  }
  if (!router || !topk) {
    why = "no router projection / top-k";
    return std::nullopt;
  }
  if (topk.getK() < 1 || topk.getK() > E) {
    why = "top-k out of range";
    return std::nullopt;
  }
  return std::make_pair(router, topk);
}

/// llm.moe of `experts` (in router-row order) on their shared input.
MoEOp buildMoE(PatternRewriter &rewriter, Location loc,
               ArrayRef<GatedMLPOp> experts, LinearOp router, int64_t k,
               const RoutingConfig &config) {
  GatedMLPOp first = experts.front();
  Value x = first.getInput();
  SmallVector<Value> gates, ups, downs;
  for (GatedMLPOp e : experts) {
    gates.push_back(e.getGate());
    ups.push_back(e.getUp());
    downs.push_back(e.getDown());
  }
  MLIRContext *ctx = rewriter.getContext();
  return MoEOp::create(
      rewriter, loc, x.getType(), x, router.getWeight(), router.getBias(),
      gates, ups, downs, Value(), Value(), Value(),
      rewriter.getI64IntegerAttr(k), MoEScoringAttr::get(ctx, config.scoring),
      MoERoutingOrderAttr::get(ctx, config.order),
      rewriter.getBoolAttr(config.renormalize),
      rewriter.getF32FloatAttr(static_cast<float>(config.scale)),
      ActivationAttr::get(ctx, first.getActivation()),
      rewriter.getBoolAttr(false));
}

struct RaiseDenseMoE : OpRewritePattern<ReduceOp> {
  RaiseDenseMoE(MLIRContext *ctx, const hf::WeightStore *weights)
      : OpRewritePattern(ctx), weights(weights) {}
  const hf::WeightStore *weights;

  LogicalResult matchAndRewrite(ReduceOp sum,
                                PatternRewriter &rewriter) const override {
    // The sum over the expert axis, keeping it (ONNX ReduceSum's default,
    // [T, 1, H]) or not ([T, H]).
    auto inType = dyn_cast<RankedTensorType>(sum.getInput().getType());
    if (sum.getKind() != ReduceKind::Sum || !inType ||
        inType.getRank() != 3 || !inType.hasStaticShape() ||
        (sum.getAxis() != 1 && sum.getAxis() != -2))
      return failure();
    auto mul = defOp<MulOp>(sum.getInput());
    if (!mul)
      return failure();
    SmallVector<GatedMLPOp> experts;
    Value routing;
    bool matched = matchEitherOrder(mul, [&](Value w, Value s) {
      auto found = matchStackedExperts(s);
      auto col = defOp<ReshapeOp>(stripBroadcast(w));
      if (!found || !col)
        return false;
      auto rt = dyn_cast<RankedTensorType>(col.getInput().getType());
      if (!rt || rt.getRank() != 2 ||
          rt.getDimSize(1) != static_cast<int64_t>(found->size()))
        return false;
      experts = *found;
      routing = col.getInput();
      return true;
    });
    if (!matched)
      return rewriter.notifyMatchFailure(sum,
                                         "not sum_e routing[:, e] * expert_e");
    Value x = experts.front().getInput();
    auto xType = cast<RankedTensorType>(x.getType());
    auto sumType = cast<RankedTensorType>(sum.getType());
    if (xType.getRank() != 2 ||
        (sum.getKeepDim()
             ? sumType.getShape() != ArrayRef<int64_t>{xType.getDimSize(0), 1,
                                                       xType.getDimSize(1)}
             : sumType != xType))
      return rewriter.notifyMatchFailure(sum,
                                         "experts do not map [T, H] to [T, H]");
    int64_t E = experts.size();
    StringRef why;
    auto found = findRouterAndTopk({routing}, x, E, why);
    if (!found)
      return rewriter.notifyMatchFailure(sum, why);
    auto [router, topk] = *found;
    int64_t k = topk.getK();
    std::optional<RoutingConfig> config =
        identifyRouting({routing}, router, k, weights);
    if (!config)
      return rewriter.notifyMatchFailure(sum,
                                         "routing is not an llm.moe router");
    MoEOp moe = buildMoE(rewriter, sum.getLoc(), experts, router, k, *config);
    Value result = moe.getResult();
    if (sum.getKeepDim())
      result = reshapeTo(rewriter, sum.getLoc(), result, sumType.getShape());
    rewriter.replaceOp(sum, result);
    return success();
  }
};

/// The per-expert accumulation the ONNX export of a hand-written MoE loop
/// gives, `out = 0; out = out + gate_e * expert_e(x)` for every expert:
/// an add chain (each inner sum used only by the next) of
/// `broadcast(gate_e [T, 1]) * gated_mlp_e(x)` terms, plus an optional zero
/// start. The gates, column e for the e-th term, must be the routing of one
/// router projection through one top-k (checked by evaluation as for the
/// stacked form); the terms are put in router-row order first (found by
/// evaluating the gates on logits that single out each expert).
struct RaiseExpertSumMoE : OpRewritePattern<AddOp> {
  RaiseExpertSumMoE(MLIRContext *ctx, const hf::WeightStore *weights)
      : OpRewritePattern(ctx), weights(weights) {}
  const hf::WeightStore *weights;

  /// Leaves of the add chain ending at `root`, first term first.
  static void collectTerms(Value v, AddOp root, SmallVector<Value> &terms) {
    auto add = defOp<AddOp>(v);
    if (add && (add == root || add->hasOneUse())) {
      collectTerms(add.getLhs(), root, terms);
      collectTerms(add.getRhs(), root, terms);
      return;
    }
    terms.push_back(v);
  }

  LogicalResult matchAndRewrite(AddOp root,
                                PatternRewriter &rewriter) const override {
    // A partial sum of the chain fails below (its experts are fewer than
    // the router's rows), so is an add that extends it by another term
    // (e.g. the residual add after the MoE).
    SmallVector<Value> leaves;
    collectTerms(root.getResult(), root, leaves);
    SmallVector<GatedMLPOp> experts;
    SmallVector<Value> gates;
    for (Value leaf : leaves) {
      if (std::optional<double> z = matchSplat(leaf); z && *z == 0.0)
        continue;
      auto mul = defOp<MulOp>(leaf);
      if (!mul)
        return rewriter.notifyMatchFailure(root, "a term is not gate * expert");
      GatedMLPOp expert;
      Value gate;
      bool matched = matchEitherOrder(mul, [&](Value g, Value e) {
        expert = defOp<GatedMLPOp>(e);
        gate = stripBroadcast(g);
        auto gt = dyn_cast<RankedTensorType>(gate.getType());
        return expert && gt && gt.getRank() == 2 && gt.getDimSize(1) == 1;
      });
      if (!matched)
        return rewriter.notifyMatchFailure(root, "a term is not gate * expert");
      if (!experts.empty() &&
          (expert.getInput() != experts.front().getInput() ||
           expert.getActivation() != experts.front().getActivation()))
        return rewriter.notifyMatchFailure(
            root, "experts differ in input or activation");
      experts.push_back(expert);
      gates.push_back(gate);
    }
    int64_t E = experts.size();
    if (E < 2)
      return rewriter.notifyMatchFailure(root, "fewer than two experts");
    Value x = experts.front().getInput();
    auto xType = cast<RankedTensorType>(x.getType());
    if (xType.getRank() != 2 || root.getType() != xType ||
        cast<RankedTensorType>(gates.front().getType()).getDimSize(0) !=
            xType.getDimSize(0))
      return rewriter.notifyMatchFailure(root,
                                         "experts do not map [T, H] to [T, H]");
    StringRef why;
    auto found = findRouterAndTopk(gates, x, E, why);
    if (!found)
      return rewriter.notifyMatchFailure(root, why);
    auto [router, topk] = *found;
    int64_t k = topk.getK();
    // The terms may be summed in any order; llm.moe takes the experts in
    // router-row order.
    if (auto columnOf = expertOfColumns(gates, router, weights)) {
      SmallVector<GatedMLPOp> byRow;
      SmallVector<Value> gatesByRow;
      for (int64_t col : *columnOf) {
        byRow.push_back(experts[col]);
        gatesByRow.push_back(gates[col]);
      }
      experts = std::move(byRow);
      gates = std::move(gatesByRow);
    }
    std::optional<RoutingConfig> config =
        identifyRouting(gates, router, k, weights);
    if (!config)
      return rewriter.notifyMatchFailure(root,
                                         "routing is not an llm.moe router");
    rewriter.replaceOp(
        root, buildMoE(rewriter, root.getLoc(), experts, router, k, *config));
    return success();
  }
};

/// N distinct positions of an [A, B] mask in row-major order, as the [N, 2]
/// output of llm.nonzero would list them: sample 0 takes the first N
/// positions and sample 1 the last N (rows repeat, so a gather that ignores
/// the rows fails), later samples are random.
ConstTensor sampleNonzero(int64_t A, int64_t B, int64_t N, int sample,
                          std::mt19937 &rng) {
  std::vector<int64_t> all(A * B);
  std::iota(all.begin(), all.end(), 0);
  if (sample == 1)
    std::reverse(all.begin(), all.end());
  else if (sample > 1)
    std::shuffle(all.begin(), all.end(), rng);
  all.resize(N);
  llvm::sort(all);
  ConstTensor nz;
  nz.shape = {N, 2};
  for (int64_t p : all) {
    nz.data.push_back(p / B);
    nz.data.push_back(p % B);
  }
  return nz;
}

ConstTensor randomTensor(ArrayRef<int64_t> shape, std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  ConstTensor t;
  t.shape.assign(shape.begin(), shape.end());
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  for (int64_t i = 0; i < n; ++i)
    t.data.push_back(u(rng));
  return t;
}

/// The values feeding the data operand of the nearest llm.gather above
/// `from`, through data movement and exact conversions (reshape, broadcast,
/// cast, convert, the data operand of a gather), whose shape satisfies
/// `fits`; nearest first. Only values above a gather qualify: below it, the
/// gathered rows could pass for the source.
SmallVector<Value> findSources(Value from,
                               function_ref<bool(ArrayRef<int64_t>)> fits) {
  SmallVector<Value> found;
  bool aboveGather = false;
  Value v = from;
  for (int steps = 0; v && steps < 16; ++steps) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (aboveGather && t && t.hasStaticShape() &&
        isa<FloatType>(t.getElementType()) && fits(t.getShape()))
      found.push_back(v);
    Operation *def = v.getDefiningOp();
    if (!def || !isa<ReshapeOp, BroadcastOp, CastOp, ConvertOp, GatherOp>(def))
      break;
    aboveGather |= isa<GatherOp>(def);
    v = def->getOperand(0);
  }
  return found;
}

/// `v` as [rows, cols]: `v` itself, an existing reshape of it that dominates
/// `before`, or a new one right after its definition (so every expert of a
/// dispatch ends up on the same value).
Value asMatrix(PatternRewriter &rewriter, Value v, int64_t rows, int64_t cols,
               Operation *before) {
  auto t = cast<RankedTensorType>(v.getType());
  auto want = RankedTensorType::get({rows, cols}, t.getElementType());
  if (t == want)
    return v;
  for (Operation *user : v.getUsers())
    if (auto r = dyn_cast<ReshapeOp>(user))
      if (r.getType() == want && r->getBlock() == before->getBlock() &&
          r->isBeforeInBlock(before))
        return r.getResult();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfterValue(v);
  return ReshapeOp::create(rewriter, v.getLoc(), want, v);
}

/// The dense per-expert term replacing a sparse dispatch at `add`:
/// broadcast(gate) * expert(x) with gate[t] = sum_k (mask[t, k] ? w[t, k] :
/// 0), where `mask` is the input of `nonzero` whose column `r` is the token
/// ([T, K] for r = 0, [K, T] for r = 1) and `w` holds [T, K] weights.
Value denseTerm(PatternRewriter &rewriter, AddOp add, NonzeroOp nonzero,
                int64_t r, Value w, Value x, GatedMLPOp expert, int64_t T,
                int64_t K, int64_t H, int64_t Hout) {
  auto maskType = cast<RankedTensorType>(nonzero.getInput().getType());
  Location loc = add.getLoc();
  Value mask = nonzero.getInput();
  auto f32 = rewriter.getF32Type();
  if (!maskType.getElementType().isInteger(1)) {
    auto et = maskType.getElementType();
    Value zero = arith::ConstantOp::create(
        rewriter, loc,
        isa<FloatType>(et)
            ? DenseElementsAttr::get(maskType, rewriter.getFloatAttr(et, 0))
            : DenseElementsAttr::get(maskType, rewriter.getIntegerAttr(et, 0)));
    mask =
        CompareOp::create(rewriter, loc, maskType.clone(rewriter.getI1Type()),
                          ComparePredicate::Ne, mask, zero);
  }
  if (r == 1)
    mask = transposeBy(rewriter, loc, mask, {1, 0});
  auto tk = RankedTensorType::get({T, K}, f32);
  Value wv = reshapeTo(rewriter, loc, w, {T, K});
  Value zeros = arith::ConstantOp::create(rewriter, loc,
                                          DenseElementsAttr::get(tk, 0.0f));
  Value picked = SelectOp::create(rewriter, loc, tk, mask, wv, zeros);
  Value gate =
      ReduceOp::create(rewriter, loc, RankedTensorType::get({T, 1}, f32),
                       picked, ReduceKind::Sum, 1, true);
  auto dense = cast<GatedMLPOp>(rewriter.clone(*expert));
  dense.getInputMutable().assign(asMatrix(rewriter, x, T, H, add));
  dense.getResult().setType(RankedTensorType::get({T, Hout}, f32));
  Value term =
      MulOp::create(rewriter, loc, broadcastTo(rewriter, loc, gate, {T, Hout}),
                    dense.getResult());
  return term;
}

/// index_add(acc, 0, rows, expert(x[rows]) * w[rows, slots]) with (rows,
/// slots) the columns of llm.nonzero(mask), as the FX importer spells it:
/// `acc + onehot(rows)^T @ src` -> `acc + broadcast(gate) * expert(x)` with
/// gate[t] = sum_k (mask[t, k] ? w[t, k] : 0). Exact for any mask and any
/// row-wise expert (llm.gated_mlp): every row the scatter adds is the
/// expert's row for that token times its weight, summed over the slots
/// that pick it.
struct DensifySparseDispatch : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    MatmulOp scatter;
    Value acc;
    bool matched = matchEitherOrder(add, [&](Value a, Value m) {
      scatter = defOp<MatmulOp>(m);
      acc = a;
      return scatter != nullptr;
    });
    if (!matched)
      return failure();
    auto pType = dyn_cast<RankedTensorType>(scatter.getLhs().getType());
    auto sType = dyn_cast<RankedTensorType>(scatter.getRhs().getType());
    auto outType = dyn_cast<RankedTensorType>(add.getType());
    if (!pType || !sType || !outType || pType.getRank() != 2 ||
        sType.getRank() != 2 || !pType.hasStaticShape() ||
        !sType.hasStaticShape() || outType.getRank() != 2)
      return failure();
    int64_t T = pType.getDimSize(0), N = pType.getDimSize(1);
    int64_t Hout = sType.getDimSize(1);
    if (N == 0)
      return rewriter.notifyMatchFailure(
          add, "the expert received no tokens in the trace");
    // src = expert(x[rows]) * w[rows, slots], either order.
    auto mul = defOp<MulOp>(scatter.getRhs());
    if (!mul)
      return failure();
    GatedMLPOp expert;
    Value weightGather;
    if (!matchEitherOrder(mul, [&](Value e, Value w) {
          expert = defOp<GatedMLPOp>(e);
          weightGather = stripBroadcast(w);
          auto wt = dyn_cast<RankedTensorType>(weightGather.getType());
          return expert && wt && wt.hasStaticShape() &&
                 wt.getNumElements() == N;
        }))
      return rewriter.notifyMatchFailure(add, "not an expert times a weight");
    // The one llm.nonzero the scatter's rows come from.
    NonzeroOp nonzero;
    for (Operation *op : backwardSlice(scatter.getLhs(), 64))
      if (auto nz = dyn_cast<NonzeroOp>(op)) {
        if (nonzero && nonzero != nz)
          return rewriter.notifyMatchFailure(add, "two nonzero sources");
        nonzero = nz;
      }
    if (!nonzero)
      return rewriter.notifyMatchFailure(add, "no llm.nonzero rows");
    auto maskType = cast<RankedTensorType>(nonzero.getInput().getType());
    if (maskType.getRank() != 2 || !maskType.hasStaticShape() ||
        cast<RankedTensorType>(nonzero.getType()).getDimSize(0) != N)
      return rewriter.notifyMatchFailure(add, "mask is not [tokens, slots]");
    auto xrType = cast<RankedTensorType>(expert.getInput().getType());
    if (xrType.getRank() != 2 || xrType.getDimSize(0) != N)
      return rewriter.notifyMatchFailure(add, "expert input is not [N, H]");
    int64_t H = xrType.getDimSize(1);
    // The gathered tensor: [T, H] up to leading unit / row dimensions.
    SmallVector<Value> xCandidates =
        findSources(expert.getInput(), [&](ArrayRef<int64_t> s) {
          int64_t n = 1;
          for (int64_t d : s)
            n *= d;
          return s.size() >= 2 && s.back() == H && n == T * H;
        });
    if (xCandidates.empty())
      return rewriter.notifyMatchFailure(add, "no [T, H] input of the gather");

    // Token column r of the nonzero, gathered tensor x and weights w such
    // that the scatter's one-hot is (t == nz[i, r]), the expert's rows are
    // x[nz[i, r]] and its weights w[nz[i, r], nz[i, 1 - r]], on four samples.
    std::mt19937 rng(0xd15c);
    auto verifies = [&](int64_t r, Value x, Value w, int64_t K) {
      for (int sample = 0; sample < 4; ++sample) {
        ConstTensor nz = sampleNonzero(maskType.getDimSize(0),
                                       maskType.getDimSize(1), N, sample, rng);
        ConstTensor xs = randomTensor(
            cast<RankedTensorType>(x.getType()).getShape(), rng);
        ConstTensor ws = randomTensor(
            cast<RankedTensorType>(w.getType()).getShape(), rng);
        llvm::DenseMap<Value, ConstTensor> bind;
        bind[nonzero.getResult()] = nz;
        bind[x] = xs;
        bind[w] = ws;
        auto p = evaluateConstant(scatter.getLhs(), nullptr, &bind);
        auto xr = evaluateConstant(expert.getInput(), nullptr, &bind);
        auto wg = evaluateConstant(weightGather, nullptr, &bind);
        if (!p || !xr || !wg || p->numElements() != T * N ||
            xr->numElements() != N * H || wg->numElements() != N)
          return false;
        for (int64_t i = 0; i < N; ++i) {
          int64_t t = nz.data[i * 2 + r], k = nz.data[i * 2 + 1 - r];
          for (int64_t u = 0; u < T; ++u)
            if (p->data[u * N + i] != (u == t ? 1.0 : 0.0))
              return false;
          for (int64_t h = 0; h < H; ++h)
            if (xr->data[i * H + h] != xs.data[t * H + h])
              return false;
          if (wg->data[i] != ws.data[t * K + k])
            return false;
        }
      }
      return true;
    };
    for (int64_t r = 0; r < 2; ++r) {
      if (maskType.getDimSize(r) != T)
        continue;
      int64_t K = maskType.getDimSize(1 - r);
      SmallVector<Value> wCandidates =
          findSources(weightGather, [&](ArrayRef<int64_t> s) {
            return s == ArrayRef<int64_t>{T, K} ||
                   s == ArrayRef<int64_t>{T, K, 1};
          });
      // The farthest x first: the experts of one dispatch then share it.
      Value x, w;
      for (Value xc : llvm::reverse(xCandidates))
        for (Value wc : wCandidates)
          if (!x && verifies(r, xc, wc, K)) {
            x = xc;
            w = wc;
          }
      if (!x)
        continue;

      rewriter.replaceOpWithNewOp<AddOp>(
          add, acc,
          denseTerm(rewriter, add, nonzero, r, w, x, expert, T, K, H, Hout));
      return success();
    }
    return rewriter.notifyMatchFailure(
        add, "not a scatter of expert rows gathered by nonzero");
  }
};

/// The same dispatch as the ONNX importer spells it: torch.onnx exports
/// index_add_ as ScatterElements (into zeros, then Add; or with
/// reduction=add into the accumulator), which the importer turns into a
/// one-hot select over [T, N, H] reduced over N. The scatter term S of
/// `acc + S` is not matched op by op: the pattern finds the single
/// llm.nonzero and the single `expert(x[rows]) * w[rows, slots]` product S
/// reads, and checks what S computes on sample nonzero positions, random
/// x and w, and random expert rows R bound in place of the expert's result:
///   x gathered:  the expert's input row i is x[rows[i]],
///   w gathered:  the weight of row i is w[rows[i], slots[i]],
///   scatter:     S[t] = sum_i [t == rows[i]] R[i] w[rows[i], slots[i]],
/// the last for every t and feature, which with random R pins the one-hot
/// to (t == rows[i]). Then S is replaced like the FX spelling.
struct DensifyScatteredDispatch : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  /// Ops S depends on before the llm.nonzero and the expert product: the
  /// nonzero and the products `gated_mlp * w` it reaches (nothing past them).
  /// False when the walk is longer than a scatter spelling.
  static bool scatterSlice(Value s, SmallVectorImpl<NonzeroOp> &nonzeros,
                           SmallVectorImpl<MulOp> &products) {
    llvm::SmallPtrSet<Operation *, 32> seen;
    SmallVector<Value> work{s};
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (!def || !seen.insert(def).second)
        continue;
      if (seen.size() > 96)
        return false;
      if (auto nz = dyn_cast<NonzeroOp>(def)) {
        nonzeros.push_back(nz);
        continue;
      }
      if (auto mul = dyn_cast<MulOp>(def))
        if (defOp<GatedMLPOp>(mul.getLhs()) ||
            defOp<GatedMLPOp>(mul.getRhs())) {
          products.push_back(mul);
          continue;
        }
      if (isa<LinearOp, GatedMLPOp, TopkOp, MoEOp, AttentionOp>(def))
        return false;
      for (Value operand : def->getOperands())
        work.push_back(operand);
    }
    return true;
  }

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    auto outType = dyn_cast<RankedTensorType>(add.getType());
    if (!outType || outType.getRank() != 2 || !outType.hasStaticShape() ||
        !outType.getElementType().isF32())
      return failure();
    int64_t T = outType.getDimSize(0), Hout = outType.getDimSize(1);
    Value acc, scatter;
    NonzeroOp nonzero;
    MulOp product;
    bool matched = matchEitherOrder(add, [&](Value a, Value s) {
      if (defOp<MatmulOp>(s))
        return false; // the FX spelling (DensifySparseDispatch)
      SmallVector<NonzeroOp> nonzeros;
      SmallVector<MulOp> products;
      if (!scatterSlice(s, nonzeros, products) || nonzeros.size() != 1 ||
          products.size() != 1)
        return false;
      acc = a;
      scatter = s;
      nonzero = nonzeros.front();
      product = products.front();
      return true;
    });
    if (!matched)
      return failure();
    auto nzType = cast<RankedTensorType>(nonzero.getType());
    auto maskType = cast<RankedTensorType>(nonzero.getInput().getType());
    int64_t N = nzType.getDimSize(0);
    if (maskType.getRank() != 2 || !maskType.hasStaticShape())
      return rewriter.notifyMatchFailure(add, "mask is not [tokens, slots]");
    GatedMLPOp expert;
    Value weightGather;
    if (!matchEitherOrder(product, [&](Value e, Value w) {
          expert = defOp<GatedMLPOp>(e);
          weightGather = stripBroadcast(w);
          auto wt = dyn_cast<RankedTensorType>(weightGather.getType());
          return expert && wt && wt.hasStaticShape() &&
                 wt.getNumElements() == N;
        }))
      return rewriter.notifyMatchFailure(add, "not an expert times a weight");
    auto xrType = cast<RankedTensorType>(expert.getInput().getType());
    auto erType = cast<RankedTensorType>(expert.getType());
    if (xrType.getRank() != 2 || xrType.getDimSize(0) != N ||
        erType.getShape() != ArrayRef<int64_t>{N, Hout})
      return rewriter.notifyMatchFailure(add,
                                         "expert is not [N, H] -> [N, H']");
    int64_t H = xrType.getDimSize(1);
    SmallVector<Value> xCandidates =
        findSources(expert.getInput(), [&](ArrayRef<int64_t> s) {
          int64_t n = 1;
          for (int64_t d : s)
            n *= d;
          return s.size() >= 2 && s.back() == H && n == T * H;
        });
    if (xCandidates.empty())
      return rewriter.notifyMatchFailure(add, "no [T, H] input of the gather");

    // Token column r of the nonzero, gathered tensor x and weights w such
    // that the expert's rows are x[nz[i, r]], its weights w[nz[i, r],
    // nz[i, 1 - r]] and the scatter adds row i times its weight to token
    // nz[i, r], on four samples.
    std::mt19937 rng(0x5ca7);
    auto verifies = [&](int64_t r, Value x, Value w, int64_t K) {
      for (int sample = 0; sample < 4; ++sample) {
        ConstTensor nz = sampleNonzero(maskType.getDimSize(0),
                                       maskType.getDimSize(1), N, sample, rng);
        ConstTensor xs =
            randomTensor(cast<RankedTensorType>(x.getType()).getShape(), rng);
        ConstTensor ws =
            randomTensor(cast<RankedTensorType>(w.getType()).getShape(), rng);
        ConstTensor rows = randomTensor({N, Hout}, rng);
        llvm::DenseMap<Value, ConstTensor> bind;
        bind[nonzero.getResult()] = nz;
        bind[x] = xs;
        bind[w] = ws;
        bind[expert.getResult()] = rows;
        auto got = evaluateConstant(scatter, nullptr, &bind);
        auto xr = evaluateConstant(expert.getInput(), nullptr, &bind);
        auto wg = evaluateConstant(weightGather, nullptr, &bind);
        if (!got || !xr || !wg || got->numElements() != T * Hout ||
            xr->numElements() != N * H || wg->numElements() != N)
          return false;
        std::vector<double> want(T * Hout, 0.0);
        for (int64_t i = 0; i < N; ++i) {
          int64_t t = nz.data[i * 2 + r], k = nz.data[i * 2 + 1 - r];
          for (int64_t h = 0; h < H; ++h)
            if (xr->data[i * H + h] != xs.data[t * H + h])
              return false;
          if (wg->data[i] != ws.data[t * K + k])
            return false;
          for (int64_t h = 0; h < Hout; ++h)
            want[t * Hout + h] += rows.data[i * Hout + h] * ws.data[t * K + k];
        }
        // The graph's products and sums are rounded to f32.
        for (int64_t j = 0; j < T * Hout; ++j)
          if (std::fabs(got->data[j] - want[j]) >
              kScatterTolerance * std::max(1.0, std::fabs(want[j])))
            return false;
      }
      return true;
    };
    for (int64_t r = 0; r < 2; ++r) {
      if (maskType.getDimSize(r) != T)
        continue;
      int64_t K = maskType.getDimSize(1 - r);
      SmallVector<Value> wCandidates = findSources(weightGather, [&](ArrayRef<
                                                                     int64_t>
                                                                         s) {
        return s == ArrayRef<int64_t>{T, K} || s == ArrayRef<int64_t>{T, K, 1};
      });
      // The farthest x first: the experts of one dispatch then share it.
      Value x, w;
      for (Value xc : llvm::reverse(xCandidates))
        for (Value wc : wCandidates)
          if (!x && verifies(r, xc, wc, K)) {
            x = xc;
            w = wc;
          }
      if (!x)
        continue;
      rewriter.replaceOpWithNewOp<AddOp>(
          add, acc,
          denseTerm(rewriter, add, nonzero, r, w, x, expert, T, K, H, Hout));
      return success();
    }
    return rewriter.notifyMatchFailure(
        add, "not a scatter of expert rows gathered by nonzero");
  }
};

/// moe(x) + shared(x) -> llm.moe with the shared expert (DeepSeek, Llama 4:
/// an ungated shared expert with the routed experts' activation). llm.moe
/// adds the shared expert after the routed sum, as the graph does.
struct FoldSharedExpert : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    MoEOp moe;
    GatedMLPOp shared;
    bool matched = matchEitherOrder(add, [&](Value a, Value b) {
      moe = defOp<MoEOp>(a);
      shared = defOp<GatedMLPOp>(b);
      return moe && shared && !moe.hasSharedExpert() &&
             shared.getInput() == moe.getInput() &&
             shared.getActivation() == moe.getActivation();
    });
    if (!matched)
      return failure();
    auto fused = MoEOp::create(
        rewriter, add.getLoc(), moe.getType(), moe.getInput(),
        moe.getRouterWeight(), moe.getRouterBias(), moe.getGate(),
        moe.getUp(), moe.getDown(), shared.getGate(), shared.getUp(),
        shared.getDown(), moe.getTopKAttr(), moe.getScoringAttr(),
        moe.getOrderAttr(), moe.getRenormalizeAttr(),
        moe.getRoutedScalingFactorAttr(), moe.getActivationAttr(),
        moe.getWeightOnInputAttr());
    rewriter.replaceOp(add, fused.getResult());
    return success();
  }
};

} // namespace

void populateDensifySparseDispatchPatterns(RewritePatternSet &patterns) {
  patterns.add<DensifySparseDispatch, DensifyScatteredDispatch>(
      patterns.getContext());
}

void populateRaiseMoEPatterns(RewritePatternSet &patterns,
                              const hf::WeightStore *weights) {
  patterns.add<RaiseDenseMoE, RaiseExpertSumMoE>(patterns.getContext(),
                                                weights);
  patterns.add<FoldSharedExpert>(patterns.getContext());
}

} // namespace pimc::llm
