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

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
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
                const ckpt::WeightStore *weights,
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
                                             const ckpt::WeightStore *weights) {
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
                const ckpt::WeightStore *weights) {
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
findRouterAndTopk(ArrayRef<Value> routing, Value x, int64_t E, StringRef &why) {
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
      /*score_correction_bias=*/Value(), gates, ups, downs, Value(), Value(),
      Value(), Value(), Value(), Value(), Value(),
      rewriter.getI64IntegerAttr(k), MoEScoringAttr::get(ctx, config.scoring),
      MoERoutingOrderAttr::get(ctx, config.order),
      rewriter.getBoolAttr(config.renormalize),
      rewriter.getF32FloatAttr(static_cast<float>(config.scale)),
      ActivationAttr::get(ctx, first.getActivation()),
      rewriter.getBoolAttr(false), FloatAttr(), FloatAttr(),
      rewriter.getI64IntegerAttr(1), IntegerAttr(),
      rewriter.getI64IntegerAttr(1), rewriter.getF32FloatAttr(0.0f));
}

struct RaiseDenseMoE : OpRewritePattern<ReduceOp> {
  RaiseDenseMoE(MLIRContext *ctx, const ckpt::WeightStore *weights)
      : OpRewritePattern(ctx), weights(weights) {}
  const ckpt::WeightStore *weights;

