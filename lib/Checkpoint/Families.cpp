//===- Families.cpp - the architecture registry, keyed by model_type ------===//
//
// One hook per family: the switches that make it differ from the common
// decoder (HFConfig.cpp reads the common fields first). Defaults are those of
// the family's PretrainedConfig in transformers.
//
//===----------------------------------------------------------------------===//
#include "pimc/Checkpoint/Families.h"
#include "FamilyHooks.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace llvm;

namespace pimc::ckpt {

using namespace detail;

namespace {

std::string show(const json::Value &v) { return formatv("{0}", v).str(); }

} // namespace

namespace detail {

/// `attention_bias`: a bias on all four attention projections.
Error readAttentionBias(const JSONFields &f, ModelConfig &cfg) {
  PIMC_ASSIGN_OR_RETURN(cfg.attentionBias,
                        f.booleanOr("attention_bias", false));
  cfg.qkvBias = cfg.oBias = cfg.attentionBias;
  return Error::success();
}

Error readMlpBias(const JSONFields &f, ModelConfig &cfg) {
  PIMC_ASSIGN_OR_RETURN(cfg.mlpBias, f.booleanOr("mlp_bias", false));
  return Error::success();
}

/// A family without sliding-window attention refuses a window it is given.
Error noWindow(const JSONFields &f, const ModelConfig &cfg) {
  if (const json::Value *window = f.value("sliding_window"))
    return f.fieldError("sliding_window",
                        cfg.modelType +
                            " has no sliding-window attention, got " +
                            show(*window));
  return Error::success();
}

Error configureLlama(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = readAttentionBias(f, cfg))
    return e;
  if (Error e = readMlpBias(f, cfg))
    return e;
  return noWindow(f, cfg);
}

/// Qwen applies sliding_window (and max_window_layers) only when
/// use_sliding_window is set.
Error readQwenWindow(const JSONFields &f) {
  bool useWindow = false;
  PIMC_ASSIGN_OR_RETURN(useWindow, f.booleanOr("use_sliding_window", false));
  if (useWindow)
    return f.fieldError("use_sliding_window",
                        "sliding-window attention on layers >= "
                        "max_window_layers is not supported");
  return Error::success();
}

Error configureQwen3(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = readAttentionBias(f, cfg))
    return e;
  cfg.qkNorm = true;
  return readQwenWindow(f);
}

/// A number that must be positive; `dflt` when absent.
Expected<double> positiveOr(const JSONFields &f, StringRef key, double dflt) {
  Expected<double> v = f.numberOr(key, dflt);
  if (v && *v <= 0)
    return f.fieldError(key, formatv("must be positive, got {0}", *v));
  return v;
}

/// Granite 3 (spec 2.18): Llama with muP multipliers. Each multiplier that
/// is 1 (the default) is left out of the model rather than applied.
Error configureGranite(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = configureLlama(f, cfg))
    return e;
  auto positive = [&](StringRef key) { return positiveOr(f, key, 1.0); };
  auto unlessOne = [](double v) {
    return v == 1.0 ? std::nullopt : std::optional<double>(v);
  };
  double embedding = 1, residual = 1, logitsScaling = 1;
  PIMC_ASSIGN_OR_RETURN(embedding, positive("embedding_multiplier"));
  PIMC_ASSIGN_OR_RETURN(residual, positive("residual_multiplier"));
  PIMC_ASSIGN_OR_RETURN(logitsScaling, positive("logits_scaling"));
  cfg.embeddingScale = unlessOne(embedding);
  cfg.residualMultiplier = unlessOne(residual);
  cfg.logitScale = unlessOne(1.0 / logitsScaling); // logits / logits_scaling
  // The softmax scale replaces head_dim^-0.5, also when it is 1.
  PIMC_ASSIGN_OR_RETURN(cfg.attentionScale, positive("attention_multiplier"));
  return Error::success();
}

/// The routing keys every MoE family shares: the number of routed experts
/// under `key` (transformers also maps `alias` onto it; a config with both
/// must agree), num_experts_per_tok, and the training-only keys, each
/// type-checked and without effect: output_router_logits (adds the router
/// logits to the output), router_aux_loss_coef (the load-balancing loss),
/// router_jitter_noise (noise on the router input, applied only in
/// training mode).
Error readRouting(const JSONFields &f, MoEConfig &moe, StringRef key,
                  StringRef alias, int64_t defaultExperts, int64_t minExperts,
                  int64_t defaultTopK) {
  StringRef used = key;
  if (!alias.empty() && f.value(alias)) {
    if (f.value(key) && *f.value(key) != *f.value(alias))
      return f.fieldError(alias, "is " + show(*f.value(alias)) + " but " + key +
                                     " is " + show(*f.value(key)) +
                                     " (the same field in transformers)");
    used = alias;
  }
  PIMC_ASSIGN_OR_RETURN(
      moe.numExperts,
      f.integerOr(used, defaultExperts, IntRange{minExperts, kMaxExperts}));
  PIMC_ASSIGN_OR_RETURN(moe.topK,
                        f.integerOr("num_experts_per_tok", defaultTopK,
                                    IntRange{1, kMaxExperts}));
  if (moe.numExperts > 0 && moe.topK > moe.numExperts)
    return f.fieldError("num_experts_per_tok",
                        formatv("selects {0} experts but there are only {1} "
                                "({2})",
                                moe.topK, moe.numExperts, used));
  if (Expected<std::optional<bool>> v = f.boolean("output_router_logits"); !v)
    return v.takeError();
  for (StringRef k : {"router_aux_loss_coef", "router_jitter_noise"}) {
    std::optional<double> v;
    PIMC_ASSIGN_OR_RETURN(v, f.number(k));
    if (v && *v < 0)
      return f.fieldError(k, formatv("must be non-negative, got {0}", *v));
  }
  return Error::success();
}

/// What Qwen2-MoE and Qwen3-MoE share (spec 2.7, 4.1): num_experts routed
/// experts of width moe_intermediate_size, the top num_experts_per_tok
/// renormalised when norm_topk_prob; layer i is sparse when
/// (i + 1) % decoder_sparse_step == 0 and i is not in mlp_only_layers (and
/// there are experts), else it has the dense MLP of intermediate_size.
Error readQwenMoE(const JSONFields &f, ModelConfig &cfg, StringRef alias,
                  int64_t defaultExperts, int64_t defaultTopK,
                  int64_t defaultWidth, MoEConfig &moe) {
  if (Error e = readRouting(f, moe, "num_experts", alias, defaultExperts,
                            /*minExperts=*/0, defaultTopK))
    return e;
  PIMC_ASSIGN_OR_RETURN(moe.intermediateSize,
                        f.integerOr("moe_intermediate_size", defaultWidth,
                                    IntRange{1, int64_t(1) << 20}));
  PIMC_ASSIGN_OR_RETURN(moe.renormalize, f.booleanOr("norm_topk_prob", false));
  int64_t step = 1;
  PIMC_ASSIGN_OR_RETURN(step,
                        f.integerOr("decoder_sparse_step", 1, IntRange{1}));
  std::optional<std::vector<int64_t>> dense;
  PIMC_ASSIGN_OR_RETURN(dense, f.integers("mlp_only_layers", IntRange{0}));
  for (int64_t i : dense.value_or(std::vector<int64_t>()))
    if (i >= cfg.numLayers)
      return f.fieldError("mlp_only_layers",
                          formatv("lists layer {0} but num_hidden_layers is "
                                  "{1}",
                                  i, cfg.numLayers));
  moe.sparse.assign(cfg.numLayers, false);
  for (int64_t i = 0; i < cfg.numLayers; ++i)
    moe.sparse[i] = moe.numExperts > 0 && (i + 1) % step == 0 &&
                    !(dense && llvm::is_contained(*dense, i));
  return Error::success();
}

} // namespace detail

namespace {

Error configureMistral(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = readAttentionBias(f, cfg))
    return e;
  if (Error e = readMlpBias(f, cfg))
    return e;
  PIMC_ASSIGN_OR_RETURN(cfg.slidingWindow,
                        f.integer("sliding_window", IntRange{1}));
  return Error::success();
}

Error configureQwen2(const JSONFields &f, ModelConfig &cfg) {
  // Qwen2Attention hard-codes a bias on q/k/v only.
  cfg.qkvBias = true;
  cfg.oBias = false;
  if (Error e = readQwenWindow(f))
    return e;
  // Multimodal RoPE (Qwen2-VL) splits rotary dims by section.
  bool mrope = false;
  PIMC_ASSIGN_OR_RETURN(mrope, f.booleanOr("use_mrope", false));
  if (mrope)
    return f.fieldError("use_mrope", "multimodal RoPE is not supported");
  return Error::success();
}

