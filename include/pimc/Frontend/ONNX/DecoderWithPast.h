//===- DecoderWithPast.h - optimum's decoder-with-past as a prompt graph --===//
//
// A decoder with past (optimum's ONNX layout for text generation with a KV
// cache, docs/onnx-decoder-with-past.md) takes the keys and values of the
// earlier positions as `past_key_values.{i}.key/value` and returns them
// extended as `present.{i}.key/value`. With an empty past, an all-ones
// attention_mask and position_ids 0..T-1 it is the model's forward over a
// T-token prompt: ids in, logits out, causal, exactly what
// llm-synthesize-decode turns into a one-token step whose KV caches hold what
// the presents would. The caches replace past and present; the step serves
// one unpadded sequence (batch 1), so the mask is all ones and the positions
// are the offsets, as `pimc run` feeds them.
//
//===----------------------------------------------------------------------===//

#ifndef PIMC_FRONTEND_ONNX_DECODERWITHPAST_H
#define PIMC_FRONTEND_ONNX_DECODERWITHPAST_H

#include "pimc/Frontend/ONNX/ONNXImporter.h"

namespace pimc::onnx {

/// The prompt form of a decoder with past: the import options that bind its
/// inputs (input_ids [1, T]; past empty, mask ones and positions 0..T-1 as
/// constants) and keep only `logits`.
struct PromptForm {
  int64_t layers = 0;
  std::map<std::string, TensorData> constants;
  ImportOptions options; // points at `constants`: do not copy a PromptForm
  PromptForm() = default;
  PromptForm(const PromptForm &) = delete;
};

/// Whether the model at `path` is a decoder with past: it has an input named
/// `past_key_values.*`. Its prompt form over `promptLen` tokens, or nullptr
/// for any other model. A model that names past inputs but does not follow
/// the layout (another input or output, a layer without its key or value or
/// present, a past length fixed by the export, batch fixed above 1) is an
/// error naming the input or output.
llvm::Expected<std::unique_ptr<PromptForm>>
decoderPromptForm(llvm::StringRef path, int64_t promptLen);

} // namespace pimc::onnx

#endif // PIMC_FRONTEND_ONNX_DECODERWITHPAST_H
