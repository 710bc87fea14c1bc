//===- HFImporter.cpp - Hugging Face checkpoint -> llm dialect ------------===//
//
// One builder covers every family of the registry (pimc/Checkpoint/
// Families.h): they differ in features ModelConfig states explicitly
// (biases, QK norms, sliding windows, RoPE scaling, the norm's weight
// convention, the MLP's activation, an embedding scale), never in code here
// keyed by model_type.
//
//===----------------------------------------------------------------------===//
#include "pimc/Frontend/HF/HFImporter.h"
#include "DecoderBuilder.h"
#include "pimc/Checkpoint/GPTQ.h"

#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Numerics/Kernels.h"
#include "pimc/Support/Shape.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace mlir;
using namespace pimc;
using namespace pimc::hf;
using namespace pimc::ckpt;
using pimc::hf::detail::DecoderBuilder;

namespace pimc::hf::detail {

Type DecoderBuilder::floatType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return b.getF32Type();
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  default:
    return {};
  }
}

Type DecoderBuilder::configFloatType() {
  if (cfg.torchDtype == "bfloat16")
    return b.getBF16Type();
  if (cfg.torchDtype == "float16")
    return b.getF16Type();
  return b.getF32Type();
}

Type DecoderBuilder::checkTensor(StringRef name, ArrayRef<int64_t> shape) {
  if (!weights)
    return configFloatType();
  const TensorView *t = weights->lookup(name);
  Type elem = b.getF32Type();
  if (!t) {
    problems.push_back(llvm::formatv(
        "missing tensor '{0}' (expected shape {1})", name, shapeString(shape)));
    return elem;
  }
  if (Type ft = floatType(t->dtype))
    elem = ft;
  else
    problems.push_back(llvm::formatv(
        "tensor '{0}' in {1} has dtype {2}, expected F32, F16 or BF16", name,
        llvm::sys::path::filename(t->file), dtypeName(t->dtype)));
  if (ArrayRef<int64_t>(t->shape) != shape)
    problems.push_back(llvm::formatv("tensor '{0}' in {1} has shape {2}, "
                                     "expected {3}",
                                     name, llvm::sys::path::filename(t->file),
                                     shapeString(t->shape),
                                     shapeString(shape)));
  return elem;
}

Value DecoderBuilder::denseWeight(StringRef name, ArrayRef<int64_t> shape) {
  Type elem = checkTensor(name, shape);
  return llm::WeightOp::create(b, loc(name), RankedTensorType::get(shape, elem),
                               b.getStringAttr(name));
}

Value DecoderBuilder::derivedWeight(StringRef name, ArrayRef<int64_t> shape,
                                    Type elem) {
  return llm::WeightOp::create(b, loc(name), RankedTensorType::get(shape, elem),
                               b.getStringAttr(name));
}

Value DecoderBuilder::rowPart(StringRef tensor, Type elem, int64_t begin,
                              ArrayRef<int64_t> shape) {
  return derivedWeight(rowSliceName(tensor, begin, begin + shape[0]), shape,
                       elem);
}

std::pair<Value, Value> DecoderBuilder::gateUpRows(StringRef tensor,
                                                   int64_t I) {
  int64_t H = cfg.hiddenSize;
  Type elem = checkTensor(tensor, {2 * I, H});
  return {rowPart(tensor, elem, 0, {I, H}), rowPart(tensor, elem, I, {I, H})};
}

DecoderBuilder::QKV DecoderBuilder::projectQKV(StringRef p, Value x) {
  const int64_t dyn = ShapedType::kDynamic;
  int64_t H = cfg.hiddenSize, nh = cfg.numHeads, nkv = cfg.numKvHeads,
          hd = cfg.headDim;
  const TensorNames &n = cfg.names;
  std::string attn = (p + "." + n.attn).str();
  if (!cfg.fusedQKV) {
    auto project = [&](StringRef name, int64_t rows) -> Value {
      std::string prefix = attn + "." + name.str();
      Value w = projectionWeight(prefix, rows, H);
      Value bias =
          cfg.qkvBias ? denseWeight(prefix + ".bias", {rows}) : Value();
      return llm::LinearOp::create(b, loc(prefix), act({dyn, rows}), x, w,
                                   bias);
    };
    if (cfg.attentionOutputGate) {
      // Qwen3-Next: q_proj [nh * 2hd, H] holds per head [q | gate].
      std::string qName = attn + "." + n.q + ".weight";
      Type elem = checkTensor(qName, {2 * nh * hd, H});
      if (cfg.qkvBias)
        problems.push_back(qName + ": a gated q_proj with a bias is not "
                                   "supported");
      auto half = [&](int64_t begin) -> Value {
        std::string name = flatBlockRowsName(qName, 2 * hd, begin, begin + hd);
        return llm::LinearOp::create(
            b, loc(attn + "." + n.q), act({dyn, nh * hd}), x,
            derivedWeight(name, {nh * hd, H}, elem), Value());
      };
      QKV r{half(0), project(n.k, nkv * hd), project(n.v, nkv * hd)};
      r.gate = half(hd);
      return r;
    }
    return {project(n.q, nh * hd), project(n.k, nkv * hd),
            project(n.v, nkv * hd)};
  }
  // Rows of the fused weight (and bias), each tensor checked once.
  // A Conv1D's q|k|v are column ranges of the stored [H, total]: row
  // ranges of its transpose.
  std::string fused = attn + "." + n.qkv;
  int64_t total = (nh + 2 * nkv) * hd;
  std::string fusedWeight = fused + ".weight";
  Type wElem;
  if (cfg.conv1dWeights) {
    wElem = checkTensor(fusedWeight, {H, total});
    fusedWeight = transposedName(fusedWeight);
  } else {
    wElem = checkTensor(fusedWeight, {total, H});
  }
  Type bElem = cfg.qkvBias ? checkTensor(fused + ".bias", {total}) : Type();
  auto part = [&](int64_t begin, int64_t rows) -> Value {
    Value w = rowPart(fusedWeight, wElem, begin, {rows, H});
    Value bias =
        cfg.qkvBias ? rowPart(fused + ".bias", bElem, begin, {rows}) : Value();
    return llm::LinearOp::create(b, loc(fused), act({dyn, rows}), x, w, bias);
  };
  if (cfg.qkvLayout == QKVLayout::Contiguous)
    return {part(0, nh * hd), part(nh * hd, nkv * hd),
            part((nh + nkv) * hd, nkv * hd)};
  // Per KV group g: its r query heads, then its key, then its value.
  int64_t r = nh / nkv, group = (r + 2) * hd;
  SmallVector<Value> qs, ks, vs;
  for (int64_t g = 0; g < nkv; ++g) {
    qs.push_back(part(g * group, r * hd));
    ks.push_back(part(g * group + r * hd, hd));
    vs.push_back(part(g * group + (r + 1) * hd, hd));
  }
  auto join = [&](ArrayRef<Value> parts, int64_t rows) -> Value {
    if (parts.size() == 1)
      return parts.front();
    return llm::ConcatOp::create(b, loc(fused), act({dyn, rows}), parts,
                                 b.getI64IntegerAttr(1));
  };
  return {join(qs, nh * hd), join(ks, nkv * hd), join(vs, nkv * hd)};
}

