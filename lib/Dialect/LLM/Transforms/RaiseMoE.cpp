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
// The sparse dispatch formulation (torch.where / nonzero + index_add_) has
// data-dependent shapes, which neither importer represents (the FX importer
// reports aten.where as unsupported), so there is nothing to raise there.
//
//===----------------------------------------------------------------------===//
#include "GraphMatch.h"
#include "pimc/Dialect/LLM/Transforms/Passes.h"

#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <cmath>
#include <random>

using namespace mlir;

namespace pimc::llm {

namespace {

/// Relative tolerance between the graph's routing weights and llm.moe's.
constexpr double kRoutingTolerance = 1e-5;
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

void populateRaiseMoEPatterns(RewritePatternSet &patterns,
                              const hf::WeightStore *weights) {
  patterns.add<RaiseDenseMoE, RaiseExpertSumMoE>(patterns.getContext(),
                                                weights);
  patterns.add<FoldSharedExpert>(patterns.getContext());
}

} // namespace pimc::llm
