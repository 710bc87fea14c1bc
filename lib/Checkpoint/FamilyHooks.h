//===- FamilyHooks.h - config readers shared by family hooks -*- C++ -*-===//
//
// Internal to lib/Checkpoint: the readers more than one family's hook
// uses (Families.cpp, HybridFamilies.cpp). Each reads top-level config
// fields into ModelConfig; errors name the field.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_CHECKPOINT_FAMILYHOOKS_H
#define PIMC_CHECKPOINT_FAMILYHOOKS_H

#include "pimc/Checkpoint/Families.h"

namespace pimc::ckpt::detail {

/// Largest expert count pimc reads (far above any released model: 256 for
/// DeepSeek-V3), so that the importer's loops over experts stay bounded.
constexpr int64_t kMaxExperts = int64_t(1) << 14;

/// `attention_bias`: a bias on all four attention projections.
llvm::Error readAttentionBias(const JSONFields &f, ModelConfig &cfg);
/// `mlp_bias`.
llvm::Error readMlpBias(const JSONFields &f, ModelConfig &cfg);
/// A family without sliding-window attention refuses a window it is given.
llvm::Error noWindow(const JSONFields &f, const ModelConfig &cfg);
/// A number that must be positive; `dflt` when absent.
llvm::Expected<double> positiveOr(const JSONFields &f, llvm::StringRef key,
                                  double dflt);
/// Llama's switches (attention and MLP biases, no window).
llvm::Error configureLlama(const JSONFields &f, ModelConfig &cfg);
/// Qwen3's attention: per-head QK norms, attention_bias, no window.
llvm::Error configureQwen3(const JSONFields &f, ModelConfig &cfg);
/// Granite's muP multipliers (embedding, residual, logits_scaling,
/// attention_multiplier) on top of Llama's switches.
llvm::Error configureGranite(const JSONFields &f, ModelConfig &cfg);
/// The routing keys every MoE family shares (Families.cpp states them).
llvm::Error readRouting(const JSONFields &f, MoEConfig &moe,
                        llvm::StringRef key, llvm::StringRef alias,
                        int64_t defaultExperts, int64_t minExperts,
                        int64_t defaultTopK);
/// The Qwen MoE layers (num_experts, moe_intermediate_size, norm_topk_prob,
/// decoder_sparse_step, mlp_only_layers).
llvm::Error readQwenMoE(const JSONFields &f, ModelConfig &cfg,
                        llvm::StringRef alias, int64_t defaultExperts,
                        int64_t defaultTopK, int64_t defaultWidth,
                        MoEConfig &moe);

/// The hybrid recurrent families (HybridFamilies.cpp), in `pimc support`'s
/// order after the others.
llvm::ArrayRef<FamilySpec> hybridFamilies();

} // namespace pimc::ckpt::detail

#endif // PIMC_CHECKPOINT_FAMILYHOOKS_H
