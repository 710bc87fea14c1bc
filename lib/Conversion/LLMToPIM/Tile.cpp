//===- Tile.cpp - pim-tile: how each GEMV and attention maps
//---------------===//
//
// The mapping decisions of the backend, made from the target's cost model
// (CostModel.h) and recorded in the IR for pim-build-program:
//   * module `pim.max_context` (KV positions provisioned) and
//     `pim.channels` (channels in use);
//   * per pim.gemv on the PIM units, `pim.k_parts`: K split over that many
//     disjoint channel sets (partial sums added after) when that balances
//     the work better than spreading N alone;
//   * per pim.attention, after checking that it maps at all, `pim.split`:
//     the parts of the sequence, each on its own channels, merged by
//     attn_combine (docs/backend.md, "Split attention").
//
//===----------------------------------------------------------------------===//
#include "CostModel.h"

#include "pimc/Conversion/LLMToPIM/Passes.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace pimc;
using namespace pimc::pim;
using namespace pimc::pim::detail;

namespace {

struct Tiler {
  Machine m;
  const BackendOptions &opts;
  int64_t maxContext = 0;

  bool elementwiseForced() const { return opts.dispatch.count("elementwise"); }
  int64_t gemvKParts(GemvOp op) const;
  LogicalResult checkAttention(pim::AttentionOp op) const;
  LogicalResult checkAlibi(pim::AttentionOp op,
                           const pimsim::NearMemoryUnit &sfm) const;
  int64_t attentionSplit(pim::AttentionOp op, std::string &why) const;
};

/// K split into P parts on P disjoint channel sets (C / P channels each)
/// when that balances the work better than spreading N alone: the cost is
/// I * rows-per-part MAC rows per channel, I = ceil(N / (channels per part *
/// banks)). Costs in memory cycles: a DRAM row of MACs is columns * nCCDAB
/// plus the row switch (PREA + ACTAB); a group adds the readout round trip;
/// a buffer segment adds a barrier; the partial sums cost the near-memory
/// unit (or host) (P + 1) * N element passes.
int64_t Tiler::gemvKParts(GemvOp op) const {
  int64_t K = 0, N = 0;
  for (Value w : op.getStreamedWeights()) {
    auto [n, k] = weightShape(w.getType());
    K = k;
    N += n;
  }
  int64_t kRows = ceilDiv(K, m.E);
  const pimsim::NearMemoryUnit *vec =
      nearMemoryUnitFor(m, "add", elementwiseForced());
  int64_t P = 1;
  double best = -1;
  for (int64_t cand = 1; cand <= std::min(m.C, kRows); ++cand) {
    if (m.C % cand)
      continue;
    int64_t cp = m.C / cand;
    int64_t nchC = std::min(cp, ceilDiv(N, m.B));
    int64_t rowsC = ceilDiv(kRows, cand);
    int64_t segsC =
        rowsC * m.E <= m.gbEl
            ? 1
            : ceilDiv(rowsC, std::max<int64_t>(1, m.gbEl / 2 / m.E));
    double cost = double(ceilDiv(N, nchC * m.B)) *
                  (rowsC * (m.cols * m.ccdab + m.rowSwitch) + m.readout +
                   segsC * m.segment);
    if (cand > 1)
      cost +=
          vec ? vec->latencyCycles + (cand + 1) * N / vec->elementsPerCycle
              : (cand + 1) * N * 4.0 / m.hostBytesPerSec / (m.t.tCKps * 1e-12);
    if (best < 0 || cost < best) {
      best = cost;
      P = cand;
    }
  }
  return P;
}

/// What the PIM mapping of attention needs (docs/backend.md, "Attention").
LogicalResult Tiler::checkAttention(pim::AttentionOp op) const {
  if (!op.getCausal())
    return op.emitError("PIM lowering: non-causal attention is not supported "
                        "in decode");
  auto qt = cast<ShapedType>(op.getQuery().getType());
  auto kt = cast<ShapedType>(op.getKey().getType());
  auto vt = cast<ShapedType>(op.getValue().getType());
  int64_t hd = qt.getDimSize(2), KVH = kt.getDimSize(1);
  if (vt.getDimSize(2) != hd)
    return op.emitError() << "PIM lowering: value head dim " << vt.getDimSize(2)
                          << " differs from the key head "
                          << "dim " << hd
                          << " (MLA's latent attention has no PIM lowering "
                             "yet; docs/backend.md)";
  if (hd % m.lanes != 0 || hd / m.lanes > m.cols)
    return op.emitError() << "PIM lowering: head dim " << hd
                          << " must be a multiple of the PIM lanes (" << m.lanes
                          << ") and at most one DRAM row";
  if (KVH > m.C)
    return op.emitError() << "PIM lowering: " << KVH
                          << " KV heads need one channel each, target has "
                          << m.C;
  if (!m.softmaxUnit)
    return op.emitError() << "PIM lowering: target '" << m.t.name
                          << "' has no softmax near-memory unit (the host "
                             "softmax path is not implemented yet)";
  // The cap is per score, ahead of the softmax: the unit applies it (sfm
  // cap=), which also keeps it exact under a split (attn_combine merges
  // capped-score statistics).
  const pimsim::NearMemoryUnit *sfm = m.t.nearMemoryUnit("softmax");
  if (op.getLogitSoftcap() && !llvm::is_contained(sfm->features, "softcap"))
    return op.emitError()
           << "PIM lowering: target '" << m.t.name
           << "': attention with logit_softcap "
           << llvm::formatv(
                  "{0}",
                  llvm::format("%g", op.getLogitSoftcap()->convertToDouble()))
                  .str()
           << " needs the softmax near-memory unit's feature "
              "'softcap' (sfm cap=), which it does not list";
  return checkAlibi(op, *sfm);
}

/// ALiBi runs on the softmax unit (sfm alibi=), which needs the feature;
/// the bias is per key at its absolute position, which a ring cache's
/// slots do not keep in order.
LogicalResult Tiler::checkAlibi(pim::AttentionOp op,
                                const pimsim::NearMemoryUnit &sfm) const {
  if (!op.getAlibiSlopes())
    return success();
  if (!llvm::is_contained(sfm.features, "alibi"))
    return op.emitError() << "PIM lowering: target '" << m.t.name
                          << "': attention with ALiBi biases needs the "
                             "softmax near-memory unit's feature 'alibi' "
                             "(sfm alibi=), which it does not list";
  if (op.ringKeys())
    return op.emitError("PIM lowering: ALiBi attention with a sliding window "
                        "is not supported (a ring cache's slots are not in "
                        "key order)");
  return success();
}

/// The split S of an attention (forced by attention-split or chosen by the
/// cost model); 0 with `why` set when none fits.
int64_t Tiler::attentionSplit(pim::AttentionOp op, std::string &why) const {
  auto qt = cast<ShapedType>(op.getQuery().getType());
  auto kt = cast<ShapedType>(op.getKey().getType());
  int64_t H = qt.getDimSize(1), hd = qt.getDimSize(2);
  int64_t KVH = kt.getDimSize(1);
  int64_t window = op.ringKeys();
  int64_t maxT = maxContext;
  if (window > 0 && window < maxContext)
    return 1; // ring caches are not split (docs/backend.md)
  int64_t R = replicasFor(m, H, KVH), NC = KVH * R, Gq = H / KVH / R;
  // Keys one channel's softmax can take: its probabilities fill whole V rows
  // (E keys each) of the global buffer.
  int64_t limit = (m.gbEl / m.E) * m.E;
  int64_t byChannels = std::max<int64_t>(1, m.C / NC);
  auto fits = [&](int64_t S) { return splitKeys(m, maxT, S) <= limit; };
  // Every part holds at least one key.
  auto nonEmpty = [&](int64_t S) {
    return S == 1 || splitKeys(m, maxT, S) * (S - 1) < maxT;
  };
  if (opts.attentionSplit > 0) {
    int64_t S = opts.attentionSplit;
    if (S > kMaxSplit)
      why = llvm::formatv("--attention-split {0}: at most {1} parts", S,
                          kMaxSplit);
    else if (NC * S > m.C)
      why = llvm::formatv("--attention-split {0}: {1} KV heads x {2} copies x "
                          "{0} parts need {3} channels, target has {4}",
                          S, KVH, R, NC * S, m.C);
    else if (!nonEmpty(S))
      why = llvm::formatv("--attention-split {0}: a context of {1} keys "
                          "leaves a part without keys",
                          S, maxT);
    else if (!fits(S))
      why = llvm::formatv("a context of {0} keys in {1} part(s) needs {2} "
                          "keys per channel; one channel's global buffer "
                          "holds {3} probabilities (use --max-context {4} or "
                          "less, or a larger --attention-split)",
                          maxT, S, splitKeys(m, maxT, S), limit, S * limit);
    else
      return S;
    return 0;
  }
  int64_t Smax = std::min(kMaxSplit, byChannels);
  if (!fits(Smax)) {
    why = llvm::formatv(
        "a context of {0} keys needs {1} parts of at most {2} keys (one "
        "channel's global buffer holds {2} probabilities), but {3} KV heads x "
        "{4} copies on {5} channels leave room for {6} (at most {7}; use "
        "--max-context {8} or less)",
        maxT, ceilDiv(maxT, limit), limit, KVH, R, m.C, Smax, kMaxSplit,
        Smax * limit);
    return 0;
  }
  // Cost model: the slowest channel's MAC columns (keys and values, one
  // row switch per row) for its Gq q heads, plus the merge on the vector
  // unit (or the host).
  const pimsim::NearMemoryUnit *vec =
      nearMemoryUnitFor(m, "attn_combine", elementwiseForced());
  int64_t cpk = hd / m.lanes, kpr = m.cols / cpk, nd = ceilDiv(hd, m.B);
  auto cost = [&](int64_t S) {
    int64_t Tp = S == 1 ? maxT : splitKeys(m, maxT, S);
    int64_t kr = ceilDiv(ceilDiv(Tp, m.B), kpr), vr = ceilDiv(Tp, m.E);
    double c = double(Gq) * (kr * (kpr * cpk * m.ccdab + m.rowSwitch) +
                             nd * vr * (m.cols * m.ccdab + m.rowSwitch));
    if (S > 1) {
      double elems = double(S) * H * (nd * m.B + 2);
      c += vec ? vec->latencyCycles + elems / vec->elementsPerCycle
               : m.hostNs(int64_t(elems * 4), int64_t(elems * 3)) /
                     (m.t.tCKps * 1e-3);
    }
    return c;
  };
  int64_t best = 0;
  double bestCost = 0;
  for (int64_t S = 1; S <= Smax; ++S) {
    if (!fits(S) || !nonEmpty(S))
      continue;
    double c = cost(S);
    if (best == 0 || c < bestCost) {
      best = S;
      bestCost = c;
    }
  }
  return best;
}

} // namespace