Value DecoderBuilder::projectionWeight(StringRef prefix, int64_t n, int64_t k) {
  if (cfg.conv1dWeights) {
    std::string name = (prefix + ".weight").str();
    Type elem = checkTensor(name, {k, n});
    return llm::WeightOp::create(b, loc(name),
                                 RankedTensorType::get({n, k}, elem),
                                 b.getStringAttr(transposedName(name)));
  }
  if (!cfg.gptq)
    return denseWeight((prefix + ".weight").str(), {n, k});

  const GptqConfig &q = *cfg.gptq;
  GptqScheme scheme;
  scheme.bits = unsigned(q.bits);
  scheme.groupSize = q.groupSize < 0 ? k : q.groupSize;
  scheme.symmetric = q.sym;
  scheme.zeroMinusOne = q.zeroMinusOne;
  // Keep building after a problem so that every one is reported; a group
  // that does not divide K becomes one group per row.
  int64_t group = gptqShapeProblem(n, k, scheme).empty() ? scheme.groupSize : k;
  const TensorView *scales = nullptr;
  if (weights)
    scales = findGptqTensors(*weights, prefix, n, k, scheme, problems).scales;
  else if (group != scheme.groupSize)
    problems.push_back(gptqShapeProblem(n, k, scheme));

  Type scaleType = b.getF16Type();
  if (scales)
    if (Type ft = floatType(scales->dtype))
      scaleType = ft;
  Type storage = IntegerType::get(&ctx, q.bits, IntegerType::Unsigned);
  Type zero = q.sym ? Type(b.getNoneType()) : storage;
  auto type =
      llm::QuantizedWeightType::get(&ctx, {n, k}, storage, group, scaleType,
                                    zero, q.zeroMinusOne ? "gptq" : "gptq_v2");
  return llm::WeightOp::create(b, loc(prefix), type, b.getStringAttr(prefix));
}

Value DecoderBuilder::rope(Value x, Value offset, const RopeScaling &r,
                           Location l) {
  int64_t rotaryDim = static_cast<int64_t>(cfg.headDim * r.partialRotaryFactor);
  rotaryDim -= rotaryDim % 2;
  auto f64 = [&](std::optional<double> v) -> FloatAttr {
    return v ? b.getF64FloatAttr(*v) : FloatAttr();
  };
  auto i64 = [&](std::optional<int64_t> v) -> IntegerAttr {
    return v ? b.getI64IntegerAttr(*v) : IntegerAttr();
  };
  auto list = [&](ArrayRef<double> v) -> DenseF64ArrayAttr {
    return v.empty() ? DenseF64ArrayAttr() : b.getDenseF64ArrayAttr(v);
  };
  llm::RopeKind kind = llm::RopeKind::Default;
  std::optional<int64_t> maxPos;
  switch (r.kind) {
  case RopeScaling::Kind::Default:
    kind = llm::RopeKind::Default;
    break;
  case RopeScaling::Kind::Linear:
    kind = llm::RopeKind::Linear;
    break;
  case RopeScaling::Kind::Dynamic:
    kind = llm::RopeKind::Dynamic;
    maxPos = cfg.maxPositionEmbeddings;
    break;
  case RopeScaling::Kind::Yarn:
    kind = llm::RopeKind::Yarn;
    maxPos = cfg.maxPositionEmbeddings;
    break;
  case RopeScaling::Kind::Llama3:
    kind = llm::RopeKind::Llama3;
    break;
  case RopeScaling::Kind::LongRope:
    kind = llm::RopeKind::LongRope;
    break;
  }
  std::optional<double> factor = r.factor;
  std::optional<int64_t> originalMax = r.originalMaxPositionEmbeddings;
  if (kind == llm::RopeKind::Yarn && !originalMax)
    originalMax = cfg.maxPositionEmbeddings;
  bool isYarn = kind == llm::RopeKind::Yarn;
  return llm::RopeOp::create(
      b, l, x.getType(), x, offset, llm::RopeKindAttr::get(&ctx, kind),
      llm::RopeLayoutAttr::get(&ctx, r.interleaved
                                         ? llm::RopeLayout::Interleaved
                                         : llm::RopeLayout::HalfSplit),
      b.getF64FloatAttr(r.theta), b.getI64IntegerAttr(rotaryDim), f64(factor),
      i64(originalMax), i64(maxPos), f64(r.lowFreqFactor),
      f64(r.highFreqFactor), f64(isYarn ? r.betaFast : std::nullopt),
      f64(isYarn ? r.betaSlow : std::nullopt), f64(r.attentionFactor),
      f64(r.mscale), f64(r.mscaleAllDim),
      isYarn && !r.truncate ? b.getBoolAttr(false) : BoolAttr(),
      list(r.shortFactor), list(r.longFactor));
}

Value DecoderBuilder::rmsNorm(Value x, Value weight, Location l) {
  llm::NormStyle style = weight && cfg.normWeight == NormWeight::OnePlusScale
                             ? llm::NormStyle::Gemma
                             : llm::NormStyle::Llama;
  return llm::RMSNormOp::create(
      b, l, x.getType(), x, weight,
      b.getF32FloatAttr(static_cast<float>(cfg.normEps)),
      llm::NormStyleAttr::get(&ctx, style));
}

Value DecoderBuilder::layerNorm(Value x, Value weight, Value bias, Location l) {
  return llm::LayerNormOp::create(
      b, l, x.getType(), x, weight, bias,
      b.getF32FloatAttr(static_cast<float>(cfg.normEps)),
      b.getI64IntegerAttr(-1));
}

