//===- HFConfig.cpp - Hugging Face config.json -> ModelConfig -------------===//
//
// A config field we do not understand may silently change the model (a
// sliding window, a RoPE variant, act-order GPTQ), so every key is either
// interpreted, checked to hold its neutral value, or on an explicit list of
// fields known not to affect inference. Anything else is an error.
//
//===----------------------------------------------------------------------===//

#include "pimc/Checkpoint/HFConfig.h"
#include "pimc/Checkpoint/Families.h"
#include "pimc/Numerics/Kernels.h"
#include "pimc/Support/JSON.h"
#include "pimc/Support/JSONFields.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstdio>
#include <map>

using namespace llvm;

namespace pimc::ckpt {

namespace {

/// HF's rope_type names, in RopeScaling::Kind order: the one table the config
/// reader and the semantic config (program identity) use.
constexpr llvm::StringLiteral kRopeTypeNames[] = {
    "default", "linear", "dynamic", "yarn", "llama3", "longrope"};
static_assert(std::size(kRopeTypeNames) ==
              static_cast<size_t>(RopeScaling::Kind::LongRope) + 1);

std::optional<RopeScaling::Kind> ropeKindNamed(StringRef name) {
  for (auto [i, n] : llvm::enumerate(kRopeTypeNames))
    if (n == name)
      return static_cast<RopeScaling::Kind>(i);
  return std::nullopt;
}

/// Top-level keys every family reads; the keys of one family are in its
/// FamilySpec (Families.cpp). Keys with semantics are interpreted (or
/// checked) below; the rest have no effect on inference.
struct KnownField {
  StringLiteral name;
  bool semantic = true; // false: no effect on inference
};

constexpr KnownField knownFields[] = {
    // Interpreted.
    {"model_type"},
    {"vocab_size"},
    {"hidden_size"},
    {"intermediate_size"},
    {"num_hidden_layers"},
    {"num_attention_heads"},
    {"num_key_value_heads"},
    {"head_dim"},
    {"max_position_embeddings"},
    {"hidden_act"},
    {"tie_word_embeddings"},
    {"torch_dtype"},
    {"dtype"},
    {"rope_theta"},
    {"rope_scaling"},
    {"rope_parameters"},
    {"partial_rotary_factor"},
    {"quantization_config"},
    {"layer_types"},
    {"sliding_window"},
    // No effect on inference: token ids, training-only settings, bookkeeping.
    {"architectures", false},
    {"_name_or_path", false},
    {"transformers_version", false},
    {"bos_token_id", false},
    {"eos_token_id", false},
    {"pad_token_id", false},
    {"initializer_range", false},
    {"use_cache", false},
    {"attention_dropout", false},
    {"hidden_dropout", false},
    {"residual_dropout", false},
    {"embedding_dropout", false},
    {"resid_pdrop", false},
    {"embd_pdrop", false},
    {"model_max_length", false},    // the tokenizer's limit
    {"auto_map", false},            // remote-code classes; pimc reads the model
    {"attn_implementation", false}, // a loading option of transformers
    {"id2label", false},
    {"label2id", false},
    {"tokenizer_class", false},
    {"pretraining_tp", false}, // checked to be positive
    {"attn_pdrop", false},
    // GPT2DoubleHeadsModel's classification head and generate() defaults.
    {"summary_type", false},
    {"summary_use_proj", false},
    {"summary_activation", false},
    {"summary_proj_to_labels", false},
    {"summary_first_dropout", false},
    {"task_specific_params", false},
    // GPT-2's old name of n_positions; transformers ignores it.
    {"n_ctx", false},
};

std::string show(const json::Value &v) { return formatv("{0}", v).str(); }
std::string show(double d) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", d);
  return buf;
}

/// Upper bounds on a model's geometry (docs/fuzzing.md): generous for real
/// models, small enough that loops and allocations over them stay bounded
/// before any tensor is checked.
IntRange geometryRange(StringRef key) {
  return {1,
          StringSwitch<int64_t>(key)
              .Case("num_hidden_layers", 4096)
              .Cases({"hidden_size", "intermediate_size"}, int64_t(1) << 20)
              .Cases({"num_attention_heads", "num_key_value_heads", "head_dim"},
                     int64_t(1) << 14)
              .Case("vocab_size", int64_t(1) << 26)
              .Case("max_position_embeddings", int64_t(1) << 30)
              .Default(std::numeric_limits<int64_t>::max())};
}

/// Diagnostics of the form `<source>: <field>: <what>`, and readers of the
/// config's objects that report that way.
class ConfigReader {
public:
  explicit ConfigReader(StringRef source) : source(source) {
    style.error = [source](StringRef field, const Twine &what) {
      return fieldError(source, field, what);
    };
    style.nullIsAbsent = true; // HF writes null for "not set"
    style.showValues = true;
    style.missing = "required field is missing";
    style.aboveMax = "{0} exceeds pimc's limit {1} (far above any real model; "
                     "a larger value would make the importer's work "
                     "unbounded)";
  }
  ConfigReader(const ConfigReader &) = delete; // readers point at `style`
  ConfigReader &operator=(const ConfigReader &) = delete;

  /// The fields of `obj`, named `<path>.<key>` (`<key>` at the top level).
  JSONFields fields(const json::Object &obj, StringRef path) const {
    return JSONFields(obj, path.str(), style);
  }

  Error error(const Twine &field, const Twine &what) const {
    return fieldError(source, field, what);
  }
  /// An error about `field` whose message does not repeat the field name.
  Error errorAbout(const Twine &field, const Twine &what) const {
    return make_error<ConfigFieldError>(field.str(),
                                        (Twine(source) + ": " + what).str());
  }
  Error error(const Twine &what) const {
    return createStringError(Twine(source) + ": " + what);
  }

private:
  StringRef source;
  JSONFieldStyle style;

