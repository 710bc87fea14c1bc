//===- ProgramText.cpp - pimsim program text form (asm / disasm) ----------===//
//
// The text form is line based: directives (.version, .target, .org, .param,
// .region, .weight, .memory, .host_tensor, .kernel, .stream, .entry); after a
// .kernel, one host op per line (HostOpText.cpp), and after a .stream, one
// macro-op per line: a mnemonic and key=value fields. Loops nest with braces.
// Integer fields may add multiples of enclosing loop variables and of runtime
// parameters (.param, format 1.1): "row=8+i", "length=kv_len". `#`
// starts a comment. The printer emits one canonical spelling, so
// print -> parse -> print is the identity. Syntax: docs/pimsim-isa.md.
//
//===----------------------------------------------------------------------===//

#include "TextForm.h"

#include "pimsim/Program.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

using namespace llvm;

namespace pimsim {

//===----------------------------------------------------------------------===//
// Printer
//===----------------------------------------------------------------------===//

namespace detail {
namespace {
bool isBareWordChar(char c) {
  return isPrint(c) && c != ' ' && c != '"' && c != '#' && c != '{' &&
         c != '}' && c != '=' && c != '\\';
}

} // namespace

std::string quoted(StringRef s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (!isPrint(c)) {
      out += "\\x";
      out += hexdigit(c >> 4, true);
      out += hexdigit(c & 15, true);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}
std::string word(StringRef s) {
  if (!s.empty() && all_of(s, isBareWordChar))
    return s.str();
  return quoted(s);
}

std::string dimsText(ArrayRef<int64_t> dims) {
  std::string out;
  for (int64_t d : dims) {
    if (!out.empty())
      out += "x";
    out += std::to_string(d);
  }
  return out;
}

} // namespace detail

namespace {
using detail::dimsText;
using detail::quoted;
using detail::word;

/// Canonical loop variable of nesting depth `depth`.
std::string loopVarName(unsigned depth) {
  if (depth == kChannelIndex)
    return "ch";
  static const char names[] = "ijkl";
  return depth < 4 ? std::string(1, names[depth]) : "i" + std::to_string(depth);
}

std::string rangeText(const Range &r) {
  if (r.count == 1)
    return std::to_string(r.first);
  return std::to_string(r.first) + "-" + std::to_string(r.end() - 1);
}

std::string channelSetText(const ChannelSet &set) {
  std::string out;
  for (const Range &r : set) {
    if (!out.empty())
      out += ",";
    out += rangeText(r);
  }
  return out;
}

/// The name a stride's variable prints as: a loop variable, `ch` or a
/// parameter.
std::string strideVarName(const Program &p, unsigned loop) {
  if (isParamStride(loop)) {
    unsigned i = loop - kParamBase;
    return i < p.params.size() ? p.params[i].name
                               : "<param?" + std::to_string(i) + ">";
  }
  return loopVarName(loop);
}

/// base + sum(step * var): "8", "8+i", "2*i-j", "0", "32*kv_len".
/// The shortest %g text of a float that reads back as the same float,
/// without an exponent where one of up to 9 digits exists (a cap of 50
/// prints "50", 0.1f "0.1", 1e-20f "1e-20").
std::string capText(float v) {
  char buf[32];
  std::string exponentForm;
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*g", digits, double(v));
    if (std::strtof(buf, nullptr) != v)
      continue;
    if (!std::strchr(buf, 'e'))
      return buf;
    if (exponentForm.empty())
      exponentForm = buf;
  }
  return exponentForm;
}

std::string affineText(const Program &p, int64_t base, ArrayRef<Stride> strides,
                       Field field) {
  std::string out;
  bool any = false;
  bool hasStride =
      any_of(strides, [&](const Stride &s) { return s.field == field; });
  if (base != 0 || !hasStride) {
    out = std::to_string(base);
    any = true;
  }
  for (const Stride &s : strides) {
    if (s.field != field)
      continue;
    bool negative = s.step < 0;
    uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(s.step)
                                  : static_cast<uint64_t>(s.step);
    if (negative)
      out += "-";
    else if (any)
      out += "+";
    if (magnitude != 1)
      out += std::to_string(magnitude) + "*";
    out += strideVarName(p, s.loop);
    any = true;
  }
  return out;
}

class Printer {
public:
  Printer(const Program &p, raw_ostream &os) : p(p), os(os) {}

  void print() {
    os << "# pimsim program\n";
    os << ".version " << p.version.major << "." << p.version.minor << "\n";
    const TargetIdentity &t = p.target;
    os << ".target " << word(t.name) << " hash=" << word(t.hash) << "\n";
    if (!p.model.empty())
      os << ".model " << word(p.model.modelType)
         << " config=" << quoted(p.model.config)
         << " tensors=" << word(p.model.tensors) << "\n";
    const Organization &o = t.org;
    os << ".org stacks=" << o.stacks << " channels=" << o.channels
       << " pseudo_channels=" << o.pseudoChannels << " sids=" << o.sids
       << " bank_groups=" << o.bankGroups << " banks=" << o.banks
       << " rows=" << o.rows << " columns=" << o.columns
       << " access_bytes=" << o.accessBytes << "\n";

    if (!p.params.empty())
      os << "\n";
    for (const Param &prm : p.params) {
      os << ".param " << prm.name;
      if (prm.device)
        os << " from=device timing=" << prm.timing;
      else if (!prm.isInput()) {
        os << " src=" << name(p.params, prm.src, "param");
        if (prm.add != 0)
          os << " add=" << prm.add;
        if (prm.div != 1)
          os << " div=" << prm.div;
        if (prm.mod != 0)
          os << " mod=" << prm.mod;
      }
      os << " min=" << prm.min << " max=" << prm.max << "\n";
    }

    if (!p.regions.empty())
      os << "\n";
    for (const Region &r : p.regions)
      os << ".region " << r.name << " kind=" << regionKindName(r.kind)
         << " channels=" << rangeText(r.channels)
         << " banks=" << rangeText(r.banks) << " rows=" << rangeText(r.rows)
         << " bytes=" << r.bytes << "\n";

    if (!p.weights.empty())
      os << "\n";
    for (const WeightBinding &w : p.weights) {
      os << ".weight " << quoted(w.tensor) << " region=" << regionName(w.region)
         << " format=" << word(w.format) << " shape=" << dimsText(w.shape)
         << " axis=" << w.axis;
      if (!w.tile.empty())
        os << " tile=" << dimsText(w.tile);
      os << " interleave=" << interleaveName(w.interleave)
         << " rows=" << rangeText(w.rows) << " offset=" << w.offset
         << " bytes=" << w.bytes;
      if (!w.layout.empty())
        os << " layout=" << word(w.layout);
      if (w.gemvRows)
        printGemvRows(*w.gemvRows);
      os << "\n";
    }

    if (!p.memory.empty()) {
      const MemoryPlan &m = p.memory;
      os << "\n.memory max_context=" << m.maxContext
         << " weight_bytes=" << m.weightBytes << " kv_bytes=" << m.kvBytes
         << " kv_layers=" << m.kvLayers
         << " kv_bytes_per_position=" << m.kvBytesPerPosition
         << " act_bytes=" << m.actBytes;
      if (m.streamedWeightBytes)
        os << " streamed_weight_bytes=" << m.streamedWeightBytes;
      os << "\n";
    }

    if (!p.hostTensors.empty())
      os << "\n";
    for (const HostTensor &t : p.hostTensors)
      os << ".host_tensor " << quoted(t.name) << " shape=" << dimsText(t.shape)
         << "\n";

    if (!p.kernels.empty())
      os << "\n";
    for (const HostKernel &k : p.kernels) {
      os << ".kernel " << k.name << " kind=" << kernelKindName(k.kind)
         << " m=" << k.m << " n=" << k.n << " k=" << k.k << " flops=" << k.flops
         << " bytes=" << k.bytes;
      for (const KernelOperand &op : k.operands)
        os << (op.role == OperandRole::Input ? " in=" : " out=")
           << regionName(op.region) << "[" << op.offset << ":"
           << op.offset + op.bytes << "]";
      if (!k.unit.empty())
        os << " unit=" << word(k.unit);
      if (k.elements != 0)
        os << " elements=" << k.elements;
      for (const ParamSet &set : k.sets)
        os << " set=" << name(p.params, set.param, "param") << "@"
           << regionName(set.region) << "+" << set.offset;
      os << "\n";
      for (const HostOp &op : k.ops) {
        os << "  ";
        detail::printHostOp(op, p, os);
        os << "\n";
      }
    }

    for (const Stream &s : p.streams) {
      os << "\n.stream " << s.name
         << " channels=" << channelSetText(s.channels);
      printStreamInfo(s.info);
      os << "\n";
      for (const Instruction &inst : s.body)
        printInstruction(inst, 1);
    }

    if (!p.entries.empty())
      os << "\n";
    for (const Entry &e : p.entries) {
      os << ".entry " << e.name << " =";
      for (auto [i, step] : enumerate(e.steps)) {
        os << (i ? ", " : " ");
        switch (step.kind) {
        case StepKind::Stream:
          os << name(p.streams, step.index, "stream");
          break;
        case StepKind::Kernel:
          os << name(p.kernels, step.index, "kernel");
          break;
        default:
          os << "barrier";
        }
      }
      os << "\n";
    }
  }

private:
  // Invalid indices print as something the parser rejects, never crash.
  template <typename T>
  std::string name(const std::vector<T> &v, int64_t i, StringRef what) {
    if (i >= 0 && i < static_cast<int64_t>(v.size()))
      return v[i].name;
    return ("<" + what + "?" + Twine(i) + ">").str();
  }
  std::string regionName(int64_t i) { return name(p.regions, i, "region"); }