Value DecoderBuilder::norm(Value x, StringRef prefix, int64_t n) {
  Value w = denseWeight((prefix + ".weight").str(), {n});
  if (cfg.normKind == NormKind::RMSNorm)
    return rmsNorm(x, w, loc(prefix));
  Value bias =
      cfg.normBias ? denseWeight((prefix + ".bias").str(), {n}) : Value();
  return layerNorm(x, w, bias, loc(prefix));
}

Value DecoderBuilder::blockNorm(StringRef layer, StringRef name, Value x) {
  if (name.empty())
    return x;
  return norm(x, (layer + "." + name).str(), cfg.hiddenSize);
}

Value DecoderBuilder::perHeadLayerNorm(Value x, StringRef prefix,
                                       int64_t heads) {
  const int64_t dyn = ShapedType::kDynamic, hd = cfg.headDim;
  Location l = loc(prefix);
  // cohere: one [heads, hd] tensor, checked once, read a row per head.
  std::string stacked = (prefix + ".weight").str();
  Type stackedElem =
      cfg.qkNormStacked ? checkTensor(stacked, {heads, hd}) : Type();
  SmallVector<Value> parts;
  for (int64_t h = 0; h < heads; ++h) {
    Value head =
        llm::SliceOp::create(b, l, act({dyn, 1, hd}), x, b.getI64IntegerAttr(1),
                             b.getI64IntegerAttr(h), b.getI64IntegerAttr(1));
    Value w;
    if (cfg.qkNormStacked) {
      w = llm::ReshapeOp::create(b, l, RankedTensorType::get({hd}, stackedElem),
                                 rowPart(stacked, stackedElem, h, {1, hd}));
    } else {
      w = denseWeight(llvm::formatv("{0}.norms.{1}.weight", prefix, h).str(),
                      {hd});
    }
    parts.push_back(layerNorm(head, w, Value(), l));
  }
  return llm::ConcatOp::create(b, l, act({dyn, heads, hd}), parts,
                               b.getI64IntegerAttr(1));
}

Value DecoderBuilder::plainMlp(StringRef layer, Value x) {
  const int64_t dyn = ShapedType::kDynamic;
  int64_t H = cfg.hiddenSize, I = cfg.intermediateSize;
  auto project = [&](StringRef name, Value in, int64_t n, int64_t k) {
    std::string prefix = (layer + "." + cfg.names.mlp + "." + name).str();
    Value w = projectionWeight(prefix, n, k);
    Value bias = cfg.mlpBias ? denseWeight(prefix + ".bias", {n}) : Value();
    return llm::LinearOp::create(b, loc(prefix), act({dyn, n}), in, w, bias);
  };
  Value up = project(cfg.plainMlp->up, x, I, H);
  Location l = loc(layer + "." + cfg.names.mlp);
  switch (cfg.mlpActivation) {
  case MlpActivation::Silu:
    up = llm::SiluOp::create(b, l, up.getType(), up);
    break;
  case MlpActivation::Gelu:
  case MlpActivation::GeluTanh:
    up = llm::GeluOp::create(
        b, l, up.getType(), up,
        b.getBoolAttr(cfg.mlpActivation == MlpActivation::GeluTanh));
    break;
  }
  return project(cfg.plainMlp->down, up, H, I);
}

static llm::Activation mlpActivation(MlpActivation a);

Value DecoderBuilder::moeBlock(StringRef layer, Value x) {
  const MoEConfig &m = *cfg.moe;
  int64_t H = cfg.hiddenSize;
  std::string block = (layer + "." + m.block).str();
  bool fused = m.fusedInterleaved || m.fusedConcatenated;
  if (!fused && !m.stackedLinear && heldFusedInMemory(layer, block))
    return x;
  std::string routerName = block + "." + m.router;
  Value router = denseWeight(routerName + ".weight", {m.numExperts, H});
  Value routerBias = m.routerBias
                         ? denseWeight(routerName + ".bias", {m.numExperts})
                         : Value();
  Value correctionBias =
      m.correctionBias
          ? denseWeight(routerName + ".e_score_correction_bias", {m.numExperts})
          : Value();
  Experts experts = fused             ? fusedExperts(block)
                    : m.stackedLinear ? stackedExperts(block)
                                      : perExpertWeights(block);
  Value sharedGate, sharedUp, sharedDown, sharedExpertGate;
  if (m.sharedIntermediateSize > 0 && m.sharedAtLayer) {
    int64_t Is = m.sharedIntermediateSize;
    std::string shared = (layer + "." + m.shared).str();
    std::tie(sharedGate, sharedUp) =
        gateUpRows(shared + "." + m.sharedGateUp + ".weight", Is);
    sharedDown = denseWeight(shared + "." + m.sharedDown + ".weight", {H, Is});
  } else if (m.sharedIntermediateSize > 0) {
    int64_t Is = m.sharedIntermediateSize;
    std::string shared = block + "." + m.shared;
    sharedGate = projectionWeight(shared + "." + m.gate, Is, H);
    sharedUp = projectionWeight(shared + "." + m.up, Is, H);
    sharedDown = projectionWeight(shared + "." + m.down, H, Is);
    if (m.sharedExpertGate)
      sharedExpertGate =
          denseWeight(block + "." + m.sharedGate + ".weight", {1, H});
  }
  bool clamped = m.swigluLimit.has_value();
  auto f32 = [&](std::optional<double> v) {
    return v ? b.getF32FloatAttr(float(*v)) : FloatAttr();
  };
  return llm::MoEOp::create(
      b, loc(block), x.getType(), x, router, routerBias, correctionBias,
      experts.gates, experts.ups, experts.downs, experts.gateBias,
      experts.upBias, experts.downBias, sharedGate, sharedUp, sharedDown,
      sharedExpertGate, b.getI64IntegerAttr(m.topK),
      llm::MoEScoringAttr::get(&ctx, m.sigmoidScores
                                         ? llm::MoEScoring::Sigmoid
                                         : llm::MoEScoring::Softmax),
      llm::MoERoutingOrderAttr::get(
          &ctx, m.topkThenScore ? llm::MoERoutingOrder::TopkThenScore
                                : llm::MoERoutingOrder::ScoreThenTopk),
      b.getBoolAttr(m.renormalize),
      b.getF32FloatAttr(float(m.routedScalingFactor)),
      llm::ActivationAttr::get(&ctx, clamped
                                         ? llm::Activation::ClampedSwiglu
                                         : mlpActivation(cfg.mlpActivation)),
      b.getBoolAttr(m.weightOnInput), f32(m.swigluLimit), f32(m.swigluAlpha),
      b.getI64IntegerAttr(m.nGroup),
      m.nGroup > 1 ? b.getI64IntegerAttr(m.topkGroup) : IntegerAttr(),
      b.getI64IntegerAttr(m.groupScoreTopk),
      b.getF32FloatAttr(float(m.renormalizeEpsilon)));
}

