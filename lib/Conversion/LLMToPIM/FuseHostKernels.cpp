//===- FuseHostKernels.cpp - one host kernel per gap between PIM phases ---===//
//
// pim-build-program emits every host op as a kernel of its own. The
// kernels of a gap between PIM phases become one: one launch, the ops in
// order, on the near-memory unit when it can run all of them
// (HostKernels.h). pim-schedule puts the barriers after.
//
//===----------------------------------------------------------------------===//
#include "HostKernels.h"

#include "pimc/Conversion/LLMToPIM/Passes.h"
#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;

namespace pimc::pim {

KernelSummary summarizeHostOps(ArrayRef<HostOpFields> ops,
                               const detail::Machine &m,
                               bool elementwiseOnHost) {
  KernelSummary s;
  s.kind = "elementwise";
  auto rank = [](StringRef op) {
    return llvm::StringSwitch<int>(op)
        .Case("rope", 6)
        .Case("rms_norm", 5)
        .Case("layer_norm", 5)
        .Case("embedding", 4)
        .Case("gated_act", 3)
        .Case("logits", 2)
        .Default(1);
  };
  int best = 0;
  for (auto [op, args] : ops) {
    // Elements the op reads and writes (v_stage writes one lane per value
    // of its staging buffer, not the whole buffer).
    for (StringRef k : {"in", "out", "a", "b", "gate", "up"})
      if (auto d = args.getAs<DictionaryAttr>(k))
        if (auto n = d.getAs<IntegerAttr>("n"))
          s.elements += op == "v_stage" && k == "out"
                            ? args.getAs<DictionaryAttr>("in")
                                  .getAs<IntegerAttr>("n")
                                  .getInt()
                            : n.getInt();
    if (rank(op) > best) {
      best = rank(op);
      s.kind = llvm::StringSwitch<std::string>(op)
                   .Case("rope", "rope")
                   .Case("rms_norm", "rmsnorm")
                   .Case("layer_norm", "layernorm")
                   .Case("embedding", "embedding")
                   .Case("gated_act", "activation")
                   .Case("logits", "sampling")
                   .Default("elementwise");
    }
  }
  s.bytes = s.elements * 4;
  s.flops = s.elements * 4;
  // Host calls: the weights they read and their multiply-adds.
  bool hostIO = false;
  for (auto [op, args] : ops) {
    if (op == "call") {
      s.bytes += args.getAs<IntegerAttr>("weight_bytes").getInt();
      s.flops += args.getAs<IntegerAttr>("flops").getInt();
    }
    hostIO |= op == "embedding" || op == "logits" || op == "call";
  }
  if (!hostIO && !elementwiseOnHost)
    for (const pimsim::NearMemoryUnit &u : m.t.nearMemory) {
      bool all = !u.functions.empty();
      for (auto [op, args] : ops)
        all &= llvm::is_contained(u.functions, op);
      if (all) {
        s.unit = &u;
        break;
      }
    }
  s.costNs = m.hostNs(s.bytes, s.flops);
  if (s.unit)
    s.costNs = (s.unit->latencyCycles +
                std::ceil(s.elements / s.unit->elementsPerCycle)) *
               m.t.tCKps * 1e-3;
  return s;
}

namespace {

/// Consecutive kernels of an entry (barriers between them aside).
using Run = SmallVector<KernelOp>;

class Fuser {
public:
  Fuser(ProgramOp program, const detail::Machine &m, bool elementwiseOnHost)
      : program(program), symbols(program), m(m),
        elementwiseOnHost(elementwiseOnHost) {}

  void run() {
    for (auto entry : program.getBody().front().getOps<EntryOp>())
      fuseEntry(entry);
    for (KernelOp k : dead)
      k.erase();
  }

private:
  KernelOp kernel(Attribute step) {
    auto ref = dyn_cast<FlatSymbolRefAttr>(step);
    return ref ? symbols.lookup<KernelOp>(ref.getValue()) : KernelOp();
  }
  static bool isBarrier(Attribute step) { return isa<StringAttr>(step); }