/// Sliding layers by a pattern (gemma2, gemma3, cohere2): every layer
/// slides with window sliding_window (default 4096) except every
/// `pattern`-th, which attends fully. An explicit null window is none at
/// all (transformers keeps None): then no layer slides.
Error readPatternWindow(const JSONFields &f, ModelConfig &cfg,
                        int64_t pattern) {
  bool nullWindow = llvm::is_contained(f.keys(), "sliding_window") &&
                    !f.value("sliding_window");
  if (!nullWindow)
    PIMC_ASSIGN_OR_RETURN(cfg.slidingWindow,
                          f.integerOr("sliding_window", 4096, IntRange{1}));
  cfg.layers.resize(cfg.numLayers);
  for (auto [i, layer] : llvm::enumerate(cfg.layers))
    layer.sliding = cfg.slidingWindow && (int64_t(i) + 1) % pattern != 0;
  return Error::success();
}

/// readPatternWindow with the pattern from sliding_window_pattern (gemma3,
/// cohere2).
Error readWindowPattern(const JSONFields &f, ModelConfig &cfg,
                        int64_t defaultPattern) {
  int64_t pattern = defaultPattern;
  PIMC_ASSIGN_OR_RETURN(pattern, f.integerOr("sliding_window_pattern",
                                             defaultPattern, IntRange{1}));
  return readPatternWindow(f, cfg, pattern);
}

/// What every Gemma shares (spec 2.25): (1+w) RMSNorms, embeddings scaled by
/// sqrt(H), a GeGLU MLP, causal decoding. `hidden_activation`, where a
/// config has it, is the activation the model was trained with
/// (transformers 4.x read it; some configs also carry a stale
/// `hidden_act: gelu`), so it wins over hidden_act.
Error configureGemmaCommon(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = readAttentionBias(f, cfg))
    return e;
  bool bidirectional = false;
  PIMC_ASSIGN_OR_RETURN(bidirectional,
                        f.booleanOr("use_bidirectional_attention", false));
  if (bidirectional)
    return f.fieldError("use_bidirectional_attention",
                        "bidirectional attention has no decode step; only "
                        "causal models are supported");
  if (f.value("hidden_activation"))
    if (Error e = readActivation(f, "hidden_activation", cfg))
      return e;
  cfg.normWeight = NormWeight::OnePlusScale;
  cfg.embeddingScale = std::sqrt(double(cfg.hiddenSize));
  return Error::success();
}

/// Gemma 1: the common Gemma, no window.
Error configureGemma(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = configureGemmaCommon(f, cfg))
    return e;
  return noWindow(f, cfg);
}

/// A softcap (attn_logit_softcapping, final_logit_softcapping): `dflt` when
/// absent, none when null (transformers skips the tanh for None).
Expected<std::optional<double>> readSoftcap(const JSONFields &f, StringRef key,
                                            std::optional<double> dflt) {
  if (llvm::is_contained(f.keys(), key) && !f.value(key))
    return std::nullopt;
  if (!f.value(key))
    return dflt;
  Expected<double> v = positiveOr(f, key, 1.0);
  if (!v)
    return v.takeError();
  return std::optional<double>(*v);
}

/// Gemma 2 (spec 2.25): the common Gemma with sandwich norms, the softmax
/// scale query_pre_attn_scalar^-0.5, attention and final-logit softcapping,
/// and alternating layers: even layers slide (window sliding_window), odd
/// layers attend fully (transformers' default layer_types, which an explicit
/// layer_types overrides). No QK norm.
Error configureGemma2(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = configureGemmaCommon(f, cfg))
    return e;
  cfg.norms = {"input_layernorm", "post_attention_layernorm",
               "pre_feedforward_layernorm", "post_feedforward_layernorm"};
  double scalar = 256;
  PIMC_ASSIGN_OR_RETURN(scalar, positiveOr(f, "query_pre_attn_scalar", 256));
  cfg.attentionScale = 1.0 / std::sqrt(scalar);
  PIMC_ASSIGN_OR_RETURN(cfg.attnLogitSoftcap,
                        readSoftcap(f, "attn_logit_softcapping", 50.0));
  PIMC_ASSIGN_OR_RETURN(cfg.finalLogitSoftcap,
                        readSoftcap(f, "final_logit_softcapping", 30.0));
  // Checkpoints of transformers 4.42 also carry sliding_window_size, which
  // no transformers release reads (sliding_window is the window): one that
  // disagrees with the window is refused rather than guessed.
  if (Error e = readPatternWindow(f, cfg, 2))
    return e;
  if (const json::Value *size = f.value("sliding_window_size"))
    if (!cfg.slidingWindow || size->getAsInteger() != *cfg.slidingWindow)
      return f.fieldError("sliding_window_size",
                          "is " + show(*size) + " but sliding_window is " +
                              (cfg.slidingWindow
                                   ? std::to_string(*cfg.slidingWindow)
                                   : std::string("null")) +
                              " (transformers reads only sliding_window)");
  return Error::success();
}

/// Gemma 3 text (spec 2.26): the common Gemma with sandwich norms (before
/// and after each branch), per-head (1+w) QK norms, the softmax scale
/// query_pre_attn_scalar^-0.5, and sliding layers (window sliding_window)
/// except every sliding_window_pattern-th, whose RoPE is unscaled with base
/// rope_local_base_freq; the full layers use rope_theta and rope_scaling.
Error configureGemma3(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = configureGemmaCommon(f, cfg))
    return e;
  // Gemma3TextConfig's softcaps default to None.
  PIMC_ASSIGN_OR_RETURN(cfg.attnLogitSoftcap,
                        readSoftcap(f, "attn_logit_softcapping", std::nullopt));
  PIMC_ASSIGN_OR_RETURN(
      cfg.finalLogitSoftcap,
      readSoftcap(f, "final_logit_softcapping", std::nullopt));
  cfg.qkNorm = true;
  cfg.norms = {"input_layernorm", "post_attention_layernorm",
               "pre_feedforward_layernorm", "post_feedforward_layernorm"};
  double scalar = 256;
  PIMC_ASSIGN_OR_RETURN(scalar, positiveOr(f, "query_pre_attn_scalar", 256));
  cfg.attentionScale = 1.0 / std::sqrt(scalar);
  if (Error e = readWindowPattern(f, cfg, 6))
    return e;
  RopeScaling local;
  PIMC_ASSIGN_OR_RETURN(local.theta,
                        positiveOr(f, "rope_local_base_freq", 1e4));
  cfg.slidingRope = local;
  return Error::success();
}

/// NoPE layers (SmolLM3, Llama 4): no_rope_layers[i] == 0 skips RoPE on
/// layer i (its keys are cached unrotated); without the list (or with an
/// empty one) every no_rope_layer_interval-th layer is NoPE. transformers
/// reads the first num_hidden_layers entries of a longer list. Sets
/// cfg.layers (one entry per layer).
Error readNoPELayers(const JSONFields &f, ModelConfig &cfg) {
  int64_t interval = 4;
  PIMC_ASSIGN_OR_RETURN(interval,
                        f.integerOr("no_rope_layer_interval", 4, IntRange{1}));
  std::optional<std::vector<int64_t>> ropeFlags;
  PIMC_ASSIGN_OR_RETURN(ropeFlags,
                        f.integers("no_rope_layers", IntRange{0, 1}));
  if (ropeFlags && ropeFlags->empty())
    ropeFlags.reset();
  if (ropeFlags && int64_t(ropeFlags->size()) < cfg.numLayers)
    return f.fieldError("no_rope_layers",
                        formatv("has {0} entries but num_hidden_layers is {1}",
                                ropeFlags->size(), cfg.numLayers));
  cfg.layers.resize(cfg.numLayers);
  for (auto [i, layer] : llvm::enumerate(cfg.layers))
    layer.rope =
        ropeFlags ? (*ropeFlags)[i] != 0 : (int64_t(i) + 1) % interval != 0;
  return Error::success();
}

/// SmolLM3 (spec 2.19): Llama with NoPE layers. no_rope_layers[i] == 0
/// skips RoPE on layer i (its keys are cached unrotated); without the list,
/// every no_rope_layer_interval-th layer is NoPE. With use_sliding_window,
/// the NoPE layers slide (transformers' default layer_types).
Error configureSmolLM3(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = readAttentionBias(f, cfg))
    return e;
  if (Error e = readMlpBias(f, cfg))
    return e;
  bool useWindow = false;
  PIMC_ASSIGN_OR_RETURN(useWindow, f.booleanOr("use_sliding_window", false));
  if (useWindow)
    PIMC_ASSIGN_OR_RETURN(cfg.slidingWindow,
                          f.integer("sliding_window", IntRange{1}));
  if (Error e = readNoPELayers(f, cfg))
    return e;
  for (LayerAttention &layer : cfg.layers)
    layer.sliding = cfg.slidingWindow && !layer.rope;
  return Error::success();
}

/// OLMo-2 (spec 2.17): post-norm blocks (no input norm; RMSNorms on the
/// attention and MLP outputs before the residual adds) and QK RMSNorms over
/// the whole q and k projections, before the head split.
Error configureOlmo2(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = readAttentionBias(f, cfg))
    return e;
  if (Error e = noWindow(f, cfg))
    return e;
  cfg.qkNorm = cfg.qkNormWhole = true;
  cfg.norms = {"", "post_attention_layernorm", "",
               "post_feedforward_layernorm"};
  return Error::success();
}

