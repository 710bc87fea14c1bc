//===- ArchFeatures.h - architecture features of a config.json --*- C++ -*-===//
//
// The architecture features a Hugging Face config.json uses, one per column
// of `pimc support --matrix`: attention kind, biases, fused projections,
// norm kind and placement, MLP kind, multipliers, softcapping, QK norms,
// per-layer patterns, positions, RoPE scaling, MoE, MLA, recurrent layers,
// quantization. Each is detected from the config's keys (and, for families
// whose rule is in their code rather than their config, from model_type),
// whether or not pimc knows the model_type, and is
//
//   * supported: the HF importer builds it (for a registered family, the
//     config analysis has no complaint about the keys that state it);
//   * unsupported, with the reason: what is missing, and whether the llm
//     dialect already has the op and only the importer lacks it;
//   * not applicable: the model does not use it.
//
// This is the planning view (docs/families.md): which features the next
// bring-ups need. Whether a given model compiles is `pimc support`'s own
// verdict (config analysis, import, backend), never inferred from here.
//
//===----------------------------------------------------------------------===//
#ifndef PIMC_CHECKPOINT_ARCHFEATURES_H
#define PIMC_CHECKPOINT_ARCHFEATURES_H

#include "pimc/Checkpoint/HFConfig.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace pimc::ckpt {

/// One column of the matrix.
struct ArchFeature {
  llvm::StringLiteral id;    // short column name ("norm", "positions")
  llvm::StringLiteral title; // what it covers, for --help and the legend
};
llvm::ArrayRef<ArchFeature> archFeatures();

/// One cell: how a config uses one feature.
struct FeatureUse {
  enum class Status { Supported, Unsupported, NotApplicable };
  std::string feature; // ArchFeature::id
  Status status = Status::NotApplicable;
  std::string value;  // what the config uses ("GQA 32:8", "LayerNorm", ...)
  std::string reason; // Unsupported: why
};

/// "supported", "unsupported" or "not-applicable".
llvm::StringRef featureStatusName(FeatureUse::Status status);
/// {"status", "value" (when set), "reason" (when set)}: a cell of `pimc
/// support --json` and of the matrix.
llvm::json::Value toJSON(const FeatureUse &use);

/// One use per archFeatures() column, in that order. `analysis` (of the same
/// config) marks a feature unsupported when the importer rejected a key that
/// states it.
std::vector<FeatureUse> detectArchFeatures(const llvm::json::Object &config,
                                           const ConfigSupport &analysis);

/// Reads `<dir>/config.json` (or the file) and detects its features.
llvm::Expected<std::vector<FeatureUse>>
analyzeArchFeatures(llvm::StringRef configPath, const ConfigSupport &analysis);

} // namespace pimc::ckpt

#endif // PIMC_CHECKPOINT_ARCHFEATURES_H
