//===- HFConfigTest.cpp - config.json parser tests ------------------------===//

#include "pimc/Checkpoint/HFConfig.h"
#include "pimc/Checkpoint/Families.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace llvm;
using namespace pimc::ckpt;

namespace {

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "'" << (haystack) << "' does not contain '" << (needle) << "'"

// Trimmed from the Hub configs of the checkpoints in specs section 2.2.
const char *llama31 = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.43.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
})";

const char *mistral01 = R"({
  "architectures": ["MistralForCausalLM"],
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "mistral",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_theta": 10000.0,
  "sliding_window": 4096,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.34.0.dev0",
  "use_cache": true,
  "vocab_size": 32000
})";

const char *qwen25 = R"({
  "architectures": ["Qwen2ForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151643,
  "hidden_act": "silu",
  "hidden_size": 3584,
  "initializer_range": 0.02,
  "intermediate_size": 18944,
  "max_position_embeddings": 131072,
  "max_window_layers": 28,
  "model_type": "qwen2",
  "num_attention_heads": 28,
  "num_hidden_layers": 28,
  "num_key_value_heads": 4,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "sliding_window": 131072,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.43.1",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 152064
})";

const char *qwen3 = R"({
  "architectures": ["Qwen3ForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 12288,
  "max_position_embeddings": 40960,
  "max_window_layers": 36,
  "model_type": "qwen3",
  "num_attention_heads": 32,
  "num_hidden_layers": 36,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

// google/gemma-7b (spec 2.25): no tie_word_embeddings key (the family's
// default, tied, applies), the stale `hidden_act: gelu` beside the
// `hidden_activation` the model was trained with.
const char *gemma7b = R"({
  "architectures": ["GemmaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 2,
  "eos_token_id": 1,
  "head_dim": 256,
  "hidden_act": "gelu",
  "hidden_activation": "gelu_pytorch_tanh",
  "hidden_size": 3072,
  "initializer_range": 0.02,
  "intermediate_size": 24576,
  "max_position_embeddings": 8192,
  "model_type": "gemma",
  "num_attention_heads": 16,
  "num_hidden_layers": 28,
  "num_key_value_heads": 16,
  "pad_token_id": 0,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 10000.0,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.38.0.dev0",
  "use_cache": true,
  "vocab_size": 256000
})";

// ibm-granite/granite-3.0-8b-instruct (spec 2.18: the muP multipliers).
const char *granite3 = R"({
  "architectures": ["GraniteForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.1,
  "attention_multiplier": 0.0078125,
  "bos_token_id": 0,
  "embedding_multiplier": 12.0,
  "eos_token_id": 0,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 12800,
  "logits_scaling": 16.0,
  "max_position_embeddings": 4096,
  "mlp_bias": false,
  "model_type": "granite",
  "num_attention_heads": 32,
  "num_hidden_layers": 40,
  "num_key_value_heads": 8,
  "pad_token_id": 0,
  "residual_multiplier": 0.22,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 10000.0,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.46.0.dev0",
  "use_cache": true,
  "vocab_size": 49155
})";

// HuggingFaceTB/SmolLM3-3B (spec 2.19; examples/configs has the whole
// file): NoPE on every 4th layer, pretraining_tp 2 (no effect).
const char *smollm3 = R"({
  "architectures": ["SmolLM3ForCausalLM"],
  "attention_bias": false,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "intermediate_size": 11008,
  "max_position_embeddings": 65536,
  "max_window_layers": 28,
  "mlp_bias": false,
  "model_type": "smollm3",
  "no_rope_layer_interval": 4,
  "num_attention_heads": 16,
  "num_hidden_layers": 36,
  "num_key_value_heads": 4,
  "pretraining_tp": 2,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 5000000.0,
  "sliding_window": null,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "use_sliding_window": false,
  "vocab_size": 128256
})";

// allenai/OLMo-2-1124-7B (spec 2.17; examples/configs has the whole file).
const char *olmo2 = R"({
  "architectures": ["Olmo2ForCausalLM"],
  "attention_bias": false,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 11008,
  "max_position_embeddings": 4096,
  "model_type": "olmo2",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 32,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 500000,
  "tie_word_embeddings": false,
  "vocab_size": 100352
})";

// google/gemma-3-1b-it (spec 2.26; examples/configs has the whole file).
const char *gemma3 = R"({
  "architectures": ["Gemma3ForCausalLM"],
  "attention_bias": false,
  "attn_logit_softcapping": null,
  "cache_implementation": "hybrid",
  "final_logit_softcapping": null,
  "head_dim": 256,
  "hidden_activation": "gelu_pytorch_tanh",
  "hidden_size": 1152,
  "intermediate_size": 6912,
  "max_position_embeddings": 32768,
  "model_type": "gemma3_text",
  "num_attention_heads": 4,
  "num_hidden_layers": 26,
  "num_key_value_heads": 1,
  "query_pre_attn_scalar": 256,
  "rms_norm_eps": 1e-06,
  "rope_local_base_freq": 10000,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": 512,
  "sliding_window_pattern": 6,
  "torch_dtype": "bfloat16",
  "vocab_size": 262144
})";

// google/gemma-2-9b (spec 2.25; examples/configs has the whole file).
const char *gemma2 = R"({
  "architectures": ["Gemma2ForCausalLM"],
  "attention_bias": false,
  "attn_logit_softcapping": 50.0,
  "cache_implementation": "hybrid",
  "final_logit_softcapping": 30.0,
  "head_dim": 256,
  "hidden_act": "gelu_pytorch_tanh",
  "hidden_activation": "gelu_pytorch_tanh",
  "hidden_size": 3584,
  "intermediate_size": 14336,
  "max_position_embeddings": 8192,
  "model_type": "gemma2",
  "num_attention_heads": 16,
  "num_hidden_layers": 42,
  "num_key_value_heads": 8,
  "query_pre_attn_scalar": 256,
  "rms_norm_eps": 1e-06,
  "rope_theta": 10000.0,
  "sliding_window": 4096,
  "sliding_window_size": 4096,
  "torch_dtype": "float32",
  "vocab_size": 256000
})";

// stabilityai/stablelm-2-1_6b (spec 2.21; examples/configs has the whole
// file).
const char *stablelm2 = R"({
  "architectures": ["StableLmForCausalLM"],
  "hidden_act": "silu",
  "hidden_dropout": 0.0,
  "hidden_size": 2048,
  "intermediate_size": 5632,
  "layer_norm_eps": 1e-05,
  "max_position_embeddings": 4096,
  "model_type": "stablelm",
  "num_attention_heads": 32,
  "num_hidden_layers": 24,
  "num_key_value_heads": 32,
  "partial_rotary_factor": 0.25,
  "qk_layernorm": false,
  "rope_scaling": null,
  "rope_theta": 10000,
  "tie_word_embeddings": false,
  "torch_dtype": "float16",
  "use_parallel_residual": false,
  "use_qkv_bias": true,
  "vocab_size": 100352
})";

// THUDM/GLM-4-9B-0414 (spec 2.24; examples/configs has the whole file, and
// THUDM/glm-4-9b-chat-hf's, model_type glm).
const char *glm4 = R"({
  "architectures": ["Glm4ForCausalLM"],
  "attention_bias": true,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 13696,
  "max_position_embeddings": 32768,
  "model_type": "glm4",
  "num_attention_heads": 32,
  "num_hidden_layers": 40,
  "num_key_value_heads": 2,
  "partial_rotary_factor": 0.5,
  "rms_norm_eps": 1e-05,
  "rope_theta": 10000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "vocab_size": 151552
})";

// CohereForAI/c4ai-command-r7b-12-2024 (spec 2.20; examples/configs has
// the whole file, and c4ai-command-r-v01's, model_type cohere).
const char *cohere2 = R"({
  "architectures": ["Cohere2ForCausalLM"],
  "attention_bias": false,
  "cache_implementation": "hybrid",
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "layer_norm_eps": 1e-05,
  "logit_scale": 0.25,
  "max_position_embeddings": 132096,
  "model_type": "cohere2",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "order_of_interleaved_layers": "local_attn_first",
  "position_embedding_type": "rope_gptj",
  "rope_scaling": null,
  "rope_theta": 50000,
  "rotary_pct": 1.0,
  "sliding_window": 4096,
  "sliding_window_pattern": 4,
  "torch_dtype": "bfloat16",
  "use_embedding_sharing": true,
  "use_gated_activation": true,
  "use_parallel_block": true,
  "use_parallel_embedding": true,
  "use_qk_norm": false,
  "vocab_size": 256000
})";

// bigcode/starcoder2-7b (spec 2.22; examples/configs has the whole file).
const char *starcoder2 = R"({
  "architectures": ["Starcoder2ForCausalLM"],
  "attention_dropout": 0.1,
  "residual_dropout": 0.1,
  "embedding_dropout": 0.1,
  "hidden_act": "gelu_pytorch_tanh",
  "hidden_size": 4608,
  "intermediate_size": 18432,
  "max_position_embeddings": 16384,
  "mlp_type": "default",
  "model_type": "starcoder2",
  "norm_epsilon": 1e-05,
  "num_attention_heads": 36,
  "num_hidden_layers": 32,
  "num_key_value_heads": 4,
  "rope_theta": 1000000,
  "sliding_window": 4096,
  "use_bias": true,
  "vocab_size": 49152,
  "torch_dtype": "bfloat16"
})";

// tiiuae/falcon-7b (spec 2.26; examples/configs has the whole file).
const char *falcon7b = R"({
  "alibi": false,
  "apply_residual_connection_post_layernorm": false,
  "architectures": ["FalconForCausalLM"],
  "attention_dropout": 0.0,
  "bias": false,
  "hidden_dropout": 0.0,
  "hidden_size": 4544,
  "layer_norm_epsilon": 1e-05,
  "model_type": "falcon",
  "multi_query": true,
  "new_decoder_architecture": false,
  "num_attention_heads": 71,
  "num_hidden_layers": 32,
  "parallel_attn": true,
  "torch_dtype": "bfloat16",
  "vocab_size": 65024
})";

// internlm/internlm2_5-7b-chat (spec 2.23; remote code; examples/configs has
// the whole file).
const char *internlm25 = R"({
  "architectures": ["InternLM2ForCausalLM"],
  "attn_implementation": "eager",
  "auto_map": {"AutoConfig": "configuration_internlm2.InternLM2Config"},
  "bias": false,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "internlm2",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"type": "dynamic", "factor": 2.0},
  "rope_theta": 1000000,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "vocab_size": 92544
})";

// openai-community/gpt2 (spec 2.13; examples/configs has the same file).
const char *gpt2 = R"({
  "activation_function": "gelu_new",
  "architectures": [
    "GPT2LMHeadModel"
  ],
  "attn_pdrop": 0.1,
  "bos_token_id": 50256,
  "embd_pdrop": 0.1,
  "eos_token_id": 50256,
  "initializer_range": 0.02,
  "layer_norm_epsilon": 1e-05,
  "model_type": "gpt2",
  "n_ctx": 1024,
  "n_embd": 768,
  "n_head": 12,
  "n_layer": 12,
  "n_positions": 1024,
  "resid_pdrop": 0.1,
  "summary_activation": null,
  "summary_first_dropout": 0.1,
  "summary_proj_to_labels": true,
  "summary_type": "cls_index",
  "summary_use_proj": true,
  "task_specific_params": {
    "text-generation": {
      "do_sample": true,
      "max_length": 50
    }
  },
  "vocab_size": 50257
})";

