//===- FXGraph.cpp - parse and validate pimc-fx-graph JSON ----------------===//
//
// Everything that can be checked without knowing an op's semantics is checked
// here, before any IR exists, and all problems are reported together.
//
//===----------------------------------------------------------------------===//
#include "pimc/Frontend/FX/FXImporter.h"
#include "pimc/Support/JSON.h"
#include "pimc/Support/JSONFields.h"
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
  /// Records a failed read as a problem; true when the read succeeded.
  template <typename T> bool ok(Expected<T> &read) {
    if (read)
      return true;
    problem(toString(read.takeError()));
    return false;
  }
  bool ok(Error e) {
    if (!e)
      return true;
    problem(toString(std::move(e)));
    return false;
  }
  bool parseMeta(const JSONFields &meta, TensorMeta &out);
  void parseNode(const json::Object &obj, size_t index);
  void checkRefs(const json::Value &v, const Node &node);
  void parseStackTrace(StringRef trace, Node &node);
};

/// How the fields of a node (`where` is "node 'x'") or of the graph (`where`
/// is empty) are named in problems: "node 'x': meta.shape[1]: must be
/// non-negative, got -1".
JSONFieldStyle fieldStyle(std::string where) {
  JSONFieldStyle style;
  style.error = [where = std::move(where)](StringRef path,
                                           const Twine &what) -> Error {
    std::string at = where;
    if (!path.empty())
      at += (at.empty() ? "" : ": ") + path.str();
    return createStringError(at.empty() ? what.str() : at + ": " + what);
  };
  style.showValues = true;
  return style;
}

bool GraphParser::parseMeta(const JSONFields &meta, TensorMeta &out) {
  if (!ok(meta.checkKeys({"dtype", "shape"})))
    return false;
  Expected<StringRef> dtype = meta.string("dtype", required);
  if (!ok(dtype))
    return false;
  if (!knownDtypes().contains(*dtype))
    return ok(meta.fieldError(
        "dtype", "unknown dtype '" + *dtype +
                     "' (expected float32, float16, bfloat16, float64, int64, "
                     "int32, int16, int8, uint8 or bool)"));
  out.dtype = dtype->str();
  // Static shapes only: symbolic sizes were specialised before parsing.
  Expected<std::vector<int64_t>> shape =
      meta.integers("shape", required, IntRange{0});
  if (!ok(shape))
    return false;
  out.shape.assign(shape->begin(), shape->end());
  // Element counts stay far from int64 overflow (2^40 is 4 TB of f32).
  double count = 1;
  for (int64_t d : out.shape)
    count *= static_cast<double>(d);
  if (count > static_cast<double>(int64_t(1) << 40))
    return ok(meta.fieldError("shape", "has more than 2^40 elements"));
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
  JSONFieldStyle entryStyle = fieldStyle(formatv("nodes[{0}]", index));
  JSONFields entry(obj, "", entryStyle);
  Expected<StringRef> name = entry.string("name", required);
  if (!ok(name))
    return;
  if (name->empty())
    return problem(formatv("nodes[{0}]: \"name\" is empty", index));
  node.name = name->str();
  if (g.byName.count(node.name))
    return problem(formatv("node '{0}': duplicate node name (also nodes[{1}])",
                           node.name, g.byName.lookup(node.name)));
  std::string where = formatv("node '{0}'", node.name);
  JSONFieldStyle style = fieldStyle(where);
  JSONFields fields(obj, "", style);
  Expected<StringRef> op = fields.string("op", required);
  if (!ok(op))
    return;
  if (*op == "placeholder")
    node.op = Node::Op::Placeholder;
  else if (*op == "call_function")
    node.op = Node::Op::CallFunction;
  else if (*op == "output")
    node.op = Node::Op::Output;
  else
    return problem(where + ": op: '" + *op +
                   "' is not placeholder, call_function or output");
  Expected<std::optional<StringRef>> trace = fields.string("stack_trace");
  if (!ok(trace))
    return;
  if (*trace)
    parseStackTrace(**trace, node);

  if (node.op != Node::Op::Output) {
    const json::Value *meta = fields.value("meta");
    if (!meta)
      return problem(where +
                     ": missing \"meta\" (dtype and shape of its output)");
    if (const json::Array *list = meta->getAsArray()) {
      node.tupleMeta = true;
      for (size_t i = 0; i < list->size(); ++i) {
        Expected<JSONFields> m =
            JSONFields::of((*list)[i], jsonIndexPath("meta", i), style);
        TensorMeta tm;
        if (!ok(m) || !parseMeta(*m, tm))
          return;
        node.meta.push_back(std::move(tm));
      }
    } else {
      Expected<JSONFields> m = JSONFields::of(*meta, "meta", style);
      TensorMeta tm;
      if (!ok(m) || !parseMeta(*m, tm))
        return;
      node.meta.push_back(std::move(tm));
    }
  }

  if (node.op == Node::Op::Placeholder) {
    Expected<StringRef> kind = fields.string("kind", required);
    if (!ok(kind))
      return;
    if (!is_contained(
            ArrayRef<StringRef>{"input", "parameter", "buffer", "constant"},
            *kind))
      return problem(where + ": kind: '" + *kind +
                     "' is not input, parameter, buffer or constant");
    node.kind = kind->str();
    if (node.tupleMeta)
      return problem(where + ": a placeholder has one tensor meta, not a list");
    node.value = fields.value("value");
    if (node.kind == "constant" && node.value) {
      // Inline values are checked against meta when the constant is built.
    } else if (node.kind != "input") {
      Expected<std::optional<StringRef>> target = fields.string("target");
      if (!ok(target))
        return;
      if (!*target || (*target)->empty())
        return problem(where + ": " + node.kind +
                       " placeholder needs a \"target\" (its safetensors "
                       "key)");
      node.target = (*target)->str();
    }
  } else if (node.op == Node::Op::CallFunction) {
    Expected<StringRef> target = fields.string("target", required);
    if (!ok(target))
      return;
    Expected<StringRef> overload = fields.string("overload", required);
    if (!ok(overload))
      return;
    if (target->empty())
      return problem(where + ": target: the op's name is empty");
    node.target = target->str();
    node.overload = overload->str();
    JSONFieldStyle opStyle =
        fieldStyle(where + " (" + node.qualifiedOp() + ")");
    JSONFields opFields(obj, "", opStyle);
    Expected<const json::Array *> args = opFields.array("args", required);
    if (!ok(args))
      return;
    node.args = *args;
    Expected<std::optional<JSONFields>> kwargs = opFields.object("kwargs");
    if (!ok(kwargs))
      return;
    if (*kwargs)
      node.kwargs = &(*kwargs)->json();
    for (const json::Value &a : *node.args)
      checkRefs(a, node);
    if (node.kwargs)
      for (const auto &kv : *node.kwargs)
        checkRefs(kv.second, node);
  } else {
    Expected<const json::Array *> args = fields.array("args", required);
    if (!ok(args))
      return;
    node.args = *args;
    if (node.args->size() != 1)
      return problem(where +
                     ": args: the output node's \"args\" must be "
                     "[results], got " +
                     Twine(node.args->size()) + " elements");
    for (const json::Value &a : *node.args)
      checkRefs(a, node);
  }
  g.byName[node.name] = g.nodes.size();
  defined.insert(node.name);
  g.nodes.push_back(std::move(node));
}

