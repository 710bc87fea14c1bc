//===- SelectKernels.cpp - pim-select-kernels: generated or library -------===//
//
// Per pim.gemv / pim.attention on the PIM units (after pim-tile): the
// library kernels of its op kind that serve its shape class (every
// `.applies` holds for every stream the op becomes) are priced by their
// `.cost`, the generated lowering by CostModel.h's estimate (KernelSites.h);
// the cheapest wins, a tie keeps the generated lowering. `kernels=`
// generated|library overrides the cost. Recorded as `pim.kernel` and
// `pim.kernel_cycles`; pim-build-program instantiates the choice.
//
//===----------------------------------------------------------------------===//
#include "KernelSites.h"
#include "pimc/Conversion/LLMToPIM/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

using namespace mlir;
using namespace pimc;
using namespace pimc::pim;
using namespace pimc::pim::detail;

namespace {

/// One candidate's verdict for an op: its cost, or why it does not serve.
struct Verdict {
  double cycles = 0;
  std::string why; // empty: serves
};

/// The shape arguments of each stream an op becomes (a K-split GEMV: one
/// per part) and the generated lowering's cost (the slowest stream).
struct OpShape {
  StringRef kind;
  std::vector<KernelArgs> streams;
  double generated = 0;
  /// Set: no library kernel can serve the op, for this reason.
  std::string onlyGenerated;
};

class Selector {
public:
  Selector(ModuleOp module, const pimsim::Target &t) : module(module), m(t) {
    if (auto c = module->getAttrOfType<IntegerAttr>(kChannelsAttrName))
      m.C = c.getInt();
    if (auto c = module->getAttrOfType<IntegerAttr>(kMaxContextAttrName))
      maxContext = c.getInt();
  }

  LogicalResult run(StringRef mode);

private:
  ModuleOp module;
  Machine m;
  int64_t maxContext = 0;
  /// --kernels library fallbacks: reason -> (first op, count).
  std::map<std::string, std::pair<Operation *, int64_t>> fallbacks;

