//===- HybridFamilies.cpp - the recurrent hybrid families -----------------===//
//
// The families whose layers mix attention with a recurrent mixer (spec
// 2.28-2.32): falcon_h1 (Mamba-2 in parallel with attention on every
// layer), granitemoehybrid (Mamba-2 and attention layers, MoE with a
// shared MLP), qwen3_next (Gated DeltaNet and gated attention, MoE), jamba
// (Mamba-1 layers, attention every few, MoE every other). Each hook states the
// layers' mixers (LayerAttention::mixer) and the mixer's geometry (MambaConfig,
// DeltaNetConfig); `layer_types` may then restate them (HFConfig.cpp). Defaults
// are those of the family's PretrainedConfig in transformers.
//
//===----------------------------------------------------------------------===//
#include "FamilyHooks.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

using namespace llvm;

namespace pimc::ckpt::detail {
namespace {

constexpr IntRange kWidth{1, int64_t(1) << 20};
constexpr IntRange kHeads{1, int64_t(1) << 14};

/// Falcon-H1's and Jamba's names: the MLP `feed_forward`, its norm
/// `pre_ff_layernorm`, the final norm `model.final_layernorm`.
void useFeedForwardNames(ModelConfig &cfg) {
  cfg.names.mlp = "feed_forward";
  cfg.names.finalNorm = "model.final_layernorm";
  cfg.norms.mlpIn = "pre_ff_layernorm";
}

/// A multiplier that changes nothing when it is 1.
std::optional<double> unlessOne(double v) {
  return v == 1.0 ? std::nullopt : std::optional<double>(v);
}

/// A finite multiplier (muP multipliers may be negative, not inf or nan).
Expected<std::optional<double>> multiplier(const JSONFields &f, StringRef key) {
  double v = 1.0;
  PIMC_ASSIGN_OR_RETURN(v, f.numberOr(key, 1.0));
  if (!std::isfinite(v))
    return f.fieldError(key, formatv("must be finite, got {0}", v));
  return unlessOne(v);
}

/// A list of `n` finite multipliers (null or absent: all 1).
Expected<std::optional<std::vector<double>>>
multipliers(const JSONFields &f, StringRef key, size_t n) {
  std::optional<std::vector<double>> v;
  if (f.value(key) && f.value(key)->kind() == json::Value::Null)
    return v;
  PIMC_ASSIGN_OR_RETURN(v, f.numbers(key));
  if (!v)
    return v;
  if (v->size() != n)
    return f.fieldError(key,
                        formatv("has {0} entries, expected {1}", v->size(), n));
  for (double x : *v)
    if (!std::isfinite(x))
      return f.fieldError(key, formatv("must be finite, got {0}", x));
  return v;
}

/// A JSON number, or transformers 5's encoding of a non-finite float
/// (`{"__float__": "Infinity"}`, "-Infinity", "NaN").
std::optional<double> pythonFloat(const json::Value &v) {
  if (std::optional<double> d = v.getAsNumber())
    return d;
  const json::Object *o = v.getAsObject();
  std::optional<StringRef> s =
      o && o->size() == 1 ? o->getString("__float__") : std::nullopt;
  if (s && *s == "Infinity")
    return std::numeric_limits<double>::infinity();
  if (s && *s == "-Infinity")
    return -std::numeric_limits<double>::infinity();
  if (s && *s == "NaN")
    return std::numeric_limits<double>::quiet_NaN();
  return std::nullopt;
}

/// time_step_limit: [min, max] (null: none), max possibly infinite.
Error readTimeStepLimit(const JSONFields &f, MambaConfig &m) {
  const json::Value *v = f.value("time_step_limit");
  if (!v || v->kind() == json::Value::Null)
    return Error::success();
  const json::Array *a = v->getAsArray();
  std::optional<double> lo, hi;
  if (a && a->size() == 2) {
    lo = pythonFloat((*a)[0]);
    hi = pythonFloat((*a)[1]);
  }
  if (!lo || !hi || !std::isfinite(*lo) || *lo < 0 || !(*hi >= *lo))
    return f.fieldError("time_step_limit",
                        "must be [min, max] with 0 <= min <= max, got " +
                            formatv("{0}", *v).str());
  m.dtMin = *lo;
  m.dtClampMax = std::isfinite(*hi);
  m.dtMax = m.dtClampMax ? *hi : 0.0;
  return Error::success();
}

/// An integer key that may say "auto" (or be absent): then `dflt`.
Expected<int64_t> integerOrAuto(const JSONFields &f, StringRef key,
                                int64_t dflt) {
  const json::Value *v = f.value(key);
  if (!v || (v->getAsString() && *v->getAsString() == "auto"))
    return dflt;
  return f.integer(key, required, kWidth);
}

/// The keys every Mamba mixer reads (mamba_ prefixed): the width
/// expand x hidden, the state size, the conv kernel and bias, the in_proj
/// bias.
Error readMambaCommon(const JSONFields &f, int64_t hidden,
                      int64_t defaultState, MambaConfig &m) {
  int64_t expand = 2;
  PIMC_ASSIGN_OR_RETURN(expand,
                        f.integerOr("mamba_expand", 2, IntRange{1, 64}));
  m.dInner = expand * hidden;
  PIMC_ASSIGN_OR_RETURN(m.stateSize,
                        f.integerOr("mamba_d_state", defaultState, kWidth));
  PIMC_ASSIGN_OR_RETURN(m.convKernel,
                        f.integerOr("mamba_d_conv", 4, IntRange{2, 64}));
  PIMC_ASSIGN_OR_RETURN(m.convBias, f.booleanOr("mamba_conv_bias", true));
  PIMC_ASSIGN_OR_RETURN(m.inProjBias, f.booleanOr("mamba_proj_bias", false));
  return Error::success();
}

/// The Mamba-2 keys Falcon-H1 and Granite-4.0-H share beyond those:
/// heads, head dim ("auto": d_inner / heads), groups, the time-step limit.
/// `dInner` is final when called.
Error readMamba2(const JSONFields &f, MambaConfig &m, int64_t defaultHeads) {
  PIMC_ASSIGN_OR_RETURN(m.numHeads,
                        f.integerOr("mamba_n_heads", defaultHeads, kHeads));
  if (m.dInner % m.numHeads)
    return f.fieldError("mamba_n_heads",
                        formatv("{0} does not divide the mixer's width {1}",
                                m.numHeads, m.dInner));
  PIMC_ASSIGN_OR_RETURN(
      m.headDim, integerOrAuto(f, "mamba_d_head", m.dInner / m.numHeads));
  if (m.headDim * m.numHeads != m.dInner)
    return f.fieldError("mamba_d_head",
                        formatv("{0} x {1} heads is not the mixer's width {2}",
                                m.headDim, m.numHeads, m.dInner));
  PIMC_ASSIGN_OR_RETURN(m.nGroups, f.integerOr("mamba_n_groups", 1, kHeads));
  if (m.numHeads % m.nGroups)
    return f.fieldError(
        "mamba_n_groups",
        formatv("{0} does not divide the {1} heads", m.nGroups, m.numHeads));
  // The chunked SSD of prefill re-associates the same recurrence.
  if (Expected<std::optional<int64_t>> c =
          f.integer("mamba_chunk_size", IntRange{1});
      !c)
    return c.takeError();
  return readTimeStepLimit(f, m);
}

/// Falcon-H1 (spec 2.30): every layer runs Mamba-2 and attention in
/// parallel on the same normed input, with muP multipliers on both
/// branches, the MLP's gate and output, the embedding and the logits.
Error configureFalconH1(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = readAttentionBias(f, cfg))
    return e;
  if (Error e = readMlpBias(f, cfg))
    return e;
  if (Error e = noWindow(f, cfg))
    return e;
  useFeedForwardNames(cfg);

