//===- FXImporter.cpp - FX graph -> llm dialect driver --------------------===//
//
// Order of work: parse and validate the graph (FXGraph.cpp), look every
// call_function up in the op table and bind its arguments against the ATen
// schema, check the weight placeholders against the safetensors file, and
// only when all of that succeeded build the IR node by node.
//
//===----------------------------------------------------------------------===//
#include "FXOpTable.h"

#include "pimc/Dialect/LLM/IR/LLMDialect.h"
#include "pimc/Frontend/HF/HFImporter.h"
#include "pimc/Support/Shape.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace pimc;
using namespace pimc::fx;
using namespace pimc::fx::detail;
using llvm::formatv;
namespace json = llvm::json;

//===----------------------------------------------------------------------===//
// Schemas
//===----------------------------------------------------------------------===//

namespace {

/// Splits at top-level commas (defaults such as `[0, 1]` contain commas).
llvm::SmallVector<llvm::StringRef> splitParams(llvm::StringRef s) {
  llvm::SmallVector<llvm::StringRef> out;
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '[' || c == '(')
      ++depth;
    else if (c == ']' || c == ')')
      --depth;
    else if (c == ',' && depth == 0) {
      out.push_back(s.slice(begin, i).trim());
      begin = i + 1;
    }
  }
  if (!s.slice(begin, s.size()).trim().empty())
    out.push_back(s.slice(begin, s.size()).trim());
  return out;
}

std::optional<json::Value> parseDefault(llvm::StringRef d) {
  d = d.trim();
  if (d == "None")
    return json::Value(nullptr);
  if (d == "True")
    return json::Value(true);
  if (d == "False")
    return json::Value(false);
  if (d.size() >= 2 && d.front() == '"' && d.back() == '"')
    return json::Value(d.drop_front().drop_back().str());
  if (d.front() == '[') {
    json::Array list;
    for (llvm::StringRef e : splitParams(d.drop_front().drop_back())) {
      std::optional<json::Value> v = parseDefault(e);
      if (!v)
        return std::nullopt;
      list.push_back(std::move(*v));
    }
    return json::Value(std::move(list));
  }
  int64_t i;
  if (!d.getAsInteger(10, i))
    return json::Value(i);
  double f;
  if (!d.getAsDouble(f))
    return json::Value(f);
  // Enum-like defaults (memory formats) are names.
  return json::Value(d.str());
}

} // namespace

llvm::Expected<Schema> pimc::fx::detail::parseSchema(llvm::StringRef text) {
  Schema s;
  s.text = text.str();
  llvm::StringRef t = text;
  t.consume_front("aten::");
  size_t open = t.find('(');
  size_t close = t.rfind(')');
  if (open == llvm::StringRef::npos || close == llvm::StringRef::npos ||
      close < open)
    return llvm::createStringError("bad schema '" + text + "'");
  auto [name, overload] = t.take_front(open).split('.');
  s.name = name.str();
  s.overload = overload.empty() ? "default" : overload.str();
  bool kwOnly = false;
  for (llvm::StringRef p : splitParams(t.slice(open + 1, close))) {
    if (p == "*") {
      kwOnly = true;
      continue;
    }
    ParamSpec spec;
    spec.kwOnly = kwOnly;
    auto [decl, def] = p.split('=');
    decl = decl.trim();
    size_t space = decl.rfind(' ');
    if (space == llvm::StringRef::npos)
      return llvm::createStringError("bad schema parameter '" + p + "' in '" +
                                     text + "'");
    spec.name = decl.drop_front(space + 1).str();
    llvm::StringRef type = decl.take_front(space).trim();
    // Alias annotations ("Tensor(a)", "Tensor(a -> *)") do not matter here.
    std::string stripped = type.str();
    if (size_t paren = stripped.find('('); paren != std::string::npos)
      stripped.erase(paren, stripped.find(')', paren) - paren + 1);
    type = stripped;
    if (type.consume_back("?"))
      spec.optional = true;
    if (type.ends_with("]")) {
      spec.list = true;
      type = type.take_front(type.find('['));
    }
    if (type.consume_back("?"))
      spec.optionalElems = true;
    static const llvm::StringMap<ArgKind> kinds = {
        {"Tensor", ArgKind::Tensor},
        {"int", ArgKind::Int},
        {"SymInt", ArgKind::Int},
        {"float", ArgKind::Float},
        {"Scalar", ArgKind::Scalar},
        {"bool", ArgKind::Bool},
        {"str", ArgKind::Str},
        {"ScalarType", ArgKind::ScalarType},
        {"Layout", ArgKind::Layout},
        {"Device", ArgKind::Device},
        {"MemoryFormat", ArgKind::MemoryFormat}};
    auto kind = kinds.find(type);
    if (kind == kinds.end())
      return llvm::createStringError("bad schema type '" + type + "' in '" +
                                     text + "'");
    spec.kind = kind->second;
    if (!def.empty()) {
      std::optional<json::Value> v = parseDefault(def);
      if (!v)
        return llvm::createStringError("bad default '" + def + "' in '" + text +
                                       "'");
      spec.hasDefault = true;
      spec.defaultValue = std::move(*v);
    }
    s.params.push_back(std::move(spec));
  }
  return s;
}

