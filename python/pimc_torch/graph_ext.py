"""Optional additions to the pimc-fx-graph JSON (docs/torch-export-hf.md): validation.

Pure Python (no torch), like graph_format. Readers that do not know these keys ignore them (the
C++ importer and graph_format.validate only look at the keys they read), so a graph that uses them
is still a plain version-1 graph:

- "mutations": module state that the step updates (torch.export's buffer mutations, e.g. a
  StaticCache). Each state tensor is an `input` placeholder and its new value an extra output:
  [{"output": i, "input": "<placeholder>", "buffer": "<module path>",
    "init": "zeros"|"parameters"}].
- "dynamic_dims": symbolic input dimensions torch.export kept:
  [{"input": "<placeholder>", "dim": d, "name": "seq", "symbol": "s70", "range": [lo, hi|null],
    "example": n}]; meta shapes are those of the example.
- symbolic scalar arguments (sizes computed from those dims): {"sym": "2*s70", "example": 16}
  in place of the integer ({"sym", "example", "kind": "float"|"bool"} for a SymFloat/SymBool); graph_format accepts them, replay uses the example, and the C++
  importer evaluates the expression for the sizes it specialises the graph to (`--dim`).
- per node "sym_shape": the meta shape with symbolic dims as expressions over those symbols
  (a list of them for multi-output nodes); only on nodes with a symbolic dim.
- "hf": what `export --hf` built (model_type, class, mode, ...); informational.
"""

import ast
import json

from .graph_format import GraphFormatError

MUTATION_INITS = ("zeros", "parameters")


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