/// StableLM 2 (spec 2.21): LayerNorms with a bias (layer_norm_eps), RoPE on
/// the first partial_rotary_factor of each head (0.25 by default), q/k/v
/// biases (use_qkv_bias), per-head LayerNorm QK norms with a weight per head
/// and no bias (qk_layernorm), and the parallel residual
/// (use_parallel_residual: h + attn(ln(h)) + mlp(ln(h)), one norm).
Error configureStableLm(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = noWindow(f, cfg))
    return e;
  PIMC_ASSIGN_OR_RETURN(cfg.qkvBias, f.booleanOr("use_qkv_bias", false));
  PIMC_ASSIGN_OR_RETURN(cfg.qkNormPerHeadLayerNorm,
                        f.booleanOr("qk_layernorm", false));
  cfg.qkNorm = cfg.qkNormPerHeadLayerNorm;
  PIMC_ASSIGN_OR_RETURN(cfg.parallelBlock,
                        f.booleanOr("use_parallel_residual", false));
  cfg.normKind = NormKind::LayerNorm;
  cfg.normBias = true;
  if (cfg.parallelBlock)
    cfg.norms = {"input_layernorm", "", "", ""};
  // The family's default; a partial_rotary_factor key replaces it.
  cfg.rope.partialRotaryFactor = 0.25;
  return Error::success();
}

/// GLM-4 (spec 2.24): q/k/v biases without an o bias (attention_bias,
/// default true), a fused gate_up_proj, RoPE on the first half of each head
/// (partial_rotary_factor 0.5 by default) in interleaved pairs, head_dim 128
/// when the config has none.
Error configureGlm(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = noWindow(f, cfg))
    return e;
  PIMC_ASSIGN_OR_RETURN(cfg.qkvBias, f.booleanOr("attention_bias", true));
  cfg.oBias = false;
  if (!f.value("head_dim"))
    cfg.headDim = 128;
  cfg.fusedGateUp = true;
  cfg.rope.interleaved = true;
  cfg.rope.partialRotaryFactor = 0.5; // a partial_rotary_factor key wins
  return Error::success();
}

/// GLM-4-0414: GLM with sandwich norms. Its `post_attention_layernorm` is
/// the pre-MLP norm; post_self_attn_layernorm and post_mlp_layernorm follow
/// the branches.
Error configureGlm4(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = configureGlm(f, cfg))
    return e;
  cfg.norms = {"input_layernorm", "post_self_attn_layernorm",
               "post_attention_layernorm", "post_mlp_layernorm"};
  return Error::success();
}

/// What both Cohere generations share (spec 2.20): one bias-free LayerNorm
/// before a parallel attention + MLP block, RoPE in interleaved pairs over
/// the whole head, logits x logit_scale, a tied head by default.
Error configureCohereCommon(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = readAttentionBias(f, cfg))
    return e;
  cfg.normKind = NormKind::LayerNorm;
  cfg.parallelBlock = true;
  cfg.norms = {"input_layernorm", "", "", ""};
  cfg.rope.interleaved = true;
  double scale = 0.0625;
  PIMC_ASSIGN_OR_RETURN(scale, positiveOr(f, "logit_scale", 0.0625));
  if (scale != 1.0)
    cfg.logitScale = scale;
  return Error::success();
}

/// Command-R: use_qk_norm adds per-head LayerNorms on q and k whose weights
/// are one [heads, head_dim] tensor each.
Error configureCohere(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = configureCohereCommon(f, cfg))
    return e;
  if (Error e = noWindow(f, cfg))
    return e;
  PIMC_ASSIGN_OR_RETURN(cfg.qkNorm, f.booleanOr("use_qk_norm", false));
  cfg.qkNormPerHeadLayerNorm = cfg.qkNormStacked = cfg.qkNorm;
  return Error::success();
}

/// A key transformers' class ignores, accepted only at the value that class
/// assumes (another value would describe a model the reference is not).
Error requireValue(const JSONFields &f, const ModelConfig &cfg, StringRef key,
                   const json::Value &assumed) {
  const json::Value *v = f.value(key);
  if (!v || *v == assumed)
    return Error::success();
  return f.fieldError(key, "transformers' " + cfg.modelType +
                               " ignores it and assumes " + show(assumed) +
                               "; got " + show(*v));
}

/// Command R7B (cohere2): the Cohere block without QK norms; every
/// sliding_window_pattern-th layer (4) is full attention and NoPE, the
/// others slide (sliding_window, 4096) with RoPE. head_dim is always
/// hidden / heads. The legacy keys of the Hub configs describe that model.
Error configureCohere2(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = configureCohereCommon(f, cfg))
    return e;
  const std::pair<StringRef, json::Value> assumed[] = {
      {"use_qk_norm", false},
      {"use_parallel_block", true},
      {"use_gated_activation", true},
      {"use_embedding_sharing", true},
      {"position_embedding_type", "rope_gptj"},
      {"rotary_pct", 1.0},
      {"order_of_interleaved_layers", "local_attn_first"}};
  for (const auto &[key, value] : assumed)
    if (Error e = requireValue(f, cfg, key, value))
      return e;
  if (f.value("head_dim") && cfg.headDim * cfg.numHeads != cfg.hiddenSize)
    return f.fieldError("head_dim",
                        formatv("transformers' cohere2 uses hidden_size / "
                                "num_attention_heads = {0}, got {1}",
                                cfg.hiddenSize / cfg.numHeads, cfg.headDim));
  if (Error e = readWindowPattern(f, cfg, 4))
    return e;
  cfg.ropeOnlySliding = true;
  return Error::success();
}

/// StarCoder2 (spec 2.22): LayerNorms with bias (norm_epsilon), biases on
/// every projection (use_bias), a plain gelu_tanh MLP c_fc -> c_proj, a
/// sliding window when the config has one.
Error configureStarcoder2(const JSONFields &f, ModelConfig &cfg) {
  bool bias = true;
  PIMC_ASSIGN_OR_RETURN(bias, f.booleanOr("use_bias", true));
  cfg.qkvBias = cfg.oBias = cfg.mlpBias = bias;
  cfg.normKind = NormKind::LayerNorm;
  cfg.normBias = true;
  cfg.plainMlp = PlainMlp{"c_fc", "c_proj"};
  PIMC_ASSIGN_OR_RETURN(cfg.slidingWindow,
                        f.integer("sliding_window", IntRange{1}));
  return requireValue(f, cfg, "mlp_type", "default");
}

/// Falcon (spec 2.26): the transformer.h.N names, a fused query_key_value
/// (q|k|v for the 7B multi-query form; per KV group [q.., k, v] for the new
/// decoder architecture and per head for the multi-head form), LayerNorms
/// with bias, a plain MLP (activation, ffn_hidden_size = 4H by default),
/// biases everywhere when `bias`, and parallel blocks: one input_layernorm,
/// or ln_attn and ln_mlp (num_ln_in_parallel_attn = 2, the new
/// architecture's default). `alibi` (Falcon-RW): ALiBi biases instead of
/// RoPE on every layer.
Error configureFalcon(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = noWindow(f, cfg))
    return e;
  bool newArch = false, multiQuery = true, parallel = true, bias = false;
  PIMC_ASSIGN_OR_RETURN(cfg.alibi, f.booleanOr("alibi", false));
  if (cfg.alibi) // transformers' FalconAttention skips the rotary embedding
    cfg.layers.assign(cfg.numLayers, LayerAttention{false, /*rope=*/false});
  if (Error e = requireValue(f, cfg, "apply_residual_connection_post_layernorm",
                             false))
    return e;
  // Common keys FalconConfig does not have: transformers ignores them, so a
  // value here would describe another model than the reference's.
  const std::pair<StringRef, StringRef> ignored[] = {
      {"intermediate_size", "ffn_hidden_size"},
      {"num_key_value_heads", "num_kv_heads"},
      {"hidden_act", "activation"},
      {"head_dim", "hidden_size / heads"}};
  for (auto [key, read] : ignored)
    if (const json::Value *v = f.value(key))
      return f.fieldError(key, "transformers' falcon ignores it (it reads " +
                                   read + "), got " + show(*v));
  PIMC_ASSIGN_OR_RETURN(newArch,
                        f.booleanOr("new_decoder_architecture", false));
  PIMC_ASSIGN_OR_RETURN(multiQuery, f.booleanOr("multi_query", true));
  PIMC_ASSIGN_OR_RETURN(parallel, f.booleanOr("parallel_attn", true));
  PIMC_ASSIGN_OR_RETURN(bias, f.booleanOr("bias", false));
  // FalconConfig reads `activation` (default gelu), never hidden_act.
  cfg.hiddenAct = "gelu";
  cfg.mlpActivation = MlpActivation::Gelu;
  if (Error e = readActivation(f, "activation", cfg))
    return e;
  // head_dim is hidden / heads (FalconConfig's property).
  if (cfg.hiddenSize % cfg.numHeads != 0)
    return f.fieldError("num_attention_heads",
                        formatv("{0} does not divide hidden_size {1}",
                                cfg.numHeads, cfg.hiddenSize));
  cfg.headDim = cfg.hiddenSize / cfg.numHeads;
  if (newArch || !multiQuery) {
    StringRef key = f.value("n_head_kv") ? "n_head_kv" : "num_kv_heads";
    PIMC_ASSIGN_OR_RETURN(cfg.numKvHeads,
                          f.integerOr(key, cfg.numHeads, IntRange{1}));
    if (cfg.numHeads % cfg.numKvHeads != 0)
      return f.fieldError(key, formatv("{0} does not divide "
                                       "num_attention_heads ({1})",
                                       cfg.numKvHeads, cfg.numHeads));
  } else {
    cfg.numKvHeads = 1;
  }
  PIMC_ASSIGN_OR_RETURN(cfg.intermediateSize,
                        f.integerOr("ffn_hidden_size", 4 * cfg.hiddenSize,
                                    IntRange{1, int64_t(1) << 20}));
  cfg.names.layers = "transformer.h";
  cfg.names.attn = "self_attention";
  cfg.names.qkv = "query_key_value";
  cfg.names.o = "dense";
  cfg.names.embed = "transformer.word_embeddings";
  cfg.names.finalNorm = "transformer.ln_f";
  cfg.fusedQKV = true;
  cfg.qkvLayout =
      multiQuery && !newArch ? QKVLayout::Contiguous : QKVLayout::Grouped;
  cfg.plainMlp = PlainMlp{"dense_h_to_4h", "dense_4h_to_h"};
  cfg.qkvBias = cfg.oBias = cfg.mlpBias = bias;
  cfg.normKind = NormKind::LayerNorm;
  cfg.normBias = true;
  cfg.parallelBlock = newArch || parallel;
  int64_t lns = newArch ? 2 : 1;
  PIMC_ASSIGN_OR_RETURN(
      lns, f.integerOr("num_ln_in_parallel_attn", lns, IntRange{1, 2}));
  if (newArch && lns == 2)
    cfg.norms = {"ln_attn", "", "ln_mlp", ""};
  else if (cfg.parallelBlock && parallel)
    cfg.norms = {"input_layernorm", "", "", ""};
  else if (!newArch)
    cfg.norms = {"input_layernorm", "", "post_attention_layernorm", ""};
  else
    return f.fieldError("parallel_attn",
                        "the new decoder architecture with one LayerNorm "
                        "needs parallel_attn (transformers has no MLP input "
                        "otherwise)");
  return Error::success();
}

