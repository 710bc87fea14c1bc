//===- HostOp.cpp - typed host ops: names, field tables, checks -----------===//

#include "pimsim/HostOp.h"

#include "EnumNames.h"

#include "pimsim/Program.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace llvm;

namespace pimsim {

namespace {
/// a * b and a + b of the sizes in host-op fields, saturating at the int64
/// range: a hostile program's fields must not overflow the checks.
int64_t satMul(int64_t a, int64_t b) {
  int64_t r = 0;
  return MulOverflow(a, b, r) ? ((a < 0) != (b < 0) ? INT64_MIN : INT64_MAX)
                              : r;
}
int64_t satAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  return AddOverflow(a, b, r) ? (b < 0 ? INT64_MIN : INT64_MAX) : r;
}
} // namespace

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

namespace {
using detail::nameOf;
using detail::parseName;

const StringRef kElemFormatNames[] = {"f32", "fp16", "bf16", "i32"};
const StringRef kHostOpKindNames[] = {
    "embedding",    "rms_norm", "add",        "rope",     "gated_act",
    "pack",         "v_stage",  "sum",        "linear",   "logits",
    "attn_combine", "call",     "layer_norm", "moe_route"};
const StringRef kGatedActNames[] = {"silu", "gelu", "gelu_tanh",
                                    "clamped_swiglu"};
const StringRef kRopeKindNames[] = {"default", "linear", "dynamic",
                                    "yarn",    "llama3", "longrope"};
static_assert(std::size(kElemFormatNames) == kNumElemFormats);
static_assert(std::size(kHostOpKindNames) == kNumHostOpKinds);
static_assert(std::size(kGatedActNames) == kNumGatedActFns);
static_assert(std::size(kRopeKindNames) == kNumRopeKinds);
} // namespace

StringRef elemFormatName(ElemFormat f) { return nameOf(kElemFormatNames, f); }
std::optional<ElemFormat> parseElemFormat(StringRef name) {
  return parseName<ElemFormat>(kElemFormatNames, name);
}
unsigned elemFormatBytes(ElemFormat f) {
  return f == ElemFormat::F32 || f == ElemFormat::I32 ? 4 : 2;
}
StringRef hostOpKindName(HostOpKind k) { return nameOf(kHostOpKindNames, k); }
std::optional<HostOpKind> parseHostOpKind(StringRef name) {
  return parseName<HostOpKind>(kHostOpKindNames, name);
}
StringRef gatedActName(GatedActFn fn) { return nameOf(kGatedActNames, fn); }
std::optional<GatedActFn> parseGatedAct(StringRef name) {
  return parseName<GatedActFn>(kGatedActNames, name);
}
StringRef ropeKindName(RopeKind k) { return nameOf(kRopeKindNames, k); }
std::optional<RopeKind> parseRopeKind(StringRef name) {
  return parseName<RopeKind>(kRopeKindNames, name);
}

int64_t HostTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || MulOverflow(n, d, n))
      return INT64_MAX;
  return n;
}

bool RopeSpec::operator==(const RopeSpec &o) const {
  return kind == o.kind && interleaved == o.interleaved &&
         rotaryDim == o.rotaryDim && theta == o.theta && factor == o.factor &&
         originalMaxPositionEmbeddings == o.originalMaxPositionEmbeddings &&
         maxPositionEmbeddings == o.maxPositionEmbeddings &&
         lowFreqFactor == o.lowFreqFactor &&
         highFreqFactor == o.highFreqFactor && betaFast == o.betaFast &&
         betaSlow == o.betaSlow && attentionFactor == o.attentionFactor &&
         mscale == o.mscale && mscaleAllDim == o.mscaleAllDim &&
         truncate == o.truncate && shortFactor == o.shortFactor &&
         longFactor == o.longFactor;
}

bool HostOp::operator==(const HostOp &o) const {
  return kind == o.kind && in == o.in && out == o.out && a == o.a && b == o.b &&
         tensor == o.tensor && eps == o.eps && groups == o.groups &&
         gemma == o.gemma && clear == o.clear && heads == o.heads &&
         headDim == o.headDim && replicas == o.replicas && rope == o.rope &&
         act == o.act && blocks == o.blocks && block == o.block &&
         inStride == o.inStride && outStride == o.outStride &&
         replicate == o.replicate && scale == o.scale && lanes == o.lanes &&
         param == o.param && parts == o.parts && partKeys == o.partKeys &&
         source == o.source && mlir == o.mlir && args == o.args &&
         results == o.results && weightBytes == o.weightBytes &&
         flops == o.flops && experts == o.experts && topK == o.topK &&
         sigmoid == o.sigmoid && topkFirst == o.topkFirst &&
         renormalize == o.renormalize;
}

