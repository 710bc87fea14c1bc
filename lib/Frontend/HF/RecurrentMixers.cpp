//===- RecurrentMixers.cpp - the hybrid families' recurrent mixers --------===//
//
// Mamba-2 (Falcon-H1, Granite-4.0-H), Mamba-1 (Jamba) and Gated DeltaNet
// (Qwen3-Next) as llm ops over the layer's conv and scan states (spec
// 2.28-2.32): the projections as llm.linear over row ranges of the stored
// in_proj (so that the backend fuses them into one GEMV), the causal conv,
// the scan, the gate and out_proj.
//
//===----------------------------------------------------------------------===//
#include "DecoderBuilder.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace pimc;
using namespace pimc::ckpt;

namespace pimc::hf::detail {

llm::RecurrentStateType DecoderBuilder::convStateType() {
  Type f32 = b.getF32Type();
  if (cfg.deltaNet)
    return llm::RecurrentStateType::get(
        &ctx, {cfg.deltaNet->convChannels(), cfg.deltaNet->convKernel - 1},
        f32);
  const MambaConfig &m = *cfg.mamba;
  return llm::RecurrentStateType::get(
      &ctx, {m.convChannels(), m.convKernel - 1}, f32);
}

llm::RecurrentStateType DecoderBuilder::scanStateType() {
  Type f32 = b.getF32Type();
  if (const auto &d = cfg.deltaNet)
    return llm::RecurrentStateType::get(
        &ctx, {d->valueHeads, d->keyDim, d->valueDim}, f32);
  const MambaConfig &m = *cfg.mamba;
  if (m.mamba1)
    return llm::RecurrentStateType::get(&ctx, {m.dInner, 1, m.stateSize}, f32);
  return llm::RecurrentStateType::get(
      &ctx, {m.numHeads, m.headDim, m.stateSize}, f32);
}

Value DecoderBuilder::linear(Value x, StringRef name, int64_t n, int64_t k,
                             Value bias, Type elem) {
  const int64_t dyn = ShapedType::kDynamic;
  Value w =
      elem ? derivedWeight(name, {n, k}, elem) : denseWeight(name, {n, k});
  return llm::LinearOp::create(b, loc(name), act({dyn, n}), x, w, bias);
}

DecoderBuilder::RowsOf DecoderBuilder::rowsOf(StringRef prefix, int64_t rows,
                                              int64_t k, bool biased) {
  RowsOf t;
  t.weight = (prefix + ".weight").str();
  t.elem = checkTensor(t.weight, {rows, k});
  t.k = k;
  if (biased) {
    t.bias = (prefix + ".bias").str();
    t.biasElem = checkTensor(t.bias, {rows});
  }
  return t;
}

Value DecoderBuilder::linearRows(Value x, const RowsOf &t, int64_t begin,
                                 int64_t n) {
  Value bias =
      t.bias.empty() ? Value() : rowPart(t.bias, t.biasElem, begin, {n});
  return linear(x, rowSliceName(t.weight, begin, begin + n), n, t.k, bias,
                t.elem);
}

Value DecoderBuilder::columns(Value x, int64_t begin, int64_t n, Location l) {
  return llm::SliceOp::create(
      b, l, act({ShapedType::kDynamic, n}), x, b.getI64IntegerAttr(1),
      b.getI64IntegerAttr(begin), b.getI64IntegerAttr(n));
}

Value DecoderBuilder::recurrentMixer(int64_t layer, Value x, Value offset,
                                     const LayerState &in, LayerState &out) {
  std::string p = llvm::formatv("{0}.{1}", cfg.names.layers, layer).str();
  if (cfg.deltaNet)
    return deltaNet(p, x, offset, in, out);
  if (!cfg.mamba) {
    problems.push_back(p + ": a recurrent layer but the config has no mixer");
    return x;
  }
  return cfg.mamba->mamba1 ? mamba1(p, x, offset, in, out)
                           : mamba2(p, x, offset, in, out);
}

/// in_proj [z | x B C | dt] (each segment times its muP multiplier), the
/// conv over [x B C], the scan, the gate, out_proj.
Value DecoderBuilder::mamba2(StringRef layer, Value x, Value offset,
                             const LayerState &in, LayerState &out) {
  const MambaConfig &m = *cfg.mamba;
  const int64_t dyn = ShapedType::kDynamic;
  std::string p = (layer + "." + m.prefix).str();
  Location l = loc(p);
  int64_t H = cfg.hiddenSize, D = m.dInner, GN = m.nGroups * m.stateSize,
          nh = m.numHeads, conv = m.convChannels();
  int64_t rows = D + conv + nh;
  x = scaled(x, m.inMultiplier, l);
  RowsOf inProj = rowsOf(p + ".in_proj", rows, H, m.inProjBias);
  // Segment i of in_proj: rows [begin, begin + n), times multiplier i.
  auto segment = [&](int64_t begin, int64_t n, int i) -> Value {
    return scaled(linearRows(x, inProj, begin, n),
                  m.projMultipliers
                      ? std::optional<double>((*m.projMultipliers)[i])
                      : std::nullopt,
                  l);
  };
  Value z = segment(0, D, 0);
  Value xs = segment(D, D, 1), bs = segment(2 * D, GN, 2),
        cs = segment(2 * D + GN, GN, 3), dt = segment(D + conv, nh, 4);
  Value xbc = llm::ConcatOp::create(
      b, l, act({dyn, conv}), ValueRange{xs, bs, cs}, b.getI64IntegerAttr(1));
  std::string convName = p + ".conv1d";
  Value convW = denseWeight(convName + ".weight", {conv, 1, m.convKernel});
  Value convB = m.convBias ? denseWeight(convName + ".bias", {conv}) : Value();
  auto c = llm::CausalConv1dOp::create(b, loc(convName), act({dyn, conv}),
                                       in.conv.getType(), xbc, in.conv, convW,
                                       convB, offset, b.getBoolAttr(true));
  out.conv = c.getNewState();
  Value xc = columns(c.getResult(), 0, D, l);
  Value bc = columns(c.getResult(), D, GN, l);
  Value cc = columns(c.getResult(), D + GN, GN, l);
  auto scan = llm::SSMScanOp::create(
      b, l, act({dyn, D}), in.recurrent.getType(), xc, dt, bc, cc,
      denseWeight(p + ".A_log", {nh}), denseWeight(p + ".D", {nh}),
      denseWeight(p + ".dt_bias", {nh}), in.recurrent, offset,
      b.getI64IntegerAttr(m.nGroups), b.getF32FloatAttr(float(m.dtMin)),
      m.dtClampMax ? b.getF32FloatAttr(float(m.dtMax)) : FloatAttr());
  out.recurrent = scan.getNewState();
  Value y = scan.getResult();
  if (m.gate == MambaConfig::Gate::Silu) {
    y = llm::MulOp::create(b, l, y, llm::SiluOp::create(b, l, z));
  } else {
    int64_t group = m.normGrouped ? D / m.nGroups : D;
    y = llm::GatedRMSNormOp::create(
        b, l, y.getType(), y, z, denseWeight(p + ".norm.weight", {D}),
        b.getF32FloatAttr(float(cfg.normEps)),
        group == D ? IntegerAttr() : b.getI64IntegerAttr(group),
        b.getBoolAttr(m.gate == MambaConfig::Gate::NormBeforeGate));
  }
  Value outBias =
      m.outProjBias ? denseWeight(p + ".out_proj.bias", {H}) : Value();
  y = linear(y, p + ".out_proj.weight", H, D, outBias);
  return scaled(y, m.outMultiplier, l);
}

/// Jamba's Mamba-1: in_proj [x | z], the conv over x, x_proj [dt | B | C]
/// each through its RMS norm, dt_proj (its bias is the scan's dt_bias), the
/// per-channel scan, y * silu(z), out_proj.
Value DecoderBuilder::mamba1(StringRef layer, Value x, Value offset,
                             const LayerState &in, LayerState &out) {
  const MambaConfig &m = *cfg.mamba;
  const int64_t dyn = ShapedType::kDynamic;
  std::string p = (layer + "." + m.prefix).str();
  Location l = loc(p);
  int64_t H = cfg.hiddenSize, D = m.dInner, N = m.stateSize, R = m.dtRank;
  RowsOf inProj = rowsOf(p + ".in_proj", 2 * D, H, m.inProjBias);
  Value xs = linearRows(x, inProj, 0, D), z = linearRows(x, inProj, D, D);
  std::string convName = p + ".conv1d";
  auto c = llm::CausalConv1dOp::create(
      b, loc(convName), act({dyn, D}), in.conv.getType(), xs, in.conv,
      denseWeight(convName + ".weight", {D, 1, m.convKernel}),
      m.convBias ? denseWeight(convName + ".bias", {D}) : Value(), offset,
      b.getBoolAttr(true));
  out.conv = c.getNewState();
  RowsOf xProj = rowsOf(p + ".x_proj", R + 2 * N, D, /*biased=*/false);
  auto part = [&](int64_t begin, int64_t n, StringRef normName) {
    Value v = linearRows(c.getResult(), xProj, begin, n);
    std::string norm = p + "." + normName.str();
    return rmsNorm(v, denseWeight(norm + ".weight", {n}), loc(norm));
  };
  Value delta = part(0, R, "dt_layernorm");
  Value bs = part(R, N, "b_layernorm"), cs = part(R + N, N, "c_layernorm");
  Value dt = linear(delta, p + ".dt_proj.weight", D, R);
  auto scan = llm::SSMScanOp::create(
      b, l, act({dyn, D}), in.recurrent.getType(), c.getResult(), dt, bs, cs,
      denseWeight(p + ".A_log", {D, N}), denseWeight(p + ".D", {D}),
      denseWeight(p + ".dt_proj.bias", {D}), in.recurrent, offset,
      b.getI64IntegerAttr(1), b.getF32FloatAttr(float(m.dtMin)),
      m.dtClampMax ? b.getF32FloatAttr(float(m.dtMax)) : FloatAttr());
  out.recurrent = scan.getNewState();
  Value y =
      llm::MulOp::create(b, l, scan.getResult(), llm::SiluOp::create(b, l, z));
  Value outBias =
      m.outProjBias ? denseWeight(p + ".out_proj.bias", {H}) : Value();
  return linear(y, p + ".out_proj.weight", H, D, outBias);
}

/// Qwen3-Next's Gated DeltaNet: q, k, v, z as the per-key-head blocks of
/// in_proj_qkvz, b and a of in_proj_ba, the conv over [q | k | v], the
/// gated delta rule, the per-head gated norm (norm before gate), out_proj.
Value DecoderBuilder::deltaNet(StringRef layer, Value x, Value offset,
                               const LayerState &in, LayerState &out) {
  const DeltaNetConfig &d = *cfg.deltaNet;
  const int64_t dyn = ShapedType::kDynamic;
  std::string p = (layer + "." + d.prefix).str();
  Location l = loc(p);
  int64_t H = cfg.hiddenSize, nk = d.keyHeads, nv = d.valueHeads, dk = d.keyDim,
          dv = d.valueDim, rho = nv / nk;
  int64_t qkvzBlock = 2 * dk + 2 * rho * dv, baBlock = 2 * rho;
  std::string qkvz = p + ".in_proj_qkvz.weight", ba = p + ".in_proj_ba.weight";
  Type qElem = checkTensor(qkvz, {nk * qkvzBlock, H});
  Type bElem = checkTensor(ba, {nk * baBlock, H});
  auto blocks = [&](StringRef t, Type elem, int64_t block, int64_t begin,
                    int64_t end) {
    return linear(x, flatBlockRowsName(t, block, begin, end),
                  nk * (end - begin), H, Value(), elem);
  };
  Value q = blocks(qkvz, qElem, qkvzBlock, 0, dk);
  Value k = blocks(qkvz, qElem, qkvzBlock, dk, 2 * dk);
  Value v = blocks(qkvz, qElem, qkvzBlock, 2 * dk, 2 * dk + rho * dv);
  Value z = blocks(qkvz, qElem, qkvzBlock, 2 * dk + rho * dv, qkvzBlock);
  Value bv = blocks(ba, bElem, baBlock, 0, rho);
  Value av = blocks(ba, bElem, baBlock, rho, baBlock);
  int64_t conv = d.convChannels();
  Value qkv = llm::ConcatOp::create(b, l, act({dyn, conv}), ValueRange{q, k, v},
                                    b.getI64IntegerAttr(1));
  std::string convName = p + ".conv1d";
  auto c = llm::CausalConv1dOp::create(
      b, loc(convName), act({dyn, conv}), in.conv.getType(), qkv, in.conv,
      denseWeight(convName + ".weight", {conv, 1, d.convKernel}), Value(),
      offset, b.getBoolAttr(true));
  out.conv = c.getNewState();
  Value qc = columns(c.getResult(), 0, d.keyWidth(), l);
  Value kc = columns(c.getResult(), d.keyWidth(), d.keyWidth(), l);
  Value vc = columns(c.getResult(), 2 * d.keyWidth(), d.valueWidth(), l);
  auto rule = llm::GatedDeltaRuleOp::create(
      b, l, act({dyn, d.valueWidth()}), in.recurrent.getType(), qc, kc, vc, av,
      bv, denseWeight(p + ".A_log", {nv}), denseWeight(p + ".dt_bias", {nv}),
      in.recurrent, offset, b.getI64IntegerAttr(nk));
  out.recurrent = rule.getNewState();
  Value y = llm::GatedRMSNormOp::create(
      b, l, rule.getResult().getType(), rule.getResult(), z,
      denseWeight(p + ".norm.weight", {dv}),
      b.getF32FloatAttr(float(cfg.normEps)), b.getI64IntegerAttr(dv),
      b.getBoolAttr(true));
  return linear(y, p + ".out_proj.weight", H, d.valueWidth());
}

} // namespace pimc::hf::detail