bool DecoderBuilder::heldFusedInMemory(StringRef layer, StringRef block) {
  const MoEConfig &m = *cfg.moe;
  // transformers keeps the experts fused in memory ([E, 2I, H] gate_up_proj,
  // [E, H, I] down_proj; Mixtral's block renamed `mlp`) but save_pretrained
  // writes one tensor per expert; a file holding the fused form is named
  // rather than reported as E missing experts.
  if (weights &&
      !weights->lookup(
          (block + "." + m.experts + ".0." + m.gate + ".weight").str()))
    for (StringRef inMemory : {StringRef(m.block), StringRef("mlp")}) {
      std::string fused =
          (layer + "." + inMemory + "." + m.experts + ".gate_up_proj").str();
      if (!weights->lookup(fused))
        continue;
      problems.push_back(llvm::formatv(
          "tensor '{0}' holds the experts fused ([experts, 2 * "
          "intermediate, hidden], transformers' in-memory layout); pimc "
          "reads the per-expert tensors save_pretrained writes "
          "('{1}.{2}.<e>.{3}.weight', ...)",
          fused, block, m.experts, m.gate));
      return true;
    }
  return false;
}

DecoderBuilder::Experts DecoderBuilder::perExpertWeights(StringRef block) {
  const MoEConfig &m = *cfg.moe;
  int64_t H = cfg.hiddenSize, I = m.intermediateSize;
  Experts out;
  for (int64_t e = 0; e < m.numExperts; ++e) {
    std::string expert = llvm::formatv("{0}.{1}.{2}", block, m.experts, e);
    out.gates.push_back(projectionWeight(expert + "." + m.gate, I, H));
    out.ups.push_back(projectionWeight(expert + "." + m.up, I, H));
    out.downs.push_back(projectionWeight(expert + "." + m.down, H, I));
  }
  return out;
}

/// Fused experts: expert e's gate weight is columns of gate_up_proj[e]
/// ([H, 2I], x @ W layout) read as rows of its transpose: the even ones
/// (gpt-oss, `gate_up_proj[e]^T[0:2I:2]`) or the first I (Llama 4,
/// `gate_up_proj[e]^T[0:I]`), [I, H]; up the odd or the last I; down
/// `down_proj[e]^T` [H, I]; gpt-oss's biases stacked by expert, the same
/// columns of gate_up_proj_bias ([E, I] each) and down_proj_bias. The
/// weight store materializes each selected part once, nothing more.
DecoderBuilder::Experts DecoderBuilder::fusedExperts(StringRef block) {
  const MoEConfig &m = *cfg.moe;
  int64_t H = cfg.hiddenSize, I = m.intermediateSize, E = m.numExperts;
  std::string experts = block.str() + "." + m.experts;
  std::string gateUp = experts + ".gate_up_proj", down = experts + ".down_proj";
  // The stored tensors, checked whole: one error per tensor, not per expert.
  Type wElem = checkTensor(gateUp, {E, H, 2 * I});
  Type dElem = checkTensor(down, {E, I, H});
  bool interleaved = m.fusedInterleaved;
  int64_t step = interleaved ? 2 : 1, upBegin = interleaved ? 1 : I;
  Experts out;
  for (int64_t e = 0; e < E; ++e) {
    std::string gu = transposedName(indexName(gateUp, e));
    out.gates.push_back(derivedWeight(
        stridedRowsName(gu, 0, interleaved ? 2 * I : I, step), {I, H}, wElem));
    out.ups.push_back(derivedWeight(stridedRowsName(gu, upBegin, 2 * I, step),
                                    {I, H}, wElem));
    out.downs.push_back(
        derivedWeight(transposedName(indexName(down, e)), {H, I}, dElem));
  }
  if (!interleaved)
    return out;
  std::string gateUpBias = gateUp + "_bias", downBias = down + "_bias";
  Type gbElem = checkTensor(gateUpBias, {E, 2 * I});
  Type dbElem = checkTensor(downBias, {E, H});
  // gate_up_proj_bias's even (odd) columns: rows of its transpose,
  // transposed back ([E, I]); down_proj_bias as stored.
  std::string gubT = transposedName(gateUpBias);
  out.gateBias = derivedWeight(
      transposedName(stridedRowsName(gubT, 0, 2 * I, 2)), {E, I}, gbElem);
  out.upBias = derivedWeight(transposedName(stridedRowsName(gubT, 1, 2 * I, 2)),
                             {E, I}, gbElem);
  out.downBias = derivedWeight(downBias, {E, H}, dbElem);
  return out;
}

/// Granite-4.0-H's stacked experts: expert e's gate and up are rows
/// [0, I) and [I, 2I) of `<gate>.weight[e]` ([2I, H]), its down
/// `<down>.weight[e]` ([H, I]).
DecoderBuilder::Experts DecoderBuilder::stackedExperts(StringRef block) {
  const MoEConfig &m = *cfg.moe;
  int64_t H = cfg.hiddenSize, I = m.intermediateSize, E = m.numExperts;
  std::string gateUp = (block + "." + m.gate + ".weight").str();
  std::string down = (block + "." + m.down + ".weight").str();
  Type wElem = checkTensor(gateUp, {E, 2 * I, H});
  Type dElem = checkTensor(down, {E, H, I});
  Experts out;
  for (int64_t e = 0; e < E; ++e) {
    std::string gu = indexName(gateUp, e);
    out.gates.push_back(derivedWeight(rowSliceName(gu, 0, I), {I, H}, wElem));
    out.ups.push_back(derivedWeight(rowSliceName(gu, I, 2 * I), {I, H}, wElem));
    out.downs.push_back(derivedWeight(indexName(down, e), {H, I}, dElem));
  }
  return out;
}

/// c * tanh(x / c) as scale, tanh, scale (Gemma 2's final-logit softcap).
Value DecoderBuilder::softcapped(Value x, std::optional<double> cap,
                                 Location l) {
  if (!cap)
    return x;
  Value t = llm::TanhOp::create(b, l, x.getType(), scaled(x, 1.0 / *cap, l));
  return scaled(t, *cap, l);
}