//===----------------------------------------------------------------------===//
// Field tables
//===----------------------------------------------------------------------===//

HostFieldType hostFieldType(HostField f) {
  switch (f) {
  case HostField::In:
  case HostField::Out:
  case HostField::A:
  case HostField::B:
  case HostField::Experts:
    return HostFieldType::Buffer;
  case HostField::Tensor:
    return HostFieldType::Tensor;
  case HostField::BOrTensor:
    return HostFieldType::BufferOrTensor;
  case HostField::Eps:
  case HostField::Scale:
    return HostFieldType::Float;
  case HostField::Gemma:
  case HostField::Clear:
  case HostField::Sigmoid:
  case HostField::TopkFirst:
  case HostField::Renormalize:
    return HostFieldType::Bool;
  case HostField::Rope:
    return HostFieldType::Rope;
  case HostField::Act:
    return HostFieldType::Act;
  case HostField::Param:
    return HostFieldType::Param;
  case HostField::Source:
  case HostField::Mlir:
    return HostFieldType::String;
  case HostField::Args:
  case HostField::Results:
    return HostFieldType::CallValues;
  default:
    return HostFieldType::Int;
  }
}

ArrayRef<HostFieldSpec> hostOpFields(HostOpKind kind) {
  using F = HostField;
  static const HostFieldSpec embedding[] = {{"table", F::Tensor},
                                            {"out", F::Out}};
  static const HostFieldSpec rmsNorm[] = {{"in", F::In},
                                          {"out", F::Out},
                                          {"weight", F::Tensor},
                                          {"eps", F::Eps},
                                          {"groups", F::Groups, false, 1},
                                          {"gemma", F::Gemma, false}};
  static const HostFieldSpec add[] = {{"a", F::A},
                                      {"b", F::BOrTensor},
                                      {"out", F::Out},
                                      {"row", F::Param, false}};
  static const HostFieldSpec rope[] = {{"in", F::In},
                                       {"out", F::Out},
                                       {"heads", F::Heads, true, 1},
                                       {"head_dim", F::HeadDim, true, 2},
                                       {"rope", F::Rope}};
  static const HostFieldSpec gatedAct[] = {
      {"gate", F::A},  {"up", F::B, false},      {"out", F::Out},
      {"act", F::Act}, {"limit", F::Eps, false}, {"alpha", F::Scale, false}};
  static const HostFieldSpec pack[] = {
      {"in", F::In},
      {"out", F::Out},
      {"blocks", F::Blocks, true, 1},
      {"block", F::Block, true, 1},
      {"in_stride", F::InStride},
      {"out_stride", F::OutStride},
      {"replicate", F::Replicate, false, 1},
      {"scale", F::Scale, false},
      // (2.3) Llama 4's query temperature
      {"position", F::Param, false},
      {"temperature_floor", F::PartKeys, false},
      {"temperature_scale", F::Eps, false}};
  static const HostFieldSpec vStage[] = {{"in", F::In},
                                         {"out", F::Out},
                                         {"heads", F::Heads, true, 1},
                                         {"head_dim", F::HeadDim, true, 1},
                                         {"lanes", F::Lanes, true, 1},
                                         {"groups", F::Groups, false, 1},
                                         {"clear", F::Clear, false},
                                         {"replicas", F::Replicas, false, 1},
                                         {"param", F::Param}};
  static const HostFieldSpec sum[] = {{"in", F::In},
                                      {"out", F::Out},
                                      {"parts", F::Parts, true, 1},
                                      {"stride", F::InStride},
                                      {"weights", F::B, false}};
  static const HostFieldSpec linear[] = {
      {"in", F::In}, {"out", F::Out}, {"weight", F::Tensor}};
  static const HostFieldSpec logits[] = {{"in", F::In}};
  static const HostFieldSpec attnCombine[] = {
      {"in", F::In},
      {"stats", F::B},
      {"out", F::Out},
      {"parts", F::Parts, true, 1},
      {"stride", F::InStride},
      {"heads", F::Heads, true, 1},
      {"block", F::HeadDim, true, 1},
      {"stats_stride", F::OutStride},
      {"part_keys", F::PartKeys, true, 1},
      {"param", F::Param},
      {"sinks", F::Tensor, false}};
  static const HostFieldSpec layerNorm[] = {{"in", F::In},
                                            {"out", F::Out},
                                            {"weight", F::Tensor},
                                            {"eps", F::Eps},
                                            {"groups", F::Groups, false, 1}};
  static const HostFieldSpec moeRoute[] = {
      {"in", F::In},
      {"out", F::Out},
      {"experts", F::Experts},
      {"top_k", F::TopK, true, 1},
      {"sigmoid", F::Sigmoid, false},
      {"topk_first", F::TopkFirst, false},
      {"renormalize", F::Renormalize, false},
      {"scale", F::Scale, false},
      {"shared", F::B, false}};
  static const HostFieldSpec call[] = {{"source", F::Source},
                                       {"mlir", F::Mlir},
                                       {"args", F::Args},
                                       {"results", F::Results},
                                       {"weight_bytes", F::WeightBytes},
                                       {"flops", F::Flops}};
  switch (kind) {
  case HostOpKind::Embedding:
    return embedding;
  case HostOpKind::RmsNorm:
    return rmsNorm;
  case HostOpKind::Add:
    return add;
  case HostOpKind::Rope:
    return rope;
  case HostOpKind::GatedAct:
    return gatedAct;
  case HostOpKind::Pack:
    return pack;
  case HostOpKind::VStage:
    return vStage;
  case HostOpKind::Sum:
    return sum;
  case HostOpKind::Linear:
    return linear;
  case HostOpKind::Logits:
    return logits;
  case HostOpKind::AttnCombine:
    return attnCombine;
  case HostOpKind::Call:
    return call;
  case HostOpKind::LayerNorm:
    return layerNorm;
  case HostOpKind::MoeRoute:
    return moeRoute;
  }
  return {};
}

