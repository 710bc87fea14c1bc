//===- PIMHostOp.cpp - pim.host_op dictionaries -> typed host ops ---------===//

#include "pimc/Dialect/PIM/IR/PIMHostOp.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using llvm::formatv;
using llvm::StringRef;

namespace pimc::pim {

namespace {
using Problem = std::optional<std::string>;

Problem fail(StringRef key, const llvm::Twine &msg) {
  return ("'" + key + "' " + msg).str();
}

Problem readInt(StringRef key, Attribute a, int64_t &out) {
  auto i = dyn_cast_or_null<IntegerAttr>(a);
  if (!i || i.getType().isInteger(1))
    return fail(key, "must be an integer");
  out = i.getInt();
  return std::nullopt;
}

template <typename T> Problem readNumber(StringRef key, Attribute a, T &out) {
  if (auto f = dyn_cast<FloatAttr>(a))
    out = T(f.getValueAsDouble());
  else if (auto i = dyn_cast<IntegerAttr>(a); i && !i.getType().isInteger(1))
    out = T(i.getInt());
  else
    return fail(key, "must be a number");
  return std::nullopt;
}

Problem readBool(StringRef key, Attribute a, bool &out) {
  auto b = dyn_cast<BoolAttr>(a);
  if (!b)
    return fail(key, "must be true or false");
  out = b.getValue();
  return std::nullopt;
}

Problem readString(StringRef key, Attribute a, std::string &out) {
  auto s = dyn_cast<StringAttr>(a);
  if (!s)
    return fail(key, "must be a string");
  out = s.getValue().str();
  return std::nullopt;
}

Problem readShape(StringRef key, Attribute a, std::vector<int64_t> &out) {
  auto arr = dyn_cast_or_null<ArrayAttr>(a);
  if (!arr)
    return fail(key, "needs a shape (an array of integers)");
  for (Attribute d : arr) {
    int64_t v = 0;
    if (Problem p = readInt(key, d, v))
      return fail(key, "needs a shape of integers");
    out.push_back(v);
  }
  return std::nullopt;
}

/// The keys of `d` all in `known`.
Problem onlyKeys(StringRef key, DictionaryAttr d,
                 llvm::ArrayRef<StringRef> known) {
  for (NamedAttribute n : d)
    if (!llvm::is_contained(known, n.getName().getValue()))
      return fail(key, formatv("has an unknown field '{0}' (fields: {1})",
                               n.getName().getValue(), llvm::join(known, ", "))
                           .str());
  return std::nullopt;
}

/// `{off, n, fmt}` in act, or `{buf = @b, off, n, fmt}` in a pim.buffer
/// (`off` relative to it; `buffer` gives its offset in act).
Problem readBuffer(StringRef key, Attribute a, LookupBuffer buffer,
                   pimsim::ActBuffer &out) {
  auto d = dyn_cast<DictionaryAttr>(a);
  if (!d)
    return fail(key, "must be a buffer {off, n, fmt}");
  if (Problem p = onlyKeys(key, d, {"buf", "off", "n", "fmt"}))
    return p;
  std::string fmt;
  if (readInt(key, d.get("off"), out.offset) ||
      readInt(key, d.get("n"), out.elements) ||
      readString(key, d.get("fmt"), fmt))
    return fail(key, "needs off, n (integers) and fmt (a string)");
  std::optional<pimsim::ElemFormat> f = pimsim::parseElemFormat(fmt);
  if (!f)
    return fail(key, "has unknown format '" + fmt + "' (f32, fp16, bf16)");
  out.format = *f;
  if (Attribute b = d.get("buf")) {
    auto ref = dyn_cast<FlatSymbolRefAttr>(b);
    if (!ref)
      return fail(key, "'buf' must name a pim.buffer");
    std::optional<int64_t> base = buffer(ref.getValue());
    if (!base)
      return fail(key, "names buffer @" + ref.getValue() +
                           ", which is not a placed pim.buffer of the "
                           "program (run pim-plan-memory)");
    out.offset += *base;
  }
  return std::nullopt;
}

Problem readTensor(StringRef key, Attribute a, InternHostTensor intern,
                   int64_t &out) {
  auto d = dyn_cast<DictionaryAttr>(a);
  if (!d)
    return fail(key, "must be a host tensor {tensor, shape}");
  if (Problem p = onlyKeys(key, d, {"tensor", "shape"}))
    return p;
  pimsim::HostTensor t;
  if (Problem p = readString(key, d.get("tensor"), t.name))
    return p;
  if (Problem p = readShape(key, d.get("shape"), t.shape))
    return p;
  out = intern(std::move(t));
  return std::nullopt;
}

Problem readRope(Attribute a, pimsim::RopeSpec &r) {
  auto d = dyn_cast<DictionaryAttr>(a);
  if (!d)
    return fail("rope", "must be a dictionary");
  llvm::SmallVector<StringRef> keys;
  for (const pimsim::RopeField &f : pimsim::ropeFields())
    keys.push_back(f.key);
  if (Problem p = onlyKeys("rope", d, keys))
    return p;
  for (const pimsim::RopeField &f : pimsim::ropeFields()) {
    Attribute v = d.get(f.key);
    if (!v) {
      if (f.required)
        return fail("rope", "needs '" + f.key + "'");
      continue;
    }
    Problem p;
    if (f.isKind()) {
      std::string kind;
      p = readString(f.key, v, kind);
      std::optional<pimsim::RopeKind> k = pimsim::parseRopeKind(kind);
      if (!p && !k)
        p = fail(f.key, "is '" + kind +
                            "', expected default, linear, dynamic, yarn, "
                            "llama3 or longrope");
      if (k)
        r.kind = *k;
    } else if (f.integer) {
      p = readInt(f.key, v, r.*f.integer);
    } else if (f.number) {
      p = readNumber(f.key, v, r.*f.number);
    } else if (f.optional) {
      double x = 0;
      p = readNumber(f.key, v, x);
      r.*f.optional = x;
    } else if (f.list) {
      auto list = dyn_cast<DenseF64ArrayAttr>(v);
      if (!list)
        p = fail(f.key, "must be an array<f64: ...>");
      else
        (r.*f.list).assign(list.asArrayRef().begin(), list.asArrayRef().end());
    } else {
      p = readBool(f.key, v, r.*f.boolean);
    }
    if (p)
      return "'rope': " + *p;
  }
  return std::nullopt;
}

Problem readCallValues(StringRef key, Attribute a, bool args, LookupParam param,
                       LookupBuffer buffer,
                       std::vector<pimsim::CallValue> &out) {
  auto list = dyn_cast<ArrayAttr>(a);
  if (!list)
    return fail(key, "must be an array");
  for (auto [i, e] : llvm::enumerate(list)) {
    std::string where = formatv("{0}[{1}]", key, i).str();
    auto d = dyn_cast<DictionaryAttr>(e);
    if (!d)
      return fail(where, "must be a dictionary");
    pimsim::CallValue v;
    if (Problem p = readShape(where, d.get("shape"), v.shape))
      return p;
    if (Attribute b = d.get("buffer")) {
      if (Problem p = onlyKeys(where, d, {"buffer", "shape"}))
        return p;
      if (Problem p = readBuffer(where, b, buffer, v.buffer))
        return p;
    } else {
      std::string name;
      if (!args || readString(where, d.get("param"), name) ||
          (name != "pos" && name != "token") || param(name) < 0)
        return fail(where, args ? "needs a buffer or param = \"pos\" or "
                                  "\"token\" (a parameter of the program)"
                                : "needs a buffer");
      if (Problem p = onlyKeys(where, d, {"param", "shape"}))
        return p;
      v.kind = name == "pos" ? pimsim::CallValue::Kind::Position
                             : pimsim::CallValue::Kind::Token;
    }
    out.push_back(std::move(v));
  }
  return std::nullopt;
}

Problem readField(const pimsim::HostFieldSpec &s, Attribute a,
                  InternHostTensor intern, LookupParam param,
                  LookupBuffer buffer, pimsim::HostOp &op) {
  using T = pimsim::HostFieldType;
  switch (pimsim::hostFieldType(s.field)) {
  case T::Buffer:
    return readBuffer(s.key, a, buffer, *pimsim::hostBufferField(op, s.field));
  case T::Tensor:
    return readTensor(s.key, a, intern, op.tensor);
  case T::BufferOrTensor: {
    auto d = dyn_cast<DictionaryAttr>(a);
    if (d && d.get("tensor"))
      return readTensor(s.key, a, intern, op.tensor);
    return readBuffer(s.key, a, buffer, op.b);
  }
  case T::Int:
    return readInt(s.key, a, *pimsim::hostIntField(op, s.field));
  case T::Float:
    return readNumber(s.key, a, *pimsim::hostFloatField(op, s.field));
  case T::Bool:
    return readBool(s.key, a, *pimsim::hostBoolField(op, s.field));
  case T::Rope:
    return readRope(a, op.rope);
  case T::Act: {
    std::string name;
    if (Problem p = readString(s.key, a, name))
      return p;
    std::optional<pimsim::GatedActFn> f = pimsim::parseGatedAct(name);
    if (!f)
      return fail(s.key, "is '" + name + "', expected silu, gelu or gelu_tanh");
    op.act = *f;
    return std::nullopt;
  }
  case T::Param: {
    std::string name;
    if (Problem p = readString(s.key, a, name))
      return p;
    op.param = param(name);
    if (op.param < 0)
      return fail(s.key, "names '" + name +
                             "', which is not a parameter of the program");
    return std::nullopt;
  }
  case T::String:
    return readString(s.key, a, *pimsim::hostStringField(op, s.field));
  case T::CallValues:
    return readCallValues(s.key, a, s.field == pimsim::HostField::Args, param,
                          buffer, *pimsim::hostCallValuesField(op, s.field));
  }
  return std::nullopt;
}
} // namespace

std::optional<std::string> readHostOp(StringRef name, DictionaryAttr args,
                                      InternHostTensor intern,
                                      LookupParam param, LookupBuffer buffer,
                                      pimsim::HostOp &out) {
  std::optional<pimsim::HostOpKind> kind = pimsim::parseHostOpKind(name);
  if (!kind) {
    llvm::SmallVector<StringRef> known;
    for (unsigned i = 0; i < pimsim::kNumHostOpKinds; ++i)
      known.push_back(pimsim::hostOpKindName(pimsim::HostOpKind(i)));
    return formatv("unknown host op '{0}' (known: {1})", name,
                   llvm::join(known, ", "))
        .str();
  }
  out = pimsim::HostOp();
  out.kind = *kind;
  llvm::SmallVector<StringRef> keys;
  for (const pimsim::HostFieldSpec &s : pimsim::hostOpFields(*kind))
    keys.push_back(s.key);
  for (NamedAttribute n : args)
    if (!llvm::is_contained(keys, n.getName().getValue()))
      return formatv("unknown field '{0}' for {1} (fields: {2})",
                     n.getName().getValue(), name, llvm::join(keys, ", "))
          .str();
  for (const pimsim::HostFieldSpec &s : pimsim::hostOpFields(*kind)) {
    Attribute a = args.get(s.key);
    if (!a) {
      if (s.required)
        return formatv("host op '{0}' needs '{1}'", name, s.key).str();
      continue;
    }
    if (Problem p = readField(s, a, intern, param, buffer, out))
      return p;
  }
  return std::nullopt;
}

} // namespace pimc::pim