Value DecoderBuilder::scaled(Value x, std::optional<double> factor,
                             Location l) {
  if (!factor)
    return x;
  return llm::ScaleOp::create(b, l, x.getType(), x,
                              b.getF32FloatAttr(static_cast<float>(*factor)));
}

static llm::Activation mlpActivation(MlpActivation a) {
  switch (a) {
  case MlpActivation::Silu:
    return llm::Activation::Silu;
  case MlpActivation::Gelu:
    return llm::Activation::Gelu;
  case MlpActivation::GeluTanh:
    return llm::Activation::GeluTanh;
  }
  llvm_unreachable("unknown MlpActivation");
}

LayerAttention DecoderBuilder::layerKind(int64_t layer) const {
  return size_t(layer) < cfg.layers.size()
             ? cfg.layers[layer]
             : LayerAttention{cfg.slidingWindow.has_value()};
}

Value DecoderBuilder::buildLayer(int64_t layer, Value hidden, Value offset,
                                 Value length, const LayerState &in,
                                 LayerState &out) {
  const TensorNames &n = cfg.names;
  std::string p = llvm::formatv("{0}.{1}", n.layers, layer).str();
  std::string attnPrefix = p + "." + n.attn, mlpPrefix = p + "." + n.mlp;
  int64_t H = cfg.hiddenSize, I = cfg.intermediateSize;
  LayerAttention kind = layerKind(layer);

  Location attnLoc = loc(attnPrefix);
  Value blockIn = hidden;
  Value x = blockNorm(p, cfg.norms.attnIn, hidden);
  // The token mixers: attention, the recurrent mixer, or both on the same
  // normed x, summed (Falcon-H1: the mixer's output first).
  Value o;
  if (kind.hasRecurrent())
    o = recurrentMixer(layer, x, offset, in, out);
  if (kind.hasAttention()) {
    Value a = cfg.mla
                  ? mlaAttention(layer, x, offset, length, in.cache, out.cache)
                  : attention(layer, x, offset, length, in.cache, out.cache);
    o = o ? llm::AddOp::create(b, attnLoc, o, a) : a;
  }
  o = blockNorm(p, cfg.norms.attnOut, o);
  o = scaled(o, cfg.residualMultiplier, attnLoc);
  hidden = llm::AddOp::create(b, attnLoc, hidden, o);

  // A parallel block's MLP reads the block input: through its own norm, or
  // through the attention's.
  Value h2 = !cfg.parallelBlock        ? blockNorm(p, cfg.norms.mlpIn, hidden)
             : cfg.norms.mlpIn.empty() ? x
                                       : blockNorm(p, cfg.norms.mlpIn, blockIn);
  if (cfg.plainMlp) {
    Value m = plainMlp(p, h2);
    m = blockNorm(p, cfg.norms.mlpOut, m);
    m = scaled(m, cfg.residualMultiplier, loc(mlpPrefix));
    return llm::AddOp::create(b, loc(mlpPrefix), hidden, m);
  }
  if (cfg.moe && cfg.moe->isSparse(layer)) {
    Value m = moeBlock(p, h2);
    m = blockNorm(p, cfg.norms.mlpOut, m);
    m = scaled(m, cfg.residualMultiplier, loc(mlpPrefix));
    return llm::AddOp::create(b, loc(mlpPrefix), hidden, m);
  }
  // gate and up: their own projections, or the halves of gate_up_proj.
  Value gate, up;
  if (cfg.fusedGateUp) {
    std::tie(gate, up) = gateUpRows(mlpPrefix + "." + n.gateUp + ".weight", I);
  } else {
    gate = projectionWeight(mlpPrefix + "." + n.gate, I, H);
    up = projectionWeight(mlpPrefix + "." + n.up, I, H);
  }
  Value down = projectionWeight(mlpPrefix + "." + n.down, H, I);
  Value m;
  if (cfg.mup.mlpGate) {
    // Falcon-H1: down(up(y) * silu(gate(y) * gate_multiplier)), unfused.
    Location l = loc(mlpPrefix);
    if (cfg.mlpActivation != MlpActivation::Silu)
      problems.push_back("mlp_multipliers: a gate multiplier with hidden_act "
                         "'" +
                         cfg.hiddenAct + "' is not supported (silu)");
    const int64_t dyn = ShapedType::kDynamic;
    Value g = llm::LinearOp::create(b, l, act({dyn, I}), h2, gate, Value());
    Value u = llm::LinearOp::create(b, l, act({dyn, I}), h2, up, Value());
    g = llm::SiluOp::create(b, l, scaled(g, cfg.mup.mlpGate, l));
    m = llm::LinearOp::create(b, l, hidden.getType(),
                              llm::MulOp::create(b, l, u, g), down, Value());
  } else {
    m = llm::GatedMLPOp::create(
        b, loc(mlpPrefix), hidden.getType(), h2, gate, up, down,
        llm::ActivationAttr::get(&ctx, mlpActivation(cfg.mlpActivation)));
  }
  m = scaled(m, cfg.mup.mlpDown, loc(mlpPrefix));
  m = blockNorm(p, cfg.norms.mlpOut, m);
  m = scaled(m, cfg.residualMultiplier, loc(mlpPrefix));
  return llm::AddOp::create(b, loc(mlpPrefix), hidden, m);
}

