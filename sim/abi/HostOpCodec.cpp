//===- HostOpCodec.cpp - host ops and the memory plan as flatbuffers ------===//

#include "HostOpCodec.h"

namespace pimsim::detail {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

std::vector<int64_t> longs(const flatbuffers::Vector<int64_t> *v) {
  std::vector<int64_t> out;
  if (v)
    for (flatbuffers::uoffset_t i = 0; i < v->size(); ++i)
      out.push_back(flatbuffers::EndianScalar(
          load<int64_t>(v->Data() + i * sizeof(int64_t))));
  return out;
}

namespace {
fb::ActBuffer buffer(const ActBuffer &b) {
  return fb::ActBuffer(b.offset, b.elements,
                       static_cast<fb::ElemFormat>(b.format));
}
ActBuffer buffer(const fb::ActBuffer *b) {
  if (!b)
    return {};
  fb::ActBuffer c = load<fb::ActBuffer>(b);
  return {c.offset(), c.elements(), static_cast<ElemFormat>(c.format())};
}

Offset<fb::RopeSpec> rope(FlatBufferBuilder &fbb, const RopeSpec &r) {
  // Vectors are built before the table that refers to them.
  auto shortFactor = fbb.CreateVector(r.shortFactor);
  auto longFactor = fbb.CreateVector(r.longFactor);
  fb::RopeSpecBuilder b(fbb);
  b.add_kind(static_cast<fb::RopeKind>(r.kind));
  b.add_interleaved(r.interleaved);
  b.add_rotary_dim(r.rotaryDim);
  b.add_theta(r.theta);
  b.add_factor(r.factor);
  b.add_original_max_position_embeddings(r.originalMaxPositionEmbeddings);
  b.add_max_position_embeddings(r.maxPositionEmbeddings);
  b.add_low_freq_factor(r.lowFreqFactor);
  b.add_high_freq_factor(r.highFreqFactor);
  b.add_beta_fast(r.betaFast);
  b.add_beta_slow(r.betaSlow);
  if (r.attentionFactor)
    b.add_attention_factor(*r.attentionFactor);
  if (r.mscale)
    b.add_mscale(*r.mscale);
  if (r.mscaleAllDim)
    b.add_mscale_all_dim(*r.mscaleAllDim);
  b.add_truncate(r.truncate);
  if (!r.shortFactor.empty())
    b.add_short_factor(shortFactor);
  if (!r.longFactor.empty())
    b.add_long_factor(longFactor);
  return b.Finish();
}

std::optional<double> optional(flatbuffers::Optional<double> v) {
  return v ? std::optional<double>(*v) : std::nullopt;
}

RopeSpec rope(const fb::RopeSpec *r) {
  RopeSpec s;
  if (!r)
    return s;
  s.kind = static_cast<RopeKind>(r->kind());
  s.interleaved = r->interleaved();
  s.rotaryDim = r->rotary_dim();
  s.theta = r->theta();
  s.factor = r->factor();
  s.originalMaxPositionEmbeddings = r->original_max_position_embeddings();
  s.maxPositionEmbeddings = r->max_position_embeddings();
  s.lowFreqFactor = r->low_freq_factor();
  s.highFreqFactor = r->high_freq_factor();
  s.betaFast = r->beta_fast();
  s.betaSlow = r->beta_slow();
  s.attentionFactor = optional(r->attention_factor());
  s.mscale = optional(r->mscale());
  s.mscaleAllDim = optional(r->mscale_all_dim());
  for (auto [out, in] : {std::pair{&s.shortFactor, r->short_factor()},
                         std::pair{&s.longFactor, r->long_factor()}})
    if (in)
      out->assign(in->begin(), in->end());
  s.truncate = r->truncate();
  return s;
}

Offset<flatbuffers::Vector<Offset<fb::CallValue>>>
callValues(FlatBufferBuilder &fbb, const std::vector<CallValue> &values) {
  if (values.empty())
    return 0;
  std::vector<Offset<fb::CallValue>> list;
  for (const CallValue &v : values) {
    fb::ActBuffer b = buffer(v.buffer);
    list.push_back(
        fb::CreateCallValue(fbb, static_cast<fb::CallValueKind>(v.kind),
                            v.kind == CallValue::Kind::Buffer ? &b : nullptr,
                            fbb.CreateVector(v.shape)));
  }
  return fbb.CreateVector(list);
}

std::vector<CallValue>
callValues(const flatbuffers::Vector<Offset<fb::CallValue>> *v) {
  std::vector<CallValue> out;
  if (v)
    for (const fb::CallValue *c : *v)
      out.push_back({static_cast<CallValue::Kind>(c->kind()),
                     buffer(c->buffer()), longs(c->shape())});
  return out;
}

Offset<fb::HostOp> hostOp(FlatBufferBuilder &fbb, const HostOp &op) {
  static const HostOp defaults;
  // Children first: a table is built in one go.
  Offset<fb::RopeSpec> ropeSpec =
      op.rope == defaults.rope ? 0 : rope(fbb, op.rope);
  auto source = op.source.empty() ? 0 : fbb.CreateString(op.source);
  auto mlir = op.mlir.empty() ? 0 : fbb.CreateString(op.mlir);
  auto args = callValues(fbb, op.args);
  auto results = callValues(fbb, op.results);
  fb::ActBuffer in = buffer(op.in), out = buffer(op.out), a = buffer(op.a),
                b = buffer(op.b), experts = buffer(op.experts);
  fb::HostOpBuilder h(fbb);
  h.add_kind(static_cast<fb::HostOpKind>(op.kind));
  if (op.in != defaults.in)
    h.add_in(&in);
  if (op.out != defaults.out)
    h.add_out(&out);
  if (op.a != defaults.a)
    h.add_a(&a);
  if (op.b != defaults.b)
    h.add_b(&b);
  h.add_tensor(static_cast<int32_t>(op.tensor));
  h.add_eps(op.eps);
  h.add_groups(op.groups);
  h.add_gemma(op.gemma);
  h.add_clear(op.clear);
  h.add_heads(op.heads);
  h.add_head_dim(op.headDim);
  h.add_replicas(op.replicas);
  h.add_rope(ropeSpec);
  h.add_act(static_cast<fb::GatedActFn>(op.act));
  h.add_blocks(op.blocks);
  h.add_block(op.block);
  h.add_in_stride(op.inStride);
  h.add_out_stride(op.outStride);
  h.add_replicate(op.replicate);
  h.add_scale(op.scale);
  h.add_lanes(op.lanes);
  h.add_param(static_cast<int32_t>(op.param));
  h.add_parts(op.parts);
  h.add_part_keys(op.partKeys);
  h.add_source(source);
  h.add_mlir(mlir);
  h.add_args(args);
  h.add_results(results);
  h.add_weight_bytes(op.weightBytes);
  h.add_flops(op.flops);
  if (op.experts != defaults.experts)
    h.add_experts(&experts);
  h.add_top_k(op.topK);
  h.add_sigmoid(op.sigmoid);
  h.add_topk_first(op.topkFirst);
  h.add_renormalize(op.renormalize);
  return h.Finish();
}

HostOp hostOp(const fb::HostOp &in) {
  HostOp op;
  op.kind = static_cast<HostOpKind>(in.kind());
  op.in = buffer(in.in());
  op.out = buffer(in.out());
  op.a = buffer(in.a());
  op.b = buffer(in.b());
  op.tensor = in.tensor();
  op.eps = in.eps();
  op.groups = in.groups();
  op.gemma = in.gemma();
  op.clear = in.clear();
  op.heads = in.heads();
  op.headDim = in.head_dim();
  op.replicas = in.replicas();
  op.rope = rope(in.rope());
  op.act = static_cast<GatedActFn>(in.act());
  op.blocks = in.blocks();
  op.block = in.block();
  op.inStride = in.in_stride();
  op.outStride = in.out_stride();
  op.replicate = in.replicate();
  op.scale = in.scale();
  op.lanes = in.lanes();
  op.param = in.param();
  op.parts = in.parts();
  op.partKeys = in.part_keys();
  op.source = in.source() ? in.source()->str() : "";
  op.mlir = in.mlir() ? in.mlir()->str() : "";
  op.args = callValues(in.args());
  op.results = callValues(in.results());
  op.weightBytes = in.weight_bytes();
  op.flops = in.flops();
  op.experts = buffer(in.experts());
  op.topK = in.top_k();
  op.sigmoid = in.sigmoid();
  op.topkFirst = in.topk_first();
  op.renormalize = in.renormalize();
  return op;
}
} // namespace

HostOpsOffset encodeHostOps(FlatBufferBuilder &fbb,
                            const std::vector<HostOp> &ops) {
  if (ops.empty())
    return 0;
  std::vector<Offset<fb::HostOp>> list;
  for (const HostOp &op : ops)
    list.push_back(hostOp(fbb, op));
  return fbb.CreateVector(list);
}

HostTensorsOffset encodeHostTensors(FlatBufferBuilder &fbb,
                                    const std::vector<HostTensor> &tensors) {
  if (tensors.empty())
    return 0;
  std::vector<Offset<fb::HostTensor>> list;
  for (const HostTensor &t : tensors)
    list.push_back(fb::CreateHostTensor(fbb, fbb.CreateString(t.name),
                                        fbb.CreateVector(t.shape)));
  return fbb.CreateVector(list);
}

Offset<fb::MemoryPlan> encodeMemoryPlan(FlatBufferBuilder &fbb,
                                        const MemoryPlan &m) {
  if (m.empty())
    return 0;
  return fb::CreateMemoryPlan(fbb, m.maxContext, m.weightBytes, m.kvBytes,
                              m.kvLayers, m.kvBytesPerPosition, m.actBytes,
                              m.streamedWeightBytes);
}

std::vector<HostOp>
decodeHostOps(const flatbuffers::Vector<Offset<fb::HostOp>> *v) {
  std::vector<HostOp> out;
  if (v)
    for (const fb::HostOp *op : *v)
      out.push_back(hostOp(*op));
  return out;
}

std::vector<HostTensor>
decodeHostTensors(const flatbuffers::Vector<Offset<fb::HostTensor>> *v) {
  std::vector<HostTensor> out;
  if (v)
    for (const fb::HostTensor *t : *v)
      out.push_back({t->name() ? t->name()->str() : "", longs(t->shape())});
  return out;
}

MemoryPlan decodeMemoryPlan(const fb::MemoryPlan *m) {
  if (!m)
    return {};
  MemoryPlan p;
  p.maxContext = m->max_context();
  p.weightBytes = m->weight_bytes();
  p.kvBytes = m->kv_bytes();
  p.kvLayers = m->kv_layers();
  p.kvBytesPerPosition = m->kv_bytes_per_position();
  p.actBytes = m->act_bytes();
  p.streamedWeightBytes = m->streamed_weight_bytes();
  return p;
}

} // namespace pimsim::detail
