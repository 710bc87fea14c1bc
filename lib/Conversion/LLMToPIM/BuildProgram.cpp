//===- BuildProgram.cpp - pim-build-program: @forward -> pim.program ------===//
//
// Decode (one token per call of entry `decode`) of the @forward that
// convert-llm-to-pim left:
//   * pim.gemv (Q/K/V, gate/up, down, o_proj, lm_head) runs on the PIM
//     units in the `gemv_rows` layout, one input broadcast per GEMV (or as
//     host ops when dispatched to the host);
//   * pim.attention runs on the PIM units over the KV cache (K rows, V^T
//     rows), softmax on the near-memory unit, one KV head per channel (per
//     part of the sequence when split, merged by attn_combine);
//   * everything else (embedding, norms, RoPE, residual adds, the gate
//     activation, format conversion) is host ops, fused into one host
//     kernel per gap between PIM phases (pim-fuse-host-kernels).
// Activations are pim.buffers (pim-plan-memory places them in act); the
// entry lists its steps in model order (pim-schedule adds the barriers).
// Strategy, layouts and limits: docs/backend.md; ABI: docs/backend-abi.md.
//
//===----------------------------------------------------------------------===//
#include "CostModel.h"
#include "HostFallback.h"
#include "HostKernels.h"
#include "KernelSites.h"
#include "Patterns.h"
#include "pimc/Conversion/LLMToPIM/Passes.h"
#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Dialect/PIM/IR/PIMDialect.h"

#include "pimsim/HostOp.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <set>

using namespace mlir;
using namespace pimc;
using namespace pimc::pim;
using namespace pimc::pim::detail;

//===----------------------------------------------------------------------===//
// Lowering
//===----------------------------------------------------------------------===//

namespace {

/// Elements in an activation buffer (a pim.buffer, placed in `act` by
/// pim-plan-memory), from byte `off` of it. Logical element i of a strided
/// slot is at element (i / block) * stride + i % block.
struct Slot {
  FlatSymbolRefAttr base; // the pim.buffer
  int64_t off = 0, n = 0;
  std::string fmt = "f32";
  int64_t block = 0, stride = 0; // 0: contiguous
  bool contiguous() const { return block == 0 || block == stride; }
};

/// The runtime parameters of one part of the sequence (all of it when the
/// attention is not split).
struct PartParams {
  std::string slot, kvLen, kbank, kgrp, krow, vrow, vcol, kvRows, vrows;
};

/// Attention geometry shared by layers with the same head dim, window and
/// split.
struct Geometry {
  int64_t hd, maxT, window; // window 0: none (linear cache)
  // A chunked ring (Llama 4): the live keys are slots 0 .. pos % window,
  // not the whole ring.
  bool chunked = false;
  int64_t cpk, kpr, KR, nd, VR;
  std::string slot, kvLen, kbank, kgrp, krow, vrow, vcol, kvRows, vrows, vgroup;
  // Split over S parts of Tp keys (S = 1: none). Part p holds positions
  // [p Tp, (p + 1) Tp) in its slots 0 .. Tp-1, plus slot Tp, where the
  // parts that do not hold pos write the appended key and value (a trash
  // slot, so one append stream per part needs no masking). KR / VR count
  // the Tp + 1 slots (what is allocated); liveKR / liveVR the Tp live ones.
  int64_t S = 1, Tp = 0, liveKR = 0, liveVR = 0;
  std::vector<PartParams> parts;
};

class Lowering {
public:
  Lowering(ModuleOp module, const pimsim::Target &t, const BackendOptions &o)
      : module(module), m(t), opts(o), b(module.getContext()) {}

  FailureOr<pim::ProgramOp> run();

private:
  // IR construction helpers.
  NamedAttribute attr(StringRef k, int64_t v) {
    return b.getNamedAttr(k, b.getI64IntegerAttr(v));
  }
  NamedAttribute attr(StringRef k, StringRef v) {
    return b.getNamedAttr(k, b.getStringAttr(v));
  }
  NamedAttribute attr(StringRef k, Attribute v) { return b.getNamedAttr(k, v); }
  /// A macro-op field that varies (ch, loops, parameters).
  NamedAttribute attr(StringRef k, AffineExpr e) {
    return attr(k, pim::buildIndex(e, paramRefs));
  }
  /// The `data` field: byte `off` + `terms` of slot `s`.
  NamedAttribute data(const Slot &s, int64_t off, AffineExpr terms) {
    return attr("data",
                pim::DataAttr::get(
                    b.getContext(), s.base,
                    pim::buildIndex(cst(s.off + off) + terms, paramRefs)));
  }
  AffineExpr cst(int64_t v) { return b.getAffineConstantExpr(v); }
  /// `ch`: the executing channel's position in its stream.
  AffineExpr ch() { return b.getAffineDimExpr(0); }
  /// The runtime parameter `name` (created by param()).
  AffineExpr sym(StringRef name) {
    return b.getAffineSymbolExpr(params.at(name.str()));
  }
  DictionaryAttr buf(const Slot &s) {
    return b.getDictionaryAttr({attr("buf", s.base), attr("off", s.off),
                                attr("n", s.n), attr("fmt", s.fmt)});
  }
  DictionaryAttr tensorRef(llm::WeightOp w) {
    auto t = cast<ShapedType>(w.getType());
    return b.getDictionaryAttr(
        {attr("tensor", w.getName()),
         attr("shape", b.getI64ArrayAttr(t.getShape()))});
  }
  /// A new buffer of `n` elements of `fmt`, or `copies` of them, each
  /// starting on a 64-byte boundary (the slot is the first).
  Slot alloc(int64_t n, StringRef fmt = "f32", int64_t copies = 1) {
    std::string name = "a" + std::to_string(bufferCount++);
    int64_t bytes = n * pimsim::elemFormatBytes(*pimsim::parseElemFormat(fmt));
    if (copies > 1)
      bytes = copies * ceilDiv(bytes, 64) * 64;
    pim::BufferOp::create(top, loc, top.getStringAttr(name),
                          top.getI64IntegerAttr(bytes), IntegerAttr());
    Slot s;
    s.base = FlatSymbolRefAttr::get(b.getContext(), name);
    s.n = n;
    s.fmt = fmt.str();
    return s;
  }
  void hostOp(StringRef name, ArrayRef<NamedAttribute> args) {
    pending.push_back({name.str(), b.getDictionaryAttr(args)});
  }
  void macro(OpBuilder &sb, StringRef op, ArrayRef<NamedAttribute> fields) {
    pim::MacroOp::create(sb, loc, sb.getStringAttr(op),
                         sb.getDictionaryAttr(fields));
  }
  void barrier(OpBuilder &sb) { macro(sb, "barrier", {}); }
  /// wr_gb of `bytes` from byte dataOff (+ dataTerms) of `src` to
  /// global-buffer byte gbOff, spread over the pseudo-channel x bank-group
  /// data paths so the bursts are not serialized on one bank group's
  /// column spacing.
  void broadcast(OpBuilder &sb, int64_t gbOff, const Slot &src, int64_t dataOff,
                 int64_t bytes, AffineExpr dataTerms = {});
  /// A pim.loop: a builder positioned in its body and its iteration number.
  struct Loop {
    OpBuilder body;
    AffineExpr iv;
  };
  Loop loop(OpBuilder &sb, int64_t count) { return loop(sb, cst(count)); }
  Loop loop(OpBuilder &sb, AffineExpr count) {
    auto l = pim::LoopOp::create(sb, loc, pim::buildIndex(count, paramRefs));
    l.getBody().push_back(new Block);
    return {OpBuilder::atBlockEnd(&l.getBody().front()),
            b.getAffineDimExpr(pim::loopDepth(l) + 1)};
  }
  /// The stream of `op` in the current layer ("L0.qkv"; part p of a split
  /// op: "L0.qkv.p1"), streaming `bytes` of device memory.
  pim::StreamOp stream(StringRef op, int64_t part, int64_t ch0, int64_t nch,
                       DictionaryAttr dispatch, int64_t bytes) {
    std::string name = (currentLayer + "." + op).str();
    if (part >= 0)
      name += ".p" + std::to_string(part);
    // Weight names without a layer number (ONNX initializers) leave the
    // layer unknown: the stream gets the next free "_n" suffix.
    std::string base = name;
    for (int n = 1; !streamNames.insert(name).second; ++n)
      name = base + "_" + std::to_string(n);
    auto s = pim::StreamOp::create(
        top, loc, top.getStringAttr(name), top.getDenseI64ArrayAttr({ch0, nch}),
        dispatch, top.getStringAttr(currentLayer), top.getStringAttr(op),
        part >= 0 ? top.getI64IntegerAttr(part) : IntegerAttr(),
        top.getI64IntegerAttr(bytes));
    s.getBody().push_back(new Block);
    return s;
  }
  void step(StringRef sym) {
    steps.push_back(FlatSymbolRefAttr::get(b.getContext(), sym));
  }
  std::string param(StringRef name, int64_t min, int64_t max,
                    StringRef src = "", int64_t add = 0, int64_t div = 1,
                    int64_t mod = 0);

  /// Emits the pending host ops, one kernel each (pim-fuse-host-kernels
  /// fuses them, pim-schedule puts the barriers between steps).
  void flush();
  /// A contiguous f32 view of a slot (packing strided slots).
  Slot contiguous(const Slot &s);
  Slot lookup(Value v);