  static Error fieldError(StringRef source, const Twine &field,
                          const Twine &what) {
    return make_error<ConfigFieldError>(
        field.str(), (Twine(source) + ": " + field + ": " + what).str());
  }
};

/// llama3's band, by the rule the verifier and the runtime apply
/// (ref::ropeParamsProblem).
std::string llama3Problem(const RopeScaling &rope) {
  ref::RopeParams p;
  p.kind = ref::RopeParams::Kind::Llama3;
  p.rotaryDim = 2; // not part of the config's rope_scaling
  p.theta = rope.theta;
  p.factor = *rope.factor;
  p.originalMaxPositionEmbeddings = *rope.originalMaxPositionEmbeddings;
  p.lowFreqFactor = *rope.lowFreqFactor;
  p.highFreqFactor = *rope.highFreqFactor;
  return ref::ropeParamsProblem(p);
}

/// Parses a rope_scaling / rope_parameters dict into `rope`. `prefix` is the
/// dict's field name for diagnostics.
Error parseRopeDict(const ConfigReader &r, const json::Object &dict,
                    StringRef prefix, bool isRopeParameters,
                    RopeScaling &rope) {
  JSONFields f = r.fields(dict, prefix);

  std::optional<StringRef> ropeType, legacyType;
  PIMC_ASSIGN_OR_RETURN(ropeType, f.string("rope_type"));
  PIMC_ASSIGN_OR_RETURN(legacyType, f.string("type"));
  if (ropeType && legacyType && *ropeType != *legacyType)
    return r.error(prefix, "'rope_type' (" + *ropeType + ") and 'type' (" +
                               *legacyType + ") disagree");
  StringRef type = ropeType ? *ropeType : legacyType ? *legacyType : "";
  if (type.empty())
    return r.error(prefix, "missing 'rope_type'");

  using Kind = RopeScaling::Kind;
  std::optional<Kind> kind = ropeKindNamed(type);
  if (!kind)
    return r.errorAbout(prefix, "unsupported rope_scaling type '" + type +
                                    "' (supported: " +
                                    llvm::join(std::begin(kRopeTypeNames),
                                               std::end(kRopeTypeNames), ", ") +
                                    ")");
  rope.kind = *kind;

  // Parameters each type reads; anything else in the dict would be ignored
  // by us but might not be by the reference, so it is rejected.
  SmallVector<StringRef, 12> allowed = {"rope_type", "type"};
  if (isRopeParameters)
    allowed.append({"rope_theta", "partial_rotary_factor"});
  switch (*kind) {
  case Kind::Default:
    break;
  case Kind::Linear:
    allowed.push_back("factor");
    break;
  case Kind::Dynamic:
    allowed.append({"factor", "original_max_position_embeddings"});
    break;
  case Kind::Yarn:
    allowed.append({"factor", "original_max_position_embeddings", "beta_fast",
                    "beta_slow", "attention_factor", "mscale", "mscale_all_dim",
                    "truncate"});
    break;
  case Kind::Llama3:
    allowed.append({"factor", "low_freq_factor", "high_freq_factor",
                    "original_max_position_embeddings"});
    break;
  case Kind::LongRope:
    allowed.append({"factor", "short_factor", "long_factor", "attention_factor",
                    "original_max_position_embeddings"});
    break;
  }
  if (Error e =
          f.checkKeys(allowed, "unknown key for rope type '" + type + "'"))
    return e;

  auto requiredPositive = [&](StringRef key,
                              std::optional<double> &out) -> Error {
    std::optional<double> d;
    PIMC_ASSIGN_OR_RETURN(d, f.number(key));
    if (!d)
      return f.fieldError(key, "required for rope type '" + type + "'");
    if (*d <= 0)
      return f.fieldError(key, "must be positive, got " + show(*d));
    out = d;
    return Error::success();
  };
  auto optionalNumber = [&](StringRef key,
                            std::optional<double> &out) -> Error {
    PIMC_ASSIGN_OR_RETURN(out, f.number(key));
    return Error::success();
  };
  auto originalMaxPos = [&](bool isRequired) -> Error {
    StringRef key = "original_max_position_embeddings";
    std::optional<int64_t> v;
    PIMC_ASSIGN_OR_RETURN(v, f.integer(key, IntRange{1}));
    if (!v && isRequired)
      return f.fieldError(key, "required for rope type '" + type + "'");
    rope.originalMaxPositionEmbeddings = v;
    return Error::success();
  };

  switch (*kind) {
  case Kind::Default:
    break;
  case Kind::Linear:
    if (Error e = requiredPositive("factor", rope.factor))
      return e;
    break;
  case Kind::Dynamic:
    if (Error e = requiredPositive("factor", rope.factor))
      return e;
    if (Error e = originalMaxPos(/*isRequired=*/false))
      return e;
    break;
  case Kind::Yarn: {
    if (Error e = requiredPositive("factor", rope.factor))
      return e;
    if (Error e = originalMaxPos(/*isRequired=*/false))
      return e;
    std::pair<StringRef, std::optional<double> *> yarnParams[] = {
        {"beta_fast", &rope.betaFast},
        {"beta_slow", &rope.betaSlow},
        {"attention_factor", &rope.attentionFactor},
        {"mscale", &rope.mscale},
        {"mscale_all_dim", &rope.mscaleAllDim}};
    for (auto [key, out] : yarnParams)
      if (Error e = optionalNumber(key, *out))
        return e;
    // Defaults of the reference (_compute_yarn_parameters).
    if (!rope.betaFast)
      rope.betaFast = 32.0;
    if (!rope.betaSlow)
      rope.betaSlow = 1.0;
    PIMC_ASSIGN_OR_RETURN(rope.truncate, f.booleanOr("truncate", true));
    break;
  }
  case Kind::Llama3:
    if (Error e = requiredPositive("factor", rope.factor))
      return e;
    if (Error e = requiredPositive("low_freq_factor", rope.lowFreqFactor))
      return e;
    if (Error e = requiredPositive("high_freq_factor", rope.highFreqFactor))
      return e;
    if (Error e = originalMaxPos(/*isRequired=*/true))
      return e;
    if (std::string why = llama3Problem(rope); !why.empty())
      return f.fieldError("low_freq_factor", why);
    break;
  case Kind::LongRope: {
    for (auto [key, out] : {std::pair{"short_factor", &rope.shortFactor},
                            std::pair{"long_factor", &rope.longFactor}}) {
      std::optional<std::vector<double>> v;
      PIMC_ASSIGN_OR_RETURN(v, f.numbers(key));
      if (!v)
        return f.fieldError(key, "required for rope type '" + type + "'");
      *out = std::move(*v);
    }
    for (auto [key, out] :
         {std::pair{"factor", &rope.factor},
          std::pair{"attention_factor", &rope.attentionFactor}})
      if (f.value(key))
        if (Error e = requiredPositive(key, *out))
          return e;
    // A family with a top-level pretraining length (Phi-3) has set it; as
    // in transformers, it wins over the dict's.
    if (!rope.originalMaxPositionEmbeddings)
      if (Error e = originalMaxPos(/*isRequired=*/false))
        return e;
    break;
  }
  }
  return Error::success();
}

/// The family's accepted rope types, and longrope's defaults and value
/// rules once the rotary dims are known: L0 is max_position_embeddings when
/// neither the dict nor the family gives it, and factor max / L0
/// (transformers' _compute_longrope_parameters).
Error finishRope(const ConfigReader &r, StringRef ropeField, ModelConfig &cfg) {
  RopeScaling &rope = cfg.rope;
  if (!cfg.ropeKinds.empty() && !llvm::is_contained(cfg.ropeKinds, rope.kind)) {
    SmallVector<StringRef, 4> names;
    for (RopeScaling::Kind k : cfg.ropeKinds)
      names.push_back(kRopeTypeNames[static_cast<int>(k)]);
    return r.error(ropeField, cfg.modelType + " takes rope type " +
                                  llvm::join(names, " or ") + ", got '" +
                                  kRopeTypeNames[static_cast<int>(rope.kind)] +
                                  "'");
  }
  if (rope.kind != RopeScaling::Kind::LongRope) {
    if (rope.kind == RopeScaling::Kind::Default)
      rope.originalMaxPositionEmbeddings.reset(); // a family default, unused
    return Error::success();
  }
  if (!rope.originalMaxPositionEmbeddings)
    rope.originalMaxPositionEmbeddings = cfg.maxPositionEmbeddings;
  if (!rope.factor)
    rope.factor = double(cfg.maxPositionEmbeddings) /
                  double(*rope.originalMaxPositionEmbeddings);
  ref::RopeParams p;
  p.kind = ref::RopeParams::Kind::LongRope;
  p.rotaryDim = int64_t(double(cfg.headDim) * rope.partialRotaryFactor);
  p.theta = rope.theta;
  p.factor = *rope.factor;
  p.originalMaxPositionEmbeddings = *rope.originalMaxPositionEmbeddings;
  p.attentionFactor = rope.attentionFactor;
  p.shortFactor = rope.shortFactor;
  p.longFactor = rope.longFactor;
  if (std::string why = ref::ropeParamsProblem(p); !why.empty())
    return r.error(ropeField, why);
  return Error::success();
}

Expected<GptqConfig> parseGptq(const ConfigReader &r,
                               const json::Value &value) {
  const json::Object *obj = value.getAsObject();
  if (!obj)
    return r.error("quantization_config", "expected an object");
  JSONFields q = r.fields(*obj, "quantization_config");

  StringRef method;
  PIMC_ASSIGN_OR_RETURN(method, q.string("quant_method", required));
  if (method != "gptq")
    return q.fieldError("quant_method", "unsupported quantization method '" +
                                            method + "' (supported: gptq)");

  // GPTQ keys that do not change how the stored tensors decode.
  static constexpr StringLiteral harmless[] = {
      "damp_percent",
      "damp_auto_increment",
      "true_sequential",
      "static_groups",
      "model_name_or_path",
      "model_file_base_name",
      "quantizer",
      "meta",
      "dataset",
      "tokenizer",
      "use_exllama",
      "exllama_config",
      "use_cuda_fp16",
      "disable_exllama",
      "max_input_length",
      "batch_size",
      "pad_token_id",
      "cache_block_outputs",
      "backend",
      "block_name_to_quantize",
      "module_name_preceding_first_block",
      "mse",
  };
  // Interpreted or checked to hold their neutral value below.
  static constexpr StringLiteral interpreted[] = {
      "quant_method",
      "bits",
      "group_size",
      "sym",
      "desc_act",
      "checkpoint_format",
      "lm_head",
      "pack_dtype",
      "is_marlin_format",
      "dynamic",
      "modules_in_block_to_quantize",
  };
  if (std::optional<StringRef> key = q.firstUnknownKey([](StringRef key) {
        return llvm::is_contained(harmless, key) ||
               llvm::is_contained(interpreted, key);
      }))
    return q.fieldError(*key, "unknown GPTQ field");

  GptqConfig gptq;
  int64_t bits = 0;
  PIMC_ASSIGN_OR_RETURN(bits, q.integer("bits", required));
  if (bits != 4 && bits != 8)
    return q.fieldError("bits",
                        "only 4 or 8 bits are supported, got " + Twine(bits));
  gptq.bits = int(bits);

  std::optional<int64_t> groupSize;
  PIMC_ASSIGN_OR_RETURN(groupSize, q.integer("group_size"));
  if (groupSize) {
    // Divisibility of K is checked by the importer, which knows K.
    if (*groupSize != -1 && *groupSize <= 0)
      return q.fieldError("group_size",
                          "must be -1 or positive, got " + Twine(*groupSize));
    gptq.groupSize = *groupSize;
  }

  PIMC_ASSIGN_OR_RETURN(gptq.sym, q.booleanOr("sym", true));

  bool descAct = false;
  PIMC_ASSIGN_OR_RETURN(descAct, q.booleanOr("desc_act", false));
  if (descAct)
    return q.fieldError("desc_act", "act-order (desc_act) not supported");

  std::optional<StringRef> format;
  PIMC_ASSIGN_OR_RETURN(format, q.string("checkpoint_format"));
  if (!format || *format == "gptq")
    gptq.zeroMinusOne = true;
  else if (*format == "gptq_v2")
    gptq.zeroMinusOne = false;
  else
    return q.fieldError("checkpoint_format",
                        "unsupported checkpoint format '" + *format +
                            "' (supported: gptq, gptq_v2)");

  bool flag = false;
  PIMC_ASSIGN_OR_RETURN(flag, q.booleanOr("lm_head", false));
  if (flag)
    return q.fieldError("lm_head", "a quantized lm_head is not supported");
  PIMC_ASSIGN_OR_RETURN(flag, q.booleanOr("is_marlin_format", false));
  if (flag)
    return q.fieldError("is_marlin_format",
                        "the Marlin packing is not supported");

  std::optional<StringRef> packDtype;
  PIMC_ASSIGN_OR_RETURN(packDtype, q.string("pack_dtype"));
  if (packDtype && *packDtype != "int32" && *packDtype != "torch.int32")
    return q.fieldError("pack_dtype", "only int32 packing is supported, got '" +
                                          *packDtype + "'");

  // Per-module overrides would make the quantization non-uniform.
  for (StringRef key : {"dynamic", "modules_in_block_to_quantize"}) {
    const json::Value *v = q.value(key);
    if (!v)
      continue;
    const json::Object *o = v->getAsObject();
    const json::Array *a = v->getAsArray();
    if ((o && !o->empty()) || (a && !a->empty()) || (!o && !a))
      return q.fieldError(
          key, "per-module quantization overrides are not supported");
  }
  return gptq;
}

const KnownField *commonField(StringRef key) {
  const KnownField *known = llvm::find_if(
      knownFields, [&](const KnownField &f) { return f.name == key; });
  return known == std::end(knownFields) ? nullptr : known;
}

Error checkKnownFields(const ConfigReader &r, const JSONFields &root,
                       const FamilySpec &family, StringRef modelType) {
  // A common key the family names otherwise is unknown under the common
  // name (GPT-2's hidden_size is n_embd).
  std::optional<StringRef> key = root.firstUnknownKey([&](StringRef key) {
    return (commonField(key) && family.keyFor(key) == key) ||
           llvm::is_contained(family.fields, key) ||
           llvm::is_contained(family.noEffectFields, key) ||
           key == family.normEpsKey;
  });
  if (!key)
    return Error::success();
  std::string ownName;
  if (StringRef own = family.keyFor(*key); own != *key)
    ownName = ("; " + modelType + " names it " + own).str();
  return r.errorAbout(*key, "unknown config field '" + *key +
                                "' (not known to the " + modelType +
                                " importer" + ownName + ")");
}

} // namespace

