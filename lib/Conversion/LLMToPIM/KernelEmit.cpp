//===- KernelEmit.cpp - kernel arguments and instantiation as pim ops -----===//
//
// The arguments each op kind passes to its kernels, the generated
// lowerings' estimates, and the translation of an instantiated kernel (the
// pimsim instructions pimsim's text parser produced) into the pim.macro /
// pim.loop ops pim-build-program emits itself: a field is base + steps x
// (ch, enclosing loops, runtime parameters), exactly what pim::buildIndex
// takes back, so serialization gives the instructions the kernel says.
//
//===----------------------------------------------------------------------===//
#include "KernelSites.h"

#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace pimc;
using namespace pimc::pim;
using namespace pimc::pim::detail;

//===----------------------------------------------------------------------===//
// Arguments and estimates
//===----------------------------------------------------------------------===//

KernelArgs pimc::pim::detail::machineArgs(const Machine &m) {
  return {{"cols", m.cols},
          {"lanes", m.lanes},
          {"elems", m.E},
          {"banks", m.B},
          {"units", m.units},
          {"per_burst", m.perBurst},
          {"gb_bytes", m.gbBytes},
          {"gb_elems", m.gbEl},
          {"acc", std::max<int64_t>(1, m.t.pim.accumulators)},
          {"ccdab", m.ccdab},
          {"row_switch", int64_t(m.rowSwitch)},
          {"readout", int64_t(m.readout)},
          {"segment", int64_t(m.segment)}};
}

void pimc::pim::detail::addBroadcastArgs(const Machine &m, int64_t bytes,
                                         KernelArgs &a) {
  const pimsim::Organization &o = m.t.org;
  int64_t bursts = bytes / o.accessBytes;
  int64_t pch = o.pseudoChannels, bgs = o.bankGroups;
  while (pch * bgs > 1 && bursts % (pch * bgs) != 0)
    pch > 1 ? pch /= 2 : bgs /= 2;
  a["bc_pch"] = pch;
  a["bc_bgs"] = bgs;
  a["bc_chunk"] = bytes / (pch * bgs);
  a["pch_stride"] = o.sids * o.bankGroups * o.banks;
  a["bg_stride"] = o.banks;
}

GemvShape pimc::pim::detail::gemvShape(const Machine &m, int64_t K, int64_t N,
                                       int64_t P) {
  GemvShape s{K, N, P, ceilDiv(K, m.E), 0, 0, 0};
  int64_t Cp = m.C / P;
  s.nch = std::min(Cp, ceilDiv(N, m.B));
  s.I = ceilDiv(N, s.nch * m.B);
  s.partRows = ceilDiv(s.kRows, P);
  s.P = ceilDiv(s.kRows, s.partRows); // parts that would be empty are dropped
  return s;
}

KernelArgs pimc::pim::detail::gemvArgs(const Machine &m, const GemvShape &s,
                                       int64_t part) {
  int64_t k0 = part * s.partRows * m.E;
  int64_t kLen = std::min(s.K - k0, s.partRows * m.E);
  return gemvStreamArgs(m, kLen, s.I, s.nch, s.P);
}

KernelArgs pimc::pim::detail::gemvStreamArgs(const Machine &m, int64_t kLen,
                                             int64_t I, int64_t nch,
                                             int64_t P) {
  KernelArgs a = machineArgs(m);
  int64_t rows = ceilDiv(kLen, m.E);
  a["k_len"] = kLen;
  a["k_rows"] = rows;
  a["last_cols"] = std::min(m.cols, ceilDiv(kLen - (rows - 1) * m.E, m.lanes));
  a["groups"] = I;
  a["nch"] = nch;
  a["parts"] = P;
  addBroadcastArgs(m, rows * m.E * 2, a);
  return a;
}

double pimc::pim::detail::gemvGeneratedCycles(const Machine &m,
                                              const KernelArgs &a) {
  // pim-tile's model: per group its MAC columns with a row switch per row
  // and one readout round trip, per buffer segment a barrier.
  int64_t rows = a.at("k_rows");
  int64_t segs = rows * m.E <= m.gbEl
                     ? 1
                     : ceilDiv(rows, std::max<int64_t>(1, m.gbEl / 2 / m.E));
  int64_t cols = (rows - 1) * m.cols + a.at("last_cols");
  return double(a.at("groups")) *
         (cols * m.ccdab + rows * m.rowSwitch + m.readout + segs * m.segment);
}