// The published configs of the MoE families (mistralai/Mixtral-8x7B-v0.1,
// Qwen/Qwen1.5-MoE-A2.7B, Qwen/Qwen3-30B-A3B; examples/configs has them too).
const char *mixtral8x7b = R"({
  "architectures": ["MixtralForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "mixtral",
  "num_attention_heads": 32,
  "num_experts_per_tok": 2,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "num_local_experts": 8,
  "output_router_logits": false,
  "rms_norm_eps": 1e-05,
  "rope_theta": 1000000.0,
  "router_aux_loss_coef": 0.02,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.36.0.dev0",
  "use_cache": true,
  "vocab_size": 32000
})";

const char *qwen15moe = R"({
  "architectures": ["Qwen2MoeForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151643,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 5632,
  "max_position_embeddings": 8192,
  "max_window_layers": 21,
  "model_type": "qwen2_moe",
  "num_attention_heads": 16,
  "num_hidden_layers": 24,
  "num_key_value_heads": 16,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "sliding_window": 32768,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.40.0.dev0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936,
  "decoder_sparse_step": 1,
  "moe_intermediate_size": 1408,
  "shared_expert_intermediate_size": 5632,
  "num_experts_per_tok": 4,
  "num_experts": 60,
  "norm_topk_prob": false,
  "output_router_logits": false,
  "router_aux_loss_coef": 0.001
})";

const char *qwen3moe = R"({
  "architectures": ["Qwen3MoeForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "decoder_sparse_step": 1,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 6144,
  "max_position_embeddings": 40960,
  "max_window_layers": 48,
  "mlp_only_layers": [],
  "model_type": "qwen3_moe",
  "moe_intermediate_size": 768,
  "norm_topk_prob": true,
  "num_attention_heads": 32,
  "num_experts": 128,
  "num_experts_per_tok": 8,
  "num_hidden_layers": 48,
  "num_key_value_heads": 4,
  "output_router_logits": false,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000.0,
  "router_aux_loss_coef": 0.001,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

/// `base` with the top-level fields of `patch` replaced (null in the patch
/// removes the field).
std::string patched(const char *base, const char *patch) {
  json::Value v = cantFail(json::parse(base));
  json::Value p = cantFail(json::parse(patch));
  json::Object &o = *v.getAsObject();
  for (auto &[k, val] : *p.getAsObject()) {
    if (val.kind() == json::Value::Null)
      o.erase(k);
    else
      o[k] = val;
  }
  std::string s;
  raw_string_ostream(s) << v;
  return s;
}

/// Parses and returns the error message; fails the test on success.
std::string errorOf(const std::string &text) {
  Expected<ModelConfig> cfg = parseModelConfigText(text, "cfg.json");
  if (cfg) {
    ADD_FAILURE() << "expected an error for " << text;
    return "";
  }
  std::string msg = toString(cfg.takeError());
  EXPECT_EQ(msg.rfind("cfg.json: ", 0), 0u) << msg;
  return msg;
}

ModelConfig parseOk(const std::string &text) {
  Expected<ModelConfig> cfg = parseModelConfigText(text, "cfg.json");
  if (!cfg) {
    ADD_FAILURE() << toString(cfg.takeError());
    return ModelConfig();
  }
  return *cfg;
}

TEST(HFConfigTest, Llama31) {
  ModelConfig c = parseOk(llama31);
  EXPECT_EQ(c.modelType, "llama");
  EXPECT_EQ(c.hiddenSize, 4096);
  EXPECT_EQ(c.intermediateSize, 14336);
  EXPECT_EQ(c.numLayers, 32);
  EXPECT_EQ(c.numHeads, 32);
  EXPECT_EQ(c.numKvHeads, 8);
  EXPECT_EQ(c.headDim, 128);
  EXPECT_EQ(c.vocabSize, 128256);
  EXPECT_EQ(c.maxPositionEmbeddings, 131072);
  EXPECT_DOUBLE_EQ(c.normEps, 1e-5);
  EXPECT_EQ(c.hiddenAct, "silu");
  EXPECT_FALSE(c.tieWordEmbeddings);
  EXPECT_FALSE(c.qkvBias);
  EXPECT_FALSE(c.oBias);
  EXPECT_FALSE(c.mlpBias);
  EXPECT_FALSE(c.qkNorm);
  EXPECT_FALSE(c.slidingWindow);
  EXPECT_EQ(c.torchDtype, "bfloat16");
  EXPECT_FALSE(c.gptq);

  EXPECT_EQ(c.rope.kind, RopeScaling::Kind::Llama3);
  EXPECT_DOUBLE_EQ(c.rope.theta, 500000.0);
  EXPECT_DOUBLE_EQ(c.rope.partialRotaryFactor, 1.0);
  EXPECT_EQ(c.rope.factor, 8.0);
  EXPECT_EQ(c.rope.lowFreqFactor, 1.0);
  EXPECT_EQ(c.rope.highFreqFactor, 4.0);
  EXPECT_EQ(c.rope.originalMaxPositionEmbeddings, 8192);
}

TEST(HFConfigTest, LlamaDefaultsAndBiases) {
  ModelConfig c =
      parseOk(patched(llama31, R"({"rope_scaling": null, "rope_theta": null,
                   "num_key_value_heads": null, "torch_dtype": null,
                   "max_position_embeddings": null, "rms_norm_eps": null,
                   "attention_bias": true, "mlp_bias": true})"));
  EXPECT_EQ(c.numKvHeads, 32);
  EXPECT_EQ(c.rope.kind, RopeScaling::Kind::Default);
  EXPECT_DOUBLE_EQ(c.rope.theta, 10000.0);
  EXPECT_FALSE(c.rope.factor);
  EXPECT_EQ(c.torchDtype, "float32");
  EXPECT_EQ(c.maxPositionEmbeddings, 2048);
  EXPECT_DOUBLE_EQ(c.normEps, 1e-6);
  EXPECT_TRUE(c.attentionBias);
  EXPECT_TRUE(c.qkvBias);
  EXPECT_TRUE(c.oBias);
  EXPECT_TRUE(c.mlpBias);
}

TEST(HFConfigTest, Mistral) {
  ModelConfig c = parseOk(mistral01);
  EXPECT_EQ(c.modelType, "mistral");
  EXPECT_EQ(c.numKvHeads, 8);
  EXPECT_EQ(c.headDim, 128);
  ASSERT_TRUE(c.slidingWindow);
  EXPECT_EQ(*c.slidingWindow, 4096);
  EXPECT_EQ(c.rope.kind, RopeScaling::Kind::Default);
  EXPECT_FALSE(c.qkvBias);

  // v0.2+: null window means full attention.
  std::string v02 = mistral01;
  v02.replace(v02.find("4096,\n  \"tie"), 4, "null");
  ModelConfig c2 = parseOk(v02);
  EXPECT_FALSE(c2.slidingWindow);

  EXPECT_CONTAINS(errorOf(patched(mistral01, R"({"sliding_window": -4})")),
                  "sliding_window");
}

TEST(HFConfigTest, Qwen2) {
  ModelConfig c = parseOk(qwen25);
  EXPECT_EQ(c.modelType, "qwen2");
  EXPECT_EQ(c.hiddenSize, 3584);
  EXPECT_EQ(c.numHeads, 28);
  EXPECT_EQ(c.numKvHeads, 4);
  EXPECT_EQ(c.headDim, 128);
  EXPECT_TRUE(c.qkvBias);
  EXPECT_FALSE(c.oBias);
  EXPECT_FALSE(c.qkNorm);
  // use_sliding_window is false, so sliding_window is not honoured.
  EXPECT_FALSE(c.slidingWindow);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e6);
  EXPECT_DOUBLE_EQ(c.normEps, 1e-6);

  std::string msg = errorOf(patched(qwen25, R"({"use_sliding_window": true})"));
  EXPECT_CONTAINS(msg, "use_sliding_window");
  EXPECT_CONTAINS(msg, "not supported");
}

TEST(HFConfigTest, Qwen3) {
  ModelConfig c = parseOk(qwen3);
  EXPECT_EQ(c.modelType, "qwen3");
  EXPECT_EQ(c.headDim, 128);
  EXPECT_EQ(c.numLayers, 36);
  EXPECT_EQ(c.maxPositionEmbeddings, 40960);
  EXPECT_TRUE(c.qkNorm);
  EXPECT_FALSE(c.qkvBias);
  EXPECT_FALSE(c.oBias);
  EXPECT_FALSE(c.slidingWindow);
  EXPECT_EQ(c.rope.kind, RopeScaling::Kind::Default);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e6);

  // Explicit head_dim need not divide hidden_size; null means the default.
  ModelConfig odd = parseOk(patched(qwen3, R"({"hidden_size": 1000})"));
  EXPECT_EQ(odd.headDim, 128);
  std::string nullHeadDim = qwen3;
  nullHeadDim.replace(nullHeadDim.find("128,"), 3, "null");
  EXPECT_EQ(parseOk(nullHeadDim).headDim, 4096 / 32);

  ModelConfig biased = parseOk(patched(qwen3, R"({"attention_bias": true})"));
  EXPECT_TRUE(biased.qkvBias);
  EXPECT_TRUE(biased.oBias);
}

TEST(HFConfigTest, Gemma) {
  ModelConfig c = parseOk(gemma7b);
  EXPECT_EQ(c.modelType, "gemma");
  EXPECT_EQ(c.headDim, 256);
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_EQ(c.normWeight, NormWeight::OnePlusScale);
  ASSERT_TRUE(c.embeddingScale);
  EXPECT_DOUBLE_EQ(*c.embeddingScale, std::sqrt(3072.0));
  EXPECT_EQ(c.mlpActivation, MlpActivation::GeluTanh);
  EXPECT_EQ(c.hiddenAct, "gelu_pytorch_tanh");
  EXPECT_FALSE(c.qkNorm);

  // Without hidden_activation, hidden_act (exact GELU here) is the
  // activation, as transformers 5 reads it; without both, the family's.
  ModelConfig erf = parseOk(patched(gemma7b, R"({"hidden_activation": null})"));
  EXPECT_EQ(erf.mlpActivation, MlpActivation::Gelu);
  ModelConfig dflt = parseOk(
      patched(gemma7b, R"({"hidden_activation": null, "hidden_act": null})"));
  EXPECT_EQ(dflt.mlpActivation, MlpActivation::GeluTanh);

  EXPECT_CONTAINS(
      errorOf(patched(gemma7b, R"({"use_bidirectional_attention": true})")),
      "cfg.json: use_bidirectional_attention: bidirectional attention has no "
      "decode step");
  EXPECT_CONTAINS(errorOf(patched(gemma7b, R"({"sliding_window": 4096})")),
                  "cfg.json: sliding_window: gemma has no sliding-window "
                  "attention, got 4096");
  EXPECT_CONTAINS(errorOf(patched(gemma7b, R"({"mlp_bias": false})")),
                  "unknown config field 'mlp_bias' (not known to the gemma "
                  "importer)");

  // Llama reads any activation transformers' ACT2FN gives the family.
  ModelConfig gelu = parseOk(patched(llama31, R"({"hidden_act": "gelu"})"));
  EXPECT_EQ(gelu.mlpActivation, MlpActivation::Gelu);
  EXPECT_EQ(gelu.normWeight, NormWeight::Scale);
  EXPECT_FALSE(gelu.embeddingScale);
}