  /// (1.6) The gemv_rows parameters: ` n0=0 ch0=0 nch=8 row0=0 k_rows=2
  /// k0=0 k_len=4096 source=dense` or `source=gptq bits=4 group_size=128
  /// sym=false packing=gptq [scale_type=f16]`.
  void printGemvRows(const GemvRows &g) {
    os << " n0=" << g.n0 << " ch0=" << g.ch0 << " nch=" << g.nch
       << " row0=" << g.row0 << " k_rows=" << g.kRows << " k0=" << g.k0
       << " k_len=" << g.kLen;
    if (g.source == GemvRows::Source::Dense) {
      os << " source=dense";
      return;
    }
    os << " source=gptq bits=" << g.bits << " group_size=" << g.groupSize
       << " sym=" << (g.sym ? "true" : "false")
       << " packing=" << word(g.packing);
    if (!g.scaleType.empty())
      os << " scale_type=" << word(g.scaleType);
  }

  /// (1.6) ` layer=L0 op=qkv part=1 class=linear bytes=N`, (2.1)
  /// ` kernel=gemv_fit`, each key only when set.
  void printStreamInfo(const StreamInfo &info) {
    if (!info.layer.empty())
      os << " layer=" << word(info.layer);
    if (!info.op.empty())
      os << " op=" << word(info.op);
    if (info.part != -1)
      os << " part=" << info.part;
    if (!info.workClass.empty())
      os << " class=" << word(info.workClass);
    if (info.bytes != 0)
      os << " bytes=" << info.bytes;
    if (!info.kernel.empty())
      os << " kernel=" << word(info.kernel);
  }

  void printInstruction(const Instruction &inst, unsigned depth) {
    os.indent(2 * depth) << opcodeName(inst.op);
    Instruction defaults;
    bool hasStride = false;
    for (const OperandSpec &spec : opcodeOperands(inst.op)) {
      Field f = spec.field;
      hasStride =
          any_of(inst.strides, [&](const Stride &s) { return s.field == f; });
      switch (f) {
      case Field::Channels:
        if (!inst.channels.empty())
          os << " channels=" << channelSetText(inst.channels);
        break;
      case Field::Data:
        if (inst.dataRegion != -1) {
          os << " data=" << regionName(inst.dataRegion);
          if (inst.dataOffset != 0 || hasStride) {
            std::string off =
                affineText(p, inst.dataOffset, inst.strides, Field::Data);
            os << (off[0] == '-' ? "" : "+") << off;
          }
        }
        break;
      case Field::Fn:
        if (spec.required || inst.fn != defaults.fn)
          os << " fn=" << functionName(inst.fn);
        break;
      case Field::Kernel:
        os << " " << name(p.kernels, inst.kernel, "kernel");
        break;
      case Field::Cap:
        if (inst.cap != 0.0f)
          os << " cap=" << capText(inst.cap);
        break;
      case Field::AlibiScale:
        if (inst.alibiScale != 0.0f)
          os << " alibi_scale=" << capText(inst.alibiScale);
        break;
      case Field::Alibi:
        if (!inst.alibi.empty()) {
          os << " alibi=";
          ListSeparator sep(",");
          for (float m : inst.alibi)
            os << sep << capText(m);
        }
        break;
      case Field::Count:
        if (inst.op == Opcode::Loop) {
          os << " " << loopVarName(depth - 1) << " "
             << affineText(p, inst.count, inst.strides, Field::Count);
          break;
        }
        [[fallthrough]];
      default:
        if (spec.required || hasStride || inst.get(f) != defaults.get(f))
          os << " " << fieldName(f) << "="
             << affineText(p, inst.get(f), inst.strides, f);
      }
    }
    if (inst.op != Opcode::Loop) {
      os << "\n";
      return;
    }
    os << " {\n";
    for (const Instruction &child : inst.body)
      printInstruction(child, depth + 1);
    os.indent(2 * depth) << "}\n";
  }

