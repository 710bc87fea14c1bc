//===- FXSymbolic.cpp - specialise a symbolic-shape graph to sizes --------===//
//
// torch.export keeps a symbolic sequence length (`Dim("seq")`, printed as a
// symbol such as s70) and the bridge records it: "dynamic_dims" (the input
// dims, their ranges and the example), "sym_shape" per node (the shape as
// expressions over the symbols) and {"sym", "example"} arguments (sizes
// computed from them). llm ops are static-shaped, so the importer specialises
// the JSON to one size per symbol before reading it, checking the record
// against the example, and the function keeps the constraint
// (#llm.symbolic_dim). See docs/torch-export-hf.md, "Symbolic sizes".
//
//===----------------------------------------------------------------------===//
#include "pimc/Frontend/FX/FXImporter.h"
#include "pimc/Support/JSONFields.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

using namespace llvm;
using namespace pimc;
using namespace pimc::fx;

namespace {

//===----------------------------------------------------------------------===//
// Size expressions
//===----------------------------------------------------------------------===//

/// Recursive descent over the expressions torch prints for sizes:
///   expr  := term (('+' | '-') term)*
///   term  := unary (('*' | '//' | '%') unary)*
///   unary := '-' unary | atom
///   atom  := INT | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')'
class SizeExpr {
public:
  SizeExpr(StringRef text, const StringMap<int64_t> &env)
      : text(text), env(env) {}

  Expected<int64_t> evaluate() {
    std::optional<int64_t> v = expr();
    skipSpace();
    if (v && pos != text.size())
      fail(formatv("unexpected '{0}' at offset {1}", text[pos], pos));
    if (!error.empty())
      return createStringError(error);
    return *v;
  }

private:
  static constexpr unsigned kMaxDepth = 64;
  StringRef text;
  const StringMap<int64_t> &env;
  size_t pos = 0;
  unsigned depth = 0;
  std::string error;

  std::nullopt_t fail(const Twine &msg) {
    if (error.empty())
      error = msg.str();
    return std::nullopt;
  }
  void skipSpace() {
    while (pos < text.size() && text[pos] == ' ')
      ++pos;
  }
  bool eat(StringRef tok) {
    skipSpace();
    if (!text.substr(pos).starts_with(tok))
      return false;
    pos += tok.size();
    return true;
  }