TEST(HFConfigTest, Granite) {
  ModelConfig c = parseOk(granite3);
  EXPECT_EQ(c.modelType, "granite");
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_EQ(c.normWeight, NormWeight::Scale);
  ASSERT_TRUE(c.embeddingScale && c.attentionScale && c.residualMultiplier &&
              c.logitScale);
  EXPECT_DOUBLE_EQ(*c.embeddingScale, 12.0);
  EXPECT_DOUBLE_EQ(*c.attentionScale, 0.0078125);
  EXPECT_DOUBLE_EQ(*c.residualMultiplier, 0.22);
  EXPECT_DOUBLE_EQ(*c.logitScale, 1.0 / 16.0);

  // Multipliers of 1 are left out; the softmax scale is the config's even
  // then (it replaces head_dim^-0.5).
  ModelConfig plain = parseOk(patched(
      granite3, R"({"embedding_multiplier": null, "residual_multiplier": 1,
                    "logits_scaling": 1.0, "attention_multiplier": null})"));
  EXPECT_FALSE(plain.embeddingScale || plain.residualMultiplier ||
               plain.logitScale);
  ASSERT_TRUE(plain.attentionScale);
  EXPECT_DOUBLE_EQ(*plain.attentionScale, 1.0);

  EXPECT_CONTAINS(errorOf(patched(granite3, R"({"logits_scaling": 0})")),
                  "cfg.json: logits_scaling: must be positive, got 0");
  EXPECT_CONTAINS(
      errorOf(patched(granite3, R"({"attention_multiplier": "x"})")),
      "cfg.json: attention_multiplier: expected a number");
  EXPECT_CONTAINS(errorOf(patched(granite3, R"({"sliding_window": 8})")),
                  "granite has no sliding-window attention");
}

TEST(HFConfigTest, YarnAndLegacyType) {
  ModelConfig c = parseOk(
      patched(qwen25, R"({"rope_scaling": {"type": "yarn", "factor": 4.0,
                  "original_max_position_embeddings": 32768}})"));
  EXPECT_EQ(c.rope.kind, RopeScaling::Kind::Yarn);
  EXPECT_EQ(c.rope.factor, 4.0);
  EXPECT_EQ(c.rope.originalMaxPositionEmbeddings, 32768);
  EXPECT_EQ(c.rope.betaFast, 32.0);
  EXPECT_EQ(c.rope.betaSlow, 1.0);
  EXPECT_TRUE(c.rope.truncate);
  EXPECT_FALSE(c.rope.attentionFactor);

  ModelConfig g = parseOk(
      patched(llama31, R"({"rope_scaling": {"rope_type": "yarn", "factor": 32.0,
                  "beta_fast": 16, "truncate": false, "mscale": 0.707,
                  "mscale_all_dim": 0.707, "attention_factor": 1.2}})"));
  EXPECT_EQ(g.rope.betaFast, 16.0);
  EXPECT_FALSE(g.rope.truncate);
  EXPECT_EQ(g.rope.mscale, 0.707);
  EXPECT_EQ(g.rope.mscaleAllDim, 0.707);
  EXPECT_EQ(g.rope.attentionFactor, 1.2);

  ModelConfig lin = parseOk(
      patched(llama31, R"({"rope_scaling": {"type": "linear", "factor": 2}})"));
  EXPECT_EQ(lin.rope.kind, RopeScaling::Kind::Linear);
  EXPECT_EQ(lin.rope.factor, 2.0);
  ModelConfig dyn = parseOk(patched(
      llama31, R"({"rope_scaling": {"rope_type": "dynamic", "factor": 2}})"));
  EXPECT_EQ(dyn.rope.kind, RopeScaling::Kind::Dynamic);
}

TEST(HFConfigTest, RopeParametersV5) {
  ModelConfig c =
      parseOk(patched(llama31, R"({"rope_scaling": null, "rope_theta": null,
                   "rope_parameters": {"rope_type": "default",
                                       "rope_theta": 250000.0}})"));
  EXPECT_EQ(c.rope.kind, RopeScaling::Kind::Default);
  EXPECT_DOUBLE_EQ(c.rope.theta, 250000.0);

  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"rope_scaling": null,
                   "rope_parameters": {"rope_type": "default",
                                       "rope_theta": 250000.0}})")),
                  "rope_parameters.rope_theta");
}

TEST(HFConfigTest, RopeErrors) {
  std::string msg = errorOf(patched(
      llama31, R"({"rope_scaling": {"rope_type": "longrope", "factor": 4,
                   "short_factor": [1], "long_factor": [2]}})"));
  EXPECT_CONTAINS(msg, "rope_scaling: longrope's short_factor has 1 values; "
                       "rotary_dim 128 needs 64");
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"rope_scaling":
                     {"rope_type": "longrope", "long_factor": [2]}})")),
                  "rope_scaling.short_factor: required for rope type "
                  "'longrope'");
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"rope_scaling":
                     {"rope_type": "mrope"}})")),
                  "unsupported rope_scaling type 'mrope' (supported: "
                  "default, linear, dynamic, yarn, llama3, longrope)");
  EXPECT_CONTAINS(
      errorOf(patched(llama31, R"({"rope_scaling": {"type": "su"}})")), "'su'");

  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"rope_scaling":
                     {"rope_type": "llama3", "factor": 8.0,
                      "low_freq_factor": 1.0, "high_freq_factor": 4.0}})")),
                  "rope_scaling.original_max_position_embeddings");
  EXPECT_CONTAINS(
      errorOf(patched(llama31, R"({"rope_scaling": {"rope_type": "linear"}})")),
      "rope_scaling.factor");
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"rope_scaling":
                     {"rope_type": "linear", "factor": 2, "bogus": 1}})")),
                  "rope_scaling.bogus");
  EXPECT_CONTAINS(
      errorOf(patched(llama31, R"({"rope_scaling": {"factor": 2}})")),
      "rope_scaling");
}

TEST(HFConfigTest, UnsupportedModelType) {
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"model_type": "xyz"})")),
                  "unsupported model_type 'xyz' (supported: " + familyNames() +
                      ")");
  EXPECT_EQ(familyNames().rfind("llama, mistral, qwen2, qwen3, gemma, ", 0),
            0u);
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"model_type": null})")),
                  "model_type");
}

TEST(HFConfigTest, UnknownField) {
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"foo": 1})")),
                  "unknown config field 'foo' (not known to the llama "
                  "importer)");
  // Known to some families only.
  EXPECT_CONTAINS(
      errorOf(patched(mistral01, R"({"use_sliding_window": false})")),
      "unknown config field 'use_sliding_window' (not known to "
      "the mistral importer)");
}

TEST(HFConfigTest, FieldErrors) {
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"hidden_act": "relu2"})")),
                  "hidden_act: unsupported activation 'relu2' (supported: "
                  "silu, swish, gelu, gelu_pytorch_tanh, gelu_new)");

  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"hidden_size": null})")),
                  "hidden_size: required field is missing");
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"vocab_size": 0})")),
                  "vocab_size: must be positive");
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"num_hidden_layers": "32"})")),
                  "num_hidden_layers: expected an integer");
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"num_key_value_heads": 5})")),
                  "num_key_value_heads");
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"num_attention_heads": 31,
                                               "num_key_value_heads": 31})")),
                  "num_attention_heads");
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"pretraining_tp": 0})")),
                  "pretraining_tp");
  // Sliced projections compute the same function; transformers 5 ignores it.
  EXPECT_EQ(parseOk(patched(llama31, R"({"pretraining_tp": 2})")).numLayers,
            32);
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"sliding_window": 4096})")),
                  "sliding_window");
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"torch_dtype": "int8"})")),
                  "torch_dtype");
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"tie_word_embeddings": 1})")),
                  "tie_word_embeddings");
  EXPECT_CONTAINS(errorOf("[1]"), "not a JSON object");
  EXPECT_CONTAINS(errorOf("{"), "not valid JSON");
}

TEST(HFConfigTest, SmolLM3) {
  ModelConfig c = parseOk(smollm3);
  EXPECT_EQ(c.modelType, "smollm3");
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_DOUBLE_EQ(c.rope.theta, 5e6);
  EXPECT_FALSE(c.slidingWindow);
  ASSERT_EQ(c.layers.size(), 36u);
  for (int i = 0; i < 36; ++i) {
    EXPECT_EQ(c.layers[i].rope, (i + 1) % 4 != 0) << "layer " << i;
    EXPECT_FALSE(c.layers[i].sliding);
  }
  // The family's RoPE base when the config has none.
  EXPECT_DOUBLE_EQ(
      parseOk(patched(smollm3, R"({"rope_theta": null})")).rope.theta, 2e6);

  // An explicit list wins over the interval; a longer one is cut to the
  // layers (as transformers indexes it); with use_sliding_window the NoPE
  // layers slide.
  std::string list = "[0";
  for (int i = 1; i < 40; ++i)
    list += i % 2 ? ",1" : ",0";
  list += "]";
  ModelConfig w = parseOk(patched(
      smollm3, ("{\"no_rope_layers\": " + list +
                ", \"use_sliding_window\": true, \"sliding_window\": 4096}")
                   .c_str()));
  ASSERT_TRUE(w.slidingWindow);
  for (int i = 0; i < 36; ++i) {
    EXPECT_EQ(w.layers[i].rope, i % 2 == 1) << "layer " << i;
    EXPECT_EQ(w.layers[i].sliding, i % 2 == 0) << "layer " << i;
  }
  std::string semantic = semanticConfigJSON(w);
  EXPECT_CONTAINS(semantic, "\"no_rope_layers\":[0,2,4,");
  EXPECT_CONTAINS(semantic, "\"full_attention_layers\":[1,3,5,");

  EXPECT_CONTAINS(errorOf(patched(smollm3, R"({"no_rope_layers": [1, 0]})")),
                  "cfg.json: no_rope_layers: has 2 entries but "
                  "num_hidden_layers is 36");
  EXPECT_CONTAINS(errorOf(patched(smollm3, R"({"no_rope_layer_interval": 0})")),
                  "no_rope_layer_interval");
  EXPECT_CONTAINS(
      errorOf(patched(smollm3, R"({"no_rope_layers": [2, 1, 1, 1, 1, 1, 1, 1,
                                  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]})")),
      "no_rope_layers[0]");
}

