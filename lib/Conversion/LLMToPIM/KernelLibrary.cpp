//===- KernelLibrary.cpp - reading and instantiating kernel files ---------===//
//
// Kernel files (KernelLibrary.h, docs/kernel-library.md): the header is read
// line by line here; the body is pimsim's text form and is assembled by
// pimsim's own parser inside a small wrapper program, so there is one
// instruction parser.
//
//===----------------------------------------------------------------------===//
#include "pimc/Conversion/LLMToPIM/KernelLibrary.h"

#include "KernelExpr.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <functional>
#include <set>

using namespace llvm;
using namespace pimc::kernels;

namespace {

Error fail(StringRef file, int line, const Twine &msg) {
  return createStringError(inconvertibleErrorCode(),
                           (file + ":" + Twine(line) + ": " + msg).str());
}

/// The words of a header line after its directive.
SmallVector<StringRef> words(StringRef rest) {
  SmallVector<StringRef> out;
  rest.split(out, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef &w : out)
    w = w.trim();
  llvm::erase_if(out, [](StringRef w) { return w.empty(); });
  return out;
}

/// Reads one header directive into `k`.
Error headerLine(KernelFile &k, StringRef d, StringRef rest, int line,
                 std::set<std::string> &names) {
  auto declare = [&](StringRef name) -> Error {
    if (!isIdentifier(name))
      return fail(k.file, line, "'" + name + "' is not a name");
    if (name == "ch")
      return fail(k.file, line, "'ch' is the channel index, not a name");
    if (!names.insert(name.str()).second)
      return fail(k.file, line, "'" + name + "' is declared twice");
    return Error::success();
  };
  if (d == ".kernel") {
    SmallVector<StringRef> w = words(rest);
    if (!k.name.empty())
      return fail(k.file, line, "a second .kernel");
    if (w.size() != 2 || !w[1].consume_front("op="))
      return fail(k.file, line, ".kernel needs NAME op=gemv|attention");
    if (!isIdentifier(w[0]))
      return fail(k.file, line, "'" + w[0] + "' is not a kernel name");
    if (w[1] != "gemv" && w[1] != "attention")
      return fail(k.file, line,
                  "unknown op '" + w[1] + "' (gemv or attention)");
    k.name = w[0].str();
    k.op = w[1].str();
    return Error::success();
  }
  if (d == ".arg" || d == ".runtime" || d == ".data") {
    SmallVector<StringRef> w = words(rest);
    if (w.empty())
      return fail(k.file, line, d + " needs at least one name");
    for (StringRef n : w) {
      if (Error e = declare(n))
        return e;
      (d == ".arg"    ? k.args
       : d == ".data" ? k.data
                      : k.runtime)
          .push_back(n.str());
    }
    return Error::success();
  }
  if (d == ".let") {
    auto [name, expr] = rest.split('=');
    name = name.trim();
    expr = expr.trim();
    if (expr.empty())
      return fail(k.file, line, ".let needs NAME = EXPR");
    if (Error e = declare(name))
      return e;
    k.lets.push_back({name.str(), {expr.str(), line}});
    return Error::success();
  }
  if (d == ".param") {
    SmallVector<StringRef> w = words(rest);
    if (w.empty())
      return fail(k.file, line, ".param needs NAME src=S min=E max=E");
    DerivedParam p;
    p.name = w[0].str();
    p.add = {"0", line};
    p.div = {"1", line};
    p.mod = {"0", line};
    for (StringRef kv : ArrayRef(w).drop_front()) {
      auto [key, value] = kv.split('=');
      Expr e{value.str(), line};
      if (key == "src" && llvm::is_contained(k.runtime, value))
        p.src = value.str();
      else if (key == "src")
        return fail(k.file, line,
                    "'" + value + "' is not a .runtime or earlier .param");
      else if (key == "add" || key == "div" || key == "mod" || key == "min" ||
               key == "max")
        (key == "add"   ? p.add
         : key == "div" ? p.div
         : key == "mod" ? p.mod
         : key == "min" ? p.min
                        : p.max) = e;
      else
        return fail(k.file, line,
                    "unknown .param field '" + key +
                        "' (src add div mod min max)");
    }
    if (p.src.empty() || p.min.text.empty() || p.max.text.empty())
      return fail(k.file, line, ".param needs src=, min= and max=");
    if (Error e = declare(p.name))
      return e;
    k.runtime.push_back(p.name);
    k.derived.push_back(std::move(p));
    return Error::success();
  }
  if (d == ".applies" || d == ".cost") {
    if (rest.trim().empty())
      return fail(k.file, line, d + " needs an expression");
    if (d == ".cost" && !k.cost.text.empty())
      return fail(k.file, line, "a second .cost");
    Expr e{rest.trim().str(), line};
    d == ".cost" ? void(k.cost = e) : k.applies.push_back(e);
    return Error::success();
  }
  return fail(k.file, line,
              "unknown directive '" + d +
                  "' (.kernel .arg .runtime .data .param .let .applies "
                  ".cost .body)");
}

} // namespace

