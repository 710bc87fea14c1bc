//===- ArchFeatures.cpp - architecture features of a config.json ----------===//
//
// One detector per column. A detector reads the config's keys, under the
// names the families use for them, and the rules some families keep in
// their code (specs/llm-architectures.md, the addendum's summary table),
// and says what the config uses and whether the HF importer builds it.
//
//===----------------------------------------------------------------------===//
#include "pimc/Checkpoint/ArchFeatures.h"
#include "pimc/Checkpoint/Families.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

using namespace llvm;

namespace pimc::ckpt {

namespace {

using Status = FeatureUse::Status;

constexpr ArchFeature kFeatures[] = {
    {"family", "model_type in pimc's family registry (Families.h)"},
    {"attention", "attention kind: MHA, GQA, MQA, MLA"},
    {"biases", "biases of the attention projections and the MLP"},
    {"fused", "fused QKV or gate/up projection tensors"},
    {"norm", "norm kind: RMSNorm, (1+w) RMSNorm, LayerNorm"},
    {"placement", "norm placement: pre, post, sandwich, parallel blocks"},
    {"mlp", "MLP kind: gated (SwiGLU, GeGLU) or plain GELU"},
    {"multipliers", "embedding, attention, residual and logit multipliers"},
    {"softcap", "attention and final-logit softcapping"},
    {"qk-norm", "QK norms: per head, whole projection, LayerNorm"},
    {"layers", "per-layer patterns: sliding/full, NoPE, local RoPE base"},
    {"positions", "RoPE (half-split, interleaved, partial), ALiBi, learned"},
    {"rope-scaling", "RoPE scaling: linear, dynamic, yarn, llama3, longrope"},
    {"moe", "mixture of experts"},
    {"recurrent", "recurrent layers: Mamba, gated DeltaNet"},
    {"quant", "quantization_config"},
    {"other", "other config keys the importer rejects"},
};

/// The column a rejected config key belongs to ("other" when none).
StringRef columnOfKey(StringRef key) {
  return StringSwitch<StringRef>(key)
      .Cases({"attention_bias", "mlp_bias"}, "biases")
      .Cases({"hidden_act", "hidden_activation"}, "mlp")
      .Cases({"embedding_multiplier", "attention_multiplier",
              "residual_multiplier", "logits_scaling"},
             "multipliers")
      .Cases({"layer_types", "sliding_window", "use_sliding_window",
              "max_window_layers", "no_rope_layers", "no_rope_layer_interval"},
             "layers")
      .Cases({"rope_theta", "partial_rotary_factor"}, "positions")
      .Cases({"rope_scaling", "rope_parameters", "use_mrope"}, "rope-scaling")
      .Cases({"num_local_experts", "num_experts", "num_experts_per_tok",
              "moe_intermediate_size", "shared_expert_intermediate_size",
              "norm_topk_prob", "decoder_sparse_step", "mlp_only_layers"},
             "moe")
      .Case("quantization_config", "quant")
      .Case("model_type", "family")
      .Default("other");
}

/// The config as the detectors read it: null values are absent.
class View {
public:
  explicit View(const json::Object &o) : o(o) {
    if (auto s = string("model_type"))
      type = *s;
  }
  /// Whether the key is there at all (null included).
  bool present(StringRef k) const { return o.get(k); }
  const json::Value *get(StringRef k) const {
    const json::Value *v = o.get(k);
    return v && v->kind() != json::Value::Null ? v : nullptr;
  }
  std::optional<double> number(StringRef k) const {
    return get(k) ? get(k)->getAsNumber() : std::nullopt;
  }
  bool flag(StringRef k, bool dflt = false) const {
    std::optional<bool> b = get(k) ? get(k)->getAsBoolean() : std::nullopt;
    return b.value_or(dflt);
  }
  std::optional<StringRef> string(StringRef k) const {
    return get(k) ? get(k)->getAsString() : std::nullopt;
  }
  const json::Object *object(StringRef k) const {
    return get(k) ? get(k)->getAsObject() : nullptr;
  }
  bool is(std::initializer_list<StringRef> types) const {
    return llvm::is_contained(types, type);
  }
  StringRef type;

private:
  const json::Object &o;
};

FeatureUse yes(const Twine &value) {
  return {"", Status::Supported, value.str(), ""};
}
FeatureUse lacks(const Twine &value, const Twine &why) {
  return {"", Status::Unsupported, value.str(), why.str()};
}
FeatureUse na() { return {"", Status::NotApplicable, "", ""}; }
/// The dialect has the construct; the importer does not build it.
std::string irOnly(StringRef ops) {
  return ("the llm dialect has it (" + ops +
          "); the HF importer does not build it yet")
      .str();
}
std::string show(double d) { return formatv("{0}", format("%g", d)).str(); }

FeatureUse family(const View &v) {
  if (lookupFamily(v.type))
    return yes(v.type);
  return lacks(v.type.empty() ? "?" : v.type,
               "not a registered family: its hook (Families.cpp), builder "
               "features and tests are missing");
}

FeatureUse attention(const View &v) {
  if (v.get("kv_lora_rank")) {
    if (!v.is({"deepseek_v2", "deepseek_v3"}))
      return lacks("MLA", "multi-head latent attention of " +
                              (v.type.empty() ? "?" : v.type.str()) +
                              ": the HF importer builds it for deepseek_v2 "
                              "and deepseek_v3");
    return yes("MLA, absorbed over the latent cache (PIM: not yet)");
  }
  std::optional<double> nh = v.number("num_attention_heads");
  if (!nh)
    nh = v.number("n_head");
  std::optional<double> nkv = v.number("num_key_value_heads");
  if (!nkv)
    nkv = v.number("num_kv_heads");
  if (!nkv && v.flag("multi_query"))
    nkv = 1;
  if (!nh)
    return yes("?");
  // gpt-oss's learned sink logit per head (llm.attention sinks).
  std::string sinks = v.is({"gpt_oss"}) ? ", sinks" : "";
  if (!nkv || *nkv == *nh)
    return yes("MHA" + sinks);
  if (*nkv == 1)
    return yes("MQA" + sinks);
  return yes("GQA " + show(*nh) + ":" + show(*nkv) + sinks);
}

FeatureUse biases(const View &v) {
  bool all = v.is({"gpt2", "starcoder2"}) && v.flag("use_bias", true);
  bool qkv = all || v.flag("attention_bias") || v.flag("use_qkv_bias") ||
             v.flag("bias") || v.is({"qwen2"}) ||
             (v.is({"qwen2_moe"}) && v.flag("qkv_bias", true));
  bool o = all || (v.flag("attention_bias") && !v.is({"glm", "glm4"})) ||
           (v.is({"internlm2", "falcon"}) && v.flag("bias"));
  bool mlp = all || v.flag("mlp_bias") ||
             (v.is({"internlm2", "falcon"}) && v.flag("bias"));
  if (!qkv && !o && !mlp)
    return na();
  std::string what =
      std::string(qkv ? "q/k/v" : "") + (o ? "/o" : "") + (mlp ? " + MLP" : "");
  bool plain = v.is({"gpt2", "starcoder2", "falcon"});
  if (mlp && !plain)
    return lacks(what, "biases of a gated MLP: llm.gated_mlp has no bias "
                       "operands");
  return yes(what);
}

/// Fused parts are row views (q|k|v, or per KV group [q.., k, v]); GPT-2's
/// Conv1D c_attn is read as row views of its transpose.
FeatureUse fused(const View &v) {
  if (v.is({"phi3"}))
    return yes("qkv_proj, gate_up_proj");
  if (v.is({"glm", "glm4"}))
    return yes("gate_up_proj");
  if (v.is({"falcon"}))
    return yes(v.flag("new_decoder_architecture") ||
                       !v.flag("multi_query", true)
                   ? "query_key_value, grouped per KV head"
                   : "query_key_value");
  if (v.is({"internlm2"}))
    return yes("wqkv, grouped per KV head");
  if (v.is({"gpt2"}))
    return yes("c_attn (Conv1D, transposed)");
  if (v.is({"gpt_oss"}))
    return yes("experts' gate_up_proj (interleaved columns, [in, out])");
  return na();
}

FeatureUse norm(const View &v) {
  if (v.is({"gemma", "gemma2", "gemma3_text"}))
    return yes("RMSNorm (1+w)");
  if (v.is({"cohere", "cohere2"}))
    return yes("LayerNorm, no bias");
  if (v.is({"stablelm", "starcoder2", "falcon", "gpt2"}) ||
      v.get("layer_norm_eps") || v.get("layer_norm_epsilon") ||
      v.get("norm_epsilon"))
    return yes("LayerNorm");
  return yes("RMSNorm");
}

/// Every placement here is a BlockNorms (HFConfig.h) the builder takes.
FeatureUse placement(const View &v) {
  if (v.is({"olmo2"}))
    return yes("post-norm");
  if (v.is({"gemma2", "gemma3_text", "glm4"}))
    return yes("sandwich");
  if (v.is({"cohere", "cohere2"}))
    return yes("parallel, one norm");
  if (v.is({"falcon"}) && v.flag("parallel_attn", true))
    return yes(v.flag("new_decoder_architecture") ? "parallel, two norms"
                                                  : "parallel, one norm");
  if (v.is({"stablelm"}) && v.flag("use_parallel_residual"))
    return yes("parallel, one norm");
  return yes("pre-norm");
}

FeatureUse mlp(const View &v) {
  if (v.is({"starcoder2", "gpt2", "falcon"}))
    return yes("plain GELU");
  if (v.is({"gpt_oss"})) // hidden_act has no effect there
    return yes("clamped SwiGLU experts");
  std::optional<StringRef> act = v.string("hidden_activation");
  if (!act)
    act = v.string("hidden_act");
  if (!act)
    return yes("gated silu");
  if (!activationNamed(*act))
    return lacks("gated " + *act, "activation '" + *act + "' is not supported");
  return yes("gated " + *act);
}

FeatureUse multipliers(const View &v) {
  std::vector<std::string> used, unknown;
  const StringRef known[] = {"embedding_multiplier", "attention_multiplier",
                             "residual_multiplier",  "logits_scaling",
                             "logit_scale",          "query_pre_attn_scalar"};
  for (StringRef k : known)
    if (v.get(k))
      used.push_back(k.str());
  if (v.is({"gemma", "gemma2", "gemma3_text"}))
    used.push_back("embeddings x sqrt(H)");
  // Falcon-H1's muP multipliers (MuPMultipliers, MambaConfig).
  for (StringRef k :
       {"lm_head_multiplier", "key_multiplier", "mlp_multipliers",
        "ssm_multipliers", "attention_in_multiplier",
        "attention_out_multiplier", "ssm_in_multiplier", "ssm_out_multiplier"})
    if (v.get(k))
      (v.is({"falcon_h1"}) ? used : unknown).push_back(k.str());
  if (used.empty() && unknown.empty())
    return na();
  llvm::append_range(used, unknown);
  std::string list = llvm::join(used, ", ");
  if (!unknown.empty())
    return lacks(list, llvm::join(unknown, ", ") + ": not read by any family");
  return yes(list);
}

FeatureUse softcap(const View &v) {
  // Gemma2Config's defaults apply where the keys are absent (a null key is
  // no cap); the attention cap runs on the softmax unit (sfm cap=), the
  // final one as host calls.
  bool gemma2 = v.is({"gemma2"});
  std::vector<std::string> caps;
  auto read = [&](StringRef key, StringRef what, double dflt) {
    if (std::optional<double> c = v.number(key))
      caps.push_back((what + " " + show(*c)).str());
    else if (gemma2 && !v.present(key))
      caps.push_back((what + " " + show(dflt)).str());
  };
  read("attn_logit_softcapping", "attention", 50);
  read("final_logit_softcapping", "final", 30);
  if (caps.empty())
    return na();
  return yes(llvm::join(caps, ", "));
}

FeatureUse qkNorm(const View &v) {
  if (v.is({"qwen3", "qwen3_moe"}))
    return yes("per head, RMSNorm");
  if (v.is({"gemma3_text"}))
    return yes("per head, (1+w) RMSNorm");
  if (v.is({"olmo2"}))
    return yes("whole projection, RMSNorm");
  if (v.flag("qk_layernorm"))
    return yes("per head, LayerNorm");
  if (v.is({"cohere"}) && v.flag("use_qk_norm"))
    return yes("per head, LayerNorm, [heads, head_dim] weight");
  if (v.is({"llama4_text"}) && v.flag("use_qk_norm", true))
    return yes("per head, weightless RMSNorm after RoPE");
  return na();
}

FeatureUse layers(const View &v) {
  if (const json::Value *lt = v.get("layer_types"))
    if (const json::Array *types = lt->getAsArray()) {
      std::map<std::string, int> count;
      for (const json::Value &t : *types)
        ++count[t.getAsString().value_or("?").str()];
      std::vector<std::string> kinds, other;
      for (auto &[kind, n] : count) {
        kinds.push_back(formatv("{0} {1}", n, kind));
        bool hybrid =
            v.is({"falcon_h1", "granitemoehybrid", "qwen3_next", "jamba"}) &&
            (kind == "linear_attention" || kind == "mamba" ||
             kind == "attention" || kind == "hybrid");
        if (kind != "full_attention" && kind != "sliding_attention" &&
            !(kind == "chunked_attention" && v.is({"llama4_text"})) &&
            !hybrid)
          other.push_back(kind);
      }
      if (!other.empty())
        return lacks(llvm::join(kinds, ", "),
                     "layer kind " + llvm::join(other, ", ") +
                         " (the recurrent families read theirs; chunked "
                         "attention: llama4_text)");
      std::string local =
          v.get("rope_local_base_freq") ? ", local RoPE base" : "";
      if (v.is({"llama4_text"}))
        local += ", NoPE layers (temperature-tuned)";
      if (count.size() > 1 || !local.empty())
        return yes(llvm::join(kinds, ", ") + local);
    }
  if (v.get("rope_local_base_freq"))
    return yes("every " + show(v.number("sliding_window_pattern").value_or(6)) +
               "th layer full, local RoPE base");
  if (v.get("no_rope_layers") || v.get("no_rope_layer_interval"))
    return yes("NoPE layers");
  if (v.is({"gemma2", "gpt_oss"}))
    return yes("alternating sliding/full");
  if (auto n = v.number("sliding_window_pattern"))
    return yes("every " + show(*n) + "th layer full");
  return na();
}

FeatureUse positions(const View &v) {
  if (v.flag("alibi")) // llm.attention's alibi_slopes; falcon reads it
    return yes("ALiBi");
  if (v.is({"gpt2"}))
    return yes("learned absolute");
  if (v.string("position_embedding_type") == "absolute")
    return lacks("learned absolute", irOnly("llm.embedding, llm.positions"));
  double partial = v.number("partial_rotary_factor")
                       .value_or(v.is({"glm", "glm4"}) ? 0.5
                                 : v.is({"stablelm"})  ? 0.25
                                                       : 1.0);
  std::string what = "RoPE";
  if (partial < 1.0)
    what += " partial " + show(partial);
  if (v.is({"cohere", "cohere2", "glm", "glm4"}))
    what += " interleaved";
  return yes(what);
}

FeatureUse ropeScaling(const View &v) {
  const json::Object *dict = v.object("rope_scaling");
  if (!dict)
    dict = v.object("rope_parameters");
  if (!dict && v.is({"gpt_oss"})) // GptOssConfig's default
    return yes("yarn x32");
  if (!dict)
    return na();
  View d(*dict);
  std::optional<StringRef> type = d.string("rope_type");
  if (!type)
    type = d.string("type");
  if (d.get("mrope_section"))
    return lacks("mrope", "multimodal RoPE sections");
  if (!type || *type == "default")
    return na();
  std::string what = type->str();
  if (auto f = d.number("factor"))
    what += " x" + show(*f);
  if (is_contained({"linear", "dynamic", "yarn", "llama3", "longrope"}, *type))
    return yes(what);
  if (*type == "su")
    return lacks(what, "the legacy name of longrope, which only Phi-3's "
                       "remote code reads");
  return lacks(what, "unknown rope_type");
}

/// The HF importer builds llm.moe for the families whose routing it reads
/// (softmax, top-k, optional renormalisation, Qwen2-MoE's gated shared
/// expert, gpt-oss's biased top-k then softmax with biased clamped experts).
FeatureUse moe(const View &v) {
  std::optional<double> experts;
  for (StringRef k : {"num_local_experts", "num_experts", "n_routed_experts",
                      "moe_num_experts"})
    if (auto n = v.number(k); n && *n > 0 && !experts)
      experts = n;
  if (!experts)
    return na();
  std::string what = show(*experts) + " experts";
  if (auto k = v.number("num_experts_per_tok"))
    what += ", top-" + show(*k);
  if (v.is({"gpt_oss"}))
    return yes(what + " of the biased logits, softmax over them, expert "
                      "biases, clamped SwiGLU (llm.moe)");
  if (v.is({"llama4_text"}))
    return yes(what + " of the logits, sigmoid, weight on the expert input, "
                      "shared expert (llm.moe; a host call on PIM targets)");
  if (v.is({"deepseek_v3"}))
    return yes(what + " of sigmoid + correction bias in " +
               show(v.number("n_group").value_or(8)) + " groups, shared " +
               "experts (llm.moe; PIM: not yet)");
  if (v.is({"deepseek_v2"}))
    return yes(what + " of softmax" +
               (v.string("topk_method") == "group_limited_greedy"
                    ? ", group-limited"
                    : "") +
               ", shared experts (llm.moe; PIM: not yet)");
  if (v.is({"granitemoehybrid"}))
    return yes(what + " of the logits, softmax over them, shared MLP "
                      "(llm.moe)");
  if (v.is({"jamba"}))
    return yes(what + ", every " +
               show(v.number("expert_layer_period").value_or(2)) +
               " layers, not renormalised (llm.moe)");
  if (!v.is({"mixtral", "qwen2_moe", "qwen3_moe", "qwen3_next"}))
    return lacks(what, "routing of " + (v.type.empty() ? "?" : v.type.str()) +
                           ": the HF importer builds llm.moe for mixtral, "
                           "qwen2_moe, qwen3_moe, qwen3_next, gpt_oss, "
                           "deepseek_v2/v3, llama4_text, granitemoehybrid "
                           "and jamba only");
  if (v.is({"mixtral"}) || v.flag("norm_topk_prob"))
    what += " renormalised";
  if (v.is({"qwen2_moe", "qwen3_next"}))
    what += ", gated shared expert";
  if (v.is({"qwen2_moe", "qwen3_moe", "qwen3_next"}) &&
      (v.number("decoder_sparse_step").value_or(1) != 1 ||
       (v.get("mlp_only_layers") && v.get("mlp_only_layers")->getAsArray() &&
        !v.get("mlp_only_layers")->getAsArray()->empty())))
    what += ", some layers dense";
  return yes(what + " (llm.moe)");
}

/// The recurrent mixers the HF importer builds (llm.causal_conv1d,
/// llm.ssm_scan, llm.gated_delta_rule; host calls on PIM targets).
FeatureUse recurrent(const View &v) {
  constexpr StringLiteral onPim = " (PIM: projections on the units, the "
                                  "recurrence a host call)";
  if (v.get("linear_num_value_heads")) {
    if (v.is({"qwen3_next"}))
      return yes(std::string("gated DeltaNet") + onPim.str());
    return lacks("gated DeltaNet", "the importer builds it for qwen3_next");
  }
  bool mamba = false;
  for (StringRef k : {"mamba_d_state", "mamba_n_heads", "ssm_state_size",
                      "attn_layer_period"})
    mamba |= v.get(k) != nullptr;
  if (!mamba)
    return na();
  if (v.is({"jamba"}))
    return yes(std::string("Mamba-1") + onPim.str());
  if (v.is({"falcon_h1"}))
    return yes(std::string("Mamba-2 beside attention") + onPim.str());
  if (v.is({"granitemoehybrid"}))
    return yes(std::string("Mamba-2") + onPim.str());
  return lacks("Mamba", "the importer builds it for falcon_h1, "
                        "granitemoehybrid and jamba");
}

FeatureUse quant(const View &v) {
  const json::Object *q = v.object("quantization_config");
  if (!q)
    return na();
  std::optional<StringRef> method = View(*q).string("quant_method");
  if (method == "gptq")
    return yes("GPTQ " + show(View(*q).number("bits").value_or(4)) + "-bit");
  return lacks(method.value_or("?"),
               "quantization schemes beyond GPTQ: issue 16");
}

using Detector = FeatureUse (*)(const View &);
constexpr Detector kDetectors[] = {
    family,      attention,   biases,    fused,  norm,   placement,
    mlp,         multipliers, softcap,   qkNorm, layers, positions,
    ropeScaling, moe,         recurrent, quant};
static_assert(std::size(kDetectors) + 1 == std::size(kFeatures),
              "one detector per column, and 'other'");

} // namespace

ArrayRef<ArchFeature> archFeatures() { return kFeatures; }

StringRef featureStatusName(FeatureUse::Status status) {
  switch (status) {
  case Status::Supported:
    return "supported";
  case Status::Unsupported:
    return "unsupported";
  case Status::NotApplicable:
    return "not-applicable";
  }
  return "";
}

json::Value toJSON(const FeatureUse &use) {
  json::Object o{{"status", featureStatusName(use.status)}};
  if (!use.value.empty())
    o["value"] = use.value;
  if (!use.reason.empty())
    o["reason"] = use.reason;
  return json::Value(std::move(o));
}

std::vector<FeatureUse> detectArchFeatures(const json::Object &config,
                                           const ConfigSupport &analysis) {
  View view(config);
  std::vector<FeatureUse> uses;
  for (auto [detect, column] : llvm::zip(kDetectors, kFeatures)) {
    uses.push_back(detect(view));
    uses.back().feature = column.id.str();
  }
  uses.push_back(na());
  uses.back().feature = "other";
  // What the importer itself rejected overrides the detectors' view.
  for (const ConfigFeature &f : analysis.features) {
    if (f.status != ConfigFeature::Status::Unsupported)
      continue;
    StringRef column = columnOfKey(f.field);
    FeatureUse &use = *llvm::find_if(
        uses, [&](const FeatureUse &u) { return u.feature == column; });
    std::string item = f.field + " = " + f.value;
    if (use.status == Status::Unsupported && column == "other") {
      use.value += ", " + item;
      use.reason += "; " + f.reason;
      continue;
    }
    if (use.status == Status::Unsupported)
      continue; // the detector's reason says more than the key's

    if (use.value.empty() || column == "other")
      use.value = item;
    use.status = Status::Unsupported;
    use.reason = f.reason;
  }
  return uses;
}

Expected<std::vector<FeatureUse>>
analyzeArchFeatures(StringRef configPath, const ConfigSupport &analysis) {
  Expected<json::Object> config = readConfigObject(configPath);
  if (!config)
    return config.takeError();
  return detectArchFeatures(*config, analysis);
}

} // namespace pimc::ckpt