  /// Fuses each maximal run of kernel steps, with or without barriers
  /// between them. The run's ops then run in order; the fused kernel is
  /// followed by a barrier when any kernel of the run was (a step after the
  /// run may depend on any of them).
  void fuseEntry(EntryOp entry) {
    ArrayRef<Attribute> steps = entry.getSteps().getValue();
    SmallVector<Attribute> out;
    for (size_t i = 0; i < steps.size();) {
      Run run;
      bool barrier = false;
      while (i < steps.size() && kernel(steps[i])) {
        run.push_back(kernel(steps[i++]));
        for (; i < steps.size() && isBarrier(steps[i]); ++i)
          barrier = true;
      }
      if (run.empty()) {
        out.push_back(steps[i++]);
        continue;
      }
      out.push_back(FlatSymbolRefAttr::get(fuse(run)));
      if (barrier)
        out.push_back(StringAttr::get(program.getContext(), "barrier"));
    }
    entry.setStepsAttr(ArrayAttr::get(program.getContext(), out));
  }

  /// One kernel with the run's ops, where the run's first kernel was.
  KernelOp fuse(Run &run) {
    SmallVector<HostOpFields> ops;
    for (KernelOp k : run)
      for (auto h : k.getBody().front().getOps<HostOp>())
        ops.push_back({h.getName(), h.getArgs()});
    KernelSummary s = summarizeHostOps(ops, m, elementwiseOnHost);
    KernelOp first = run.front();
    StringAttr layer = first.getLayerAttr();
    std::string name =
        llvm::formatv("{0}.host{1}", layer ? layer.getValue() : "kernel",
                      count++)
            .str();
    OpBuilder b(first);
    auto fused = KernelOp::create(
        b, first.getLoc(), b.getStringAttr(name), b.getStringAttr(s.kind),
        b.getI64IntegerAttr(s.flops), b.getI64IntegerAttr(s.bytes),
        b.getF64FloatAttr(s.costNs),
        s.unit ? b.getStringAttr(s.unit->name) : StringAttr(),
        b.getI64IntegerAttr(s.unit ? s.elements : 0), layer, ArrayAttr());
    Block *body = new Block;
    fused.getBody().push_back(body);
    // The device parameters the run's kernels set, set by the fused one
    // (when it completes, as each of them would at the end of the phase).
    SmallVector<Attribute> sets;
    for (KernelOp k : run)
      if (ArrayAttr s = k.getSetsAttr())
        llvm::append_range(sets, s.getValue());
    if (!sets.empty())
      fused.setSetsAttr(b.getArrayAttr(sets));
    for (KernelOp k : run) {
      for (Operation &op : llvm::make_early_inc_range(k.getBody().front()))
        op.moveBefore(body, body->end());
      dead.push_back(k);
    }
    return fused;
  }

  ProgramOp program;
  SymbolTable symbols; // lookups in O(1): programs have thousands of steps
  const detail::Machine &m;
  bool elementwiseOnHost;
  int64_t count = 0;
  SmallVector<KernelOp> dead;
};

} // namespace

#define GEN_PASS_DEF_PIMFUSEHOSTKERNELS
#include "pimc/Conversion/LLMToPIM/Passes.h.inc"

namespace {
struct FuseHostKernelsPass
    : public impl::PIMFuseHostKernelsBase<FuseHostKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<pimsim::Target> target = TargetAttr::lookup(module);
    if (failed(target))
      return signalPassFailure();
    detail::Machine m(*target);
    bool elementwiseOnHost = forcedDispatch(module).count("elementwise") != 0;
    for (auto program : module.getOps<ProgramOp>())
      Fuser(program, m, elementwiseOnHost).run();
  }
};
} // namespace

} // namespace pimc::pim