Expected<KernelFile> pimc::kernels::parseKernelFile(StringRef text,
                                                    StringRef file) {
  KernelFile k;
  k.file = file.str();
  std::set<std::string> names;
  int line = 0;
  while (!text.empty()) {
    auto [raw, rest] = text.split('\n');
    text = rest;
    ++line;
    StringRef l = raw.split('#').first.trim();
    if (l.empty())
      continue;
    auto [d, args] = l.split(' ');
    if (d == ".body") {
      if (!args.trim().empty())
        return fail(k.file, line, ".body takes nothing on its line");
      k.body = text.str();
      k.bodyLine = line + 1;
      break;
    }
    if (!d.starts_with("."))
      return fail(k.file, line,
                  "expected a directive before .body, found '" + d + "'");
    if (Error e = headerLine(k, d, args, line, names))
      return e;
  }
  if (k.name.empty())
    return fail(k.file, 1, "no .kernel line");
  if (k.bodyLine == 0)
    return fail(k.file, line, "no .body");
  if (k.cost.text.empty())
    return fail(k.file, k.bodyLine - 1, "no .cost (estimated cycles)");
  // The body is pimsim's text form of one stream body: no directives, so it
  // cannot leave the stream the wrapper puts it in.
  int bl = k.bodyLine;
  for (StringRef rest = k.body; !rest.empty(); ++bl) {
    auto [raw, next] = rest.split('\n');
    rest = next;
    if (raw.split('#').first.trim().starts_with("."))
      return fail(k.file, bl,
                  "a kernel body holds instructions only, not directives");
  }
  return k;
}

//===----------------------------------------------------------------------===//
// Bindings
//===----------------------------------------------------------------------===//

Expected<Bindings> Bindings::bind(const KernelFile &kernel,
                                  const std::map<std::string, int64_t> &args,
                                  bool partial) {
  Bindings b;
  b.k = &kernel;
  for (auto &[name, v] : args) {
    if (!llvm::is_contained(kernel.args, name))
      continue; // the compiler passes what an op kind offers; a kernel
                // declares what it uses
    b.values[name] = v;
  }
  if (!partial)
    for (const std::string &a : kernel.args)
      if (!b.values.count(a))
        return fail(kernel.file, 1,
                    "kernel " + kernel.name + ": argument '" + a +
                        "' is not one the compiler passes for a " + kernel.op +
                        " op");
  for (auto &[name, e] : kernel.lets)
    b.lets[name] = &e;
  return b;
}

Expected<int64_t> Bindings::value(StringRef name) const {
  if (auto it = values.find(name.str()); it != values.end())
    return it->second;
  if (auto it = letValues.find(name.str()); it != letValues.end())
    return it->second;
  auto let = lets.find(name.str());
  if (let == lets.end()) {
    if (llvm::is_contained(k->args, name))
      return createStringError(inconvertibleErrorCode(),
                               "'" + name + "' is not known before placement");
    return createStringError(inconvertibleErrorCode(),
                             "unknown name '" + name + "'");
  }
  if (llvm::is_contained(evaluating, name.str()))
    return createStringError(inconvertibleErrorCode(),
                             "'" + name + "' is defined by itself");
  evaluating.push_back(name.str());
  Expected<int64_t> v =
      evalExpr(let->second->text, [&](StringRef n) { return value(n); });
  evaluating.pop_back();
  if (!v)
    return createStringError(inconvertibleErrorCode(),
                             ".let " + name + ": " + toString(v.takeError()));
  letValues[name.str()] = *v;
  return v;
}

Expected<int64_t> Bindings::eval(const Expr &e) const {
  Expected<int64_t> v = evalExpr(e.text, [&](StringRef n) { return value(n); });
  if (!v)
    return fail(k->file, e.line, toString(v.takeError()));
  return v;
}

Expected<std::string> pimc::kernels::whyNot(const Bindings &b) {
  for (const Expr &e : b.kernel().applies) {
    Expected<int64_t> v = b.eval(e);
    if (!v)
      return v.takeError();
    if (*v == 0)
      return e.text;
  }
  return std::string();
}

Expected<std::vector<DerivedValues>>
pimc::kernels::derivedParams(const Bindings &b) {
  std::vector<DerivedValues> out;
  for (const DerivedParam &p : b.kernel().derived) {
    DerivedValues v{p.name, p.src};
    for (auto [e, to] : {std::pair{&p.add, &v.add}, std::pair{&p.div, &v.div},
                         std::pair{&p.mod, &v.mod}, std::pair{&p.min, &v.min},
                         std::pair{&p.max, &v.max}}) {
      Expected<int64_t> x = b.eval(*e);
      if (!x)
        return x.takeError();
      *to = *x;
    }
    if (v.min > v.max || v.div < 1 || v.mod < 0)
      return fail(b.kernel().file, p.min.line,
                  formatv(".param {0}: needs min <= max, div >= 1 and mod >= "
                          "0 (min {1}, max {2}, div {3}, mod {4})",
                          p.name, v.min, v.max, v.div, v.mod));
    out.push_back(std::move(v));
  }
  return out;
}