  const Program &p;
  raw_ostream &os;
};
} // namespace

void printProgram(const Program &program, raw_ostream &os) {
  Printer(program, os).print();
}

//===----------------------------------------------------------------------===//
// Lexer
//===----------------------------------------------------------------------===//

namespace {
/// One whitespace-separated token: a word, `{`, `}`, a quoted string, or
/// key=value (the value a word or a quoted string).
struct Token {
  std::string key;   // empty unless key=value
  std::string value; // unescaped
  bool hasKey = false;
  bool quoted = false;
  unsigned col = 0;      // 1-based, of the token
  unsigned valueCol = 0; // 1-based, of the value
  bool is(StringRef s) const { return !hasKey && !quoted && value == s; }
};

struct Diag {
  unsigned line, col;
  std::string message;
};

/// Reads a quoted string starting at line[pos] == '"'; pos ends after it.
bool lexQuoted(StringRef line, size_t &pos, std::string &out, Diag &diag,
               unsigned lineNo) {
  size_t start = pos++;
  while (pos < line.size()) {
    char c = line[pos++];
    if (c == '"')
      return true;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (pos >= line.size())
      break;
    char e = line[pos++];
    switch (e) {
    case 'n':
      out += '\n';
      break;
    case 't':
      out += '\t';
      break;
    case '"':
    case '\\':
      out += e;
      break;
    case 'x': {
      unsigned v = 0;
      if (pos + 2 > line.size() || line.substr(pos, 2).getAsInteger(16, v)) {
        diag = {lineNo, static_cast<unsigned>(pos - 1),
                "expected two hex digits after \\x"};
        return false;
      }
      out += static_cast<char>(v);
      pos += 2;
      break;
    }
    default:
      diag = {lineNo, static_cast<unsigned>(pos - 1),
              std::string("unknown escape \\") + e};
      return false;
    }
  }
  diag = {lineNo, static_cast<unsigned>(start + 1), "unterminated string"};
  return false;
}

bool lexLine(StringRef line, unsigned lineNo, std::vector<Token> &tokens,
             Diag &diag) {
  size_t pos = 0;
  while (pos < line.size()) {
    char c = line[pos];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++pos;
      continue;
    }
    if (c == '#')
      break;
    Token tok;
    tok.col = tok.valueCol = pos + 1;
    if (c == '{' || c == '}') {
      tok.value = std::string(1, c);
      ++pos;
    } else if (c == '"') {
      tok.quoted = true;
      if (!lexQuoted(line, pos, tok.value, diag, lineNo))
        return false;
    } else {
      size_t start = pos;
      while (pos < line.size() && !StringRef(" \t\r#{}\"").contains(line[pos]))
        ++pos;
      StringRef w = line.slice(start, pos);
      size_t eq = w.find('=');
      if (eq != StringRef::npos && eq > 0) {
        tok.hasKey = true;
        tok.key = w.take_front(eq).str();
        tok.value = w.drop_front(eq + 1).str();
        tok.valueCol = start + eq + 2;
        if (tok.value.empty() && pos < line.size() && line[pos] == '"') {
          tok.quoted = true;
          if (!lexQuoted(line, pos, tok.value, diag, lineNo))
            return false;
        }
      } else {
        tok.value = w.str();
      }
    }
    tokens.push_back(std::move(tok));
  }
  return true;
}

bool isIdentifier(StringRef s) {
  if (s.empty() || !(isAlpha(s[0]) || s[0] == '_'))
    return false;
  return all_of(s, [](char c) { return isAlnum(c) || c == '_' || c == '.'; });
}

/// Loop variables are what parseAffine reads as one: no dots.
bool isLoopVariable(StringRef s) { return isIdentifier(s) && !s.contains('.'); }

/// Decimal or 0x-hex, no sign; consumes from `s`.
bool lexUnsigned(StringRef &s, uint64_t &out) {
  if (s.starts_with_insensitive("0x")) {
    s = s.drop_front(2);
    if (s.empty() || !isHexDigit(s[0]))
      return false;
    return !s.consumeInteger(16, out);
  }
  if (s.empty() || !isDigit(s[0]))
    return false;
  return !s.consumeInteger(10, out);
}

/// The int64 with `magnitude` and sign, if there is one: magnitudes reach
/// 2^63 when negative (INT64_MIN prints as "-9223372036854775808").
std::optional<int64_t> signedFromMagnitude(uint64_t magnitude, bool negative) {
  if (magnitude > static_cast<uint64_t>(INT64_MAX) + (negative ? 1 : 0))
    return std::nullopt;
  return negative ? static_cast<int64_t>(0 - magnitude)
                  : static_cast<int64_t>(magnitude);
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

class TextParser {
public:
  TextParser(StringRef text, StringRef sourceName)
      : text(text), source(sourceName) {}

  Expected<Program> parse() {
    SmallVector<StringRef, 0> lines;
    text.split(lines, '\n');
    for (auto [i, line] : enumerate(lines)) {
      lineNo = i + 1;
      std::vector<Token> toks;
      Diag diag;
      if (!lexLine(line, lineNo, toks, diag))
        return error(diag.line, diag.col, diag.message);
      if (toks.empty())
        continue;
      if (Error err = parseLine(line, toks))
        return err;
    }
    if (Error err = closeStream())
      return err;
    if (Error err = checkProgram(p))
      return createStringError(inconvertibleErrorCode(), "%s: %s",
                               source.str().c_str(),
                               toString(std::move(err)).c_str());
    return std::move(p);
  }

private:
  Error error(unsigned line, unsigned col, const Twine &msg) {
    return createStringError(
        inconvertibleErrorCode(),
        (source + ":" + Twine(line) + ":" + Twine(col) + ": " + msg).str());
  }
  Error error(const Token &tok, const Twine &msg) {
    return error(lineNo, tok.col, msg);
  }
  Error errorAtValue(const Token &tok, unsigned offset, const Twine &msg) {
    return error(lineNo, tok.valueCol + offset, msg);
  }

  Error parseLine(StringRef line, std::vector<Token> &toks) {
    const Token &head = toks[0];
    if (!head.hasKey && !head.quoted &&
        StringRef(head.value).starts_with(".")) {
      if (Error err = closeStream())
        return err;
      inKernel = false;
      StringRef d = head.value;
      if (d == ".version")
        return parseVersion(toks);
      if (d == ".target")
        return parseTarget(toks);
      if (d == ".org")
        return parseOrg(toks);
      if (d == ".model")
        return parseModel(toks);
      if (d == ".param")
        return parseParam(toks);
      if (d == ".region")
        return parseRegion(toks);
      if (d == ".weight")
        return parseWeight(toks);
      if (d == ".kernel")
        return parseKernel(toks);
      if (d == ".host_tensor")
        return parseHostTensor(toks);
      if (d == ".memory")
        return parseMemory(toks);
      if (d == ".stream")
        return parseStream(toks);
      if (d == ".entry")
        return parseEntry(line, toks);
      return error(head, "unknown directive '" + d + "'");
    }
    if (inKernel)
      return parseHostOpLine(toks);
    if (!inStream)
      return error(head, "instruction outside a .stream");
    return parseInstruction(toks);
  }

  //--- Values ---------------------------------------------------------------

  Error parseInt(const Token &tok, int64_t &out) {
    StringRef s = tok.value;
    bool negative = s.consume_front("-");
    uint64_t v = 0;
    if (tok.quoted || !lexUnsigned(s, v) || !s.empty())
      return errorAtValue(tok, 0,
                          "expected an integer, found '" + tok.value + "'");
    std::optional<int64_t> value = signedFromMagnitude(v, negative);
    if (!value)
      return errorAtValue(tok, 0, "integer " + tok.value + " is too large");
    out = *value;
    return Error::success();
  }

  /// "a" or "a-b" (inclusive, b >= a).
  Error parseRange(const Token &tok, StringRef s, unsigned offset, Range &out) {
    StringRef all = s;
    uint64_t first = 0, last = 0;
    if (!lexUnsigned(s, first) || first >= static_cast<uint64_t>(INT64_MAX))
      return errorAtValue(tok, offset,
                          "expected a range 'first-last', found '" + all + "'");
    last = first;
    if (s.consume_front("-")) {
      // last + 1 must stay representable: ranges are stored half-open.
      if (!lexUnsigned(s, last) || last >= static_cast<uint64_t>(INT64_MAX))
        return errorAtValue(
            tok, offset, "expected a range 'first-last', found '" + all + "'");
      if (last < first)
        return errorAtValue(tok, offset,
                            "empty range '" + all + "' (last < first)");
    }
    if (!s.empty())
      return errorAtValue(tok, offset,
                          "expected a range 'first-last', found '" + all + "'");
    out = {static_cast<int64_t>(first), static_cast<int64_t>(last - first + 1)};
    return Error::success();
  }

  Error parseChannelSet(const Token &tok, ChannelSet &out) {
    out.clear();
    StringRef rest = tok.value;
    unsigned offset = 0;
    if (rest.empty())
      return errorAtValue(tok, 0, "expected channels, e.g. '0-15' or '0-3,8'");
    while (true) {
      auto [item, tail] = rest.split(',');
      Range r;
      if (Error err = parseRange(tok, item, offset, r))
        return err;
      out.push_back(r);
      if (tail.data() == nullptr || item.size() == rest.size())
        break;
      offset += item.size() + 1;
      rest = tail;
    }
    llvm::sort(
        out, [](const Range &a, const Range &b) { return a.first < b.first; });
    for (size_t i = 1; i < out.size(); ++i)
      if (out[i].first < out[i - 1].end())
        return errorAtValue(
            tok, 0, "channel " + Twine(out[i].first) + " is listed twice");
    return Error::success();
  }

  Error parseDims(const Token &tok, std::vector<int64_t> &out) {
    out.clear();
    if (tok.value.empty())
      return Error::success();
    SmallVector<StringRef, 4> parts;
    StringRef(tok.value).split(parts, 'x');
    unsigned offset = 0;
    for (StringRef part : parts) {
      StringRef s = part;
      uint64_t v = 0;
      if (!lexUnsigned(s, v) || !s.empty() ||
          v > static_cast<uint64_t>(INT64_MAX))
        return errorAtValue(tok, offset,
                            "expected dimensions like '4096x4096', found '" +
                                tok.value + "'");
      out.push_back(static_cast<int64_t>(v));
      offset += part.size() + 1;
    }
    return Error::success();
  }

  /// The loop variable or parameter `name` names: its Stride::loop value
  /// (nesting depth, kChannelIndex or kParamBase + index).
  std::optional<unsigned> loopDepth(StringRef name) {
    if (name == "ch")
      return kChannelIndex;
    for (size_t i = loops.size(); i-- > 0;)
      if (loops[i].var == name)
        return i;
    if (int64_t i = p.paramIndex(name); i >= 0)
      return kParamBase + static_cast<unsigned>(i);
    return std::nullopt;
  }

  /// base (+|-) [n*]var ...; strides go to `inst` for `field`. Loop
  /// variables are allowed on isStridable fields, parameters on
  /// isParamStridable ones.
  Error parseAffine(const Token &tok, StringRef s, unsigned offset, Field field,
                    int64_t &base, Instruction *inst) {
    base = 0;
    bool first = true;
    StringRef all = s;
    auto bad = [&](unsigned at, const Twine &msg) {
      return errorAtValue(tok, offset + at, msg);
    };
    if (s.empty())
      return bad(0, "expected a value");
    while (!s.empty()) {
      unsigned at = all.size() - s.size();
      bool negative = false;
      if (s.consume_front("-"))
        negative = true;
      else if (!first && !s.consume_front("+"))
        return bad(at, "expected '+' or '-' in '" + all + "'");
      else if (first)
        s.consume_front("+");
      first = false;
      unsigned termAt = all.size() - s.size();
      uint64_t magnitude = 1;
      std::optional<int64_t> coeff = negative ? -1 : 1;
      bool hasNumber = false;
      if (!s.empty() && isDigit(s[0])) {
        if (lexUnsigned(s, magnitude))
          coeff = signedFromMagnitude(magnitude, negative);
        else
          coeff = std::nullopt;
        if (!coeff)
          return bad(termAt, "bad integer in '" + all + "'");
        hasNumber = true;
        if (!s.consume_front("*")) {
          if (AddOverflow(base, *coeff, base))
            return bad(termAt, "value overflows");
          continue;
        }
      }
      size_t len = 0;
      while (len < s.size() && (isAlnum(s[len]) || s[len] == '_'))
        ++len;
      StringRef var = s.take_front(len);
      s = s.drop_front(len);
      if (var.empty() || isDigit(var[0]))
        return bad(termAt, hasNumber ? "expected a loop variable after '*'"
                                     : "expected a number or a loop variable "
                                       "in '" +
                                           all + "'");
      std::optional<unsigned> depth = loopDepth(var);
      if (!depth)
        return bad(termAt, "unknown loop variable '" + var + "'");
      if (isParamStride(*depth) ? !isParamStridable(inst->op, field)
                                : !isStridable(inst->op, field))
        return bad(termAt,
                   "'" + fieldName(field) + "' cannot depend on a " +
                       (isParamStride(*depth) ? "parameter" : "loop variable"));
      inst->addStride(field, *depth, *coeff);
    }
    return Error::success();
  }

  //--- Directives -----------------------------------------------------------

  /// key=value tokens from toks[first..]; each key once, from `allowed`.
  Error collect(std::vector<Token> &toks, size_t first, StringRef directive,
                ArrayRef<StringRef> allowed, StringMap<const Token *> &out,
                ArrayRef<StringRef> repeatable = {}) {
    for (size_t i = first; i < toks.size(); ++i) {
      const Token &t = toks[i];
      if (!t.hasKey)
        return error(t, "expected key=value, found '" + t.value + "'");
      if (!is_contained(allowed, StringRef(t.key)))
        return error(t, "unknown key '" + t.key + "' for " + directive +
                            " (expected " + join(allowed, ", ") + ")");
      if (is_contained(repeatable, StringRef(t.key)))
        continue;
      if (!out.try_emplace(t.key, &t).second)
        return error(t, "'" + t.key + "' given twice");
    }
    return Error::success();
  }
  Error require(const Token &head, StringMap<const Token *> &kv,
                ArrayRef<StringRef> keys) {
    for (StringRef k : keys)
      if (!kv.count(k))
        return error(head, head.value + " needs '" + k + "='");
    return Error::success();
  }
  Error parseName(std::vector<Token> &toks, StringRef what, std::string &out) {
    if (toks.size() < 2 || toks[1].hasKey || toks[1].quoted)
      return error(toks[0], toks[0].value + " needs a " + what + " name");
    if (!isIdentifier(toks[1].value))
      return error(toks[1], "'" + toks[1].value +
                                "' is not a name ([A-Za-z_][A-Za-z0-9_.]*)");
    if (toks[1].value == "barrier")
      return error(toks[1], "'barrier' is reserved");
    out = toks[1].value;
    return Error::success();
  }

  Error parseVersion(std::vector<Token> &toks) {
    if (toks.size() != 2 || toks[1].hasKey)
      return error(toks[0], ".version needs MAJOR.MINOR");
    StringRef s = toks[1].value;
    uint64_t major = 0, minor = 0;
    if (!lexUnsigned(s, major) || !s.consume_front(".") ||
        !lexUnsigned(s, minor) || !s.empty() || major > 0xffff ||
        minor > 0xffff)
      return error(toks[1], "expected a version like 1.0, found '" +
                                toks[1].value + "'");
    if (major != kProgramVersion.major)
      return error(toks[1], "program version " + toks[1].value +
                                ", this pimsim reads " +
                                Twine(kProgramVersion.major) + ".x");
    p.version = {static_cast<uint16_t>(major), static_cast<uint16_t>(minor)};
    return Error::success();
  }

  Error parseTarget(std::vector<Token> &toks) {
    if (seenTarget)
      return error(toks[0], ".target given twice");
    seenTarget = true;
    if (toks.size() < 2 || toks[1].hasKey)
      return error(toks[0], ".target needs the target's name");
    p.target.name = toks[1].value;
    StringMap<const Token *> kv;
    if (Error err = collect(toks, 2, ".target", {"hash"}, kv))
      return err;
    if (kv.count("hash"))
      p.target.hash = kv["hash"]->value;
    return Error::success();
  }

  Error parseModel(std::vector<Token> &toks) {
    if (seenModel)
      return error(toks[0], ".model given twice");
    seenModel = true;
    if (toks.size() < 2 || toks[1].hasKey)
      return error(toks[0], ".model needs the model type");
    StringMap<const Token *> kv;
    if (Error err = collect(toks, 2, ".model", {"config", "tensors"}, kv))
      return err;
    p.model.modelType = toks[1].value;
    if (kv.count("config"))
      p.model.config = kv["config"]->value;
    if (kv.count("tensors"))
      p.model.tensors = kv["tensors"]->value;
    if (p.model.empty())
      return error(toks[1], ".model with an empty model type records nothing");
    return Error::success();
  }

  Error parseOrg(std::vector<Token> &toks) {
    if (seenOrg)
      return error(toks[0], ".org given twice");
    seenOrg = true;
    Organization &o = p.target.org;
    std::pair<StringRef, int64_t *> fields[] = {
        {"stacks", &o.stacks},
        {"channels", &o.channels},
        {"pseudo_channels", &o.pseudoChannels},
        {"sids", &o.sids},
        {"bank_groups", &o.bankGroups},
        {"banks", &o.banks},
        {"rows", &o.rows},
        {"columns", &o.columns},
        {"access_bytes", &o.accessBytes}};
    SmallVector<StringRef> keys;
    for (auto &f : fields)
      keys.push_back(f.first);
    StringMap<const Token *> kv;
    if (Error err = collect(toks, 1, ".org", keys, kv))
      return err;
    if (Error err = require(toks[0], kv, keys))
      return err;
    for (auto &f : fields)
      if (Error err = parseInt(*kv[f.first], *f.second))
        return err;
    return Error::success();
  }

  /// .param NAME [src=OTHER [add=N] [div=N] [mod=N] | from=device timing=V]
  ///        min=A max=B
  Error parseParam(std::vector<Token> &toks) {
    Param prm;
    if (toks.size() < 2 || toks[1].hasKey || toks[1].quoted)
      return error(toks[0], ".param needs a parameter name");
    if (!isLoopVariable(toks[1].value))
      return error(toks[1], "'" + toks[1].value +
                                "' is not a parameter name "
                                "([A-Za-z_][A-Za-z0-9_]*)");
    prm.name = toks[1].value;
    if (p.paramIndex(prm.name) >= 0)
      return error(toks[1], "parameter '" + prm.name + "' is defined twice");
    StringMap<const Token *> kv;
    const StringRef keys[] = {"src", "add", "div",  "mod",
                              "min", "max", "from", "timing"};
    if (Error err = collect(toks, 2, ".param", keys, kv))
      return err;
    if (Error err = require(toks[0], kv, {"min", "max"}))
      return err;
    if (kv.count("from")) {
      if (kv["from"]->value != "device")
        return errorAtValue(*kv["from"], 0,
                            "unknown parameter source '" + kv["from"]->value +
                                "' (expected device)");
      for (StringRef k : {"src", "add", "div", "mod"})
        if (kv.count(k))
          return error(*kv[k], "a device parameter has no '" + k + "'");
      prm.device = true;
      if (kv.count("timing"))
        if (Error err = parseInt(*kv["timing"], prm.timing))
          return err;
    } else if (kv.count("timing")) {
      return error(*kv["timing"], "'timing' needs 'from=device'");
    }
    if (kv.count("src")) {
      prm.src = p.paramIndex(kv["src"]->value);
      if (prm.src < 0)
        return errorAtValue(*kv["src"], 0,
                            "unknown parameter '" + kv["src"]->value + "'");
    } else {
      for (StringRef k : {"add", "div", "mod"})
        if (kv.count(k))
          return error(*kv[k], "'" + k + "' needs 'src='");
    }
    std::pair<StringRef, int64_t *> ints[] = {{"add", &prm.add},
                                              {"div", &prm.div},
                                              {"mod", &prm.mod},
                                              {"min", &prm.min},
                                              {"max", &prm.max}};
    for (auto &f : ints)
      if (kv.count(f.first))
        if (Error err = parseInt(*kv[f.first], *f.second))
          return err;
    if (p.params.size() >= kMaxParams)
      return error(toks[0], "more than " + Twine(kMaxParams) + " parameters");
    p.params.push_back(std::move(prm));
    return Error::success();
  }

  Error lookupRegion(const Token &tok, StringRef name, unsigned offset,
                     int64_t &out) {
    auto it = regionIndex.find(name);
    if (it == regionIndex.end())
      return errorAtValue(tok, offset, "unknown region '" + name + "'");
    out = it->second;
    return Error::success();
  }

  Error parseRegion(std::vector<Token> &toks) {
    Region r;
    if (Error err = parseName(toks, "region", r.name))
      return err;
    if (regionIndex.count(r.name))
      return error(toks[1], "region '" + r.name + "' is defined twice");
    StringMap<const Token *> kv;
    const StringRef keys[] = {"kind", "channels", "banks", "rows", "bytes"};
    if (Error err = collect(toks, 2, ".region", keys, kv))
      return err;
    if (Error err = require(toks[0], kv, keys))
      return err;
    auto kind = parseRegionKind(kv["kind"]->value);
    if (!kind)
      return errorAtValue(*kv["kind"], 0,
                          "unknown region kind '" + kv["kind"]->value +
                              "' (expected weights, kv_cache, activations or "
                              "scratch)");
    r.kind = *kind;
    if (Error err =
            parseRange(*kv["channels"], kv["channels"]->value, 0, r.channels))
      return err;
    if (Error err = parseRange(*kv["banks"], kv["banks"]->value, 0, r.banks))
      return err;
    if (Error err = parseRange(*kv["rows"], kv["rows"]->value, 0, r.rows))
      return err;
    if (Error err = parseInt(*kv["bytes"], r.bytes))
      return err;
    regionIndex[r.name] = p.regions.size();
    p.regions.push_back(std::move(r));
    return Error::success();
  }

  /// (1.6) The gemv_rows keys of a .weight line: all of n0 .. source, and
  /// for source=gptq bits, group_size, sym and packing (scale_type
  /// optional). The values' domains are checkProgram's.
  Error parseGemvRows(const Token &head, StringMap<const Token *> &kv,
                      WeightBinding &w) {
    const StringRef gptqKeys[] = {"bits", "group_size", "sym", "packing",
                                  "scale_type"};
    bool any = kv.count("source");
    for (StringRef k : {"n0", "ch0", "nch", "row0", "k_rows", "k0", "k_len"})
      any |= kv.count(k) > 0;
    for (StringRef k : gptqKeys)
      any |= kv.count(k) > 0;
    if (!any)
      return Error::success();
    if (Error err = require(
            head, kv,
            {"n0", "ch0", "nch", "row0", "k_rows", "k0", "k_len", "source"}))
      return err;
    GemvRows g;
    std::pair<StringRef, int64_t *> ints[] = {
        {"n0", &g.n0},     {"ch0", &g.ch0},      {"nch", &g.nch},
        {"row0", &g.row0}, {"k_rows", &g.kRows}, {"k0", &g.k0},
        {"k_len", &g.kLen}};
    for (auto &[key, out] : ints)
      if (Error err = parseInt(*kv[key], *out))
        return err;
    StringRef source = kv["source"]->value;
    if (source == "gptq") {
      g.source = GemvRows::Source::Gptq;
      if (Error err =
              require(head, kv, {"bits", "group_size", "sym", "packing"}))
        return err;
      if (Error err = parseInt(*kv["bits"], g.bits))
        return err;
      if (Error err = parseInt(*kv["group_size"], g.groupSize))
        return err;
      StringRef sym = kv["sym"]->value;
      if (sym != "true" && sym != "false")
        return errorAtValue(*kv["sym"], 0,
                            "expected true or false, found '" + sym + "'");
      g.sym = sym == "true";
      g.packing = kv["packing"]->value;
      if (kv.count("scale_type"))
        g.scaleType = kv["scale_type"]->value;
    } else if (source == "dense") {
      for (StringRef k : gptqKeys)
        if (kv.count(k))
          return error(*kv[k], "'" + k + "' is for source=gptq");
    } else {
      return errorAtValue(*kv["source"], 0,
                          "unknown source '" + source +
                              "' (expected dense or gptq)");
    }
    w.gemvRows = std::move(g);
    return Error::success();
  }

  Error parseWeight(std::vector<Token> &toks) {
    WeightBinding w;
    if (toks.size() < 2 || toks[1].hasKey)
      return error(toks[0], ".weight needs a tensor name");
    w.tensor = toks[1].value;
    StringMap<const Token *> kv;
    const StringRef keys[] = {
        "region", "format", "shape",      "axis",    "tile",      "interleave",
        "rows",   "offset", "bytes",      "layout",  "n0",        "ch0",
        "nch",    "row0",   "k_rows",     "k0",      "k_len",     "source",
        "bits",   "sym",    "group_size", "packing", "scale_type"};
    if (Error err = collect(toks, 2, ".weight", keys, kv))
      return err;
    if (Error err = parseGemvRows(toks[0], kv, w))
      return err;
    if (Error err = require(toks[0], kv,
                            {"region", "format", "shape", "rows", "bytes"}))
      return err;
    if (Error err =
            lookupRegion(*kv["region"], kv["region"]->value, 0, w.region))
      return err;
    w.format = kv["format"]->value;
    if (Error err = parseDims(*kv["shape"], w.shape))
      return err;
    if (kv.count("axis"))
      if (Error err = parseInt(*kv["axis"], w.axis))
        return err;
    if (kv.count("tile"))
      if (Error err = parseDims(*kv["tile"], w.tile))
        return err;
    if (kv.count("interleave")) {
      auto il = parseInterleave(kv["interleave"]->value);
      if (!il)
        return errorAtValue(*kv["interleave"], 0,
                            "unknown interleave '" + kv["interleave"]->value +
                                "' (expected channel or bank)");
      w.interleave = *il;
    }
    if (Error err = parseRange(*kv["rows"], kv["rows"]->value, 0, w.rows))
      return err;
    if (kv.count("offset"))
      if (Error err = parseInt(*kv["offset"], w.offset))
        return err;
    if (Error err = parseInt(*kv["bytes"], w.bytes))
      return err;
    if (kv.count("layout"))
      w.layout = kv["layout"]->value;
    p.weights.push_back(std::move(w));
    return Error::success();
  }

  /// "region[start:end]"
  Error parseOperand(const Token &tok, KernelOperand &op) {
    StringRef s = tok.value;
    size_t open = s.find('[');
    auto bad = [&] {
      return errorAtValue(
          tok, 0, "expected region[start:end], found '" + tok.value + "'");
    };
    if (open == StringRef::npos || !s.ends_with("]"))
      return bad();
    if (Error err = lookupRegion(tok, s.take_front(open), 0, op.region))
      return err;
    StringRef inner = s.slice(open + 1, s.size() - 1);
    uint64_t start = 0, end = 0;
    if (!lexUnsigned(inner, start) || !inner.consume_front(":") ||
        !lexUnsigned(inner, end) || !inner.empty() ||
        end > static_cast<uint64_t>(INT64_MAX))
      return bad();
    if (end < start)
      return errorAtValue(tok, open + 1,
                          "end before start in '" + tok.value + "'");
    op.offset = static_cast<int64_t>(start);
    op.bytes = static_cast<int64_t>(end - start);
    return Error::success();
  }

  Error declareLaunchName(const Token &tok, StringRef name) {
    if (!launchNames.insert(name).second)
      return error(tok, "'" + name + "' is already a stream or kernel");
    return Error::success();
  }

  Error parseKernel(std::vector<Token> &toks) {
    HostKernel k;
    if (Error err = parseName(toks, "kernel", k.name))
      return err;
    if (Error err = declareLaunchName(toks[1], k.name))
      return err;
    StringMap<const Token *> kv;
    const StringRef keys[] = {"kind",  "m",        "n",  "k",
                              "flops", "bytes",    "in", "out",
                              "unit",  "elements", "set"};
    if (Error err = collect(toks, 2, ".kernel", keys, kv, {"in", "out", "set"}))
      return err;
    if (Error err = require(toks[0], kv, {"kind"}))
      return err;
    auto kind = parseKernelKind(kv["kind"]->value);
    if (!kind)
      return errorAtValue(*kv["kind"], 0,
                          "unknown kernel kind '" + kv["kind"]->value + "'");
    k.kind = *kind;
    std::pair<StringRef, int64_t *> ints[] = {
        {"m", &k.m},         {"n", &k.n},         {"k", &k.k},
        {"flops", &k.flops}, {"bytes", &k.bytes}, {"elements", &k.elements}};
    for (auto &f : ints)
      if (kv.count(f.first))
        if (Error err = parseInt(*kv[f.first], *f.second))
          return err;
    for (size_t i = 2; i < toks.size(); ++i) {
      if (toks[i].key == "set") {
        ParamSet set;
        if (Error err = parseParamSet(toks[i], set))
          return err;
        k.sets.push_back(set);
        continue;
      }
      if (toks[i].key != "in" && toks[i].key != "out")
        continue;
      KernelOperand op;
      op.role = toks[i].key == "in" ? OperandRole::Input : OperandRole::Output;
      if (Error err = parseOperand(toks[i], op))
        return err;
      k.operands.push_back(op);
    }
    if (kv.count("unit"))
      k.unit = kv["unit"]->value;
    kernelIndex[k.name] = p.kernels.size();
    p.kernels.push_back(std::move(k));
    inKernel = true;
    return Error::success();
  }

  /// set=PARAM@REGION+OFFSET (2.3): a device parameter the kernel sets.
  Error parseParamSet(const Token &tok, ParamSet &set) {
    StringRef v = tok.value;
    auto [param, where] = v.split('@');
    auto [region, offset] = where.split('+');
    if (param.empty() || region.empty() || offset.empty())
      return errorAtValue(
          tok, 0, "expected set=PARAM@REGION+OFFSET, found '" + v + "'");
    set.param = p.paramIndex(param);
    if (set.param < 0)
      return errorAtValue(tok, 0, "unknown parameter '" + param + "'");
    if (Error err = lookupRegion(tok, region, param.size() + 1, set.region))
      return err;
    if (offset.getAsInteger(10, set.offset) || set.offset < 0)
      return errorAtValue(tok, param.size() + region.size() + 2,
                          "offset '" + offset +
                              "' is not a non-negative integer");
    return Error::success();
  }

  /// A host op of the last .kernel: its kind, then key=value fields.
  Error parseHostOpLine(std::vector<Token> &toks) {
    const Token &head = toks[0];
    std::optional<HostOpKind> kind =
        head.hasKey || head.quoted ? std::nullopt : parseHostOpKind(head.value);
    if (!kind && !head.hasKey && !head.quoted &&
        (parseOpcode(head.value) || head.value == "loop" || head.is("}")))
      return error(head, "instruction outside a .stream");
    if (!kind) {
      std::vector<std::string> known;
      for (unsigned i = 0; i < kNumHostOpKinds; ++i)
        known.push_back(hostOpKindName(HostOpKind(i)).str());
      return error(head, "unknown host op '" + head.value +
                             "' (host ops: " + join(known, ", ") + ")");
    }
    std::vector<detail::TextArg> args;
    for (size_t i = 1; i < toks.size(); ++i) {
      if (!toks[i].hasKey)
        return error(toks[i],
                     "expected key=value, found '" + toks[i].value + "'");
      args.push_back(
          {toks[i].key, toks[i].value, toks[i].quoted, toks[i].valueCol});
    }
    HostOp op;
    if (std::optional<detail::TextProblem> e =
            detail::parseHostOp(*kind, args, p, op))
      return error(lineNo, e->col ? e->col : head.col, e->message);
    p.kernels.back().ops.push_back(std::move(op));
    return Error::success();
  }

  Error parseHostTensor(std::vector<Token> &toks) {
    if (toks.size() < 2 || toks[1].hasKey || !toks[1].quoted)
      return error(toks[0], ".host_tensor needs a quoted tensor name");
    HostTensor t;
    t.name = toks[1].value;
    StringMap<const Token *> kv;
    if (Error err = collect(toks, 2, ".host_tensor", {"shape"}, kv))
      return err;
    if (Error err = require(toks[0], kv, {"shape"}))
      return err;
    if (Error err = parseDims(*kv["shape"], t.shape))
      return err;
    if (p.hostTensorIndex(t.name) >= 0)
      return error(toks[1], "host tensor \"" + t.name + "\" is listed twice");
    p.hostTensors.push_back(std::move(t));
    return Error::success();
  }

  Error parseMemory(std::vector<Token> &toks) {
    MemoryPlan &m = p.memory;
    std::pair<StringRef, int64_t *> fields[] = {
        {"max_context", &m.maxContext},
        {"weight_bytes", &m.weightBytes},
        {"kv_bytes", &m.kvBytes},
        {"kv_layers", &m.kvLayers},
        {"kv_bytes_per_position", &m.kvBytesPerPosition},
        {"act_bytes", &m.actBytes},
        {"streamed_weight_bytes", &m.streamedWeightBytes}};
    StringMap<const Token *> kv;
    SmallVector<StringRef> keys;
    for (auto &f : fields)
      keys.push_back(f.first);
    if (Error err = collect(toks, 1, ".memory", keys, kv))
      return err;
    for (auto &f : fields)
      if (kv.count(f.first))
        if (Error err = parseInt(*kv[f.first], *f.second))
          return err;
    return Error::success();
  }

  Error parseStream(std::vector<Token> &toks) {
    Stream s;
    if (Error err = parseName(toks, "stream", s.name))
      return err;
    if (Error err = declareLaunchName(toks[1], s.name))
      return err;
    StringMap<const Token *> kv;
    const StringRef keys[] = {"channels", "layer", "op",    "part",
                              "class",    "bytes", "kernel"};
    if (Error err = collect(toks, 2, ".stream", keys, kv))
      return err;
    if (Error err = require(toks[0], kv, {"channels"}))
      return err;
    if (Error err = parseChannelSet(*kv["channels"], s.channels))
      return err;
    std::pair<StringRef, std::string *> names[] = {{"layer", &s.info.layer},
                                                   {"op", &s.info.op},
                                                   {"class", &s.info.workClass},
                                                   {"kernel", &s.info.kernel}};
    for (auto &[key, out] : names)
      if (kv.count(key))
        *out = kv[key]->value;
    std::pair<StringRef, int64_t *> ints[] = {{"part", &s.info.part},
                                              {"bytes", &s.info.bytes}};
    for (auto &[key, out] : ints)
      if (kv.count(key))
        if (Error err = parseInt(*kv[key], *out))
          return err;
    streamIndex[s.name] = p.streams.size();
    p.streams.push_back(std::move(s));
    inStream = true;
    return Error::success();
  }

  /// .entry NAME = step, step, ...
  Error parseEntry(StringRef line, std::vector<Token> &toks) {
    Entry e;
    if (Error err = parseName(toks, "entry", e.name))
      return err;
    if (!entryNames.insert(e.name).second)
      return error(toks[1], "entry '" + e.name + "' is defined twice");
    if (toks.size() < 3 || toks[2].hasKey || toks[2].quoted ||
        !StringRef(toks[2].value).starts_with("="))
      return error(toks.size() < 3 ? toks[1] : toks[2],
                   "expected '=' after the entry name");
    // Steps are comma-separated, so split the raw text after '='.
    size_t start = toks[2].col; // just past '=' (cols are 1-based)
    StringRef rest = line.drop_front(start);
    rest = rest.take_front(rest.find('#'));
    if (rest.trim().empty()) {
      p.entries.push_back(std::move(e));
      return Error::success();
    }
    size_t pos = start;
    while (true) {
      auto [item, tail] = rest.split(',');
      StringRef name = item.trim();
      unsigned col = pos + (item.size() - item.ltrim().size()) + 1;
      if (name.empty())
        return error(lineNo, col, "empty step in .entry");
      if (name == "barrier") {
        e.steps.push_back({StepKind::Barrier, 0});
      } else if (auto it = streamIndex.find(name); it != streamIndex.end()) {
        e.steps.push_back({StepKind::Stream, it->second});
      } else if (auto kt = kernelIndex.find(name); kt != kernelIndex.end()) {
        e.steps.push_back({StepKind::Kernel, kt->second});
      } else {
        return error(lineNo, col, "unknown stream or kernel '" + name + "'");
      }
      if (item.size() == rest.size())
        break;
      pos += item.size() + 1;
      rest = tail;
    }
    p.entries.push_back(std::move(e));
    return Error::success();
  }

  //--- Instructions ---------------------------------------------------------

  struct OpenLoop {
    Instruction inst;
    std::string var;
    unsigned line, col;
  };

  std::vector<Instruction> &currentBody() {
    return loops.empty() ? p.streams.back().body : loops.back().inst.body;
  }

  Error closeStream() {
    if (!loops.empty()) {
      const OpenLoop &open = loops.back();
      return error(open.line, open.col, "loop is not closed with '}'");
    }
    inStream = false;
    return Error::success();
  }

  Error parseInstruction(std::vector<Token> &toks) {
    const Token &head = toks[0];
    if (head.is("}")) {
      if (loops.empty())
        return error(head, "'}' without an open loop");
      if (toks.size() > 1)
        return error(toks[1], "expected nothing after '}'");
      Instruction done = std::move(loops.back().inst);
      loops.pop_back();
      currentBody().push_back(std::move(done));
      return Error::success();
    }
    if (head.hasKey || head.quoted)
      return error(head, "expected an instruction mnemonic");
    std::optional<Opcode> op = parseOpcode(head.value);
    if (!op)
      return error(head, "unknown instruction '" + head.value + "'");
    Instruction inst = Instruction::make(*op);
    size_t next = 1;

    // Positional operands: `loop [var] count ... {` and `call kernel`.
    std::string loopVar;
    if (*op == Opcode::Loop) {
      if (toks.back().is("{") == false)
        return error(toks.back(), "expected '{' at the end of the loop line");
      toks.pop_back();
      // `loop [VAR] COUNT`: the count is the last positional operand.
      size_t positional = 0;
      while (next + positional < toks.size() && !toks[next + positional].hasKey)
        ++positional;
      if (positional == 2) {
        if (toks[next].quoted || !isLoopVariable(toks[next].value))
          return error(toks[next], "expected a loop variable name, found '" +
                                       toks[next].value + "'");
        loopVar = toks[next].value;
        if (loopVar == "ch")
          return error(toks[next], "'ch' is the channel index, not a loop "
                                   "variable name");
        if (p.paramIndex(loopVar) >= 0)
          return error(toks[next], "'" + loopVar +
                                       "' is a parameter, not a loop "
                                       "variable name");
        ++next;
      } else if (positional != 1) {
        return error(positional ? toks[next + 2] : head,
                     positional ? Twine("expected key=value, found '") +
                                      toks[next + 2].value + "'"
                                : Twine("loop needs an iteration count"));
      }
      if (toks[next].quoted)
        return error(toks[next], "expected an iteration count");
      if (Error err = parseAffine(toks[next], toks[next].value, 0, Field::Count,
                                  inst.count, &inst))
        return err;
      ++next;
    } else if (*op == Opcode::Call) {
      if (toks.size() != 2 || toks[1].hasKey || toks[1].quoted)
        return error(head, "call needs exactly one kernel name");
      auto it = kernelIndex.find(toks[1].value);
      if (it == kernelIndex.end())
        return error(toks[1], "unknown kernel '" + toks[1].value + "'");
      inst.kernel = it->second;
      currentBody().push_back(std::move(inst));
      return Error::success();
    }

    StringSet<> given;
    for (size_t i = next; i < toks.size(); ++i) {
      const Token &t = toks[i];
      if (!t.hasKey)
        return error(t, "expected key=value, found '" + t.value + "'");
      std::optional<Field> field;
      for (const OperandSpec &spec : opcodeOperands(*op))
        if (fieldName(spec.field) == t.key &&
            !(spec.field == Field::Count && *op == Opcode::Loop))
          field = spec.field;
      if (!field) {
        SmallVector<StringRef> names;
        for (const OperandSpec &spec : opcodeOperands(*op))
          if (!(spec.field == Field::Count && *op == Opcode::Loop))
            names.push_back(fieldName(spec.field));
        return error(t, head.value + " has no field '" + t.key + "'" +
                            (names.empty()
                                 ? std::string()
                                 : " (fields: " + join(names, ", ") + ")"));
      }
      if (!given.insert(t.key).second)
        return error(t, "'" + t.key + "' given twice");
      if (Error err = parseField(t, *field, inst))
        return err;
    }
    for (const OperandSpec &spec : opcodeOperands(*op))
      if (spec.required && !given.count(fieldName(spec.field)) &&
          !(*op == Opcode::Loop && spec.field == Field::Count))
        return error(head,
                     head.value + " needs '" + fieldName(spec.field) + "='");

    if (*op == Opcode::Loop) {
      if (loops.size() >= 32)
        return error(head, "loops nested more than 32 deep");
      loops.push_back({std::move(inst), loopVar, lineNo, head.col});
      return Error::success();
    }
    currentBody().push_back(std::move(inst));
    return Error::success();
  }

  Error parseField(const Token &t, Field field, Instruction &inst) {
    switch (field) {
    case Field::Channels:
      return parseChannelSet(t, inst.channels);
    case Field::Fn: {
      auto fn = parseFunction(t.value);
      if (!fn)
        return errorAtValue(t, 0, "unknown function '" + t.value + "'");
      inst.fn = *fn;
      return Error::success();
    }
    case Field::Cap:
      return parseCap(t, inst.cap, "cap");
    case Field::AlibiScale:
      return parseCap(t, inst.alibiScale, "alibi_scale");
    case Field::Alibi:
      return parseSlopes(t, inst.alibi);
    case Field::Data: {
      // region, optionally followed by +offset / -offset terms.
      StringRef s = t.value;
      size_t cut = s.find_first_of("+-");
      if (Error err = lookupRegion(t, s.take_front(cut), 0, inst.dataRegion))
        return err;
      if (cut == StringRef::npos)
        return Error::success();
      StringRef off = s.drop_front(cut);
      off.consume_front("+");
      unsigned at = s.size() - off.size();
      return parseAffine(t, off, at, Field::Data, inst.dataOffset, &inst);
    }
    default: {
      int64_t base = 0;
      if (Error err = parseAffine(t, t.value, 0, field, base, &inst))
        return err;
      inst.set(field, base);
      return Error::success();
    }
    }
  }

  /// A positive finite float; the shortest text that reads back exactly.
  Error parseCap(const Token &t, float &cap, StringRef what) {
    double v = 0;
    if (t.quoted || StringRef(t.value).getAsDouble(v) || !std::isfinite(v) ||
        v <= 0 || !std::isfinite(float(v)))
      return errorAtValue(t, 0,
                          what + " must be a positive finite number, found '" +
                              t.value + "'");
    cap = float(v);
    return Error::success();
  }

  /// ALiBi slopes (2.2): a comma-separated list of finite floats.
  Error parseSlopes(const Token &t, std::vector<float> &slopes) {
    SmallVector<StringRef> parts;
    StringRef(t.value).split(parts, ',');
    slopes.clear();
    for (StringRef s : parts) {
      double v = 0;
      if (t.quoted || s.getAsDouble(v) || !std::isfinite(float(v)))
        return errorAtValue(t, 0,
                            "alibi slopes must be finite numbers separated "
                            "by commas, found '" +
                                t.value + "'");
      slopes.push_back(float(v));
    }
    return Error::success();
  }

  StringRef text, source;
  unsigned lineNo = 0;
  Program p;
  bool seenTarget = false, seenOrg = false, seenModel = false, inStream = false,
       inKernel = false;
  StringMap<int64_t> regionIndex, kernelIndex, streamIndex;
  StringSet<> launchNames, entryNames;
  std::vector<OpenLoop> loops;
};
} // namespace

Expected<Program> parseProgramText(StringRef text, StringRef sourceName) {
  return TextParser(text, sourceName).parse();
}

} // namespace pimsim