TEST(HFConfigTest, Olmo2) {
  ModelConfig c = parseOk(olmo2);
  EXPECT_EQ(c.modelType, "olmo2");
  EXPECT_TRUE(c.qkNorm && c.qkNormWhole);
  EXPECT_FALSE(c.qkvBias || c.oBias);
  EXPECT_EQ(c.norms.attnIn, "");
  EXPECT_EQ(c.norms.attnOut, "post_attention_layernorm");
  EXPECT_EQ(c.norms.mlpIn, "");
  EXPECT_EQ(c.norms.mlpOut, "post_feedforward_layernorm");
  EXPECT_DOUBLE_EQ(c.normEps, 1e-6);
  EXPECT_DOUBLE_EQ(c.rope.theta, 5e5);
  std::string semantic = semanticConfigJSON(c);
  EXPECT_CONTAINS(semantic, "\"qk_norm_scope\":\"projection\"");
  EXPECT_CONTAINS(semantic, "\"attn_out\":\"post_attention_layernorm\"");
  // Llama's identity has neither key (programs compiled before keep it).
  EXPECT_EQ(semanticConfigJSON(parseOk(llama31)).find("block_norms"),
            std::string::npos);

  // The family's defaults: eps 1e-5, an untied head.
  ModelConfig d = parseOk(
      patched(olmo2, R"({"rms_norm_eps": null, "tie_word_embeddings": null})"));
  EXPECT_DOUBLE_EQ(d.normEps, 1e-5);
  EXPECT_FALSE(d.tieWordEmbeddings);
  ModelConfig biased = parseOk(patched(olmo2, R"({"attention_bias": true})"));
  EXPECT_TRUE(biased.qkvBias && biased.oBias);
  EXPECT_CONTAINS(errorOf(patched(olmo2, R"({"mlp_bias": false})")),
                  "mlp_bias");
  EXPECT_CONTAINS(errorOf(patched(olmo2, R"({"sliding_window": 4096})")),
                  "olmo2 has no sliding-window attention");
}

TEST(HFConfigTest, Gemma3) {
  ModelConfig c = parseOk(gemma3);
  EXPECT_EQ(c.modelType, "gemma3_text");
  EXPECT_EQ(c.normWeight, NormWeight::OnePlusScale);
  EXPECT_EQ(c.mlpActivation, MlpActivation::GeluTanh);
  EXPECT_TRUE(c.qkNorm);
  EXPECT_FALSE(c.qkNormWhole);
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_EQ(c.norms.mlpIn, "pre_feedforward_layernorm");
  EXPECT_EQ(c.norms.mlpOut, "post_feedforward_layernorm");
  ASSERT_TRUE(c.attentionScale && c.embeddingScale && c.slidingWindow);
  EXPECT_DOUBLE_EQ(*c.attentionScale, 1.0 / 16);
  EXPECT_DOUBLE_EQ(*c.embeddingScale, std::sqrt(1152.0));
  EXPECT_EQ(*c.slidingWindow, 512);
  ASSERT_EQ(c.layers.size(), 26u);
  for (int i = 0; i < 26; ++i)
    EXPECT_EQ(c.layers[i].sliding, (i + 1) % 6 != 0) << "layer " << i;
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e6);
  ASSERT_TRUE(c.slidingRope);
  EXPECT_DOUBLE_EQ(c.slidingRope->theta, 1e4);
  EXPECT_EQ(c.slidingRope->kind, RopeScaling::Kind::Default);
  EXPECT_CONTAINS(semanticConfigJSON(c), "\"sliding_rope\":{");

  // rope_scaling applies to the full layers only; the defaults of the
  // family's config class.
  ModelConfig scaled = parseOk(patched(
      gemma3, R"({"rope_scaling": {"rope_type": "linear", "factor": 8.0},
                 "rope_theta": null, "rope_local_base_freq": null,
                 "sliding_window_pattern": null, "query_pre_attn_scalar": null})"));
  EXPECT_EQ(scaled.rope.kind, RopeScaling::Kind::Linear);
  EXPECT_DOUBLE_EQ(scaled.rope.theta, 1e6);
  EXPECT_EQ(scaled.slidingRope->kind, RopeScaling::Kind::Default);
  EXPECT_DOUBLE_EQ(scaled.slidingRope->theta, 1e4);
  EXPECT_DOUBLE_EQ(*scaled.attentionScale, 1.0 / 16);
  EXPECT_FALSE(scaled.layers[5].sliding);
  EXPECT_TRUE(scaled.layers[6].sliding);

  // Gemma 3's softcaps default to none; given, they apply as in Gemma 2.
  EXPECT_FALSE(c.attnLogitSoftcap || c.finalLogitSoftcap);
  ModelConfig capped =
      parseOk(patched(gemma3, R"({"attn_logit_softcapping": 50.0})"));
  ASSERT_TRUE(capped.attnLogitSoftcap);
  EXPECT_DOUBLE_EQ(*capped.attnLogitSoftcap, 50.0);
  EXPECT_FALSE(capped.finalLogitSoftcap);
  EXPECT_CONTAINS(errorOf(patched(gemma3, R"({"sliding_window_pattern": 0})")),
                  "sliding_window_pattern");
  EXPECT_CONTAINS(errorOf(patched(gemma3, R"({"rope_local_base_freq": -1})")),
                  "rope_local_base_freq: must be positive");
  EXPECT_CONTAINS(
      errorOf(patched(gemma3, R"({"use_bidirectional_attention": true})")),
      "use_bidirectional_attention");
}

TEST(HFConfigTest, Gemma2) {
  ModelConfig c = parseOk(gemma2);
  EXPECT_EQ(c.modelType, "gemma2");
  EXPECT_EQ(c.normWeight, NormWeight::OnePlusScale);
  EXPECT_EQ(c.mlpActivation, MlpActivation::GeluTanh);
  EXPECT_FALSE(c.qkNorm);
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_EQ(c.norms.attnOut, "post_attention_layernorm");
  EXPECT_EQ(c.norms.mlpIn, "pre_feedforward_layernorm");
  EXPECT_EQ(c.norms.mlpOut, "post_feedforward_layernorm");
  ASSERT_TRUE(c.attentionScale && c.embeddingScale && c.slidingWindow);
  EXPECT_DOUBLE_EQ(*c.attentionScale, 1.0 / 16);
  EXPECT_DOUBLE_EQ(*c.embeddingScale, std::sqrt(3584.0));
  EXPECT_EQ(*c.slidingWindow, 4096);
  ASSERT_TRUE(c.attnLogitSoftcap && c.finalLogitSoftcap);
  EXPECT_DOUBLE_EQ(*c.attnLogitSoftcap, 50.0);
  EXPECT_DOUBLE_EQ(*c.finalLogitSoftcap, 30.0);
  // transformers' default layer_types: even layers slide.
  ASSERT_EQ(c.layers.size(), 42u);
  for (int i = 0; i < 42; ++i)
    EXPECT_EQ(c.layers[i].sliding, i % 2 == 0) << "layer " << i;
  EXPECT_FALSE(c.slidingRope);
  std::string semantic = semanticConfigJSON(c);
  EXPECT_CONTAINS(semantic, "\"attn_logit_softcap\":50");
  EXPECT_CONTAINS(semantic, "\"final_logit_softcap\":30");
  EXPECT_CONTAINS(semantic, "\"full_attention_layers\":[1,3,");

  // Gemma2Config's defaults for absent keys.
  ModelConfig dflt = parseOk(patched(
      gemma2, R"({"attn_logit_softcapping": null, "final_logit_softcapping":
                 null, "sliding_window": null, "sliding_window_size": null,
                 "query_pre_attn_scalar": 224, "rope_theta": null})"));
  EXPECT_DOUBLE_EQ(*dflt.attnLogitSoftcap, 50.0);
  EXPECT_DOUBLE_EQ(*dflt.finalLogitSoftcap, 30.0);
  EXPECT_EQ(*dflt.slidingWindow, 4096);
  EXPECT_DOUBLE_EQ(*dflt.attentionScale, 1.0 / std::sqrt(224.0));
  EXPECT_DOUBLE_EQ(dflt.rope.theta, 1e4);
  // Explicit nulls: no softcap (transformers skips the tanh for None), no
  // window (no layer slides).
  std::string nulls = gemma2;
  for (StringRef key : {"attn_logit_softcapping", "final_logit_softcapping",
                        "sliding_window", "sliding_window_size"}) {
    size_t at = nulls.find(("\"" + key + "\": ").str());
    size_t end = nulls.find(',', at);
    nulls.replace(at, end - at, ("\"" + key + "\": null").str());
  }
  ModelConfig none = parseOk(nulls);
  EXPECT_FALSE(none.attnLogitSoftcap || none.finalLogitSoftcap ||
               none.slidingWindow);
  for (const LayerAttention &l : none.layers)
    EXPECT_FALSE(l.sliding);

  EXPECT_CONTAINS(errorOf(patched(gemma2, R"({"attn_logit_softcapping": 0})")),
                  "cfg.json: attn_logit_softcapping: must be positive, got 0");
  EXPECT_CONTAINS(
      errorOf(patched(gemma2, R"({"final_logit_softcapping": -30})")),
      "final_logit_softcapping: must be positive");
  EXPECT_CONTAINS(errorOf(patched(gemma2, R"({"sliding_window_size": 2048})")),
                  "sliding_window_size: is 2048 but sliding_window is 4096");
  EXPECT_CONTAINS(
      errorOf(patched(gemma2, R"({"use_bidirectional_attention": true})")),
      "use_bidirectional_attention");
}

TEST(HFConfigTest, StableLm) {
  ModelConfig c = parseOk(stablelm2);
  EXPECT_EQ(c.normKind, NormKind::LayerNorm);
  EXPECT_TRUE(c.normBias);
  EXPECT_DOUBLE_EQ(c.normEps, 1e-5);
  EXPECT_TRUE(c.qkvBias);
  EXPECT_FALSE(c.oBias || c.qkNorm || c.parallelBlock);
  EXPECT_TRUE(c.norms.isPreNorm());
  EXPECT_DOUBLE_EQ(c.rope.partialRotaryFactor, 0.25);
  EXPECT_CONTAINS(semanticConfigJSON(c), "\"norm_kind\":\"layer_norm_bias\"");

  // stablelm-2-12b's switches: per-head LayerNorm QK norms, the parallel
  // residual with its one norm. The family's partial rotary default.
  ModelConfig big = parseOk(patched(
      stablelm2, R"({"qk_layernorm": true, "use_parallel_residual": true,
                     "partial_rotary_factor": null, "layer_norm_eps": null})"));
  EXPECT_TRUE(big.qkNorm && big.qkNormPerHeadLayerNorm && big.parallelBlock);
  EXPECT_EQ(big.norms.attnIn, "input_layernorm");
  EXPECT_EQ(big.norms.mlpIn, "");
  EXPECT_DOUBLE_EQ(big.rope.partialRotaryFactor, 0.25);
  EXPECT_DOUBLE_EQ(big.normEps, 1e-5);

  // The norm epsilon has the family's key: rms_norm_eps is unknown here.
  EXPECT_CONTAINS(errorOf(patched(stablelm2, R"({"rms_norm_eps": 1e-6})")),
                  "unknown config field 'rms_norm_eps' (not known to the "
                  "stablelm importer)");
  EXPECT_CONTAINS(errorOf(patched(stablelm2, R"({"layer_norm_eps": 0})")),
                  "cfg.json: layer_norm_eps: must be positive");
  EXPECT_CONTAINS(errorOf(patched(stablelm2, R"({"qk_layernorm": "yes"})")),
                  "qk_layernorm");
  EXPECT_CONTAINS(errorOf(patched(stablelm2, R"({"sliding_window": 8})")),
                  "stablelm has no sliding-window attention");
}