namespace {
Expected<ModelConfig> parseModelConfigObject(const json::Object &root,
                                             StringRef sourceName);
} // namespace

char ConfigFieldError::ID = 0;

Expected<ModelConfig> parseModelConfigText(StringRef text,
                                           StringRef sourceName) {
  ConfigReader r(sourceName);
  Expected<json::Value> parsed = pimc::parseJSON(text);
  if (!parsed)
    return r.error("not valid JSON: " + toString(parsed.takeError()));
  const json::Object *rootPtr = parsed->getAsObject();
  if (!rootPtr)
    return r.error("top level is not a JSON object");
  return parseModelConfigObject(*rootPtr, sourceName);
}

bool ConfigSupport::supported() const {
  return fatal.empty() && llvm::none_of(features, [](const ConfigFeature &f) {
           return f.status == ConfigFeature::Status::Unsupported;
         });
}

namespace {
/// `<dir>/config.json` or the file itself; `path` is set for diagnostics.
Expected<std::unique_ptr<MemoryBuffer>> readConfigFile(StringRef configPath,
                                                       SmallString<256> &path) {
  path = configPath;
  if (sys::fs::is_directory(path))
    sys::path::append(path, "config.json");
  ErrorOr<std::unique_ptr<MemoryBuffer>> buf =
      MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buf)
    return createStringError(Twine(path) +
                             ": cannot read: " + buf.getError().message());
  return std::move(*buf);
}