KernelArgs pimc::pim::detail::attentionArgs(const Machine &m, int64_t H,
                                            int64_t KVH, int64_t hd, int64_t S,
                                            int64_t maxT) {
  KernelArgs a = machineArgs(m);
  int64_t R = replicasFor(m, H, KVH);
  int64_t cpk = std::max<int64_t>(1, hd / m.lanes);
  int64_t kpr = std::max<int64_t>(1, m.cols / cpk);
  int64_t ag = 1;
  for (int64_t c = std::min<int64_t>(kpr, m.t.pim.accumulators); c >= 1; --c)
    if (kpr % c == 0) {
      ag = c;
      break;
    }
  int64_t Tp = S == 1 ? maxT : splitKeys(m, maxT, S);
  a["heads_per_ch"] = H / KVH / R;
  a["cpk"] = cpk;
  a["kpr"] = kpr;
  a["ag"] = ag;
  a["nd"] = ceilDiv(hd, m.B);
  a["split"] = S;
  a["live_kr"] = ceilDiv(ceilDiv(Tp, m.B), kpr);
  a["live_vr"] = ceilDiv(Tp, m.E);
  addBroadcastArgs(m, 2 * m.E, a);
  return a;
}

double pimc::pim::detail::attentionGeneratedCycles(const Machine &m,
                                                   const KernelArgs &a) {
  // pim-tile's model (keys and values, a row switch per row) plus the
  // barriers of the schedule: two per key batch, two per V^T slice with
  // its readout, four per head around the softmax.
  int64_t kr = a.at("live_kr"), vr = a.at("live_vr"), nd = a.at("nd");
  int64_t kpr = a.at("kpr"), cpk = a.at("cpk"), ag = a.at("ag");
  double perHead =
      kr * (kpr * cpk * m.ccdab + m.rowSwitch + 2 * (kpr / ag) * m.segment) +
      nd * (vr * (m.cols * m.ccdab + m.rowSwitch) + m.readout + 2 * m.segment) +
      4 * m.segment;
  return double(a.at("heads_per_ch")) * perHead;
}

const kernels::KernelFile *pimc::pim::detail::libraryKernel(Operation *op) {
  auto choice = op->getAttrOfType<StringAttr>(kKernelAttrName);
  std::optional<StringRef> name =
      choice ? libraryKernelName(choice.getValue()) : std::nullopt;
  if (!name || name->empty())
    return nullptr;
  return kernels::findKernel(*name);
}

//===----------------------------------------------------------------------===//
// Instantiation
//===----------------------------------------------------------------------===//

namespace {

/// Translates one instantiated kernel body into ops at a site.
struct Emitter {
  const kernels::KernelFile &k;
  KernelSite &site;
  std::string error;

  /// The value of `field` of `inst` as an index attribute.
  /// Field `field` of `inst` as a field value, plus `add`.
  Attribute index(const pimsim::Instruction &inst, pimsim::Field field,
                  int64_t add = 0) {
    MLIRContext *ctx = site.body.getContext();
    AffineExpr e = getAffineConstantExpr(inst.get(field) + add, ctx);
    for (const pimsim::Stride &s : inst.strides) {
      if (s.field != field)
        continue;
      AffineExpr var;
      if (s.loop == pimsim::kChannelIndex)
        var = getAffineDimExpr(0, ctx);
      else if (pimsim::isParamStride(s.loop))
        var = site.param(
            site.runtimeNames.at(k.runtime[s.loop - pimsim::kParamBase]));
      else
        var = getAffineDimExpr(s.loop + 1, ctx);
      e = e + var * s.step;
    }
    return buildIndex(e, site.paramRefs);
  }
  bool strided(const pimsim::Instruction &inst, pimsim::Field field) {
    return llvm::any_of(inst.strides, [&](const pimsim::Stride &s) {
      return s.field == field;
    });
  }

  LogicalResult body(OpBuilder &b, llvm::ArrayRef<pimsim::Instruction> insts) {
    for (const pimsim::Instruction &inst : insts)
      if (failed(one(b, inst)))
        return failure();
    return success();
  }