LogicalResult pimc::pim::tileForTarget(ModuleOp module,
                                       const pimsim::Target &target,
                                       const BackendOptions &options) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("no func.func @forward to compile");
  Tiler t{Machine(target), options};
  if (options.channels > 0)
    t.m.C = std::min(t.m.C, options.channels);
  int64_t modelContext = 2048;
  if (auto mc = module->getAttrOfType<IntegerAttr>("llm.max_context"))
    modelContext = mc.getInt();
  t.maxContext = options.maxContext > 0
                     ? options.maxContext
                     : std::min<int64_t>(modelContext, t.m.gbEl);
  if (t.maxContext > modelContext)
    return module.emitError()
           << "--max-context " << t.maxContext
           << " exceeds the model's maximum context " << modelContext;
  Builder b(module.getContext());
  module->setAttr(kMaxContextAttrName, b.getI64IntegerAttr(t.maxContext));
  module->setAttr(kChannelsAttrName, b.getI64IntegerAttr(t.m.C));
  for (Operation &op : forward.getBody().front()) {
    if (auto g = dyn_cast<GemvOp>(op)) {
      if (!dispatchedToHost(g))
        g->setAttr(kKPartsAttrName, b.getI64IntegerAttr(t.gemvKParts(g)));
    } else if (auto at = dyn_cast<pim::AttentionOp>(op)) {
      if (failed(t.checkAttention(at)))
        return failure();
      std::string why;
      int64_t S = t.attentionSplit(at, why);
      if (S == 0)
        return at.emitError() << "PIM lowering: " << why;
      at->setAttr(kSplitAttrName, b.getI64IntegerAttr(S));
    }
  }
  return success();
}

namespace pimc::pim {
#define GEN_PASS_DEF_PIMTILE
#include "pimc/Conversion/LLMToPIM/Passes.h.inc"
} // namespace pimc::pim

namespace {
struct TilePass : public pimc::pim::impl::PIMTileBase<TilePass> {
  using PIMTileBase::PIMTileBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<pimsim::Target> target = TargetAttr::lookup(module);
    if (failed(target))
      return signalPassFailure();
    BackendOptions options;
    options.maxContext = maxContext;
    options.channels = channels;
    options.attentionSplit = attentionSplit;
    options.dispatch = forcedDispatch(module);
    if (failed(tileForTarget(module, *target, options)))
      signalPassFailure();
  }
};
} // namespace