/// InternLM2 / 2.5 (spec 2.23; remote code): the Llama block under its own
/// names (model.tok_embeddings, attention.wqkv / wo, feed_forward.w1 / w3 /
/// w2, attention_norm, ffn_norm, output), q/k/v from wqkv grouped per KV
/// head, `bias` on wqkv and wo (InternLM2Config's default: true).
Error configureInternLM2(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = noWindow(f, cfg))
    return e;
  bool bias = true;
  PIMC_ASSIGN_OR_RETURN(bias, f.booleanOr("bias", true));
  cfg.qkvBias = cfg.oBias = bias;
  cfg.names.embed = "model.tok_embeddings";
  cfg.names.attn = "attention";
  cfg.names.qkv = "wqkv";
  cfg.names.o = "wo";
  cfg.names.mlp = "feed_forward";
  cfg.names.gate = "w1";
  cfg.names.up = "w3";
  cfg.names.down = "w2";
  cfg.names.head = "output";
  cfg.norms = {"attention_norm", "", "ffn_norm", ""};
  cfg.fusedQKV = true;
  cfg.qkvLayout = QKVLayout::Grouped;
  return Error::success();
}

/// Phi-3, Phi-3.5 and Phi-4-mini (spec 2.17): the Llama block with a fused
/// q|k|v qkv_proj and gate|up gate_up_proj, one window on every layer when
/// sliding_window is set, and RoPE of type default or longrope whose
/// pretraining length is the top-level original_max_position_embeddings
/// (4096 by default; it wins over the dict's, as in transformers). Keys
/// the Phi-4-mini config carries for its remote code are accepted at the
/// values transformers' Phi3 assumes.
Error configurePhi3(const JSONFields &f, ModelConfig &cfg) {
  PIMC_ASSIGN_OR_RETURN(cfg.slidingWindow,
                        f.integer("sliding_window", IntRange{1}));
  int64_t original = 4096;
  PIMC_ASSIGN_OR_RETURN(
      original,
      f.integerOr("original_max_position_embeddings", 4096, IntRange{1}));
  cfg.rope.originalMaxPositionEmbeddings = original;
  cfg.ropeKinds = {RopeScaling::Kind::Default, RopeScaling::Kind::LongRope};
  cfg.fusedQKV = true;
  cfg.fusedGateUp = true;
  const std::pair<StringRef, json::Value> assumed[] = {
      {"attention_bias", false},
      {"mlp_bias", false},
      {"lm_head_bias", false},
      {"full_attn_mod", 1},
      {"interpolate_factor", 1}};
  for (const auto &[key, value] : assumed)
    if (Error e = requireValue(f, cfg, key, value))
      return e;
  return Error::success();
}

/// GPT-2 (spec 2.13): learned absolute positions (transformer.wpe) added to
/// the token embedding and no RoPE, pre-norm LayerNorms with bias (ln_1,
/// ln_2, ln_f), a fused q|k|v c_attn and every projection a Conv1D (stored
/// [in, out], read transposed), biases everywhere, a plain MLP c_fc -> c_proj
/// of n_inner (null: 4 * n_embd), the head tied to wte. The common keys are
/// read under GPT2Config's names (n_embd, n_layer, ...; kGpt2KeyNames).
Error configureGpt2(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = noWindow(f, cfg))
    return e;
  for (StringRef key :
       {"rope_theta", "rope_scaling", "rope_parameters",
        "partial_rotary_factor", "num_key_value_heads", "head_dim"})
    if (const json::Value *v = f.value(key))
      return f.fieldError(key, "transformers' gpt2 ignores it (learned "
                               "absolute positions, n_head heads of n_embd / "
                               "n_head), got " +
                                   show(*v));
  bool flag = false;
  PIMC_ASSIGN_OR_RETURN(flag, f.booleanOr("add_cross_attention", false));
  if (flag)
    return f.fieldError("add_cross_attention",
                        "cross-attention layers (GPT-2 as the decoder of an "
                        "encoder-decoder model) are not supported");
  PIMC_ASSIGN_OR_RETURN(flag, f.booleanOr("scale_attn_weights", true));
  if (!flag)
    cfg.attentionScale = 1.0;
  PIMC_ASSIGN_OR_RETURN(cfg.attentionScaleByInverseLayer,
                        f.booleanOr("scale_attn_by_inverse_layer_idx", false));
  // reorder_and_upcast_attn: the eager path's f32 scores with the scale
  // applied to q first; pimc's attention is f32 already, the same function.
  if (Expected<std::optional<bool>> v = f.boolean("reorder_and_upcast_attn");
      !v)
    return v.takeError();
  if (cfg.intermediateSize == 0)
    cfg.intermediateSize = 4 * cfg.hiddenSize;
  cfg.names.layers = "transformer.h";
  cfg.names.attn = "attn";
  cfg.names.qkv = "c_attn";
  cfg.names.o = "c_proj";
  cfg.names.embed = "transformer.wte";
  cfg.names.positions = "transformer.wpe";
  cfg.names.finalNorm = "transformer.ln_f";
  cfg.norms = {"ln_1", "", "ln_2", ""};
  cfg.fusedQKV = true;
  cfg.conv1dWeights = true;
  cfg.learnedPositions = true;
  cfg.plainMlp = PlainMlp{"c_fc", "c_proj"};
  cfg.qkvBias = cfg.oBias = cfg.mlpBias = true;
  cfg.normKind = NormKind::LayerNorm;
  cfg.normBias = true;
  cfg.layers.assign(cfg.numLayers, LayerAttention{false, /*rope=*/false});
  return Error::success();
}

/// Mixtral (spec 2.5): Mistral's attention (a window on every layer when
/// sliding_window is set, no biases) and a sparse MoE block on every layer:
/// softmax over num_local_experts, the top num_experts_per_tok experts
/// renormalised, experts of width intermediate_size under the original
/// names block_sparse_moe.gate and block_sparse_moe.experts.<e>.w1 (gate),
/// w3 (up), w2 (down).
Error configureMixtral(const JSONFields &f, ModelConfig &cfg) {
  PIMC_ASSIGN_OR_RETURN(cfg.slidingWindow,
                        f.integer("sliding_window", IntRange{1}));
  MoEConfig moe;
  if (Error e = readRouting(f, moe, "num_local_experts", "num_experts", 8,
                            /*minExperts=*/1, 2))
    return e;
  moe.intermediateSize = cfg.intermediateSize;
  moe.renormalize = true;
  moe.block = "block_sparse_moe";
  moe.gate = "w1";
  moe.up = "w3";
  moe.down = "w2";
  moe.sparse.assign(cfg.numLayers, true);
  cfg.moe = std::move(moe);
  return Error::success();
}

