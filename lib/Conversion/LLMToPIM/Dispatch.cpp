//===- Dispatch.cpp - pim-dispatch: where each llm op runs ----------------===//
//
// Per op of @forward: the PIM units (memory-bound GEMVs, attention over the
// KV cache) or the host, from the target's cost model (CostModel.h,
// docs/backend.md "Cost model"), unless forced per op class.
//
//===----------------------------------------------------------------------===//
#include "CostModel.h"
#include "Patterns.h"
#include "pimc/Conversion/LLMToPIM/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace pimc::pim {
#define GEN_PASS_DEF_PIMDISPATCH
#include "pimc/Conversion/LLMToPIM/Passes.h.inc"
} // namespace pimc::pim

using namespace mlir;
using namespace pimc;
using namespace pimc::pim;
using namespace pimc::pim::detail;

llvm::Expected<std::map<std::string, std::string>>
pimc::pim::parseDispatchOverrides(llvm::ArrayRef<std::string> entries) {
  std::map<std::string, std::string> out;
  for (const std::string &d : entries) {
    auto [cls, unit] = StringRef(d).split('=');
    if (cls.empty() || unit.empty())
      return llvm::createStringError(
          llvm::formatv("--dispatch {0}: expected class=unit", d));
    if (!llvm::is_contained(
            {"linear", "attention", "elementwise", "moe", "router"}, cls))
      return llvm::createStringError(
          llvm::formatv("--dispatch {0}: unknown op class '{1}' (linear, "
                        "attention, elementwise, moe, router)",
                        d, cls));
    if (unit != "pim" && unit != "host")
      return llvm::createStringError(llvm::formatv(
          "--dispatch {0}: unknown unit '{1}' (pim, host)", d, unit));
    out[cls.str()] = unit.str();
  }
  return out;
}

static StringRef opClass(Operation *op) {
  if (isa<llm::LinearOp, llm::GatedMLPOp, llm::LMHeadOp, llm::MoEOp>(op))
    return "linear";
  if (isa<llm::AttentionOp, llm::KVCacheAppendOp, llm::KVCacheReadOp>(op))
    return "attention";
  return "elementwise";
}

/// Where an MoE's router runs. A routing decision is discontinuous, and
/// bf16 inputs (8 significand bits) moved Mixtral's router logits by 0.018,
/// enough to flip a top-2 choice: with an input format narrower than fp16
/// the router runs on the host in f32 (as llama.cpp keeps ffn_gate_inp in
/// F32), else on the PIM units, where it costs no host launch. A forced
/// `router` class overrides (docs/backend.md, "MoE on PIM").
static StringRef routerUnit(const Machine &m, const BackendOptions &options) {
  if (auto forced = options.dispatch.find("router");
      forced != options.dispatch.end())
    return forced->second;
  return m.fmt == "bf16" ? "host" : "pim";
}

bool pimc::pim::dispatchedToHost(Operation *op) {
  auto unit = op->getAttrOfType<StringAttr>(kDispatchAttrName);
  return unit && unit.getValue() == "host";
}

std::map<std::string, std::string> pimc::pim::forcedDispatch(ModuleOp module) {
  std::map<std::string, std::string> forced;
  if (auto d = module->getAttrOfType<DictionaryAttr>(kDispatchForceAttrName))
    for (NamedAttribute f : d)
      if (auto unit = dyn_cast<StringAttr>(f.getValue()))
        forced[f.getName().str()] = unit.str();
  return forced;
}