TEST(HFConfigTest, Glm) {
  ModelConfig c = parseOk(glm4);
  EXPECT_TRUE(c.qkvBias);
  EXPECT_FALSE(c.oBias || c.fusedQKV);
  EXPECT_TRUE(c.fusedGateUp);
  EXPECT_TRUE(c.rope.interleaved);
  EXPECT_DOUBLE_EQ(c.rope.partialRotaryFactor, 0.5);
  EXPECT_EQ(c.norms.attnOut, "post_self_attn_layernorm");
  EXPECT_EQ(c.norms.mlpIn, "post_attention_layernorm");
  EXPECT_EQ(c.norms.mlpOut, "post_mlp_layernorm");
  std::string semantic = semanticConfigJSON(c);
  EXPECT_CONTAINS(semantic, "\"fused_gate_up\":true");
  EXPECT_CONTAINS(semantic, "\"interleaved\":true");

  // glm: pre-norm; the family's defaults (head_dim 128, half rotary,
  // attention biases on, eps 1.5625e-7).
  ModelConfig g = parseOk(patched(
      glm4, R"({"model_type": "glm", "head_dim": null, "hidden_size": 2048,
                "partial_rotary_factor": null, "attention_bias": null,
                "rms_norm_eps": null})"));
  EXPECT_TRUE(g.norms.isPreNorm());
  EXPECT_EQ(g.headDim, 128);
  EXPECT_DOUBLE_EQ(g.rope.partialRotaryFactor, 0.5);
  EXPECT_TRUE(g.qkvBias);
  EXPECT_DOUBLE_EQ(g.normEps, 1.5625e-7);
  EXPECT_FALSE(parseOk(patched(glm4, R"({"attention_bias": false})")).qkvBias);
  EXPECT_CONTAINS(errorOf(patched(glm4, R"({"mlp_bias": false})")),
                  "unknown config field 'mlp_bias' (not known to the glm4 "
                  "importer)");
}

TEST(HFConfigTest, Cohere) {
  ModelConfig c = parseOk(cohere2);
  EXPECT_EQ(c.normKind, NormKind::LayerNorm);
  EXPECT_FALSE(c.normBias || c.qkNorm);
  EXPECT_TRUE(c.parallelBlock && c.ropeOnlySliding && c.rope.interleaved);
  EXPECT_TRUE(c.tieWordEmbeddings);
  ASSERT_TRUE(c.logitScale && c.slidingWindow);
  EXPECT_DOUBLE_EQ(*c.logitScale, 0.25);
  EXPECT_EQ(*c.slidingWindow, 4096);
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(c.layers[i].sliding, (i + 1) % 4 != 0) << "layer " << i;
  EXPECT_CONTAINS(semanticConfigJSON(c), "\"rope_only_sliding\":true");

  // The legacy keys are accepted at the values transformers assumes only.
  EXPECT_CONTAINS(errorOf(patched(cohere2, R"({"use_parallel_block": false})")),
                  "cfg.json: use_parallel_block: transformers' cohere2 ignores "
                  "it and assumes true; got false");
  EXPECT_CONTAINS(errorOf(patched(cohere2, R"({"use_qk_norm": true})")),
                  "use_qk_norm");
  EXPECT_CONTAINS(errorOf(patched(cohere2, R"({"head_dim": 64})")),
                  "head_dim: transformers' cohere2 uses hidden_size / "
                  "num_attention_heads = 128, got 64");
  EXPECT_CONTAINS(errorOf(patched(cohere2, R"({"logit_scale": 0})")),
                  "logit_scale: must be positive");

  // Command-R: no window, QK norms with [heads, head_dim] weights, the
  // family's defaults (logit_scale 0.0625, RoPE base 5e5).
  ModelConfig r = parseOk(
      patched(cohere2, R"({"model_type": "cohere", "sliding_window": null,
                   "sliding_window_pattern": null, "cache_implementation": null,
                   "order_of_interleaved_layers": null,
                   "position_embedding_type": null, "rotary_pct": null,
                   "use_embedding_sharing": null, "use_gated_activation": null,
                   "use_parallel_block": null, "use_parallel_embedding": null,
                   "use_qk_norm": true, "logit_scale": null, "rope_theta": null})"));
  EXPECT_TRUE(r.qkNorm && r.qkNormPerHeadLayerNorm && r.qkNormStacked);
  EXPECT_FALSE(r.ropeOnlySliding || r.slidingWindow);
  EXPECT_DOUBLE_EQ(*r.logitScale, 0.0625);
  EXPECT_DOUBLE_EQ(r.rope.theta, 5e5);
  EXPECT_CONTAINS(
      errorOf(patched(
          cohere2, R"({"model_type": "cohere", "sliding_window_pattern": null,
                                   "cache_implementation": null,
                                   "order_of_interleaved_layers": null,
                                   "position_embedding_type": null,
                                   "rotary_pct": null,
                                   "use_embedding_sharing": null,
                                   "use_gated_activation": null,
                                   "use_parallel_block": null,
                                   "use_parallel_embedding": null})")),
      "cohere has no sliding-window attention");
}

TEST(HFConfigTest, Starcoder2) {
  ModelConfig c = parseOk(starcoder2);
  EXPECT_EQ(c.normKind, NormKind::LayerNorm);
  EXPECT_TRUE(c.normBias && c.qkvBias && c.oBias && c.mlpBias);
  ASSERT_TRUE(c.plainMlp && c.slidingWindow);
  EXPECT_EQ(c.plainMlp->up, "c_fc");
  EXPECT_EQ(c.plainMlp->down, "c_proj");
  EXPECT_EQ(c.mlpActivation, MlpActivation::GeluTanh);
  EXPECT_EQ(*c.slidingWindow, 4096);
  EXPECT_TRUE(c.tieWordEmbeddings); // the family's default
  EXPECT_CONTAINS(semanticConfigJSON(c), "\"plain_mlp\":[\"c_fc\",\"c_proj\"]");
  ModelConfig nb = parseOk(
      patched(starcoder2, R"({"use_bias": false, "sliding_window": null})"));
  EXPECT_FALSE(nb.qkvBias || nb.oBias || nb.mlpBias || nb.slidingWindow);
  EXPECT_CONTAINS(errorOf(patched(starcoder2, R"({"mlp_type": "moe"})")),
                  "cfg.json: mlp_type: transformers' starcoder2 ignores it "
                  "and assumes \"default\"; got \"moe\"");
  EXPECT_CONTAINS(errorOf(patched(starcoder2, R"({"norm_epsilon": -1})")),
                  "norm_epsilon: must be positive");
}

TEST(HFConfigTest, Falcon) {
  ModelConfig c = parseOk(falcon7b);
  EXPECT_EQ(c.headDim, 64);
  EXPECT_EQ(c.numKvHeads, 1);
  EXPECT_EQ(c.intermediateSize, 4 * 4544);
  EXPECT_TRUE(c.fusedQKV && c.parallelBlock && c.tieWordEmbeddings);
  EXPECT_EQ(c.qkvLayout, QKVLayout::Contiguous);
  EXPECT_EQ(c.names.layers, "transformer.h");
  EXPECT_EQ(c.names.qkv, "query_key_value");
  EXPECT_EQ(c.norms.attnIn, "input_layernorm");
  EXPECT_EQ(c.norms.mlpIn, "");
  EXPECT_EQ(c.mlpActivation, MlpActivation::Gelu);
  EXPECT_FALSE(c.qkvBias || c.oBias || c.mlpBias);
  ASSERT_TRUE(c.plainMlp);
  EXPECT_EQ(c.plainMlp->up, "dense_h_to_4h");

  // The new decoder architecture (Falcon-40B): grouped QKV, two norms.
  ModelConfig n = parseOk(patched(
      falcon7b, R"({"new_decoder_architecture": true, "num_attention_heads": 64,
                    "hidden_size": 8192, "num_kv_heads": 8, "bias": true,
                    "ffn_hidden_size": 32768})"));
  EXPECT_EQ(n.numKvHeads, 8);
  EXPECT_EQ(n.qkvLayout, QKVLayout::Grouped);
  EXPECT_EQ(n.norms.attnIn, "ln_attn");
  EXPECT_EQ(n.norms.mlpIn, "ln_mlp");
  EXPECT_TRUE(n.parallelBlock && n.qkvBias && n.oBias && n.mlpBias);
  EXPECT_EQ(n.intermediateSize, 32768);
  // Falcon2-11B: one norm in the new architecture.
  EXPECT_EQ(parseOk(patched(falcon7b, R"({"new_decoder_architecture": true,
                                          "num_ln_in_parallel_attn": 1})"))
                .norms.attnIn,
            "input_layernorm");
  // Multi-head, sequential: per-head [q, k, v] rows, post_attention_layernorm.
  ModelConfig seq = parseOk(
      patched(falcon7b, R"({"multi_query": false, "parallel_attn": false})"));
  EXPECT_EQ(seq.numKvHeads, 71);
  EXPECT_EQ(seq.qkvLayout, QKVLayout::Grouped);
  EXPECT_FALSE(seq.parallelBlock);
  EXPECT_EQ(seq.norms.mlpIn, "post_attention_layernorm");

  // Falcon-RW (falcon-rw-1b's switches): ALiBi, no RoPE on any layer, the
  // multi-head form with biases and sequential blocks.
  ModelConfig rw = parseOk(patched(falcon7b, R"({"alibi": true, "bias": true,
      "multi_query": false, "parallel_attn": false, "hidden_size": 2048,
      "num_attention_heads": 32, "num_hidden_layers": 24,
      "vocab_size": 50304})"));
  EXPECT_TRUE(rw.alibi);
  ASSERT_EQ(rw.layers.size(), 24u);
  EXPECT_TRUE(
      llvm::none_of(rw.layers, [](const LayerAttention &l) { return l.rope; }));
  EXPECT_EQ(rw.numKvHeads, 32);
  EXPECT_EQ(rw.headDim, 64);
  EXPECT_EQ(rw.qkvLayout, QKVLayout::Grouped);
  EXPECT_FALSE(rw.parallelBlock);
  EXPECT_TRUE(rw.qkvBias && rw.oBias && rw.mlpBias);
  EXPECT_EQ(rw.norms.mlpIn, "post_attention_layernorm");
  EXPECT_FALSE(parseOk(falcon7b).alibi);
  EXPECT_CONTAINS(errorOf(patched(falcon7b, R"({"alibi": "yes"})")),
                  "cfg.json: alibi");
  EXPECT_CONTAINS(
      errorOf(patched(falcon7b, R"({"new_decoder_architecture": true,
                                   "num_ln_in_parallel_attn": 1,
                                   "parallel_attn": false})")),
      "parallel_attn");
  EXPECT_CONTAINS(
      errorOf(patched(falcon7b,
                      R"({"apply_residual_connection_post_layernorm": true})")),
      "apply_residual_connection_post_layernorm");
  EXPECT_CONTAINS(errorOf(patched(falcon7b, R"({"activation": "relu"})")),
                  "activation: unsupported activation 'relu'");
  EXPECT_CONTAINS(errorOf(patched(falcon7b, R"({"intermediate_size": 4})")),
                  "cfg.json: intermediate_size: transformers' falcon ignores "
                  "it (it reads ffn_hidden_size), got 4");
  EXPECT_CONTAINS(errorOf(patched(falcon7b, R"({"hidden_act": "silu"})")),
                  "hidden_act: transformers' falcon ignores it");
  // Without a hook that sets it, intermediate_size is required.
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"intermediate_size": null})")),
                  "cfg.json: intermediate_size: required field is missing");
}