const HostFieldSpec *findHostField(HostOpKind kind, StringRef key) {
  for (const HostFieldSpec &s : hostOpFields(kind))
    if (s.key == key)
      return &s;
  return nullptr;
}

ActBuffer *hostBufferField(HostOp &op, HostField f) {
  switch (f) {
  case HostField::In:
    return &op.in;
  case HostField::Out:
    return &op.out;
  case HostField::A:
    return &op.a;
  case HostField::B:
  case HostField::BOrTensor:
    return &op.b;
  case HostField::Experts:
    return &op.experts;
  default:
    return nullptr;
  }
}

int64_t *hostIntField(HostOp &op, HostField f) {
  switch (f) {
  case HostField::Tensor:
    return &op.tensor;
  case HostField::Groups:
    return &op.groups;
  case HostField::Heads:
    return &op.heads;
  case HostField::HeadDim:
    return &op.headDim;
  case HostField::Replicas:
    return &op.replicas;
  case HostField::Blocks:
    return &op.blocks;
  case HostField::Block:
    return &op.block;
  case HostField::InStride:
    return &op.inStride;
  case HostField::OutStride:
    return &op.outStride;
  case HostField::Replicate:
    return &op.replicate;
  case HostField::Lanes:
    return &op.lanes;
  case HostField::Param:
    return &op.param;
  case HostField::Parts:
    return &op.parts;
  case HostField::PartKeys:
    return &op.partKeys;
  case HostField::WeightBytes:
    return &op.weightBytes;
  case HostField::Flops:
    return &op.flops;
  case HostField::TopK:
    return &op.topK;
  default:
    return nullptr;
  }
}

float *hostFloatField(HostOp &op, HostField f) {
  return f == HostField::Eps     ? &op.eps
         : f == HostField::Scale ? &op.scale
                                 : nullptr;
}

bool *hostBoolField(HostOp &op, HostField f) {
  switch (f) {
  case HostField::Gemma:
    return &op.gemma;
  case HostField::Clear:
    return &op.clear;
  case HostField::Sigmoid:
    return &op.sigmoid;
  case HostField::TopkFirst:
    return &op.topkFirst;
  case HostField::Renormalize:
    return &op.renormalize;
  default:
    return nullptr;
  }
}

std::string *hostStringField(HostOp &op, HostField f) {
  return f == HostField::Source ? &op.source
         : f == HostField::Mlir ? &op.mlir
                                : nullptr;
}

std::vector<CallValue> *hostCallValuesField(HostOp &op, HostField f) {
  return f == HostField::Args      ? &op.args
         : f == HostField::Results ? &op.results
                                   : nullptr;
}