/// The config's top-level object; errors name `path`.
Expected<json::Object> parseConfigObject(StringRef text, StringRef path) {
  Expected<json::Value> parsed = pimc::parseJSON(text);
  if (!parsed)
    return createStringError(
        Twine(path) + ": not valid JSON: " + toString(parsed.takeError()));
  json::Object *root = parsed->getAsObject();
  if (!root)
    return createStringError(Twine(path) + ": top level is not a JSON object");
  return std::move(*root);
}
} // namespace

Expected<json::Object> readConfigObject(StringRef configPath) {
  SmallString<256> path;
  Expected<std::unique_ptr<MemoryBuffer>> buf =
      readConfigFile(configPath, path);
  if (!buf)
    return buf.takeError();
  return parseConfigObject((*buf)->getBuffer(), path);
}

Expected<ConfigSupport> analyzeConfigSupport(StringRef configPath) {
  SmallString<256> path;
  Expected<std::unique_ptr<MemoryBuffer>> buf =
      readConfigFile(configPath, path);
  if (!buf)
    return buf.takeError();
  ConfigSupport report;
  // Unreadable input (not JSON, not an object) is an error, not a report.
  Expected<json::Object> parsed = parseConfigObject((*buf)->getBuffer(), path);
  if (!parsed)
    return parsed.takeError();
  json::Object *rootPtr = &*parsed;
  json::Object root = *rootPtr;
  if (const json::Value *mt = root.get("model_type"))
    if (auto s = mt->getAsString())
      report.modelType = s->str();

  // Each round drops the top-level key the importer rejected; a key that
  // cannot be dropped (required, or the one selecting the family) ends it.
  std::map<std::string, std::string> rejected;
  for (size_t round = 0; round <= rootPtr->size(); ++round) {
    Expected<ModelConfig> cfg = parseModelConfigObject(root, path);
    if (cfg)
      break;
    std::string field, message;
    handleAllErrors(
        cfg.takeError(),
        [&](const ConfigFieldError &e) {
          field = e.field;
          message = e.message;
        },
        [&](const ErrorInfoBase &e) { message = e.message(); });
    std::string key = StringRef(field).split('.').first.split('[').first.str();
    if (rejected.count(key)) {
      // A required key that was rejected (e.g. wrongly typed) is now
      // missing: its reason stays the one already given.
      report.fatal = rejected[key];
      break;
    }
    if (key.empty() || key == "model_type" || !root.get(key)) {
      report.fatal = message;
      break;
    }
    rejected[key] = message;
    root.erase(key);
  }

  const FamilySpec *family = lookupFamily(report.modelType);
  std::vector<std::string> keys;
  for (const auto &kv : *rootPtr)
    keys.push_back(kv.first.str());
  llvm::sort(keys);
  for (const std::string &key : keys) {
    ConfigFeature f;
    f.field = key;
    f.value = show(*rootPtr->get(key));
    if (f.value.size() > 60)
      f.value = f.value.substr(0, 57) + "...";
    auto it = rejected.find(key);
    const KnownField *known = commonField(key);
    if (it != rejected.end()) {
      f.status = ConfigFeature::Status::Unsupported;
      f.reason = it->second;
    } else if (!report.fatal.empty()) {
      bool isModelType =
          key == "model_type" && StringRef(report.fatal).contains("model_type");
      f.status = isModelType ? ConfigFeature::Status::Unsupported
                             : ConfigFeature::Status::NotChecked;
      if (isModelType)
        f.reason = report.fatal;
    } else if ((known && !known->semantic) ||
               (family && llvm::is_contained(family->noEffectFields, key))) {
      f.status = ConfigFeature::Status::NoEffect;
    }
    report.features.push_back(std::move(f));
  }
  return report;
}