  LogicalResult matchAndRewrite(ReduceOp sum,
                                PatternRewriter &rewriter) const override {
    // The sum over the expert axis, keeping it (ONNX ReduceSum's default,
    // [T, 1, H]) or not ([T, H]).
    auto inType = dyn_cast<RankedTensorType>(sum.getInput().getType());
    if (sum.getKind() != ReduceKind::Sum || !inType || inType.getRank() != 3 ||
        !inType.hasStaticShape() || (sum.getAxis() != 1 && sum.getAxis() != -2))
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
  RaiseExpertSumMoE(MLIRContext *ctx, const ckpt::WeightStore *weights)
      : OpRewritePattern(ctx), weights(weights) {}
  const ckpt::WeightStore *weights;

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

/// How an importer spelled the scatter of a sparse dispatch.
enum class ScatterSpelling {
  /// FX index_add: `acc + onehot(rows)^T @ (expert(x[rows]) * w[..])`.
  OneHotMatmul,
  /// ONNX ScatterElements: a one-hot select over [T, N, H] reduced over N
  /// (into zeros then Add, or reduction=add into the accumulator).
  Scattered,
};

/// The values a sparse-dispatch check evaluates, all depending on the
/// traced count N.
struct DispatchValues {
  Value nonzero;   // llm.nonzero result [N, 2]
  Value expertIn;  // the expert's input [N, H]
  Value expertOut; // the expert's result [N, Hout]
  Value weights;   // the gathered routing weights, N elements
  Value scatter;   // OneHotMatmul: the one-hot [T, N]; Scattered: the term
};

/// One candidate dispatch at `add` = acc + term.
struct Dispatch {
  ScatterSpelling spelling;
  Value acc;
  DispatchValues v;
  NonzeroOp nonzero;
  GatedMLPOp expert;
  int64_t T = 0, N = 0, H = 0, Hout = 0;
};

/// Ops the ONNX scatter term `s` depends on before the llm.nonzero and the
/// expert product: the nonzero and the products `gated_mlp * w` it reaches
/// (nothing past them). False when the walk is longer than a scatter
/// spelling.
bool scatterSlice(Value s, SmallVectorImpl<NonzeroOp> &nonzeros,
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
      if (defOp<GatedMLPOp>(mul.getLhs()) || defOp<GatedMLPOp>(mul.getRhs())) {
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

/// The structure of a dispatch at `add` in either spelling (what is checked
/// by evaluation comes later); the failure reason in `why`.
std::optional<Dispatch> matchDispatch(AddOp add, StringRef &why) {
  auto outType = dyn_cast<RankedTensorType>(add.getType());
  if (!outType || outType.getRank() != 2 || !outType.hasStaticShape() ||
      !outType.getElementType().isF32())
    return std::nullopt;
  Dispatch d;
  d.T = outType.getDimSize(0);
  d.Hout = outType.getDimSize(1);
  MulOp product;
  bool matched = matchEitherOrder(add, [&](Value a, Value s) {
    if (auto mm = defOp<MatmulOp>(s)) {
      auto pType = dyn_cast<RankedTensorType>(mm.getLhs().getType());
      if (!pType || pType.getRank() != 2 || !pType.hasStaticShape())
        return false;
      product = defOp<MulOp>(mm.getRhs());
      if (!product)
        return false;
      // The one llm.nonzero the scatter's rows come from.
      NonzeroOp nonzero;
      for (Operation *op : backwardSlice(mm.getLhs(), 64))
        if (auto nz = dyn_cast<NonzeroOp>(op)) {
          if (nonzero && nonzero != nz)
            return false;
          nonzero = nz;
        }
      if (!nonzero)
        return false;
      d.spelling = ScatterSpelling::OneHotMatmul;
      d.v.scatter = mm.getLhs();
      d.nonzero = nonzero;
    } else {
      SmallVector<NonzeroOp> nonzeros;
      SmallVector<MulOp> products;
      if (!scatterSlice(s, nonzeros, products) || nonzeros.size() != 1 ||
          products.size() != 1)
        return false;
      d.spelling = ScatterSpelling::Scattered;
      d.v.scatter = s;
      d.nonzero = nonzeros.front();
      product = products.front();
    }
    d.acc = a;
    return true;
  });
  if (!matched)
    return std::nullopt;
  d.v.nonzero = d.nonzero.getResult();
  auto maskType = cast<RankedTensorType>(d.nonzero.getInput().getType());
  d.N = cast<RankedTensorType>(d.nonzero.getType()).getDimSize(0);
  if (maskType.getRank() != 2 || !maskType.hasStaticShape()) {
    why = "mask is not [tokens, slots]";
    return std::nullopt;
  }
  if (!matchEitherOrder(product, [&](Value e, Value w) {
        d.expert = defOp<GatedMLPOp>(e);
        d.v.weights = stripBroadcast(w);
        auto wt = dyn_cast<RankedTensorType>(d.v.weights.getType());
        return d.expert && wt && wt.hasStaticShape() &&
               wt.getNumElements() == d.N;
      })) {
    why = "not an expert times a weight";
    return std::nullopt;
  }
  d.v.expertIn = d.expert.getInput();
  d.v.expertOut = d.expert.getResult();
  auto xrType = cast<RankedTensorType>(d.v.expertIn.getType());
  auto erType = cast<RankedTensorType>(d.v.expertOut.getType());
  if (xrType.getRank() != 2 || xrType.getDimSize(0) != d.N ||
      erType.getShape() != ArrayRef<int64_t>{d.N, d.Hout}) {
    why = "expert is not [N, H] -> [N, H']";
    return std::nullopt;
  }
  d.H = xrType.getDimSize(1);
  if (d.spelling == ScatterSpelling::OneHotMatmul &&
      cast<RankedTensorType>(d.v.scatter.getType()).getShape() !=
          ArrayRef<int64_t>{d.T, d.N}) {
    why = "the one-hot is not [T, N]";
    return std::nullopt;
  }
  return d;
}

/// Checks, on four sets of sample nonzero positions with random x and w
/// (and random expert rows R bound in place of the expert's result), that
/// token column r, gathered tensor x and weights w make `v` (at count N)
/// the dispatch:
///   x gathered:  the expert's input row i is x[rows[i]],
///   w gathered:  the weight of row i is w[rows[i], slots[i]],
///   scatter:     OneHotMatmul: the one-hot is (t == rows[i]);
///                Scattered: S[t] = sum_i [t == rows[i]] R[i] w[rows[i],
///                slots[i]] for every t and feature (f32 rounding aside),
///                which with random R pins the one-hot too.
bool checkDispatch(Dispatch &d, const DispatchValues &v, int64_t N, int64_t r,
                   Value x, Value w, int64_t K, std::mt19937 &rng) {
  auto maskType = cast<RankedTensorType>(d.nonzero.getInput().getType());
  int64_t T = d.T, H = d.H, Hout = d.Hout;
  for (int sample = 0; sample < 4; ++sample) {
    ConstTensor nz = sampleNonzero(maskType.getDimSize(0),
                                   maskType.getDimSize(1), N, sample, rng);
    ConstTensor xs =
        randomTensor(cast<RankedTensorType>(x.getType()).getShape(), rng);
    ConstTensor ws =
        randomTensor(cast<RankedTensorType>(w.getType()).getShape(), rng);
    ConstTensor rows = randomTensor({N, Hout}, rng);
    llvm::DenseMap<Value, ConstTensor> bind;
    bind[v.nonzero] = nz;
    bind[x] = xs;
    bind[w] = ws;
    if (d.spelling == ScatterSpelling::Scattered)
      bind[v.expertOut] = rows;
    auto got = evaluateConstant(v.scatter, nullptr, &bind);
    auto xr = evaluateConstant(v.expertIn, nullptr, &bind);
    auto wg = evaluateConstant(v.weights, nullptr, &bind);
    int64_t want =
        d.spelling == ScatterSpelling::OneHotMatmul ? T * N : T * Hout;
    if (!got || !xr || !wg || got->numElements() != want ||
        xr->numElements() != N * H || wg->numElements() != N)
      return false;
    std::vector<double> sum(T * Hout, 0.0);
    for (int64_t i = 0; i < N; ++i) {
      int64_t t = nz.data[i * 2 + r], k = nz.data[i * 2 + 1 - r];
      for (int64_t h = 0; h < H; ++h)
        if (xr->data[i * H + h] != xs.data[t * H + h])
          return false;
      if (wg->data[i] != ws.data[t * K + k])
        return false;
      if (d.spelling == ScatterSpelling::OneHotMatmul) {
        for (int64_t u = 0; u < T; ++u)
          if (got->data[u * N + i] != (u == t ? 1.0 : 0.0))
            return false;
      } else {
        for (int64_t h = 0; h < Hout; ++h)
          sum[t * Hout + h] += rows.data[i * Hout + h] * ws.data[t * K + k];
      }
    }
    if (d.spelling == ScatterSpelling::Scattered)
      for (int64_t j = 0; j < T * Hout; ++j)
        if (std::fabs(got->data[j] - sum[j]) >
            kScatterTolerance * std::max(1.0, std::fabs(sum[j])))
          return false;
  }
  return true;
}

/// `t` with every dimension of size 0 set to `n`.
RankedTensorType withCount(RankedTensorType t, int64_t n) {
  SmallVector<int64_t> shape(t.getShape());
  for (int64_t &d : shape)
    if (d == 0)
      d = n;
  return t.clone(shape);
}

/// A copy of the dispatch `d` traced with no tokens (N = 0) at count `n`:
/// every op between the nonzero and the checked values whose type has a
/// zero dimension, or that depends on one that has, is cloned into
/// `scratch` with those dimensions set to n (splat constants re-shaped; the
/// expert keeps its weights). Ops outside (x, w, masks, weights) are shared.
/// Null when a clone does not verify or a constant cannot be re-shaped: the
/// subgraph is then not the same function of N.
std::optional<DispatchValues> retypedDispatch(Dispatch &d, int64_t n,
                                              ModuleOp scratch) {
  SmallVector<Value> roots{d.v.scatter, d.v.expertIn, d.v.weights};
  llvm::SetVector<Operation *> slice;
  for (Value root : roots)
    for (Operation *op : backwardSlice(root, 256))
      slice.insert(op);
  auto hasZeroDim = [](Type t) {
    auto rt = dyn_cast<RankedTensorType>(t);
    return rt && llvm::is_contained(rt.getShape(), 0);
  };
  SmallVector<Operation *> ops(slice.begin(), slice.end());
  Block *block = d.nonzero->getBlock();
  for (Operation *op : ops)
    if (op->getBlock() != block)
      return std::nullopt;
  llvm::sort(ops,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  IRMapping map;
  llvm::SmallPtrSet<Operation *, 32> cloned;
  OpBuilder b(scratch.getBodyRegion());
  b.setInsertionPointToEnd(scratch.getBody());
  for (Operation *op : ops) {
    bool needs =
        llvm::any_of(op->getResultTypes(), hasZeroDim) ||
        llvm::any_of(op->getOperands(), [&](Value o) {
          return o.getDefiningOp() && cloned.contains(o.getDefiningOp());
        });
    if (!needs)
      continue;
    if (op->getNumRegions() != 0)
      return std::nullopt;
    Operation *c;
    if (auto cst = dyn_cast<arith::ConstantOp>(op)) {
      auto attr = dyn_cast<DenseElementsAttr>(cst.getValue());
      if (!attr || !attr.isSplat())
        return std::nullopt;
      auto type = withCount(cast<RankedTensorType>(attr.getType()), n);
      c = arith::ConstantOp::create(b, op->getLoc(), attr.resizeSplat(type));
    } else {
      c = b.clone(*op, map);
      for (OpResult res : c->getResults())
        if (auto rt = dyn_cast<RankedTensorType>(res.getType()))
          res.setType(withCount(rt, n));
    }
    map.map(op->getResults(), c->getResults());
    cloned.insert(op);
    if (failed(mlir::verify(c, /*verifyRecursively=*/false)))
      return std::nullopt;
  }
  if (!cloned.contains(d.nonzero))
    return std::nullopt;
  DispatchValues v;
  v.nonzero = map.lookupOrDefault(d.v.nonzero);
  v.expertIn = map.lookupOrDefault(d.v.expertIn);
  v.weights = map.lookupOrDefault(d.v.weights);
  v.scatter = map.lookupOrDefault(d.v.scatter);
  // The expert's result is bound (Scattered); when the slice did not reach
  // the expert, a stand-in of the right type is enough.
  v.expertOut = map.lookupOrDefault(d.v.expertOut);
  if (d.spelling == ScatterSpelling::Scattered &&
      v.expertOut == d.v.expertOut) {
    auto c = cast<GatedMLPOp>(b.clone(*d.expert, map));
    c.getInputMutable().assign(v.expertIn);
    c.getResult().setType(
        withCount(cast<RankedTensorType>(d.expert.getType()), n));
    v.expertOut = c.getResult();
  }
  return v;
}

/// Erases the scatter's now-dead index computation and `nonzero` itself
/// once the dense term has replaced the scatter: the dense term is exact for
/// any selection, so the traced-count check is proved unnecessary. A nonzero
/// that still has other users keeps its check.
void eraseProvenCheck(PatternRewriter &rewriter, NonzeroOp nonzero) {
  SetVector<Operation *> slice;
  getForwardSlice(nonzero.getOperation(), &slice);
  for (Operation *op : llvm::reverse(slice))
    if (op->use_empty() && isPure(op))
      rewriter.eraseOp(op);
  if (nonzero->use_empty())
    rewriter.eraseOp(nonzero);
}

/// A sparse per-expert dispatch, index_add(acc, 0, rows, expert(x[rows]) *
/// w[rows, slots]) with (rows, slots) the columns of llm.nonzero(mask) in
/// either order, in the FX (one-hot matmul) or ONNX (ScatterElements)
/// spelling -> `acc + broadcast(gate) * expert(x)` with gate[t] = sum_k
/// (mask[t, k] ? w[t, k] : 0). Exact for any mask and any row-wise expert
/// (llm.gated_mlp): every row the scatter adds is the expert's row for that
/// token times its weight, summed over the slots that pick it. The pieces
/// are checked by evaluation (checkDispatch); an expert that received no
/// tokens in the trace (N = 0: nothing to evaluate) is checked on a copy
/// of its subgraph re-typed to a few tokens.
struct DensifySparseDispatch : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    StringRef why = "not a sparse dispatch";
    std::optional<Dispatch> d = matchDispatch(add, why);
    if (!d)
      return rewriter.notifyMatchFailure(add, why);
    auto maskType = cast<RankedTensorType>(d->nonzero.getInput().getType());
    int64_t T = d->T, H = d->H;
    // Checked at N, or at a few tokens on a re-typed copy when N = 0.
    int64_t N = d->N;
    DispatchValues v = d->v;
    OwningOpRef<ModuleOp> scratch;
    if (N == 0) {
      N = std::min<int64_t>(3, maskType.getNumElements());
      scratch = ModuleOp::create(add.getLoc());
      std::optional<DispatchValues> retyped =
          N > 0 ? retypedDispatch(*d, N, *scratch) : std::nullopt;
      if (!retyped)
        return rewriter.notifyMatchFailure(
            add, "no tokens in the trace and the subgraph does not re-type");
      v = *retyped;
    }
    // The gathered tensor: [T, H] up to leading unit / row dimensions.
    SmallVector<Value> xCandidates =
        findSources(d->v.expertIn, [&](ArrayRef<int64_t> s) {
          int64_t n = 1;
          for (int64_t dim : s)
            n *= dim;
          return s.size() >= 2 && s.back() == H && n == T * H;
        });
    if (xCandidates.empty())
      return rewriter.notifyMatchFailure(add, "no [T, H] input of the gather");
    std::mt19937 rng(0xd15c);
    for (int64_t r = 0; r < 2; ++r) {
      if (maskType.getDimSize(r) != T)
        continue;
      int64_t K = maskType.getDimSize(1 - r);
      SmallVector<Value> wCandidates = findSources(d->v.weights, [&](ArrayRef<
                                                                     int64_t>
                                                                         s) {
        return s == ArrayRef<int64_t>{T, K} || s == ArrayRef<int64_t>{T, K, 1};
      });
      // The farthest x first: the experts of one dispatch then share it.
      Value x, w;
      for (Value xc : llvm::reverse(xCandidates))
        for (Value wc : wCandidates)
          if (!x && checkDispatch(*d, v, N, r, xc, wc, K, rng)) {
            x = xc;
            w = wc;
          }
      if (!x)
        continue;
      scratch = nullptr; // drop the re-typed copy's uses before rewriting
      NonzeroOp nonzero = d->nonzero;
      rewriter.replaceOpWithNewOp<AddOp>(add, d->acc,
                                         denseTerm(rewriter, add, nonzero, r,
                                                   w, x, d->expert, T, K, H,
                                                   d->Hout));
      eraseProvenCheck(rewriter, nonzero);
      return success();
    }
    return rewriter.notifyMatchFailure(
        add, "not a scatter of expert rows gathered by nonzero");
  }
};

/// The per-token scalar gate of Qwen2-MoE's shared expert on x [T, H]:
/// `broadcast(sigmoid(linear(x, g)))` with g [1, H] and no bias, the linear
/// possibly on a row view of x and its [T, 1] result possibly viewed as
/// rows. Returns g, or null.
Value matchSharedExpertGate(Value gate, Value x) {
  auto xType = dyn_cast<RankedTensorType>(x.getType());
  if (!xType || xType.getRank() != 2)
    return Value();
  Value v = stripBroadcast(gate);
  auto vType = dyn_cast<RankedTensorType>(v.getType());
  if (!vType || vType.getShape() != ArrayRef<int64_t>{xType.getDimSize(0), 1})
    return Value();
  auto sig = defOp<SigmoidOp>(v);
  if (!sig)
    return Value();
  auto lin = defOp<LinearOp>(stripRowReshape(sig.getInput()));
  // Row views keep the token order: compare what both are views of.
  if (!lin || lin.getBias() ||
      stripRowReshape(lin.getInput()) != stripRowReshape(x))
    return Value();
  auto wType = dyn_cast<RankedTensorType>(lin.getWeight().getType());
  if (!wType || wType.getShape() != ArrayRef<int64_t>{1, xType.getDimSize(1)})
    return Value();
  return lin.getWeight();
}

/// moe(x) + shared(x) -> llm.moe with the shared expert (DeepSeek, Llama 4:
/// an ungated shared expert with the routed experts' activation), and
/// moe(x) + broadcast(sigmoid(linear(x, g))) * shared(x) with g [1, H]
/// (Qwen2-MoE, the product in either order) -> llm.moe with the shared
/// expert gated by g. llm.moe adds the shared expert after the routed sum,
/// as the graph does.
struct FoldSharedExpert : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    MoEOp moe;
    GatedMLPOp shared;
    Value sharedGate;
    bool matched = matchEitherOrder(add, [&](Value a, Value b) {
      moe = defOp<MoEOp>(a);
      if (!moe || moe.hasSharedExpert())
        return false;
      auto fits = [&](GatedMLPOp mlp) {
        return mlp && mlp.getInput() == moe.getInput() &&
               mlp.getActivation() == moe.getActivation();
      };
      shared = defOp<GatedMLPOp>(b);
      sharedGate = Value();
      if (fits(shared))
        return true;
      auto mul = defOp<MulOp>(b);
      if (!mul || mul.getType() != moe.getType())
        return false;
      return matchEitherOrder(mul, [&](Value g, Value m) {
        shared = defOp<GatedMLPOp>(m);
        sharedGate = matchSharedExpertGate(g, moe.getInput());
        return fits(shared) && sharedGate;
      });
    });
    if (!matched)
      return failure();
    auto fused = MoEOp::create(
        rewriter, add.getLoc(), moe.getType(), moe.getInput(),
        moe.getRouterWeight(), moe.getRouterBias(),
        moe.getScoreCorrectionBias(), moe.getGate(), moe.getUp(), moe.getDown(),
        moe.getGateBias(), moe.getUpBias(), moe.getDownBias(), shared.getGate(),
        shared.getUp(), shared.getDown(), sharedGate, moe.getTopKAttr(),
        moe.getScoringAttr(), moe.getOrderAttr(), moe.getRenormalizeAttr(),
        moe.getRoutedScalingFactorAttr(), moe.getActivationAttr(),
        moe.getWeightOnInputAttr(), moe.getSwigluLimitAttr(),
        moe.getSwigluAlphaAttr(), moe.getNGroupAttr(), moe.getTopkGroupAttr(),
        moe.getGroupScoreTopkAttr(), moe.getRenormalizeEpsilonAttr());
    rewriter.replaceOp(add, fused.getResult());
    return success();
  }
};

} // namespace

void populateDensifySparseDispatchPatterns(RewritePatternSet &patterns) {
  patterns.add<DensifySparseDispatch>(patterns.getContext());
}

void populateRaiseMoEPatterns(RewritePatternSet &patterns,
                              const ckpt::WeightStore *weights) {
  patterns.add<RaiseDenseMoE, RaiseExpertSumMoE>(patterns.getContext(),
                                                 weights);
  patterns.add<FoldSharedExpert>(patterns.getContext());
}

} // namespace pimc::llm