const ActBuffer *hostBufferField(const HostOp &op, HostField f) {
  return hostBufferField(const_cast<HostOp &>(op), f);
}
const int64_t *hostIntField(const HostOp &op, HostField f) {
  return hostIntField(const_cast<HostOp &>(op), f);
}
const float *hostFloatField(const HostOp &op, HostField f) {
  return hostFloatField(const_cast<HostOp &>(op), f);
}
const bool *hostBoolField(const HostOp &op, HostField f) {
  return hostBoolField(const_cast<HostOp &>(op), f);
}
const std::string *hostStringField(const HostOp &op, HostField f) {
  return hostStringField(const_cast<HostOp &>(op), f);
}
const std::vector<CallValue> *hostCallValuesField(const HostOp &op,
                                                  HostField f) {
  return hostCallValuesField(const_cast<HostOp &>(op), f);
}

bool hostFieldIsDefault(const HostOp &op, HostField f) {
  static const HostOp d;
  switch (f) {
  case HostField::BOrTensor:
    return op.b == d.b && op.tensor == d.tensor;
  case HostField::Rope:
    return op.rope == d.rope;
  case HostField::Act:
    return op.act == d.act;
  default:
    break;
  }
  if (const ActBuffer *v = hostBufferField(op, f))
    return *v == *hostBufferField(d, f);
  if (const int64_t *v = hostIntField(op, f))
    return *v == *hostIntField(d, f);
  if (const float *v = hostFloatField(op, f))
    return *v == *hostFloatField(d, f);
  if (const bool *v = hostBoolField(op, f))
    return *v == *hostBoolField(d, f);
  if (const std::string *v = hostStringField(op, f))
    return *v == *hostStringField(d, f);
  if (const std::vector<CallValue> *v = hostCallValuesField(op, f))
    return *v == *hostCallValuesField(d, f);
  return true;
}

/// Whether `op` writes only part of `out` and keeps the rest: v_stage
/// (one lane per position), and a pack whose blocks leave gaps or end
/// before `out` does.
static bool keepsPartOfOut(const HostOp &op) {
  if (op.kind == HostOpKind::VStage)
    return true;
  if (op.kind != HostOpKind::Pack)
    return false;
  int64_t row = satMul(op.replicate, op.block);
  return op.outStride != row || satMul(op.blocks, row) < op.out.elements;
}

void forEachHostBuffer(const HostOp &op,
                       function_ref<void(const ActBuffer &, bool)> fn) {
  // Reads first, then writes: the order the op touches its buffers in.
  bool updatesOut = keepsPartOfOut(op);
  for (bool writes : {false, true})
    for (const HostFieldSpec &spec : hostOpFields(op.kind)) {
      bool out = spec.field == HostField::Out;
      bool written = out || spec.field == HostField::Results ||
                     spec.field == HostField::Experts;
      if (written != writes && !(out && updatesOut && !writes))
        continue;
      if (const std::vector<CallValue> *values =
              hostCallValuesField(op, spec.field)) {
        for (const CallValue &v : *values)
          if (v.kind == CallValue::Kind::Buffer && v.buffer.elements > 0)
            fn(v.buffer, writes);
        continue;
      }
      const ActBuffer *buffer = hostBufferField(op, spec.field);
      if (buffer && buffer->elements > 0)
        fn(*buffer, writes);
    }
}

ArrayRef<RopeField> ropeFields() {
  using R = RopeSpec;
  static const RopeField fields[] = {
      {"kind", true},
      {"interleaved", false, nullptr, nullptr, nullptr, &R::interleaved},
      {"rotary_dim", true, &R::rotaryDim},
      {"theta", false, nullptr, &R::theta},
      {"factor", false, nullptr, &R::factor},
      {"original_max_position_embeddings", false,
       &R::originalMaxPositionEmbeddings},
      {"max_position_embeddings", false, &R::maxPositionEmbeddings},
      {"low_freq_factor", false, nullptr, &R::lowFreqFactor},
      {"high_freq_factor", false, nullptr, &R::highFreqFactor},
      {"beta_fast", false, nullptr, &R::betaFast},
      {"beta_slow", false, nullptr, &R::betaSlow},
      {"attention_factor", false, nullptr, nullptr, &R::attentionFactor},
      {"mscale", false, nullptr, nullptr, &R::mscale},
      {"mscale_all_dim", false, nullptr, nullptr, &R::mscaleAllDim},
      {"truncate", false, nullptr, nullptr, nullptr, &R::truncate},
      {"short_factor", false, nullptr, nullptr, nullptr, nullptr,
       &R::shortFactor},
      {"long_factor", false, nullptr, nullptr, nullptr, nullptr,
       &R::longFactor}};
  return fields;
}

