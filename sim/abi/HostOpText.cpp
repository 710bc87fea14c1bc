//===- HostOpText.cpp - host ops in the program text form -----------------===//
//
// A .kernel's host ops follow it, one per line (docs/pimsim-isa.md):
//
//   .kernel L0.host0 kind=rmsnorm m=0 n=0 k=0 flops=0 bytes=0
//     rms_norm in=f32[4096]@0 out=fp16[4096]@16384 weight="w.norm" eps=1e-05
//
// Floats print in their shortest round-trip spelling, so print -> parse ->
// print is the identity.
//
//===----------------------------------------------------------------------===//

#include "TextForm.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <charconv>
#include <cmath>

using namespace llvm;

namespace pimsim::detail {

namespace {
//--- Printing ---------------------------------------------------------------

/// The shortest spelling that reads back exactly; whole numbers as
/// integers (theta=500000, not 5e+05).
template <typename T> std::string number(T v) {
  if (std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < T(1e15))
    return std::to_string(int64_t(v));
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

std::string bufferText(const ActBuffer &b) {
  return formatv("{0}[{1}]@{2}", elemFormatName(b.format), b.elements, b.offset)
      .str();
}

std::string callValueText(const CallValue &v) {
  std::string head = v.kind == CallValue::Kind::Position ? "pos"
                     : v.kind == CallValue::Kind::Token  ? "token"
                                                         : bufferText(v.buffer);
  return v.shape.empty() ? head : head + ":" + dimsText(v.shape);
}

std::string paramText(const Program &p, int64_t i) {
  return i >= 0 && i < int64_t(p.params.size())
             ? p.params[i].name
             : "<param?" + std::to_string(i) + ">";
}

std::string tensorText(const Program &p, int64_t i) {
  return i >= 0 && i < int64_t(p.hostTensors.size())
             ? quoted(p.hostTensors[i].name)
             : "<tensor?" + std::to_string(i) + ">";
}

/// A field's key in the text form: a list field's entries go under the
/// singular (`arg=`, `result=`); the rope kind is `rope=`.
StringRef textKey(const HostFieldSpec &s) {
  return hostFieldType(s.field) == HostFieldType::CallValues ? s.key.drop_back()
                                                             : s.key;
}
StringRef textKey(const RopeField &f) {
  return f.isKind() ? StringRef("rope") : f.key;
}

void printRope(const RopeSpec &r, raw_ostream &os) {
  static const RopeSpec d;
  for (const RopeField &f : ropeFields()) {
    if (f.isKind()) {
      os << " " << textKey(f) << "=" << ropeKindName(r.kind);
    } else if (f.integer) {
      if (f.required || r.*f.integer != d.*f.integer)
        os << " " << f.key << "=" << r.*f.integer;
    } else if (f.number) {
      if (r.*f.number != d.*f.number)
        os << " " << f.key << "=" << number(r.*f.number);
    } else if (f.optional) {
      if (r.*f.optional)
        os << " " << f.key << "=" << number(*(r.*f.optional));
    } else if (f.list) {
      if (!(r.*f.list).empty()) {
        os << " " << f.key << "=";
        ListSeparator comma(",");
        for (double v : r.*f.list)
          os << comma << number(v);
      }
    } else if (r.*f.boolean != d.*f.boolean) {
      os << " " << f.key << "=" << (r.*f.boolean ? "true" : "false");
    }
  }
}
} // namespace

void printHostOp(const HostOp &op, const Program &p, raw_ostream &os) {
  os << hostOpKindName(op.kind);
  for (const HostFieldSpec &s : hostOpFields(op.kind)) {
    if (!s.required && hostFieldIsDefault(op, s.field))
      continue;
    switch (hostFieldType(s.field)) {
    case HostFieldType::Buffer:
      os << " " << s.key << "=" << bufferText(*hostBufferField(op, s.field));
      break;
    case HostFieldType::Tensor:
      os << " " << s.key << "=" << tensorText(p, op.tensor);
      break;
    case HostFieldType::BufferOrTensor:
      os << " " << s.key << "="
         << (op.tensor >= 0 ? tensorText(p, op.tensor) : bufferText(op.b));
      break;
    case HostFieldType::Int:
      os << " " << s.key << "=" << *hostIntField(op, s.field);
      break;
    case HostFieldType::Float:
      os << " " << s.key << "=" << number(*hostFloatField(op, s.field));
      break;
    case HostFieldType::Bool:
      os << " " << s.key << "="
         << (*hostBoolField(op, s.field) ? "true" : "false");
      break;
    case HostFieldType::Rope:
      printRope(op.rope, os);
      break;
    case HostFieldType::Act:
      os << " " << s.key << "=" << gatedActName(op.act);
      break;
    case HostFieldType::Param:
      os << " " << s.key << "=" << paramText(p, op.param);
      break;
    case HostFieldType::String:
      os << " " << s.key << "=" << quoted(*hostStringField(op, s.field));
      break;
    case HostFieldType::CallValues:
      for (const CallValue &v : *hostCallValuesField(op, s.field))
        os << " " << textKey(s) << "=" << callValueText(v);
      break;
    }
  }
}

//--- Parsing ----------------------------------------------------------------

namespace {
class OpParser {
public:
  OpParser(HostOpKind kind, const Program &p, HostOp &op)
      : kind(kind), p(p), op(op) {
    op.kind = kind;
  }