class _Eval(ast.NodeVisitor):
    """Evaluates the integer expressions torch prints for symbolic sizes (s70, s70 + 1,
    ((s70 + 1)//2), Max(1, s70), Mod(s70, 2)) at the example sizes."""

    _BIN = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
            ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
            ast.Mod: lambda a, b: a % b}
    _CALLS = {"Max": max, "Min": min, "Mod": lambda a, b: a % b,
              "FloorDiv": lambda a, b: a // b}

    def __init__(self, env):
        self.env = env

    def generic_visit(self, node):
        raise ValueError("unsupported syntax %s" % type(node).__name__)

    def visit_Expression(self, node):
        return self.visit(node.body)

    def visit_Constant(self, node):
        if not _is_int(node.value):
            raise ValueError("non-integer constant %r" % (node.value,))
        return node.value

    def visit_Name(self, node):
        if node.id not in self.env:
            raise ValueError("unknown symbol '%s'" % node.id)
        return self.env[node.id]

    def visit_UnaryOp(self, node):
        if not isinstance(node.op, ast.USub):
            raise ValueError("unsupported operator")
        return -self.visit(node.operand)

    def visit_BinOp(self, node):
        f = self._BIN.get(type(node.op))
        if f is None:
            raise ValueError("unsupported operator %s" % type(node.op).__name__)
        a, b = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and b == 0:
            raise ValueError("division by zero")
        return f(a, b)

    def visit_Call(self, node):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in self._CALLS or node.keywords or not node.args:
            raise ValueError("unsupported function %s" % (name or "call"))
        return self._CALLS[name](*[self.visit(a) for a in node.args])


def eval_dim(expr, env):
    """The value of a printed symbolic size at `env` ({symbol: int}); ValueError if it is not
    one of the forms _Eval knows."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as e:
        raise ValueError("not an expression: %s" % e.msg)
    return _Eval(env).visit(tree)


def _output_refs(graph):
    return graph["nodes"][-1]["args"][0]


def _meta_by_name(graph):
    return {n["name"]: n.get("meta") for n in graph["nodes"] if n["op"] != "output"}


def _ref_meta(ref, metas):
    m = metas[ref["node"]]
    return m[ref["output"]] if "output" in ref else m


_ST_DTYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "F64": "float64",
              "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8",
              "BOOL": "bool"}


def _check_mutations(graph, where, header):
    muts = graph["mutations"]
    if not isinstance(muts, list):
        raise GraphFormatError("%s: \"mutations\" must be a list" % where)
    inputs = {n["name"]: n for n in graph["nodes"]
              if n["op"] == "placeholder" and n["kind"] == "input"}
    outs = _output_refs(graph)
    metas = _meta_by_name(graph)
    seen_out, seen_in = set(), set()
    for i, m in enumerate(muts):
        w = "%s: mutations[%d]" % (where, i)
        if not isinstance(m, dict) or set(m) != {"output", "input", "buffer", "init"}:
            raise GraphFormatError("%s: must be {\"output\", \"input\", \"buffer\", \"init\"}, "
                                   "got %r" % (w, m))
        o, name = m["output"], m["input"]
        if not _is_int(o) or not 0 <= o < len(outs):
            raise GraphFormatError("%s: output %r is not an index into the %d graph outputs"
                                   % (w, o, len(outs)))
        if name not in inputs:
            raise GraphFormatError("%s: '%s' is not an input placeholder" % (w, name))
        if not isinstance(m["buffer"], str) or not m["buffer"]:
            raise GraphFormatError("%s: \"buffer\" must be the module path of the state" % w)
        if m["init"] not in MUTATION_INITS:
            raise GraphFormatError("%s: init %r is not one of %s"
                                   % (w, m["init"], ", ".join(MUTATION_INITS)))
        if o in seen_out:
            raise GraphFormatError("%s: output %d is already mapped to a state" % (w, o))
        if name in seen_in:
            raise GraphFormatError("%s: input '%s' is already mapped to an output" % (w, name))
        seen_out.add(o)
        seen_in.add(name)
        if m["init"] == "parameters" and header is not None:
            info = header.get(m["buffer"])
            want = inputs[name]["meta"]
            if info is None or (_ST_DTYPES.get(info["dtype"], info["dtype"]), info["shape"]) != \
                    (want["dtype"], want["shape"]):
                raise GraphFormatError("%s: the initial value of '%s' is not in %s as %s %r"
                                       % (w, m["buffer"], graph["parameters"], want["dtype"],
                                          want["shape"]))
        got, want = _ref_meta(outs[o], metas), inputs[name]["meta"]
        if got != want:
            raise GraphFormatError("%s: output %d is %s %r but input '%s' is %s %r"
                                   % (w, o, got["dtype"], got["shape"], name, want["dtype"],
                                      want["shape"]))


def _check_dynamic(graph, where):
    dims = graph.get("dynamic_dims", [])
    if not isinstance(dims, list):
        raise GraphFormatError("%s: \"dynamic_dims\" must be a list" % where)
    inputs = {n["name"]: n for n in graph["nodes"]
              if n["op"] == "placeholder" and n["kind"] == "input"}
    env = {}
    keys = {"input", "dim", "name", "symbol", "range", "example"}
    for i, d in enumerate(dims):
        w = "%s: dynamic_dims[%d]" % (where, i)
        if not isinstance(d, dict) or set(d) != keys:
            raise GraphFormatError("%s: must have exactly the keys %s, got %r"
                                   % (w, ", ".join(sorted(keys)), d))
        node = inputs.get(d["input"])
        if node is None:
            raise GraphFormatError("%s: '%s' is not an input placeholder" % (w, d["input"]))
        shape = node["meta"]["shape"]
        if not _is_int(d["dim"]) or not 0 <= d["dim"] < len(shape):
            raise GraphFormatError("%s: dim %r is not a dimension of '%s' (rank %d)"
                                   % (w, d["dim"], d["input"], len(shape)))
        sym, rng, ex = d["symbol"], d["range"], d["example"]
        if not isinstance(sym, str) or not sym.isidentifier():
            raise GraphFormatError("%s: symbol %r is not a name" % (w, sym))
        if not isinstance(d["name"], str):
            raise GraphFormatError("%s: name must be a string" % w)
        if not (isinstance(rng, list) and len(rng) == 2 and _is_int(rng[0])
                and (rng[1] is None or _is_int(rng[1]))):
            raise GraphFormatError("%s: range must be [min, max] (max an integer or null), got %r"
                                   % (w, rng))
        if not _is_int(ex) or ex != shape[d["dim"]]:
            raise GraphFormatError("%s: example %r is not the traced size %d of '%s' dim %d"
                                   % (w, ex, shape[d["dim"]], d["input"], d["dim"]))
        if ex < rng[0] or (rng[1] is not None and ex > rng[1]):
            raise GraphFormatError("%s: example %d is outside the range %s"
                                   % (w, ex, json.dumps(rng)))
        if sym in env and env[sym] != ex:
            raise GraphFormatError("%s: symbol '%s' has two example sizes" % (w, sym))
        env[sym] = ex
    _check_sym_args(graph, where, env)
    n_sym = 0
    for n in graph["nodes"]:
        if "sym_shape" not in n:
            continue
        w = "%s: node '%s'" % (where, n["name"])
        meta, sym = n.get("meta"), n["sym_shape"]
        pairs = (list(zip(sym, meta)) if isinstance(meta, list) and isinstance(sym, list)
                 and len(sym) == len(meta) else [(sym, meta)] if isinstance(meta, dict) else None)
        if pairs is None:
            raise GraphFormatError("%s: sym_shape does not match the node's outputs" % w)
        for s, m in pairs:
            if not isinstance(s, list) or len(s) != len(m["shape"]):
                raise GraphFormatError("%s: sym_shape %r does not have the rank of shape %r"
                                       % (w, s, m["shape"]))
            for e, size in zip(s, m["shape"]):
                if _is_int(e):
                    v = e
                elif isinstance(e, str):
                    try:
                        v = eval_dim(e, env)
                    except ValueError as err:
                        raise GraphFormatError("%s: sym_shape entry '%s': %s" % (w, e, err))
                else:
                    raise GraphFormatError("%s: sym_shape entry %r is not an int or an expression"
                                           % (w, e))
                if v != size:
                    raise GraphFormatError("%s: sym_shape entry %r is %d at the example, meta "
                                           "says %d" % (w, e, v, size))
        n_sym += 1
    return n_sym


def _sym_args(v):
    if isinstance(v, list):
        for x in v:
            yield from _sym_args(x)
    elif isinstance(v, dict):
        if "sym" in v:
            yield v
        elif "node" not in v:
            for x in v.values():
                yield from _sym_args(x)


def _check_sym_args(graph, where, env):
    """Symbolic scalar arguments ({"sym", "example"}): integer ones must evaluate to their
    example at the example sizes."""
    for n in graph["nodes"]:
        if n["op"] != "call_function":
            continue
        for a in _sym_args([n["args"], n.get("kwargs", {})]):
            w = "%s: node '%s': symbolic argument '%s'" % (where, n["name"], a["sym"])
            if not env:
                raise GraphFormatError("%s: the graph has no \"dynamic_dims\"" % w)
            if "kind" in a:
                continue            # a SymFloat/SymBool: only its example is usable
            try:
                v = eval_dim(a["sym"], env)
            except ValueError:
                continue            # outside the printed forms this checker evaluates
            if v != a["example"]:
                raise GraphFormatError("%s is %d at the example, the graph says %d"
                                       % (w, v, a["example"]))


def validate(graph, where="graph.json", header=None):
    """Check the optional keys of a graph that graph_format.validate already accepted (with
    `header`, the parameters file's safetensors header, also the stored initial states).
    Returns a short summary ("" when the graph has none of them)."""
    parts = []
    if "mutations" in graph:
        _check_mutations(graph, where, header)
        parts.append("%d state tensor(s) updated in place" % len(graph["mutations"]))
    if "dynamic_dims" in graph or any("sym_shape" in n for n in graph["nodes"]):
        n_sym = _check_dynamic(graph, where)
        dims = graph.get("dynamic_dims", [])
        parts.append("dynamic dims: %s; %d node(s) with symbolic shapes" % (
            ", ".join("%s[%d]=%s in %s (example %d)" % (
                d["input"], d["dim"], d["symbol"],
                "[%d, %s]" % (d["range"][0], "inf" if d["range"][1] is None else d["range"][1]),
                d["example"]) for d in dims) or "none", n_sym))
    if "hf" in graph and not isinstance(graph["hf"], dict):
        raise GraphFormatError("%s: \"hf\" must be an object" % where)
    return "; ".join(parts)