  struct GemvPart {
    mutable llm::WeightOp weight;
    Value result;
    Value bias;
  };
  LogicalResult lowerGemv(GemvOp op);
  void emitHostGemv(Value input, ArrayRef<GemvPart> parts);
  void emitGemv(StringRef name, ArrayRef<GemvPart> parts, GemvOp anchor,
                int64_t P);
  /// Where an expert GEMV's output goes: slot j of its pim.moe_combine's
  /// strided input (allocated by the first slot), so the weighted `sum`
  /// reads the k outputs as one buffer.
  std::optional<Slot> combineSlot(GemvOp op, int64_t n);
  LogicalResult lowerMoERoute(MoERouteOp op);
  void lowerMoECombine(MoECombineOp op);
  LogicalResult lowerAttention(pim::AttentionOp op);
  void appendAlibi(SmallVectorImpl<NamedAttribute> &sf, pim::AttentionOp op,
                   AffineExpr head, int64_t key0);
  /// Stream `s`'s body from the library kernel pim-select-kernels chose for
  /// `op` (KernelSites.h); `data` binds the kernel's `.data` names to slots
  /// (plus a byte offset), `runtime` its runtime names to program
  /// parameters.
  LogicalResult
  emitLibraryKernel(Operation *op, pim::StreamOp s,
                    const kernels::KernelFile &k, const KernelArgs &args,
                    const std::map<std::string, std::pair<Slot, int64_t>> &data,
                    const std::map<std::string, std::string> &runtime = {});
  bool kernelFailed = false; // emitGemv's emitLibraryKernel failed
  /// MoE: the first row of each expert set (keyed by expert 0's first
  /// weight; the slots' GEMVs share the placement), the device parameters
  /// of each routing's slots, each combine's strided input (and stride in
  /// bytes).
  llvm::DenseMap<Value, int64_t> expertRows;
  llvm::DenseMap<Value, SmallVector<std::string>> slotParams;
  llvm::DenseMap<Operation *, std::pair<Slot, int64_t>> combineInputs;
  llvm::DenseSet<Value> combinedDirectly; // GEMV outputs written there
  /// Inputs already packed in the PIM input format, by value and rows.
  llvm::DenseMap<std::pair<Value, int64_t>, Slot> packedInputs;
  pim::KernelOp lastKernel; // the last kernel flush() emitted
  /// An llm op with no lowering of its own: a `call` of its outlined
  /// function on the host (HostFallback.h).
  LogicalResult lowerHostCall(Operation *op);
  Geometry &geometry(int64_t hd, int64_t window, int64_t S = 1,
                     bool chunked = false);
  /// A decision of pim-tile recorded on `op`.
  FailureOr<int64_t> decision(Operation *op, StringRef name);
  /// Why work from `op` (the llm op `source`) runs on the PIM units.
  DictionaryAttr dispatchInfo(Operation *op, StringRef source, StringRef cls);

  ModuleOp module;
  Machine m;
  const BackendOptions &opts;
  Builder b;
  OpBuilder top{module.getContext()};
  Location loc = UnknownLoc::get(module.getContext());
  pim::ProgramOp program;