/// Qwen2-MoE (Qwen1.5-MoE): Qwen2's attention (q/k/v biases; transformers
/// 5 names the switch qkv_bias, default true), the Qwen MoE layers, and on
/// every sparse layer a shared expert of width
/// shared_expert_intermediate_size whose output is scaled per token by
/// sigmoid(shared_expert_gate . x).
Error configureQwen2Moe(const JSONFields &f, ModelConfig &cfg) {
  PIMC_ASSIGN_OR_RETURN(cfg.qkvBias, f.booleanOr("qkv_bias", true));
  cfg.oBias = false;
  if (Error e = readQwenWindow(f))
    return e;
  MoEConfig moe;
  if (Error e = readQwenMoE(f, cfg, "", 60, 4, 1408, moe))
    return e;
  PIMC_ASSIGN_OR_RETURN(moe.sharedIntermediateSize,
                        f.integerOr("shared_expert_intermediate_size", 5632,
                                    IntRange{1, int64_t(1) << 20}));
  moe.sharedExpertGate = true;
  if (llvm::is_contained(moe.sparse, true))
    cfg.moe = std::move(moe);
  return Error::success();
}

/// Qwen3-MoE: Qwen3's attention (per-head QK RMSNorms, attention_bias) and
/// the Qwen MoE layers without a shared expert. transformers 5 writes
/// num_experts as num_local_experts (Qwen3MoeConfig's attribute_map).
Error configureQwen3Moe(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = configureQwen3(f, cfg))
    return e;
  MoEConfig moe;
  if (Error e = readQwenMoE(f, cfg, "num_local_experts", 128, 8, 768, moe))
    return e;
  if (llvm::is_contained(moe.sparse, true))
    cfg.moe = std::move(moe);
  return Error::success();
}

/// gpt-oss (spec 2.11): q/k/v/o biases (attention_bias), a learned sink
/// per head, sliding_window (default 128, null: none) on the layers
/// layer_types marks (default: the even layers), YaRN x32 by default, and an
/// MoE block on every layer: router with a bias, top num_experts_per_tok of
/// the logits then softmax over them, experts of width intermediate_size
/// with biases and the clamped SwiGLU (swiglu_limit, swiglu_alpha), stored
/// fused (MoEConfig::fusedInterleaved). hidden_act has no effect: the
/// experts' activation is the clamped SwiGLU whatever it says.
Error configureGptOss(const JSONFields &f, ModelConfig &cfg) {
  PIMC_ASSIGN_OR_RETURN(cfg.qkvBias, f.booleanOr("attention_bias", true));
  cfg.oBias = cfg.qkvBias;
  cfg.attentionSinks = true;
  if (const json::Value *w = f.value("sliding_window"); !w)
    cfg.slidingWindow = 128;
  else if (w->kind() != json::Value::Null)
    PIMC_ASSIGN_OR_RETURN(cfg.slidingWindow,
                          f.integer("sliding_window", IntRange{1}));
  cfg.layers.assign(cfg.numLayers, LayerAttention{});
  for (int64_t i = 0; i < cfg.numLayers; ++i)
    cfg.layers[i].sliding = cfg.slidingWindow && (i + 1) % 2 != 0;
  if (!f.value("rope_scaling") && !f.value("rope_parameters")) {
    cfg.rope.kind = RopeScaling::Kind::Yarn;
    cfg.rope.factor = 32.0;
    cfg.rope.betaFast = 32.0;
    cfg.rope.betaSlow = 1.0;
    cfg.rope.truncate = false;
    cfg.rope.originalMaxPositionEmbeddings = 4096;
  }
  MoEConfig moe;
  if (Error e = readRouting(f, moe, "num_local_experts", "num_experts", 128,
                            /*minExperts=*/1, 4))
    return e;
  // The released configs also carry the original code's names:
  // experts_per_token (= num_experts_per_tok) and initial_context_length
  // (the YaRN L0); transformers reads neither.
  std::optional<int64_t> perToken;
  PIMC_ASSIGN_OR_RETURN(perToken, f.integer("experts_per_token", IntRange{1}));
  if (perToken && *perToken != moe.topK)
    return f.fieldError("experts_per_token",
                        formatv("is {0} but num_experts_per_tok is {1} (the "
                                "original code's name of the same number)",
                                *perToken, moe.topK));
  if (Expected<std::optional<int64_t>> v =
          f.integer("initial_context_length", IntRange{1});
      !v)
    return v.takeError();
  moe.intermediateSize = cfg.intermediateSize;
  moe.router = "router";
  moe.routerBias = true;
  moe.topkThenScore = true;
  moe.fusedInterleaved = true;
  double limit = 0, alpha = 0;
  PIMC_ASSIGN_OR_RETURN(limit, f.numberOr("swiglu_limit", 7.0));
  PIMC_ASSIGN_OR_RETURN(alpha, f.numberOr("swiglu_alpha", 1.702));
  if (!(limit > 0) || !std::isfinite(limit))
    return f.fieldError("swiglu_limit",
                        formatv("must be positive and finite, got {0}", limit));
  if (!std::isfinite(alpha))
    return f.fieldError("swiglu_alpha",
                        formatv("must be finite, got {0}", alpha));
  moe.swigluLimit = limit;
  moe.swigluAlpha = alpha;
  moe.sparse.assign(cfg.numLayers, true);
  cfg.moe = std::move(moe);
  return Error::success();
}

/// MLA's geometry (spec 2.10), shared by DeepSeek-V2 and V3. The heads'
/// rotary part is qk_rope_head_dim wide: transformers sets head_dim to it
/// (a config's head_dim must agree), and RoPE and its checks read it.
/// num_key_value_heads has no effect (the latent is one shared head).
Error readMLA(const JSONFields &f, ModelConfig &cfg, bool interleaveKey) {
  MLAConfig mla;
  const IntRange dims{1, int64_t(1) << 16};
  std::optional<int64_t> qRank;
  PIMC_ASSIGN_OR_RETURN(qRank, f.integer("q_lora_rank", dims));
  bool nullRank =
      llvm::is_contained(f.keys(), "q_lora_rank") && !f.value("q_lora_rank");
  mla.qLoraRank = nullRank ? 0 : qRank.value_or(1536);
  PIMC_ASSIGN_OR_RETURN(mla.kvLoraRank, f.integerOr("kv_lora_rank", 512, dims));
  PIMC_ASSIGN_OR_RETURN(mla.ropeDim, f.integerOr("qk_rope_head_dim", 64, dims));
  PIMC_ASSIGN_OR_RETURN(mla.nopeDim,
                        f.integerOr("qk_nope_head_dim", 128, dims));
  PIMC_ASSIGN_OR_RETURN(mla.valueDim, f.integerOr("v_head_dim", 128, dims));
  if (interleaveKey)
    PIMC_ASSIGN_OR_RETURN(mla.ropeInterleaved,
                          f.booleanOr("rope_interleave", true));
  std::optional<int64_t> qkHeadDim, headDim, kvHeads;
  PIMC_ASSIGN_OR_RETURN(qkHeadDim, f.integer("qk_head_dim", dims));
  if (qkHeadDim && *qkHeadDim != mla.nopeDim + mla.ropeDim)
    return f.fieldError("qk_head_dim",
                        formatv("is {0} but qk_nope_head_dim + "
                                "qk_rope_head_dim is {1}",
                                *qkHeadDim, mla.nopeDim + mla.ropeDim));
  PIMC_ASSIGN_OR_RETURN(headDim, f.integer("head_dim", dims));
  if (headDim && *headDim != mla.ropeDim)
    return f.fieldError("head_dim", formatv("is {0} but MLA's rotary head dim "
                                            "(qk_rope_head_dim) is {1}",
                                            *headDim, mla.ropeDim));
  PIMC_ASSIGN_OR_RETURN(kvHeads, f.integer("num_key_value_heads", dims));
  if (mla.ropeDim % 2 != 0)
    return f.fieldError("qk_rope_head_dim",
                        formatv("must be even, got {0}", mla.ropeDim));
  cfg.headDim = mla.ropeDim;
  cfg.numKvHeads = cfg.numHeads;
  cfg.mla = mla;
  return readAttentionBias(f, cfg);
}