//===----------------------------------------------------------------------===//
// Argument kinds
//===----------------------------------------------------------------------===//

namespace {

llvm::StringRef kindName(const ParamSpec &p) {
  switch (p.kind) {
  case ArgKind::Tensor:
    return p.list ? "a list of tensors" : "a tensor";
  case ArgKind::Int:
    return p.list ? "a list of integers" : "an integer";
  case ArgKind::Float:
    return "a number";
  case ArgKind::Scalar:
    return "a number or boolean";
  case ArgKind::Bool:
    return "a boolean";
  case ArgKind::Str:
    return "a string";
  case ArgKind::ScalarType:
    return "a dtype ({\"dtype\": ...})";
  case ArgKind::Layout:
    return "a layout";
  case ArgKind::Device:
    return "a device";
  case ArgKind::MemoryFormat:
    return "a memory format";
  }
  return "?";
}

bool isNonFinite(const json::Value &v) {
  const json::Object *o = v.getAsObject();
  if (!o || o->size() != 1)
    return false;
  std::optional<llvm::StringRef> f = o->getString("float");
  return f && (*f == "inf" || *f == "-inf" || *f == "nan");
}

bool matchesKind(const json::Value &v, ArgKind kind) {
  const json::Object *o = v.getAsObject();
  switch (kind) {
  case ArgKind::Tensor:
    // make_fx records Python numbers passed as tensors (add.Tensor(x, 1e-05)).
    return (o && (o->get("node") || o->get("tensor"))) ||
           v.kind() == json::Value::Number ||
           v.kind() == json::Value::Boolean || isNonFinite(v);
  case ArgKind::Int:
    return v.kind() == json::Value::Number && v.getAsInteger().has_value();
  case ArgKind::Float:
    return v.kind() == json::Value::Number || isNonFinite(v);
  case ArgKind::Scalar:
    return v.kind() == json::Value::Number ||
           v.kind() == json::Value::Boolean || isNonFinite(v);
  case ArgKind::Bool:
    return v.kind() == json::Value::Boolean;
  case ArgKind::Str:
    return v.kind() == json::Value::String;
  case ArgKind::ScalarType:
    return o && o->getString("dtype");
  case ArgKind::Layout:
    return (o && o->get("layout")) || v.kind() == json::Value::String;
  case ArgKind::Device:
    return (o && o->get("device")) || v.kind() == json::Value::String;
  case ArgKind::MemoryFormat:
    return (o && o->get("memory_format")) || v.kind() == json::Value::String ||
           v.getAsInteger().has_value();
  }
  return false;
}

bool matchesParam(const json::Value &v, const ParamSpec &p) {
  if (v.kind() == json::Value::Null)
    return p.optional;
  if (!p.list)
    return matchesKind(v, p.kind);
  // torch accepts a single int for int[N] (e.g. `dim=1` for int[1]).
  if (p.kind == ArgKind::Int && matchesKind(v, ArgKind::Int))
    return true;
  const json::Array *a = v.getAsArray();
  if (!a)
    return false;
  for (const json::Value &e : *a)
    if (!(e.kind() == json::Value::Null ? p.optionalElems
                                        : matchesKind(e, p.kind)))
      return false;
  return true;
}

std::string shortJson(const json::Value &v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << v;
  if (s.size() > 60)
    s = s.substr(0, 57) + "...";
  return s;
}

/// Binds a node's args/kwargs to the schema's parameters; every problem is
/// appended to `problems`.
bool bindArgs(const Node &node, const Schema &schema,
              std::vector<const json::Value *> &bound,
              std::vector<std::string> &problems) {
  std::string where =
      formatv("node '{0}' ({1})", node.name, node.qualifiedOp());
  bool ok = true;
  bound.assign(schema.params.size(), nullptr);
  size_t positional = node.args->size();
  if (positional > schema.params.size()) {
    problems.push_back(formatv("{0}: unexpected argument #{1} {2} (the op "
                               "takes {3}: {4})",
                               where, schema.params.size() + 1,
                               shortJson((*node.args)[schema.params.size()]),
                               schema.params.size(), schema.text));
    ok = false;
    positional = schema.params.size();
  }
  for (size_t i = 0; i < positional; ++i)
    bound[i] = &(*node.args)[i];
  if (node.kwargs) {
    // Sorted for deterministic messages.
    llvm::SmallVector<llvm::StringRef> keys;
    for (const auto &kv : *node.kwargs)
      keys.push_back(kv.first);
    llvm::sort(keys);
    for (llvm::StringRef key : keys) {
      auto it = llvm::find_if(
          schema.params, [&](const ParamSpec &p) { return p.name == key; });
      if (it == schema.params.end()) {
        problems.push_back(formatv("{0}: unexpected keyword argument '{1}' "
                                   "(schema: {2})",
                                   where, key, schema.text));
        ok = false;
        continue;
      }
      size_t idx = it - schema.params.begin();
      if (bound[idx]) {
        problems.push_back(
            formatv("{0}: argument '{1}' given twice", where, key));
        ok = false;
        continue;
      }
      bound[idx] = node.kwargs->get(key);
    }
  }
  for (size_t i = 0; i < schema.params.size(); ++i) {
    const ParamSpec &p = schema.params[i];
    if (!bound[i]) {
      if (p.hasDefault) {
        bound[i] = &p.defaultValue;
      } else if (p.optional && p.kwOnly) {
        static const json::Value none(nullptr);
        bound[i] = &none;
      } else {
        problems.push_back(formatv("{0}: missing argument '{1}' (schema: {2})",
                                   where, p.name, schema.text));
        ok = false;
      }
      continue;
    }
    if (!matchesParam(*bound[i], p)) {
      problems.push_back(formatv(
          "{0}: argument '{1}' must be {2}{3}, got {4}", where, p.name,
          kindName(p), p.optional ? " or None" : "", shortJson(*bound[i])));
      ok = false;
    }
  }
  return ok;
}

struct Table {
  std::vector<Schema> schemas;
  std::vector<BuildFn> builds;
  llvm::StringMap<size_t> byOp; // "aten.mm.default"
};

const Table &table() {
  static const Table t = [] {
    Table t;
    for (const OpEntry &e : opEntries()) {
      llvm::Expected<Schema> s = parseSchema(e.schema);
      if (!s) {
        // A malformed table row is a bug in this file's table; report it
        // loudly once instead of silently dropping the op.
        llvm::errs() << "pimc: internal error in the FX op table: "
                     << llvm::toString(s.takeError()) << "\n";
        continue;
      }
      std::string key = "aten." + s->name + "." + s->overload;
      t.byOp[key] = t.schemas.size();
      t.schemas.push_back(std::move(*s));
      t.builds.push_back(e.build);
    }
    return t;
  }();
  return t;
}

} // namespace