  MambaConfig m;
  if (Error e = readMambaCommon(f, cfg.hiddenSize, 256, m))
    return e;
  // mamba_d_ssm (default 1024; null: expand x hidden) overrides the width.
  if (const json::Value *v = f.value("mamba_d_ssm");
      !v || v->kind() != json::Value::Null)
    PIMC_ASSIGN_OR_RETURN(m.dInner, f.integerOr("mamba_d_ssm", 1024, kWidth));
  if (Error e = readMamba2(f, m, 128))
    return e;
  PIMC_ASSIGN_OR_RETURN(m.outProjBias, f.booleanOr("projectors_bias", false));
  bool norm = false, normBeforeGate = true;
  PIMC_ASSIGN_OR_RETURN(norm, f.booleanOr("mamba_rms_norm", false));
  PIMC_ASSIGN_OR_RETURN(normBeforeGate,
                        f.booleanOr("mamba_norm_before_gate", true));
  m.gate = !norm            ? MambaConfig::Gate::Silu
           : normBeforeGate ? MambaConfig::Gate::NormBeforeGate
                            : MambaConfig::Gate::GateBeforeNorm;
  m.normGrouped = true;
  PIMC_ASSIGN_OR_RETURN(m.inMultiplier, multiplier(f, "ssm_in_multiplier"));
  PIMC_ASSIGN_OR_RETURN(m.outMultiplier, multiplier(f, "ssm_out_multiplier"));
  std::optional<std::vector<double>> ssm;
  PIMC_ASSIGN_OR_RETURN(ssm, multipliers(f, "ssm_multipliers", 5));
  if (ssm && llvm::any_of(*ssm, [](double x) { return x != 1.0; })) {
    m.projMultipliers.emplace();
    llvm::copy(*ssm, m.projMultipliers->begin());
  }
  cfg.mamba = std::move(m);