namespace {
Expected<ModelConfig> parseModelConfigObject(const json::Object &rootObj,
                                             StringRef sourceName) {
  ConfigReader r(sourceName);
  JSONFields f = r.fields(rootObj, "");
  ModelConfig cfg;
  StringRef modelType;
  PIMC_ASSIGN_OR_RETURN(modelType, f.string("model_type", required));
  const FamilySpec *family = lookupFamily(modelType);
  if (!family)
    return r.errorAbout("model_type", "unsupported model_type '" + modelType +
                                          "' (supported: " + familyNames() +
                                          ")");
  cfg.modelType = modelType.str();
  if (Error e = checkKnownFields(r, f, *family, modelType))
    return e;

  // Geometry, each key under the family's name for it (FamilySpec::keyFor).
  auto ownKey = [&](StringRef common) { return family->keyFor(common); };
  auto geometry = [&](StringRef common) {
    return f.integer(ownKey(common), required, geometryRange(common));
  };
  PIMC_ASSIGN_OR_RETURN(cfg.hiddenSize, geometry("hidden_size"));
  // Required unless the family's hook sets it (falcon: ffn_hidden_size).
  PIMC_ASSIGN_OR_RETURN(cfg.intermediateSize,
                        f.integerOr(ownKey("intermediate_size"), 0,
                                    geometryRange("intermediate_size")));
  PIMC_ASSIGN_OR_RETURN(cfg.numLayers, geometry("num_hidden_layers"));
  PIMC_ASSIGN_OR_RETURN(cfg.numHeads, geometry("num_attention_heads"));
  PIMC_ASSIGN_OR_RETURN(cfg.vocabSize, geometry("vocab_size"));
  PIMC_ASSIGN_OR_RETURN(cfg.numKvHeads,
                        f.integerOr(ownKey("num_key_value_heads"), cfg.numHeads,
                                    geometryRange("num_key_value_heads")));
  if (cfg.numHeads % cfg.numKvHeads != 0)
    return r.error(ownKey("num_key_value_heads"),
                   Twine(cfg.numKvHeads) +
                       " does not divide num_attention_heads (" +
                       Twine(cfg.numHeads) + ")");
  if (f.value("head_dim")) {
    PIMC_ASSIGN_OR_RETURN(cfg.headDim, geometry("head_dim"));
  } else {
    if (cfg.hiddenSize % cfg.numHeads != 0)
      return r.error(ownKey("num_attention_heads"),
                     Twine(cfg.numHeads) + " does not divide " +
                         ownKey("hidden_size") + " (" + Twine(cfg.hiddenSize) +
                         ") and head_dim is not given");
    cfg.headDim = cfg.hiddenSize / cfg.numHeads;
  }

  PIMC_ASSIGN_OR_RETURN(cfg.maxPositionEmbeddings,
                        f.integerOr(ownKey("max_position_embeddings"),
                                    family->defaultMaxPositions,
                                    geometryRange("max_position_embeddings")));
  StringRef epsKey = family->normEpsKey;
  PIMC_ASSIGN_OR_RETURN(cfg.normEps,
                        f.numberOr(epsKey, family->defaultNormEps));
  if (cfg.normEps <= 0)
    return f.fieldError(epsKey,
                        "must be positive, got " + show(*f.value(epsKey)));

  cfg.hiddenAct = family->defaultActivation.str();
  cfg.mlpActivation = *activationNamed(cfg.hiddenAct);
  if (Error e = readActivation(f, ownKey("hidden_act"), cfg))
    return e;

  PIMC_ASSIGN_OR_RETURN(
      cfg.tieWordEmbeddings,
      f.booleanOr("tie_word_embeddings", family->defaultTieWordEmbeddings));

  // transformers v5 renamed torch_dtype to dtype.
  std::optional<StringRef> torchDtype, dtype;
  PIMC_ASSIGN_OR_RETURN(torchDtype, f.string("torch_dtype"));
  PIMC_ASSIGN_OR_RETURN(dtype, f.string("dtype"));
  if (torchDtype && dtype && *torchDtype != *dtype)
    return r.error("dtype", "'" + *dtype + "' disagrees with torch_dtype '" +
                                *torchDtype + "'");
  if (std::optional<StringRef> d = torchDtype ? torchDtype : dtype) {
    if (*d != "float32" && *d != "float16" && *d != "bfloat16")
      return r.error(torchDtype ? "torch_dtype" : "dtype",
                     "unsupported dtype '" + *d +
                         "' (supported: float32, float16, bfloat16)");
    cfg.torchDtype = d->str();
  }

  // pretraining_tp > 1 made transformers 4.x compute the projections in
  // slices and sum them: the same function in another summation order.
  // transformers 5 ignores it (SmolLM3-3B ships 2), so it has no effect
  // beyond being a positive integer.
  if (Expected<std::optional<int64_t>> tp =
          f.integer("pretraining_tp", IntRange{1});
      !tp)
    return tp.takeError();

  // The family's own switches: biases, windows, norms, scales.
  cfg.rope.theta = family->defaultRopeTheta;
  if (Error e = family->configure(f, cfg))
    return e;
  if (cfg.intermediateSize == 0)
    return f.fieldError(ownKey("intermediate_size"),
                        "required field is missing");

  // Per-layer attention: a family with a window slides on every layer
  // unless layer_types says otherwise; the family's hook may have marked
  // NoPE layers.
  if (cfg.layers.empty())
    cfg.layers.assign(cfg.numLayers,
                      LayerAttention{cfg.slidingWindow.has_value()});
  if (const json::Value *v = f.value("layer_types")) {
    const json::Array *types = v->getAsArray();
    if (!types)
      return r.error("layer_types", "expected a list, got " + show(*v));
    if (int64_t(types->size()) != cfg.numLayers)
      return r.error("layer_types", "has " + Twine(types->size()) +
                                        " entries but num_hidden_layers is " +
                                        Twine(cfg.numLayers));
    bool recurrent = cfg.mamba || cfg.deltaNet;
    using Mixer = LayerAttention::Mixer;
    for (auto [i, t] : llvm::enumerate(*types)) {
      std::optional<StringRef> s = t.getAsString();
      std::string field = ("layer_types[" + Twine(i) + "]").str();
      // The hybrid families' mixers: Qwen3-Next's "linear_attention",
      // Granite-4.0-H's "mamba" / "attention", Falcon-H1's "hybrid".
      std::optional<Mixer> mixer;
      if (s && (*s == "linear_attention" || *s == "mamba"))
        mixer = Mixer::Recurrent;
      else if (s && *s == "hybrid")
        mixer = Mixer::Parallel;
      else if (s && *s == "attention" && recurrent)
        mixer = Mixer::Attention;
      if (mixer && !recurrent)
        return r.error(field, "'" + *s + "' but " + cfg.modelType +
                                  " has no recurrent mixer");
      if (mixer) {
        cfg.layers[i].mixer = *mixer;
        cfg.layers[i].sliding = cfg.layers[i].chunked = false;
        continue;
      }
      if (s && *s == "full_attention") {
        cfg.layers[i].sliding = cfg.layers[i].chunked = false;
        if (recurrent)
          cfg.layers[i].mixer = Mixer::Attention;
      } else if (s && *s == "chunked_attention" && !cfg.attentionChunkSize)
        return r.error(field, "'chunked_attention' but " + cfg.modelType +
                                  " has no attention chunk size here");
      else if (s && *s == "chunked_attention")
        cfg.layers[i].chunked = true;
      else if (s && *s == "sliding_attention" && !cfg.slidingWindow)
        return r.error(field, "'sliding_attention' but " + cfg.modelType +
                                  " has no sliding window here");
      else if (s && *s == "sliding_attention")
        cfg.layers[i].sliding = true;
      else
        return r.error(field, "expected 'full_attention' or "
                              "'sliding_attention', got " +
                                  show(t));
    }
  }

  // RoPE: rope_theta/partial_rotary_factor at top level, and/or folded into
  // rope_parameters (transformers v5).
  const json::Value *scaling = f.value("rope_scaling");
  const json::Value *params = f.value("rope_parameters");
  if (scaling && params)
    return r.error("rope_parameters",
                   "both rope_scaling and rope_parameters are given");
  StringRef ropeField = scaling ? "rope_scaling" : "rope_parameters";
  const json::Object *ropeDict = nullptr;
  if (const json::Value *v = scaling ? scaling : params) {
    ropeDict = v->getAsObject();
    if (!ropeDict)
      return r.error(ropeField, "expected an object or null, got " + show(*v));
    if (Error e =
            parseRopeDict(r, *ropeDict, ropeField,
                          /*isRopeParameters=*/params != nullptr, cfg.rope))
      return e;
  }
  std::pair<StringRef, double *> ropeScalars[] = {
      {"rope_theta", &cfg.rope.theta},
      {"partial_rotary_factor", &cfg.rope.partialRotaryFactor}};
  for (auto [key, out] : ropeScalars) {
    std::optional<double> top, nested;
    PIMC_ASSIGN_OR_RETURN(top, f.number(key));
    if (params)
      PIMC_ASSIGN_OR_RETURN(nested,
                            r.fields(*ropeDict, "rope_parameters").number(key));
    if (top && nested && *top != *nested)
      return r.error("rope_parameters." + key,
                     "disagrees with top-level " + key);
    if (std::optional<double> v = top ? top : nested) {
      if (*v <= 0)
        return r.error(key, "must be positive, got " + show(*v));
      *out = *v;
    }
  }
  double rotaryDims = double(cfg.headDim) * cfg.rope.partialRotaryFactor;
  if (cfg.rope.partialRotaryFactor > 1.0 || rotaryDims < 2.0 ||
      int64_t(rotaryDims) % 2 != 0)
    return r.error("partial_rotary_factor",
                   "must give an even number of rotary dims in [2, head_dim "
                   "= " +
                       Twine(cfg.headDim) + "], got " + show(rotaryDims));
  if (Error e = finishRope(r, ropeField, cfg))
    return e;

  if (const json::Value *q = f.value("quantization_config")) {
    Expected<GptqConfig> gptq = parseGptq(r, *q);
    if (!gptq)
      return gptq.takeError();
    cfg.gptq = *gptq;
  }
  return cfg;
}

} // namespace