  FailureOr<OpShape> shapeOf(Operation *op);
  FailureOr<Verdict> price(const kernels::KernelFile &k, const OpShape &s);
};

FailureOr<OpShape> Selector::shapeOf(Operation *op) {
  OpShape s;
  if (auto g = dyn_cast<GemvOp>(op)) {
    auto kp = g->getAttrOfType<IntegerAttr>(kKPartsAttrName);
    if (!kp)
      return op->emitError("pim-select-kernels: no 'pim.k_parts' on the op "
                           "(run pim-tile first)"),
             failure();
    int64_t K = 0, N = 0;
    for (Value w : g.getStreamedWeights()) {
      auto [n, k] = weightShape(w.getType());
      K = k;
      N += n;
    }
    GemvShape gs = gemvShape(m, K, N, kp.getInt());
    s.kind = "gemv";
    for (int64_t p = 0; p < gs.P; ++p) {
      s.streams.push_back(gemvArgs(m, gs, p));
      s.generated =
          std::max(s.generated, gemvGeneratedCycles(m, s.streams.back()));
    }
    if (g.getExperts()) // a kernel's rows cannot add the expert's offset
      s.onlyGenerated = "an expert GEMV needs the generated lowering (its "
                        "weight rows are offset by the routed expert)";
    return s;
  }
  auto at = cast<AttentionOp>(op);
  auto split = at->getAttrOfType<IntegerAttr>(kSplitAttrName);
  if (!split)
    return op->emitError("pim-select-kernels: no 'pim.split' on the op (run "
                         "pim-tile first)"),
           failure();
  auto qt = cast<ShapedType>(at.getQuery().getType());
  auto kt = cast<ShapedType>(at.getKey().getType());
  int64_t window = at.ringKeys();
  int64_t maxT = window > 0 && window < maxContext ? window : maxContext;
  s.kind = "attention";
  s.streams.push_back(attentionArgs(m, qt.getDimSize(1), kt.getDimSize(1),
                                    qt.getDimSize(2), split.getInt(), maxT));
  s.generated = attentionGeneratedCycles(m, s.streams.back());
  if (at.getAlibiSlopes()) // a kernel's sfm could not index the slopes
    s.onlyGenerated = "ALiBi attention needs the generated lowering (sfm "
                      "alibi= with a per-head index)";
  if (at.getChunkSize() || at.getTemperatureFloorScale())
    s.onlyGenerated = "chunked or temperature-tuned attention needs the "
                      "generated lowering (kv_len from the chunk's slot, q "
                      "scaled by the position's temperature)";
  if (at.getSinks()) // the kernels write no softmax statistics unsplit
    s.onlyGenerated = "attention with sinks needs the generated lowering (its "
                      "softmax statistics go to attn_combine, which adds the "
                      "sink)";
  return s;
}

FailureOr<Verdict> Selector::price(const kernels::KernelFile &k,
                                   const OpShape &s) {
  Verdict v;
  for (const KernelArgs &args : s.streams) {
    llvm::Expected<kernels::Bindings> b =
        kernels::Bindings::bind(k, args, /*partial=*/true);
    llvm::Expected<std::string> why =
        b ? kernels::whyNot(*b) : llvm::Expected<std::string>(b.takeError());
    if (!why)
      return module.emitError(llvm::toString(why.takeError())), failure();
    if (!why->empty()) {
      v.why = k.name + ": " + *why;
      return v;
    }
    llvm::Expected<int64_t> c = b->eval(k.cost);
    if (!c)
      return module.emitError(llvm::toString(c.takeError())), failure();
    v.cycles = std::max(v.cycles, double(*c));
  }
  return v;
}

LogicalResult Selector::run(StringRef mode) {
  // "library:a,b": the library restricted to kernels a and b.
  std::set<std::string> only;
  if (mode.consume_front("library:")) {
    SmallVector<StringRef> names;
    mode.split(names, ',', -1, /*KeepEmpty=*/false);
    for (StringRef n : names) {
      if (!kernels::findKernel(n))
        return module.emitError()
                   << "pim-select-kernels: kernels=library:" << n
                   << ": the library has no kernel '" << n << "'",
               failure();
      only.insert(n.str());
    }
    mode = "library";
  }
  llvm::Expected<const std::vector<kernels::KernelFile> &> lib =
      kernels::library();
  if (!lib)
    return module.emitError(llvm::toString(lib.takeError())), failure();
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("no func.func @forward to compile"), failure();
  Builder b(module.getContext());
  for (Operation &op : forward.getBody().front()) {
    if (!isa<GemvOp, AttentionOp>(op) || dispatchedToHost(&op))
      continue;
    FailureOr<OpShape> shape = shapeOf(&op);
    if (failed(shape))
      return failure();
    SmallVector<NamedAttribute> cycles{
        b.getNamedAttr("generated", b.getI64IntegerAttr(shape->generated))};
    std::string best = "generated", whyNone;
    double bestCycles = mode == "library" ? -1 : shape->generated;
    if (!shape->onlyGenerated.empty())
      whyNone = shape->onlyGenerated;
    for (const kernels::KernelFile &k : *lib) {
      if (k.op != shape->kind || (!only.empty() && !only.count(k.name)) ||
          !shape->onlyGenerated.empty())
        continue;
      FailureOr<Verdict> v = price(k, *shape);
      if (failed(v))
        return failure();
      if (!v->why.empty()) {
        whyNone += (whyNone.empty() ? "" : "; ") + v->why;
        continue;
      }
      cycles.push_back(
          b.getNamedAttr(k.name, b.getI64IntegerAttr(int64_t(v->cycles))));
      if (mode != "generated" && (bestCycles < 0 || v->cycles < bestCycles)) {
        best = "library:" + k.name;
        bestCycles = v->cycles;
      }
    }
    if (mode == "library" && best == "generated") {
      std::string reason = whyNone.empty() ? "the library has no " +
                                                 shape->kind.str() + " kernel"
                                           : whyNone;
      auto &[first, n] = fallbacks[reason];
      if (!first)
        first = &op;
      ++n;
    }
    op.setAttr(kKernelAttrName, b.getStringAttr(best));
    op.setAttr(kKernelCyclesAttrName, b.getDictionaryAttr(cycles));
  }
  // Never silently: each reason once, on its first op, with the count.
  for (auto &[reason, at] : fallbacks)
    at.first->emitWarning() << "--kernels library: no library kernel serves "
                            << at.second << " op(s) like this one (" << reason
                            << "); they use the generated lowering";
  return success();
}

} // namespace

namespace pimc::pim {
#define GEN_PASS_DEF_PIMSELECTKERNELS
#include "pimc/Conversion/LLMToPIM/Passes.h.inc"
} // namespace pimc::pim

namespace {
struct SelectKernelsPass
    : public pimc::pim::impl::PIMSelectKernelsBase<SelectKernelsPass> {
  using PIMSelectKernelsBase::PIMSelectKernelsBase;
  void runOnOperation() override {
    if (kernels != "auto" && kernels != "generated" && kernels != "library" &&
        !StringRef(kernels).starts_with("library:")) {
      getOperation().emitError()
          << "pim-select-kernels: kernels=" << kernels
          << " (expected generated, library, library:NAME,... or auto)";
      return signalPassFailure();
    }
    FailureOr<pimsim::Target> target = TargetAttr::lookup(getOperation());
    if (failed(target))
      return signalPassFailure();
    if (failed(Selector(getOperation(), *target).run(kernels)))
      signalPassFailure();
  }
};
} // namespace
