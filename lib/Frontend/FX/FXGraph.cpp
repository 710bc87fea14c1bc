//===- FXGraph.cpp - parse and validate pimc-fx-graph JSON ----------------===//
//
// Everything that can be checked without knowing an op's semantics is checked
// here, before any IR exists, and all problems are reported together.
//
//===----------------------------------------------------------------------===//
#include "pimc/Frontend/FX/FXImporter.h"
#include "pimc/Support/JSON.h"
#include "pimc/Support/Paths.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

using namespace llvm;
using namespace pimc;
using namespace pimc::fx;

namespace {

const StringSet<> &knownDtypes() {
  static const StringSet<> set = {"float32", "float16", "bfloat16", "float64",
                                  "int64",   "int32",   "int16",    "int8",
                                  "uint8",   "bool"};
  return set;
}

} // namespace

bool pimc::fx::isKnownDtype(StringRef dtype) {
  return knownDtypes().contains(dtype);
}

namespace {

class GraphParser {
public:
  GraphParser(Graph &g) : g(g) {}

  void parse();
  std::vector<std::string> problems;

private:
  Graph &g;
  StringSet<> defined;  // names of nodes seen so far
  StringSet<> allNames; // every name in the file, to tell "later" from "none"
  StringSet<> broken;   // nodes already reported; references to them are not