/// Phi-4-mini's config: top-level original_max_position_embeddings (which
/// wins over the dict's), partial rotary, fused projections, the keys its
/// remote code reads at transformers' values.
const char *phi4mini = R"({
  "architectures": ["Phi3ForCausalLM"], "model_type": "phi3",
  "attention_bias": false, "embd_pdrop": 0.0, "full_attn_mod": 1,
  "hidden_act": "silu", "hidden_size": 3072, "intermediate_size": 8192,
  "interpolate_factor": 1, "lm_head_bias": false,
  "max_position_embeddings": 131072, "mlp_bias": false,
  "num_attention_heads": 24, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "original_max_position_embeddings": 4096,
  "partial_rotary_factor": 0.75, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05,
  "rope_scaling": {"type": "longrope",
    "long_factor": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,
                    23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,
                    42,43,44,45,46,47,48],
    "short_factor": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
                     1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]},
  "rope_theta": 10000.0, "sliding_window": 262144,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "vocab_size": 200064})";

TEST(HFConfigTest, Phi3) {
  ModelConfig c = parseOk(phi4mini);
  EXPECT_TRUE(c.fusedQKV && c.fusedGateUp);
  EXPECT_EQ(c.rope.kind, RopeScaling::Kind::LongRope);
  EXPECT_EQ(c.rope.originalMaxPositionEmbeddings, 4096);
  EXPECT_DOUBLE_EQ(*c.rope.factor, 32.0);
  EXPECT_EQ(c.rope.longFactor.size(), 48u);
  EXPECT_EQ(c.slidingWindow, 262144);
  EXPECT_CONTAINS(semanticConfigJSON(c), "\"long_factor\":[1,2,3");
  // The top-level L0 wins over the dict's, as in transformers.
  ModelConfig d = parseOk(patched(phi4mini, R"({"rope_scaling": {
      "type": "longrope", "original_max_position_embeddings": 8,
      "long_factor": [2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,
                      2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2],
      "short_factor": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
                       1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}})"));
  EXPECT_EQ(d.rope.originalMaxPositionEmbeddings, 4096);
  // Phi3Config takes only default and longrope.
  EXPECT_CONTAINS(errorOf(patched(phi4mini, R"({"rope_scaling":
                     {"rope_type": "linear", "factor": 2.0}})")),
                  "rope_scaling: phi3 takes rope type default or longrope, "
                  "got 'linear'");
  EXPECT_CONTAINS(errorOf(patched(phi4mini, R"({"lm_head_bias": true})")),
                  "lm_head_bias: transformers' phi3 ignores it and assumes "
                  "false; got true");
  // Unscaled: the family's L0 is not part of the model.
  ModelConfig u = parseOk(patched(phi4mini, R"({"rope_scaling": null})"));
  EXPECT_EQ(u.rope.kind, RopeScaling::Kind::Default);
  EXPECT_FALSE(u.rope.originalMaxPositionEmbeddings.has_value());
}

TEST(HFConfigTest, InternLM2) {
  ModelConfig c = parseOk(internlm25);
  EXPECT_TRUE(c.fusedQKV);
  EXPECT_EQ(c.qkvLayout, QKVLayout::Grouped);
  EXPECT_FALSE(c.qkvBias || c.oBias);
  EXPECT_EQ(c.names.qkv, "wqkv");
  EXPECT_EQ(c.names.head, "output");
  EXPECT_EQ(c.norms.attnIn, "attention_norm");
  EXPECT_EQ(c.norms.mlpIn, "ffn_norm");
  EXPECT_EQ(c.rope.kind, RopeScaling::Kind::Dynamic);
  EXPECT_CONTAINS(semanticConfigJSON(c), "\"qkv_layout\":\"grouped\"");
  // InternLM2Config's default puts biases on wqkv and wo.
  ModelConfig b = parseOk(patched(internlm25, R"({"bias": null})"));
  EXPECT_TRUE(b.qkvBias && b.oBias);
  EXPECT_FALSE(b.mlpBias);
  EXPECT_CONTAINS(errorOf(patched(internlm25, R"({"bias": 1})")),
                  "cfg.json: bias: expected true or false, got 1");
}

TEST(HFConfigTest, Gpt2) {
  ModelConfig c = parseOk(gpt2);
  // GPT2Config's names of the common keys (its attribute_map).
  EXPECT_EQ(c.hiddenSize, 768);
  EXPECT_EQ(c.numLayers, 12);
  EXPECT_EQ(c.numHeads, 12);
  EXPECT_EQ(c.numKvHeads, 12);
  EXPECT_EQ(c.headDim, 64);
  EXPECT_EQ(c.maxPositionEmbeddings, 1024);
  EXPECT_EQ(c.intermediateSize, 4 * 768); // n_inner absent (or null)
  EXPECT_EQ(c.vocabSize, 50257);
  EXPECT_EQ(c.normEps, 1e-5);
  EXPECT_EQ(c.hiddenAct, "gelu_new");
  EXPECT_EQ(c.mlpActivation, MlpActivation::GeluTanh);
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_TRUE(c.learnedPositions && c.conv1dWeights && c.fusedQKV);
  EXPECT_TRUE(c.qkvBias && c.oBias && c.mlpBias && c.normBias);
  EXPECT_EQ(c.normKind, NormKind::LayerNorm);
  EXPECT_EQ(c.qkvLayout, QKVLayout::Contiguous);
  EXPECT_EQ(c.names.layers, "transformer.h");
  EXPECT_EQ(c.names.attn, "attn");
  EXPECT_EQ(c.names.qkv, "c_attn");
  EXPECT_EQ(c.names.o, "c_proj");
  EXPECT_EQ(c.names.embed, "transformer.wte");
  EXPECT_EQ(c.names.positions, "transformer.wpe");
  EXPECT_EQ(c.names.finalNorm, "transformer.ln_f");
  EXPECT_EQ(c.norms.attnIn, "ln_1");
  EXPECT_EQ(c.norms.mlpIn, "ln_2");
  ASSERT_TRUE(c.plainMlp);
  EXPECT_EQ(c.plainMlp->up, "c_fc");
  EXPECT_EQ(c.plainMlp->down, "c_proj");
  ASSERT_EQ(c.layers.size(), 12u);
  for (const LayerAttention &l : c.layers)
    EXPECT_FALSE(l.rope || l.sliding);
  EXPECT_FALSE(c.attentionScale);
  EXPECT_FALSE(c.attentionScaleByInverseLayer);
  std::string identity = semanticConfigJSON(c);
  EXPECT_CONTAINS(identity, "\"conv1d_weights\":true");
  EXPECT_CONTAINS(identity, "\"learned_positions\":\"transformer.wpe\"");

  ModelConfig i = parseOk(patched(gpt2, R"({"n_inner": 1000,
      "activation_function": "gelu", "scale_attn_weights": false,
      "scale_attn_by_inverse_layer_idx": true,
      "reorder_and_upcast_attn": true})"));
  EXPECT_EQ(i.intermediateSize, 1000);
  EXPECT_EQ(i.mlpActivation, MlpActivation::Gelu);
  EXPECT_EQ(i.attentionScale, 1.0);
  EXPECT_TRUE(i.attentionScaleByInverseLayer);

  // Errors name the key the config uses.
  EXPECT_CONTAINS(errorOf(patched(gpt2, R"({"n_embd": null})")),
                  "cfg.json: n_embd: required field is missing");
  EXPECT_CONTAINS(errorOf(patched(gpt2, R"({"n_head": 7})")),
                  "cfg.json: n_head: 7 does not divide n_embd (768)");
  EXPECT_CONTAINS(errorOf(patched(gpt2, R"({"n_layer": "12"})")),
                  "cfg.json: n_layer:");
  EXPECT_CONTAINS(errorOf(patched(gpt2, R"({"activation_function": "relu"})")),
                  "cfg.json: activation_function: unsupported activation "
                  "'relu'");
  // The common names are not GPT-2's.
  EXPECT_CONTAINS(errorOf(patched(gpt2, R"({"hidden_size": 768})")),
                  "unknown config field 'hidden_size' (not known to the gpt2 "
                  "importer; gpt2 names it n_embd)");
  EXPECT_CONTAINS(errorOf(patched(gpt2, R"({"hidden_act": "gelu"})")),
                  "gpt2 names it activation_function");
  // Refused semantics, by name.
  EXPECT_CONTAINS(errorOf(patched(gpt2, R"({"add_cross_attention": true})")),
                  "cfg.json: add_cross_attention: cross-attention layers");
  EXPECT_CONTAINS(errorOf(patched(gpt2, R"({"rope_theta": 10000})")),
                  "cfg.json: rope_theta: transformers' gpt2 ignores it");
  EXPECT_CONTAINS(errorOf(patched(gpt2, R"({"sliding_window": 8})")),
                  "cfg.json: sliding_window: gpt2 has no sliding-window");
  EXPECT_CONTAINS(
      errorOf(patched(gpt2, R"({"scale_attn_weights": 1})")),
      "cfg.json: scale_attn_weights: expected true or false, got 1");
}

TEST(HFConfigTest, LayerTypes) {
  std::string full = "[";
  for (int i = 0; i < 36; ++i)
    full += std::string(i ? "," : "") + "\"full_attention\"";
  full += "]";
  EXPECT_TRUE(
      parseOk(patched(qwen3, ("{\"layer_types\": " + full + "}").c_str()))
          .qkNorm);
  std::string mixed = full;
  mixed.replace(mixed.rfind("full_attention"), 14, "sliding_attention");
  EXPECT_CONTAINS(
      errorOf(patched(qwen3, ("{\"layer_types\": " + mixed + "}").c_str())),
      "layer_types[35]: 'sliding_attention' but qwen3 has no sliding window");

  // A family with a window: each layer as layer_types says.
  std::string pattern = "[";
  for (int i = 0; i < 32; ++i)
    pattern += std::string(i ? "," : "") +
               (i % 4 == 3 ? "\"full_attention\"" : "\"sliding_attention\"");
  pattern += "]";
  ModelConfig m = parseOk(
      patched(mistral01, ("{\"layer_types\": " + pattern + "}").c_str()));
  ASSERT_EQ(m.layers.size(), 32u);
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(m.layers[i].sliding, i % 4 != 3) << "layer " << i;
  EXPECT_CONTAINS(semanticConfigJSON(m), "\"full_attention_layers\":[3,7,");
  // Uniform layers leave the program identity as before.
  EXPECT_EQ(semanticConfigJSON(parseOk(mistral01)).find("full_attention"),
            std::string::npos);
  EXPECT_CONTAINS(
      errorOf(patched(mistral01, R"({"layer_types": ["chunked_attention"]})")),
      "has 1 entries but num_hidden_layers is 32");
  std::string chunked = pattern;
  chunked.replace(chunked.find("sliding_attention"), 17, "chunked_attention");
  EXPECT_CONTAINS(
      errorOf(
          patched(mistral01, ("{\"layer_types\": " + chunked + "}").c_str())),
      "layer_types[0]: 'chunked_attention' but mistral has no attention "
      "chunk size here");
}

