//===- HostOps.cpp - host kernels of compiled models ----------------------===//
#include "pimc/Runtime/HostOps.h"

#include "pimc/Checkpoint/Safetensors.h"
#include "pimc/Support/Shape.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

using namespace llvm;

namespace pimc::rt {

//===----------------------------------------------------------------------===//
// Formats
//===----------------------------------------------------------------------===//

void encodeElement(ElemFormat format, float value, uint8_t *out) {
  switch (format) {
  case ElemFormat::F32: {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    for (int i = 0; i < 4; ++i)
      out[i] = uint8_t(bits >> (8 * i));
    return;
  }
  case ElemFormat::FP16:
  case ElemFormat::BF16: {
    uint16_t bits = format == ElemFormat::FP16 ? ref::floatToF16(value)
                                               : ref::floatToBf16(value);
    out[0] = uint8_t(bits);
    out[1] = uint8_t(bits >> 8);
    return;
  }
  case ElemFormat::I32: { // an integer held exactly in `value`
    uint32_t bits = uint32_t(int32_t(value));
    for (int i = 0; i < 4; ++i)
      out[i] = uint8_t(bits >> (8 * i));
    return;
  }
  }
}

float decodeElement(ElemFormat format, const uint8_t *in) {
  switch (format) {
  case ElemFormat::F32: {
    uint32_t bits = uint32_t(in[0]) | uint32_t(in[1]) << 8 |
                    uint32_t(in[2]) << 16 | uint32_t(in[3]) << 24;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  case ElemFormat::FP16:
    return ref::f16ToFloat(uint16_t(in[0] | in[1] << 8));
  case ElemFormat::BF16:
    return ref::bf16ToFloat(uint16_t(in[0] | in[1] << 8));
  case ElemFormat::I32:
    return float(int32_t(uint32_t(in[0]) | uint32_t(in[1]) << 8 |
                         uint32_t(in[2]) << 16 | uint32_t(in[3]) << 24));
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

namespace {
ref::RopeParams ropeParams(const pimsim::RopeSpec &r) {
  ref::RopeParams p;
  p.kind = static_cast<ref::RopeParams::Kind>(r.kind);
  p.interleaved = r.interleaved;
  p.rotaryDim = r.rotaryDim;
  p.theta = r.theta;
  p.factor = r.factor;
  p.originalMaxPositionEmbeddings = r.originalMaxPositionEmbeddings;
  p.maxPositionEmbeddings = r.maxPositionEmbeddings;
  p.lowFreqFactor = r.lowFreqFactor;
  p.highFreqFactor = r.highFreqFactor;
  p.betaFast = r.betaFast;
  p.betaSlow = r.betaSlow;
  p.attentionFactor = r.attentionFactor;
  p.mscale = r.mscale;
  p.mscaleAllDim = r.mscaleAllDim;
  p.truncate = r.truncate;
  p.shortFactor = r.shortFactor;
  p.longFactor = r.longFactor;
  return p;
}
static_assert(int(ref::RopeParams::Kind::LongRope) ==
                  int(pimsim::RopeKind::LongRope),
              "the ABI's rope kinds are the reference's");
} // namespace

Expected<HostOps> HostOps::parse(const pimsim::Program &program) {
  HostOps ops;
  ops.posIndex = program.paramIndex("pos");
  ops.tokenIndex = program.paramIndex("token");
  ops.tensorRefs = program.hostTensors;
  ops.kernelOps.assign(program.kernels.size(), {});
  std::vector<std::string> logitsAt;
  for (auto [k, kernel] : enumerate(program.kernels))
    for (auto [i, abiOp] : enumerate(kernel.ops)) {
      std::string where = formatv("host kernel '{0}' ({1}), op {2} ({3})",
                                  kernel.name, k, i, hostOpName(abiOp.kind))
                              .str();
      std::vector<std::string> problems =
          pimsim::hostOpProblems(abiOp, program);
      HostOp op;
      static_cast<pimsim::HostOp &>(op) = abiOp;
      if (problems.empty() && op.kind == HostOpKind::Rope) {
        op.ropeParams = ropeParams(op.rope);
        if (std::string why = ref::ropeParamsProblem(op.ropeParams);
            !why.empty())
          problems.push_back("'rope': " + why);
      }
      if (!problems.empty())
        return createStringError(where + ": " + problems.front());
      if (op.kind == HostOpKind::Embedding)
        ops.vocabRows = ops.tensorRefs[op.tensor].shape[0];
      if (op.kind == HostOpKind::Rope &&
          op.rope.kind == pimsim::RopeKind::LongRope)
        ops.longRopeOriginal = op.rope.originalMaxPositionEmbeddings;
      if (op.kind == HostOpKind::Logits) {
        logitsAt.push_back(
            formatv("host kernel '{0}' ({1}), op {2}", kernel.name, k, i));
        ops.logitsBuffer = op.in;
      }
      if (op.kind == HostOpKind::Call) {
        op.function = int64_t(ops.functionTexts.size());
        ops.functionTexts.push_back(op.mlir);
      }
      ops.kernelOps[k].push_back(std::move(op));
    }
  if (logitsAt.size() > 1)
    return createStringError(
        formatv("the program has {0} 'logits' ops ({1}); expected one",
                logitsAt.size(), join(logitsAt, "; ")));
  return ops;
}

Error HostOps::bindTensors(const ckpt::WeightStore &store) {
  if (!functionTexts.empty()) {
    if (!runner)
      return createStringError(formatv(
          "the program has {0} host call(s) (llm ops without a device "
          "lowering, run on the reference interpreter) and this runtime was "
          "given no host-function runner",
          functionTexts.size()));
    if (Error e = runner->load(functionTexts, store))
      return e;
  }
  std::vector<BoundTensor> result(tensorRefs.size());
  for (size_t i = 0; i < tensorRefs.size(); ++i) {
    const HostTensorRef &t = tensorRefs[i];
    const ckpt::TensorView *view = store.lookup(t.name);
    if (!view)
      return createStringError("checkpoint has no tensor '" + t.name +
                               "' that the program needs");
    if (ArrayRef<int64_t>(view->shape) != ArrayRef<int64_t>(t.shape))
      return createStringError(
          formatv("checkpoint tensor '{0}' has shape {1}, the program was "
                  "compiled for {2}",
                  t.name, shapeString(view->shape), shapeString(t.shape)));
    BoundTensor &b = result[i];
    switch (view->dtype) {
    case ckpt::DType::F32:
      b.storage = ref::StorageType::F32;
      b.data = view->data;
      break;
    case ckpt::DType::F16:
      b.storage = ref::StorageType::F16;
      b.data = view->data;
      break;
    case ckpt::DType::BF16:
      b.storage = ref::StorageType::BF16;
      b.data = view->data;
      break;
    case ckpt::DType::F64: {
      b.owned.resize(size_t(t.elements()));
      for (size_t j = 0; j < b.owned.size(); ++j) {
        double d;
        std::memcpy(&d, view->data + 8 * j, 8);
        b.owned[j] = float(d);
      }
      b.storage = ref::StorageType::F32;
      break;
    }
    default:
      return createStringError(
          formatv("checkpoint tensor '{0}' has dtype {1}; host tensors must "
                  "be F32, F16, BF16 or F64",
                  t.name, ckpt::dtypeName(view->dtype)));
    }
  }
  boundTensors = std::move(result);
  bound = true;
  return Error::success();
}

void HostOps::widen(int64_t tensor, int64_t first, int64_t count,
                    float *out) const {
  const BoundTensor &b = boundTensors[tensor];
  size_t elem = b.storage == ref::StorageType::F32 ? 4 : 2;
  const void *data = b.owned.empty() ? b.data : b.owned.data();
  ref::widenToF32(b.storage,
                  static_cast<const uint8_t *>(data) + size_t(first) * elem,
                  count, out);
}

//===----------------------------------------------------------------------===//
// Execution
//===----------------------------------------------------------------------===//

namespace {

/// Reads a buffer of the act region as f32.
Expected<std::vector<float>> readBuffer(Device &device, StringRef region,
                                        const BufferRef &b) {
  auto bytes = device.readRegion(region, uint64_t(b.offset), size_t(b.bytes()));
  if (!bytes)
    return bytes.takeError();
  std::vector<float> values(size_t(b.elements));
  unsigned size = formatBytes(b.format);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = decodeElement(b.format, bytes->data() + i * size);
  return values;
}

/// Writes f32 values to a buffer, converting to its format.
Error writeBuffer(Device &device, StringRef region, const BufferRef &b,
                  ArrayRef<float> values) {
  unsigned size = formatBytes(b.format);
  std::vector<uint8_t> bytes(values.size() * size);
  for (size_t i = 0; i < values.size(); ++i)
    encodeElement(b.format, values[i], bytes.data() + i * size);
  return device.writeRegion(region, uint64_t(b.offset), bytes);
}

} // namespace

ArrayRef<HostOp> HostOps::ops(int64_t kernel) const {
  if (kernel < 0 || kernel >= int64_t(kernelOps.size()))
    return {};
  return kernelOps[kernel];
}

Error HostOps::run(Device &device, int64_t kernel,
                   ArrayRef<int64_t> params) const {
  if (kernel < 0 || kernel >= int64_t(kernelOps.size()))
    return createStringError(
        formatv("host kernel {0} does not exist (the program has {1})", kernel,
                kernelOps.size()));
  if (!bound && !tensorRefs.empty())
    return createStringError("host tensors are not bound to a checkpoint");
  for (size_t i = 0; i < kernelOps[kernel].size(); ++i) {
    const HostOp &op = kernelOps[kernel][i];
    if (Error e = runOp(device, op, params))
      return createStringError(formatv(
          "op {0} ({1}): {2}", i, hostOpName(op.kind), toString(std::move(e))));
  }
  return Error::success();
}

Error HostOps::runOp(Device &device, const HostOp &op,
                     ArrayRef<int64_t> params) const {
  auto param = [&](int64_t index) -> int64_t {
    return index >= 0 && index < int64_t(params.size()) ? params[index] : 0;
  };
  auto checkParam = [&](int64_t index, StringRef name) -> Error {
    if (index < 0 || index >= int64_t(params.size()))
      return createStringError(formatv(
          "parameter '{0}' has no value ({1} given)", name, params.size()));
    return Error::success();
  };
  StringRef region = actRegion;
  switch (op.kind) {
  case HostOpKind::Embedding: {
    if (Error e = checkParam(tokenIndex, "token"))
      return e;
    int64_t token = param(tokenIndex);
    const HostTensorRef &t = tensorRefs[op.tensor];
    if (token < 0 || token >= t.shape[0])
      return createStringError(
          formatv("token {0} is outside the vocabulary (table '{1}' has {2} "
                  "rows)",
                  token, t.name, t.shape[0]));
    std::vector<float> row(static_cast<size_t>(t.shape[1]));
    widen(op.tensor, token * t.shape[1], t.shape[1], row.data());
    return writeBuffer(device, region, op.out, row);
  }
  case HostOpKind::Linear: {
    // y[n] = sum_k W[n, k] x[k], f32, k in order (the host GEMV).
    auto x = readBuffer(device, region, op.in);
    if (!x)
      return x.takeError();
    int64_t n = tensorRefs[op.tensor].shape[0],
            k = tensorRefs[op.tensor].shape[1];
    std::vector<float> row(static_cast<size_t>(k)), y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      widen(op.tensor, i * k, k, row.data());
      float acc = 0;
      for (int64_t j = 0; j < k; ++j)
        acc += row[size_t(j)] * (*x)[size_t(j)];
      y[size_t(i)] = acc;
    }
    return writeBuffer(device, region, op.out, y);
  }
  case HostOpKind::LayerNorm: {
    auto x = readBuffer(device, region, op.in);
    if (!x)
      return x.takeError();
    int64_t d = tensorRefs[op.tensor].shape[0];
    std::vector<float> w(static_cast<size_t>(d)), y(x->size());
    widen(op.tensor, 0, d, w.data());
    ref::layerNorm(x->data(), op.groups, d, w.data(), /*b=*/nullptr, op.eps,
                   y.data());
    return writeBuffer(device, region, op.out, y);
  }
  case HostOpKind::RmsNorm: {
    auto x = readBuffer(device, region, op.in);
    if (!x)
      return x.takeError();
    int64_t d = tensorRefs[op.tensor].shape[0];
    std::vector<float> w(static_cast<size_t>(d)), y(x->size());
    widen(op.tensor, 0, d, w.data());
    ref::rmsNorm(x->data(), op.groups, d, w.data(), op.eps, op.gemma, y.data());
    return writeBuffer(device, region, op.out, y);
  }
  case HostOpKind::Add: {
    auto a = readBuffer(device, region, op.a);
    if (!a)
      return a.takeError();
    std::vector<float> b;
    if (op.tensor >= 0) {
      // With `row` (an MoE's expert bias): row param(row) of [rows, n].
      int64_t first = 0;
      if (op.param >= 0) {
        if (Error e = checkParam(op.param, "add row"))
          return e;
        int64_t row = param(op.param);
        if (row < 0 || row >= tensorRefs[op.tensor].shape[0])
          return createStringError(formatv(
              "add: row {0} of tensor '{1}', which has {2} rows", row,
              tensorRefs[op.tensor].name, tensorRefs[op.tensor].shape[0]));
        first = row * int64_t(a->size());
      }
      b.resize(a->size());
      widen(op.tensor, first, int64_t(b.size()), b.data());
    } else {
      auto bv = readBuffer(device, region, op.b);
      if (!bv)
        return bv.takeError();
      b = std::move(*bv);
    }
    for (size_t i = 0; i < a->size(); ++i)
      (*a)[i] += b[i];
    return writeBuffer(device, region, op.out, *a);
  }
  case HostOpKind::Rope: {
    if (Error e = checkParam(posIndex, "pos"))
      return e;
    auto x = readBuffer(device, region, op.in);
    if (!x)
      return x.takeError();
    ref::applyRope(x->data(), 1, op.heads, op.headDim, param(posIndex),
                   op.ropeParams, ropeCallLength);
    return writeBuffer(device, region, op.out, *x);
  }
  case HostOpKind::GatedAct: {
    auto gate = readBuffer(device, region, op.a);
    if (!gate)
      return gate.takeError();
    std::vector<float> up; // empty: the plain activation
    if (op.b != pimsim::ActBuffer()) {
      auto u = readBuffer(device, region, op.b);
      if (!u)
        return u.takeError();
      up = std::move(*u);
    }
    if (op.act == GatedActFn::ClampedSwiglu) { // the reference's function
      ref::GatedActivation clamped{ref::GateActivation::ClampedSwiglu, op.eps,
                                   op.scale};
      for (size_t i = 0; i < gate->size(); ++i)
        (*gate)[i] = clamped((*gate)[i], up[i]);
      return writeBuffer(device, region, op.out, *gate);
    }
    for (size_t i = 0; i < gate->size(); ++i) {
      float g = (*gate)[i];
      float act = op.act == GatedActFn::Silu   ? ref::silu(g)
                  : op.act == GatedActFn::Gelu ? ref::geluErf(g)
                                               : ref::geluTanh(g);
      (*gate)[i] = up.empty() ? act : act * up[i];
    }
    return writeBuffer(device, region, op.out, *gate);
  }
  case HostOpKind::Pack: {
    auto in = readBuffer(device, region, op.in);
    if (!in)
      return in.takeError();
    // Read-modify-write: elements of `out` the op does not cover keep their
    // bytes.
    auto outBytes = device.readRegion(region, uint64_t(op.out.offset),
                                      size_t(op.out.bytes()));
    if (!outBytes)
      return outBytes.takeError();
    unsigned size = formatBytes(op.out.format);
    // (2.3) Llama 4's temperature: q times the position's factor first, as
    // the reference interpreter scales the query before its dot products.
    float temperature = 1.0f;
    if (op.partKeys > 0) {
      if (Error e = checkParam(op.param, "pack position"))
        return e;
      temperature =
          ref::attentionTemperature(param(op.param), op.partKeys, op.eps);
    }
    for (int64_t b = 0; b < op.blocks; ++b)
      for (int64_t r = 0; r < op.replicate; ++r)
        for (int64_t e = 0; e < op.block; ++e)
          encodeElement(op.out.format,
                        op.scale *
                            (temperature * (*in)[size_t(b * op.inStride + e)]),
                        outBytes->data() +
                            size_t(b * op.outStride + r * op.block + e) * size);
    return device.writeRegion(region, uint64_t(op.out.offset), *outBytes);
  }
  case HostOpKind::VStage: {
    if (Error e = checkParam(op.param, "v_stage slot"))
      return e;
    auto in = readBuffer(device, region, op.in);
    if (!in)
      return in.takeError();
    int64_t used = op.heads * op.headDim * op.lanes * op.groups;
    BufferRef staging{op.out.offset, used, op.out.format};
    auto outBytes = device.readRegion(region, uint64_t(staging.offset),
                                      size_t(staging.bytes()));
    if (!outBytes)
      return outBytes.takeError();
    int64_t slot = param(op.param);
    int64_t lane = ((slot % op.lanes) + op.lanes) % op.lanes;
    int64_t group = ((slot / op.lanes) % op.groups + op.groups) % op.groups;
    // One staging column per (head, dim): a fresh column starts at lane 0.
    // Ring caches (clear = false) keep the earlier lanes of a wrapped
    // column: they are still inside the window.
    if (lane == 0 && op.clear)
      std::fill(outBytes->begin(), outBytes->end(), 0);
    for (int64_t i = 0; i < op.heads * op.headDim; ++i)
      encodeElement(op.out.format, (*in)[size_t(i)],
                    outBytes->data() +
                        2 * size_t((i * op.groups + group) * op.lanes + lane));
    return device.writeRegion(region, uint64_t(staging.offset), *outBytes);
  }
  case HostOpKind::MoeRoute: {
    // The routing of one token (ref::routeToken, llm.moe's steps 1-4): the
    // selected experts in ascending index and their final weights.
    auto logits = readBuffer(device, region, op.in);
    if (!logits)
      return logits.takeError();
    ref::MoEParams p;
    p.topK = op.topK;
    p.sigmoidScoring = op.sigmoid;
    p.topkThenScore = op.topkFirst;
    p.renormalize = op.renormalize;
    p.routedScalingFactor = op.scale;
    ref::MoERoute r =
        ref::routeToken(logits->data(), int64_t(logits->size()), p);
    std::vector<float> experts(r.experts.begin(), r.experts.end());
    if (Error e = writeBuffer(device, region, op.experts, experts))
      return e;
    if (op.b.elements > 0) {
      // (2.3) The gated shared expert's weight, sigmoid(gate . x), last.
      auto gate = readBuffer(device, region, op.b);
      if (!gate)
        return gate.takeError();
      r.weights.push_back(ref::sigmoid((*gate)[0]));
    }
    return writeBuffer(device, region, op.out, r.weights);
  }
  case HostOpKind::Sum: {
    auto in = readBuffer(device, region, op.in);
    if (!in)
      return in.takeError();
    std::vector<float> out(size_t(op.out.elements));
    if (op.b.elements > 0) {
      // (2.3) Weighted, as llm.moe combines its experts: from 0, parts
      // (experts in ascending index) in order, each times its weight.
      auto w = readBuffer(device, region, op.b);
      if (!w)
        return w.takeError();
      for (size_t n = 0; n < out.size(); ++n) {
        float acc = 0.0f;
        for (int64_t p = 0; p < op.parts; ++p)
          acc += (*w)[size_t(p)] * (*in)[size_t(p * op.inStride) + n];
        out[n] = acc;
      }
      return writeBuffer(device, region, op.out, out);
    }
    for (size_t n = 0; n < out.size(); ++n) {
      float acc = (*in)[n]; // parts added in order p = 0, 1, ...
      for (int64_t p = 1; p < op.parts; ++p)
        acc += (*in)[size_t(p * op.inStride) + n];
      out[n] = acc;
    }
    return writeBuffer(device, region, op.out, out);
  }
  case HostOpKind::AttnCombine: {
    // The split-K merge of normalised partials (docs/backend-abi.md): part p
    // has o_p = P_p V_p / l_p, max m_p and sum l_p; with M = max m_p over
    // the parts that hold keys, w_p = exp(m_p - M) l_p and
    // o = sum_p w_p o_p / sum_p w_p, in f32, parts in order. With sinks
    // (one logit z_h per head) M also covers z_h and the denominator adds
    // exp(z_h - M) last: the sink's column of the softmax, dropped.
    if (Error e = checkParam(op.param, "attn_combine position"))
      return e;
    auto in = readBuffer(device, region, op.in);
    if (!in)
      return in.takeError();
    auto st = readBuffer(device, region, op.b);
    if (!st)
      return st.takeError();
    int64_t pos = param(op.param);
    int64_t live = std::clamp<int64_t>(pos / op.partKeys + 1, 1, op.parts);
    std::vector<float> out(size_t(op.out.elements));
    std::vector<float> sinks;
    if (op.tensor >= 0) {
      sinks.resize(size_t(op.heads));
      widen(op.tensor, 0, op.heads, sinks.data());
    }
    if (live == 1 && sinks.empty()) { // only part 0 holds keys: bit for bit
      std::copy_n(in->begin(), out.size(), out.begin());
      return writeBuffer(device, region, op.out, out);
    }
    std::vector<float> w(static_cast<size_t>(live));
    for (int64_t h = 0; h < op.heads; ++h) {
      auto stat = [&](int64_t p, int k) {
        return (*st)[size_t(p * op.outStride + 2 * h + k)];
      };
      float M = stat(0, 0);
      for (int64_t p = 1; p < live; ++p)
        M = std::max(M, stat(p, 0));
      if (!sinks.empty())
        M = std::max(M, sinks[size_t(h)]);
      float W = 0;
      for (int64_t p = 0; p < live; ++p) {
        w[size_t(p)] = std::exp(stat(p, 0) - M) * stat(p, 1);
        W += w[size_t(p)];
      }
      if (!sinks.empty())
        W += std::exp(sinks[size_t(h)] - M);
      for (int64_t j = 0; j < op.headDim; ++j) {
        size_t n = size_t(h * op.headDim + j);
        float acc = 0;
        for (int64_t p = 0; p < live; ++p)
          acc += w[size_t(p)] * (*in)[size_t(p * op.inStride) + n];
        out[n] = acc / W;
      }
    }
    return writeBuffer(device, region, op.out, out);
  }
  case HostOpKind::Logits:
    return Error::success();
  case HostOpKind::Call:
    return runCall(device, op, params);
  }
  return Error::success();
}

Error HostOps::runCall(Device &device, const HostOp &op,
                       ArrayRef<int64_t> params) const {
  if (!runner)
    return createStringError("no host-function runner");
  std::vector<HostValue> args;
  for (const HostCallValue &a : op.args) {
    HostValue v;
    v.shape = a.shape;
    if (a.kind == HostCallValue::Kind::Buffer) {
      auto values = readBuffer(device, actRegion, a.buffer);
      if (!values)
        return values.takeError();
      v.f32 = std::move(*values);
    } else {
      int64_t index =
          a.kind == HostCallValue::Kind::Position ? posIndex : tokenIndex;
      if (index < 0 || index >= int64_t(params.size()))
        return createStringError("a call argument's parameter has no value");
      v.integer = true;
      v.i64.assign(size_t(std::max<int64_t>(1, v.elements())), params[index]);
    }
    args.push_back(std::move(v));
  }
  auto results = runner->call(op.function, args);
  if (!results)
    return results.takeError();
  if (results->size() != op.results.size())
    return createStringError(formatv("the function returned {0} values, the "
                                     "program expects {1}",
                                     results->size(), op.results.size()));
  for (auto [r, want] : llvm::zip(*results, op.results)) {
    if (r.integer || r.shape != want.shape)
      return createStringError(
          formatv("the function returned a {0} {1} value where the program "
                  "expects f32 {2}",
                  r.integer ? "integer" : "f32", shapeString(r.shape),
                  shapeString(want.shape)));
    if (Error e = writeBuffer(device, actRegion, want.buffer, r.f32))
      return e;
  }
  return Error::success();
}

} // namespace pimc::rt