  PIMC_ASSIGN_OR_RETURN(cfg.mup.attentionIn,
                        multiplier(f, "attention_in_multiplier"));
  PIMC_ASSIGN_OR_RETURN(cfg.mup.key, multiplier(f, "key_multiplier"));
  PIMC_ASSIGN_OR_RETURN(cfg.mup.attentionOut,
                        multiplier(f, "attention_out_multiplier"));
  std::optional<std::vector<double>> mlp;
  PIMC_ASSIGN_OR_RETURN(mlp, multipliers(f, "mlp_multipliers", 2));
  if (mlp) {
    cfg.mup.mlpGate = unlessOne((*mlp)[0]);
    cfg.mup.mlpDown = unlessOne((*mlp)[1]);
  }
  PIMC_ASSIGN_OR_RETURN(cfg.embeddingScale,
                        multiplier(f, "embedding_multiplier"));
  PIMC_ASSIGN_OR_RETURN(cfg.logitScale, multiplier(f, "lm_head_multiplier"));
  LayerAttention layer;
  layer.mixer = LayerAttention::Mixer::Parallel;
  cfg.layers.assign(cfg.numLayers, layer);
  return Error::success();
}

/// `<key>_period` / `<key>_offset`: layer i is selected when i % period ==
/// offset.
Expected<std::vector<bool>> periodic(const JSONFields &f, StringRef key,
                                     int64_t period, int64_t offset,
                                     int64_t layers) {
  std::string periodKey = (key + "_period").str(),
              offKey = (key + "_offset").str();
  PIMC_ASSIGN_OR_RETURN(period, f.integerOr(periodKey, period, IntRange{1}));
  PIMC_ASSIGN_OR_RETURN(offset, f.integerOr(offKey, offset, IntRange{0}));
  if (offset >= period)
    return f.fieldError(offKey, formatv("{0} must be smaller than {1} ({2})",
                                        offset, periodKey, period));
  std::vector<bool> on(layers);
  for (int64_t i = 0; i < layers; ++i)
    on[i] = i % period == offset;
  return on;
}

/// Jamba (spec 2.32): Mamba-1 layers with attention every
/// attn_layer_period-th layer (no positional encoding at all), MoE every
/// expert_layer_period-th (softmax, top-k, not renormalised), the block's
/// second norm pre_ff_layernorm.
Error configureJamba(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = noWindow(f, cfg))
    return e;
  useFeedForwardNames(cfg);
  MambaConfig m;
  m.mamba1 = true;
  if (Error e = readMambaCommon(f, cfg.hiddenSize, 16, m))
    return e;
  m.numHeads = m.dInner;
  m.headDim = 1;
  m.outProjBias = m.inProjBias;
  PIMC_ASSIGN_OR_RETURN(m.dtRank, integerOrAuto(f, "mamba_dt_rank",
                                                (cfg.hiddenSize + 15) / 16));
  m.gate = MambaConfig::Gate::Silu;
  // Implementation choices of transformers (kernels, scan algorithm).
  for (StringRef k :
       {"use_mamba_kernels", "use_mambapy", "use_associative_scan"})
    if (Expected<std::optional<bool>> v = f.boolean(k); !v)
      return v.takeError();
  cfg.mamba = std::move(m);