std::vector<OpSupport> pimc::fx::supportedOps() {
  std::vector<OpSupport> out;
  for (const Schema &s : table().schemas)
    out.push_back({"aten." + s.name + "." + s.overload, s.text});
  return out;
}

//===----------------------------------------------------------------------===//
// OpContext
//===----------------------------------------------------------------------===//

const json::Value *OpContext::arg(llvm::StringRef name) const {
  for (size_t i = 0; i < schema.params.size(); ++i)
    if (schema.params[i].name == name)
      return bound[i];
  // A builder asking for a parameter its schema lacks is a table bug.
  llvm::report_fatal_error(llvm::Twine("FX op table: ") + schema.text +
                           " has no parameter '" + name + "'");
}

bool OpContext::isNone(llvm::StringRef name) const {
  return arg(name)->kind() == json::Value::Null;
}

Value OpContext::tensor(llvm::StringRef name) const {
  const json::Value *v = arg(name);
  if (v->kind() == json::Value::Null)
    return {};
  return resolve(*v);
}

llvm::SmallVector<Value> OpContext::tensors(llvm::StringRef name) const {
  llvm::SmallVector<Value> out;
  if (const json::Array *a = arg(name)->getAsArray())
    for (const json::Value &e : *a)
      out.push_back(e.kind() == json::Value::Null ? Value() : resolve(e));
  return out;
}

int64_t OpContext::i64(llvm::StringRef name) const {
  return arg(name)->getAsInteger().value_or(0);
}

std::optional<int64_t> OpContext::optI64(llvm::StringRef name) const {
  return arg(name)->getAsInteger();
}

llvm::SmallVector<int64_t> OpContext::ints(llvm::StringRef name) const {
  const json::Value *v = arg(name);
  llvm::SmallVector<int64_t> out;
  if (std::optional<int64_t> i = v->getAsInteger())
    out.push_back(*i);
  else if (const json::Array *a = v->getAsArray())
    for (const json::Value &e : *a)
      out.push_back(e.getAsInteger().value_or(0));
  return out;
}

double OpContext::f64(llvm::StringRef name) const {
  const json::Value *v = arg(name);
  if (std::optional<bool> b = v->getAsBoolean())
    return *b ? 1.0 : 0.0;
  if (std::optional<double> d = v->getAsNumber())
    return *d;
  if (const json::Object *o = v->getAsObject())
    if (std::optional<llvm::StringRef> f = o->getString("float")) {
      if (*f == "inf")
        return std::numeric_limits<double>::infinity();
      if (*f == "-inf")
        return -std::numeric_limits<double>::infinity();
      return std::numeric_limits<double>::quiet_NaN();
    }
  return 0.0;
}

bool OpContext::flag(llvm::StringRef name) const {
  return arg(name)->getAsBoolean().value_or(false);
}

std::optional<std::string> OpContext::str(llvm::StringRef name) const {
  if (std::optional<llvm::StringRef> s = arg(name)->getAsString())
    return s->str();
  return std::nullopt;
}

std::optional<std::string> OpContext::dtype(llvm::StringRef name) const {
  if (const json::Object *o = arg(name)->getAsObject())
    if (std::optional<llvm::StringRef> d = o->getString("dtype"))
      return d->str();
  return std::nullopt;
}

RankedTensorType OpContext::resultType(unsigned i) const {
  const TensorMeta &m = node.meta[i];
  return RankedTensorType::get(m.shape, elementTypeFor(b, m.dtype));
}

InFlightDiagnostic OpContext::error() const {
  InFlightDiagnostic d = emitError(loc);
  d << node.qualifiedOp() << ": ";
  return d;
}