  int64_t maxContext = 0;
  int64_t bufferCount = 0;
  int64_t weightRow = 0; // next free row (absolute) in the weights region
  int64_t kvRowsPlanned = 0;
  int64_t kvRow = 0; // next free row of the kv region
  int64_t kvChannels = 1;
  int64_t kernelCount = 0, gemvCount = 0;
  std::vector<std::pair<std::string, DictionaryAttr>> pending;
  SmallVector<Attribute> steps;
  llvm::DenseMap<Value, Slot> slots;
  std::vector<Geometry> geometries;
  std::map<std::string, unsigned> params; // name -> index in paramRefs
  SmallVector<FlatSymbolRefAttr> paramRefs;
  // Weight bytes placed, and streamed per token (an expert GEMV streams
  // one expert's of the E it places).
  int64_t weightBindingBytes = 0, streamedWeightBytes = 0, kvBytes = 0;
  int64_t expertWeightRows = 0; // rows per bank the MoE experts take
  int64_t kvLayers = 0, kvBytesPerPosition = 0;
  std::string currentLayer = "embed";
  Value tokens, offset; // @forward's token ids and position
  std::set<std::string> streamNames;
  std::vector<std::pair<unsigned, Slot>> stateSlots; // argument, buffer
  /// pim-fuse-host-calls' runs in block order, by pim.host_group; a run is
  /// removed once its call is emitted (at its first op).
  llvm::DenseMap<int64_t, SmallVector<Operation *>> hostRuns;
};

void Lowering::broadcast(OpBuilder &sb, int64_t gbOff, const Slot &src,
                         int64_t dataOff, int64_t bytes, AffineExpr dataTerms) {
  if (!dataTerms)
    dataTerms = cst(0);
  const pimsim::Organization &o = m.t.org;
  int64_t bursts = bytes / o.accessBytes;
  int64_t pch = o.pseudoChannels, bgs = o.bankGroups;
  while (pch * bgs > 1 && bursts % (pch * bgs) != 0)
    pch > 1 ? pch /= 2 : bgs /= 2;
  int64_t chunk = bytes / (pch * bgs);
  int64_t pchStride = o.sids * o.bankGroups * o.banks, bgStride = o.banks;
  if (pch * bgs == 1) {
    macro(sb, "wr_gb",
          {attr("offset", gbOff), attr("bytes", bytes),
           data(src, dataOff, dataTerms)});
    return;
  }
  // p: the pseudo-channel, g: the bank group (0 when not looped over).
  Loop pl = pch > 1 ? loop(sb, pch) : Loop{sb, cst(0)};
  Loop gl = bgs > 1 ? loop(pl.body, bgs) : Loop{pl.body, cst(0)};
  AffineExpr p = pl.iv, g = gl.iv;
  macro(gl.body, "wr_gb",
        {attr("offset", cst(gbOff) + p * (chunk * bgs) + g * chunk),
         attr("bytes", chunk), attr("bank", p * pchStride + g * bgStride),
         data(src, dataOff, p * (chunk * bgs) + g * chunk + dataTerms)});
}

std::string Lowering::param(StringRef name, int64_t min, int64_t max,
                            StringRef src, int64_t add, int64_t div,
                            int64_t mod) {
  std::string n = name.str();
  if (params.count(n))
    return n;
  params[n] = paramRefs.size();
  paramRefs.push_back(FlatSymbolRefAttr::get(b.getContext(), n));
  auto p = pim::ParamOp::create(
      top, loc, top.getStringAttr(n), top.getI64IntegerAttr(min),
      top.getI64IntegerAttr(max),
      src.empty() ? FlatSymbolRefAttr()
                  : FlatSymbolRefAttr::get(top.getContext(), src),
      top.getI64IntegerAttr(add), top.getI64IntegerAttr(div),
      top.getI64IntegerAttr(mod), UnitAttr(), top.getI64IntegerAttr(0));
  (void)p;
  return n;
}

Slot Lowering::lookup(Value v) {
  auto it = slots.find(v);
  assert(it != slots.end() && "value has no slot");
  return it->second;
}

Slot Lowering::contiguous(const Slot &s) {
  if (s.contiguous())
    return s;
  Slot out = alloc(s.n);
  int64_t blocks = s.n / s.block;
  Slot in = s;
  in.n = (blocks - 1) * s.stride + s.block;
  hostOp("pack", {attr("in", buf(in)), attr("out", buf(out)),
                  attr("blocks", blocks), attr("block", s.block),
                  attr("in_stride", s.stride), attr("out_stride", s.block)});
  return out;
}

void Lowering::flush() {
  // One kernel per op; pim-fuse-host-kernels makes one of each gap's.
  for (auto &[op, args] : pending) {
    pim::KernelSummary s = pim::summarizeHostOps(
        {{op, args}}, m, opts.dispatch.count("elementwise") != 0);
    std::string name =
        llvm::formatv("{0}.hostop{1}", currentLayer, kernelCount++).str();
    auto k = pim::KernelOp::create(
        top, loc, top.getStringAttr(name), top.getStringAttr(s.kind),
        top.getI64IntegerAttr(s.flops), top.getI64IntegerAttr(s.bytes),
        top.getF64FloatAttr(s.costNs),
        s.unit ? top.getStringAttr(s.unit->name) : StringAttr(),
        top.getI64IntegerAttr(s.unit ? s.elements : 0),
        top.getStringAttr(currentLayer), ArrayAttr());
    k.getBody().push_back(new Block);
    OpBuilder kb = OpBuilder::atBlockEnd(&k.getBody().front());
    pim::HostOp::create(kb, loc, kb.getStringAttr(op), args);
    step(name);
    lastKernel = k;
  }
  pending.clear();
}

DictionaryAttr Lowering::dispatchInfo(Operation *op, StringRef source,
                                      StringRef cls) {
  SmallVector<NamedAttribute> a{attr("op", source), attr("class", cls),
                                attr("unit", "pim")};
  if (auto cost = op->getAttrOfType<DictionaryAttr>(kCostAttrName))
    for (NamedAttribute n : cost)
      a.push_back(n);
  return b.getDictionaryAttr(a);
}

LogicalResult Lowering::lowerGemv(GemvOp op) {
  SmallVector<GemvPart> parts;
  auto biases = op.getBiases().begin();
  for (auto [w, r, biased] :
       llvm::zip(op.getStreamedWeights(), op.getResults(), op.getBiased())) {
    auto weight = w.getDefiningOp<llm::WeightOp>();
    Value bias = biased ? *biases++ : Value();
    if (!weight || (bias && !bias.getDefiningOp<llm::WeightOp>()))
      return op.emitError("PIM lowering: GEMV weights and biases must be "
                          "llm.weight ops"),
             failure();
    parts.push_back({weight, r, bias});
  }
  std::string name;
  if (op.getName()) {
    name = op.getName()->str();
  } else {
    // Linears: named by their role where it is known.
    name = parts.size() == 3   ? "qkv"
           : parts.size() == 1 ? "linear" + std::to_string(gemvCount)
                               : "fused" + std::to_string(gemvCount);
    if (parts.size() == 1 && parts[0].weight.getName().contains("o_proj"))
      name = "o_proj";
    ++gemvCount;
  }
  if (op.getSource() == "llm.lm_head")
    currentLayer = "head";
  if (dispatchedToHost(op)) {
    if (op.getExperts())
      return op.emitError("PIM lowering: an expert GEMV dispatched to the "
                          "host (the MoE stays a host call instead)"),
             failure();
    emitHostGemv(op.getInput(), parts);
    return success();
  }
  FailureOr<int64_t> kParts = decision(op, kKPartsAttrName);
  if (failed(kParts))
    return failure();
  emitGemv(name, parts, op, *kParts);
  return failure(kernelFailed);
}

/// The host GEMV: one host op per weight, in the current host kernel.
void Lowering::emitHostGemv(Value input, ArrayRef<GemvPart> parts) {
  Slot x = contiguous(lookup(input));
  for (const GemvPart &p : parts) {
    int64_t pn = weightShape(p.weight.getType()).first;
    Slot y = alloc(pn);
    hostOp("linear", {attr("in", buf(x)), attr("out", buf(y)),
                      attr("weight", tensorRef(p.weight))});
    if (p.bias)
      hostOp("add",
             {attr("a", buf(y)),
              attr("b", tensorRef(p.bias.getDefiningOp<llm::WeightOp>())),
              attr("out", buf(y))});
    slots[p.result] = y;
  }
}

/// One fused GEMV on the PIM units: parts' weights stacked along N, one
/// input broadcast, K in P parts (pim-tile) on P disjoint channel sets of
/// C / P channels, partial sums added after.
void Lowering::emitGemv(StringRef name, ArrayRef<GemvPart> parts, GemvOp anchor,
                        int64_t P) {
  Value input = anchor.getInput();
  int64_t K = weightShape(parts[0].weight.getType()).second;
  int64_t N = 0;
  for (const GemvPart &p : parts)
    N += weightShape(p.weight.getType()).first;
  // The shape pim-select-kernels priced the op with (KernelSites.h).
  GemvShape shape = gemvShape(m, K, N, P);
  int64_t kRows = shape.kRows, nch = shape.nch, I = shape.I;
  int64_t partRows = shape.partRows, Cp = m.C / P;
  P = shape.P; // parts that would be empty are dropped
  // An expert GEMV: the E experts with one tiling, expert e at row0 + e x
  // rowsPerExpert, placed by the first slot's GEMV; the stream adds the
  // routed expert's offset (a device parameter) to every row.
  int64_t E = anchor.getNumExperts(), rowsPerExpert = I * partRows;
  Value expertKey = anchor.getWeights()[0];
  bool placed = anchor.getExperts() && expertRows.count(expertKey);
  int64_t row0 = placed ? expertRows.lookup(expertKey) : weightRow;
  if (!placed) {
    weightRow += E * rowsPerExpert;
    if (anchor.getExperts()) {
      expertRows[expertKey] = row0;
      expertWeightRows += E * rowsPerExpert;
    }
  }
  AffineExpr expertRow = cst(0);
  if (anchor.getExperts())
    expertRow =
        sym(slotParams.lookup(anchor.getExperts())[*anchor.getExpertSlot()]) *
        rowsPerExpert;

  // Host: the input in the PIM input format, zero-padded to whole rows
  // (once per input: the router and the expert slots share it). When the
  // previous vector op (a norm or the gate activation) produced it and only
  // this GEMV reads it, that op writes the PIM format directly.
  Slot in = lookup(input);
  auto packedKey = std::make_pair(input, kRows);
  auto packed = packedInputs.find(packedKey);
  bool fusedCast = packed != packedInputs.end();
  Slot xin = fusedCast ? packed->second : alloc(kRows * m.E, m.fmt);
  packedInputs[packedKey] = xin;
  if (!fusedCast && !pending.empty() && in.contiguous() &&
      (pending.back().first == "rms_norm" ||
       pending.back().first == "gated_act") &&
      llvm::all_of(input.getUsers(),
                   [&](Operation *u) { return u == anchor; })) {
    auto out = pending.back().second.getAs<DictionaryAttr>("out");
    if (out && out.get("buf") == in.base &&
        out.getAs<IntegerAttr>("off").getInt() == in.off) {
      Slot dst = xin;
      dst.n = in.n;
      NamedAttrList args(pending.back().second);
      args.set("out", buf(dst));
      pending.back().second = args.getDictionary(b.getContext());
      fusedCast = true;
    }
  }
  if (!fusedCast) {
    Slot src = in;
    int64_t blocks = 1, block = in.n, stride = in.n;
    if (!in.contiguous()) {
      blocks = in.n / in.block;
      block = in.block;
      stride = in.stride;
      src.n = (blocks - 1) * stride + block;
    }
    Slot dst = xin;
    dst.n = blocks * block;
    hostOp("pack", {attr("in", buf(src)), attr("out", buf(dst)),
                    attr("blocks", blocks), attr("block", block),
                    attr("in_stride", stride), attr("out_stride", block)});
  }
  flush();

  // Weight bindings. The parts' outputs are P slots of one buffer, 64-byte
  // aligned (the partial-sum `sum` reads them as one strided input).
  int64_t outN = I * nch * m.B, outStride = ceilDiv(outN * 4, 64) * 64;
  std::optional<Slot> dest = combineSlot(anchor, outN);
  Slot outs = P == 1 && dest ? *dest : alloc(outN, "f32", P);
  std::vector<Slot> partOut;
  for (int64_t part = 0; part < P; ++part) {
    int64_t ch0 = part * Cp;
    int64_t k0 = part * partRows * m.E;
    int64_t kLen = std::min(K - k0, partRows * m.E);
    int64_t pRows = ceilDiv(kLen, m.E);
    int64_t n0 = 0, partBytes = 0;
    auto bind = [&](llm::WeightOp w, int64_t nAt, int64_t rowAt) {
      auto [pn, pk] = weightShape(w.getType());
      pim::GptqSourceAttr gptq;
      if (auto q = dyn_cast<llm::QuantizedWeightType>(w.getType())) {
        StringRef scale = q.getScaleType().isF16()    ? "f16"
                          : q.getScaleType().isBF16() ? "bf16"
                                                      : "f32";
        gptq = pim::GptqSourceAttr::get(b.getContext(), q.getBits(),
                                        q.getGroupSize(), q.isSymmetric(),
                                        q.getPacking(), scale);
      }
      pim::WeightOp::create(
          top, loc, top.getStringAttr(w.getName()),
          FlatSymbolRefAttr::get(top.getContext(), "weights"),
          top.getStringAttr(m.fmt), top.getDenseI64ArrayAttr({pn, pk}),
          pim::GemvRowsAttr::get(b.getContext(), nAt, ch0, nch, rowAt, partRows,
                                 k0, kLen, gptq),
          top.getDenseI64ArrayAttr({rowAt, I * partRows}),
          top.getI64IntegerAttr(nch * m.B * I * partRows * m.rowBytes));
      if (part == 0)
        weightBindingBytes += pn * pk * 2;
    };
    for (auto [idx, p] : llvm::enumerate(parts)) {
      for (int64_t e = 0; e < (placed ? 0 : E); ++e)
        bind(anchor.getWeights()[e * parts.size() + idx]
                 .getDefiningOp<llm::WeightOp>(),
             n0, row0 + e * rowsPerExpert);
      auto [pn, pk] = weightShape(p.weight.getType());
      partBytes += pn * kLen * 2;
      if (part == 0)
        streamedWeightBytes += pn * pk * 2;
      n0 += pn;
    }

    // The stream: per output group i, MACs over the K rows (reloading the
    // global buffer per buffer-sized chunk of x when K does not fit), then the
    // accumulators out to the host.
    Slot out = outs;
    out.off = outs.off + part * outStride;
    partOut.push_back(out);
    auto s =
        stream(name, P == 1 ? -1 : part, ch0, nch,
               dispatchInfo(anchor, anchor.getSource(), "linear"), partBytes);
    int64_t xoff = k0 * 2; // in xin
    int64_t K = kLen, kRows = pRows;
    OpBuilder sb = OpBuilder::atBlockEnd(&s.getBody().front());
    if (Attribute choice = anchor->getAttr(kKernelAttrName))
      s->setAttr(kKernelAttrName, choice);
    if (const kernels::KernelFile *k =
            anchor.getExperts() ? nullptr : libraryKernel(anchor)) {
      KernelArgs args = gemvStreamArgs(m, K, I, nch, P);
      args.insert({"row0", row0});
      kernelFailed |= failed(emitLibraryKernel(
          anchor, s, *k, args, {{"x", {xin, xoff}}, {"out", {out, 0}}}));
      step(s.getSymName());
      continue;
    }
    // Output groups run in batches of A (the target's accumulator registers):
    // the A groups of a batch accumulate into registers 0..A-1 from one input
    // broadcast and are read out together, so barriers and broadcasts are paid
    // per batch. The input is written into the global buffer in segments of
    // half a buffer, so the next segment's wr_gb overlaps the MACs reading the
    // other half; when x fits in the buffer it is written once for all groups.
    int64_t A = std::max<int64_t>(1, std::min(m.t.pim.accumulators, I));
    int64_t fullBatches = I / A, rem = I % A;
    // Group index of register a: base + A*i + a, where i is the batch
    // loop's iteration (0 when not looped).
    auto groupExpr = [&](int64_t base, int64_t a, AffineExpr i, int64_t scale,
                         int64_t add) {
      return cst(add + scale * (base + a)) + i * (scale * A);
    };
    auto readouts = [&](OpBuilder &ob, int64_t base, int64_t nb, AffineExpr i) {
      for (int64_t a = 0; a < nb; ++a) {
        SmallVector<NamedAttribute> f{
            attr("count", m.units / m.perBurst),
            data(out, 0,
                 groupExpr(base, a, i, 4 * m.B * nch, 0) + ch() * (4 * m.B))};
        if (a > 0)
          f.push_back(attr("reg", a));
        macro(ob, "rd_acc", f);
      }
      barrier(ob);
    };
    auto mac = [&](OpBuilder &ob, int64_t r, int64_t gbByte, int64_t base,
                   int64_t a, AffineExpr i) {
      int64_t colsHere = std::min(m.cols, ceilDiv(K - r * m.E, m.lanes));
      SmallVector<NamedAttribute> f{
          attr("row", groupExpr(base, a, i, kRows, row0 + r) + expertRow),
          attr("col", int64_t(0)), attr("count", colsHere)};
      if (gbByte > 0)
        f.push_back(attr("offset", gbByte));
      if (a > 0)
        f.push_back(attr("reg", a));
      macro(ob, "mac_ab", f);
    };
    int64_t halfRows = m.gbEl / 2 / m.E;
    bool fits = kRows * m.E <= m.gbEl;
    if (fits) {
      broadcast(sb, 0, xin, xoff, kRows * m.E * 2);
      barrier(sb);
    }
    // One batch of nb groups starting at group base + A*i.
    auto batch = [&](OpBuilder &lb, int64_t base, int64_t nb, AffineExpr i) {
      if (fits) {
        for (int64_t a = 0; a < nb; ++a)
          for (int64_t r = 0; r < kRows; ++r)
            mac(lb, r, r * m.E * 2, base, a, i);
        barrier(lb);
      } else if (halfRows >= 1) {
        int64_t segs = ceilDiv(kRows, halfRows);
        int64_t halfBytes = m.gbBytes / 2;
        auto segBytes = [&](int64_t sIdx) {
          return std::min(halfRows, kRows - sIdx * halfRows) * m.E * 2;
        };
        broadcast(lb, 0, xin, xoff, segBytes(0));
        barrier(lb);
        for (int64_t sIdx = 0; sIdx < segs; ++sIdx) {
          int64_t half = sIdx % 2;
          for (int64_t a = 0; a < nb; ++a)
            for (int64_t j = 0; j < halfRows && sIdx * halfRows + j < kRows;
                 ++j)
              mac(lb, sIdx * halfRows + j, half * halfBytes + j * m.E * 2, base,
                  a, i);
          if (sIdx + 1 < segs)
            broadcast(lb, (1 - half) * halfBytes, xin,
                      xoff + (sIdx + 1) * halfRows * m.E * 2,
                      segBytes(sIdx + 1));
          barrier(lb);
        }
      } else {
        // A DRAM row is more than half the buffer (gddr6-aim): one row per
        // broadcast, no overlap.
        int64_t rowsPerChunk = std::max<int64_t>(1, m.gbEl / m.E);
        int64_t chunks = ceilDiv(kRows, rowsPerChunk);
        for (int64_t c = 0; c < chunks; ++c) {
          int64_t rowsHere = std::min(rowsPerChunk, kRows - c * rowsPerChunk);
          broadcast(lb, 0, xin, xoff + c * m.gbBytes, rowsHere * m.E * 2);
          barrier(lb);
          for (int64_t a = 0; a < nb; ++a)
            for (int64_t j = 0; j < rowsHere; ++j)
              mac(lb, c * rowsPerChunk + j, j * m.E * 2, base, a, i);
          barrier(lb);
        }
      }
      readouts(lb, base, nb, i);
    };
    if (fullBatches > 1) {
      Loop l = loop(sb, fullBatches);
      batch(l.body, 0, A, l.iv);
    } else if (fullBatches == 1) {
      batch(sb, 0, A, cst(0));
    }
    if (rem > 0)
      batch(sb, fullBatches * A, rem, cst(0));
    step(s.getSymName());
  } // parts: their streams run concurrently on disjoint channels

  // Results: slices of the output (partial sums added); biases are host
  // adds.
  Slot out = partOut[0];
  if (P > 1) {
    // The parts' outputs are consecutive equal-sized slots.
    Slot all = partOut[0];
    int64_t stride = outStride;
    all.n = (P - 1) * stride / 4 + partOut[0].n;
    Slot sum = dest ? *dest : alloc(out.n);
    hostOp("sum", {attr("in", buf(all)), attr("out", buf(sum)),
                   attr("parts", P), attr("stride", stride / 4)});
    out = sum;
  }
  int64_t n0 = 0;
  for (const GemvPart &p : parts) {
    int64_t pn = weightShape(p.weight.getType()).first;
    Slot r = out;
    r.off += 4 * n0;
    r.n = pn;
    if (p.bias) {
      // An expert GEMV's bias is row experts[j] of [E, n]: the slot's
      // device parameter selects it.
      auto bw = p.bias.getDefiningOp<llm::WeightOp>();
      SmallVector<NamedAttribute> f{attr("a", buf(r)), attr("b", tensorRef(bw)),
                                    attr("out", buf(r))};
      if (anchor.getExperts())
        f.push_back(attr(
            "row",
            slotParams.lookup(anchor.getExperts())[*anchor.getExpertSlot()]));
      hostOp("add", f);
    }
    slots[p.result] = r;
    n0 += pn;
  }
}

std::optional<Slot> Lowering::combineSlot(GemvOp op, int64_t n) {
  if (!op.getExperts() || op.getNumResults() != 1 ||
      !op.getResult(0).hasOneUse())
    return std::nullopt;
  OpOperand &use = *op.getResult(0).getUses().begin();
  auto combine = dyn_cast<MoECombineOp>(use.getOwner());
  if (!combine)
    return std::nullopt;
  int64_t stride = ceilDiv(n * 4, 64) * 64;
  auto it = combineInputs.find(combine);
  if (it == combineInputs.end())
    it = combineInputs
             .insert(
                 {combine, {alloc(n, "f32", combine.getOuts().size()), stride}})
             .first;
  // Every slot streams the same expert shapes with the same tiling.
  assert(it->second.first.n == n && "expert slots differ in output size");
  Slot s = it->second.first;
  s.off += (use.getOperandNumber() - 1) * stride;
  combinedDirectly.insert(op.getResult(0));
  return s;
}

/// The routing on the near-memory unit (or the host): the moe_route host op,
/// whose kernel sets the device parameter of each slot from the i32 expert
/// index it wrote (docs/backend.md, "MoE on PIM").
LogicalResult Lowering::lowerMoERoute(MoERouteOp op) {
  int64_t E = cast<ShapedType>(op.getLogits().getType()).getDimSize(1);
  int64_t k = op.getTopK();
  Slot logits = contiguous(lookup(op.getLogits()));
  Value shared = op.getSharedLogit();
  Slot w = alloc(k + (shared ? 1 : 0)), experts = alloc(k, "i32");
  SmallVector<NamedAttribute> args{
      attr("in", buf(logits)),
      attr("out", buf(w)),
      attr("experts", buf(experts)),
      attr("top_k", k),
      attr("sigmoid", b.getBoolAttr(op.getSigmoid())),
      attr("topk_first", b.getBoolAttr(op.getTopkFirst())),
      attr("renormalize", b.getBoolAttr(op.getRenormalize())),
      attr("scale", b.getF64FloatAttr(op.getScale().convertToDouble()))};
  if (shared)
    args.push_back(attr("shared", buf(contiguous(lookup(shared)))));
  hostOp("moe_route", args);
  flush();
  SmallVector<Attribute> sets;
  SmallVector<std::string> names;
  for (int64_t j = 0; j < k; ++j) {
    // Shared by every router with E experts: each sets them again.
    std::string name = llvm::formatv("expert{0}_of{1}", j, E).str();
    if (!params.count(name)) {
      params[name] = paramRefs.size();
      paramRefs.push_back(FlatSymbolRefAttr::get(b.getContext(), name));
      pim::ParamOp::create(top, loc, top.getStringAttr(name),
                           top.getI64IntegerAttr(0),
                           top.getI64IntegerAttr(E - 1), FlatSymbolRefAttr(),
                           top.getI64IntegerAttr(0), top.getI64IntegerAttr(1),
                           top.getI64IntegerAttr(0), top.getUnitAttr(),
                           top.getI64IntegerAttr(j));
    }
    sets.push_back(b.getDictionaryAttr(
        {attr("param", FlatSymbolRefAttr::get(b.getContext(), name)),
         attr("data",
              pim::DataAttr::get(b.getContext(), experts.base,
                                 b.getI64IntegerAttr(experts.off + 4 * j)))}));
    names.push_back(name);
  }
  lastKernel.setSetsAttr(b.getArrayAttr(sets));
  slots[op.getWeights()] = w;
  slots[op.getExperts()] = experts;
  slotParams[op.getExperts()] = names;
  return success();
}

/// The weighted sum of the slots' outputs, which their GEMVs wrote as one
/// strided buffer (combineSlot); other outputs (the shared expert's) are
/// packed into their part of it.
void Lowering::lowerMoECombine(MoECombineOp op) {
  int64_t k = op.getOuts().size();
  int64_t H = cast<ShapedType>(op.getType()).getShape().back();
  auto it = combineInputs.find(op);
  std::pair<Slot, int64_t> ins =
      it != combineInputs.end()
          ? it->second
          : std::make_pair(alloc(H, "f32", k), ceilDiv(H * 4, 64) * 64);
  for (auto [j, v] : llvm::enumerate(op.getOuts())) {
    if (combinedDirectly.contains(v))
      continue;
    Slot src = contiguous(lookup(v)), dst = ins.first;
    dst.off += j * ins.second;
    dst.n = H;
    hostOp("pack",
           {attr("in", buf(src)), attr("out", buf(dst)), attr("blocks", 1),
            attr("block", H), attr("in_stride", H), attr("out_stride", H)});
  }
  Slot all = ins.first;
  all.n = (k - 1) * ins.second / 4 + H;
  Slot out = alloc(H);
  hostOp("sum", {attr("in", buf(all)), attr("out", buf(out)), attr("parts", k),
                 attr("stride", ins.second / 4),
                 attr("weights", buf(contiguous(lookup(op.getWeights()))))});
  slots[op.getResult()] = out;
}

LogicalResult Lowering::emitLibraryKernel(
    Operation *op, pim::StreamOp s, const kernels::KernelFile &k,
    const KernelArgs &args,
    const std::map<std::string, std::pair<Slot, int64_t>> &data,
    const std::map<std::string, std::string> &runtime) {
  OpBuilder sb = OpBuilder::atBlockEnd(&s.getBody().front());
  KernelSite site{sb,
                  loc,
                  paramRefs,
                  runtime,
                  [&](StringRef name) { return sym(name); },
                  [&](const kernels::DerivedValues &d) {
                    param(d.name, d.min, d.max, d.src, d.add, d.div, d.mod);
                  },
                  {}};
  for (const auto &[name, at] : data)
    site.data[name] = {at.first.base, at.first.off + at.second};
  if (auto at = dyn_cast<pim::AttentionOp>(op))
    if (std::optional<APFloat> cap = at.getLogitSoftcap())
      site.softmaxCap = cap->convertToFloat();
  return emitKernel(op, k, args, site);
}

Geometry &Lowering::geometry(int64_t hd, int64_t window, int64_t S,
                             bool chunked) {
  int64_t maxT = maxContext;
  int64_t ring = 0;
  if (window > 0 && window < maxContext) {
    maxT = window;
    ring = window;
  }
  chunked = chunked && ring; // a chunk as long as the context is no ring
  for (Geometry &g : geometries)
    if (g.hd == hd && g.maxT == maxT && g.window == ring && g.S == S &&
        g.chunked == chunked)
      return g;
  Geometry g;
  g.hd = hd;
  g.maxT = maxT;
  g.window = ring;
  g.chunked = chunked;
  g.cpk = hd / m.lanes;
  g.kpr = m.cols / g.cpk;
  if (S > 1) {
    assert(!ring && "ring caches are not split");
    std::string sfx = "_" + std::to_string(geometries.size());
    g.S = S;
    g.Tp = splitKeys(m, maxT, S);
    int64_t slots = g.Tp + 1; // + the trash slot
    g.KR = ceilDiv(ceilDiv(slots, m.B), g.kpr);
    g.nd = ceilDiv(hd, m.B);
    g.VR = ceilDiv(slots, m.E);
    g.liveKR = ceilDiv(ceilDiv(g.Tp, m.B), g.kpr);
    g.liveVR = ceilDiv(g.Tp, m.E);
    g.slot = "pos"; // the V staging lane: pos % lanes = slot % lanes
    for (int64_t p = 0; p < S; ++p) {
      std::string ps = sfx + "_p" + std::to_string(p);
      PartParams pp;
      // at = pos - p Tp in [-1, Tp]; slot = at, or the trash slot Tp for
      // the parts before (at = -1) and after (at = Tp) the one holding pos.
      std::string at = param("kv_at" + ps, -1, g.Tp, "pos", -p * g.Tp, 1, 0);
      pp.slot = param("slot" + ps, 0, g.Tp, at, g.Tp + 1, 1, g.Tp + 1);
      pp.kvLen = param("kv_len" + ps, 1, g.Tp, "pos", 1 - p * g.Tp, 1, 0);
      pp.kbank = param("kbank" + ps, 0, m.B - 1, pp.slot, 0, 1, m.B);
      pp.kgrp = param("kgrp" + ps, 0, g.kpr - 1, pp.slot, 0, m.B, g.kpr);
      pp.krow = param("krow" + ps, 0, g.KR - 1, pp.slot, 0, m.B * g.kpr, 0);
      pp.vrow = param("vrow" + ps, 0, g.VR - 1, pp.slot, 0, m.E, 0);
      pp.vcol = param("vcol" + ps, 0, m.cols - 1, pp.slot, 0, m.lanes, m.cols);
      pp.kvRows = param("kv_rows" + ps, 1, g.liveKR, pp.kvLen, m.B * g.kpr - 1,
                        m.B * g.kpr, 0);
      pp.vrows = param("vrows" + ps, 1, g.liveVR, pp.kvLen, m.E - 1, m.E, 0);
      g.parts.push_back(pp);
    }
    geometries.push_back(g);
    return geometries.back();
  }
  g.KR = ceilDiv(ceilDiv(maxT, m.B), g.kpr);
  g.nd = ceilDiv(hd, m.B);
  g.VR = ceilDiv(maxT, m.E);
  std::string sfx = "_" + std::to_string(geometries.size());
  int64_t maxPos = maxContext - 1;
  (void)maxPos;
  g.slot = ring ? param("slot" + sfx, 0, maxT - 1, "pos", 0, 1, ring)
                : std::string("pos");
  // A chunk's live keys are its slots so far: kv_len = pos % C + 1; a
  // sliding window's (or the linear cache's) the last min(pos + 1, maxT).
  g.kvLen = chunked ? param("kv_len" + sfx, 1, maxT, g.slot, 1, 1, 0)
                    : param("kv_len" + sfx, 1, maxT, "pos", 1, 1, 0);
  g.kbank = param("kbank" + sfx, 0, m.B - 1, g.slot, 0, 1, m.B);
  g.kgrp = param("kgrp" + sfx, 0, g.kpr - 1, g.slot, 0, m.B, g.kpr);
  g.krow = param("krow" + sfx, 0, g.KR - 1, g.slot, 0, m.B * g.kpr, 0);
  g.vrow = param("vrow" + sfx, 0, g.VR - 1, g.slot, 0, m.E, 0);
  g.vcol = param("vcol" + sfx, 0, m.cols - 1, g.slot, 0, m.lanes, m.cols);
  g.kvRows =
      param("kv_rows" + sfx, 1, g.KR, g.kvLen, m.B * g.kpr - 1, m.B * g.kpr, 0);
  g.vrows = param("vrows" + sfx, 1, g.VR, g.kvLen, m.E - 1, m.E, 0);
  if (ring)
    g.vgroup = param("vgroup" + sfx, 0, ceilDiv(maxT, m.lanes) - 1, g.slot, 0,
                     m.lanes, 0);
  g.liveKR = g.KR;
  g.liveVR = g.VR;
  g.parts.push_back({g.slot, g.kvLen, g.kbank, g.kgrp, g.krow, g.vrow, g.vcol,
                     g.kvRows, g.vrows});
  geometries.push_back(g);
  return geometries.back();
}

FailureOr<int64_t> Lowering::decision(Operation *op, StringRef name) {
  if (auto a = op->getAttrOfType<IntegerAttr>(name); a && a.getInt() >= 1)
    return a.getInt();
  return op->emitError() << "pim-build-program: no '" << name
                         << "' on the op (run pim-tile first)";
}

/// ALiBi on the softmax unit (sfm alibi=, docs/backend.md): the slopes of
/// the op's query heads, the head the sfm runs (`head`, over channels and
/// the q loop) and the absolute position of its first score (`key0`). The
/// scores arrive scaled (q was scaled on the host), so the unit scales the
/// bias the same way (alibi_scale), keeping the bias before the scale.
void Lowering::appendAlibi(SmallVectorImpl<NamedAttribute> &sf,
                           pim::AttentionOp op, AffineExpr head, int64_t key0) {
  sf.push_back(attr("alibi", b.getDenseF32ArrayAttr(*op.getAlibiSlopes())));
  sf.push_back(attr("head", head));
  if (key0 != 0)
    sf.push_back(attr("key0", key0));
  sf.push_back(
      attr("alibi_scale", b.getF32FloatAttr(op.getScale().convertToFloat())));
}

LogicalResult Lowering::lowerAttention(pim::AttentionOp op) {
  auto qt = cast<ShapedType>(op.getQuery().getType());
  auto kt = cast<ShapedType>(op.getKey().getType());
  int64_t H = qt.getDimSize(1), hd = qt.getDimSize(2);
  int64_t KVH = kt.getDimSize(1);
  // Each KV head is replicated on R channels (R divides the group size G),
  // so R q heads of a group run in parallel; channel c holds KV head c / R
  // and runs q heads c*Gq .. c*Gq+Gq-1 (Gq = G / R) in turn.
  int64_t G = H / KVH;
  int64_t R = replicasFor(m, H, KVH);
  int64_t NC = KVH * R;
  int64_t window = op.ringKeys();
  // Split attention (docs/backend.md): part p of S runs on channels
  // [p NC, (p + 1) NC) over its Tp keys; attn_combine merges the parts.
  FailureOr<int64_t> split = decision(op, kSplitAttrName);
  if (failed(split))
    return failure();
  int64_t S = *split;
  Geometry &g = geometry(hd, window, S, bool(op.getChunkSize()));
  if (g.liveVR * m.E > m.gbEl || 2 * m.E > m.gbBytes)
    return op.emitError() << "PIM lowering: a context of " << g.maxT
                          << " keys needs " << g.VR * m.E * 2
                          << " bytes of probabilities in the global buffer; "
                             "the target has "
                          << m.gbBytes << " (use --max-context " << m.gbEl
                          << " or less)";
  kvChannels = std::max(kvChannels, NC * S);
  int64_t kbase = kvRow, vbase = kvRow + g.KR;
  kvRow += g.KR + g.nd * g.VR;
  kvBytes += 2 * g.maxT * KVH * hd * 2; // what must move (one copy)
  kvBytesPerPosition += 2 * KVH * hd * 2;
  ++kvLayers;
  // KV region rows start at 0 (the weights region follows it).

  // Host: K in the PIM format, V into the per-layer staging columns, q
  // scaled and replicated to fill one DRAM row's worth of global buffer.
  Slot kin = contiguous(lookup(op.getKey()));
  Slot vin = contiguous(lookup(op.getValue()));
  Slot qin = contiguous(lookup(op.getQuery()));
  Slot kslot = alloc(NC * hd, m.fmt);
  // V staging: one 16-lane column per (channel head, dim); ring caches keep
  // one per column group of the ring (the wrapped columns hold live keys).
  int64_t groups = g.window ? ceilDiv(g.maxT, m.lanes) : 1;
  Slot stage = alloc(NC * hd * m.lanes * groups, m.fmt);
  Slot qimg = alloc(H * m.E, m.fmt);
  hostOp("pack", {attr("in", buf(kin)), attr("out", buf(kslot)),
                  attr("blocks", KVH), attr("block", hd), attr("in_stride", hd),
                  attr("out_stride", R * hd), attr("replicate", R)});
  if (R > 1) {
    Slot vrep = alloc(NC * hd);
    hostOp("pack",
           {attr("in", buf(vin)), attr("out", buf(vrep)), attr("blocks", KVH),
            attr("block", hd), attr("in_stride", hd),
            attr("out_stride", R * hd), attr("replicate", R)});
    vin = vrep;
  }
  hostOp("v_stage",
         {attr("in", buf(vin)), attr("out", buf(stage)), attr("heads", NC),
          attr("head_dim", hd), attr("lanes", m.lanes), attr("groups", groups),
          attr("clear", b.getBoolAttr(g.window == 0)), attr("replicas", R),
          attr("param", g.slot)});
  Slot qdst = qimg;
  SmallVector<NamedAttribute> qpack = {
      attr("in", buf(qin)),
      attr("out", buf(qdst)),
      attr("blocks", H),
      attr("block", hd),
      attr("in_stride", hd),
      attr("out_stride", m.E),
      attr("replicate", g.kpr),
      attr("scale", b.getF64FloatAttr(op.getScale().convertToFloat()))};
  // Llama 4's temperature: the host scales q by the position's factor too.
  if (std::optional<int64_t> floor = op.getTemperatureFloorScale()) {
    qpack.push_back(attr("position", "pos"));
    qpack.push_back(attr("temperature_floor", *floor));
    qpack.push_back(
        attr("temperature_scale",
             b.getF64FloatAttr(op.getTemperatureScale()->convertToFloat())));
  }
  hostOp("pack", qpack);
  flush();

  // Stream 1: append K (one key = cpk columns of bank slot % B) and V^T
  // (dim d of head ch: one lane of column vcol in bank d % B). Split: one
  // stream per part; the parts that do not hold pos write the trash slot.
  int64_t kvBytesPerKey = 2 * KVH * hd * 2; // K and V, one copy
  for (int64_t p = 0; p < S; ++p) {
    const PartParams &pp = g.parts[p];
    auto kvs =
        stream("kv_append", S == 1 ? -1 : p, p * NC, NC,
               dispatchInfo(op, "llm.attention", "attention"), kvBytesPerKey);
    OpBuilder sb = OpBuilder::atBlockEnd(&kvs.getBody().front());
    macro(sb, "st",
          {attr("bank", sym(pp.kbank)), attr("row", kbase + sym(pp.krow)),
           attr("col", sym(pp.kgrp) * g.cpk), attr("count", g.cpk),
           data(kslot, 0, ch() * (hd * 2))});
    for (int64_t dh = 0; dh < g.nd; ++dh) {
      int64_t dims = std::min(m.B, hd - dh * m.B);
      Loop d = loop(sb, dims); // dim d of this bank-sized slice of the head
      AffineExpr vgroup = groups > 1 ? sym(g.vgroup) * 32 : cst(0);
      macro(d.body, "st",
            {attr("bank", d.iv), attr("row", vbase + dh * g.VR + sym(pp.vrow)),
             attr("col", sym(pp.vcol)), attr("count", int64_t(1)),
             data(stage, 32 * groups * dh * m.B,
                  ch() * (32 * hd * groups) + d.iv * (32 * groups) + vgroup)});
    }
    step(kvs.getSymName());
  }

  // Stream 2: per q head of the channel's KV head: scores K q (all banks,
  // 64-key groups) into the softmax buffer, softmax over kv_len keys,
  // probabilities back to the global buffer, then V^T p. Split: one stream
  // per part over its keys, each also writing its softmax statistics.
  int64_t ctxN = H * g.nd * m.B;
  Slot ctxAll = alloc(S * ctxN);
  // Sinks (gpt-oss) join the softmax in attn_combine, from the statistics
  // the sfm writes, split or not (docs/backend.md, "Attention sinks").
  bool combine = S > 1 || op.getSinks();
  Slot stats;
  if (combine)
    stats = alloc(S * 2 * H);
  G = G / R; // q heads per channel
  for (int64_t p = 0; p < S; ++p) {
    const PartParams &pp = g.parts[p];
    int64_t ctxOff = 4 * p * ctxN; // in ctxAll
    auto ats = stream("attention", S == 1 ? -1 : p, p * NC, NC,
                      dispatchInfo(op, "llm.attention", "attention"),
                      kvBytesPerKey * (S == 1 ? g.maxT : g.Tp));
    if (Attribute choice = op->getAttr(kKernelAttrName))
      ats->setAttr(kKernelAttrName, choice);
    if (const kernels::KernelFile *k = libraryKernel(op)) {
      KernelArgs args = attentionArgs(m, H, KVH, hd, S, g.maxT);
      args.insert({{"kbase", kbase}, {"vbase", vbase}, {"vr", g.VR}});
      if (failed(emitLibraryKernel(
              op, ats, *k, args,
              {{"qimg", {qimg, 0}}, {"ctx", {ctxAll, ctxOff}}},
              {{"kv_rows", pp.kvRows},
               {"kv_len", pp.kvLen},
               {"vrows", pp.vrows}})))
        return failure();
      step(ats.getSymName());
      continue;
    }
    OpBuilder sb = OpBuilder::atBlockEnd(&ats.getBody().front());
    // q: the query head of the channel's KV head (0 when there is one).
    Loop ql = G > 1 ? loop(sb, G) : Loop{sb, cst(0)};
    OpBuilder &qb = ql.body;
    AffineExpr q = ql.iv;
    broadcast(qb, 0, qimg, 0, 2 * m.E, ch() * (2 * m.E * G) + q * (2 * m.E));
    barrier(qb);
    Loop rl = loop(qb, sym(pp.kvRows)); // r: the row of keys
    OpBuilder &rb = rl.body;
    // Key groups of a row in batches of Ag accumulator registers: Ag MACs,
    // one barrier, Ag moves to the softmax buffer (in key order), one barrier.
    int64_t Ag = 1;
    for (int64_t cand = std::min<int64_t>(g.kpr, m.t.pim.accumulators);
         cand >= 1; --cand)
      if (g.kpr % cand == 0) {
        Ag = cand;
        break;
      }
    int64_t batches = g.kpr / Ag;
    Loop cl = batches > 1 ? loop(rb, batches) : Loop{rb, cst(0)};
    OpBuilder &cb = cl.body;
    for (int64_t a = 0; a < Ag; ++a) {
      SmallVector<NamedAttribute> f{
          attr("row", kbase + rl.iv),
          attr("col", cl.iv * (g.cpk * Ag) + g.cpk * a), attr("count", g.cpk)};
      if (a > 0)
        f.push_back(attr("reg", a));
      macro(cb, "mac_ab", f);
    }
    barrier(cb);
    for (int64_t a = 0; a < Ag; ++a) {
      SmallVector<NamedAttribute> f{attr("bank", int64_t(0)),
                                    attr("count", m.units / m.perBurst)};
      if (a > 0)
        f.push_back(attr("reg", a));
      macro(cb, "mv_sb", f);
    }
    barrier(cb);
    SmallVector<NamedAttribute> sf{attr("length", sym(pp.kvLen))};
    if (combine) // [max, sum] of head ch * G + q of part p
      sf.push_back(data(stats, 8 * p * H, ch() * (8 * G) + q * 8));
    if (std::optional<APFloat> cap = op.getLogitSoftcap()) // per score
      sf.push_back(attr("cap", b.getF32FloatAttr(cap->convertToFloat())));
    if (op.getAlibiSlopes()) // q head ch * G + q; part p's keys from p Tp
      appendAlibi(sf, op, ch() * G + q, p * g.Tp);
    macro(qb, "sfm", sf);
    barrier(qb);
    macro(qb, "mv_gb", {attr("count", sym(pp.vrows) * m.cols)});
    barrier(qb);
    for (int64_t dh = 0; dh < g.nd; ++dh) {
      Loop v = loop(qb, sym(pp.vrows)); // v: the row of V^T
      macro(v.body, "mac_ab",
            {attr("row", vbase + dh * g.VR + v.iv), attr("col", int64_t(0)),
             attr("count", m.cols), attr("offset", v.iv * (2 * m.E))});
      barrier(qb);
      macro(qb, "rd_acc",
            {attr("count", m.units / m.perBurst),
             data(ctxAll, ctxOff + 4 * dh * m.B,
                  ch() * (4 * g.nd * m.B * G) + q * (4 * g.nd * m.B))});
      barrier(qb);
    }
    step(ats.getSymName());
  }

  // Split: merge the parts' normalised outputs with their statistics (on
  // the vector unit when it runs attn_combine; pending, so it joins the
  // next kernel).
  Slot ctx = ctxAll;
  if (combine) {
    ctx = alloc(ctxN);
    SmallVector<NamedAttribute> f{attr("in", buf(ctxAll)),
                                  attr("stats", buf(stats)),
                                  attr("out", buf(ctx)),
                                  attr("parts", S),
                                  attr("stride", ctxN),
                                  attr("heads", H),
                                  attr("block", g.nd * m.B),
                                  attr("stats_stride", 2 * H),
                                  attr("part_keys", S > 1 ? g.Tp : g.maxT),
                                  attr("param", "pos")};
    if (Value sinks = op.getSinks()) {
      auto w = sinks.getDefiningOp<llm::WeightOp>();
      if (!w)
        return op.emitError("PIM lowering: attention sinks must be a "
                            "checkpoint tensor (llm.weight), the softmax "
                            "statistics' combine reads them by name");
      f.push_back(attr("sinks", tensorRef(w)));
    }
    hostOp("attn_combine", f);
  }

  Slot r = ctx;
  r.n = H * hd;
  r.block = hd;
  r.stride = g.nd * m.B;
  slots[op.getResult()] = r;
  return success();
}

/// The layer a weight belongs to, for stream and kernel names: "L<n>" for
/// the first numeric component of its name ("model.layers.3.mlp..." and
/// GPT-2's "h.3.attn..." are L3); other weights are the embedding's before
/// the first layer and the head's after it.
static std::string layerOf(StringRef name, StringRef current) {
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  for (StringRef p : parts) {
    unsigned n;
    if (!p.getAsInteger(10, n))
      return "L" + std::to_string(n);
  }
  return current == "embed" ? "embed" : "head";
}

/// Whether `name` has a numeric component (a layer number, for layerOf).
static bool hasLayerNumber(StringRef name) {
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  return llvm::any_of(parts, [](StringRef p) {
    unsigned n;
    return !p.getAsInteger(10, n);
  });
}

/// Layer starts where no weight name carries a layer number (an ONNX
/// export's "onnx::MatMul_715"): layer k begins at the earliest op that
/// feeds attention k without passing a residual add or the token embedding
/// (its input norm, or its q/k/v projections without one).
static llvm::DenseMap<Operation *, int64_t> structuralLayerStarts(Block &body) {
  llvm::DenseMap<Operation *, int64_t> starts;
  llvm::DenseSet<Operation *> claimed;
  int64_t layer = 0;
  for (Operation &at : body) {
    if (!isa<pim::AttentionOp, llm::AttentionOp>(at))
      continue;
    Operation *first = &at;
    SmallVector<Operation *> work{&at};
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      for (Value v : op->getOperands()) {
        Operation *d = v.getDefiningOp();
        if (!d || d->getNumOperands() == 0 ||
            isa<arith::ArithDialect>(d->getDialect()) ||
            isa<llm::AddOp, llm::EmbeddingOp, pim::AttentionOp,
                llm::AttentionOp>(d) ||
            !claimed.insert(d).second)
          continue;
        if (d->isBeforeInBlock(first))
          first = d;
        work.push_back(d);
      }
    }
    starts[first] = layer++;
  }
  return starts;
}