namespace {
constexpr HostField kAllFields[] = {
    HostField::In,        HostField::Out,         HostField::A,
    HostField::B,         HostField::Tensor,      HostField::Eps,
    HostField::Groups,    HostField::Gemma,       HostField::Clear,
    HostField::Heads,     HostField::HeadDim,     HostField::Replicas,
    HostField::Rope,      HostField::Act,         HostField::Blocks,
    HostField::Block,     HostField::InStride,    HostField::OutStride,
    HostField::Replicate, HostField::Scale,       HostField::Lanes,
    HostField::Param,     HostField::Parts,       HostField::PartKeys,
    HostField::Source,    HostField::Mlir,        HostField::Args,
    HostField::Results,   HostField::WeightBytes, HostField::Flops,
    HostField::Experts,   HostField::TopK,        HostField::Sigmoid,
    HostField::TopkFirst, HostField::Renormalize};

/// A field's name in messages (the key most kinds give it).
StringRef fieldName(HostField f) {
  static const StringRef names[] = {
      "in",         "out",      "a",         "b",          "tensor",
      "b",          "eps",      "groups",    "gemma",      "clear",
      "heads",      "head_dim", "replicas",  "rope",       "act",
      "blocks",     "block",    "in_stride", "out_stride", "replicate",
      "scale",      "lanes",    "param",     "parts",      "part_keys",
      "source",     "mlir",     "args",      "results",    "weight_bytes",
      "flops",      "experts",  "top_k",     "sigmoid",    "topk_first",
      "renormalize"};
  static_assert(std::size(names) == unsigned(HostField::Renormalize) + 1);
  return names[unsigned(f)];
}

/// Whether `kind` takes `f` (BOrTensor covers B and Tensor).
bool takes(HostOpKind kind, HostField f) {
  for (const HostFieldSpec &s : hostOpFields(kind))
    if (s.field == f || (s.field == HostField::BOrTensor &&
                         (f == HostField::B || f == HostField::Tensor)))
      return true;
  return false;
}

/// Whether `kind` lists `f` as optional (gated_act's up, sum's weights,
/// moe_route's shared gate).
bool isOptional(HostOpKind kind, HostField f) {
  for (const HostFieldSpec &s : hostOpFields(kind))
    if (s.field == f)
      return !s.required;
  return false;
}

/// The key of `f` for `kind`, for messages.
std::string keyOf(HostOpKind kind, HostField f) {
  for (const HostFieldSpec &s : hostOpFields(kind))
    if (s.field == f || (s.field == HostField::BOrTensor &&
                         (f == HostField::B || f == HostField::Tensor)))
      return s.key.str();
  return "?";
}

int64_t intField(const HostOp &op, HostField f) {
  const int64_t *v = hostIntField(op, f);
  return v ? *v : 0;
}

std::string shapeText(ArrayRef<int64_t> shape) {
  return "[" +
         join(map_range(shape, [](int64_t d) { return itostr(d); }), ", ") +
         "]";
}

/// The semantic checks of one op; fields were checked for presence.
class OpChecker {
public:
  OpChecker(const HostOp &op, const Program &p, std::vector<std::string> &out)
      : op(op), p(p), out(out) {
    for (const Region &r : p.regions)
      if (r.name == "act")
        actBytes = r.bytes;
  }