Type pimc::fx::detail::elementTypeFor(Builder &b, llvm::StringRef dtype) {
  if (dtype.starts_with("float") || dtype == "bfloat16")
    return b.getF32Type();
  if (dtype == "bool")
    return b.getI1Type();
  return b.getI64Type();
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

namespace {

/// Reads one element of an inline tensor's data.
std::optional<double> jsonNumber(const json::Value &v) {
  if (std::optional<bool> b = v.getAsBoolean())
    return *b ? 1.0 : 0.0;
  if (std::optional<double> d = v.getAsNumber())
    return *d;
  if (isNonFinite(v)) {
    llvm::StringRef f = *v.getAsObject()->getString("float");
    if (f == "inf")
      return std::numeric_limits<double>::infinity();
    if (f == "-inf")
      return -std::numeric_limits<double>::infinity();
    return std::numeric_limits<double>::quiet_NaN();
  }
  return std::nullopt;
}

/// The constant of `type` holding `data`. Integer values must be integers in
/// int64 range (checked by the readers: parseInlineTensor, the integer
/// buffers' reader); a value that is not is saturated rather than converted
/// with undefined behaviour.
DenseElementsAttr denseFrom(RankedTensorType type, ArrayRef<double> data) {
  Type elem = type.getElementType();
  if (elem.isF32()) {
    llvm::SmallVector<float> v;
    for (double d : data)
      v.push_back(f32Of(d));
    return DenseElementsAttr::get(type, llvm::ArrayRef<float>(v));
  }
  if (elem.isInteger(1)) {
    llvm::SmallVector<bool> v;
    for (double d : data)
      v.push_back(d != 0);
    return DenseElementsAttr::get(type, llvm::ArrayRef<bool>(v));
  }
  llvm::SmallVector<int64_t> v;
  for (double d : data)
    v.push_back(saturatingInt64(d));
  return DenseElementsAttr::get(type, llvm::ArrayRef<int64_t>(v));
}

} // namespace

namespace {

/// Reads an inline tensor ({"tensor": {"dtype", "shape", "data"}} or the
/// inner object); false with `err` set when it is malformed.
bool parseInlineTensor(const json::Value &v, std::string &dtype,
                       llvm::SmallVectorImpl<int64_t> &dims,
                       llvm::SmallVectorImpl<double> &values,
                       std::string &err) {
  const json::Object *o = v.getAsObject();
  if (o && o->get("tensor"))
    o = o->getObject("tensor");
  if (!o) {
    err = "an inline tensor must be {\"tensor\": {\"dtype\", \"shape\", "
          "\"data\"}}";
    return false;
  }
  std::optional<llvm::StringRef> dt = o->getString("dtype");
  const json::Array *shape = o->getArray("shape");
  const json::Array *data = o->getArray("data");
  if (!dt || !shape || !data) {
    err = "an inline tensor needs \"dtype\", \"shape\" and \"data\"";
    return false;
  }
  dtype = dt->str();
  if (!fx::isKnownDtype(dtype)) {
    err = formatv("an inline tensor's dtype '{0}' is not a torch dtype", dtype);
    return false;
  }
  double count = 1; // double: a bogus shape must not overflow
  for (const json::Value &d : *shape) {
    std::optional<int64_t> n = d.getAsInteger();
    if (!n || *n < 0) {
      err = "an inline tensor's shape must be non-negative integers";
      return false;
    }
    dims.push_back(*n);
    count *= static_cast<double>(*n);
  }
  // Nested lists are accepted as well as flat row-major data.
  std::function<bool(const json::Array &)> flatten = [&](const json::Array &a) {
    for (const json::Value &e : a) {
      if (const json::Array *inner = e.getAsArray()) {
        if (!flatten(*inner))
          return false;
      } else if (std::optional<double> x = jsonNumber(e)) {
        values.push_back(*x);
      } else {
        return false;
      }
    }
    return true;
  };
  if (!flatten(*data)) {
    err = "an inline tensor's data must be numbers, booleans or "
          "{\"float\": \"inf\"|\"-inf\"|\"nan\"}";
    return false;
  }
  if (static_cast<double>(values.size()) != count) {
    err = formatv("an inline tensor of shape [{0}] needs {1} values, has {2}",
                  llvm::make_range(dims.begin(), dims.end()),
                  static_cast<uint64_t>(count), values.size());
    return false;
  }
  // Integer and bool data must be what the dtype holds (pimc keeps integers
  // as int64).
  bool isFloat = dtype.rfind("float", 0) == 0 || dtype == "bfloat16";
  for (auto [i, x] : llvm::enumerate(values)) {
    bool ok = isFloat || (dtype == "bool" ? (x == 0 || x == 1) : isInt64(x));
    if (!ok) {
      err = formatv("an inline {0} tensor's element {1} is {2}, which {0} "
                    "does not hold",
                    dtype, i, llvm::format("%g", x));
      return false;
    }
  }
  return true;
}

/// Checks every inline tensor inside an argument.
bool checkInlineTensors(const json::Value &v, std::string &err) {
  if (const json::Array *a = v.getAsArray()) {
    for (const json::Value &e : *a)
      if (!checkInlineTensors(e, err))
        return false;
    return true;
  }
  const json::Object *o = v.getAsObject();
  if (!o || !o->get("tensor"))
    return true;
  std::string dtype;
  llvm::SmallVector<int64_t> dims;
  llvm::SmallVector<double> values;
  return parseInlineTensor(v, dtype, dims, values, err);
}

} // namespace

FailureOr<Value> pimc::fx::detail::buildInlineTensor(OpBuilder &b, Location loc,
                                                     const json::Value &v,
                                                     std::string &err) {
  std::string dtype;
  llvm::SmallVector<int64_t> dims;
  llvm::SmallVector<double> values;
  if (!parseInlineTensor(v, dtype, dims, values, err))
    return failure();
  auto type = RankedTensorType::get(dims, elementTypeFor(b, dtype));
  return arith::ConstantOp::create(b, loc, denseFrom(type, values)).getResult();
}

//===----------------------------------------------------------------------===//
// The importer
//===----------------------------------------------------------------------===//

namespace {

std::optional<ckpt::DType> storedDType(llvm::StringRef torchDtype) {
  static const llvm::StringMap<ckpt::DType> map = {
      {"float32", ckpt::DType::F32},   {"float16", ckpt::DType::F16},
      {"bfloat16", ckpt::DType::BF16}, {"float64", ckpt::DType::F64},
      {"int64", ckpt::DType::I64},     {"int32", ckpt::DType::I32},
      {"int16", ckpt::DType::I16},     {"int8", ckpt::DType::I8},
      {"uint8", ckpt::DType::U8},      {"bool", ckpt::DType::Bool}};
  auto it = map.find(torchDtype);
  if (it == map.end())
    return std::nullopt;
  return it->second;
}

/// Integer and boolean weights cannot be llm.weight (float only); they are
/// small index/mask buffers, folded into the IR up to this many elements.
constexpr int64_t kMaxFoldedBufferElements = 1 << 20;

double readElement(const ckpt::TensorView &t, int64_t i) {
  const uint8_t *p = t.data + i * ckpt::dtypeSize(t.dtype);
  auto load = [&](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return static_cast<double>(v);
  };
  switch (t.dtype) {
  case ckpt::DType::Bool:
  case ckpt::DType::U8:
    return load(uint8_t());
  case ckpt::DType::I8:
    return load(int8_t());
  case ckpt::DType::I16:
    return load(int16_t());
  case ckpt::DType::I32:
    return load(int32_t());
  case ckpt::DType::I64:
    return load(int64_t());
  case ckpt::DType::F32:
    return load(float());
  case ckpt::DType::F64:
    return load(double());
  default:
    return 0.0;
  }
}

class GraphImporter {
public:
  GraphImporter(MLIRContext &ctx, const Graph &g, const ckpt::WeightStore *w)
      : ctx(ctx), g(g), weights(w), b(&ctx) {}

  llvm::Expected<OwningOpRef<ModuleOp>> run();

private:
  MLIRContext &ctx;
  const Graph &g;
  const ckpt::WeightStore *weights;
  OpBuilder b;
  std::vector<std::vector<const json::Value *>> boundArgs; // per node
  llvm::StringMap<llvm::SmallVector<Value, 3>> values;
  std::vector<std::string> problems;

  Location nodeLoc(const Node &n);
  void validate();
  void checkWeight(const Node &n);
  Value resolve(const json::Value &ref, const Node &user);
  LogicalResult buildPlaceholder(const Node &n, func::FuncOp func,
                                 unsigned &argIndex);
  LogicalResult checkResults(const Node &n, ArrayRef<Value> results);
  llvm::Error error(llvm::StringRef title);
};

Location GraphImporter::nodeLoc(const Node &n) {
  if (n.stackFile.empty())
    return NameLoc::get(StringAttr::get(&ctx, n.name));
  return NameLoc::get(StringAttr::get(&ctx, n.name),
                      FileLineColLoc::get(&ctx, n.stackFile, n.stackLine, 0));
}

llvm::Error GraphImporter::error(llvm::StringRef title) {
  if (problems.size() == 1)
    return llvm::createStringError(g.path + ": " + problems[0]);
  std::string msg = formatv("{0}: {1} {2}:", g.path, problems.size(), title);
  for (const std::string &p : problems)
    msg += "\n  " + p;
  return llvm::createStringError(msg);
}

void GraphImporter::checkWeight(const Node &n) {
  const TensorMeta &m = n.meta[0];
  std::string where =
      formatv("node '{0}' ({1} '{2}')", n.name, n.kind, n.target);
  if (!weights) {
    problems.push_back(where + ": the graph names no \"parameters\" "
                               "safetensors file");
    return;
  }
  const ckpt::TensorView *t = weights->lookup(n.target);
  if (!t) {
    problems.push_back(formatv("{0}: not found in {1}", where,
                               llvm::sys::path::filename(g.parameters)));
    return;
  }
  std::optional<ckpt::DType> want = storedDType(m.dtype);
  if (!want || *want != t->dtype)
    problems.push_back(formatv("{0}: {1} has dtype {2}, the graph says {3}",
                               where, llvm::sys::path::filename(t->file),
                               ckpt::dtypeName(t->dtype), m.dtype));
  if (ArrayRef<int64_t>(t->shape) != ArrayRef<int64_t>(m.shape))
    problems.push_back(formatv("{0}: {1} has shape {2}, the graph says {3}",
                               where, llvm::sys::path::filename(t->file),
                               shapeString(t->shape), shapeString(m.shape)));
  bool isFloat = t->dtype == ckpt::DType::F32 || t->dtype == ckpt::DType::F16 ||
                 t->dtype == ckpt::DType::BF16;
  if (!isFloat && t->numElements() > kMaxFoldedBufferElements)
    problems.push_back(formatv("{0}: {1} tensors are folded into the IR and "
                               "limited to {2} elements (this one has {3})",
                               where, ckpt::dtypeName(t->dtype),
                               kMaxFoldedBufferElements, t->numElements()));
  if (t->dtype == ckpt::DType::F64 || t->dtype == ckpt::DType::U16 ||
      t->dtype == ckpt::DType::U32 || t->dtype == ckpt::DType::U64 ||
      t->dtype == ckpt::DType::F8_E4M3 || t->dtype == ckpt::DType::F8_E5M2 ||
      t->dtype == ckpt::DType::F8_E8M0)
    problems.push_back(formatv("{0}: dtype {1} is not supported for graph "
                               "weights (F32, F16, BF16, integers, BOOL)",
                               where, ckpt::dtypeName(t->dtype)));
}

void GraphImporter::validate() {
  const Table &t = table();
  // Unsupported ops in first-seen order: op -> (count, first names).
  struct Unsupported {
    std::string op;
    int count = 0;
    std::vector<std::string> first;
  };
  std::vector<Unsupported> unsupported;
  llvm::StringMap<size_t> unsupportedIndex;
  boundArgs.resize(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node &n = g.nodes[i];
    if (n.op == Node::Op::Placeholder) {
      if (n.kind != "input" && !n.value)
        checkWeight(n);
      std::string err;
      if (n.value && !checkInlineTensors(*n.value, err))
        problems.push_back(formatv("node '{0}' (constant): {1}", n.name, err));
      continue;
    }
    if (n.op != Node::Op::CallFunction)
      continue;
    auto it = t.byOp.find(n.qualifiedOp());
    if (it == t.byOp.end()) {
      auto [slot, inserted] =
          unsupportedIndex.try_emplace(n.qualifiedOp(), unsupported.size());
      if (inserted)
        unsupported.push_back({n.qualifiedOp(), 0, {}});
      Unsupported &entry = unsupported[slot->second];
      ++entry.count;
      if (entry.first.size() < 3)
        entry.first.push_back(n.name);
      continue;
    }
    bindArgs(n, t.schemas[it->second], boundArgs[i], problems);
    std::string err;
    for (const json::Value &a : *n.args)
      if (!checkInlineTensors(a, err))
        break;
    if (err.empty() && n.kwargs)
      for (const auto &kv : *n.kwargs)
        if (!checkInlineTensors(kv.second, err))
          break;
    if (!err.empty())
      problems.push_back(
          formatv("node '{0}' ({1}): {2}", n.name, n.qualifiedOp(), err));
  }
  if (unsupported.empty())
    return;
  std::string msg = formatv("{0} unsupported op(s): ", unsupported.size());
  bool first = true;
  for (const Unsupported &u : unsupported) {
    if (!first)
      msg += "; ";
    first = false;
    msg += formatv("{0} x{1} (first: {2}", u.op, u.count,
                   llvm::join(u.first, ", "));
    llvm::StringRef why = unsupportedReason(u.op);
    msg += why.empty() ? ")" : ("; " + why + ")").str();
  }
  problems.insert(problems.begin(), msg);
}

Value GraphImporter::resolve(const json::Value &ref, const Node &user) {
  if (std::optional<double> x = jsonNumber(ref)) {
    // A wrapped scalar: bool, integer or float, as a 0-d constant.
    Type elem = ref.kind() == json::Value::Boolean ? Type(b.getI1Type())
                : ref.getAsInteger()               ? Type(b.getI64Type())
                                                   : b.getF32Type();
    return arith::ConstantOp::create(
        b, nodeLoc(user), denseFrom(RankedTensorType::get({}, elem), {*x}));
  }
  const json::Object *o = ref.getAsObject();
  if (const json::Value *name = o->get("node")) {
    auto it = values.find(*name->getAsString());
    int64_t index = o->getInteger("output").value_or(0);
    if (it == values.end() || index >= static_cast<int64_t>(it->second.size()))
      return {};
    return it->second[index];
  }
  std::string err;
  FailureOr<Value> v = buildInlineTensor(b, nodeLoc(user), ref, err);
  if (failed(v)) {
    emitError(nodeLoc(user)) << user.qualifiedOp() << ": " << err;
    return {};
  }
  return *v;
}

LogicalResult GraphImporter::buildPlaceholder(const Node &n, func::FuncOp func,
                                              unsigned &argIndex) {
  Location loc = nodeLoc(n);
  const TensorMeta &m = n.meta[0];
  if (n.kind == "input") {
    values[n.name] = {func.getArgument(argIndex++)};
    return success();
  }
  if (n.value) {
    std::string err;
    FailureOr<Value> v = buildInlineTensor(b, loc, *n.value, err);
    if (failed(v))
      return emitError(loc) << "constant: " << err;
    auto type = cast<RankedTensorType>(v->getType());
    if (type.getShape() != ArrayRef<int64_t>(m.shape) ||
        type.getElementType() != elementTypeFor(b, m.dtype))
      return emitError(loc)
             << "constant: the inline value is " << type << ", meta says "
             << m.dtype << " " << shapeString(m.shape);
    values[n.name] = {*v};
    return success();
  }
  const ckpt::TensorView *t = weights->lookup(n.target);
  Type elem;
  switch (t->dtype) {
  case ckpt::DType::F32:
    elem = b.getF32Type();
    break;
  case ckpt::DType::F16:
    elem = b.getF16Type();
    break;
  case ckpt::DType::BF16:
    elem = b.getBF16Type();
    break;
  default:
    break;
  }
  if (elem) {
    values[n.name] = {
        llm::WeightOp::create(b, loc, RankedTensorType::get(m.shape, elem),
                              b.getStringAttr(n.target))};
    return success();
  }
  // Integer / bool buffers (position ids, masks) become constants.
  llvm::SmallVector<double> data;
  for (int64_t i = 0, e = t->numElements(); i < e; ++i) {
    data.push_back(readElement(*t, i));
    // Read through a double: exact up to 2^53.
    if (!(std::fabs(data.back()) <= 0x1p53))
      return emitError(loc) << "buffer '" << n.target << "': element " << i
                            << " is beyond 2^53, which pimc does not hold "
                               "exactly";
  }
  auto type = RankedTensorType::get(m.shape, elementTypeFor(b, m.dtype));
  values[n.name] = {arith::ConstantOp::create(b, loc, denseFrom(type, data))};
  return success();
}

LogicalResult GraphImporter::checkResults(const Node &n,
                                          ArrayRef<Value> results) {
  if (results.size() != n.meta.size())
    return emitError(nodeLoc(n))
           << n.qualifiedOp() << ": the op has " << results.size()
           << " result(s), the graph's meta lists " << n.meta.size();
  for (size_t i = 0; i < results.size(); ++i) {
    auto type = dyn_cast_or_null<RankedTensorType>(
        results[i] ? results[i].getType() : Type());
    const TensorMeta &m = n.meta[i];
    Type want = elementTypeFor(b, m.dtype);
    bool elemOk =
        type && (type.getElementType() == want ||
                 (want.isF32() && isa<FloatType>(type.getElementType())));
    if (!type || type.getShape() != ArrayRef<int64_t>(m.shape) || !elemOk) {
      InFlightDiagnostic d = emitError(nodeLoc(n));
      // Either the graph's meta is inconsistent with its arguments or a
      // builder is wrong; both ways the node is named.
      d << n.qualifiedOp() << ": result " << i << " is ";
      if (type)
        d << type;
      else
        d << "missing";
      d << " from the arguments, but the graph's meta says " << m.dtype << " "
        << shapeString(m.shape);
      return d;
    }
  }
  return success();
}

llvm::Expected<OwningOpRef<ModuleOp>> GraphImporter::run() {
  hf::registerImportDialects(ctx);
  validate();
  if (!problems.empty())
    return error("problem(s) in the graph");

  // Builder failures are diagnostics at the node's location; they are
  // collected and returned as one error naming each node.
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Error)
      return success();
    std::string where;
    if (auto name = dyn_cast<NameLoc>(diag.getLocation())) {
      where = formatv("node '{0}'", name.getName().getValue());
      if (auto file = dyn_cast<FileLineColLoc>(name.getChildLoc()))
        where += formatv(" ({0}:{1})", file.getFilename().getValue(),
                         file.getLine());
    } else {
      llvm::raw_string_ostream os(where);
      os << diag.getLocation();
    }
    problems.push_back(where + ": " + diag.str());
    return success();
  });

  Location graphLoc = FileLineColLoc::get(&ctx, g.path, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(graphLoc);
  b.setInsertionPointToEnd(module->getBody());
  llvm::SmallVector<Type> inputs;
  for (const Node &n : g.nodes)
    if (n.op == Node::Op::Placeholder && n.kind == "input")
      inputs.push_back(RankedTensorType::get(
          n.meta[0].shape, elementTypeFor(b, n.meta[0].dtype)));
  auto func = func::FuncOp::create(b, graphLoc, hf::kForwardFunction,
                                   b.getFunctionType(inputs, {}));
  if (!g.dynamicDims.empty()) {
    llvm::SmallVector<Attribute> dims;
    for (const DynamicDim &d : g.dynamicDims) {
      // Checked, not asserted: the handler above records what is wrong.
      auto attr = llm::SymbolicDimAttr::getChecked(
          [&] { return emitError(graphLoc); }, &ctx,
          static_cast<int64_t>(d.argIndex), static_cast<int64_t>(d.dim),
          StringRef(d.name), StringRef(d.symbol), static_cast<int64_t>(d.min),
          d.max, static_cast<int64_t>(d.example),
          static_cast<int64_t>(d.value));
      if (!attr)
        return error("error(s) in dynamic_dims");
      dims.push_back(attr);
    }
    func->setAttr(llm::LLMDialect::kDynamicDimsAttr, b.getArrayAttr(dims));
  }
  b.setInsertionPointToEnd(func.addEntryBlock());

  const Table &t = table();
  unsigned argIndex = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node &n = g.nodes[i];
    Location loc = nodeLoc(n);
    if (n.op == Node::Op::Placeholder) {
      if (failed(buildPlaceholder(n, func, argIndex)))
        break;
      continue;
    }
    if (n.op == Node::Op::Output) {
      llvm::SmallVector<Value> outs;
      const json::Value &res = (*n.args)[0];
      llvm::SmallVector<const json::Value *> refs;
      if (const json::Array *a = res.getAsArray())
        for (const json::Value &e : *a)
          refs.push_back(&e);
      else
        refs.push_back(&res);
      for (const json::Value *r : refs) {
        const json::Object *o = r->getAsObject();
        if (!o || !o->get("node")) {
          emitError(loc) << "output: every result must be a node reference, "
                            "got "
                         << shortJson(*r);
          break;
        }
        Value v = resolve(*r, n);
        // f16/bf16 weights returned directly are widened: results are f32.
        auto type = cast<RankedTensorType>(v.getType());
        if (isa<FloatType>(type.getElementType()) &&
            !type.getElementType().isF32())
          v = llm::CastOp::create(
              b, loc, RankedTensorType::get(type.getShape(), b.getF32Type()),
              v);
        outs.push_back(v);
      }
      if (!problems.empty())
        break;
      func::ReturnOp::create(b, loc, outs);
      func.setType(b.getFunctionType(inputs, ValueRange(outs).getTypes()));
      continue;
    }
    size_t entry = t.byOp.lookup(n.qualifiedOp());
    auto resolveArg = [&](const json::Value &ref) { return resolve(ref, n); };
    OpContext c(b, loc, n, t.schemas[entry], boundArgs[i], resolveArg);
    size_t reported = problems.size();
    if (failed(t.builds[entry](c)) || failed(checkResults(n, c.results))) {
      if (problems.size() == reported)
        emitError(loc) << n.qualifiedOp() << ": could not be imported";
      // Stand-ins of the traced types let the remaining nodes build, so one
      // run reports every node that fails (the module is not returned).
      llvm::SmallVector<Value, 3> standIns;
      for (unsigned r = 0; r < c.numResults(); ++r)
        standIns.push_back(arith::ConstantOp::create(
            b, loc, cast<TypedAttr>(b.getZeroAttr(c.resultType(r)))));
      values[n.name] = standIns;
      continue;
    }
    // torch rounds every float16 / bfloat16 result; pimc computes in f32
    // and rounds there too (e.g. ALiBi's bf16 slopes times the positions).
    for (auto [r, v] : llvm::enumerate(c.results))
      v = c.roundToTraced(r, v);
    values[n.name] = c.results;
  }
  if (!problems.empty())
    return error("error(s) while building the IR");

  // Verifier errors name the node whose ops do not verify.
  if (failed(verify(*module))) {
    if (problems.empty())
      problems.push_back("internal error: the imported IR does not verify");
    return error("error(s) while verifying the IR");
  }
  // Builders may leave values unused (a transpose folded into llm.linear,
  // unused outputs of split); drop them so the IR shows what runs.
  IRRewriter rewriter(&ctx);
  (void)runRegionDCE(rewriter, func.getBody());
  // Builders emit a constant per use (splats, masks); merge equal ones.
  PassManager pm(&ctx);
  pm.addPass(createCSEPass());
  if (failed(pm.run(*module)))
    problems.push_back("internal error: CSE failed on the imported IR");
  if (!problems.empty())
    return error("error(s) while cleaning up the IR");
  return module;
}

} // namespace