TEST(HFConfigTest, TorchDtypeV5Spelling) {
  ModelConfig c =
      parseOk(patched(qwen3, R"({"torch_dtype": null, "dtype": "float16"})"));
  EXPECT_EQ(c.torchDtype, "float16");
}

TEST(HFConfigTest, Gptq) {
  ModelConfig c = parseOk(patched(llama31, R"({"torch_dtype": "float16",
      "quantization_config": {"quant_method": "gptq", "bits": 4,
        "group_size": 128, "desc_act": false, "sym": true,
        "damp_percent": 0.01, "true_sequential": true, "static_groups": false,
        "model_name_or_path": null, "model_file_base_name": "model",
        "lm_head": false, "checkpoint_format": "gptq",
        "meta": {"quantizer": ["gptqmodel:1.0"]}, "pack_dtype": "int32"}})"));
  ASSERT_TRUE(c.gptq);
  EXPECT_EQ(c.gptq->bits, 4);
  EXPECT_EQ(c.gptq->groupSize, 128);
  EXPECT_TRUE(c.gptq->sym);
  EXPECT_TRUE(c.gptq->zeroMinusOne);

  ModelConfig v2 = parseOk(patched(llama31, R"({"quantization_config":
      {"quant_method": "gptq", "bits": 8, "group_size": -1, "sym": false,
       "checkpoint_format": "gptq_v2"}})"));
  ASSERT_TRUE(v2.gptq);
  EXPECT_EQ(v2.gptq->bits, 8);
  EXPECT_EQ(v2.gptq->groupSize, -1);
  EXPECT_FALSE(v2.gptq->sym);
  EXPECT_FALSE(v2.gptq->zeroMinusOne);
}

TEST(HFConfigTest, GptqErrors) {
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"quantization_config":
      {"quant_method": "gptq", "bits": 4, "group_size": 128,
       "desc_act": true}})")),
                  "act-order (desc_act) not supported");
  std::string awq = errorOf(patched(llama31, R"({"quantization_config":
      {"quant_method": "awq", "bits": 4}})"));
  EXPECT_CONTAINS(awq, "quantization_config.quant_method");
  EXPECT_CONTAINS(awq, "'awq'");
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"quantization_config":
      {"quant_method": "gptq", "bits": 3}})")),
                  "quantization_config.bits");
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"quantization_config":
      {"quant_method": "gptq", "bits": 4, "group_size": 0}})")),
                  "quantization_config.group_size");
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"quantization_config":
      {"quant_method": "gptq", "bits": 4, "checkpoint_format": "marlin"}})")),
                  "quantization_config.checkpoint_format");
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"quantization_config":
      {"quant_method": "gptq", "bits": 4, "lm_head": true}})")),
                  "quantization_config.lm_head");
  EXPECT_CONTAINS(errorOf(patched(llama31, R"({"quantization_config":
      {"quant_method": "gptq", "bits": 4, "weird": 1}})")),
                  "quantization_config.weird");
}

TEST(HFConfigTest, Mixtral) {
  ModelConfig c = parseOk(mixtral8x7b);
  EXPECT_EQ(c.modelType, "mixtral");
  EXPECT_EQ(c.numKvHeads, 8);
  EXPECT_EQ(c.headDim, 128);
  EXPECT_FALSE(c.slidingWindow); // null: full attention
  EXPECT_FALSE(c.qkvBias);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e6);
  EXPECT_DOUBLE_EQ(c.normEps, 1e-5);
  ASSERT_TRUE(c.moe);
  EXPECT_EQ(c.moe->numExperts, 8);
  EXPECT_EQ(c.moe->topK, 2);
  EXPECT_EQ(c.moe->intermediateSize, 14336); // the experts' width
  EXPECT_TRUE(c.moe->renormalize);
  EXPECT_EQ(c.moe->sharedIntermediateSize, 0);
  EXPECT_FALSE(c.moe->sharedExpertGate);
  EXPECT_EQ(c.moe->block, "block_sparse_moe");
  EXPECT_EQ(c.moe->gate, "w1");
  EXPECT_EQ(c.moe->up, "w3");
  EXPECT_EQ(c.moe->down, "w2");
  EXPECT_EQ(c.moe->sparse, std::vector<bool>(32, true));
  EXPECT_CONTAINS(semanticConfigJSON(c), "\"moe\":{");

  // Defaults of MixtralConfig; a window; the alias num_experts.
  ModelConfig d = parseOk(patched(mixtral8x7b, R"({"num_local_experts": null,
      "num_experts_per_tok": null, "rope_theta": null, "sliding_window": 4096,
      "router_jitter_noise": 0.01})"));
  EXPECT_EQ(d.moe->numExperts, 8);
  EXPECT_EQ(d.moe->topK, 2);
  EXPECT_DOUBLE_EQ(d.rope.theta, 1e6);
  EXPECT_EQ(d.slidingWindow, 4096);
  EXPECT_EQ(parseOk(patched(mixtral8x7b, R"({"num_local_experts": null,
                "num_experts": 4})"))
                .moe->numExperts,
            4);

  std::string msg =
      errorOf(patched(mixtral8x7b, R"({"num_experts_per_tok": 9})"));
  EXPECT_CONTAINS(msg, "num_experts_per_tok: selects 9 experts but there are "
                       "only 8 (num_local_experts)");
  EXPECT_CONTAINS(errorOf(patched(mixtral8x7b, R"({"num_experts": 4})")),
                  "num_experts: is 4 but num_local_experts is 8");
  EXPECT_CONTAINS(errorOf(patched(mixtral8x7b, R"({"num_local_experts": 0})")),
                  "num_local_experts: must be positive");
  EXPECT_CONTAINS(
      errorOf(patched(mixtral8x7b, R"({"router_jitter_noise": -1})")),
      "router_jitter_noise: must be non-negative");
  EXPECT_CONTAINS(
      errorOf(patched(mixtral8x7b, R"({"output_router_logits": "yes"})")),
      "output_router_logits");
  // MixtralConfig has no attention_bias, and no Qwen keys.
  EXPECT_CONTAINS(errorOf(patched(mixtral8x7b, R"({"attention_bias": true})")),
                  "unknown config field 'attention_bias' (not known to the "
                  "mixtral importer)");
  EXPECT_CONTAINS(
      errorOf(patched(mixtral8x7b, R"({"moe_intermediate_size": 64})")),
      "unknown config field 'moe_intermediate_size'");
}

TEST(HFConfigTest, Qwen2Moe) {
  ModelConfig c = parseOk(qwen15moe);
  EXPECT_EQ(c.modelType, "qwen2_moe");
  EXPECT_EQ(c.numKvHeads, 16);
  EXPECT_TRUE(c.qkvBias);
  EXPECT_FALSE(c.oBias);
  EXPECT_FALSE(c.slidingWindow); // use_sliding_window false
  EXPECT_EQ(c.intermediateSize, 5632);
  ASSERT_TRUE(c.moe);
  EXPECT_EQ(c.moe->numExperts, 60);
  EXPECT_EQ(c.moe->topK, 4);
  EXPECT_EQ(c.moe->intermediateSize, 1408);
  EXPECT_FALSE(c.moe->renormalize);
  EXPECT_EQ(c.moe->sharedIntermediateSize, 5632);
  EXPECT_TRUE(c.moe->sharedExpertGate);
  EXPECT_EQ(c.moe->block, "mlp");
  EXPECT_EQ(c.moe->gate, "gate_proj");
  EXPECT_EQ(c.moe->sparse, std::vector<bool>(24, true));

  // Dense layers: mlp_only_layers and decoder_sparse_step.
  ModelConfig d = parseOk(patched(qwen15moe, R"({"mlp_only_layers": [0, 5],
      "decoder_sparse_step": 2, "qkv_bias": false, "norm_topk_prob": true})"));
  std::vector<bool> want(24, false);
  for (int i = 1; i < 24; i += 2)
    want[i] = i != 5;
  EXPECT_EQ(d.moe->sparse, want);
  EXPECT_FALSE(d.qkvBias);
  EXPECT_TRUE(d.moe->renormalize);
  // No experts at all: every layer dense.
  EXPECT_FALSE(parseOk(patched(qwen15moe, R"({"num_experts": 0})")).moe);

  EXPECT_CONTAINS(errorOf(patched(qwen15moe, R"({"num_experts_per_tok": 61})")),
                  "num_experts_per_tok: selects 61 experts but there are only "
                  "60 (num_experts)");
  EXPECT_CONTAINS(
      errorOf(patched(qwen15moe, R"({"mlp_only_layers": [24]})")),
      "mlp_only_layers: lists layer 24 but num_hidden_layers is 24");
  EXPECT_CONTAINS(errorOf(patched(qwen15moe, R"({"mlp_only_layers": [-1]})")),
                  "mlp_only_layers[0]");
  EXPECT_CONTAINS(errorOf(patched(qwen15moe, R"({"decoder_sparse_step": 0})")),
                  "decoder_sparse_step: must be positive");
  EXPECT_CONTAINS(
      errorOf(patched(qwen15moe, R"({"shared_expert_intermediate_size": 0})")),
      "shared_expert_intermediate_size: must be positive");
  std::string msg =
      errorOf(patched(qwen15moe, R"({"use_sliding_window": true})"));
  EXPECT_CONTAINS(msg, "use_sliding_window");
  EXPECT_CONTAINS(msg, "not supported");
  // Qwen2MoeConfig has neither num_local_experts nor router_jitter_noise.
  EXPECT_CONTAINS(errorOf(patched(qwen15moe, R"({"num_local_experts": 60})")),
                  "unknown config field 'num_local_experts'");
  EXPECT_CONTAINS(errorOf(patched(qwen15moe, R"({"router_jitter_noise": 0})")),
                  "unknown config field 'router_jitter_noise'");
}

TEST(HFConfigTest, Qwen3Moe) {
  ModelConfig c = parseOk(qwen3moe);
  EXPECT_EQ(c.modelType, "qwen3_moe");
  EXPECT_EQ(c.headDim, 128);
  EXPECT_EQ(c.numKvHeads, 4);
  EXPECT_TRUE(c.qkNorm);
  EXPECT_FALSE(c.qkvBias);
  EXPECT_FALSE(c.oBias);
  EXPECT_FALSE(c.slidingWindow);
  ASSERT_TRUE(c.moe);
  EXPECT_EQ(c.moe->numExperts, 128);
  EXPECT_EQ(c.moe->topK, 8);
  EXPECT_EQ(c.moe->intermediateSize, 768);
  EXPECT_TRUE(c.moe->renormalize);
  EXPECT_EQ(c.moe->sharedIntermediateSize, 0);
  EXPECT_EQ(c.moe->sparse, std::vector<bool>(48, true));

  // transformers 5 writes num_experts as num_local_experts.
  ModelConfig v5 = parseOk(patched(qwen3moe, R"({"num_experts": null,
      "num_local_experts": 64, "decoder_sparse_step": 3,
      "attention_bias": true})"));
  EXPECT_EQ(v5.moe->numExperts, 64);
  std::vector<bool> want(48, false);
  for (int i = 2; i < 48; i += 3)
    want[i] = true;
  EXPECT_EQ(v5.moe->sparse, want);
  EXPECT_TRUE(v5.qkvBias);
  EXPECT_TRUE(v5.oBias);

  EXPECT_CONTAINS(errorOf(patched(qwen3moe, R"({"num_local_experts": 64})")),
                  "num_local_experts: is 64 but num_experts is 128");
  EXPECT_CONTAINS(
      errorOf(patched(qwen3moe, R"({"num_experts_per_tok": 129})")),
      "num_experts_per_tok: selects 129 experts but there are only 128");
  EXPECT_CONTAINS(
      errorOf(patched(qwen3moe, R"({"shared_expert_intermediate_size": 8})")),
      "unknown config field 'shared_expert_intermediate_size'");
}