  void run() {
    for (HostField f : kAllFields)
      if (!takes(op.kind, f) && !hostFieldIsDefault(op, f))
        out.push_back(formatv("{0} takes no field '{1}' (it is set)",
                              hostOpKindName(op.kind), fieldName(f))
                          .str());
    for (const HostFieldSpec &s : hostOpFields(op.kind))
      if (hostFieldType(s.field) == HostFieldType::Int &&
          intField(op, s.field) < s.min)
        out.push_back(formatv("'{0}' is {1}, must be at least {2}", s.key,
                              intField(op, s.field), s.min));
    for (HostField f : {HostField::In, HostField::Out, HostField::A,
                        HostField::B, HostField::Experts})
      if (takes(op.kind, f) && (f != HostField::B || op.tensor < 0) &&
          !(isOptional(op.kind, f) && bufferOf(f) == ActBuffer()))
        buffer(keyOf(op.kind, f), bufferOf(f));
    if (takes(op.kind, HostField::Tensor) &&
        (op.kind != HostOpKind::Add || op.b == ActBuffer()) &&
        !(isOptional(op.kind, HostField::Tensor) && op.tensor < 0) &&
        (op.tensor < 0 || op.tensor >= int64_t(p.hostTensors.size())))
      fail(formatv("'{0}' is host tensor {1}, the program has {2}",
                   keyOf(op.kind, HostField::Tensor), op.tensor,
                   p.hostTensors.size()));
    if (takes(op.kind, HostField::Param) &&
        !(isOptional(op.kind, HostField::Param) && op.param < 0) &&
        (op.param < 0 || op.param >= int64_t(p.params.size())))
      fail(formatv("'param' is parameter {0}, the program has {1}", op.param,
                   p.params.size()));
    if (out.empty())
      kindRules();
  }

private:
  const ActBuffer &bufferOf(HostField f) const {
    return f == HostField::In        ? op.in
           : f == HostField::Out     ? op.out
           : f == HostField::A       ? op.a
           : f == HostField::Experts ? op.experts
                                     : op.b;
  }
  void fail(const Twine &msg) { out.push_back(msg.str()); }
  void buffer(StringRef key, const ActBuffer &b) {
    if (unsigned(b.format) >= kNumElemFormats)
      return fail("'" + key + "' has an unknown format");
    if (b.offset < 0 || b.elements < 1)
      return fail(formatv("'{0}' needs an offset >= 0 and elements >= 1 "
                          "(offset {1}, {2} elements)",
                          key, b.offset, b.elements));
    if (actBytes < 0)
      return fail("the program has no region 'act' for host ops");
    int64_t bytes = 0, end = 0;
    if (MulOverflow(b.elements, int64_t(elemFormatBytes(b.format)), bytes) ||
        AddOverflow(b.offset, bytes, end))
      fail(formatv("'{0}' ({1} elements at act byte {2}) overflows 64 bits",
                   key, b.elements, b.offset));
    else if (end > actBytes)
      fail(formatv("'{0}' covers act bytes [{1}, {2}), outside region 'act' "
                   "({3} bytes)",
                   key, b.offset, end, actBytes));
  }
  const HostTensor &tensor() const { return p.hostTensors[op.tensor]; }
  void sameLength(StringRef a, const ActBuffer &x, StringRef what, int64_t n) {
    if (x.elements != n)
      fail(formatv("'{0}' has {1} elements, {2} is {3}", a, x.elements, what,
                   n));
  }
  void needFormat(StringRef key, const ActBuffer &x, ElemFormat f) {
    if (x.format != f)
      fail(formatv("'{0}' must be {1}, not {2}", key, elemFormatName(f),
                   elemFormatName(x.format)));
  }
  void reads(StringRef key, int64_t need, const ActBuffer &x) {
    if (need > x.elements)
      fail(formatv("reads {0} elements of '{1}', which has {2}", need, key,
                   x.elements));
  }
  void needRank(StringRef key, size_t rank, StringRef form) {
    if (tensor().shape.size() != rank)
      fail(formatv("'{0}' must be {1}, not {2}", key, form,
                   shapeText(tensor().shape)));
  }

  void kindRules();
  void rope();
  void callValues(StringRef key, ArrayRef<CallValue> values, bool args);