  std::optional<int64_t> expr();
  std::optional<int64_t> term();
  std::optional<int64_t> unary();
  std::optional<int64_t> atom();
  std::optional<int64_t> call(StringRef name);
  std::optional<int64_t> binary(char op, int64_t a, int64_t b);
};

std::optional<int64_t> SizeExpr::binary(char op, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (op) {
  case '+':
    if (AddOverflow(a, b, r))
      return fail("integer overflow");
    return r;
  case '-':
    if (SubOverflow(a, b, r))
      return fail("integer overflow");
    return r;
  case '*':
    if (MulOverflow(a, b, r))
      return fail("integer overflow");
    return r;
  default: // '/' (floor division) and '%' (modulo), Python semantics
    if (b == 0)
      return fail("division by zero");
    if (a == std::numeric_limits<int64_t>::min() && b == -1)
      return fail("integer overflow");
    int64_t q = a / b, m = a % b;
    if (m != 0 && ((m < 0) != (b < 0))) {
      --q;
      m += b;
    }
    return op == '/' ? q : m;
  }
}

std::optional<int64_t> SizeExpr::expr() {
  if (++depth > kMaxDepth)
    return fail(formatv("nested deeper than {0}", kMaxDepth));
  std::optional<int64_t> v = term();
  while (v) {
    char op = eat("+") ? '+' : eat("-") ? '-' : 0;
    if (!op)
      break;
    std::optional<int64_t> rhs = term();
    v = rhs ? binary(op, *v, *rhs) : std::nullopt;
  }
  --depth;
  return v;
}

std::optional<int64_t> SizeExpr::term() {
  std::optional<int64_t> v = unary();
  while (v) {
    char op = eat("*") ? '*' : eat("//") ? '/' : eat("%") ? '%' : 0;
    if (!op)
      break;
    std::optional<int64_t> rhs = unary();
    v = rhs ? binary(op, *v, *rhs) : std::nullopt;
  }
  return v;
}

std::optional<int64_t> SizeExpr::unary() {
  if (!eat("-"))
    return atom();
  if (++depth > kMaxDepth)
    return fail(formatv("nested deeper than {0}", kMaxDepth));
  std::optional<int64_t> v = unary();
  --depth;
  return v ? binary('-', 0, *v) : std::nullopt;
}

std::optional<int64_t> SizeExpr::atom() {
  skipSpace();
  if (pos >= text.size())
    return fail("unexpected end of expression");
  if (eat("(")) {
    std::optional<int64_t> v = expr();
    if (v && !eat(")"))
      return fail(formatv("expected ')' at offset {0}", pos));
    return v;
  }
  char c = text[pos];
  if (isDigit(c)) {
    size_t start = pos;
    while (pos < text.size() && isDigit(text[pos]))
      ++pos;
    int64_t v;
    if (text.slice(start, pos).getAsInteger(10, v))
      return fail(
          formatv("integer '{0}' is too large", text.slice(start, pos)));
    return v;
  }
  if (isAlpha(c) || c == '_') {
    size_t start = pos;
    while (pos < text.size() && (isAlnum(text[pos]) || text[pos] == '_'))
      ++pos;
    StringRef name = text.slice(start, pos);
    if (eat("("))
      return call(name);
    auto it = env.find(name);
    if (it == env.end())
      return fail(formatv("unknown symbol '{0}'", name));
    return it->second;
  }
  return fail(formatv("unexpected '{0}' at offset {1}", c, pos));
}

std::optional<int64_t> SizeExpr::call(StringRef name) {
  if (!is_contained(ArrayRef<StringRef>{"Max", "Min", "Mod", "FloorDiv"}, name))
    return fail(formatv("unsupported function '{0}'", name));
  SmallVector<int64_t, 4> args;
  do {
    std::optional<int64_t> v = expr();
    if (!v)
      return std::nullopt;
    args.push_back(*v);
  } while (eat(","));
  if (!eat(")"))
    return fail(formatv("expected ')' after the arguments of {0}", name));
  if (name == "Max")
    return *llvm::max_element(args);
  if (name == "Min")
    return *llvm::min_element(args);
  if (args.size() != 2)
    return fail(formatv("{0} takes 2 arguments, got {1}", name, args.size()));
  return binary(name == "Mod" ? '%' : '/', args[0], args[1]);
}

//===----------------------------------------------------------------------===//
// Specialisation of the graph's JSON
//===----------------------------------------------------------------------===//

class Specialiser {
public:
  Specialiser(json::Object &top, const DimBindings &requested)
      : top(top), requested(requested) {}

  Error run();
  std::vector<DynamicDim> dims;

private:
  json::Object &top;
  const DimBindings &requested;
  StringMap<int64_t> exampleEnv, env; // symbol -> size
  bool atExample = true;              // every symbol keeps its example
  /// Per dim, the meta shape of the input placeholder it names (the first
  /// input placeholder of that name: the structural parser, which runs
  /// after, rejects duplicate names).
  std::vector<json::Array *> inputShapes;