  std::vector<bool> attention, experts;
  PIMC_ASSIGN_OR_RETURN(attention,
                        periodic(f, "attn_layer", 8, 4, cfg.numLayers));
  PIMC_ASSIGN_OR_RETURN(experts,
                        periodic(f, "expert_layer", 2, 1, cfg.numLayers));
  cfg.layers.assign(cfg.numLayers, LayerAttention{false, /*rope=*/false});
  for (int64_t i = 0; i < cfg.numLayers; ++i)
    cfg.layers[i].mixer = attention[i] ? LayerAttention::Mixer::Attention
                                       : LayerAttention::Mixer::Recurrent;
  MoEConfig moe;
  if (Error e = readRouting(f, moe, "num_experts", "", 16, /*minExperts=*/1, 2))
    return e;
  moe.intermediateSize = cfg.intermediateSize;
  moe.block = "feed_forward";
  moe.router = "router";
  moe.sparse = std::move(experts);
  if (moe.numExperts > 1 && llvm::is_contained(moe.sparse, true))
    cfg.moe = std::move(moe);
  return Error::success();
}

/// Qwen3-Next (spec 2.29): Gated DeltaNet layers with a gated full
/// attention every full_attention_interval-th layer (q_proj gives per head
/// [q | gate]; per-head QK norms; a quarter of the head dims rotate), every
/// norm outside the DeltaNet the (1 + w) kind, and Qwen2-MoE's MoE (shared
/// expert gated by sigmoid(shared_expert_gate . x)).
Error configureQwen3Next(const JSONFields &f, ModelConfig &cfg) {
  // Qwen3's attention switches (attention_bias, per-head QK norms, the
  // release's use_sliding_window, refused when true); no window.
  if (Error e = configureQwen3(f, cfg))
    return e;
  if (Error e = noWindow(f, cfg))
    return e;
  cfg.attentionOutputGate = true;
  cfg.normWeight = NormWeight::OnePlusScale;
  cfg.rope.partialRotaryFactor = 0.25; // Qwen3NextConfig's injected default
  DeltaNetConfig d;
  PIMC_ASSIGN_OR_RETURN(d.keyHeads,
                        f.integerOr("linear_num_key_heads", 16, kHeads));
  PIMC_ASSIGN_OR_RETURN(d.valueHeads,
                        f.integerOr("linear_num_value_heads", 32, kHeads));
  if (d.valueHeads % d.keyHeads)
    return f.fieldError("linear_num_value_heads",
                        formatv("{0} is not a multiple of "
                                "linear_num_key_heads ({1})",
                                d.valueHeads, d.keyHeads));
  PIMC_ASSIGN_OR_RETURN(d.keyDim,
                        f.integerOr("linear_key_head_dim", 128, kWidth));
  PIMC_ASSIGN_OR_RETURN(d.valueDim,
                        f.integerOr("linear_value_head_dim", 128, kWidth));
  PIMC_ASSIGN_OR_RETURN(
      d.convKernel, f.integerOr("linear_conv_kernel_dim", 4, IntRange{2, 64}));
  cfg.deltaNet = std::move(d);
  int64_t interval = 4;
  PIMC_ASSIGN_OR_RETURN(interval,
                        f.integerOr("full_attention_interval", 4, IntRange{1}));
  cfg.layers.assign(cfg.numLayers, LayerAttention{});
  for (int64_t i = 0; i < cfg.numLayers; ++i)
    cfg.layers[i].mixer = (i + 1) % interval ? LayerAttention::Mixer::Recurrent
                                             : LayerAttention::Mixer::Attention;
  MoEConfig moe;
  if (Error e = readQwenMoE(f, cfg, "", 512, 10, 512, moe))
    return e;
  PIMC_ASSIGN_OR_RETURN(
      moe.sharedIntermediateSize,
      f.integerOr("shared_expert_intermediate_size", 512, kWidth));
  moe.sharedExpertGate = true;
  if (llvm::is_contained(moe.sparse, true))
    cfg.moe = std::move(moe);
  return Error::success();
}