/// DeepSeek's MoE layers (spec 2.10): n_routed_experts experts of width
/// moe_intermediate_size on layers >= first_k_dense_replace (the first
/// ones keep the dense MLP of intermediate_size), plus n_shared_experts
/// always-on experts fused into one MLP of n_shared_experts times that
/// width (mlp.shared_experts), the routed weights times
/// routed_scaling_factor. moe_layer_freq (the original code's MoE every
/// n-th layer, which transformers does not read) must be 1, ep_size
/// (expert parallelism) and the training keys have no effect.
Error readDeepSeekMoE(const JSONFields &f, ModelConfig &cfg, MoEConfig &moe,
                      StringRef alias, int64_t defaultExperts,
                      int64_t defaultShared, double defaultScale) {
  if (Error e = readRouting(f, moe, "n_routed_experts", alias, defaultExperts,
                            /*minExperts=*/1, 8))
    return e;
  PIMC_ASSIGN_OR_RETURN(moe.intermediateSize,
                        f.integerOr("moe_intermediate_size", 2048,
                                    IntRange{1, int64_t(1) << 20}));
  int64_t shared = 0, firstDense = 0, freq = 1;
  PIMC_ASSIGN_OR_RETURN(
      shared, f.integerOr("n_shared_experts", defaultShared, IntRange{0, 64}));
  moe.sharedIntermediateSize = shared * moe.intermediateSize;
  moe.shared = "shared_experts";
  PIMC_ASSIGN_OR_RETURN(firstDense,
                        f.integerOr("first_k_dense_replace", 0, IntRange{0}));
  PIMC_ASSIGN_OR_RETURN(freq, f.integerOr("moe_layer_freq", 1, IntRange{1}));
  if (freq != 1)
    return f.fieldError("moe_layer_freq",
                        formatv("is {0}: MoE on every {0}-th layer is the "
                                "original code's, which transformers does "
                                "not implement (it puts MoE on every layer "
                                "from first_k_dense_replace)",
                                freq));
  PIMC_ASSIGN_OR_RETURN(moe.routedScalingFactor,
                        positiveOr(f, "routed_scaling_factor", defaultScale));
  if (Expected<std::optional<int64_t>> v = f.integer("ep_size", IntRange{1});
      !v)
    return v.takeError();
  if (Expected<std::optional<double>> v = f.number("aux_loss_alpha"); !v)
    return v.takeError();
  if (Expected<std::optional<bool>> v = f.boolean("seq_aux"); !v)
    return v.takeError();
  moe.sparse.assign(cfg.numLayers, false);
  for (int64_t i = firstDense; i < cfg.numLayers; ++i)
    moe.sparse[i] = true;
  return Error::success();
}

/// `n_group` and `topk_group` (null: one group, all kept): the experts
/// split into n_group groups, of which topk_group stay eligible.
Error readGroups(const JSONFields &f, MoEConfig &moe, int64_t defaultGroups,
                 int64_t defaultKeep) {
  std::optional<int64_t> groups, keep;
  PIMC_ASSIGN_OR_RETURN(groups, f.integer("n_group", IntRange{1}));
  PIMC_ASSIGN_OR_RETURN(keep, f.integer("topk_group", IntRange{1}));
  bool nullGroups =
      llvm::is_contained(f.keys(), "n_group") && !f.value("n_group");
  moe.nGroup = nullGroups ? 1 : groups.value_or(defaultGroups);
  moe.topkGroup = keep.value_or(nullGroups ? 1 : defaultKeep);
  if (moe.numExperts % moe.nGroup != 0)
    return f.fieldError("n_group", formatv("{0} groups do not divide the {1} "
                                           "experts (n_routed_experts)",
                                           moe.nGroup, moe.numExperts));
  if (moe.topkGroup > moe.nGroup)
    return f.fieldError("topk_group",
                        formatv("keeps {0} groups but there are only {1} "
                                "(n_group)",
                                moe.topkGroup, moe.nGroup));
  if (moe.topK > moe.topkGroup * (moe.numExperts / moe.nGroup))
    return f.fieldError("num_experts_per_tok",
                        formatv("selects {0} experts but the {1} kept groups "
                                "(topk_group) hold only {2}",
                                moe.topK, moe.topkGroup,
                                moe.topkGroup * (moe.numExperts / moe.nGroup)));
  return Error::success();
}

/// A string key that may only take `allowed` (the original code's names of
/// what transformers hard-codes).
Error requireOneOf(const JSONFields &f, StringRef key,
                   ArrayRef<StringRef> allowed, StringRef why) {
  std::optional<StringRef> v;
  PIMC_ASSIGN_OR_RETURN(v, f.string(key));
  if (v && !llvm::is_contained(allowed, *v))
    return f.fieldError(key, "'" + *v + "' is not supported (" + why + ")");
  return Error::success();
}

/// DeepSeek-V3 (spec 2.10, 4.4): MLA, and MoE routed by sigmoid scores
/// plus mlp.gate.e_score_correction_bias for selection, in n_group groups
/// each scored by its two best, topk_group of them kept; the weights
/// renormalised (norm_topk_prob, + 1e-20) and scaled by
/// routed_scaling_factor. The released config's topk_method "noaux_tc" and
/// scoring_func "sigmoid" are what transformers hard-codes.
Error configureDeepSeekV3(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = noWindow(f, cfg))
    return e;
  if (Error e = readMLA(f, cfg, /*interleaveKey=*/true))
    return e;
  MoEConfig moe;
  if (Error e = readDeepSeekMoE(f, cfg, moe, "num_local_experts", 256, 1, 2.5))
    return e;
  if (Error e = readGroups(f, moe, 8, 4))
    return e;
  if (moe.numExperts / moe.nGroup < 2)
    return f.fieldError("n_group",
                        formatv("leaves {0} expert per group, but a group "
                                "scores by its two best",
                                moe.numExperts / moe.nGroup));
  if (Error e = requireOneOf(f, "topk_method", {"noaux_tc"},
                             "DeepSeek-V3 routes by noaux_tc"))
    return e;
  if (Error e = requireOneOf(f, "scoring_func", {"sigmoid"},
                             "DeepSeek-V3 scores by sigmoid"))
    return e;
  PIMC_ASSIGN_OR_RETURN(moe.renormalize, f.booleanOr("norm_topk_prob", true));
  moe.renormalizeEpsilon = moe.renormalize ? 1e-20 : 0.0;
  moe.sigmoidScores = true;
  moe.correctionBias = true;
  moe.groupScoreTopk = 2;
  if (llvm::is_contained(moe.sparse, true))
    cfg.moe = std::move(moe);
  if (Expected<std::optional<int64_t>> v =
          f.integer("num_nextn_predict_layers", IntRange{0});
      !v)
    return v.takeError();
  return Error::success();
}

/// DeepSeek-V2 (spec 2.10, 4.5): MLA with RoPE on interleaved pairs, and
/// MoE routed by softmax, top-k ("greedy") or top-k within the topk_group
/// groups of the best maximum ("group_limited_greedy"), not renormalised,
/// the weights times routed_scaling_factor. transformers' DeepseekV2 never
/// renormalises (the original code does with norm_topk_prob), so a true
/// norm_topk_prob is refused rather than guessed.
Error configureDeepSeekV2(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = noWindow(f, cfg))
    return e;
  if (Error e = readMlpBias(f, cfg))
    return e;
  if (Error e = readMLA(f, cfg, /*interleaveKey=*/false))
    return e;
  MoEConfig moe;
  if (Error e = readDeepSeekMoE(f, cfg, moe, "num_experts", 64, 2, 1.0))
    return e;
  std::optional<StringRef> method;
  PIMC_ASSIGN_OR_RETURN(method, f.string("topk_method"));
  StringRef m = method.value_or("greedy");
  if (m == "group_limited_greedy") {
    if (Error e = readGroups(f, moe, 1, 1))
      return e;
  } else if (m != "greedy") {
    return f.fieldError("topk_method",
                        "'" + m +
                            "' is not supported (DeepSeek-V2 routes by "
                            "greedy or group_limited_greedy)");
  }
  if (Error e = requireOneOf(f, "scoring_func", {"softmax"},
                             "DeepSeek-V2 scores by softmax"))
    return e;
  bool norm = false;
  PIMC_ASSIGN_OR_RETURN(norm, f.booleanOr("norm_topk_prob", false));
  if (norm)
    return f.fieldError("norm_topk_prob",
                        "true is not supported: transformers' DeepSeek-V2 "
                        "never renormalises the top-k weights, the original "
                        "code does");
  if (llvm::is_contained(moe.sparse, true))
    cfg.moe = std::move(moe);
  return Error::success();
}