  std::optional<TextProblem> run(ArrayRef<TextArg> args);

private:
  std::optional<TextProblem> fail(const TextArg &a, const Twine &msg) {
    return TextProblem{a.valueCol, ("'" + a.key + "': " + msg).str()};
  }
  std::optional<TextProblem> field(const HostFieldSpec &s, const TextArg &a);
  std::optional<TextProblem> ropeField(const RopeField &f, const TextArg &a);
  bool parseInt(StringRef s, int64_t &out) {
    return !s.empty() && !s.getAsInteger(10, out);
  }
  template <typename T> bool parseFloat(StringRef s, T &out) {
    auto r = std::from_chars(s.begin(), s.end(), out);
    return r.ec == std::errc() && r.ptr == s.end();
  }
  bool parseBuffer(StringRef s, ActBuffer &b);
  std::optional<TextProblem> callValue(const TextArg &a, bool arg);

  HostOpKind kind;
  const Program &p;
  HostOp &op;
};

bool OpParser::parseBuffer(StringRef s, ActBuffer &b) {
  auto [fmt, rest] = s.split('[');
  auto [n, at] = rest.split("]@");
  std::optional<ElemFormat> f = parseElemFormat(fmt);
  if (!f || !parseInt(n, b.elements) || !parseInt(at, b.offset))
    return false;
  b.format = *f;
  return true;
}

std::optional<TextProblem> OpParser::callValue(const TextArg &a, bool arg) {
  CallValue v;
  auto [head, dims] = StringRef(a.value).split(':');
  if (arg && head == "pos")
    v.kind = CallValue::Kind::Position;
  else if (arg && head == "token")
    v.kind = CallValue::Kind::Token;
  else if (a.quoted || !parseBuffer(head, v.buffer))
    return fail(a, "expected FORMAT[ELEMENTS]@OFFSET" +
                       Twine(arg ? ", pos or token" : "") +
                       ", optionally with :DIMS, found '" + a.value + "'");
  if (StringRef(a.value).contains(':')) {
    SmallVector<StringRef, 4> parts;
    dims.split(parts, 'x');
    for (StringRef d : parts) {
      int64_t n = 0;
      if (!parseInt(d, n))
        return fail(a, "expected dimensions like 1x4096 after ':', found '" +
                           dims + "'");
      v.shape.push_back(n);
    }
  }
  (arg ? op.args : op.results).push_back(std::move(v));
  return std::nullopt;
}

std::optional<TextProblem> OpParser::ropeField(const RopeField &f,
                                               const TextArg &a) {
  RopeSpec &r = op.rope;
  bool ok = true;
  if (f.isKind()) {
    std::optional<RopeKind> k = parseRopeKind(a.value);
    ok = k.has_value();
    if (k)
      r.kind = *k;
  } else if (f.integer) {
    ok = parseInt(a.value, r.*f.integer);
  } else if (f.number) {
    ok = parseFloat(a.value, r.*f.number);
  } else if (f.optional) {
    double v = 0;
    ok = parseFloat(a.value, v);
    r.*f.optional = v;
  } else if (f.list) {
    SmallVector<StringRef> items;
    a.value.split(items, ',');
    for (StringRef item : items) {
      double v = 0;
      ok = ok && parseFloat(item, v);
      (r.*f.list).push_back(v);
    }
  } else {
    ok = a.value == "true" || a.value == "false";
    r.*f.boolean = a.value == "true";
  }
  if (ok && !a.quoted)
    return std::nullopt;
  if (f.isKind())
    return fail(a, "'" + a.value +
                       "' is not a rope kind (default, linear, dynamic, "
                       "yarn, llama3, longrope)");
  return fail(a, "expected " +
                     Twine(f.integer   ? "an integer"
                           : f.boolean ? "true or false"
                                       : "a number") +
                     ", found '" + a.value + "'");
}

std::optional<TextProblem> OpParser::field(const HostFieldSpec &s,
                                           const TextArg &a) {
  StringRef v = a.value;
  auto tensor = [&]() -> std::optional<TextProblem> {
    op.tensor = p.hostTensorIndex(v);
    if (op.tensor < 0)
      return fail(a, "no .host_tensor \"" + v + "\" precedes it");
    return std::nullopt;
  };
  switch (hostFieldType(s.field)) {
  case HostFieldType::Buffer:
    if (a.quoted || !parseBuffer(v, *hostBufferField(op, s.field)))
      return fail(a, "expected FORMAT[ELEMENTS]@OFFSET (f32[4096]@0), found '" +
                         v + "'");
    return std::nullopt;
  case HostFieldType::Tensor:
    if (!a.quoted)
      return fail(a, "expected a host tensor's quoted name");
    return tensor();
  case HostFieldType::BufferOrTensor:
    if (a.quoted)
      return tensor();
    if (!parseBuffer(v, op.b))
      return fail(a, "expected FORMAT[ELEMENTS]@OFFSET or a host tensor's "
                     "quoted name, found '" +
                         v + "'");
    return std::nullopt;
  case HostFieldType::Int:
    if (a.quoted || !parseInt(v, *hostIntField(op, s.field)))
      return fail(a, "expected an integer, found '" + v + "'");
    return std::nullopt;
  case HostFieldType::Float:
    if (a.quoted || !parseFloat(v, *hostFloatField(op, s.field)))
      return fail(a, "expected a number, found '" + v + "'");
    return std::nullopt;
  case HostFieldType::Bool:
    if (a.quoted || (v != "true" && v != "false"))
      return fail(a, "expected true or false, found '" + v + "'");
    *hostBoolField(op, s.field) = v == "true";
    return std::nullopt;
  case HostFieldType::Rope: // read key by key (ropeField)
    return std::nullopt;
  case HostFieldType::Act:
    if (std::optional<GatedActFn> f = parseGatedAct(v); f && !a.quoted)
      op.act = *f;
    else
      return fail(a, "expected silu, gelu or gelu_tanh, found '" + v + "'");
    return std::nullopt;
  case HostFieldType::Param:
    op.param = p.paramIndex(v);
    if (op.param < 0)
      return fail(a, "'" + v + "' is not a .param of the program");
    return std::nullopt;
  case HostFieldType::String:
    *hostStringField(op, s.field) = v.str();
    return std::nullopt;
  case HostFieldType::CallValues:
    return callValue(a, s.field == HostField::Args);
  }
  return std::nullopt;
}

std::optional<TextProblem> OpParser::run(ArrayRef<TextArg> args) {
  // The fields by text key; a rope's fields are keys of the op's line.
  const HostFieldSpec *ropeSpec = nullptr;
  std::vector<std::pair<StringRef, const HostFieldSpec *>> fields;
  for (const HostFieldSpec &s : hostOpFields(kind)) {
    if (hostFieldType(s.field) == HostFieldType::Rope)
      ropeSpec = &s;
    else
      fields.push_back({textKey(s), &s});
  }
  std::vector<StringRef> keys;
  for (auto [key, spec] : fields)
    keys.push_back(key);
  if (ropeSpec)
    for (const RopeField &f : ropeFields())
      keys.push_back(textKey(f));

  std::vector<std::string> seen;
  for (const TextArg &a : args) {
    const HostFieldSpec *spec = nullptr;
    for (auto [key, s] : fields)
      if (key == a.key)
        spec = s;
    const RopeField *rope = nullptr;
    for (const RopeField &f : ropeFields())
      if (ropeSpec && textKey(f) == a.key)
        rope = &f;
    if (!spec && !rope)
      return TextProblem{a.valueCol,
                         formatv("unknown key '{0}' for {1} (expected {2})",
                                 a.key, hostOpKindName(kind), join(keys, ", "))
                             .str()};
    // The entries of a list field (arg=, result=) repeat; other keys not.
    bool list = spec && hostFieldType(spec->field) == HostFieldType::CallValues;
    if (!list && is_contained(seen, a.key.str()))
      return TextProblem{a.valueCol, "'" + a.key.str() + "' given twice"};
    seen.push_back(a.key.str());
    if (std::optional<TextProblem> e =
            rope ? ropeField(*rope, a) : field(*spec, a))
      return e;
  }
  auto needs = [&](StringRef key) -> std::optional<TextProblem> {
    if (is_contained(seen, key.str()))
      return std::nullopt;
    return TextProblem{
        0, formatv("{0} needs '{1}='", hostOpKindName(kind), key).str()};
  };
  for (const HostFieldSpec &s : hostOpFields(kind)) {
    if (&s == ropeSpec) {
      for (const RopeField &f : ropeFields())
        if (f.required)
          if (std::optional<TextProblem> e = needs(textKey(f)))
            return e;
    } else if (s.required &&
               hostFieldType(s.field) != HostFieldType::CallValues) {
      if (std::optional<TextProblem> e = needs(textKey(s)))
        return e;
    }
  }
  return std::nullopt;
}
} // namespace

std::optional<TextProblem> parseHostOp(HostOpKind kind, ArrayRef<TextArg> args,
                                       const Program &program, HostOp &op) {
  return OpParser(kind, program, op).run(args);
}

} // namespace pimsim::detail