  LogicalResult one(OpBuilder &b, const pimsim::Instruction &inst) {
    if (!inst.channels.empty()) {
      error = "a kernel runs on all of its stream's channels (no channels=)";
      return failure();
    }
    if (inst.op == pimsim::Opcode::Loop) {
      auto l = LoopOp::create(b, site.loc, index(inst, pimsim::Field::Count));
      l.getBody().push_back(new Block);
      OpBuilder lb = OpBuilder::atBlockEnd(&l.getBody().front());
      return body(lb, inst.body);
    }
    if (inst.op == pimsim::Opcode::Call) {
      error = "a kernel cannot call host kernels";
      return failure();
    }
    pimsim::Instruction defaults = pimsim::Instruction::make(inst.op);
    SmallVector<NamedAttribute> fields;
    for (const pimsim::OperandSpec &spec : pimsim::opcodeOperands(inst.op)) {
      pimsim::Field f = spec.field;
      if (f == pimsim::Field::Channels)
        continue;
      StringRef name = pimsim::fieldName(f);
      if (f == pimsim::Field::Fn) {
        if (spec.required || inst.fn != defaults.fn)
          fields.push_back(b.getNamedAttr(
              name, b.getStringAttr(pimsim::functionName(inst.fn))));
        continue;
      }
      if (f == pimsim::Field::Cap) {
        float cap = inst.cap;
        if (site.softmaxCap != 0.0f && inst.fn == pimsim::Function::Softmax) {
          if (cap != 0.0f) {
            error = "its sfm has its own cap; the op's logit_softcap "
                    "cannot be applied as well";
            return failure();
          }
          cap = site.softmaxCap;
        }
        if (cap != 0.0f)
          fields.push_back(b.getNamedAttr(name, b.getF32FloatAttr(cap)));
        continue;
      }
      if (f == pimsim::Field::Alibi || f == pimsim::Field::AlibiScale) {
        // The slopes are the op's, per query head: the backend never picks
        // a library kernel for ALiBi attention (pim-select-kernels).
        if (!inst.alibi.empty() || inst.alibiScale != 0.0f) {
          error = "a kernel's sfm cannot carry ALiBi slopes of its own";
          return failure();
        }
        continue;
      }
      if (f == pimsim::Field::Data) {
        if (inst.dataRegion < 0)
          continue;
        // Region i of the wrapper is the kernel's data[i].
        auto it = site.data.find(k.data[inst.dataRegion]);
        if (it == site.data.end()) {
          error = "data buffer '" + k.data[inst.dataRegion] +
                  "' is not one the backend binds for a " + k.op;
          return failure();
        }
        fields.push_back(b.getNamedAttr(
            name, DataAttr::get(b.getContext(), it->second.buffer,
                                index(inst, f, it->second.offset))));
        continue;
      }
      if (spec.required || strided(inst, f) || inst.get(f) != defaults.get(f))
        fields.push_back(b.getNamedAttr(name, index(inst, f)));
    }
    MacroOp::create(b, site.loc, b.getStringAttr(pimsim::opcodeName(inst.op)),
                    b.getDictionaryAttr(fields));
    return success();
  }
};

} // namespace

LogicalResult pimc::pim::detail::emitKernel(Operation *op,
                                            const kernels::KernelFile &kernel,
                                            const KernelArgs &args,
                                            KernelSite &site) {
  auto fail = [&](const Twine &msg) {
    return op->emitError() << "library kernel " << kernel.name << ": " << msg,
           failure();
  };
  llvm::Expected<kernels::Bindings> b = kernels::Bindings::bind(kernel, args);
  if (!b)
    return fail(llvm::toString(b.takeError()));
  llvm::Expected<std::string> why = kernels::whyNot(*b);
  if (!why)
    return fail(llvm::toString(why.takeError()));
  if (!why->empty())
    return fail("does not serve this op ('" + *why + "' does not hold)");
  for (const std::string &r : kernel.runtime)
    if (!site.runtimeNames.count(r) &&
        llvm::none_of(kernel.derived, [&](auto &d) { return d.name == r; }))
      return fail("runtime parameter '" + r + "' is not one the program has");
  // Derived parameters: named after their source's program name
  // ("kv_pairs" from "kv_len_0": "kv_pairs_0"), so the layers of one
  // geometry share them.
  llvm::Expected<std::vector<kernels::DerivedValues>> derived =
      kernels::derivedParams(*b);
  if (!derived)
    return fail(llvm::toString(derived.takeError()));
  for (kernels::DerivedValues d : *derived) {
    std::string src = site.runtimeNames.at(d.src);
    StringRef suffix = StringRef(src).starts_with(d.src)
                           ? StringRef(src).drop_front(d.src.size())
                           : StringRef();
    std::string name = d.name + suffix.str();
    site.runtimeNames[d.name] = name;
    d.name = name;
    d.src = src;
    site.declare(d);
  }
  llvm::Expected<std::vector<pimsim::Instruction>> insts =
      kernels::instantiate(*b);
  if (!insts)
    return fail(llvm::toString(insts.takeError()));
  Emitter e{kernel, site, {}};
  if (failed(e.body(site.body, *insts)))
    return fail(e.error);
  return success();
}