Value DecoderBuilder::attention(int64_t layer, Value x, Value offset,
                                Value length, Value cache, Value &newCache) {
  const TensorNames &n = cfg.names;
  std::string p = llvm::formatv("{0}.{1}", n.layers, layer).str();
  std::string attnPrefix = p + "." + n.attn;
  const int64_t dyn = ShapedType::kDynamic;
  int64_t H = cfg.hiddenSize, nh = cfg.numHeads, nkv = cfg.numKvHeads,
          hd = cfg.headDim;
  Location attnLoc = loc(attnPrefix);
  x = scaled(x, cfg.mup.attentionIn, attnLoc);
  auto [q, k, v, gate] = projectQKV(p, x);
  k = scaled(k, cfg.mup.key, attnLoc); // before RoPE: cached scaled
  // QK norms normalise each head's hd values, or (olmo2) the whole
  // projection's nh*hd before the head split.
  auto qkNorm = [&](Value t, StringRef name, int64_t heads) {
    int64_t width = cfg.qkNormWhole ? heads * hd : hd;
    std::string prefix = attnPrefix + "." + name.str();
    return rmsNorm(t, denseWeight(prefix + ".weight", {width}), loc(prefix));
  };
  if (cfg.qkNorm && cfg.qkNormWhole) {
    q = qkNorm(q, "q_norm", nh);
    k = qkNorm(k, "k_norm", nkv);
  }
  q = llm::ReshapeOp::create(b, attnLoc, act({dyn, nh, hd}), q);
  k = llm::ReshapeOp::create(b, attnLoc, act({dyn, nkv, hd}), k);
  v = llm::ReshapeOp::create(b, attnLoc, act({dyn, nkv, hd}), v);
  if (cfg.qkNormPerHeadLayerNorm) {
    // stablelm names them q_layernorm, cohere q_norm.
    StringRef qName = cfg.qkNormStacked ? "q_norm" : "q_layernorm";
    StringRef kName = cfg.qkNormStacked ? "k_norm" : "k_layernorm";
    q = perHeadLayerNorm(q, attnPrefix + "." + qName.str(), nh);
    k = perHeadLayerNorm(k, attnPrefix + "." + kName.str(), nkv);
  } else if (cfg.qkNorm && !cfg.qkNormWhole) {
    q = qkNorm(q, "q_norm", nh);
    k = qkNorm(k, "k_norm", nkv);
  }
  LayerAttention kind = layerKind(layer);
  if (kind.rope && (!cfg.ropeOnlySliding || kind.sliding)) {
    const RopeScaling &r =
        kind.sliding && cfg.slidingRope ? *cfg.slidingRope : cfg.rope;
    q = rope(q, offset, r, attnLoc);
    k = rope(k, offset, r, attnLoc);
    if (cfg.l2QkNorm) { // Llama 4: weightless, after RoPE
      q = rmsNorm(q, Value(), attnLoc);
      k = rmsNorm(k, Value(), attnLoc);
    }
  }
  newCache = llm::KVCacheAppendOp::create(b, attnLoc, cache.getType(), cache, k,
                                          v, offset);
  auto kvRead = llm::KVCacheReadOp::create(
      b, attnLoc, act({dyn, nkv, hd}), act({dyn, nkv, hd}), newCache, length);
  IntegerAttr window = cfg.slidingWindow && kind.sliding
                           ? b.getI64IntegerAttr(*cfg.slidingWindow)
                           : IntegerAttr();
  double scale = cfg.attentionScale.value_or(1.0 / std::sqrt(double(hd)));
  if (cfg.attentionScaleByInverseLayer)
    scale /= double(layer + 1);
  Value sinks =
      cfg.attentionSinks ? denseWeight(attnPrefix + ".sinks", {nh}) : Value();
  // Llama 4 tunes the temperature of the NoPE layers.
  bool tuned = cfg.temperatureTuning && !kind.rope;
  Value attn = llm::AttentionOp::create(
      b, attnLoc, act({dyn, nh, hd}), q, kvRead.getKey(), kvRead.getValue(),
      sinks, b.getF32FloatAttr(static_cast<float>(scale)), b.getBoolAttr(true),
      window,
      cfg.attnLogitSoftcap
          ? b.getF32FloatAttr(static_cast<float>(*cfg.attnLogitSoftcap))
          : FloatAttr(),
      cfg.alibi ? b.getDenseF32ArrayAttr(pimc::ref::alibiSlopes(nh))
                : DenseF32ArrayAttr(),
      kind.chunked ? b.getI64IntegerAttr(*cfg.attentionChunkSize)
                   : IntegerAttr(),
      tuned ? b.getI64IntegerAttr(cfg.temperatureTuning->floorScale)
            : IntegerAttr(),
      tuned ? b.getF32FloatAttr(float(cfg.temperatureTuning->scale))
            : FloatAttr());
  attn = llm::ReshapeOp::create(b, attnLoc, act({dyn, nh * hd}), attn);
  if (gate) // Qwen3-Next: the output times sigmoid(gate) before o_proj
    attn = llm::MulOp::create(b, attnLoc, attn,
                              llm::SigmoidOp::create(b, attnLoc, gate));
  std::string oName = attnPrefix + "." + n.o;
  Value wo = projectionWeight(oName, H, nh * hd);
  Value bo = cfg.oBias ? denseWeight(oName + ".bias", {H}) : Value();
  Value o = llm::LinearOp::create(b, loc(oName), act({dyn, H}), attn, wo, bo);
  return scaled(o, cfg.mup.attentionOut, attnLoc);
}

