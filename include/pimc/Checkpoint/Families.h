//===- Families.h - the architecture registry, keyed by model_type -*- C++
//-*-===//
//
// A family is a Hugging Face `model_type` the decoder template covers,
// stated as data plus the code that differs:
//
//  * the config keys it reads beyond the common ones (HFConfig.cpp), so an
//    unknown key is an error naming the family;
//  * the defaults of its PretrainedConfig (max positions, activation, tied
//    head, RoPE base, norm epsilon) for keys a config leaves out;
//  * a hook that reads its own switches (biases, windows, QK norms, norm
//    weight convention, embedding scale, NoPE layers, ...) into
//    ModelConfig's features. A hook that sets ModelConfig::layers states
//    every layer; otherwise each layer slides when the family has a window.
//    `layer_types` then overrides the sliding of each layer.
//
// The importer builds a model from ModelConfig's features alone, so adding a
// family is one entry here (and its tests), not a new builder.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_CHECKPOINT_FAMILIES_H
#define PIMC_CHECKPOINT_FAMILIES_H

#include "pimc/Checkpoint/HFConfig.h"
#include "pimc/Support/JSONFields.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace pimc::ckpt {

/// A common key under the family's own name (transformers' attribute_map:
/// GPT-2's n_embd is hidden_size).
struct KeyName {
  llvm::StringLiteral common, own;
};

struct FamilySpec {
  llvm::StringLiteral modelType;
  /// Keys this family reads beyond the common ones.
  llvm::ArrayRef<llvm::StringLiteral> fields;
  /// Defaults of the family's PretrainedConfig.
  int64_t defaultMaxPositions;
  llvm::StringLiteral defaultActivation; // hidden_act
  bool defaultTieWordEmbeddings;
  double defaultRopeTheta;        // rope_theta
  llvm::StringLiteral normEpsKey; // rms_norm_eps, layer_norm_eps, ...
  double defaultNormEps;
  /// Reads the family's switches from the config's top-level fields (errors
  /// name the field) after the common fields are in `cfg`.
  llvm::Error (*configure)(const JSONFields &config, ModelConfig &cfg);
  /// Common keys the family's config names otherwise; the common name is
  /// then unknown to the family.
  llvm::ArrayRef<KeyName> keyNames = {};
  /// Keys of this family without effect on inference (training-only
  /// settings such as MoE's router_aux_loss_coef): accepted, type-checked
  /// by the hook, reported as "no effect".
  llvm::ArrayRef<llvm::StringLiteral> noEffectFields = {};

  /// The key that holds the common key `common` in this family's configs.
  llvm::StringRef keyFor(llvm::StringRef common) const;
};

/// Every family, in the order `pimc support` lists them.
llvm::ArrayRef<FamilySpec> families();
/// The family of `modelType`, or nullptr.
const FamilySpec *lookupFamily(llvm::StringRef modelType);
/// "llama, mistral, ...": the supported model_types, for diagnostics.
std::string familyNames();

/// The activation an HF name (ACT2FN: silu, gelu, gelu_pytorch_tanh, ...)
/// stands for, or std::nullopt.
std::optional<MlpActivation> activationNamed(llvm::StringRef name);

/// Reads the gate activation named by `key` (hidden_act and its aliases)
/// into cfg.mlpActivation and cfg.hiddenAct; an absent key leaves them.
llvm::Error readActivation(const JSONFields &config, llvm::StringRef key,
                           ModelConfig &cfg);

} // namespace pimc::ckpt

#endif // PIMC_CHECKPOINT_FAMILIES_H
