//===- DecoderWithPast.cpp - optimum's decoder-with-past as a prompt graph ===//

#include "pimc/Frontend/ONNX/DecoderWithPast.h"

#include "ONNXModel.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

using namespace llvm;
using namespace pimc::onnx;
using Kind = TensorData::Kind;

namespace {

Error fail(const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), msg);
}

/// One graph input of the layout, with its declared shape.
struct Input {
  std::string name;
  std::optional<Kind> kind;
  SmallVector<int64_t> dims; // -1: symbolic
};

/// `past_key_values.{layer}.{key|value}` -> (layer, is key).
std::optional<std::pair<int64_t, bool>> pastName(StringRef name,
                                                 StringRef prefix) {
  if (!name.consume_front(prefix))
    return std::nullopt;
  auto [num, rest] = name.split('.');
  int64_t layer;
  if (num.getAsInteger(10, layer) || layer < 0 ||
      (rest != "key" && rest != "value"))
    return std::nullopt;
  return std::make_pair(layer, rest == "key");
}

TensorData constant(StringRef name, Kind kind, ArrayRef<int64_t> shape) {
  TensorData d;
  d.name = name.str();
  d.kind = kind;
  d.onnxType = kind == Kind::F32  ? "FLOAT"
               : kind == Kind::I1 ? "BOOL"
                                  : "INT64";
  d.shape.assign(shape.begin(), shape.end());
  return d;
}

/// Checks the layout and fills `form` (constants, shapes, outputs).
Error bindPromptForm(StringRef path, const ModelSummary &s, int64_t T,
                     PromptForm &form) {
  auto where = [&](const Twine &what) {
    return fail(path +
                ": decoder with past (optimum's layout, "
                "docs/onnx-decoder-with-past.md): " +
                what);
  };
  std::map<int64_t, std::pair<const Input *, const Input *>> layers;
  std::vector<Input> inputs;
  inputs.reserve(s.inputs.size());
  const Input *ids = nullptr;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    Input in{s.inputs[i], kindOf(s.inputTypes[i]), {}};
    if (!s.inputDims[i])
      return where("input '" + in.name + "' has no declared shape");
    in.dims = *s.inputDims[i];
    inputs.push_back(std::move(in));
  }
  for (const Input &in : inputs) {
    bool isInt = in.kind && *in.kind != Kind::F32;
    if (auto past = pastName(in.name, "past_key_values.")) {
      if (in.dims.size() != 4 || in.kind != Kind::F32)
        return where("input '" + in.name +
                     "' must be a float tensor [batch, kv_heads, "
                     "past_sequence_length, head_dim]");
      auto &slot = layers[past->first];
      (past->second ? slot.first : slot.second) = &in;
    } else if (in.name == "input_ids" || in.name == "position_ids" ||
               in.name == "attention_mask") {
      if (in.dims.size() != 2 || !isInt)
        return where("input '" + in.name +
                     "' must be an integer tensor [batch, length]");
      if (in.name == "input_ids")
        ids = &in;
    } else {
      return where("input '" + in.name +
                   "' is not one of the layout's (input_ids, attention_mask, "
                   "position_ids, past_key_values.N.key/value)");
    }
    if (in.dims[0] != -1 && in.dims[0] != 1)
      return where(formatv("input '{0}' has batch {1}; the prompt form runs "
                           "one sequence (batch 1)",
                           in.name, in.dims[0]));
  }
  if (!ids)
    return where("there is no input 'input_ids'");
  if (ids->dims[1] != -1 && ids->dims[1] != T)
    return where(formatv("input 'input_ids' has a fixed length of {0}; the "
                         "prompt form needs {1} tokens (export with dynamic "
                         "axes)",
                         ids->dims[1], T));
  int64_t expect = 0;
  for (const auto &[layer, kv] : layers) {
    if (layer != expect++)
      return where(formatv("there is no input past_key_values.{0}.key/value "
                           "though layer {1} has one",
                           expect - 1, layer));
    for (auto [in, what] :
         {std::pair(kv.first, "key"), std::pair(kv.second, "value")}) {
      if (!in)
        return where(formatv("layer {0} has no input "
                             "past_key_values.{0}.{1}",
                             layer, what));
      if (in->dims[1] <= 0 || in->dims[3] <= 0)
        return where("input '" + in->name +
                     "' must have fixed kv_heads and head_dim (dimensions 1 "
                     "and 3)");
      if (in->dims[2] > 0)
        return where(formatv("input '{0}' has a past length fixed at {1} by "
                             "the export; the prompt form needs an empty "
                             "past (export with dynamic axes)",
                             in->name, in->dims[2]));
      form.constants[in->name] =
          constant(in->name, Kind::F32, {1, in->dims[1], 0, in->dims[3]});
    }
  }
  form.layers = int64_t(layers.size());
  for (const Input &in : inputs) {
    if (in.name == "attention_mask") {
      TensorData d = constant(in.name, *in.kind, {1, T});
      d.i64.assign(T, 1);
      form.constants[in.name] = std::move(d);
    } else if (in.name == "position_ids") {
      TensorData d = constant(in.name, Kind::I64, {1, T});
      for (int64_t t = 0; t < T; ++t)
        d.i64.push_back(t);
      form.constants[in.name] = std::move(d);
    }
  }
  std::set<std::string> presents;
  bool logits = false;
  for (const std::string &out : s.outputs) {
    if (out == "logits") {
      logits = true;
      continue;
    }
    auto present = pastName(out, "present.");
    if (!present || !layers.count(present->first))
      return where("output '" + out +
                   "' is not one of the layout's (logits, present.N.key/"
                   "value for the past inputs' layers)");
    presents.insert(out);
  }
  if (!logits)
    return where("there is no output 'logits'");
  for (const auto &[layer, kv] : layers)
    for (StringRef what : {"key", "value"})
      if (!presents.count(formatv("present.{0}.{1}", layer, what).str()))
        return where(
            formatv("layer {0} has no output present.{0}.{1}", layer, what));
  form.options.inputShapes["input_ids"] = {1, T};
  form.options.outputs = {"logits"};
  form.options.constantInputs = &form.constants;
  return Error::success();
}

} // namespace

Expected<std::unique_ptr<PromptForm>>
pimc::onnx::decoderPromptForm(StringRef path, int64_t promptLen) {
  auto summary = summarizeModelFile(path);
  if (!summary)
    return summary.takeError();
  if (llvm::none_of(summary->inputs, [](const std::string &name) {
        return StringRef(name).starts_with("past_key_values.");
      }))
    return nullptr;
  if (promptLen < 2)
    return fail(formatv("{0}: the prompt form needs at least 2 tokens, not {1}",
                        path, promptLen));
  auto form = std::make_unique<PromptForm>();
  if (Error e = bindPromptForm(path, *summary, promptLen, *form))
    return e;
  return form;
}