Value DecoderBuilder::mlaAttention(int64_t layer, Value x, Value offset,
                                   Value length, Value cache, Value &newCache) {
  const MLAConfig &m = *cfg.mla;
  const int64_t dyn = ShapedType::kDynamic;
  int64_t H = cfg.hiddenSize, nh = cfg.numHeads, r = m.kvLoraRank,
          dr = m.ropeDim, dn = m.nopeDim, dv = m.valueDim;
  std::string a =
      llvm::formatv("{0}.{1}.{2}", cfg.names.layers, layer, cfg.names.attn)
          .str();
  Location l = loc(a);
  auto project = [&](StringRef name, Value in, int64_t rows, int64_t cols,
                     bool bias) -> Value {
    std::string prefix = a + "." + name.str();
    Value w = projectionWeight(prefix, rows, cols);
    Value bv = bias ? denseWeight(prefix + ".bias", {rows}) : Value();
    return llm::LinearOp::create(b, loc(prefix), act({dyn, rows}), in, w, bv);
  };
  auto slice = [&](Value t, int64_t axis, int64_t start, int64_t size) {
    SmallVector<int64_t> shape(cast<RankedTensorType>(t.getType()).getShape());
    shape[axis] = size;
    return llm::SliceOp::create(b, l, act(shape), t, b.getI64IntegerAttr(axis),
                                b.getI64IntegerAttr(start),
                                b.getI64IntegerAttr(size))
        .getResult();
  };
  auto reshape = [&](Value t, ArrayRef<int64_t> shape) {
    return llm::ReshapeOp::create(b, l, act(shape), t).getResult();
  };
  auto concat = [&](Value lhs, Value rhs, ArrayRef<int64_t> shape) {
    return llm::ConcatOp::create(b, l, act(shape), ValueRange{lhs, rhs},
                                 b.getI64IntegerAttr(2))
        .getResult();
  };

  // The query: through the low-rank bottleneck, or one projection.
  Value q;
  if (m.qLoraRank > 0) {
    Value cq = project("q_a_proj", x, m.qLoraRank, H, cfg.attentionBias);
    cq = norm(cq, a + ".q_a_layernorm", m.qLoraRank);
    q = project("q_b_proj", cq, nh * (dn + dr), m.qLoraRank, false);
  } else {
    q = project("q_proj", x, nh * (dn + dr), H, false);
  }
  q = reshape(q, {dyn, nh, dn + dr});
  Value qNope = slice(q, 2, 0, dn), qRope = slice(q, 2, dn, dr);

  // The latent: c_KV normalised, and one shared rotary key.
  Value ckv = project("kv_a_proj_with_mqa", x, r + dr, H, cfg.attentionBias);
  Value latent = norm(slice(ckv, 1, 0, r), a + ".kv_a_layernorm", r);
  Value kRope = reshape(slice(ckv, 1, r, dr), {dyn, 1, dr});
  RopeScaling rs = cfg.rope;
  rs.interleaved = m.ropeInterleaved;
  qRope = rope(qRope, offset, rs, l);
  kRope = rope(kRope, offset, rs, l);

  // The latent cache holds [c_KV; k_rope] once per token; c_KV is the value.
  latent = reshape(latent, {dyn, 1, r});
  Value key = concat(latent, kRope, {dyn, 1, r + dr});
  newCache = llm::KVCacheAppendOp::create(b, l, cache.getType(), cache, key,
                                          latent, offset);
  auto kvRead = llm::KVCacheReadOp::create(b, l, act({dyn, 1, r + dr}),
                                           act({dyn, 1, r}), newCache, length);

  // Absorbed: q_hat_h = W_UK^h^T q_nope_h scores against c_KV, and the
  // latent output goes through W_UV^h (kv_b_proj's per-head row blocks).
  std::string kvb = a + ".kv_b_proj.weight";
  Type elem = checkTensor(kvb, {nh * (dn + dv), r});
  Value wUK =
      derivedWeight(blockRowsName(kvb, dn + dv, 0, dn), {nh, dn, r}, elem);
  Value wUV = derivedWeight(blockRowsName(kvb, dn + dv, dn, dn + dv),
                            {nh, dv, r}, elem);
  Value qHat = llm::HeadLinearOp::create(b, l, act({dyn, nh, r}), qNope, wUK,
                                         b.getBoolAttr(true));
  Value query = concat(qHat, qRope, {dyn, nh, r + dr});
  // The softmax scale is the unabsorbed head's: (dn + dr)^-0.5, times
  // mscale^2 under a scaled RoPE with mscale_all_dim (transformers'
  // yarn_apply_mscale).
  double scale = 1.0 / std::sqrt(double(dn + dr));
  if (cfg.rope.kind != RopeScaling::Kind::Default && cfg.rope.factor &&
      *cfg.rope.factor > 1.0 && cfg.rope.mscaleAllDim.value_or(0.0) != 0.0) {
    double mscale =
        0.1 * *cfg.rope.mscaleAllDim * std::log(*cfg.rope.factor) + 1.0;
    scale *= mscale * mscale;
  }
  Value attn = llm::AttentionOp::create(
      b, l, act({dyn, nh, r}), query, kvRead.getKey(), kvRead.getValue(),
      Value(), b.getF32FloatAttr(static_cast<float>(scale)),
      b.getBoolAttr(true), IntegerAttr(), FloatAttr(), DenseF32ArrayAttr(),
      IntegerAttr(), IntegerAttr(), FloatAttr());
  Value o = llm::HeadLinearOp::create(b, l, act({dyn, nh, dv}), attn, wUV,
                                      b.getBoolAttr(false));
  o = reshape(o, {dyn, nh * dv});
  return project("o_proj", o, H, nh * dv, cfg.attentionBias);
}

llm::KVCacheType DecoderBuilder::cacheType() {
  if (cfg.mla)
    return llm::KVCacheType::get(&ctx, maxContext, 1,
                                 cfg.mla->kvLoraRank + cfg.mla->ropeDim,
                                 b.getF32Type(), cfg.mla->kvLoraRank);
  return llm::KVCacheType::get(&ctx, maxContext, cfg.numKvHeads, cfg.headDim,
                               b.getF32Type());
}