constexpr StringLiteral kQwen3NextFields[] = {
    "attention_bias",          "linear_conv_kernel_dim",
    "linear_key_head_dim",     "linear_value_head_dim",
    "linear_num_key_heads",    "linear_num_value_heads",
    "full_attention_interval", "decoder_sparse_step",
    "moe_intermediate_size",   "shared_expert_intermediate_size",
    "num_experts_per_tok",     "num_experts",
    "norm_topk_prob",          "output_router_logits",
    "router_aux_loss_coef",    "mlp_only_layers",
    "use_sliding_window"};
constexpr StringLiteral kQwen3NextNoEffectFields[] = {"output_router_logits",
                                                      "router_aux_loss_coef"};

/// Granite-4.0-H (spec 2.31): Granite's muP multipliers, Mamba-2 layers
/// (layer_types; all Mamba by default) with the gate before a grouped RMS
/// norm, attention without positions unless position_embedding_type is
/// "rope", and on every layer an MoE (top-k of the logits, then softmax)
/// plus an always-on shared MLP; no experts: the shared MLP alone.
Error configureGraniteMoeHybrid(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = configureGranite(f, cfg))
    return e;
  std::optional<StringRef> positions;
  PIMC_ASSIGN_OR_RETURN(positions, f.string("position_embedding_type"));
  bool rope = positions && *positions == "rope";
  if (positions && !rope && *positions != "nope")
    return f.fieldError("position_embedding_type",
                        "expected \"rope\", \"nope\" or null, got \"" +
                            *positions + "\"");
  MambaConfig m;
  if (Error e = readMambaCommon(f, cfg.hiddenSize, 256, m))
    return e;
  if (Error e = readMamba2(f, m, 128))
    return e;
  m.outProjBias = m.inProjBias;
  m.gate = MambaConfig::Gate::GateBeforeNorm;
  m.normGrouped = true;
  cfg.mamba = std::move(m);
  LayerAttention layer{false, rope};
  layer.mixer = LayerAttention::Mixer::Recurrent;
  cfg.layers.assign(cfg.numLayers, layer);

  MoEConfig moe;
  if (Error e = readRouting(f, moe, "num_local_experts", "", 8,
                            /*minExperts=*/0, 2))
    return e;
  int64_t shared = 1024;
  PIMC_ASSIGN_OR_RETURN(shared,
                        f.integerOr("shared_intermediate_size", 1024, kWidth));
  if (moe.numExperts == 0) { // the shared MLP is the layer's dense MLP
    cfg.intermediateSize = shared;
    cfg.names.mlp = "shared_mlp";
    cfg.fusedGateUp = true;
    cfg.names.gateUp = "input_linear";
    cfg.names.down = "output_linear";
    return Error::success();
  }
  moe.intermediateSize = cfg.intermediateSize;
  moe.topkThenScore = true;
  moe.block = "block_sparse_moe";
  moe.router = "router.layer";
  moe.stackedLinear = true;
  moe.gate = "input_linear";
  moe.down = "output_linear";
  moe.sharedIntermediateSize = shared;
  moe.sharedAtLayer = true;
  moe.shared = "shared_mlp";
  moe.sharedGateUp = "input_linear";
  moe.sharedDown = "output_linear";
  moe.sparse.assign(cfg.numLayers, true);
  cfg.moe = std::move(moe);
  return Error::success();
}

