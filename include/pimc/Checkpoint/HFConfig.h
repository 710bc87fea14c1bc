//===- HFConfig.h - Hugging Face config.json -> ModelConfig -----*- C++ -*-===//
//
// Parses a checkpoint's config.json into a typed ModelConfig. Every field
// that changes the model's semantics is either honoured (stored here) or
// rejected with an error naming the field; fields with no effect on the
// computation (tokenizer ids, training settings, ...) are accepted and
// ignored through an explicit allow-list.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_CHECKPOINT_HFCONFIG_H
#define PIMC_CHECKPOINT_HFCONFIG_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "llvm/ADT/SmallVector.h"

namespace pimc::ckpt {

/// `rope_scaling` / `rope_parameters` (specs/llm-architectures.md section 3).
struct RopeScaling {
  enum class Kind { Default, Linear, Dynamic, Yarn, Llama3, LongRope };
  Kind kind = Kind::Default;
  double theta = 10000.0;           // rope_theta
  double partialRotaryFactor = 1.0; // partial_rotary_factor
  bool interleaved = false; // pairs (2i, 2i+1) rotate (GPT-J), not (i, i+d/2)
  std::optional<double> factor;
  std::optional<int64_t> originalMaxPositionEmbeddings;
  std::optional<double> lowFreqFactor, highFreqFactor; // llama3
  std::optional<double> betaFast, betaSlow;            // yarn (32, 1)
  std::optional<double> attentionFactor;               // yarn
  std::optional<double> mscale, mscaleAllDim;          // yarn
  bool truncate = true;                                // yarn
  std::vector<double> shortFactor, longFactor;         // longrope
};

/// GPTQ `quantization_config` (specs/llm-architectures.md section 5.2).
struct GptqConfig {
  int bits = 4;            // 4 or 8
  int64_t groupSize = 128; // -1 = one group over all of K (per-channel)
  bool sym = true;
  bool zeroMinusOne = true; // checkpoint_format "gptq" (true) / "gptq_v2"
};

/// How a norm applies its weight: `w * x_hat` (Llama) or `(1 + w) * x_hat`
/// (Gemma, whose weights are stored as offsets from 1).
enum class NormWeight { Scale, OnePlusScale };

/// The gate activation of the gated MLP (HF `hidden_act` names: silu, gelu
/// (erf), gelu_pytorch_tanh).
enum class MlpActivation { Silu, Gelu, GeluTanh };

/// The norms of a decoder block, by the tensor name under
/// `model.layers.N.` (empty: no norm in that place): before and after the
/// attention, before and after the MLP. An "after" norm applies to the
/// branch's output before the residual add. Llama (pre-norm): input_layernorm
/// and post_attention_layernorm before the two branches; OLMo-2 (post-norm):
/// post_attention_layernorm and post_feedforward_layernorm after them.
struct BlockNorms {
  std::string attnIn = "input_layernorm";
  std::string attnOut;
  std::string mlpIn = "post_attention_layernorm";
  std::string mlpOut;
  bool isPreNorm() const {
    return attnIn == "input_layernorm" && attnOut.empty() &&
           mlpIn == "post_attention_layernorm" && mlpOut.empty();
  }
};

/// The norm of the blocks and the final norm: RMSNorm (weight) or LayerNorm
/// (mean-centred; weight, and a bias when the family has one).
enum class NormKind { RMSNorm, LayerNorm };

/// A non-gated MLP `down(act(up x + b) ) + b`: its projections' tensor names
/// under `model.layers.N.mlp.` (starcoder2: c_fc, c_proj).
struct PlainMlp {
  std::string up, down;
};

/// The checkpoint's tensor names where a family's differ from Llama's
/// (falcon: transformer.h.N.self_attention.query_key_value, ...).
struct TensorNames {
  std::string layers = "model.layers"; // "<layers>.<i>." prefixes a layer
  std::string attn = "self_attn";
  std::string q = "q_proj", k = "k_proj", v = "v_proj", o = "o_proj";
  std::string qkv = "qkv_proj"; // fusedQKV
  std::string mlp = "mlp";
  std::string gate = "gate_proj", up = "up_proj", down = "down_proj";
  std::string gateUp = "gate_up_proj"; // fusedGateUp
  std::string embed = "model.embed_tokens";
  std::string finalNorm = "model.norm";
  std::string head = "lm_head";
  std::string positions; // learnedPositions: the position table (wpe)
  bool isLlama() const { return *this == TensorNames(); }
  bool operator==(const TensorNames &x) const {
    return std::tie(layers, attn, q, k, v, o, qkv, mlp, gate, up, down, gateUp,
                    embed, finalNorm, head, positions) ==
           std::tie(x.layers, x.attn, x.q, x.k, x.v, x.o, x.qkv, x.mlp, x.gate,
                    x.up, x.down, x.gateUp, x.embed, x.finalNorm, x.head,
                    x.positions);
  }
};

/// How a fused QKV tensor orders its rows: q|k|v (phi3, falcon-7b), or per
/// KV group [q_1..q_r, k, v] with r = heads / kv heads (falcon's new
/// decoder architecture; falcon-rw's per-head [q, k, v] is r = 1).
enum class QKVLayout { Contiguous, Grouped };

/// A sparse mixture-of-experts block (specs/llm-architectures.md section
/// 4.1): softmax over the router's logits, the top-k experts, each a gated
/// MLP of width `intermediateSize`, weighted by their probabilities
/// (renormalised over the k when `renormalize`), plus an optional shared
/// expert whose output is gated by sigmoid(shared_expert_gate . x)
/// (Qwen2-MoE). Tensor names under `model.layers.N.<block>.`: the router
/// `<router>.weight` [E, H], expert e's `<experts>.<e>.<gate|up|down>.weight`
/// (transformers' save_pretrained layout, one tensor per expert), the
/// shared expert's `<shared>.<gate|up|down>.weight` (the dense MLP's names)
/// and `<sharedGate>.weight` [1, H].
struct MoEConfig {
  int64_t numExperts = 0;
  int64_t topK = 0;
  int64_t intermediateSize = 0; // each routed expert's width
  bool renormalize = false;
  int64_t sharedIntermediateSize = 0; // 0: no shared expert
  bool sharedExpertGate = false;
  std::string block = "mlp"; // mixtral: block_sparse_moe
  std::string router = "gate";
  std::string experts = "experts";
  std::string gate = "gate_proj", up = "up_proj", down = "down_proj";
  std::string shared = "shared_expert";
  std::string sharedGate = "shared_expert_gate";
  /// The router has a bias (`<router>.bias`, gpt-oss).
  bool routerBias = false;
  /// Top-k over the logits, then softmax over the k (gpt-oss); else softmax
  /// over all experts, then top-k.
  bool topkThenScore = false;
  /// gpt-oss's expert tensors: all experts in one tensor per projection,
  /// stored [in, out] (`y = x @ W`), gate and up interleaved in the columns
  /// of `<experts>.gate_up_proj` [E, H, 2I] (gate 0::2, up 1::2), down in
  /// `<experts>.down_proj` [E, I, H], each with its bias (`_bias` [E, 2I],
  /// [E, H]). Read as views (WeightStore's `t[e]^T[0:2I:2]`).
  bool fusedInterleaved = false;
  /// Llama 4's expert tensors: `<experts>.gate_up_proj` [E, H, 2I] (gate
  /// the first I columns, up the last I), `<experts>.down_proj` [E, I, H],
  /// no biases; read as views (`gate_up_proj[e]^T[0:I]`).
  bool fusedConcatenated = false;
  /// Granite-4.0-H's expert tensors: `<block>.<gate>.weight` [E, 2I, H]
  /// (per expert the gate rows, then the up rows, nn.Linear's layout) and
  /// `<block>.<down>.weight` [E, H, I]; read as views (`t[e][0:I]`).
  bool stackedLinear = false;
  /// The shared expert lives beside the MoE block, under the layer
  /// (`<layer>.<shared>.`), with gate and up fused in `<sharedGateUp>`
  /// [2Is, H] (gate rows first) and down in `<sharedDown>` (Granite-4.0-H's
  /// shared_mlp.input_linear / output_linear); always on, ungated.
  bool sharedAtLayer = false;
  std::string sharedGateUp, sharedDown;
  /// The routing weight scales the expert's input, not its output (Llama 4;
  /// llm.moe weight_on_input).
  bool weightOnInput = false;
  /// gpt-oss's clamped SwiGLU (swiglu_limit, swiglu_alpha) instead of the
  /// model's gate activation.
  std::optional<double> swigluLimit, swigluAlpha;
  /// DeepSeek's routing (spec 4.4, 4.5): sigmoid scores (else softmax);
  /// `<router>.e_score_correction_bias` [E] added for selection only;
  /// groups of E / nGroup experts of which the topkGroup best (each scored
  /// by its groupScoreTopk largest) are eligible; an epsilon in the
  /// renormalisation; the weights scaled by routedScalingFactor.
  bool sigmoidScores = false;
  bool correctionBias = false;
  int64_t nGroup = 1, topkGroup = 1, groupScoreTopk = 1;
  double renormalizeEpsilon = 0.0, routedScalingFactor = 1.0;
  /// One entry per layer: true for a sparse (MoE) layer, false for a layer
  /// with the dense MLP (mlp_only_layers, decoder_sparse_step).
  std::vector<bool> sparse;
  bool isSparse(int64_t layer) const {
    return size_t(layer) < sparse.size() && sparse[layer];
  }
};

/// Multi-head latent attention (DeepSeek-V2/V3, spec 2.10): the query
/// through a rank-qLoraRank bottleneck (q_a_proj, q_a_layernorm, q_b_proj;
/// 0: one q_proj), keys and values from a kvLoraRank latent plus one
/// shared ropeDim-wide rotary key (kv_a_proj_with_mqa, kv_a_layernorm,
/// kv_b_proj), query and key heads of nopeDim + ropeDim, value heads of
/// valueDim. Imported in the absorbed form over a latent cache.
struct MLAConfig {
  int64_t qLoraRank = 0;
  int64_t kvLoraRank = 0, ropeDim = 0, nopeDim = 0, valueDim = 0;
  /// The rope dims rotate in pairs (2j, 2j + 1) (DeepSeek's original
  /// layout; V3's rope_interleave), else (j, j + d/2).
  bool ropeInterleaved = true;
};

/// A Mamba mixer (spec 2.15, 2.28, 2.30-2.32), tensors under
/// `<layer>.<prefix>.`: in_proj, conv1d, the scan's dt_bias / A_log / D,
/// the gate's norm, out_proj.
struct MambaConfig {
  /// Mamba-1 (Jamba): a scan per channel (dInner heads of dim 1), A_log
  /// [dInner, N], dt from x_proj through dt_proj (rank dtRank), the
  /// dt/B/C RMS norms; in_proj gives [x | z]. Mamba-2: numHeads heads of
  /// headDim, nGroups groups of B and C; in_proj gives [z | x B C | dt].
  bool mamba1 = false;
  int64_t dInner = 0, numHeads = 0, headDim = 0, nGroups = 1;
  int64_t stateSize = 0, convKernel = 4, dtRank = 0;
  bool convBias = true, inProjBias = false, outProjBias = false;
  /// time_step_limit (dtMax infinite: no upper clamp).
  double dtMin = 0.0, dtMax = 0.0;
  bool dtClampMax = false;
  /// The output gate: y * silu(z) alone, or a gated RMS norm
  /// (`norm.weight`) applied before or after the gate, over groups of
  /// dInner / nGroups features when normGrouped, else the full width.
  enum class Gate { Silu, NormBeforeGate, GateBeforeNorm };
  Gate gate = Gate::GateBeforeNorm;
  bool normGrouped = false;
  std::string prefix = "mamba";
  /// Falcon-H1's muP: x * inMultiplier before in_proj, in_proj's [z, x, B,
  /// C, dt] segments times projMultipliers, the mixer's output times
  /// outMultiplier.
  std::optional<double> inMultiplier, outMultiplier;
  std::optional<std::array<double, 5>> projMultipliers;
  int64_t convChannels() const {
    return mamba1 ? dInner : dInner + 2 * nGroups * stateSize;
  }
};
/// Qwen3-Next's Gated DeltaNet (spec 2.29), tensors under
/// `<layer>.<prefix>.`: in_proj_qkvz (rows per key head [q | k | v | z]),
/// in_proj_ba (rows per key head [b | a]), conv1d over [q | k | v], dt_bias,
/// A_log, the per-head gated norm (norm.weight [dv]), out_proj.
struct DeltaNetConfig {
  int64_t keyHeads = 0, valueHeads = 0, keyDim = 0, valueDim = 0;
  int64_t convKernel = 4;
  std::string prefix = "linear_attn";
  int64_t keyWidth() const { return keyHeads * keyDim; }
  int64_t valueWidth() const { return valueHeads * valueDim; }
  int64_t convChannels() const { return 2 * keyWidth() + valueWidth(); }
};
/// How one decoder layer's attention differs from the others: `layer_types`
/// (full or sliding attention) and NoPE layers (SmolLM3's no_rope_layers).
struct LayerAttention {
  bool sliding = false; // the model's slidingWindow applies to this layer
  bool rope = true;     // false: no rotary embedding (NoPE)
  bool chunked = false; // the model's attentionChunkSize applies
  /// The layer's token mixer: attention, the model's recurrent mixer
  /// (ModelConfig::mamba or deltaNet), or both in parallel on the same
  /// normed input, their outputs summed (Falcon-H1).
  enum class Mixer { Attention, Recurrent, Parallel };
  Mixer mixer = Mixer::Attention;
  bool hasAttention() const { return mixer != Mixer::Recurrent; }
  bool hasRecurrent() const { return mixer != Mixer::Attention; }
};
/// Falcon-H1's muP multipliers around attention and the MLP (1 when
/// unset): the attention's input, its keys (before RoPE, so the cache
/// holds them scaled) and output; the MLP's gate before its activation and
/// its output.
struct MuPMultipliers {
  std::optional<double> attentionIn, key, attentionOut, mlpGate, mlpDown;
};

/// Llama 4's attention temperature tuning on the NoPE layers: the query at
/// position p times log1p(floor((p + 1) / floorScale)) * scale + 1.
struct TemperatureTuning {
  int64_t floorScale = 8192;
  double scale = 0.1;
};

struct ModelConfig {
  std::string modelType; // a family of Families.h
  /// A learned sink logit per query head (`self_attn.sinks`, gpt-oss).
  bool attentionSinks = false;
  /// Chunked attention on the layers LayerAttention::chunked marks (Llama
  /// 4's attention_chunk_size): keys of the query's own chunk only.
  std::optional<int64_t> attentionChunkSize;
  /// Llama 4's QK norm: a weightless RMS norm (eps normEps) on q and k
  /// after RoPE, on the RoPE layers only.
  bool l2QkNorm = false;
  /// Llama 4's temperature tuning on the NoPE layers.
  std::optional<TemperatureTuning> temperatureTuning;
  /// Set: every layer's attention is MLA (deepseek_v2, deepseek_v3).
  std::optional<MLAConfig> mla;
  /// The recurrent mixer of the layers whose LayerAttention::mixer has
  /// one (falcon_h1, granitemoehybrid, jamba: Mamba; qwen3_next: DeltaNet).
  std::optional<MambaConfig> mamba;
  std::optional<DeltaNetConfig> deltaNet;
  /// Qwen3-Next's gated attention: q_proj gives per head [q | gate], and
  /// the attention output is multiplied by sigmoid(gate) before o_proj.
  bool attentionOutputGate = false;
  MuPMultipliers mup;
  int64_t hiddenSize = 0;
  int64_t intermediateSize = 0;
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0; // defaults to numHeads
  int64_t headDim = 0;    // defaults to hiddenSize / numHeads
  int64_t vocabSize = 0;
  int64_t maxPositionEmbeddings = 2048;
  double normEps = 1e-6; // the family's norm epsilon (Families.h normEpsKey)
  std::string hiddenAct = "silu"; // the config's name of mlpActivation
  MlpActivation mlpActivation = MlpActivation::Silu;
  NormWeight normWeight = NormWeight::Scale;
  /// h0 = embedding(ids) * embeddingScale (Gemma: sqrt(hidden_size)).
  std::optional<double> embeddingScale;
  /// The softmax scale, when not head_dim^-0.5 (Granite's muP multiplier).
  std::optional<double> attentionScale;
  /// The softmax scale of layer i is divided by i + 1 (GPT-2's
  /// scale_attn_by_inverse_layer_idx).
  bool attentionScaleByInverseLayer = false;
  /// h += residualMultiplier * branch, for the attention and MLP branches.
  std::optional<double> residualMultiplier;
  /// logits = logitScale * lm_head(h) (Granite: 1 / logits_scaling).
  std::optional<double> logitScale;
  /// Gemma 2: attention scores s become c * tanh(s / c) before the mask and
  /// softmax (attn_logit_softcapping).
  std::optional<double> attnLogitSoftcap;
  /// Gemma 2: logits become c * tanh(logits / c) (final_logit_softcapping).
  std::optional<double> finalLogitSoftcap;
  bool tieWordEmbeddings = false;
  bool attentionBias = false; // q/k/v/o bias (llama); qwen2 forces q/k/v
  bool qkvBias = false;       // q/k/v projections carry a bias
  bool oBias = false;         // o_proj carries a bias
  bool mlpBias = false;
  bool qkNorm = false;      // qwen3: per-head RMSNorm on q and k
  bool qkNormWhole = false; // olmo2: the q/k norm spans the whole projection
  /// stablelm: the q/k norms are LayerNorms without bias, one weight per
  /// head (q_layernorm.norms.<h>.weight).
  bool qkNormPerHeadLayerNorm = false;
  /// cohere: those per-head weights are one tensor q_norm.weight [heads, hd].
  bool qkNormStacked = false;
  /// cohere2: RoPE only on the sliding layers (the full layers are NoPE).
  bool ropeOnlySliding = false;
  NormKind normKind = NormKind::RMSNorm;
  bool normBias = false; // LayerNorm: the norms carry a bias
  BlockNorms norms;
  /// The attention and the MLP read the same block input (the MLP through
  /// norms.mlpIn when set, else through norms.attnIn's output), and both
  /// branches are added to it: h + attn(x) + mlp(x).
  bool parallelBlock = false;
  /// Fused projections, read as row ranges (rowSliceName): q|k|v rows of
  /// self_attn.qkv_proj, gate|up rows of mlp.gate_up_proj.
  bool fusedQKV = false;
  QKVLayout qkvLayout = QKVLayout::Contiguous;
  bool fusedGateUp = false;
  /// The projection weights are transformers Conv1D weights, stored
  /// [in, out] (GPT-2); the importer reads them as their transposes
  /// (transposedName), in nn.Linear's [out, in].
  bool conv1dWeights = false;
  /// h0 = embed(ids) + positions[pos]: a learned absolute position table
  /// `<names.positions>.weight` [maxPositionEmbeddings, hidden] (GPT-2's
  /// wpe); every layer is then without RoPE.
  bool learnedPositions = false;
  /// ALiBi (Falcon-RW): every layer is without RoPE and llm.attention gets
  /// the heads' slopes (alibiSlopes(numHeads), Numerics/Kernels.h).
  bool alibi = false;
  TensorNames names;
  /// Set: the MLP is plain (mlpActivation between two projections, biases
  /// when mlpBias), not gated.
  std::optional<PlainMlp> plainMlp;
  std::optional<int64_t> slidingWindow; // keys s with t - W < s <= t
  /// One entry per layer (numLayers of them once parsed).
  std::vector<LayerAttention> layers;
  /// The RoPE of the sliding layers when it is not `rope` (gemma3: the
  /// local base rope_local_base_freq, unscaled).
  std::optional<RopeScaling> slidingRope;
  std::string torchDtype = "float32";
  RopeScaling rope;
  /// The rope types the family's config class accepts (Phi-3: default and
  /// longrope); empty: every type pimc knows.
  llvm::SmallVector<RopeScaling::Kind, 2> ropeKinds;
  std::optional<GptqConfig> gptq;
  /// Set: the layers MoEConfig::sparse marks have a sparse MoE block
  /// instead of the dense MLP (mixtral, qwen2_moe, qwen3_moe).
  std::optional<MoEConfig> moe;
};

/// An error about one config field; `field` is its dotted path
/// ("rope_scaling.rope_type"), the message is the whole diagnostic.
class ConfigFieldError : public llvm::ErrorInfo<ConfigFieldError> {
public:
  static char ID;
  ConfigFieldError(std::string field, std::string message)
      : field(std::move(field)), message(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
  std::string field, message;
};

/// One top-level config.json key, as `pimc support` reports it.
struct ConfigFeature {
  /// NotChecked: the analysis stopped (ConfigSupport::fatal) before it.
  enum class Status { Honoured, NoEffect, Unsupported, NotChecked };
  std::string field;
  std::string value; // compact JSON, shortened
  Status status = Status::Honoured;
  std::string reason; // Unsupported: the importer's diagnostic
};
struct ConfigSupport {
  std::string modelType;
  std::vector<ConfigFeature> features; // in key order
  /// Set when the analysis could not go on (invalid JSON, a required or
  /// family-selecting field unsupported): the importer's diagnostic.
  std::string fatal;
  bool supported() const;
};

/// The config fields that set the model's numerics, as canonical JSON (keys
/// sorted, compact): what a compiled program records about its model
/// (pimsim::ModelIdentity::config) and what the runtime compares against the
/// checkpoint it is given.
std::string semanticConfigJSON(const ModelConfig &config);

/// Every feature of a config.json, each honoured, without effect, or
/// unsupported with the reason: the importer's own checks are run
/// repeatedly, dropping each rejected key, so every problem is listed, not
/// only the first. Errors when the file cannot be read or is not a JSON
/// object.
llvm::Expected<ConfigSupport> analyzeConfigSupport(llvm::StringRef configPath);

/// The top-level object of `<dir>/config.json` (or the given file), not
/// interpreted; errors name the file.
llvm::Expected<llvm::json::Object> readConfigObject(llvm::StringRef configPath);

/// Parses and validates `<dir>/config.json` (or the given file). Errors
/// name the file and the offending field.
llvm::Expected<ModelConfig> parseModelConfig(llvm::StringRef configPath);
/// Same, from JSON text; `sourceName` is used in diagnostics.
llvm::Expected<ModelConfig> parseModelConfigText(llvm::StringRef text,
                                                 llvm::StringRef sourceName);

} // namespace pimc::ckpt

#endif // PIMC_CHECKPOINT_HFCONFIG_H