llvm::Expected<OwningOpRef<ModuleOp>> DecoderBuilder::build() {
  if (cfg.mlpBias && !cfg.plainMlp)
    return llvm::createStringError("config field 'mlp_bias': biases of a "
                                   "gated MLP are not supported yet");
  if (cfg.gptq && cfg.conv1dWeights)
    return llvm::createStringError("GPTQ weights of Conv1D projections are "
                                   "not supported yet");
  if (cfg.gptq && cfg.moe)
    return llvm::createStringError("GPTQ weights of MoE experts are not "
                                   "supported yet");
  if (cfg.moe && (cfg.plainMlp || cfg.fusedGateUp))
    return llvm::createStringError("an MoE block with a plain or fused "
                                   "dense MLP is not supported");
  if (cfg.gptq && (cfg.fusedQKV || cfg.fusedGateUp))
    return llvm::createStringError("GPTQ weights of fused projections "
                                   "(qkv_proj, gate_up_proj) are not "
                                   "supported yet");
  if (cfg.learnedPositions && maxContext > cfg.maxPositionEmbeddings)
    return llvm::createStringError(llvm::formatv(
        "a context of {0} positions exceeds the {1} rows of the learned "
        "position table '{2}.weight'",
        maxContext, cfg.maxPositionEmbeddings, cfg.names.positions));
  Location modelLoc = loc(cfg.modelType);
  OwningOpRef<ModuleOp> module = ModuleOp::create(modelLoc);
  (*module)->setAttr("llm.model_type", b.getStringAttr(cfg.modelType));
  (*module)->setAttr("llm.max_context", b.getI64IntegerAttr(maxContext));
  b.setInsertionPointToEnd(module->getBody());

  const int64_t dyn = ShapedType::kDynamic;
  SmallVector<Type> inputs = {RankedTensorType::get({dyn}, b.getI64Type()),
                              b.getIndexType()};
  SmallVector<Type> results = {act({1, cfg.vocabSize})};
  // Per layer: its KV cache, then its recurrent mixer's conv and scan
  // states, each returned in its argument's place.
  SmallVector<Type> layerTypes;
  for (int64_t i = 0; i < cfg.numLayers; ++i) {
    if (layerKind(i).hasAttention())
      layerTypes.push_back(cacheType());
    if (layerKind(i).hasRecurrent())
      layerTypes.append({convStateType(), scanStateType()});
  }
  if (!problems.empty())
    return llvm::createStringError(problems.front());
  llvm::append_range(inputs, layerTypes);
  llvm::append_range(results, layerTypes);
  auto func = func::FuncOp::create(b, modelLoc, kForwardFunction,
                                   b.getFunctionType(inputs, results));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value tokens = entry->getArgument(0), offset = entry->getArgument(1);

  Value count = tensor::DimOp::create(b, modelLoc, tokens, 0);
  Value length = arith::AddIOp::create(b, modelLoc, offset, count);
  const TensorNames &n = cfg.names;
  Value table =
      denseWeight(n.embed + ".weight", {cfg.vocabSize, cfg.hiddenSize});
  Value hidden = llm::EmbeddingOp::create(
      b, loc(n.embed), act({dyn, cfg.hiddenSize}), table, tokens);
  hidden = scaled(hidden, cfg.embeddingScale, loc(n.embed));
  if (cfg.learnedPositions) {
    // h0 = wte[ids] + wpe[offset .. offset + T).
    Location l = loc(n.positions);
    Value positions = llm::PositionsOp::create(
        b, l, RankedTensorType::get({dyn}, b.getI64Type()), offset, count);
    Value posTable = denseWeight(n.positions + ".weight",
                                 {cfg.maxPositionEmbeddings, cfg.hiddenSize});
    Value posEmbed = llm::EmbeddingOp::create(b, l, act({dyn, cfg.hiddenSize}),
                                              posTable, positions);
    hidden = llm::AddOp::create(b, l, hidden, posEmbed);
  }
  SmallVector<Value> outs;
  outs.push_back(Value());
  unsigned arg = 2;
  for (int64_t i = 0; i < cfg.numLayers; ++i) {
    LayerState in, out;
    if (layerKind(i).hasAttention())
      in.cache = entry->getArgument(arg++);
    if (layerKind(i).hasRecurrent()) {
      in.conv = entry->getArgument(arg++);
      in.recurrent = entry->getArgument(arg++);
    }
    hidden = buildLayer(i, hidden, offset, length, in, out);
    for (Value v : {out.cache, out.conv, out.recurrent})
      if (v)
        outs.push_back(v);
  }
  hidden = norm(hidden, n.finalNorm, cfg.hiddenSize);
  Value last = llm::SliceOp::create(
      b, loc(n.finalNorm), act({1, cfg.hiddenSize}), hidden,
      b.getI64IntegerAttr(0), b.getI64IntegerAttr(-1), b.getI64IntegerAttr(1));
  Value head =
      cfg.tieWordEmbeddings
          ? table
          : denseWeight(n.head + ".weight", {cfg.vocabSize, cfg.hiddenSize});
  outs[0] = llm::LMHeadOp::create(b, loc(n.head), act({1, cfg.vocabSize}), last,
                                  head);
  outs[0] = scaled(outs[0], cfg.logitScale, loc(n.head));
  outs[0] = softcapped(outs[0], cfg.finalLogitSoftcap, loc(n.head));
  func::ReturnOp::create(b, modelLoc, outs);

  if (!problems.empty()) {
    std::string msg = llvm::formatv("{0} problem(s) with the checkpoint's "
                                    "tensors:",
                                    problems.size());
    for (const std::string &p : problems)
      msg += "\n  " + p;
    return llvm::createStringError(msg);
  }
  if (failed(verify(*module)))
    return llvm::createStringError(
        "internal error: imported IR does not verify");
  return module;
}

} // namespace pimc::hf::detail

void pimc::hf::registerImportDialects(MLIRContext &context) {
  context.loadDialect<llm::LLMDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
}

llvm::Expected<OwningOpRef<ModuleOp>>
pimc::hf::importCheckpoint(MLIRContext &context, const ModelConfig &config,
                           const WeightStore *weights,
                           const ImportOptions &options) {
  registerImportDialects(context);
  int64_t maxContext = options.maxContext;
  // Dynamic NTK exists to run past max_position_embeddings, so there the
  // trained length does not bound the cache.
  if (maxContext <= 0)
    maxContext = config.rope.kind == RopeScaling::Kind::Dynamic
                     ? 4096
                     : std::min<int64_t>(config.maxPositionEmbeddings, 4096);
  DecoderBuilder builder(context, config, weights, maxContext);
  return builder.build();
}

llvm::Expected<ImportedModel>
pimc::hf::importCheckpointDir(MLIRContext &context, llvm::StringRef dir,
                              const ImportOptions &options) {
  llvm::SmallString<256> configPath(dir);
  llvm::sys::path::append(configPath, "config.json");
  auto config = parseModelConfig(configPath);
  if (!config)
    return config.takeError();
  auto weights = WeightStore::openDirectory(dir);
  if (!weights)
    return weights.takeError();
  auto module = importCheckpoint(context, *config, weights->get(), options);
  if (!module)
    return llvm::createStringError(
        llvm::formatv("{0}: {1}", dir, llvm::toString(module.takeError())));
  // What a compiled program records about its model (pimsim::ModelIdentity).
  mlir::Builder b(&context);
  (**module)->setAttr("llm.source_config",
                      b.getStringAttr(semanticConfigJSON(*config)));
  (**module)->setAttr("llm.source_tensors",
                      b.getStringAttr((*weights)->tableDigest()));
  ImportedModel model;
  model.config = std::move(*config);
  model.weights = std::move(*weights);
  model.module = std::move(*module);
  return model;
}

llvm::Expected<ImportedModel>
pimc::hf::importConfigFile(MLIRContext &context, llvm::StringRef configPath,
                           const ImportOptions &options) {
  auto config = parseModelConfig(configPath);
  if (!config)
    return config.takeError();
  auto module = importCheckpoint(context, *config, nullptr, options);
  if (!module)
    return llvm::createStringError(llvm::formatv(
        "{0}: {1}", configPath, llvm::toString(module.takeError())));
  mlir::Builder b(&context);
  (**module)->setAttr("llm.source_config",
                      b.getStringAttr(semanticConfigJSON(*config)));
  // No checkpoint can match this table: a timing-only program runs without
  // weights (pimc run --mode timing, pimsim) and refuses a checkpoint.
  (**module)->setAttr("llm.source_tensors", b.getStringAttr(kTimingOnly));
  ImportedModel model;
  model.config = std::move(*config);
  model.module = std::move(*module);
  return model;
}