  void problem(const Twine &msg) { problems.push_back(msg.str()); }
  bool parseMeta(const json::Value &v, TensorMeta &out, const Twine &where);
  void parseNode(const json::Object &obj, size_t index);
  void checkRefs(const json::Value &v, const Node &node);
  void parseStackTrace(StringRef trace, Node &node);
};

bool GraphParser::parseMeta(const json::Value &v, TensorMeta &out,
                            const Twine &where) {
  const json::Object *o = v.getAsObject();
  if (!o) {
    problem(where + ": meta must be an object {\"dtype\", \"shape\"}");
    return false;
  }
  std::optional<StringRef> dtype = o->getString("dtype");
  if (!dtype || !knownDtypes().contains(*dtype)) {
    problem(where + ": meta has " +
            (dtype ? "unknown dtype '" + *dtype + "'" : Twine("no dtype")) +
            " (expected float32, float16, bfloat16, float64, int64, int32, "
            "int16, int8, uint8 or bool)");
    return false;
  }
  out.dtype = dtype->str();
  const json::Array *shape = o->getArray("shape");
  if (!shape) {
    problem(where + ": meta has no shape");
    return false;
  }
  for (const json::Value &d : *shape) {
    std::optional<int64_t> n = d.getAsInteger();
    if (!n || *n < 0) {
      problem(where + ": meta shape must be a list of non-negative integers "
                      "(static shapes only)");
      return false;
    }
    out.shape.push_back(*n);
  }
  // Element counts stay far from int64 overflow (2^40 is 4 TB of f32).
  double count = 1;
  for (int64_t d : out.shape)
    count *= static_cast<double>(d);
  if (count > static_cast<double>(int64_t(1) << 40)) {
    problem(where + ": meta shape has too many elements");
    return false;
  }
  return true;
}

void GraphParser::parseStackTrace(StringRef trace, Node &node) {
  // FX stack traces are Python tracebacks: `File "models.py", line 40, in f`.
  static const Regex frame("File \"([^\"]+)\", line ([0-9]+)");
  SmallVector<StringRef, 3> m;
  if (frame.match(trace, &m)) {
    node.stackFile = m[1].str();
    to_integer(m[2], node.stackLine, 10);
  }
}

void GraphParser::checkRefs(const json::Value &v, const Node &node) {
  if (const json::Array *a = v.getAsArray()) {
    for (const json::Value &e : *a)
      checkRefs(e, node);
    return;
  }
  const json::Object *o = v.getAsObject();
  if (!o)
    return;
  if (const json::Value *ref = o->get("node")) {
    std::optional<StringRef> name = ref->getAsString();
    if (!name) {
      problem(formatv("node '{0}': a node reference must name a node by string",
                      node.name));
      return;
    }
    if (broken.contains(*name))
      return;
    if (!defined.contains(*name)) {
      problem(formatv("node '{0}': argument refers to '{1}', which {2}",
                      node.name, *name,
                      allNames.contains(*name) ? "is defined after it"
                                               : "is not a node of the graph"));
      return;
    }
    const Node &src = g.nodes[g.byName.lookup(*name)];
    if (src.op == Node::Op::Output) {
      problem(formatv("node '{0}': argument refers to the output node '{1}'",
                      node.name, *name));
      return;
    }
    int64_t index = 0;
    if (const json::Value *out = o->get("output")) {
      std::optional<int64_t> i = out->getAsInteger();
      if (!i) {
        problem(formatv("node '{0}': the output index of reference '{1}' must "
                        "be an integer",
                        node.name, *name));
        return;
      }
      index = *i;
      if (!src.tupleMeta) {
        problem(formatv("node '{0}': reference to output {1} of '{2}', which "
                        "has a single output",
                        node.name, index, *name));
        return;
      }
    } else if (src.tupleMeta) {
      problem(formatv("node '{0}': reference to '{1}', which has {2} outputs, "
                      "needs an \"output\" index",
                      node.name, *name, src.meta.size()));
      return;
    }
    if (index < 0 || index >= static_cast<int64_t>(src.meta.size()))
      problem(formatv("node '{0}': reference to output {1} of '{2}', which has "
                      "{3} output(s)",
                      node.name, index, *name, src.meta.size()));
    return;
  }
  for (const auto &kv : *o)
    checkRefs(kv.second, node);
}

void GraphParser::parseNode(const json::Object &obj, size_t index) {
  Node node;
  std::optional<StringRef> name = obj.getString("name");
  if (!name || name->empty()) {
    problem(formatv("nodes[{0}]: missing \"name\"", index));
    return;
  }
  node.name = name->str();
  if (g.byName.count(node.name)) {
    problem(formatv("node '{0}': duplicate node name (also nodes[{1}])",
                    node.name, g.byName.lookup(node.name)));
    return;
  }
  std::optional<StringRef> op = obj.getString("op");
  if (op == "placeholder") {
    node.op = Node::Op::Placeholder;
  } else if (op == "call_function") {
    node.op = Node::Op::CallFunction;
  } else if (op == "output") {
    node.op = Node::Op::Output;
  } else {
    problem(formatv("node '{0}': \"op\" is {1}; expected placeholder, "
                    "call_function or output",
                    node.name, op ? "'" + op->str() + "'" : "missing"));
    return;
  }
  if (std::optional<StringRef> trace = obj.getString("stack_trace"))
    parseStackTrace(*trace, node);

  std::string where = formatv("node '{0}'", node.name);
  if (node.op != Node::Op::Output) {
    const json::Value *meta = obj.get("meta");
    if (!meta) {
      problem(where + ": missing \"meta\" (dtype and shape of its output)");
      return;
    }
    if (const json::Array *list = meta->getAsArray()) {
      node.tupleMeta = true;
      for (const json::Value &m : *list) {
        TensorMeta tm;
        if (!parseMeta(m, tm, where))
          return;
        node.meta.push_back(std::move(tm));
      }
    } else {
      TensorMeta tm;
      if (!parseMeta(*meta, tm, where))
        return;
      node.meta.push_back(std::move(tm));
    }
  }

  if (node.op == Node::Op::Placeholder) {
    std::optional<StringRef> kind = obj.getString("kind");
    if (!kind || !is_contained(ArrayRef<StringRef>{"input", "parameter",
                                                   "buffer", "constant"},
                               *kind)) {
      problem(where + ": placeholder \"kind\" must be input, parameter, "
                      "buffer or constant");
      return;
    }
    node.kind = kind->str();
    if (node.tupleMeta) {
      problem(where + ": a placeholder has one tensor meta, not a list");
      return;
    }
    node.value = obj.get("value");
    if (node.kind == "constant" && node.value) {
      // Inline values are checked against meta when the constant is built.
    } else if (node.kind != "input") {
      std::optional<StringRef> target = obj.getString("target");
      if (!target || target->empty()) {
        problem(where + ": " + node.kind +
                " placeholder needs a \"target\" (its safetensors key)");
        return;
      }
      node.target = target->str();
    }
  } else if (node.op == Node::Op::CallFunction) {
    std::optional<StringRef> target = obj.getString("target");
    std::optional<StringRef> overload = obj.getString("overload");
    if (!target || target->empty() || !overload) {
      problem(where + ": call_function needs \"target\" and \"overload\" "
                      "strings");
      return;
    }
    node.target = target->str();
    node.overload = overload->str();
    node.args = obj.getArray("args");
    if (!node.args) {
      problem(where + " (" + node.qualifiedOp() + "): \"args\" must be a list");
      return;
    }
    if (const json::Value *kw = obj.get("kwargs")) {
      node.kwargs = kw->getAsObject();
      if (!node.kwargs) {
        problem(where + " (" + node.qualifiedOp() +
                "): \"kwargs\" must be an object");
        return;
      }
    }
    for (const json::Value &a : *node.args)
      checkRefs(a, node);
    if (node.kwargs)
      for (const auto &kv : *node.kwargs)
        checkRefs(kv.second, node);
  } else {
    node.args = obj.getArray("args");
    if (!node.args || node.args->size() != 1) {
      problem(where + ": the output node's \"args\" must be [results]");
      return;
    }
    for (const json::Value &a : *node.args)
      checkRefs(a, node);
  }
  g.byName[node.name] = g.nodes.size();
  defined.insert(node.name);
  g.nodes.push_back(std::move(node));
}

void GraphParser::parse() {
  const json::Object *top = g.root->getAsObject();
  if (!top) {
    problem("the graph must be a JSON object");
    return;
  }
  std::optional<StringRef> format = top->getString("format");
  if (format != kGraphFormat) {
    problem(formatv("\"format\" is {0}; expected '{1}'",
                    format ? "'" + format->str() + "'" : "missing",
                    kGraphFormat));
    return;
  }
  std::optional<int64_t> version = top->getInteger("version");
  if (version != kGraphVersion) {
    problem(formatv("unsupported graph version {0} (this importer reads "
                    "version {1})",
                    version ? std::to_string(*version) : "(missing)",
                    kGraphVersion));
    return;
  }
  if (std::optional<StringRef> params = top->getString("parameters")) {
    // The parameters file lies beside the graph (the bridge writes its
    // base name); a path out of the graph's directory is refused.
    Expected<std::string> p = resolveInside(sys::path::parent_path(g.path),
                                            *params, "\"parameters\"");
    if (!p) {
      problem(toString(p.takeError()));
      return;
    }
    g.parameters = std::move(*p);
  }
  const json::Array *nodes = top->getArray("nodes");
  if (!nodes) {
    problem("\"nodes\" must be a list");
    return;
  }
  for (const json::Value &n : *nodes)
    if (const json::Object *obj = n.getAsObject())
      if (std::optional<StringRef> name = obj->getString("name"))
        allNames.insert(*name);
  for (size_t i = 0; i < nodes->size(); ++i) {
    const json::Object *obj = (*nodes)[i].getAsObject();
    if (!obj) {
      problem(formatv("nodes[{0}] is not an object", i));
      continue;
    }
    parseNode(*obj, i);
    // A node that failed is reported once, not again at every use.
    if (std::optional<StringRef> name = obj->getString("name"))
      if (!defined.contains(*name))
        broken.insert(*name);
  }
  size_t outputs = 0;
  for (const Node &n : g.nodes)
    outputs += n.op == Node::Op::Output;
  if (problems.empty() &&
      (outputs != 1 || g.nodes.back().op != Node::Op::Output))
    problem("the graph must end with exactly one output node");
}

} // namespace