llvm::Expected<OwningOpRef<ModuleOp>>
pimc::fx::importGraph(MLIRContext &context, const Graph &graph,
                      const ckpt::WeightStore *weights) {
  GraphImporter importer(context, graph, weights);
  return importer.run();
}

llvm::Expected<ImportedGraph>
pimc::fx::importGraphFile(MLIRContext &context, llvm::StringRef path,
                          const DimBindings &dims) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return llvm::createStringError(
        formatv("cannot read '{0}': {1}", path, buf.getError().message()));
  llvm::Expected<Graph> graph = parseGraph((*buf)->getBuffer(), path, dims);
  if (!graph)
    return graph.takeError();
  ImportedGraph out;
  out.parametersPath = graph->parameters;
  bool needsWeights = llvm::any_of(graph->nodes, [](const Node &n) {
    return n.op == Node::Op::Placeholder && n.kind != "input" && !n.value;
  });
  if (needsWeights && !graph->parameters.empty()) {
    auto store = ckpt::WeightStore::openFiles({graph->parameters});
    if (!store)
      return llvm::createStringError(
          formatv("{0}: parameters: {1}", path, toString(store.takeError())));
    out.weights = std::move(*store);
  }
  auto module = importGraph(context, *graph, out.weights.get());
  if (!module)
    return module.takeError();
  out.module = std::move(*module);
  return out;
}

llvm::StringRef pimc::fx::unsupportedOpReason(llvm::StringRef qualifiedOp) {
  return detail::unsupportedReason(qualifiedOp);
}