/// Llama 4 text (spec 2.12): NoPE layers (no_rope_layers[i] == 0, default
/// every no_rope_layer_interval-th), chunked attention of
/// attention_chunk_size on the RoPE layers (transformers' default
/// layer_types; null: none), RoPE on interleaved pairs, a weightless RMS QK
/// norm after RoPE on the RoPE layers (use_qk_norm), temperature tuning on
/// the NoPE layers (attn_temperature_tuning, floor_scale, attn_scale); MoE
/// on the layers moe_layers lists (default every interleave_moe_layer_step-th
/// from step - 1): top num_experts_per_tok of the logits, sigmoid of each,
/// the weight on the expert's input, experts of width intermediate_size
/// read from the fused feed_forward.experts tensors, plus an ungated shared
/// expert of the same width; the other layers a dense MLP of
/// intermediate_size_mlp.
Error configureLlama4Text(const JSONFields &f, ModelConfig &cfg) {
  if (Error e = readAttentionBias(f, cfg))
    return e;
  if (Error e = noWindow(f, cfg))
    return e;
  cfg.names.mlp = "feed_forward";
  cfg.rope.interleaved = true;
  if (Error e = readNoPELayers(f, cfg))
    return e;
  bool nullChunk = llvm::is_contained(f.keys(), "attention_chunk_size") &&
                   !f.value("attention_chunk_size");
  if (!nullChunk)
    PIMC_ASSIGN_OR_RETURN(
        cfg.attentionChunkSize,
        f.integerOr("attention_chunk_size", 8192, IntRange{1}));
  for (LayerAttention &layer : cfg.layers)
    layer.chunked = cfg.attentionChunkSize && layer.rope;
  PIMC_ASSIGN_OR_RETURN(cfg.l2QkNorm, f.booleanOr("use_qk_norm", true));
  bool tuning = true;
  PIMC_ASSIGN_OR_RETURN(tuning, f.booleanOr("attn_temperature_tuning", true));
  TemperatureTuning t;
  PIMC_ASSIGN_OR_RETURN(t.floorScale,
                        f.integerOr("floor_scale", 8192, IntRange{1}));
  PIMC_ASSIGN_OR_RETURN(t.scale, f.numberOr("attn_scale", 0.1));
  if (!std::isfinite(t.scale))
    return f.fieldError("attn_scale",
                        formatv("must be finite, got {0}", t.scale));
  if (tuning)
    cfg.temperatureTuning = t;

  MoEConfig moe;
  if (Error e = readRouting(f, moe, "num_local_experts", "", 16,
                            /*minExperts=*/1, 1))
    return e;
  moe.intermediateSize = cfg.intermediateSize;
  PIMC_ASSIGN_OR_RETURN(cfg.intermediateSize,
                        f.integerOr("intermediate_size_mlp", 16384,
                                    IntRange{1, int64_t(1) << 20}));
  moe.block = "feed_forward";
  moe.router = "router";
  moe.shared = "shared_expert";
  moe.sharedIntermediateSize = moe.intermediateSize;
  moe.sigmoidScores = true;
  moe.topkThenScore = true;
  moe.weightOnInput = true;
  moe.fusedConcatenated = true;
  int64_t step = 1;
  PIMC_ASSIGN_OR_RETURN(
      step, f.integerOr("interleave_moe_layer_step", 1, IntRange{1}));
  std::optional<std::vector<int64_t>> moeLayers;
  PIMC_ASSIGN_OR_RETURN(moeLayers, f.integers("moe_layers", IntRange{0}));
  moe.sparse.assign(cfg.numLayers, false);
  if (moeLayers) {
    for (int64_t i : *moeLayers) {
      if (i >= cfg.numLayers)
        return f.fieldError("moe_layers",
                            formatv("lists layer {0} but num_hidden_layers "
                                    "is {1}",
                                    i, cfg.numLayers));
      moe.sparse[i] = true;
    }
  } else {
    for (int64_t i = step - 1; i < cfg.numLayers; i += step)
      moe.sparse[i] = true;
  }
  if (llvm::is_contained(moe.sparse, true))
    cfg.moe = std::move(moe);
  return Error::success();
}

constexpr StringLiteral kLlama4TextFields[] = {"attention_bias",
                                               "no_rope_layers",
                                               "no_rope_layer_interval",
                                               "attention_chunk_size",
                                               "use_qk_norm",
                                               "attn_temperature_tuning",
                                               "floor_scale",
                                               "attn_scale",
                                               "num_local_experts",
                                               "num_experts_per_tok",
                                               "intermediate_size_mlp",
                                               "interleave_moe_layer_step",
                                               "moe_layers",
                                               "output_router_logits",
                                               "router_aux_loss_coef",
                                               "router_jitter_noise"};

/// Keys DeepSeek-V2 and V3 share (MLA and the DeepSeek MoE).
#define PIMC_DEEPSEEK_FIELDS                                                   \
  "attention_bias", "num_key_value_heads", "head_dim", "qk_head_dim",          \
      "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",   \
      "v_head_dim", "n_routed_experts", "num_experts_per_tok",                 \
      "moe_intermediate_size", "n_shared_experts", "first_k_dense_replace",    \
      "moe_layer_freq", "routed_scaling_factor", "norm_topk_prob", "n_group",  \
      "topk_group", "topk_method", "scoring_func", "ep_size",                  \
      "aux_loss_alpha", "seq_aux", "output_router_logits",                     \
      "router_aux_loss_coef"
constexpr StringLiteral kDeepSeekV3Fields[] = {
    PIMC_DEEPSEEK_FIELDS, "num_local_experts", "rope_interleave",
    "num_nextn_predict_layers"};
constexpr StringLiteral kDeepSeekV2Fields[] = {PIMC_DEEPSEEK_FIELDS,
                                               "num_experts", "mlp_bias"};
#undef PIMC_DEEPSEEK_FIELDS
/// Keys without effect: MLA has no separate KV heads; expert parallelism,
/// the auxiliary losses and the multi-token-prediction layers (which
/// transformers drops) do not change decoding.
constexpr StringLiteral kDeepSeekNoEffectFields[] = {
    "num_key_value_heads",  "ep_size",
    "aux_loss_alpha",       "seq_aux",
    "qk_head_dim",          "output_router_logits",
    "router_aux_loss_coef", "num_nextn_predict_layers"};
constexpr KeyName kDeepSeekKeyNames[] = {
    // MLA's latent is one shared head: the common num_key_value_heads
    // (which transformers leaves at its default even when it does not
    // divide the heads) is no geometry here.
    {"num_key_value_heads", "(num_key_value_heads: unused by MLA)"}};

constexpr StringLiteral kGptOssFields[] = {
    "attention_bias",    "sliding_window",        "num_local_experts",
    "num_experts",       "num_experts_per_tok",   "swiglu_limit",
    "swiglu_alpha",      "output_router_logits",  "router_aux_loss_coef",
    "experts_per_token", "initial_context_length"};
/// Keys transformers' gpt-oss reads for training only, or not at all
/// (hidden_act: the experts' activation is the clamped SwiGLU).
constexpr StringLiteral kGptOssTrainingFields[] = {
    "output_router_logits", "router_aux_loss_coef", "experts_per_token",
    "initial_context_length", "hidden_act"};

constexpr StringLiteral kMixtralFields[] = {
    "num_local_experts",   "num_experts",          "num_experts_per_tok",
    "router_jitter_noise", "output_router_logits", "router_aux_loss_coef"};
constexpr StringLiteral kQwen2MoeFields[] = {"use_sliding_window",
                                             "max_window_layers",
                                             "qkv_bias",
                                             "num_experts",
                                             "num_experts_per_tok",
                                             "moe_intermediate_size",
                                             "shared_expert_intermediate_size",
                                             "norm_topk_prob",
                                             "decoder_sparse_step",
                                             "mlp_only_layers",
                                             "output_router_logits",
                                             "router_aux_loss_coef"};
constexpr StringLiteral kQwen3MoeFields[] = {
    "attention_bias",        "use_sliding_window",   "max_window_layers",
    "num_experts",           "num_local_experts",    "num_experts_per_tok",
    "moe_intermediate_size", "norm_topk_prob",       "decoder_sparse_step",
    "mlp_only_layers",       "output_router_logits", "router_aux_loss_coef"};
/// MoE keys that only matter in training (Qwen2MoeConfig and
/// Qwen3MoeConfig have no router_jitter_noise).
constexpr StringLiteral kMixtralTrainingFields[] = {
    "router_jitter_noise", "output_router_logits", "router_aux_loss_coef"};
constexpr StringLiteral kQwenMoeTrainingFields[] = {"output_router_logits",
                                                    "router_aux_loss_coef"};

constexpr StringLiteral kLlamaFields[] = {"attention_bias", "mlp_bias"};
constexpr StringLiteral kGraniteFields[] = {
    "attention_bias",       "mlp_bias",       "embedding_multiplier",
    "attention_multiplier", "logits_scaling", "residual_multiplier"};
constexpr StringLiteral kQwen2Fields[] = {"use_sliding_window",
                                          "max_window_layers", "use_mrope"};
constexpr StringLiteral kQwen3Fields[] = {
    "attention_bias", "use_sliding_window", "max_window_layers"};
constexpr StringLiteral kSmolLM3Fields[] = {
    "attention_bias",         "mlp_bias",           "no_rope_layers",
    "no_rope_layer_interval", "use_sliding_window", "max_window_layers"};
constexpr StringLiteral kOlmo2Fields[] = {"attention_bias"};
constexpr StringLiteral kGlmFields[] = {"attention_bias"};
constexpr StringLiteral kStarcoder2Fields[] = {"use_bias", "mlp_type"};
constexpr StringLiteral kInternLM2Fields[] = {"bias"};
constexpr StringLiteral kPhi3Fields[] = {"original_max_position_embeddings",
                                         "attention_bias",
                                         "mlp_bias",
                                         "lm_head_bias",
                                         "full_attn_mod",
                                         "interpolate_factor"};
constexpr StringLiteral kFalconFields[] = {
    "alibi",
    "apply_residual_connection_post_layernorm",
    "bias",
    "multi_query",
    "new_decoder_architecture",
    "parallel_attn",
    "num_kv_heads",
    "n_head_kv",
    "num_ln_in_parallel_attn",
    "ffn_hidden_size",
    "activation"};
constexpr StringLiteral kCohereFields[] = {"attention_bias", "logit_scale",
                                           "use_qk_norm"};
constexpr StringLiteral kCohere2Fields[] = {"attention_bias",
                                            "logit_scale",
                                            "use_qk_norm",
                                            "sliding_window_pattern",
                                            "cache_implementation",
                                            "use_parallel_block",
                                            "use_gated_activation",
                                            "use_embedding_sharing",
                                            "use_parallel_embedding",
                                            "position_embedding_type",
                                            "rotary_pct",
                                            "order_of_interleaved_layers"};