TEST(HFConfigTest, MoETrainingKeysHaveNoEffect) {
  SmallString<128> dir;
  ASSERT_FALSE(sys::fs::createUniqueDirectory("pimc-hfconfig-moe", dir));
  SmallString<128> path(dir);
  sys::path::append(path, "config.json");
  {
    std::error_code ec;
    raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    os << patched(mixtral8x7b, R"({"router_jitter_noise": 0.0})");
  }
  Expected<ConfigSupport> report = analyzeConfigSupport(path);
  ASSERT_TRUE(bool(report)) << toString(report.takeError());
  EXPECT_TRUE(report->supported());
  for (const ConfigFeature &f : report->features) {
    bool training = f.field == "router_jitter_noise" ||
                    f.field == "router_aux_loss_coef" ||
                    f.field == "output_router_logits";
    bool routing =
        f.field == "num_local_experts" || f.field == "num_experts_per_tok";
    if (training) {
      EXPECT_EQ(f.status, ConfigFeature::Status::NoEffect) << f.field;
    }
    if (routing) {
      EXPECT_EQ(f.status, ConfigFeature::Status::Honoured) << f.field;
    }
  }
  sys::fs::remove_directories(dir);
}

TEST(HFConfigTest, ReadsFileOrDirectory) {
  SmallString<128> dir;
  ASSERT_FALSE(sys::fs::createUniqueDirectory("pimc-hfconfig", dir));
  SmallString<128> path(dir);
  sys::path::append(path, "config.json");
  {
    std::error_code ec;
    raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    os << qwen3;
  }
  Expected<ModelConfig> fromFile = parseModelConfig(path);
  ASSERT_TRUE(bool(fromFile)) << toString(fromFile.takeError());
  EXPECT_EQ(fromFile->modelType, "qwen3");
  Expected<ModelConfig> fromDir = parseModelConfig(dir);
  ASSERT_TRUE(bool(fromDir)) << toString(fromDir.takeError());
  EXPECT_EQ(fromDir->numLayers, 36);

  SmallString<128> missing(dir);
  sys::path::append(missing, "nope.json");
  Expected<ModelConfig> bad = parseModelConfig(missing);
  ASSERT_FALSE(bool(bad));
  EXPECT_CONTAINS(toString(bad.takeError()), "nope.json: cannot read");
  sys::fs::remove_directories(dir);
}

} // namespace

namespace {
const char *llama4Small = R"({"model_type": "llama4_text", "hidden_size": 64,
  "intermediate_size": 32, "intermediate_size_mlp": 128,
  "num_hidden_layers": 8, "num_attention_heads": 4,
  "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100})";
const char *deepseekV3Small = R"({"model_type": "deepseek_v3",
  "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
  "num_attention_heads": 4, "num_key_value_heads": 128, "vocab_size": 100,
  "n_routed_experts": 16, "n_group": 4, "topk_group": 2,
  "num_experts_per_tok": 4, "first_k_dense_replace": 1, "q_lora_rank": null,
  "kv_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8,
  "v_head_dim": 12, "moe_intermediate_size": 24})";
} // namespace

// Llama4TextConfig's defaults: NoPE every 4th layer, chunks of 8192 on the
// RoPE layers, the QK norm and the temperature on, MoE on every layer
// (16 experts, top-1) of width intermediate_size, the dense width
// intermediate_size_mlp; an empty no_rope_layers is the default pattern.
TEST(HFConfigTest, Llama4TextDefaults) {
  for (const char *patch : {"{}", R"({"no_rope_layers": []})"}) {
    ModelConfig c = parseOk(patched(llama4Small, patch));
    ASSERT_EQ(c.layers.size(), 8u);
    for (int64_t i = 0; i < 8; ++i) {
      bool nope = (i + 1) % 4 == 0;
      EXPECT_EQ(c.layers[i].rope, !nope) << i;
      EXPECT_EQ(c.layers[i].chunked, !nope) << i;
    }
    EXPECT_EQ(c.attentionChunkSize, 8192);
    EXPECT_TRUE(c.l2QkNorm);
    ASSERT_TRUE(c.temperatureTuning);
    EXPECT_EQ(c.temperatureTuning->floorScale, 8192);
    EXPECT_DOUBLE_EQ(c.temperatureTuning->scale, 0.1);
    EXPECT_TRUE(c.rope.interleaved);
    EXPECT_EQ(c.intermediateSize, 128);
    ASSERT_TRUE(c.moe);
    EXPECT_EQ(c.moe->intermediateSize, 32);
    EXPECT_EQ(c.moe->sharedIntermediateSize, 32);
    EXPECT_EQ(c.moe->numExperts, 16);
    EXPECT_EQ(c.moe->topK, 1);
    EXPECT_TRUE(c.moe->weightOnInput && c.moe->sigmoidScores &&
                c.moe->topkThenScore && c.moe->fusedConcatenated);
    EXPECT_EQ(c.moe->sparse, std::vector<bool>(8, true));
  }
  // Null chunks (an explicit null: patched() would drop the key), no
  // tuning, MoE every other layer.
  std::string nullChunks =
      R"({"attention_chunk_size": null, )" +
      patched(llama4Small, R"({"attn_temperature_tuning": false,
          "interleave_moe_layer_step": 2})")
          .substr(1);
  ModelConfig d = parseOk(nullChunks);
  EXPECT_FALSE(d.attentionChunkSize);
  EXPECT_FALSE(d.layers[0].chunked);
  EXPECT_FALSE(d.temperatureTuning);
  EXPECT_EQ(d.moe->sparse, std::vector<bool>({false, true, false, true, false,
                                              true, false, true}));
}

// DeepSeek-V3: MLA's geometry (head_dim is the rotary part; the KV heads,
// left at transformers' default of 128, have no effect), the grouped,
// bias-corrected routing, the first layer dense.
TEST(HFConfigTest, DeepSeekV3) {
  ModelConfig c = parseOk(deepseekV3Small);
  ASSERT_TRUE(c.mla);
  EXPECT_EQ(c.mla->qLoraRank, 0); // null: one q_proj
  EXPECT_EQ(c.mla->kvLoraRank, 16);
  EXPECT_EQ(c.mla->valueDim, 12);
  EXPECT_TRUE(c.mla->ropeInterleaved);
  EXPECT_EQ(c.headDim, 8);
  EXPECT_EQ(c.numKvHeads, 4);
  ASSERT_TRUE(c.moe);
  EXPECT_TRUE(c.moe->sigmoidScores && c.moe->correctionBias &&
              c.moe->renormalize);
  EXPECT_EQ(c.moe->nGroup, 4);
  EXPECT_EQ(c.moe->topkGroup, 2);
  EXPECT_EQ(c.moe->groupScoreTopk, 2);
  EXPECT_DOUBLE_EQ(c.moe->renormalizeEpsilon, 1e-20);
  EXPECT_DOUBLE_EQ(c.moe->routedScalingFactor, 2.5);
  EXPECT_EQ(c.moe->sharedIntermediateSize, 24);
  EXPECT_EQ(c.moe->sparse, std::vector<bool>({false, true, true, true}));
  EXPECT_CONTAINS(semanticConfigJSON(c), "\"mla\":{");
  EXPECT_CONTAINS(errorOf(patched(deepseekV3Small, R"({"head_dim": 16})")),
                  "head_dim: is 16 but MLA's rotary head dim "
                  "(qk_rope_head_dim) is 8");
}

namespace {
const char *falconH1Small = R"({"model_type": "falcon_h1",
  "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
  "mamba_d_ssm": 96, "mamba_n_heads": 6, "mamba_n_groups": 2,
  "mamba_d_state": 8, "mamba_rms_norm": true,
  "time_step_limit": [0.0, {"__float__": "Infinity"}],
  "ssm_multipliers": [1.0, 0.5, 2.0, 1.0, 3.0], "key_multiplier": 0.25,
  "mlp_multipliers": [1.5, 1.0], "lm_head_multiplier": 0.125})";
} // namespace

// Falcon-H1: Mamba-2 in parallel with attention on every layer; the muP
// multipliers (1 is no multiplier); transformers 5's encoding of an
// infinite time-step limit.
TEST(HFConfigTest, FalconH1) {
  ModelConfig c = parseOk(falconH1Small);
  ASSERT_TRUE(c.mamba);
  const MambaConfig &m = *c.mamba;
  EXPECT_FALSE(m.mamba1);
  EXPECT_EQ(m.dInner, 96);
  EXPECT_EQ(m.numHeads, 6);
  EXPECT_EQ(m.headDim, 16);
  EXPECT_EQ(m.nGroups, 2);
  EXPECT_EQ(m.convChannels(), 96 + 2 * 2 * 8);
  EXPECT_EQ(m.gate, MambaConfig::Gate::NormBeforeGate);
  EXPECT_TRUE(m.normGrouped);
  EXPECT_FALSE(m.dtClampMax);
  ASSERT_TRUE(m.projMultipliers);
  EXPECT_EQ((*m.projMultipliers)[4], 3.0);
  ASSERT_EQ(c.layers.size(), 2u);
  EXPECT_EQ(c.layers[1].mixer, LayerAttention::Mixer::Parallel);
  EXPECT_EQ(c.mup.key, 0.25);
  EXPECT_EQ(c.mup.mlpGate, 1.5);
  EXPECT_FALSE(c.mup.mlpDown);
  EXPECT_FALSE(c.mup.attentionIn);
  EXPECT_EQ(c.logitScale, 0.125);
  EXPECT_EQ(c.names.finalNorm, "model.final_layernorm");
  EXPECT_CONTAINS(semanticConfigJSON(c), "\"mamba\":{");
  // A finite limit clamps; heads must divide the width.
  ModelConfig clamped =
      parseOk(patched(falconH1Small, R"({"time_step_limit": [0.001, 0.1]})"));
  EXPECT_TRUE(clamped.mamba->dtClampMax);
  EXPECT_DOUBLE_EQ(clamped.mamba->dtMax, 0.1);
  EXPECT_CONTAINS(
      errorOf(patched(falconH1Small, R"({"time_step_limit": [1.0, 0.5]})")),
      "time_step_limit: must be [min, max] with 0 <= min <= max");
  EXPECT_CONTAINS(errorOf(patched(falconH1Small, R"({"mamba_n_heads": 5})")),
                  "mamba_n_heads: 5 does not divide the mixer's width 96");
  EXPECT_CONTAINS(
      errorOf(patched(falconH1Small, R"({"ssm_multipliers": [1.0, 2.0]})")),
      "ssm_multipliers: has 2 entries, expected 5");
  EXPECT_CONTAINS(errorOf(patched(falconH1Small,
                                  R"({"layer_types": ["hybrid", "mamba2"]})")),
                  "layer_types[1]");
}