/// `v` is @forward's token ids, possibly reshaped.
static bool isTokenValue(Value v, Value tokens) {
  while (auto r = v.getDefiningOp<llm::ReshapeOp>())
    v = r.getInput();
  return v == tokens;
}

/// The recurrent state operand of the op that defines a new state.
static Value stateOperand(Operation *op) {
  for (Value v : op->getOperands())
    if (isa<llm::RecurrentStateType>(v.getType()))
      return v;
  return Value();
}

LogicalResult Lowering::lowerHostCall(Operation *op) {
  if (isMaterializedLazily(op))
    return success();
  // A pim-fuse-host-calls run is one call, emitted at its first op.
  SmallVector<Operation *> run{op};
  if (auto group = op->getAttrOfType<IntegerAttr>(kHostGroupAttrName)) {
    auto it = hostRuns.find(group.getInt());
    if (it == hostRuns.end())
      return success(); // emitted with the run's first op
    run = std::move(it->second);
    hostRuns.erase(it);
  }
  SmallVector<StringRef> names;
  for (Operation *r : run)
    if (!llvm::is_contained(names, r->getName().getStringRef()))
      names.push_back(r->getName().getStringRef());
  std::string source = llvm::join(names, "+");
  FailureOr<HostCall> call = outlineHostCall(
      run, tokens, offset, [&](Value v) { return slots.count(v) != 0; });
  if (failed(call))
    return failure();
  // Shapes of one decode step (the token dimension is T = 1).
  auto shapeOf = [&](Value v) {
    return b.getI64ArrayAttr(tokenShape(v.getType()));
  };
  SmallVector<Attribute> args, results;
  for (auto [v, kind] : llvm::zip(call->args, call->kinds)) {
    if (kind == HostCall::Arg::Buffer) {
      Slot in = contiguous(lookup(v));
      args.push_back(b.getDictionaryAttr(
          {attr("buffer", buf(in)), attr("shape", shapeOf(v))}));
    } else {
      args.push_back(b.getDictionaryAttr(
          {attr("param", kind == HostCall::Arg::Position ? "pos" : "token"),
           attr("shape", shapeOf(v))}));
    }
  }
  for (Value r : call->results) {
    // A recurrent op's new state overwrites its state's buffer (the call
    // reads every argument before it writes a result).
    Slot out;
    if (isa<llm::RecurrentStateType>(r.getType()))
      out = lookup(stateOperand(r.getDefiningOp()));
    else
      out = alloc(tokenElements(r.getType()));
    slots[r] = out;
    results.push_back(b.getDictionaryAttr(
        {attr("buffer", buf(out)), attr("shape", shapeOf(r))}));
  }
  hostOp("call",
         {attr("source", source), attr("mlir", call->text),
          attr("args", b.getArrayAttr(args)),
          attr("results", b.getArrayAttr(results)),
          attr("weight_bytes", call->weightBytes), attr("flops", call->flops)});
  return success();
}