  const HostOp &op;
  const Program &p;
  std::vector<std::string> &out;
  int64_t actBytes = -1;
};

void OpChecker::kindRules() {
  switch (op.kind) {
  case HostOpKind::Embedding:
    needFormat("out", op.out, ElemFormat::F32);
    needRank("table", 2, "[V, H]");
    if (out.empty())
      sameLength("out", op.out, "the table's H", tensor().shape[1]);
    if (p.paramIndex("token") < 0)
      fail("the program has no parameter 'token'");
    break;
  case HostOpKind::RmsNorm:
  case HostOpKind::LayerNorm:
    if (!(op.eps >= 0) || !std::isfinite(op.eps))
      fail("'eps' must be a finite number >= 0");
    needRank("weight", 1, "[D]");
    if (out.empty()) {
      int64_t n = satMul(op.groups, tensor().shape[0]);
      sameLength("in", op.in, "groups * D", n);
      sameLength("out", op.out, "groups * D", n);
    }
    break;
  case HostOpKind::Add:
    if (op.tensor >= 0 && op.b != ActBuffer())
      fail("'b' is a buffer and a host tensor: give one");
    sameLength("out", op.out, "'a'", op.a.elements);
    if (op.param >= 0) { // (2.3) b is row `row` of a [rows, n] tensor
      if (op.tensor < 0)
        return fail("'row' selects a row of a host tensor 'b'");
      needRank("b", 2, "[rows, n] with 'row'");
      if (!out.empty())
        break;
      sameLength("a", op.a, "a row of tensor 'b'", tensor().shape[1]);
      const Param &row = p.params[size_t(op.param)];
      if (row.min < 0 || row.max >= tensor().shape[0])
        fail(formatv("'row' is parameter '{0}' in [{1}, {2}], tensor 'b' has "
                     "{3} rows",
                     row.name, row.min, row.max, tensor().shape[0]));
    } else if (op.tensor >= 0)
      sameLength("a", op.a, "tensor 'b'", tensor().elements());
    else
      sameLength("b", op.b, "'a'", op.a.elements);
    break;
  case HostOpKind::Rope:
    needFormat("in", op.in, ElemFormat::F32);
    needFormat("out", op.out, ElemFormat::F32);
    sameLength("in", op.in, "heads * head_dim", satMul(op.heads, op.headDim));
    sameLength("out", op.out, "heads * head_dim", satMul(op.heads, op.headDim));
    if (p.paramIndex("pos") < 0)
      fail("the program has no parameter 'pos'");
    rope();
    break;
  case HostOpKind::GatedAct:
    if (unsigned(op.act) >= kNumGatedActFns)
      fail("'act' is unknown");
    if (op.b != ActBuffer()) // (2.2) without up: the plain activation
      sameLength("up", op.b, "'gate'", op.a.elements);
    sameLength("out", op.out, "'gate'", op.a.elements);
    if (op.act == GatedActFn::ClampedSwiglu) { // (2.3) gpt-oss
      if (op.b == ActBuffer())
        fail("clamped_swiglu needs 'up'");
      if (!(std::isfinite(op.eps) && op.eps > 0))
        fail("clamped_swiglu needs a positive, finite 'limit'");
      if (!std::isfinite(op.scale))
        fail("'alpha' must be finite");
    } else if (op.eps != 0.0f || op.scale != 1.0f) {
      fail("'limit' and 'alpha' are clamped_swiglu's");
    }
    break;
  case HostOpKind::Pack:
    if (!std::isfinite(op.scale))
      fail("'scale' must be finite");
    // (2.3) the temperature: a position, a floor scale and a finite scale
    // together, or none of them.
    if ((op.param >= 0) != (op.partKeys > 0))
      fail("'position' and 'temperature_floor' come together");
    if (!std::isfinite(op.eps) || (op.partKeys == 0 && op.eps != 0.0f))
      fail("'temperature_scale' must be finite, and set only with "
           "'temperature_floor'");
    reads("in", satAdd(satMul(op.blocks - 1, op.inStride), op.block), op.in);
    if (int64_t writes = satAdd(satMul(op.blocks - 1, op.outStride),
                                satMul(op.replicate, op.block));
        out.empty() && writes > op.out.elements)
      fail(formatv("writes {0} elements of 'out', which has {1}", writes,
                   op.out.elements));
    break;
  case HostOpKind::VStage:
    needFormat("in", op.in, ElemFormat::F32);
    if (op.out.format == ElemFormat::F32)
      fail("'out' must be fp16 or bf16, not f32");
    sameLength("in", op.in, "heads * head_dim", satMul(op.heads, op.headDim));
    if (out.empty() && op.out.elements < satMul(satMul(op.heads, op.headDim),
                                                satMul(op.lanes, op.groups)))
      fail(formatv(
          "'out' has {0} elements, heads * head_dim * lanes * "
          "groups is {1}",
          op.out.elements,
          satMul(satMul(op.heads, op.headDim), satMul(op.lanes, op.groups))));
    break;
  case HostOpKind::Sum:
    reads("in", satAdd(satMul(op.parts - 1, op.inStride), op.out.elements),
          op.in);
    if (op.b != ActBuffer()) { // (2.3) a weight per part (MoE's combine)
      needFormat("weights", op.b, ElemFormat::F32);
      sameLength("weights", op.b, "parts", op.parts);
    }
    break;
  case HostOpKind::AttnCombine:
    needFormat("in", op.in, ElemFormat::F32);
    needFormat("stats", op.b, ElemFormat::F32);
    needFormat("out", op.out, ElemFormat::F32);
    sameLength("out", op.out, "heads * block", satMul(op.heads, op.headDim));
    if (out.empty()) {
      reads("in",
            satAdd(satMul(op.parts - 1, op.inStride),
                   satMul(op.heads, op.headDim)),
            op.in);
      reads("stats",
            satAdd(satMul(op.parts - 1, op.outStride), satMul(2, op.heads)),
            op.b);
    }
    if (op.tensor >= 0) { // (2.3) attention sinks, one logit per head
      needRank("sinks", 1, "[heads]");
      if (out.empty() && tensor().shape[0] != op.heads)
        fail(formatv("'sinks' has {0} logits, 'heads' is {1}",
                     tensor().shape[0], op.heads));
    }
    break;
  case HostOpKind::Linear:
    needFormat("in", op.in, ElemFormat::F32);
    needFormat("out", op.out, ElemFormat::F32);
    needRank("weight", 2, "[N, K]");
    if (out.empty()) {
      sameLength("in", op.in, "K", tensor().shape[1]);
      sameLength("out", op.out, "N", tensor().shape[0]);
    }
    break;
  case HostOpKind::Logits:
    needFormat("in", op.in, ElemFormat::F32);
    break;
  case HostOpKind::MoeRoute:
    needFormat("in", op.in, ElemFormat::F32);
    needFormat("out", op.out, ElemFormat::F32);
    needFormat("experts", op.experts, ElemFormat::I32);
    if (op.topK > op.in.elements)
      fail(formatv("'top_k' is {0}, but 'in' has only {1} experts", op.topK,
                   op.in.elements));
    sameLength("out", op.out, op.b.elements ? "top_k + 1" : "top_k",
               op.topK + (op.b.elements ? 1 : 0));
    sameLength("experts", op.experts, "top_k", op.topK);
    if (op.b.elements) {
      needFormat("shared", op.b, ElemFormat::F32);
      sameLength("shared", op.b, "1", 1);
    }
    if (!std::isfinite(op.scale) || !(op.scale > 0))
      fail("'scale' must be a positive finite number");
    break;
  case HostOpKind::Call:
    if (op.mlir.empty())
      fail("'mlir' is empty: a call needs its function's text");
    callValues("args", op.args, true);
    callValues("results", op.results, false);
    break;
  }
}

void OpChecker::rope() {
  const RopeSpec &r = op.rope;
  if (unsigned(r.kind) >= kNumRopeKinds)
    return fail("'rope' has an unknown kind");
  if (r.rotaryDim < 2 || r.rotaryDim > op.headDim || r.rotaryDim % 2)
    fail(formatv("'rotary_dim' is {0}, must be even and in [2, head_dim = "
                 "{1}]",
                 r.rotaryDim, op.headDim));
  for (double v : {r.theta, r.factor, r.lowFreqFactor, r.highFreqFactor,
                   r.betaFast, r.betaSlow})
    if (!std::isfinite(v))
      return fail("'rope' has a value that is not finite");
  for (const std::optional<double> &v :
       {r.attentionFactor, r.mscale, r.mscaleAllDim})
    if (v && !std::isfinite(*v))
      return fail("'rope' has a value that is not finite");
  for (const std::vector<double> *list : {&r.shortFactor, &r.longFactor})
    if (!all_of(*list, [](double v) { return std::isfinite(v); }))
      return fail("'rope' has a value that is not finite");
  if (r.originalMaxPositionEmbeddings < 0 || r.maxPositionEmbeddings < 0)
    fail("'rope' context lengths must be >= 0");
}

void OpChecker::callValues(StringRef key, ArrayRef<CallValue> values,
                           bool args) {
  for (auto [i, v] : enumerate(values)) {
    std::string where = formatv("'{0}[{1}]'", key, i).str();
    if (any_of(v.shape, [](int64_t d) { return d < 1 || d > (1LL << 40); })) {
      fail(where + ": the shape must list positive sizes");
      continue;
    }
    int64_t n = 1;
    for (int64_t d : v.shape)
      if (MulOverflow(n, d, n))
        n = INT64_MAX;
    switch (v.kind) {
    case CallValue::Kind::Buffer:
      buffer(where, v.buffer);
      if (n != v.buffer.elements)
        fail(formatv("{0}: shape {1} does not have the buffer's {2} elements",
                     where, shapeText(v.shape), v.buffer.elements));
      break;
    case CallValue::Kind::Position:
    case CallValue::Kind::Token:
      if (!args) {
        fail(where + ": a result must be a buffer");
        break;
      }
      if (v.buffer != ActBuffer())
        fail(where + ": a parameter argument has no buffer");
      if (p.paramIndex(v.kind == CallValue::Kind::Position ? "pos" : "token") <
          0)
        fail(where + ": names a parameter the program does not have");
      break;
    default:
      fail(where + ": unknown kind");
    }
  }
}
} // namespace

std::vector<std::string> hostOpProblems(const HostOp &op, const Program &p) {
  std::vector<std::string> out;
  if (unsigned(op.kind) >= kNumHostOpKinds) {
    out.push_back("unknown host op kind " + std::to_string(unsigned(op.kind)));
    return out;
  }
  OpChecker(op, p, out).run();
  return out;
}

} // namespace pimsim