Expected<ModelConfig> parseModelConfig(StringRef configPath) {
  SmallString<256> path;
  Expected<std::unique_ptr<MemoryBuffer>> buf =
      readConfigFile(configPath, path);
  if (!buf)
    return buf.takeError();
  return parseModelConfigText((*buf)->getBuffer(), path);
}

namespace {
json::Object ropeJSON(const RopeScaling &r) {
  json::Object rope{{"type", kRopeTypeNames[static_cast<int>(r.kind)]},
                    {"theta", r.theta},
                    {"partial_rotary_factor", r.partialRotaryFactor},
                    {"truncate", r.truncate}};
  auto opt = [&](StringRef key, const auto &v) {
    if (v)
      rope[key] = *v;
  };
  opt("factor", r.factor);
  opt("original_max_position_embeddings", r.originalMaxPositionEmbeddings);
  opt("low_freq_factor", r.lowFreqFactor);
  opt("high_freq_factor", r.highFreqFactor);
  opt("beta_fast", r.betaFast);
  opt("beta_slow", r.betaSlow);
  opt("attention_factor", r.attentionFactor);
  opt("mscale", r.mscale);
  opt("mscale_all_dim", r.mscaleAllDim);
  if (r.interleaved)
    rope["interleaved"] = true;
  for (auto [key, list] : {std::pair{"short_factor", &r.shortFactor},
                           std::pair{"long_factor", &r.longFactor}})
    if (!list->empty())
      rope[key] = json::Array(*list);
  return rope;
}
} // namespace