void GraphParser::parse() {
  JSONFieldStyle style = fieldStyle("");
  Expected<JSONFields> top = JSONFields::of(*g.root, "", style);
  if (!top)
    return problem("the graph must be a JSON object");
  Expected<std::optional<StringRef>> format = top->string("format");
  if (!ok(format))
    return;
  if (*format != kGraphFormat)
    return problem(formatv("\"format\" is {0}; expected '{1}'",
                           *format ? "'" + (*format)->str() + "'" : "missing",
                           kGraphFormat));
  Expected<std::optional<int64_t>> version = top->integer("version");
  if (!ok(version))
    return;
  if (*version != kGraphVersion)
    return problem(formatv("unsupported graph version {0} (this importer reads "
                           "version {1})",
                           *version ? std::to_string(**version) : "(missing)",
                           kGraphVersion));
  Expected<std::optional<StringRef>> params = top->string("parameters");
  if (!ok(params))
    return;
  if (*params) {
    // The parameters file lies beside the graph (the bridge writes its
    // base name); a path out of the graph's directory is refused.
    Expected<std::string> p = resolveInside(sys::path::parent_path(g.path),
                                            **params, "\"parameters\"");
    if (!ok(p))
      return;
    g.parameters = std::move(*p);
  }
  Expected<const json::Array *> list = top->array("nodes", required);
  if (!ok(list))
    return;
  const json::Array *nodes = *list;
  for (const json::Value &n : *nodes)
    if (const json::Object *obj = n.getAsObject())
      if (std::optional<StringRef> name = obj->getString("name"))
        allNames.insert(*name);
  for (size_t i = 0; i < nodes->size(); ++i) {
    Expected<JSONFields> node =
        JSONFields::of((*nodes)[i], jsonIndexPath("nodes", i), style);
    if (!ok(node))
      continue;
    const json::Object *obj = &node->json();
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