FailureOr<pim::ProgramOp> Lowering::run() {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("no func.func @forward to compile"), failure();
  FailureOr<int64_t> context = decision(module, kMaxContextAttrName);
  FailureOr<int64_t> channels = decision(module, kChannelsAttrName);
  if (failed(context) || failed(channels))
    return failure();
  maxContext = *context;
  m.C = *channels;

  top.setInsertionPointToEnd(module.getBody());
  program = pim::ProgramOp::create(top, loc, top.getStringAttr(m.t.name),
                                   top.getStringAttr(opts.targetHash));
  program.getBody().push_back(new Block);
  top.setInsertionPointToEnd(&program.getBody().front());

  // Inputs: position and token. The vocabulary comes from the embedding.
  param("pos", 0, maxContext - 1);
  int64_t vocab = 1;
  forward.walk([&](llm::EmbeddingOp e) {
    if (isTokenValue(e.getIds(), forward.getArgument(0)))
      vocab = cast<ShapedType>(e.getTable().getType()).getDimSize(0);
  });
  param("token", 0, vocab - 1);

  Block &body = forward.getBody().front();
  tokens = forward.getArgument(0);
  offset = forward.getArgument(1);
  // A static-cache step's states, and the recurrent layers' states, live
  // in act buffers across steps (zero before the first).
  bool stateStep = isStateStep(forward);
  for (unsigned i = 2; i < forward.getNumArguments(); ++i)
    if (stateStep ||
        isa<llm::RecurrentStateType>(forward.getArgument(i).getType())) {
      Slot s = alloc(tokenElements(forward.getArgument(i).getType()));
      slots[forward.getArgument(i)] = s;
      stateSlots.push_back({i, s});
    }

  // Memory plan, first part: the KV rows of every attention come first in
  // each bank, so the weights are placed after them (rows are final as the
  // streams are emitted).
  for (Operation &op : body)
    if (auto at = dyn_cast<pim::AttentionOp>(op)) {
      int64_t hd = cast<ShapedType>(at.getQuery().getType()).getDimSize(2);
      FailureOr<int64_t> S = decision(at, kSplitAttrName);
      if (failed(S))
        return failure();
      Geometry &g = geometry(hd, at.ringKeys(), *S, bool(at.getChunkSize()));
      kvRowsPlanned += g.KR + g.nd * g.VR;
    }
  weightRow = kvRowsPlanned;

  // Layers are named after the weights' layer numbers, or found from the
  // graph's structure where the names have none.
  bool numbered = false;
  body.walk([&](llm::WeightOp w) { numbered |= hasLayerNumber(w.getName()); });
  llvm::DenseMap<Operation *, int64_t> layerStarts;
  if (!numbered)
    layerStarts = structuralLayerStarts(body);
  for (Operation &op : body)
    if (auto group = op.getAttrOfType<IntegerAttr>(kHostGroupAttrName))
      hostRuns[group.getInt()].push_back(&op);
  for (Operation &opRef : body) {
    Operation *op = &opRef;
    if (auto it = layerStarts.find(op); it != layerStarts.end())
      currentLayer = "L" + std::to_string(it->second);
    // The layer is the one of the op's weights (graph importers declare
    // every weight up front).
    for (Value v : op->getOperands())
      if (auto w = v.getDefiningOp<llm::WeightOp>(); w && numbered) {
        currentLayer = layerOf(w.getName(), currentLayer);
        break;
      }
    if (isa<llm::WeightOp>(op)) {
      if (numbered)
        currentLayer = layerOf(cast<llm::WeightOp>(op).getName(), currentLayer);
      continue;
    }
    if (auto e = dyn_cast<llm::EmbeddingOp>(op);
        e && isTokenValue(e.getIds(), tokens) &&
        e.getTable().getDefiningOp<llm::WeightOp>()) {
      auto table = e.getTable().getDefiningOp<llm::WeightOp>();
      Slot out = alloc(tokenElements(e.getType()));
      hostOp("embedding",
             {attr("table", tensorRef(table)), attr("out", buf(out))});
      slots[e.getResult()] = out;
      continue;
    }
    if (auto n = dyn_cast<llm::RMSNormOp>(op);
        n && n.getWeight() && n.getWeight().getDefiningOp<llm::WeightOp>()) {
      Slot in = contiguous(lookup(n.getInput()));
      auto w = n.getWeight().getDefiningOp<llm::WeightOp>();
      int64_t D = cast<ShapedType>(w.getType()).getDimSize(0);
      Slot out = alloc(in.n);
      hostOp("rms_norm",
             {attr("in", buf(in)), attr("out", buf(out)),
              attr("weight", tensorRef(w)),
              attr("eps", b.getF64FloatAttr(n.getEpsilon().convertToFloat())),
              attr("groups", in.n / D),
              attr("gemma",
                   b.getBoolAttr(n.getStyle() == llm::NormStyle::Gemma))});
      slots[n.getResult()] = out;
      continue;
    }
    if (auto n = dyn_cast<llm::LayerNormOp>(op); n && isVectorLayerNorm(n)) {
      Slot in = contiguous(lookup(n.getInput()));
      auto w = n.getWeight().getDefiningOp<llm::WeightOp>();
      int64_t D = cast<ShapedType>(w.getType()).getDimSize(0);
      Slot out = alloc(in.n);
      hostOp("layer_norm",
             {attr("in", buf(in)), attr("out", buf(out)),
              attr("weight", tensorRef(w)),
              attr("eps", b.getF64FloatAttr(n.getEpsilon().convertToFloat())),
              attr("groups", in.n / D)});
      if (Value bias = n.getBias()) {
        if (in.n != D)
          return n.emitError("PIM lowering: a layer_norm bias over ")
                 << in.n / D << " rows (one row per op is supported)";
        hostOp("add",
               {attr("a", buf(out)),
                attr("b", tensorRef(bias.getDefiningOp<llm::WeightOp>())),
                attr("out", buf(out))});
      }
      slots[n.getResult()] = out;
      continue;
    }
    if (auto g = dyn_cast<GemvOp>(op)) {
      if (failed(lowerGemv(g)))
        return failure();
      continue;
    }
    if (auto g = dyn_cast<llm::GeluOp>(op)) {
      Slot in = contiguous(lookup(g.getInput()));
      Slot out = alloc(in.n);
      hostOp("gated_act",
             {attr("gate", buf(in)), attr("out", buf(out)),
              attr("act", g.getApproximate() ? "gelu_tanh" : "gelu")});
      slots[g.getResult()] = out;
      continue;
    }
    if (auto r = dyn_cast<MoERouteOp>(op)) {
      if (failed(lowerMoERoute(r)))
        return failure();
      continue;
    }
    if (auto c = dyn_cast<MoECombineOp>(op)) {
      lowerMoECombine(c);
      continue;
    }
    if (auto g = dyn_cast<GatedActOp>(op)) {
      Slot gs = lookup(g.getGate()), us = lookup(g.getUp());
      Slot act = alloc(gs.n);
      SmallVector<NamedAttribute> f{attr("gate", buf(gs)), attr("up", buf(us)),
                                    attr("out", buf(act)),
                                    attr("act", g.getActivation())};
      if (std::optional<APFloat> l = g.getLimit())
        f.push_back(attr("limit", b.getF32FloatAttr(l->convertToFloat())));
      if (std::optional<APFloat> a = g.getAlpha())
        f.push_back(attr("alpha", b.getF32FloatAttr(a->convertToFloat())));
      hostOp("gated_act", f);
      slots[g.getResult()] = act;
      continue;
    }
    // Decode has one token: taking the last token along axis 0 is a no-op
    // (other slices are host calls).
    if (auto sl = dyn_cast<llm::SliceOp>(op);
        sl && sl.getAxis() == 0 && sl.getSize() == 1 &&
        (sl.getStart() == -1 || sl.getStart() == 0) &&
        slots.count(sl.getInput())) {
      slots[sl.getResult()] = lookup(sl.getInput());
      continue;
    }
    if (auto r = dyn_cast<llm::ReshapeOp>(op); r && slots.count(r.getInput())) {
      slots[r.getResult()] = lookup(r.getInput());
      continue;
    }
    if (auto r = dyn_cast<llm::RopeOp>(op)) {
      Slot in = contiguous(lookup(r.getInput()));
      auto t = cast<ShapedType>(r.getInput().getType());
      Slot out = alloc(in.n);
      SmallVector<NamedAttribute> ro{
          attr("kind", llm::stringifyRopeKind(r.getKind())),
          attr("interleaved",
               b.getBoolAttr(r.getLayout() == llm::RopeLayout::Interleaved)),
          attr("rotary_dim", r.getRotaryDim()),
          attr("theta", b.getF64FloatAttr(r.getTheta().convertToDouble()))};
      auto f64 = [&](StringRef k, std::optional<APFloat> v) {
        if (v)
          ro.push_back(attr(k, b.getF64FloatAttr(v->convertToDouble())));
      };
      auto i64 = [&](StringRef k, std::optional<int64_t> v) {
        if (v)
          ro.push_back(attr(k, *v));
      };
      f64("factor", r.getFactorAttr()
                        ? std::optional<APFloat>(r.getFactorAttr().getValue())
                        : std::nullopt);
      i64("original_max_position_embeddings",
          r.getOriginalMaxPositionEmbeddings());
      i64("max_position_embeddings", r.getMaxPositionEmbeddings());
      auto opt = [&](StringRef k, FloatAttr a) {
        if (a)
          ro.push_back(attr(k, b.getF64FloatAttr(a.getValueAsDouble())));
      };
      opt("low_freq_factor", r.getLowFreqFactorAttr());
      opt("high_freq_factor", r.getHighFreqFactorAttr());
      opt("beta_fast", r.getBetaFastAttr());
      opt("beta_slow", r.getBetaSlowAttr());
      opt("attention_factor", r.getAttentionFactorAttr());
      opt("mscale", r.getMscaleAttr());
      opt("mscale_all_dim", r.getMscaleAllDimAttr());
      if (auto tr = r.getTruncateAttr())
        ro.push_back(attr("truncate", tr));
      if (auto f = r.getShortFactorAttr())
        ro.push_back(attr("short_factor", f));
      if (auto f = r.getLongFactorAttr())
        ro.push_back(attr("long_factor", f));
      hostOp("rope",
             {attr("in", buf(in)), attr("out", buf(out)),
              attr("heads", t.getDimSize(1)), attr("head_dim", t.getDimSize(2)),
              attr("rope", b.getDictionaryAttr(ro))});
      slots[r.getResult()] = out;
      continue;
    }
    if (auto at = dyn_cast<pim::AttentionOp>(op)) {
      if (failed(lowerAttention(at)))
        return failure();
      continue;
    }
    if (auto add = dyn_cast<llm::AddOp>(op); add && pim::hasOwnLowering(op)) {
      Slot x = contiguous(lookup(add.getLhs()));
      Slot y = contiguous(lookup(add.getRhs()));
      Slot out = alloc(x.n);
      hostOp("add",
             {attr("a", buf(x)), attr("b", buf(y)), attr("out", buf(out))});
      slots[add.getResult()] = out;
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      Slot logits = contiguous(lookup(ret.getOperand(0)));
      currentLayer = "head";
      // A static-cache step: each updated state goes back to its buffer.
      for (auto [arg, state] : stateSlots) {
        Value updated = ret.getOperand(arg - 1);
        if (updated == forward.getArgument(arg))
          continue;
        Slot in = contiguous(lookup(updated));
        if (in.base == state.base && in.off == state.off)
          continue; // updated in place
        hostOp("pack", {attr("in", buf(in)), attr("out", buf(state)),
                        attr("blocks", 1), attr("block", in.n),
                        attr("in_stride", in.n), attr("out_stride", in.n)});
      }
      hostOp("logits", {attr("in", buf(logits))});
      flush();
      continue;
    }
    // Index computations: the position is parameter `pos`.
    if (isa<arith::ConstantOp, arith::AddIOp, tensor::DimOp>(op))
      continue;
    // What convert-llm-to-pim rewrites is not a host call here.
    bool converted =
        isa<llm::KVCacheAppendOp, llm::KVCacheReadOp, llm::AttentionOp>(op) ||
        (isa<llm::LinearOp, llm::GatedMLPOp, llm::LMHeadOp>(op) &&
         hasCheckpointWeights(op));
    if (isa<llm::LLMDialect>(op->getDialect()) && !converted) {
      if (failed(lowerHostCall(op)))
        return failure();
      continue;
    }
    return op->emitError()
               << "pim-build-program: no lowering for '" << op->getName()
               << "' (run pim-check-contract and convert-llm-to-pim first)",
           failure();
  }

  // Memory plan: kv rows [0, kvRow) on the KV-head channels, weights after
  // them on every channel; pim-plan-memory places the activation buffers
  // after those and checks that the model fits.
  int64_t kvRows = kvRow;
  assert(kvRows == kvRowsPlanned && "KV rows differ from the plan");
  int64_t wRows = std::max<int64_t>(1, weightRow - kvRows);
  OpBuilder rb(program.getContext());
  rb.setInsertionPointToStart(&program.getBody().front());
  // Parameters first (in creation order), then the regions.
  Block &pb = program.getBody().front();
  SmallVector<Operation *> paramOps;
  for (Operation &op : pb)
    if (isa<pim::ParamOp>(op))
      paramOps.push_back(&op);
  for (Operation *op : llvm::reverse(paramOps))
    op->moveBefore(&pb, pb.begin());
  if (!paramOps.empty())
    rb.setInsertionPointAfter(paramOps.back());
  if (kvRows > 0)
    pim::RegionOp::create(
        rb, loc, rb.getStringAttr("kv"), rb.getStringAttr("kv_cache"),
        rb.getDenseI64ArrayAttr({0, kvChannels}),
        rb.getDenseI64ArrayAttr({0, m.B}), rb.getDenseI64ArrayAttr({0, kvRows}),
        rb.getI64IntegerAttr(kvChannels * m.B * kvRows * m.rowBytes));
  pim::RegionOp::create(
      rb, loc, rb.getStringAttr("weights"), rb.getStringAttr("weights"),
      rb.getDenseI64ArrayAttr({0, m.C}), rb.getDenseI64ArrayAttr({0, m.B}),
      rb.getDenseI64ArrayAttr({kvRows, wRows}),
      rb.getI64IntegerAttr(m.C * m.B * wRows * m.rowBytes));
  top.setInsertionPointToEnd(&program.getBody().front());
  pim::EntryOp::create(top, loc, top.getStringAttr("decode"),
                       top.getArrayAttr(steps));
  program->setAttr("pim.max_context", b.getI64IntegerAttr(maxContext));
  program->setAttr("pim.weight_bytes", b.getI64IntegerAttr(weightBindingBytes));
  if (expertWeightRows) {
    program->setAttr("pim.streamed_weight_bytes",
                     b.getI64IntegerAttr(streamedWeightBytes));
    program->setAttr("pim.expert_weight_rows",
                     b.getI64IntegerAttr(expertWeightRows));
  }
  program->setAttr("pim.kv_bytes", b.getI64IntegerAttr(kvBytes));
  program->setAttr("pim.kv_layers", b.getI64IntegerAttr(kvLayers));
  program->setAttr("pim.kv_bytes_per_position",
                   b.getI64IntegerAttr(kvBytesPerPosition));
  return program;
}

} // namespace

FailureOr<ProgramOp> pimc::pim::buildProgram(ModuleOp module,
                                             const pimsim::Target &target,
                                             const BackendOptions &options) {
  Lowering l(module, target, options);
  return l.run();
}

namespace pimc::pim {
#define GEN_PASS_DEF_PIMBUILDPROGRAM
#include "pimc/Conversion/LLMToPIM/Passes.h.inc"
} // namespace pimc::pim

namespace {
struct BuildProgramPass
    : public pimc::pim::impl::PIMBuildProgramBase<BuildProgramPass> {
  using PIMBuildProgramBase::PIMBuildProgramBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<pimsim::Target> target = TargetAttr::lookup(module);
    if (failed(target))
      return signalPassFailure();
    BackendOptions options;
    options.dispatch = forcedDispatch(module);
    options.targetHash =
        module->getAttrOfType<TargetAttr>(TargetAttr::kModuleAttrName)
            .getHash()
            .str();
    if (failed(buildProgram(module, *target, options)))
      signalPassFailure();
  }
};
} // namespace