std::string semanticConfigJSON(const ModelConfig &c) {
  json::Object rope = ropeJSON(c.rope);
  json::Object o{{"model_type", c.modelType},
                 {"hidden_size", c.hiddenSize},
                 {"intermediate_size", c.intermediateSize},
                 {"num_hidden_layers", c.numLayers},
                 {"num_attention_heads", c.numHeads},
                 {"num_key_value_heads", c.numKvHeads},
                 {"head_dim", c.headDim},
                 {"vocab_size", c.vocabSize},
                 {"max_position_embeddings", c.maxPositionEmbeddings},
                 {"rms_norm_eps", c.normEps},
                 {"hidden_act", c.hiddenAct},
                 {"tie_word_embeddings", c.tieWordEmbeddings},
                 {"qkv_bias", c.qkvBias},
                 {"o_bias", c.oBias},
                 {"mlp_bias", c.mlpBias},
                 {"qk_norm", c.qkNorm},
                 {"rope", std::move(rope)}};
  if (c.slidingWindow)
    o["sliding_window"] = *c.slidingWindow;
  if (!c.norms.isPreNorm())
    o["block_norms"] = json::Object{{"attn_in", c.norms.attnIn},
                                    {"attn_out", c.norms.attnOut},
                                    {"mlp_in", c.norms.mlpIn},
                                    {"mlp_out", c.norms.mlpOut}};
  if (c.qkNormWhole)
    o["qk_norm_scope"] = "projection";
  if (c.qkNormPerHeadLayerNorm)
    o["qk_norm_scope"] = "head_layer_norm";
  if (c.ropeOnlySliding)
    o["rope_only_sliding"] = true;
  if (c.normKind == NormKind::LayerNorm)
    o["norm_kind"] = c.normBias ? "layer_norm_bias" : "layer_norm";
  if (c.parallelBlock)
    o["parallel_block"] = true;
  if (c.plainMlp)
    o["plain_mlp"] = json::Array{c.plainMlp->up, c.plainMlp->down};
  if (c.fusedQKV)
    o["fused_qkv"] = true;
  if (c.qkvLayout == QKVLayout::Grouped)
    o["qkv_layout"] = "grouped";
  if (!c.names.isLlama())
    o["tensor_names"] = json::Array{
        c.names.layers, c.names.attn,      c.names.q,    c.names.k,
        c.names.v,      c.names.o,         c.names.qkv,  c.names.mlp,
        c.names.gate,   c.names.up,        c.names.down, c.names.gateUp,
        c.names.embed,  c.names.finalNorm, c.names.head};
  if (c.fusedGateUp)
    o["fused_gate_up"] = true;
  if (c.conv1dWeights)
    o["conv1d_weights"] = true;
  if (c.learnedPositions)
    o["learned_positions"] = c.names.positions;
  if (c.alibi)
    o["alibi"] = true;
  if (c.attentionScaleByInverseLayer)
    o["attention_scale_by_inverse_layer"] = true;
  if (c.slidingRope)
    o["sliding_rope"] = ropeJSON(*c.slidingRope);
  // Layers that differ, only where some do (older programs' identities).
  json::Array fullLayers, noRopeLayers;
  for (auto [i, layer] : llvm::enumerate(c.layers)) {
    if (c.slidingWindow && !layer.sliding)
      fullLayers.push_back(int64_t(i));
    if (!layer.rope)
      noRopeLayers.push_back(int64_t(i));
  }
  if (!fullLayers.empty())
    o["full_attention_layers"] = std::move(fullLayers);
  if (!noRopeLayers.empty())
    o["no_rope_layers"] = std::move(noRopeLayers);
  // Llama 4's attention switches, only where set.
  if (c.attentionChunkSize) {
    json::Array chunked;
    for (auto [i, layer] : llvm::enumerate(c.layers))
      if (layer.chunked)
        chunked.push_back(int64_t(i));
    o["attention_chunk_size"] = *c.attentionChunkSize;
    o["chunked_layers"] = std::move(chunked);
  }
  if (c.l2QkNorm)
    o["l2_qk_norm"] = true;
  if (c.temperatureTuning)
    o["temperature_tuning"] = json::Array{c.temperatureTuning->floorScale,
                                          c.temperatureTuning->scale};
  // Features of families after the first four, only where they are set, so
  // that the programs of llama, mistral and qwen keep their identity.
  if (c.normWeight == NormWeight::OnePlusScale)
    o["norm_weight"] = "one_plus_scale";
  std::pair<StringRef, std::optional<double>> scales[] = {
      {"embedding_scale", c.embeddingScale},
      {"attention_scale", c.attentionScale},
      {"residual_multiplier", c.residualMultiplier},
      {"logit_scale", c.logitScale},
      {"attn_logit_softcap", c.attnLogitSoftcap},
      {"final_logit_softcap", c.finalLogitSoftcap}};
  for (auto [key, v] : scales)
    if (v)
      o[key] = *v;
  if (c.attentionSinks)
    o["attention_sinks"] = true;
  if (c.moe) {
    const MoEConfig &m = *c.moe;
    json::Array sparse;
    for (auto [i, isSparse] : llvm::enumerate(m.sparse))
      if (isSparse)
        sparse.push_back(int64_t(i));
    o["moe"] = json::Object{
        {"num_experts", m.numExperts},
        {"top_k", m.topK},
        {"intermediate_size", m.intermediateSize},
        {"renormalize", m.renormalize},
        {"shared_intermediate_size", m.sharedIntermediateSize},
        {"shared_expert_gate", m.sharedExpertGate},
        {"sparse_layers", std::move(sparse)},
        {"tensor_names", json::Array{m.block, m.router, m.experts, m.gate, m.up,
                                     m.down, m.shared, m.sharedGate}}};
    // gpt-oss's switches, only where set (the other MoE programs keep their
    // identity).
    json::Object &mo = *o["moe"].getAsObject();
    if (m.routerBias)
      mo["router_bias"] = true;
    if (m.topkThenScore)
      mo["order"] = "topk_then_score";
    if (m.fusedInterleaved)
      mo["experts_layout"] = "fused_interleaved";
    if (m.fusedConcatenated)
      mo["experts_layout"] = "fused_concatenated";
    if (m.weightOnInput)
      mo["weight_on_input"] = true;
    if (m.swigluLimit)
      mo["clamped_swiglu"] = json::Array{*m.swigluLimit, *m.swigluAlpha};
    // DeepSeek's routing, only where set.
    if (m.sigmoidScores)
      mo["scoring"] = "sigmoid";
    if (m.correctionBias)
      mo["correction_bias"] = true;
    if (m.nGroup > 1)
      mo["groups"] = json::Array{m.nGroup, m.topkGroup, m.groupScoreTopk};
    if (m.renormalizeEpsilon != 0.0)
      mo["renormalize_epsilon"] = m.renormalizeEpsilon;
    if (m.routedScalingFactor != 1.0)
      mo["routed_scaling_factor"] = m.routedScalingFactor;
  }
  if (c.mla)
    o["mla"] = json::Object{{"q_lora_rank", c.mla->qLoraRank},
                            {"kv_lora_rank", c.mla->kvLoraRank},
                            {"qk_rope_head_dim", c.mla->ropeDim},
                            {"qk_nope_head_dim", c.mla->nopeDim},
                            {"v_head_dim", c.mla->valueDim},
                            {"rope_interleaved", c.mla->ropeInterleaved}};
  if (c.mamba) {
    const MambaConfig &m = *c.mamba;
    json::Object mo{{"mamba1", m.mamba1},
                    {"d_inner", m.dInner},
                    {"heads", m.numHeads},
                    {"head_dim", m.headDim},
                    {"groups", m.nGroups},
                    {"state", m.stateSize},
                    {"conv_kernel", m.convKernel},
                    {"dt_rank", m.dtRank},
                    {"conv_bias", m.convBias},
                    {"in_proj_bias", m.inProjBias},
                    {"out_proj_bias", m.outProjBias},
                    {"dt_min", m.dtMin},
                    {"gate", int64_t(m.gate)},
                    {"norm_grouped", m.normGrouped}};
    if (m.dtClampMax)
      mo["dt_max"] = m.dtMax;
    if (m.inMultiplier)
      mo["in_multiplier"] = *m.inMultiplier;
    if (m.outMultiplier)
      mo["out_multiplier"] = *m.outMultiplier;
    if (m.projMultipliers)
      mo["proj_multipliers"] = json::Array(*m.projMultipliers);
    o["mamba"] = std::move(mo);
  }
  if (c.deltaNet)
    o["delta_net"] = json::Object{{"key_heads", c.deltaNet->keyHeads},
                                  {"value_heads", c.deltaNet->valueHeads},
                                  {"key_dim", c.deltaNet->keyDim},
                                  {"value_dim", c.deltaNet->valueDim},
                                  {"conv_kernel", c.deltaNet->convKernel}};
  if (c.mamba || c.deltaNet) {
    json::Array mixers;
    for (const LayerAttention &layer : c.layers)
      mixers.push_back(int64_t(layer.mixer));
    o["mixers"] = std::move(mixers);
  }
  if (c.attentionOutputGate)
    o["attention_output_gate"] = true;
  json::Object mup;
  auto put = [&](StringRef key, std::optional<double> v) {
    if (v)
      mup[key] = *v;
  };
  put("attention_in", c.mup.attentionIn);
  put("key", c.mup.key);
  put("attention_out", c.mup.attentionOut);
  put("mlp_gate", c.mup.mlpGate);
  put("mlp_down", c.mup.mlpDown);
  if (!mup.empty())
    o["mup"] = std::move(mup);
  if (c.gptq)
    o["gptq"] = json::Object{{"bits", c.gptq->bits},
                             {"group_size", c.gptq->groupSize},
                             {"sym", c.gptq->sym},
                             {"zero_minus_one", c.gptq->zeroMinusOne}};
  std::string text;
  raw_string_ostream os(text);
  os << json::Value(std::move(o)); // llvm::json prints keys sorted
  return text;
}

} // namespace pimc::ckpt