  Error readDims(json::Array &nodes);
  Error bind();
  Error specialiseShape(json::Value &meta, const json::Value &symShape,
                        StringRef node);
  Error specialiseArgs(json::Value &v, StringRef node);
};

Error problem(const Twine &msg) { return createStringError(msg.str()); }

std::string rangeText(const DynamicDim &d) {
  return formatv("[{0}, {1}]", d.min, d.max ? std::to_string(*d.max) : "inf");
}

Error Specialiser::readDims(json::Array &nodes) {
  StringMap<std::pair<unsigned, json::Array *>> inputs; // arg, shape
  unsigned arg = 0;
  for (json::Value &n : nodes) {
    json::Object *o = n.getAsObject();
    if (o && o->getString("op") == "placeholder" &&
        o->getString("kind") == "input") {
      json::Object *meta = o->getObject("meta");
      json::Array *shape = meta ? meta->getArray("shape") : nullptr;
      if (std::optional<StringRef> name = o->getString("name"))
        inputs.try_emplace(*name, arg, shape);
      ++arg;
    }
  }
  JSONFieldStyle style;
  style.error = [](StringRef path, const Twine &what) {
    return problem(path + ": " + what);
  };
  style.showValues = true;
  JSONFields fields(top, "", style);
  Expected<const json::Array *> list = fields.array("dynamic_dims", required);
  if (!list)
    return list.takeError();
  for (size_t i = 0; i < (*list)->size(); ++i) {
    std::string where = jsonIndexPath("dynamic_dims", i);
    Expected<JSONFields> o = JSONFields::of((**list)[i], where, style);
    if (!o)
      return o.takeError();
    if (Error e = o->checkKeys(
            {"input", "dim", "name", "symbol", "range", "example"}))
      return e;
    StringRef input, name, symbol;
    int64_t dim = 0, example = 0;
    const json::Array *range = nullptr; // [min, max], null for no max
    PIMC_ASSIGN_OR_RETURN(input, o->string("input", required));
    PIMC_ASSIGN_OR_RETURN(dim, o->integer("dim", required));
    PIMC_ASSIGN_OR_RETURN(name, o->string("name", required));
    PIMC_ASSIGN_OR_RETURN(symbol, o->string("symbol", required));
    PIMC_ASSIGN_OR_RETURN(example, o->integer("example", required));
    PIMC_ASSIGN_OR_RETURN(range, o->array("range", required));
    DynamicDim d;
    std::optional<int64_t> lo;
    if (range->size() == 2) {
      lo = (*range)[0].getAsInteger();
      if (std::optional<int64_t> hi = (*range)[1].getAsInteger())
        d.max = *hi;
      else if (!(*range)[1].getAsNull())
        lo.reset();
    }
    if (!lo)
      return problem(formatv("{0}.range: must be [min, max|null], got {1}",
                             where, *o->value("range")));
    if (name.empty() || symbol.empty())
      return problem(where + ": \"name\" and \"symbol\" must not be empty");
    auto in = inputs.find(input);
    if (in == inputs.end())
      return problem(
          formatv("{0}: '{1}' is not an input placeholder", where, input));
    json::Array *shape = in->second.second;
    if (!shape || dim < 0 || dim >= static_cast<int64_t>(shape->size()))
      return problem(formatv("{0}: dim {1} is not a dimension of '{2}'", where,
                             dim, input));
    if ((*shape)[dim].getAsInteger() != example)
      return problem(formatv("{0}: example {1} is not the traced size of "
                             "'{2}' dim {3}",
                             where, example, input, dim));
    d.input = input.str(), d.argIndex = in->second.first, d.dim = dim;
    d.name = name.str(), d.symbol = symbol.str(), d.min = *lo;
    d.example = d.value = example;
    if (d.min < 0 || (d.max && *d.max < d.min))
      return problem(formatv("{0}: the range {1} is empty or negative", where,
                             rangeText(d)));
    if (d.example < d.min || (d.max && d.example > *d.max))
      return problem(formatv("{0}: example {1} is outside the range {2}", where,
                             d.example, rangeText(d)));
    auto [it, fresh] = exampleEnv.try_emplace(d.symbol, d.example);
    if (!fresh && it->second != d.example)
      return problem(
          formatv("{0}: symbol '{1}' has two example sizes", where, d.symbol));
    dims.push_back(std::move(d));
    inputShapes.push_back(shape);
  }
  return Error::success();
}

Error Specialiser::bind() {
  for (const auto &kv : requested) {
    bool found = false;
    for (DynamicDim &d : dims) {
      if (d.name != kv.getKey() && d.symbol != kv.getKey())
        continue;
      found = true;
      if (kv.getValue() < d.min || (d.max && kv.getValue() > *d.max))
        return problem(formatv("--dim {0}={1}: outside the range {2} of "
                               "'{3}' dim {4}",
                               kv.getKey(), kv.getValue(), rangeText(d),
                               d.input, d.dim));
      d.value = kv.getValue();
    }
    if (!found) {
      std::string known;
      for (const DynamicDim &d : dims)
        known += (known.empty() ? "" : ", ") + d.name + " (" + d.symbol + ")";
      return problem(
          formatv("--dim {0}: the graph has no symbolic dim of "
                  "that name{1}",
                  kv.getKey(),
                  known.empty() ? " (it is static)" : "; it has " + known));
    }
  }
  for (const DynamicDim &d : dims) {
    auto [it, fresh] = env.try_emplace(d.symbol, d.value);
    if (!fresh && it->second != d.value)
      return problem(formatv("--dim: symbol '{0}' is given two sizes, {1} "
                             "and {2}",
                             d.symbol, it->second, d.value));
    atExample &= d.value == d.example;
  }
  return Error::success();
}

Error Specialiser::specialiseShape(json::Value &meta,
                                   const json::Value &symShape,
                                   StringRef node) {
  json::Array *metas = meta.getAsArray();
  const json::Array *syms = symShape.getAsArray();
  SmallVector<std::pair<json::Value *, const json::Value *>> pairs;
  if (metas && syms && metas->size() == syms->size()) {
    for (size_t i = 0; i < metas->size(); ++i)
      pairs.push_back({&(*metas)[i], &(*syms)[i]});
  } else if (meta.getAsObject()) {
    pairs.push_back({&meta, &symShape});
  }
  if (pairs.empty())
    return problem(formatv("node '{0}': sym_shape does not match the node's "
                           "outputs",
                           node));
  for (auto [m, s] : pairs) {
    json::Object *mo = m->getAsObject();
    json::Array *shape = mo ? mo->getArray("shape") : nullptr;
    const json::Array *entries = s->getAsArray();
    if (!shape || !entries || shape->size() != entries->size())
      return problem(formatv("node '{0}': sym_shape does not have the rank "
                             "of its meta shape",
                             node));
    for (size_t i = 0; i < entries->size(); ++i) {
      const json::Value &e = (*entries)[i];
      if (std::optional<int64_t> fixed = e.getAsInteger()) {
        if ((*shape)[i].getAsInteger() != fixed)
          return problem(formatv("node '{0}': sym_shape entry {1} differs "
                                 "from its meta shape",
                                 node, *fixed));
        continue;
      }
      std::optional<StringRef> text = e.getAsString();
      if (!text)
        return problem(formatv("node '{0}': sym_shape entries are integers "
                               "or expressions",
                               node));
      Expected<int64_t> ex = evaluateSizeExpr(*text, exampleEnv);
      if (!ex)
        return problem(formatv("node '{0}': sym_shape entry '{1}': {2}", node,
                               *text, toString(ex.takeError())));
      if ((*shape)[i].getAsInteger() != *ex)
        return problem(formatv("node '{0}': sym_shape entry '{1}' is {2} at "
                               "the example, meta says {3}",
                               node, *text, *ex, (*shape)[i]));
      Expected<int64_t> v = evaluateSizeExpr(*text, env);
      if (!v)
        return v.takeError(); // evaluates at the example: only overflow
      if (*v < 0)
        return problem(formatv("node '{0}': sym_shape entry '{1}' is {2} at "
                               "the requested sizes",
                               node, *text, *v));
      (*shape)[i] = *v;
    }
  }
  return Error::success();
}

Error Specialiser::specialiseArgs(json::Value &v, StringRef node) {
  if (json::Array *a = v.getAsArray()) {
    for (json::Value &e : *a)
      if (Error err = specialiseArgs(e, node))
        return err;
    return Error::success();
  }
  json::Object *o = v.getAsObject();
  if (!o || o->get("node"))
    return Error::success();
  const json::Value *sym = o->get("sym");
  if (!sym) {
    for (auto &kv : *o)
      if (Error err = specialiseArgs(kv.second, node))
        return err;
    return Error::success();
  }
  std::optional<StringRef> text = sym->getAsString();
  const json::Value *example = o->get("example");
  // "kind": float or bool for a SymFloat / SymBool; absent for a size.
  std::optional<StringRef> kind = o->getString("kind");
  if (!text || !example || o->size() != (kind ? 3u : 2u))
    return problem(formatv("node '{0}': a symbolic argument is {{\"sym\": "
                           "expression, \"example\": value[, \"kind\"]}",
                           node));
  if (dims.empty())
    return problem(formatv("node '{0}': symbolic argument '{1}' but the "
                           "graph has no \"dynamic_dims\"",
                           node, *text));
  std::optional<int64_t> exampleInt =
      kind ? std::nullopt : example->getAsInteger();
  Expected<int64_t> atExampleValue = evaluateSizeExpr(*text, exampleEnv);
  if (exampleInt && atExampleValue && *atExampleValue != *exampleInt)
    return problem(formatv("node '{0}': symbolic argument '{1}' is {2} at the "
                           "example, the graph says {3}",
                           node, *text, *atExampleValue, *exampleInt));
  if (atExample) {
    // The graph was traced at these sizes: the example is the value, even
    // for expressions outside the forms evaluateSizeExpr knows.
    consumeError(atExampleValue.takeError());
    json::Value value = *example;
    v = std::move(value);
    return Error::success();
  }
  if (!exampleInt)
    return problem(formatv("node '{0}': symbolic argument '{1}' is not an "
                           "integer size; the graph can only be imported at "
                           "its example sizes",
                           node, *text));
  if (!atExampleValue)
    return problem(formatv("node '{0}': symbolic argument '{1}' cannot be "
                           "evaluated ({2}); the graph can only be imported "
                           "at its example sizes",
                           node, *text, toString(atExampleValue.takeError())));
  Expected<int64_t> value = evaluateSizeExpr(*text, env);
  if (!value)
    return problem(formatv("node '{0}': symbolic argument '{1}': {2}", node,
                           *text, toString(value.takeError())));
  v = *value;
  return Error::success();
}

Error Specialiser::run() {
  json::Array *nodes = top.getArray("nodes");
  if (!nodes)
    return Error::success(); // the structural parser reports it
  if (top.get("dynamic_dims"))
    if (Error err = readDims(*nodes))
      return err;
  if (Error err = bind())
    return err;
  for (json::Value &n : *nodes) {
    json::Object *o = n.getAsObject();
    if (!o)
      continue;
    StringRef name = o->getString("name").value_or("?");
    if (const json::Value *symShape = o->get("sym_shape")) {
      json::Value *meta = o->get("meta");
      if (dims.empty() || !meta)
        return problem(formatv("node '{0}': sym_shape without {1}", name,
                               dims.empty() ? "\"dynamic_dims\"" : "meta"));
      if (Error err = specialiseShape(*meta, *symShape, name))
        return err;
    }
    for (StringRef key : {"args", "kwargs"})
      if (json::Value *v = o->get(key))
        if (Error err = specialiseArgs(*v, name))
          return err;
  }
  // An input without a sym_shape still gets its dims set (its rank was
  // checked in readDims, and sym_shape keeps a meta shape's rank).
  for (size_t i = 0; i < dims.size(); ++i)
    if (static_cast<size_t>(dims[i].dim) < inputShapes[i]->size())
      (*inputShapes[i])[dims[i].dim] = dims[i].value;
  return Error::success();
}

} // namespace

Expected<int64_t> pimc::fx::evaluateSizeExpr(StringRef expr,
                                             const StringMap<int64_t> &env) {
  if (expr.size() > 4096)
    return createStringError("expression longer than 4096 characters");
  return SizeExpr(expr, env).evaluate();
}

Expected<std::vector<DynamicDim>>
pimc::fx::specialiseGraph(json::Value &root, StringRef path,
                          const DimBindings &dims) {
  json::Object *top = root.getAsObject();
  if (!top) {
    if (dims.empty())
      return std::vector<DynamicDim>(); // the structural parser reports it
    return createStringError(formatv("{0}: not a graph", path));
  }
  Specialiser s(*top, dims);
  if (Error err = s.run())
    return createStringError(
        formatv("{0}: {1}", path, toString(std::move(err))));
  return std::move(s.dims);
}