constexpr StringLiteral kGraniteMoeHybridFields[] = {"attention_bias",
                                                     "embedding_multiplier",
                                                     "logits_scaling",
                                                     "residual_multiplier",
                                                     "attention_multiplier",
                                                     "num_local_experts",
                                                     "num_experts_per_tok",
                                                     "output_router_logits",
                                                     "router_aux_loss_coef",
                                                     "shared_intermediate_size",
                                                     "position_embedding_type",
                                                     "mamba_n_heads",
                                                     "mamba_n_groups",
                                                     "mamba_d_state",
                                                     "mamba_d_head",
                                                     "mamba_d_conv",
                                                     "mamba_expand",
                                                     "mamba_chunk_size",
                                                     "mamba_conv_bias",
                                                     "mamba_proj_bias",
                                                     "time_step_limit",
                                                     "mlp_bias"};
constexpr StringLiteral kGraniteMoeHybridNoEffectFields[] = {
    "output_router_logits", "router_aux_loss_coef", "mamba_chunk_size"};

constexpr StringLiteral kJambaFields[] = {
    "output_router_logits", "router_aux_loss_coef", "num_experts_per_tok",
    "num_experts",          "expert_layer_period",  "expert_layer_offset",
    "attn_layer_period",    "attn_layer_offset",    "use_mamba_kernels",
    "mamba_d_state",        "mamba_d_conv",         "mamba_expand",
    "mamba_dt_rank",        "mamba_conv_bias",      "mamba_proj_bias",
    "use_mambapy",          "use_associative_scan", "num_logits_to_keep"};
constexpr StringLiteral kJambaNoEffectFields[] = {
    "output_router_logits", "router_aux_loss_coef", "use_mamba_kernels",
    "use_mambapy",          "use_associative_scan", "num_logits_to_keep"};

constexpr StringLiteral kFalconH1Fields[] = {
    "attention_bias",          "mlp_bias",           "mamba_d_ssm",
    "mamba_n_heads",           "mamba_d_head",       "mamba_n_groups",
    "mamba_d_state",           "mamba_d_conv",       "mamba_expand",
    "mamba_chunk_size",        "mamba_conv_bias",    "mamba_proj_bias",
    "mamba_norm_before_gate",  "mamba_rms_norm",     "time_step_limit",
    "projectors_bias",         "lm_head_multiplier", "embedding_multiplier",
    "mlp_multipliers",         "key_multiplier",     "attention_out_multiplier",
    "attention_in_multiplier", "ssm_multipliers",    "ssm_in_multiplier",
    "ssm_out_multiplier",      "num_logits_to_keep"};
constexpr StringLiteral kFalconH1NoEffectFields[] = {"mamba_chunk_size",
                                                     "num_logits_to_keep"};

const FamilySpec kHybridFamilies[] = {
    {"falcon_h1",
     kFalconH1Fields,
     8192,
     "silu",
     false,
     1e4,
     "rms_norm_eps",
     1e-5,
     configureFalconH1,
     {},
     kFalconH1NoEffectFields},
    {"granitemoehybrid",
     kGraniteMoeHybridFields,
     2048,
     "silu",
     false,
     1e4,
     "rms_norm_eps",
     1e-6,
     configureGraniteMoeHybrid,
     {},
     kGraniteMoeHybridNoEffectFields},
    {"qwen3_next",
     kQwen3NextFields,
     32768,
     "silu",
     false,
     1e4,
     "rms_norm_eps",
     1e-6,
     configureQwen3Next,
     {},
     kQwen3NextNoEffectFields},
    {"jamba",
     kJambaFields,
     262144,
     "silu",
     false,
     1e4,
     "rms_norm_eps",
     1e-6,
     configureJamba,
     {},
     kJambaNoEffectFields},
};

} // namespace

ArrayRef<FamilySpec> hybridFamilies() { return kHybridFamilies; }

} // namespace pimc::ckpt::detail
