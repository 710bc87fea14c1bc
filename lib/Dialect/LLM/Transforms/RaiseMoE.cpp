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

/// Finds the routing function of `routing` ([T, E]) over the logits of
/// `router`: nullopt unless one llm.moe variant reproduces it on every
/// sample.
std::optional<RoutingConfig> identifyRouting(Value routing, LinearOp router,
                                             int64_t k,
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
    std::optional<ConstTensor> got = evaluateConstant(routing, weights, &bind);
    if (!got || got->numElements() != T * E)
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

struct RaiseDenseMoE : OpRewritePattern<ReduceOp> {
  RaiseDenseMoE(MLIRContext *ctx, const hf::WeightStore *weights)
      : OpRewritePattern(ctx), weights(weights) {}
  const hf::WeightStore *weights;

  LogicalResult matchAndRewrite(ReduceOp sum,
                                PatternRewriter &rewriter) const override {
    auto inType = dyn_cast<RankedTensorType>(sum.getInput().getType());
    if (sum.getKind() != ReduceKind::Sum || sum.getKeepDim() || !inType ||
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
    if (xType != sum.getType() || xType.getRank() != 2)
      return rewriter.notifyMatchFailure(sum,
                                         "experts do not map [T, H] to [T, H]");
    int64_t E = experts.size(), H = xType.getDimSize(1);

    // The router projection and the top-k inside the routing subgraph.
    LinearOp router;
    TopkOp topk;
    for (Operation *op : backwardSlice(routing, 256)) {
      if (auto l = dyn_cast<LinearOp>(op)) {
        auto w = dyn_cast<RankedTensorType>(l.getWeight().getType());
        if (!w || w.getShape() != ArrayRef<int64_t>{E, H} ||
            stripRowReshape(l.getInput()) != stripRowReshape(x) ||
            l.getType() != RankedTensorType::get({xType.getDimSize(0), E},
                                                 xType.getElementType()))
          continue;
        if (router && router != l)
          return rewriter.notifyMatchFailure(sum, "two router projections");
        router = l;
      }
      if (auto t = dyn_cast<TopkOp>(op)) {
        if (topk && topk != t)
          return rewriter.notifyMatchFailure(sum, "more than one top-k");
        topk = t;
      }
    }
    if (!router || !topk)
      return rewriter.notifyMatchFailure(sum, "no router projection / top-k");
    int64_t k = topk.getK();
    if (k < 1 || k > E)
      return rewriter.notifyMatchFailure(sum, "top-k out of range");
    std::optional<RoutingConfig> config =
        identifyRouting(routing, router, k, weights);
    if (!config)
      return rewriter.notifyMatchFailure(sum,
                                         "routing is not an llm.moe router");

    SmallVector<Value> gates, ups, downs;
    for (GatedMLPOp e : experts) {
      gates.push_back(e.getGate());
      ups.push_back(e.getUp());
      downs.push_back(e.getDown());
    }
    MLIRContext *ctx = getContext();
    auto moe = MoEOp::create(
        rewriter, sum.getLoc(), xType, x, router.getWeight(), router.getBias(),
        gates, ups, downs, Value(), Value(), Value(),
        rewriter.getI64IntegerAttr(k),
        MoEScoringAttr::get(ctx, config->scoring),
        MoERoutingOrderAttr::get(ctx, config->order),
        rewriter.getBoolAttr(config->renormalize),
        rewriter.getF32FloatAttr(static_cast<float>(config->scale)),
        ActivationAttr::get(ctx, experts.front().getActivation()),
        rewriter.getBoolAttr(false));
    rewriter.replaceOp(sum, moe.getResult());
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
  patterns.add<RaiseDenseMoE>(patterns.getContext(), weights);
  patterns.add<FoldSharedExpert>(patterns.getContext());
}

} // namespace pimc::llm