Expected<Graph> pimc::fx::parseGraph(StringRef text, StringRef path,
                                     const DimBindings &dims) {
  Graph g;
  g.path = path.str();
  Expected<json::Value> root = pimc::parseJSON(text);
  if (!root) {
    // llvm::json says "[line:col, byte=N]: message"; print it as file:line:col.
    std::string msg = toString(root.takeError());
    static const Regex pos("^\\[([0-9]+):([0-9]+), byte=[0-9]+\\]: (.*)$");
    SmallVector<StringRef, 4> m;
    if (pos.match(msg, &m))
      return createStringError(
          formatv("{0}:{1}:{2}: invalid JSON: {3}", path, m[1], m[2], m[3]));
    return createStringError(formatv("{0}: invalid JSON: {1}", path, msg));
  }
  g.root = std::make_unique<json::Value>(std::move(*root));
  Expected<std::vector<DynamicDim>> dynamic =
      specialiseGraph(*g.root, path, dims);
  if (!dynamic)
    return dynamic.takeError();
  g.dynamicDims = std::move(*dynamic);
  GraphParser parser(g);
  parser.parse();
  if (parser.problems.empty())
    return g;
  if (parser.problems.size() == 1)
    return createStringError(formatv("{0}: {1}", path, parser.problems[0]));
  std::string msg = formatv("{0}: {1} problem(s) in the graph:", path,
                            parser.problems.size());
  for (const std::string &p : parser.problems)
    msg += "\n  " + p;
  return createStringError(msg);
}

bool pimc::fx::isGraphFile(StringRef path) {
  // A checkpoint is a directory; a .json file is a graph, and the reader
  // names the file when its "format" is something else.
  return path.ends_with_insensitive(".json") && !sys::fs::is_directory(path);
}