Expected<std::string> pimc::kernels::substitute(const Bindings &b) {
  const KernelFile &k = b.kernel();
  std::string out;
  int line = k.bodyLine;
  for (StringRef rest = k.body; !rest.empty(); ++line) {
    auto [raw, next] = rest.split('\n');
    rest = next;
    StringRef l = raw;
    while (true) {
      size_t at = l.find("${");
      if (at == StringRef::npos)
        break;
      size_t end = l.find('}', at);
      if (end == StringRef::npos)
        return fail(k.file, line, "'${' is not closed with '}'");
      Expected<int64_t> v = b.eval({l.slice(at + 2, end).str(), line});
      if (!v)
        return v.takeError();
      out += l.take_front(at);
      out += std::to_string(*v);
      l = l.drop_front(end + 1);
    }
    out += l;
    out += '\n';
  }
  return out;
}

Expected<std::vector<pimsim::Instruction>>
pimc::kernels::instantiate(const Bindings &b) {
  const KernelFile &k = b.kernel();
  Expected<std::string> body = substitute(b);
  if (!body)
    return body.takeError();
  // The wrapper: one stream on one channel, the runtime parameters as input
  // parameters, the `.data` buffers as its regions (in order, so region i
  // is data[i]). Only the structure is checked
  // here (checkProgram); the backend's program is validated against the
  // target as a whole.
  std::string text = ".version 2.0\n.target kernel hash=sha256:0\n"
                     ".org stacks=1 channels=1 pseudo_channels=1 sids=1 "
                     "bank_groups=1 banks=1 rows=1 columns=1 "
                     "access_bytes=32\n";
  for (const std::string &p : k.runtime)
    text += ".param " + p + " min=0 max=1\n";
  for (const std::string &d : k.data)
    text += ".region " + d +
            " kind=activations channels=0 banks=0 rows=0 bytes=32\n";
  text += ".stream kernel channels=0\n";
  int header = int(llvm::count(text, '\n'));
  text += *body;
  Expected<pimsim::Program> p = pimsim::parseProgramText(text, k.file);
  if (!p) {
    // "file:L:C: msg" with L in the wrapper: back to the kernel file's line.
    std::string msg = toString(p.takeError());
    StringRef rest = StringRef(msg).drop_front(k.file.size());
    int l = 0;
    if (rest.consume_front(":") && !rest.consumeInteger(10, l) &&
        rest.consume_front(":") && l > header)
      return createStringError(inconvertibleErrorCode(),
                               formatv("{0}:{1}:{2} (instantiated)", k.file,
                                       l - header - 1 + k.bodyLine, rest)
                                   .str());
    return createStringError(inconvertibleErrorCode(), msg);
  }
  if (p->streams.size() != 1)
    return fail(k.file, k.bodyLine, "the body is not one stream body");
  // A loop count or op size below 1 passes the assembler (only validation
  // against a target refuses it): the arguments are outside the shape
  // class the kernel's `.applies` should have excluded.
  int index = 0;
  std::function<Error(const std::vector<pimsim::Instruction> &)> check =
      [&](const std::vector<pimsim::Instruction> &body) -> Error {
    for (const pimsim::Instruction &i : body) {
      bool strided = llvm::any_of(i.strides, [](const pimsim::Stride &s) {
        return s.field == pimsim::Field::Count;
      });
      if (pimsim::opcodeHasField(i.op, pimsim::Field::Count) && !strided &&
          i.count < 1)
        return fail(k.file, k.bodyLine,
                    formatv("instruction {0} ({1}) has count {2}: the "
                            "arguments are outside the kernel's shape class",
                            index, pimsim::opcodeName(i.op), i.count));
      ++index;
      if (Error e = check(i.body))
        return e;
    }
    return Error::success();
  };
  if (Error e = check(p->streams[0].body))
    return e;
  return std::move(p->streams[0].body);
}

//===----------------------------------------------------------------------===//
// The embedded library
//===----------------------------------------------------------------------===//

namespace {
struct EmbeddedKernel {
  const char *file;
  const char *text;
};
// Generated from kernels/*.pimasm at build time (cmake/EmbedKernels.cmake).
#include "KernelSources.inc"
} // namespace

Expected<const std::vector<KernelFile> &> pimc::kernels::library() {
  static const auto loaded = [] {
    std::pair<std::vector<KernelFile>, std::string> out;
    for (const EmbeddedKernel &e : kEmbeddedKernels) {
      Expected<KernelFile> k = parseKernelFile(e.text, e.file);
      if (!k) {
        out.second += toString(k.takeError()) + "\n";
        continue;
      }
      out.first.push_back(std::move(*k));
    }
    return out;
  }();
  if (!loaded.second.empty())
    return createStringError(inconvertibleErrorCode(),
                             "kernel library: " + loaded.second);
  return loaded.first;
}

const KernelFile *pimc::kernels::findKernel(StringRef name) {
  Expected<const std::vector<KernelFile> &> lib = library();
  if (!lib) {
    consumeError(lib.takeError());
    return nullptr;
  }
  for (const KernelFile &k : *lib)
    if (k.name == name)
      return &k;
  return nullptr;
}