LogicalResult pimc::pim::annotateDispatch(ModuleOp module,
                                          const pimsim::Target &target,
                                          const BackendOptions &options) {
  Machine m(target);
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("no func.func @forward to compile");
  Builder b(module.getContext());
  bool ok = true;
  // One error per distinct problem, on its first op, with a count.
  std::map<std::string, std::pair<Operation *, int>> problems;
  auto problem = [&](Operation *op, const std::string &msg) {
    auto &p = problems[msg];
    if (p.second++ == 0)
      p.first = op;
    ok = false;
  };
  forward.walk([&](Operation *op) {
    if (!isa<llm::LLMDialect>(op->getDialect()) || isa<llm::WeightOp>(op))
      return;
    StringRef cls = opClass(op);
    int64_t bytes = 0, flops = 0, inBytes = 0;
    for (Value v : op->getOperands())
      if (auto w = v.getDefiningOp<llm::WeightOp>())
        bytes += weightBytes(w.getType());
      else if (isa<ShapedType>(v.getType()))
        inBytes += tokenElements(v.getType()) * 4;
    // MoE: a token reads top_k of the E experts' weights.
    if (auto moe = dyn_cast<llm::MoEOp>(op)) {
      int64_t experts = 0;
      for (Value v :
           llvm::concat<Value>(moe.getGate(), moe.getUp(), moe.getDown()))
        if (auto w = v.getDefiningOp<llm::WeightOp>())
          experts += weightBytes(w.getType());
      bytes -= experts - experts / moe.getNumExperts() * moe.getTopK();
    }
    flops = 2 * std::max<int64_t>(bytes / 2, inBytes / 4);
    double pimNs = 0, hostNs = m.hostNs(bytes + inBytes, flops);
    std::string choice = "host";
    if (cls == "linear" || cls == "attention") {
      // Decode GEMV / attention: memory bound, the PIM units win.
      pimNs = m.pimNs(bytes, inBytes);
      choice = pimNs < hostNs ? "pim" : "host";
    }
    // An MoE is a linear; the `moe` class, when forced, decides it alone.
    auto forced = options.dispatch.find(cls.str());
    if (isa<llm::MoEOp>(op) && options.dispatch.count("moe"))
      forced = options.dispatch.find("moe");
    if (forced != options.dispatch.end()) {
      if (forced->second == "pim" && cls == "elementwise") {
        problem(op, "'" + op->getName().getStringRef().str() +
                        "' cannot run on the PIM units of target '" +
                        target.name + "'");
        return;
      }
      choice = forced->second;
    }
    if (choice == "host" && cls == "attention") {
      problem(op, "'" + op->getName().getStringRef().str() +
                      "' placed on the host: the host path for attention "
                      "over the KV cache is not implemented yet");
      return;
    }
    if (choice == "host" && cls == "linear")
      for (Value v : op->getOperands())
        if (auto w = v.getDefiningOp<llm::WeightOp>();
            w && isa<llm::QuantizedWeightType>(w.getType())) {
          problem(op, "'" + op->getName().getStringRef().str() +
                          "' placed on the host: quantized weights (" +
                          cast<llm::QuantizedWeightType>(w.getType())
                              .getPacking()
                              .str() +
                          ") have no host GEMV yet");
          return;
        }
    // An MoE the PIM units cannot take (prefill, the weight on the input)
    // is a host call.
    if (auto moe = dyn_cast<llm::MoEOp>(op); moe && !moeMapsToPIM(moe))
      choice = "host";
    op->setAttr(kDispatchAttrName, b.getStringAttr(choice));
    if (isa<llm::MoEOp>(op))
      op->setAttr(kRouterDispatchAttrName,
                  b.getStringAttr(routerUnit(m, options)));
    op->setAttr(kCostAttrName,
                b.getDictionaryAttr(
                    {b.getNamedAttr("pim_ns", b.getF64FloatAttr(pimNs)),
                     b.getNamedAttr("host_ns", b.getF64FloatAttr(hostNs))}));
  });
  // The forced classes, for the passes after dispatch (an elementwise class
  // forced to the host also keeps the kernels off the near-memory units).
  if (!options.dispatch.empty()) {
    SmallVector<NamedAttribute> forced;
    for (auto &[cls, unit] : options.dispatch)
      forced.push_back(b.getNamedAttr(cls, b.getStringAttr(unit)));
    module->setAttr(kDispatchForceAttrName, b.getDictionaryAttr(forced));
  }
  for (auto &[msg, p] : problems) {
    InFlightDiagnostic d = p.first->emitError() << msg;
    if (p.second > 1)
      d << " (and " << p.second - 1 << " more ops)";
  }
  return success(ok);
}

namespace {
struct DispatchPass : public pimc::pim::impl::PIMDispatchBase<DispatchPass> {
  using PIMDispatchBase::PIMDispatchBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<pimsim::Target> target = TargetAttr::lookup(module);
    if (failed(target))
      return signalPassFailure();
    BackendOptions options;
    auto overrides = parseDispatchOverrides(force);
    if (!overrides) {
      module.emitError() << llvm::toString(overrides.takeError());
      return signalPassFailure();
    }
    options.dispatch = std::move(*overrides);
    if (failed(annotateDispatch(module, *target, options)))
      signalPassFailure();
  }
};
} // namespace
