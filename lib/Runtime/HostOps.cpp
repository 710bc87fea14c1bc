//===- HostOps.cpp - host kernels of compiled models ----------------------===//
#include "pimc/Runtime/HostOps.h"
#include "pimc/Support/JSON.h"

#include "pimc/Checkpoint/Safetensors.h"
#include "pimc/Support/Shape.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

using namespace llvm;

namespace pimc::rt {

//===----------------------------------------------------------------------===//
// Formats
//===----------------------------------------------------------------------===//

StringRef formatName(ElemFormat format) {
  switch (format) {
  case ElemFormat::F32:
    return "f32";
  case ElemFormat::FP16:
    return "fp16";
  case ElemFormat::BF16:
    return "bf16";
  }
  return "?";
}

std::optional<ElemFormat> parseFormat(StringRef name) {
  if (name == "f32")
    return ElemFormat::F32;
  if (name == "fp16")
    return ElemFormat::FP16;
  if (name == "bf16")
    return ElemFormat::BF16;
  return std::nullopt;
}

unsigned formatBytes(ElemFormat format) {
  return format == ElemFormat::F32 ? 4 : 2;
}

void encodeElement(ElemFormat format, float value, uint8_t *out) {
  switch (format) {
  case ElemFormat::F32: {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    for (int i = 0; i < 4; ++i)
      out[i] = uint8_t(bits >> (8 * i));
    return;
  }
  case ElemFormat::FP16:
  case ElemFormat::BF16: {
    uint16_t bits = format == ElemFormat::FP16 ? ref::floatToF16(value)
                                               : ref::floatToBf16(value);
    out[0] = uint8_t(bits);
    out[1] = uint8_t(bits >> 8);
    return;
  }
  }
}

float decodeElement(ElemFormat format, const uint8_t *in) {
  switch (format) {
  case ElemFormat::F32: {
    uint32_t bits = uint32_t(in[0]) | uint32_t(in[1]) << 8 |
                    uint32_t(in[2]) << 16 | uint32_t(in[3]) << 24;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  case ElemFormat::FP16:
    return ref::f16ToFloat(uint16_t(in[0] | in[1] << 8));
  case ElemFormat::BF16:
    return ref::bf16ToFloat(uint16_t(in[0] | in[1] << 8));
  }
  return 0;
}

int64_t HostTensorRef::elements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

StringRef hostOpName(HostOpKind kind) {
  switch (kind) {
  case HostOpKind::Embedding:
    return "embedding";
  case HostOpKind::RmsNorm:
    return "rms_norm";
  case HostOpKind::Add:
    return "add";
  case HostOpKind::Rope:
    return "rope";
  case HostOpKind::GatedAct:
    return "gated_act";
  case HostOpKind::Pack:
    return "pack";
  case HostOpKind::VStage:
    return "v_stage";
  case HostOpKind::Sum:
    return "sum";
  case HostOpKind::Linear:
    return "linear";
  case HostOpKind::Logits:
    return "logits";
  case HostOpKind::AttnCombine:
    return "attn_combine";
  case HostOpKind::Call:
    return "call";
  }
  return "?";
}

namespace {

std::optional<HostOpKind> parseHostOpKind(StringRef name) {
  for (HostOpKind k :
       {HostOpKind::Embedding, HostOpKind::RmsNorm, HostOpKind::Add,
        HostOpKind::Rope, HostOpKind::GatedAct, HostOpKind::Pack,
        HostOpKind::VStage, HostOpKind::Sum, HostOpKind::Linear,
        HostOpKind::Logits, HostOpKind::AttnCombine, HostOpKind::Call})
    if (hostOpName(k) == name)
      return k;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

/// Reads the fields of one JSON object, remembering the first problem and
/// which keys were read (so that unknown keys can be reported).
class FieldReader {
public:
  FieldReader(const json::Object &obj, std::string where)
      : obj(obj), where(std::move(where)) {}

  bool failed() const { return !problem.empty(); }
  void fail(const Twine &msg) {
    if (problem.empty())
      problem = msg.str();
  }
  /// The first problem, or unknown keys; prefixed with the location.
  Error finish() {
    if (problem.empty()) {
      std::vector<std::string> unknown;
      for (const auto &kv : obj)
        if (!known.count(kv.first.str()))
          unknown.push_back(kv.first.str());
      llvm::sort(unknown);
      if (!unknown.empty())
        problem = formatv("unknown field '{0}' (fields: {1})", unknown.front(),
                          join(knownOrder, ", "))
                      .str();
    }
    if (problem.empty())
      return Error::success();
    return createStringError(where + ": " + problem);
  }

  const json::Value *get(StringRef key, bool required) {
    if (!known.count(key.str())) {
      known.insert(key.str());
      knownOrder.push_back(key.str());
    }
    const json::Value *v = obj.get(key);
    if (!v && required)
      fail("missing field '" + key + "'");
    return v;
  }

  int64_t integer(StringRef key, std::optional<int64_t> def, int64_t min,
                  int64_t max = INT64_MAX) {
    const json::Value *v = get(key, !def);
    if (!v)
      return def.value_or(0);
    std::optional<int64_t> i = v->getAsInteger();
    if (!i) {
      fail("'" + key + "' must be an integer");
      return def.value_or(0);
    }
    if (*i < min || *i > max) {
      if (max == INT64_MAX)
        fail(formatv("'{0}' is {1}, must be at least {2}", key, *i, min));
      else
        fail(formatv("'{0}' is {1}, must be in [{2}, {3}]", key, *i, min, max));
      return def.value_or(min);
    }
    return *i;
  }

  double number(StringRef key, std::optional<double> def) {
    const json::Value *v = get(key, !def);
    if (!v)
      return def.value_or(0);
    std::optional<double> d = v->getAsNumber();
    if (!d || !std::isfinite(*d)) {
      fail("'" + key + "' must be a finite number");
      return def.value_or(0);
    }
    return *d;
  }

  std::optional<double> optionalNumber(StringRef key) {
    if (!get(key, false))
      return std::nullopt;
    return number(key, 0.0);
  }

  bool boolean(StringRef key, std::optional<bool> def) {
    const json::Value *v = get(key, !def);
    if (!v)
      return def.value_or(false);
    std::optional<bool> b = v->getAsBoolean();
    if (!b) {
      fail("'" + key + "' must be true or false");
      return def.value_or(false);
    }
    return *b;
  }

  std::string string(StringRef key) {
    const json::Value *v = get(key, true);
    if (!v)
      return "";
    std::optional<StringRef> s = v->getAsString();
    if (!s) {
      fail("'" + key + "' must be a string");
      return "";
    }
    return s->str();
  }

  const json::Object *object(StringRef key) {
    const json::Value *v = get(key, true);
    if (!v)
      return nullptr;
    const json::Object *o = v->getAsObject();
    if (!o)
      fail("'" + key + "' must be an object");
    return o;
  }

  const std::string &location() const { return where; }

private:
  const json::Object &obj;
  std::string where;
  std::string problem;
  std::set<std::string> known;
  std::vector<std::string> knownOrder;
};

} // namespace

/// Parses one program's host-op lists.
class HostOpsParser {
public:
  HostOpsParser(const pimsim::Program &program, HostOps &out)
      : program(program), out(out) {}
  Error parse();

private:
  Error parseKernel(int64_t k);
  Error parseOp(const json::Object &obj, const std::string &where, HostOp &op);
  BufferRef buffer(FieldReader &r, StringRef key);
  /// Parses a buffer object (r's error on failure).
  BufferRef bufferValue(FieldReader &r, StringRef key, const json::Object &o);
  int64_t tensor(FieldReader &r, StringRef key);
  int64_t tensorValue(FieldReader &r, StringRef key, const json::Object &o);
  void rope(FieldReader &r, HostOp &op);
  void call(FieldReader &r, HostOp &op);
  std::vector<HostCallValue> callValues(FieldReader &r, StringRef key,
                                        bool args);

  const pimsim::Program &program;
  HostOps &out;
  int64_t actBytes = -1;
  std::map<std::string, int64_t> tensorIndex;
  std::vector<std::string> logitsAt; // where the logits ops are
};

Error HostOpsParser::parse() {
  for (const pimsim::Region &r : program.regions)
    if (r.name == "act")
      actBytes = r.bytes;
  for (size_t i = 0; i < program.params.size(); ++i) {
    if (program.params[i].name == "pos")
      out.posIndex = int64_t(i);
    if (program.params[i].name == "token")
      out.tokenIndex = int64_t(i);
  }
  out.kernelOps.assign(program.kernels.size(), {});
  for (int64_t k = 0; k < int64_t(program.kernels.size()); ++k)
    if (Error e = parseKernel(k))
      return e;
  if (logitsAt.size() > 1)
    return createStringError(
        formatv("the program has {0} 'logits' ops ({1}); expected one",
                logitsAt.size(), join(logitsAt, "; ")));
  return Error::success();
}

Error HostOpsParser::parseKernel(int64_t k) {
  const pimsim::HostKernel &kernel = program.kernels[k];
  std::string where = formatv("host kernel '{0}' ({1})", kernel.name, k).str();
  if (StringRef(kernel.params).trim().empty())
    return createStringError(
        where + ": no params (every host kernel of a compiled model carries "
                "{\"ops\": [...]}, docs/backend-abi.md)");
  Expected<json::Value> value = pimc::parseJSON(kernel.params);
  if (!value)
    return createStringError(
        where + ": params are not valid JSON: " + toString(value.takeError()));
  const json::Object *root = value->getAsObject();
  if (!root)
    return createStringError(where + ": params must be an object {\"ops\": "
                                     "[...]}");
  for (const auto &kv : *root)
    if (kv.first != "ops")
      return createStringError(where + ": unknown params field '" +
                               kv.first.str() + "' (fields: ops)");
  const json::Value *opsValue = root->get("ops");
  const json::Array *ops = opsValue ? opsValue->getAsArray() : nullptr;
  if (!ops)
    return createStringError(where + ": params need an array 'ops'");
  if (actBytes < 0 && !ops->empty())
    return createStringError(where +
                             ": the program has no region 'act' for host ops");
  for (size_t i = 0; i < ops->size(); ++i) {
    const json::Object *obj = (*ops)[i].getAsObject();
    std::string opWhere = formatv("{0}, op {1}", where, i).str();
    if (!obj)
      return createStringError(opWhere + ": an op must be an object");
    HostOp op;
    if (Error e = parseOp(*obj, opWhere, op))
      return e;
    if (op.kind == HostOpKind::Logits) {
      logitsAt.push_back(opWhere);
      out.logitsBuffer = op.in;
    }
    out.kernelOps[k].push_back(std::move(op));
  }
  return Error::success();
}

BufferRef HostOpsParser::buffer(FieldReader &r, StringRef key) {
  const json::Object *o = r.object(key);
  if (!o)
    return {};
  return bufferValue(r, key, *o);
}

BufferRef HostOpsParser::bufferValue(FieldReader &r, StringRef key,
                                     const json::Object &o) {
  BufferRef b;
  FieldReader br(o, "");
  b.offset = br.integer("off", std::nullopt, 0);
  b.elements = br.integer("n", std::nullopt, 1);
  std::string fmt = br.string("fmt");
  if (!br.failed()) {
    if (std::optional<ElemFormat> f = parseFormat(fmt))
      b.format = *f;
    else
      br.fail("'fmt' is '" + fmt + "', expected f32, fp16 or bf16");
  }
  if (Error e = br.finish()) {
    r.fail("'" + key + "'" + toString(std::move(e)));
    return b;
  }
  if (b.offset + b.bytes() > actBytes)
    r.fail(formatv("'{0}' covers act bytes [{1}, {2}), outside region 'act' "
                   "({3} bytes)",
                   key, b.offset, b.offset + b.bytes(), actBytes));
  return b;
}

int64_t HostOpsParser::tensor(FieldReader &r, StringRef key) {
  const json::Object *o = r.object(key);
  if (!o)
    return -1;
  return tensorValue(r, key, *o);
}

int64_t HostOpsParser::tensorValue(FieldReader &r, StringRef key,
                                   const json::Object &o) {
  FieldReader tr(o, "");
  HostTensorRef t;
  t.name = tr.string("tensor");
  if (const json::Value *shape = tr.get("shape", true)) {
    const json::Array *dims = shape->getAsArray();
    if (!dims || dims->empty())
      tr.fail("'shape' must be a non-empty array of positive integers");
    else
      for (const json::Value &d : *dims) {
        std::optional<int64_t> i = d.getAsInteger();
        if (!i || *i < 1) {
          tr.fail("'shape' must be a non-empty array of positive integers");
          break;
        }
        t.shape.push_back(*i);
      }
  }
  if (!tr.failed() && t.name.empty())
    tr.fail("'tensor' must name a checkpoint tensor");
  if (Error e = tr.finish()) {
    r.fail("'" + key + "'" + toString(std::move(e)));
    return -1;
  }
  auto it = tensorIndex.find(t.name);
  if (it != tensorIndex.end()) {
    const HostTensorRef &seen = out.tensorRefs[it->second];
    if (seen.shape != t.shape)
      r.fail(formatv("'{0}': tensor '{1}' has shape {2} here but {3} in an "
                     "earlier op",
                     key, t.name, shapeString(t.shape),
                     shapeString(seen.shape)));
    return it->second;
  }
  int64_t index = int64_t(out.tensorRefs.size());
  tensorIndex[t.name] = index;
  out.tensorRefs.push_back(std::move(t));
  return index;
}

void HostOpsParser::rope(FieldReader &r, HostOp &op) {
  const json::Object *o = r.object("rope");
  if (!o)
    return;
  FieldReader rr(*o, "");
  ref::RopeParams &p = op.rope;
  std::string kind = rr.string("kind");
  if (kind == "default")
    p.kind = ref::RopeParams::Kind::Default;
  else if (kind == "linear")
    p.kind = ref::RopeParams::Kind::Linear;
  else if (kind == "dynamic")
    p.kind = ref::RopeParams::Kind::Dynamic;
  else if (kind == "yarn")
    p.kind = ref::RopeParams::Kind::Yarn;
  else if (kind == "llama3")
    p.kind = ref::RopeParams::Kind::Llama3;
  else if (!rr.failed())
    rr.fail("'kind' is '" + kind +
            "', expected default, linear, dynamic, yarn or llama3");
  p.interleaved = rr.boolean("interleaved", false);
  p.rotaryDim = rr.integer("rotary_dim", op.headDim, 2, op.headDim);
  if (!rr.failed() && p.rotaryDim % 2)
    rr.fail(formatv("'rotary_dim' is {0}, must be even", p.rotaryDim));
  p.theta = rr.number("theta", 10000.0);
  p.factor = rr.number("factor", 1.0);
  p.originalMaxPositionEmbeddings =
      rr.integer("original_max_position_embeddings", 0, 0);
  p.maxPositionEmbeddings = rr.integer("max_position_embeddings", 0, 0);
  p.lowFreqFactor = rr.number("low_freq_factor", 1.0);
  p.highFreqFactor = rr.number("high_freq_factor", 4.0);
  p.betaFast = rr.number("beta_fast", 32.0);
  p.betaSlow = rr.number("beta_slow", 1.0);
  p.attentionFactor = rr.optionalNumber("attention_factor");
  p.mscale = rr.optionalNumber("mscale");
  p.mscaleAllDim = rr.optionalNumber("mscale_all_dim");
  p.truncate = rr.boolean("truncate", true);
  if (!rr.failed())
    if (std::string why = ref::ropeParamsProblem(p); !why.empty())
      rr.fail(why);
  if (Error e = rr.finish())
    r.fail("'rope'" + toString(std::move(e)));
}

Error HostOpsParser::parseOp(const json::Object &obj, const std::string &where,
                             HostOp &op) {
  const json::Value *kindValue = obj.get("op");
  std::optional<StringRef> kindName =
      kindValue ? kindValue->getAsString() : std::nullopt;
  if (!kindName)
    return createStringError(where + ": needs a string field 'op'");
  std::optional<HostOpKind> kind = parseHostOpKind(*kindName);
  if (!kind)
    return createStringError(
        where + ": unknown op '" + *kindName +
        "' (ops: embedding, rms_norm, add, rope, gated_act, pack, v_stage, "
        "sum, linear, logits, attn_combine, call)");
  op.kind = *kind;
  FieldReader r(obj, where + " (" + kindName->str() + ")");
  r.get("op", true);
  auto sameLength = [&](StringRef a, const BufferRef &x, StringRef b,
                        int64_t n) {
    if (!r.failed() && x.elements != n)
      r.fail(
          formatv("'{0}' has {1} elements, {2} is {3}", a, x.elements, b, n));
  };
  auto needFormat = [&](StringRef key, const BufferRef &x, ElemFormat f) {
    if (!r.failed() && x.format != f)
      r.fail(formatv("'{0}' must be {1}, not {2}", key, formatName(f),
                     formatName(x.format)));
  };
  // The program parameter the "param" key names (e.g. pos), or -1 with an
  // error.
  auto namedParam = [&]() -> int64_t {
    std::string param = r.string("param");
    if (r.failed())
      return -1;
    for (size_t i = 0; i < program.params.size(); ++i)
      if (program.params[i].name == param)
        return int64_t(i);
    r.fail("'param' names '" + param +
           "', which is not a parameter of the program");
    return -1;
  };
  auto needParam = [&](int64_t index, StringRef name) {
    if (!r.failed() && index < 0)
      r.fail("the program has no parameter '" + name + "'");
  };

  switch (op.kind) {
  case HostOpKind::Embedding: {
    op.tensor = tensor(r, "table");
    op.out = buffer(r, "out");
    needFormat("out", op.out, ElemFormat::F32);
    needParam(out.tokenIndex, "token");
    if (!r.failed()) {
      const HostTensorRef &t = out.tensorRefs[op.tensor];
      if (t.shape.size() != 2)
        r.fail(
            formatv("'table' must be [V, H], not {0}", shapeString(t.shape)));
      else {
        sameLength("out", op.out, "the table's H", t.shape[1]);
        out.vocabRows = t.shape[0];
      }
    }
    break;
  }
  case HostOpKind::RmsNorm: {
    op.in = buffer(r, "in");
    op.out = buffer(r, "out");
    op.tensor = tensor(r, "weight");
    op.eps = float(r.number("eps", std::nullopt));
    op.groups = r.integer("groups", 1, 1);
    op.gemma = r.boolean("gemma", false);
    if (!r.failed() && op.eps < 0)
      r.fail("'eps' must not be negative");
    if (!r.failed()) {
      const HostTensorRef &t = out.tensorRefs[op.tensor];
      if (t.shape.size() != 1)
        r.fail(formatv("'weight' must be [D], not {0}", shapeString(t.shape)));
      else {
        sameLength("in", op.in, "groups * D", op.groups * t.shape[0]);
        sameLength("out", op.out, "groups * D", op.groups * t.shape[0]);
      }
    }
    break;
  }
  case HostOpKind::Add: {
    op.a = buffer(r, "a");
    if (const json::Object *b = r.object("b")) {
      if (b->get("tensor"))
        op.tensor = tensorValue(r, "b", *b);
      else
        op.b = bufferValue(r, "b", *b);
    }
    op.out = buffer(r, "out");
    sameLength("out", op.out, "'a'", op.a.elements);
    if (!r.failed()) {
      if (op.tensor >= 0)
        sameLength("a", op.a, "tensor 'b'",
                   out.tensorRefs[op.tensor].elements());
      else
        sameLength("b", op.b, "'a'", op.a.elements);
    }
    break;
  }
  case HostOpKind::Rope: {
    op.in = buffer(r, "in");
    op.out = buffer(r, "out");
    op.heads = r.integer("heads", std::nullopt, 1);
    op.headDim = r.integer("head_dim", std::nullopt, 2);
    if (!r.failed())
      rope(r, op);
    needFormat("in", op.in, ElemFormat::F32);
    needFormat("out", op.out, ElemFormat::F32);
    sameLength("in", op.in, "heads * head_dim", op.heads * op.headDim);
    sameLength("out", op.out, "heads * head_dim", op.heads * op.headDim);
    needParam(out.posIndex, "pos");
    break;
  }
  case HostOpKind::GatedAct: {
    op.a = buffer(r, "gate");
    op.b = buffer(r, "up");
    op.out = buffer(r, "out");
    std::string act = r.string("act");
    if (act == "silu")
      op.act = GatedActFn::Silu;
    else if (act == "gelu")
      op.act = GatedActFn::Gelu;
    else if (act == "gelu_tanh")
      op.act = GatedActFn::GeluTanh;
    else if (!r.failed())
      r.fail("'act' is '" + act + "', expected silu, gelu or gelu_tanh");
    sameLength("up", op.b, "'gate'", op.a.elements);
    sameLength("out", op.out, "'gate'", op.a.elements);
    break;
  }
  case HostOpKind::Pack: {
    op.in = buffer(r, "in");
    op.out = buffer(r, "out");
    op.blocks = r.integer("blocks", std::nullopt, 1);
    op.block = r.integer("block", std::nullopt, 1);
    op.inStride = r.integer("in_stride", std::nullopt, 0);
    op.outStride = r.integer("out_stride", std::nullopt, 0);
    op.replicate = r.integer("replicate", 1, 1);
    op.scale = float(r.number("scale", 1.0));
    if (!r.failed()) {
      int64_t inNeed = (op.blocks - 1) * op.inStride + op.block;
      int64_t outNeed =
          (op.blocks - 1) * op.outStride + op.replicate * op.block;
      if (inNeed > op.in.elements)
        r.fail(formatv("reads {0} elements of 'in', which has {1}", inNeed,
                       op.in.elements));
      else if (outNeed > op.out.elements)
        r.fail(formatv("writes {0} elements of 'out', which has {1}", outNeed,
                       op.out.elements));
    }
    break;
  }
  case HostOpKind::VStage: {
    op.in = buffer(r, "in");
    op.out = buffer(r, "out");
    op.heads = r.integer("heads", std::nullopt, 1);
    op.headDim = r.integer("head_dim", std::nullopt, 1);
    op.lanes = r.integer("lanes", std::nullopt, 1);
    op.groups = r.integer("groups", 1, 1);
    op.clear = r.boolean("clear", true);
    op.replicas = r.integer("replicas", 1, 1);
    op.param = namedParam();
    needFormat("in", op.in, ElemFormat::F32);
    if (!r.failed() && op.out.format == ElemFormat::F32)
      r.fail("'out' must be fp16 or bf16, not f32");
    sameLength("in", op.in, "heads * head_dim", op.heads * op.headDim);
    if (!r.failed() &&
        op.out.elements < op.heads * op.headDim * op.lanes * op.groups)
      r.fail(formatv("'out' has {0} elements, heads * head_dim * lanes * "
                     "groups is {1}",
                     op.out.elements,
                     op.heads * op.headDim * op.lanes * op.groups));
    break;
  }
  case HostOpKind::Sum: {
    op.in = buffer(r, "in");
    op.out = buffer(r, "out");
    op.parts = r.integer("parts", std::nullopt, 1);
    op.inStride = r.integer("stride", std::nullopt, 0);
    if (!r.failed()) {
      int64_t need = (op.parts - 1) * op.inStride + op.out.elements;
      if (need > op.in.elements)
        r.fail(formatv("reads {0} elements of 'in', which has {1}", need,
                       op.in.elements));
    }
    break;
  }
  case HostOpKind::AttnCombine: {
    op.in = buffer(r, "in");
    op.b = buffer(r, "stats");
    op.out = buffer(r, "out");
    op.parts = r.integer("parts", std::nullopt, 1);
    op.inStride = r.integer("stride", std::nullopt, 0);
    op.heads = r.integer("heads", std::nullopt, 1);
    op.headDim = r.integer("block", std::nullopt, 1);
    op.outStride = r.integer("stats_stride", 2 * op.heads, 0);
    op.partKeys = r.integer("part_keys", std::nullopt, 1);
    op.param = namedParam();
    needFormat("in", op.in, ElemFormat::F32);
    needFormat("stats", op.b, ElemFormat::F32);
    needFormat("out", op.out, ElemFormat::F32);
    sameLength("out", op.out, "heads * block", op.heads * op.headDim);
    if (!r.failed()) {
      int64_t need = (op.parts - 1) * op.inStride + op.heads * op.headDim;
      int64_t needStats = (op.parts - 1) * op.outStride + 2 * op.heads;
      if (need > op.in.elements)
        r.fail(formatv("reads {0} elements of 'in', which has {1}", need,
                       op.in.elements));
      else if (needStats > op.b.elements)
        r.fail(formatv("reads {0} elements of 'stats', which has {1}",
                       needStats, op.b.elements));
    }
    break;
  }
  case HostOpKind::Linear: {
    op.in = buffer(r, "in");
    op.out = buffer(r, "out");
    op.tensor = tensor(r, "weight");
    needFormat("in", op.in, ElemFormat::F32);
    needFormat("out", op.out, ElemFormat::F32);
    if (!r.failed()) {
      const HostTensorRef &t = out.tensorRefs[op.tensor];
      if (t.shape.size() != 2)
        r.fail(
            formatv("'weight' must be [N, K], not {0}", shapeString(t.shape)));
      else {
        sameLength("in", op.in, "K", t.shape[1]);
        sameLength("out", op.out, "N", t.shape[0]);
      }
    }
    break;
  }
  case HostOpKind::Logits:
    op.in = buffer(r, "in");
    needFormat("in", op.in, ElemFormat::F32);
    break;
  case HostOpKind::Call:
    call(r, op);
    break;
  }
  return r.finish();
}

std::vector<HostCallValue> HostOpsParser::callValues(FieldReader &r,
                                                     StringRef key, bool args) {
  std::vector<HostCallValue> values;
  const json::Value *v = r.get(key, true);
  const json::Array *list = v ? v->getAsArray() : nullptr;
  if (v && !list)
    r.fail("'" + key + "' must be an array");
  for (size_t i = 0; list && i < list->size() && !r.failed(); ++i) {
    std::string where = formatv("{0}[{1}]", key, i).str();
    const json::Object *o = (*list)[i].getAsObject();
    if (!o) {
      r.fail("'" + where + "' must be an object");
      break;
    }
    FieldReader vr(*o, "");
    HostCallValue value;
    if (const json::Value *shape = vr.get("shape", true)) {
      const json::Array *dims = shape->getAsArray();
      for (size_t d = 0; dims && d < dims->size(); ++d) {
        std::optional<int64_t> n = (*dims)[d].getAsInteger();
        if (!n || *n < 1 || *n > (int64_t(1) << 40)) {
          vr.fail("'shape' must list positive sizes");
          break;
        }
        value.shape.push_back(*n);
      }
      if (!dims)
        vr.fail("'shape' must be an array");
    }
    if (o->get("buffer") || !args) {
      const json::Object *b = vr.object("buffer");
      if (b && !vr.failed()) {
        value.buffer = bufferValue(vr, "buffer", *b);
        int64_t n = 1;
        for (int64_t d : value.shape)
          n = d > INT64_MAX / n ? INT64_MAX : n * d;
        if (!vr.failed() && n != value.buffer.elements)
          vr.fail(formatv("'shape' {0} does not have the buffer's {1} "
                          "elements",
                          shapeString(value.shape), value.buffer.elements));
      }
    } else {
      std::string param = vr.string("param");
      if (param == "pos")
        value.kind = HostCallValue::Kind::Position;
      else if (param == "token")
        value.kind = HostCallValue::Kind::Token;
      else if (!vr.failed())
        vr.fail("'param' is '" + param + "', expected pos or token");
    }
    if (Error e = vr.finish())
      r.fail("'" + where + "'" + toString(std::move(e)));
    values.push_back(std::move(value));
  }
  return values;
}

void HostOpsParser::call(FieldReader &r, HostOp &op) {
  r.string("source");
  std::string text = r.string("mlir");
  r.integer("weight_bytes", std::nullopt, 0);
  r.integer("flops", std::nullopt, 0);
  op.callArgs = callValues(r, "args", true);
  op.callResults = callValues(r, "results", false);
  for (const HostCallValue &v : op.callArgs)
    if (!r.failed() &&
        ((v.kind == HostCallValue::Kind::Position && out.posIndex < 0) ||
         (v.kind == HostCallValue::Kind::Token && out.tokenIndex < 0)))
      r.fail("an argument names a parameter the program does not have");
  if (r.failed())
    return;
  op.function = int64_t(out.functionTexts.size());
  out.functionTexts.push_back(std::move(text));
}

Expected<HostOps> HostOps::parse(const pimsim::Program &program) {
  HostOps ops;
  HostOpsParser parser(program, ops);
  if (Error e = parser.parse())
    return e;
  return ops;
}

//===----------------------------------------------------------------------===//
// Binding
//===----------------------------------------------------------------------===//

Error HostOps::bindTensors(const ckpt::WeightStore &store) {
  if (!functionTexts.empty()) {
    if (!runner)
      return createStringError(formatv(
          "the program has {0} host call(s) (llm ops without a device "
          "lowering, run on the reference interpreter) and this runtime was "
          "given no host-function runner",
          functionTexts.size()));
    if (Error e = runner->load(functionTexts, store))
      return e;
  }
  std::vector<BoundTensor> result(tensorRefs.size());
  for (size_t i = 0; i < tensorRefs.size(); ++i) {
    const HostTensorRef &t = tensorRefs[i];
    const ckpt::TensorView *view = store.lookup(t.name);
    if (!view)
      return createStringError("checkpoint has no tensor '" + t.name +
                               "' that the program needs");
    if (ArrayRef<int64_t>(view->shape) != ArrayRef<int64_t>(t.shape))
      return createStringError(
          formatv("checkpoint tensor '{0}' has shape {1}, the program was "
                  "compiled for {2}",
                  t.name, shapeString(view->shape), shapeString(t.shape)));
    BoundTensor &b = result[i];
    switch (view->dtype) {
    case ckpt::DType::F32:
      b.storage = ref::StorageType::F32;
      b.data = view->data;
      break;
    case ckpt::DType::F16:
      b.storage = ref::StorageType::F16;
      b.data = view->data;
      break;
    case ckpt::DType::BF16:
      b.storage = ref::StorageType::BF16;
      b.data = view->data;
      break;
    case ckpt::DType::F64: {
      b.owned.resize(size_t(t.elements()));
      for (size_t j = 0; j < b.owned.size(); ++j) {
        double d;
        std::memcpy(&d, view->data + 8 * j, 8);
        b.owned[j] = float(d);
      }
      b.storage = ref::StorageType::F32;
      break;
    }
    default:
      return createStringError(
          formatv("checkpoint tensor '{0}' has dtype {1}; host tensors must "
                  "be F32, F16, BF16 or F64",
                  t.name, ckpt::dtypeName(view->dtype)));
    }
  }
  boundTensors = std::move(result);
  bound = true;
  return Error::success();
}

void HostOps::widen(int64_t tensor, int64_t first, int64_t count,
                    float *out) const {
  const BoundTensor &b = boundTensors[tensor];
  size_t elem = b.storage == ref::StorageType::F32 ? 4 : 2;
  const void *data = b.owned.empty() ? b.data : b.owned.data();
  ref::widenToF32(b.storage,
                  static_cast<const uint8_t *>(data) + size_t(first) * elem,
                  count, out);
}

//===----------------------------------------------------------------------===//
// Execution
//===----------------------------------------------------------------------===//

namespace {

/// Reads a buffer of the act region as f32.
Expected<std::vector<float>> readBuffer(Device &device, StringRef region,
                                        const BufferRef &b) {
  auto bytes = device.readRegion(region, uint64_t(b.offset), size_t(b.bytes()));
  if (!bytes)
    return bytes.takeError();
  std::vector<float> values(size_t(b.elements));
  unsigned size = formatBytes(b.format);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = decodeElement(b.format, bytes->data() + i * size);
  return values;
}

/// Writes f32 values to a buffer, converting to its format.
Error writeBuffer(Device &device, StringRef region, const BufferRef &b,
                  ArrayRef<float> values) {
  unsigned size = formatBytes(b.format);
  std::vector<uint8_t> bytes(values.size() * size);
  for (size_t i = 0; i < values.size(); ++i)
    encodeElement(b.format, values[i], bytes.data() + i * size);
  return device.writeRegion(region, uint64_t(b.offset), bytes);
}

} // namespace

ArrayRef<HostOp> HostOps::ops(int64_t kernel) const {
  if (kernel < 0 || kernel >= int64_t(kernelOps.size()))
    return {};
  return kernelOps[kernel];
}

Error HostOps::run(Device &device, int64_t kernel,
                   ArrayRef<int64_t> params) const {
  if (kernel < 0 || kernel >= int64_t(kernelOps.size()))
    return createStringError(
        formatv("host kernel {0} does not exist (the program has {1})", kernel,
                kernelOps.size()));
  if (!bound && !tensorRefs.empty())
    return createStringError("host tensors are not bound to a checkpoint");
  for (size_t i = 0; i < kernelOps[kernel].size(); ++i) {
    const HostOp &op = kernelOps[kernel][i];
    if (Error e = runOp(device, op, params))
      return createStringError(formatv(
          "op {0} ({1}): {2}", i, hostOpName(op.kind), toString(std::move(e))));
  }
  return Error::success();
}

Error HostOps::runOp(Device &device, const HostOp &op,
                     ArrayRef<int64_t> params) const {
  auto param = [&](int64_t index) -> int64_t {
    return index >= 0 && index < int64_t(params.size()) ? params[index] : 0;
  };
  auto checkParam = [&](int64_t index, StringRef name) -> Error {
    if (index < 0 || index >= int64_t(params.size()))
      return createStringError(formatv(
          "parameter '{0}' has no value ({1} given)", name, params.size()));
    return Error::success();
  };
  StringRef region = actRegion;
  switch (op.kind) {
  case HostOpKind::Embedding: {
    if (Error e = checkParam(tokenIndex, "token"))
      return e;
    int64_t token = param(tokenIndex);
    const HostTensorRef &t = tensorRefs[op.tensor];
    if (token < 0 || token >= t.shape[0])
      return createStringError(
          formatv("token {0} is outside the vocabulary (table '{1}' has {2} "
                  "rows)",
                  token, t.name, t.shape[0]));
    std::vector<float> row(static_cast<size_t>(t.shape[1]));
    widen(op.tensor, token * t.shape[1], t.shape[1], row.data());
    return writeBuffer(device, region, op.out, row);
  }
  case HostOpKind::Linear: {
    // y[n] = sum_k W[n, k] x[k], f32, k in order (the host GEMV).
    auto x = readBuffer(device, region, op.in);
    if (!x)
      return x.takeError();
    int64_t n = tensorRefs[op.tensor].shape[0],
            k = tensorRefs[op.tensor].shape[1];
    std::vector<float> row(static_cast<size_t>(k)), y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      widen(op.tensor, i * k, k, row.data());
      float acc = 0;
      for (int64_t j = 0; j < k; ++j)
        acc += row[size_t(j)] * (*x)[size_t(j)];
      y[size_t(i)] = acc;
    }
    return writeBuffer(device, region, op.out, y);
  }
  case HostOpKind::RmsNorm: {
    auto x = readBuffer(device, region, op.in);
    if (!x)
      return x.takeError();
    int64_t d = tensorRefs[op.tensor].shape[0];
    std::vector<float> w(static_cast<size_t>(d)), y(x->size());
    widen(op.tensor, 0, d, w.data());
    ref::rmsNorm(x->data(), op.groups, d, w.data(), op.eps, op.gemma, y.data());
    return writeBuffer(device, region, op.out, y);
  }
  case HostOpKind::Add: {
    auto a = readBuffer(device, region, op.a);
    if (!a)
      return a.takeError();
    std::vector<float> b;
    if (op.tensor >= 0) {
      b.resize(a->size());
      widen(op.tensor, 0, int64_t(b.size()), b.data());
    } else {
      auto bv = readBuffer(device, region, op.b);
      if (!bv)
        return bv.takeError();
      b = std::move(*bv);
    }
    for (size_t i = 0; i < a->size(); ++i)
      (*a)[i] += b[i];
    return writeBuffer(device, region, op.out, *a);
  }
  case HostOpKind::Rope: {
    if (Error e = checkParam(posIndex, "pos"))
      return e;
    auto x = readBuffer(device, region, op.in);
    if (!x)
      return x.takeError();
    ref::applyRope(x->data(), 1, op.heads, op.headDim, param(posIndex),
                   op.rope);
    return writeBuffer(device, region, op.out, *x);
  }
  case HostOpKind::GatedAct: {
    auto gate = readBuffer(device, region, op.a);
    if (!gate)
      return gate.takeError();
    auto up = readBuffer(device, region, op.b);
    if (!up)
      return up.takeError();
    for (size_t i = 0; i < gate->size(); ++i) {
      float g = (*gate)[i];
      float act = op.act == GatedActFn::Silu   ? ref::silu(g)
                  : op.act == GatedActFn::Gelu ? ref::geluErf(g)
                                               : ref::geluTanh(g);
      (*gate)[i] = act * (*up)[i];
    }
    return writeBuffer(device, region, op.out, *gate);
  }
  case HostOpKind::Pack: {
    auto in = readBuffer(device, region, op.in);
    if (!in)
      return in.takeError();
    // Read-modify-write: elements of `out` the op does not cover keep their
    // bytes.
    auto outBytes = device.readRegion(region, uint64_t(op.out.offset),
                                      size_t(op.out.bytes()));
    if (!outBytes)
      return outBytes.takeError();
    unsigned size = formatBytes(op.out.format);
    for (int64_t b = 0; b < op.blocks; ++b)
      for (int64_t r = 0; r < op.replicate; ++r)
        for (int64_t e = 0; e < op.block; ++e)
          encodeElement(op.out.format,
                        op.scale * (*in)[size_t(b * op.inStride + e)],
                        outBytes->data() +
                            size_t(b * op.outStride + r * op.block + e) * size);
    return device.writeRegion(region, uint64_t(op.out.offset), *outBytes);
  }
  case HostOpKind::VStage: {
    if (Error e = checkParam(op.param, "v_stage slot"))
      return e;
    auto in = readBuffer(device, region, op.in);
    if (!in)
      return in.takeError();
    int64_t used = op.heads * op.headDim * op.lanes * op.groups;
    BufferRef staging{op.out.offset, used, op.out.format};
    auto outBytes = device.readRegion(region, uint64_t(staging.offset),
                                      size_t(staging.bytes()));
    if (!outBytes)
      return outBytes.takeError();
    int64_t slot = param(op.param);
    int64_t lane = ((slot % op.lanes) + op.lanes) % op.lanes;
    int64_t group = ((slot / op.lanes) % op.groups + op.groups) % op.groups;
    // One staging column per (head, dim): a fresh column starts at lane 0.
    // Ring caches (clear = false) keep the earlier lanes of a wrapped
    // column: they are still inside the window.
    if (lane == 0 && op.clear)
      std::fill(outBytes->begin(), outBytes->end(), 0);
    for (int64_t i = 0; i < op.heads * op.headDim; ++i)
      encodeElement(op.out.format, (*in)[size_t(i)],
                    outBytes->data() +
                        2 * size_t((i * op.groups + group) * op.lanes + lane));
    return device.writeRegion(region, uint64_t(staging.offset), *outBytes);
  }
  case HostOpKind::Sum: {
    auto in = readBuffer(device, region, op.in);
    if (!in)
      return in.takeError();
    std::vector<float> out(size_t(op.out.elements));
    for (size_t n = 0; n < out.size(); ++n) {
      float acc = (*in)[n]; // parts added in order p = 0, 1, ...
      for (int64_t p = 1; p < op.parts; ++p)
        acc += (*in)[size_t(p * op.inStride) + n];
      out[n] = acc;
    }
    return writeBuffer(device, region, op.out, out);
  }
  case HostOpKind::AttnCombine: {
    // The split-K merge of normalised partials (docs/backend-abi.md): part p
    // has o_p = P_p V_p / l_p, max m_p and sum l_p; with M = max m_p over
    // the parts that hold keys, w_p = exp(m_p - M) l_p and
    // o = sum_p w_p o_p / sum_p w_p, in f32, parts in order.
    if (Error e = checkParam(op.param, "attn_combine position"))
      return e;
    auto in = readBuffer(device, region, op.in);
    if (!in)
      return in.takeError();
    auto st = readBuffer(device, region, op.b);
    if (!st)
      return st.takeError();
    int64_t pos = param(op.param);
    int64_t live = std::clamp<int64_t>(pos / op.partKeys + 1, 1, op.parts);
    std::vector<float> out(size_t(op.out.elements));
    if (live == 1) { // only part 0 holds keys: its output, bit for bit
      std::copy_n(in->begin(), out.size(), out.begin());
      return writeBuffer(device, region, op.out, out);
    }
    std::vector<float> w(static_cast<size_t>(live));
    for (int64_t h = 0; h < op.heads; ++h) {
      auto stat = [&](int64_t p, int k) {
        return (*st)[size_t(p * op.outStride + 2 * h + k)];
      };
      float M = stat(0, 0);
      for (int64_t p = 1; p < live; ++p)
        M = std::max(M, stat(p, 0));
      float W = 0;
      for (int64_t p = 0; p < live; ++p) {
        w[size_t(p)] = std::exp(stat(p, 0) - M) * stat(p, 1);
        W += w[size_t(p)];
      }
      for (int64_t j = 0; j < op.headDim; ++j) {
        size_t n = size_t(h * op.headDim + j);
        float acc = 0;
        for (int64_t p = 0; p < live; ++p)
          acc += w[size_t(p)] * (*in)[size_t(p * op.inStride) + n];
        out[n] = acc / W;
      }
    }
    return writeBuffer(device, region, op.out, out);
  }
  case HostOpKind::Logits:
    return Error::success();
  case HostOpKind::Call:
    return runCall(device, op, params);
  }
  return Error::success();
}

Error HostOps::runCall(Device &device, const HostOp &op,
                       ArrayRef<int64_t> params) const {
  if (!runner)
    return createStringError("no host-function runner");
  std::vector<HostValue> args;
  for (const HostCallValue &a : op.callArgs) {
    HostValue v;
    v.shape = a.shape;
    if (a.kind == HostCallValue::Kind::Buffer) {
      auto values = readBuffer(device, actRegion, a.buffer);
      if (!values)
        return values.takeError();
      v.f32 = std::move(*values);
    } else {
      int64_t index =
          a.kind == HostCallValue::Kind::Position ? posIndex : tokenIndex;
      if (index < 0 || index >= int64_t(params.size()))
        return createStringError("a call argument's parameter has no value");
      v.integer = true;
      v.i64.assign(size_t(std::max<int64_t>(1, v.elements())), params[index]);
    }
    args.push_back(std::move(v));
  }
  auto results = runner->call(op.function, args);
  if (!results)
    return results.takeError();
  if (results->size() != op.callResults.size())
    return createStringError(formatv("the function returned {0} values, the "
                                     "program expects {1}",
                                     results->size(), op.callResults.size()));
  for (auto [r, want] : llvm::zip(*results, op.callResults)) {
    if (r.integer || r.shape != want.shape)
      return createStringError(
          formatv("the function returned a {0} {1} value where the program "
                  "expects f32 {2}",
                  r.integer ? "integer" : "f32", shapeString(r.shape),
                  shapeString(want.shape)));
    if (Error e = writeBuffer(device, actRegion, want.buffer, r.f32))
      return e;
  }
  return Error::success();
}

} // namespace pimc::rt