constexpr StringLiteral kStableLmFields[] = {"use_qkv_bias", "qk_layernorm",
                                             "use_parallel_residual"};
constexpr StringLiteral kGemma3Fields[] = {"attention_bias",
                                           "hidden_activation",
                                           "use_bidirectional_attention",
                                           "query_pre_attn_scalar",
                                           "attn_logit_softcapping",
                                           "final_logit_softcapping",
                                           "sliding_window_pattern",
                                           "rope_local_base_freq",
                                           "cache_implementation"};
constexpr StringLiteral kGemma2Fields[] = {"attention_bias",
                                           "hidden_activation",
                                           "use_bidirectional_attention",
                                           "query_pre_attn_scalar",
                                           "attn_logit_softcapping",
                                           "final_logit_softcapping",
                                           "sliding_window_size",
                                           "cache_implementation"};
constexpr StringLiteral kGemmaFields[] = {"attention_bias", "hidden_activation",
                                          "use_bidirectional_attention"};

constexpr StringLiteral kGpt2Fields[] = {"n_embd",
                                         "n_layer",
                                         "n_head",
                                         "n_positions",
                                         "n_inner",
                                         "activation_function",
                                         "scale_attn_weights",
                                         "scale_attn_by_inverse_layer_idx",
                                         "reorder_and_upcast_attn",
                                         "add_cross_attention"};
/// GPT2Config's attribute_map, and its names of the MLP width and activation.
constexpr KeyName kGpt2KeyNames[] = {{"hidden_size", "n_embd"},
                                     {"num_hidden_layers", "n_layer"},
                                     {"num_attention_heads", "n_head"},
                                     {"max_position_embeddings", "n_positions"},
                                     {"intermediate_size", "n_inner"},
                                     {"hidden_act", "activation_function"}};

const FamilySpec kFamilies[] = {
    {"llama", kLlamaFields, 2048, "silu", false, 1e4, "rms_norm_eps", 1e-6,
     configureLlama},
    {"mistral", kLlamaFields, 4096 * 32, "silu", false, 1e4, "rms_norm_eps",
     1e-6, configureMistral},
    {"qwen2", kQwen2Fields, 32768, "silu", false, 1e4, "rms_norm_eps", 1e-6,
     configureQwen2},
    {"qwen3", kQwen3Fields, 32768, "silu", false, 1e4, "rms_norm_eps", 1e-6,
     configureQwen3},
    {"gemma", kGemmaFields, 8192, "gelu_pytorch_tanh", true, 1e4,
     "rms_norm_eps", 1e-6, configureGemma},
    {"granite", kGraniteFields, 2048, "silu", false, 1e4, "rms_norm_eps", 1e-6,
     configureGranite},
    {"smollm3", kSmolLM3Fields, 32768, "silu", true, 2e6, "rms_norm_eps", 1e-6,
     configureSmolLM3},
    {"olmo2", kOlmo2Fields, 2048, "silu", false, 1e4, "rms_norm_eps", 1e-5,
     configureOlmo2},
    {"gemma2", kGemma2Fields, 8192, "gelu_pytorch_tanh", true, 1e4,
     "rms_norm_eps", 1e-6, configureGemma2},
    {"gemma3_text", kGemma3Fields, 131072, "gelu_pytorch_tanh", true, 1e6,
     "rms_norm_eps", 1e-6, configureGemma3},
    {"stablelm", kStableLmFields, 4096, "silu", false, 1e4, "layer_norm_eps",
     1e-5, configureStableLm},
    {"glm", kGlmFields, 131072, "silu", false, 1e4, "rms_norm_eps", 1.5625e-7,
     configureGlm},
    {"glm4", kGlmFields, 131072, "silu", false, 1e4, "rms_norm_eps", 1.5625e-7,
     configureGlm4},
    {"cohere", kCohereFields, 8192, "silu", true, 5e5, "layer_norm_eps", 1e-5,
     configureCohere},
    {"cohere2", kCohere2Fields, 8192, "silu", true, 1e4, "layer_norm_eps", 1e-5,
     configureCohere2},
    {"starcoder2", kStarcoder2Fields, 4096, "gelu_pytorch_tanh", true, 1e4,
     "norm_epsilon", 1e-5, configureStarcoder2},
    {"falcon", kFalconFields, 2048, "gelu", true, 1e4, "layer_norm_epsilon",
     1e-5, configureFalcon},
    {"internlm2", kInternLM2Fields, 2048, "silu", false, 1e4, "rms_norm_eps",
     1e-6, configureInternLM2},
    {"phi3", kPhi3Fields, 4096, "silu", false, 1e4, "rms_norm_eps", 1e-5,
     configurePhi3},
    {"gpt2", kGpt2Fields, 1024, "gelu_new", true, 1e4, "layer_norm_epsilon",
     1e-5, configureGpt2, kGpt2KeyNames},
    {"mixtral",
     kMixtralFields,
     4096 * 32,
     "silu",
     false,
     1e6,
     "rms_norm_eps",
     1e-5,
     configureMixtral,
     {},
     kMixtralTrainingFields},
    {"qwen2_moe",
     kQwen2MoeFields,
     32768,
     "silu",
     false,
     1e4,
     "rms_norm_eps",
     1e-6,
     configureQwen2Moe,
     {},
     kQwenMoeTrainingFields},
    {"qwen3_moe",
     kQwen3MoeFields,
     32768,
     "silu",
     false,
     1e4,
     "rms_norm_eps",
     1e-6,
     configureQwen3Moe,
     {},
     kQwenMoeTrainingFields},
    {"deepseek_v2", kDeepSeekV2Fields, 2048, "silu", false, 1e4, "rms_norm_eps",
     1e-6, configureDeepSeekV2, kDeepSeekKeyNames, kDeepSeekNoEffectFields},
    {"deepseek_v3", kDeepSeekV3Fields, 4096, "silu", false, 1e4, "rms_norm_eps",
     1e-6, configureDeepSeekV3, kDeepSeekKeyNames, kDeepSeekNoEffectFields},
    {"llama4_text",
     kLlama4TextFields,
     4096 * 32,
     "silu",
     false,
     500000.0,
     "rms_norm_eps",
     1e-5,
     configureLlama4Text,
     {},
     kMixtralTrainingFields},
    {"gpt_oss",
     kGptOssFields,
     131072,
     "silu",
     false,
     150000,
     "rms_norm_eps",
     1e-5,
     configureGptOss,
     {},
     kGptOssTrainingFields},
};

/// HF activation names (ACT2FN) of the gated MLP's gate.
struct ActivationName {
  StringLiteral name;
  MlpActivation activation;
};
constexpr ActivationName kActivations[] = {
    {"silu", MlpActivation::Silu},
    {"swish", MlpActivation::Silu},
    {"gelu", MlpActivation::Gelu},
    {"gelu_pytorch_tanh", MlpActivation::GeluTanh},
    {"gelu_new", MlpActivation::GeluTanh},
};

} // namespace

ArrayRef<FamilySpec> families() {
  static const std::vector<FamilySpec> all = [] {
    std::vector<FamilySpec> v(std::begin(kFamilies), std::end(kFamilies));
    llvm::append_range(v, hybridFamilies());
    return v;
  }();
  return all;
}

StringRef FamilySpec::keyFor(StringRef common) const {
  const KeyName *it = llvm::find_if(
      keyNames, [&](const KeyName &k) { return k.common == common; });
  return it == keyNames.end() ? common : StringRef(it->own);
}

const FamilySpec *lookupFamily(StringRef modelType) {
  ArrayRef<FamilySpec> all = families();
  const FamilySpec *it = llvm::find_if(
      all, [&](const FamilySpec &f) { return f.modelType == modelType; });
  return it == all.end() ? nullptr : it;
}

std::string familyNames() {
  return llvm::join(llvm::map_range(families(),
                                    [](const FamilySpec &f) -> StringRef {
                                      return f.modelType;
                                    }),
                    ", ");
}

std::optional<MlpActivation> activationNamed(StringRef name) {
  const ActivationName *it = llvm::find_if(
      kActivations, [&](const ActivationName &a) { return a.name == name; });
  if (it == std::end(kActivations))
    return std::nullopt;
  return it->activation;
}

Error readActivation(const JSONFields &f, StringRef key, ModelConfig &cfg) {
  std::optional<StringRef> name;
  PIMC_ASSIGN_OR_RETURN(name, f.string(key));
  if (!name)
    return Error::success();
  std::optional<MlpActivation> activation = activationNamed(*name);
  if (!activation)
    return f.fieldError(
        key, "unsupported activation '" + *name + "' (supported: " +
                 llvm::join(
                     llvm::map_range(kActivations,
                                     [](const ActivationName &a) -> StringRef {
                                       return a.name;
                                     }),
                     ", ") +
                 ")");
  cfg.hiddenAct = name->str();
  cfg.mlpActivation = *activation;
  return Error::success();
}

} // namespace pimc::ckpt
