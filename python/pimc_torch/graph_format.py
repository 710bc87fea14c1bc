"""The `pimc-fx-graph` JSON format (docs/frontend-graphs.md section 1): validation, writing.

Pure Python (no torch), so the validator can run anywhere. `validate` is strict: the bridge runs
it on every graph before writing it, and `python3 -m pimc_torch check` runs it on files from
elsewhere. Errors name the file and the node.
"""

import json
import math
import os
import tempfile

FORMAT = "pimc-fx-graph"
VERSION = 1

NODE_OPS = ("placeholder", "call_function", "output")
PLACEHOLDER_KINDS = ("input", "parameter", "buffer", "constant")
DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8",
          "uint8", "bool")
# Constants with at most this many elements are written inline as "value".
INLINE_MAX_ELEMENTS = 64

# Single-key objects that encode a non-JSON argument value.
_TAGGED = ("node", "float", "dtype", "device", "layout", "memory_format", "tensor")
_FLOAT_TAGS = ("inf", "-inf", "nan")


class GraphFormatError(ValueError):
    pass


class ExportError(RuntimeError):
    """A module that cannot be exported (defined here so that the CLI can catch it without
    importing torch)."""


def encode_float(x):
    if math.isnan(x):
        return {"float": "nan"}
    if math.isinf(x):
        return {"float": "inf" if x > 0 else "-inf"}
    return x


def decode_float(v):
    return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[v["float"]]


def _check_meta(m, where):
    if not isinstance(m, dict) or set(m) != {"dtype", "shape"}:
        raise GraphFormatError("%s: meta must be {\"dtype\", \"shape\"}, got %r" % (where, m))
    if m["dtype"] not in DTYPES:
        raise GraphFormatError("%s: unknown dtype %r" % (where, m["dtype"]))
    if not (isinstance(m["shape"], list)
            and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in m["shape"])):
        raise GraphFormatError("%s: shape must be a list of non-negative integers, got %r"
                               % (where, m["shape"]))


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _check_inline_tensor(t, where):
    if not isinstance(t, dict) or set(t) != {"dtype", "shape", "data"}:
        raise GraphFormatError("%s: inline tensor must be {\"dtype\", \"shape\", \"data\"}" % where)
    _check_meta({"dtype": t["dtype"], "shape": t["shape"]}, where)
    data = t["data"]
    if not isinstance(data, list) or len(data) != numel(t["shape"]):
        raise GraphFormatError("%s: inline tensor data has %s elements, shape %r needs %d"
                               % (where, len(data) if isinstance(data, list) else "no",
                                  t["shape"], numel(t["shape"])))
    for x in data:
        ok = (isinstance(x, (int, float)) or
              (isinstance(x, dict) and set(x) == {"float"} and x["float"] in _FLOAT_TAGS))
        if not ok:
            raise GraphFormatError("%s: inline tensor element %r is not a number" % (where, x))


class _Checker:
    def __init__(self, where):
        self.where = where
        self.defined = {}     # node name -> meta (dict, or list for multi-output nodes)

    def value(self, v, node):
        where = "%s: node '%s'" % (self.where, node)
        if v is None or isinstance(v, (bool, int, str)):
            return
        if isinstance(v, float):
            if not math.isfinite(v):
                raise GraphFormatError("%s: non-finite float must be {\"float\": ...}" % where)
            return
        if isinstance(v, list):
            for x in v:
                self.value(x, node)
            return
        if not isinstance(v, dict) or len(v) == 0:
            raise GraphFormatError("%s: argument %r is not an encoded value" % (where, v))
        if "node" in v:
            self.ref(v, node)
            return
        if "sym" in v:
            # A symbolic scalar of a dynamic-shape export (graph_ext: "dynamic_dims").
            kind = v.get("kind", "int")
            ok = {"int": lambda x: isinstance(x, int) and not isinstance(x, bool),
                  "float": lambda x: isinstance(x, (int, float, dict)) and not isinstance(x, bool),
                  "bool": lambda x: isinstance(x, bool)}.get(kind)
            if (not set(v) - {"kind"} == {"sym", "example"} or ok is None
                    or (kind == "int" and "kind" in v) or not isinstance(v["sym"], str)
                    or not v["sym"] or not ok(v["example"])):
                raise GraphFormatError("%s: a symbolic argument is {\"sym\": expression, "
                                       "\"example\": int} or {\"sym\", \"example\", "
                                       "\"kind\": float|bool}, got %r" % (where, v))
            return
        if len(v) != 1 or next(iter(v)) not in _TAGGED:
            raise GraphFormatError("%s: unknown argument encoding %r" % (where, v))
        tag, x = next(iter(v.items()))
        if tag == "float":
            if x not in _FLOAT_TAGS:
                raise GraphFormatError("%s: {\"float\": %r} must be inf, -inf or nan" % (where, x))
        elif tag == "dtype":
            if x not in DTYPES:
                raise GraphFormatError("%s: unknown dtype %r" % (where, x))
        elif tag == "tensor":
            _check_inline_tensor(x, where)
        elif not isinstance(x, str):
            raise GraphFormatError("%s: {\"%s\": ...} must hold a string" % (where, tag))

    def ref(self, v, node):
        where = "%s: node '%s'" % (self.where, node)
        if not set(v) <= {"node", "output"} or not isinstance(v["node"], str):
            raise GraphFormatError("%s: bad node reference %r" % (where, v))
        src = v["node"]
        if src not in self.defined:
            raise GraphFormatError("%s: argument refers to undefined node '%s'" % (where, src))
        meta = self.defined[src]
        if "output" in v:
            i = v["output"]
            if not isinstance(meta, list):
                raise GraphFormatError("%s: output %r of single-output node '%s'" % (where, i, src))
            if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(meta):
                raise GraphFormatError("%s: output %r of node '%s' which has %d outputs"
                                       % (where, i, src, len(meta)))
        elif isinstance(meta, list):
            raise GraphFormatError("%s: reference to multi-output node '%s' needs an output index"
                                   % (where, src))


def validate(graph, where="graph.json"):
    """Check a parsed graph against the format; raise GraphFormatError naming the node."""
    if not isinstance(graph, dict):
        raise GraphFormatError("%s: top level is not a JSON object" % where)
    if graph.get("format") != FORMAT:
        raise GraphFormatError("%s: format is %r, expected %r" % (where, graph.get("format"), FORMAT))
    if graph.get("version") != VERSION:
        raise GraphFormatError("%s: unsupported %s version %r (this reader knows version %d)"
                               % (where, FORMAT, graph.get("version"), VERSION))
    params = graph.get("parameters")
    if not isinstance(params, str) or not params or os.path.basename(params) != params:
        raise GraphFormatError("%s: \"parameters\" must be a file name beside the graph, got %r"
                               % (where, params))
    nodes = graph.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise GraphFormatError("%s: \"nodes\" must be a non-empty list" % where)
    c = _Checker(where)
    keys = {}
    for i, n in enumerate(nodes):
        if not isinstance(n, dict) or not isinstance(n.get("name"), str) or not n["name"]:
            raise GraphFormatError("%s: node #%d has no name" % (where, i))
        name = n["name"]
        w = "%s: node '%s'" % (where, name)
        if name in c.defined:
            raise GraphFormatError("%s: duplicate node name" % w)
        op = n.get("op")
        if op not in NODE_OPS:
            raise GraphFormatError("%s: op %r is not one of %s" % (w, op, ", ".join(NODE_OPS)))
        if op == "output":
            if i != len(nodes) - 1:
                raise GraphFormatError("%s: the output node must be the last node" % w)
            args = n.get("args")
            if not (isinstance(args, list) and len(args) == 1 and isinstance(args[0], list)):
                raise GraphFormatError("%s: output args must be [[refs...]]" % w)
            for r in args[0]:
                if not isinstance(r, dict) or "node" not in r:
                    raise GraphFormatError("%s: output %r is not a node reference" % (w, r))
                c.ref(r, name)
            c.defined[name] = None
            continue
        meta = n.get("meta")
        if op == "placeholder":
            kind = n.get("kind")
            if kind not in PLACEHOLDER_KINDS:
                raise GraphFormatError("%s: placeholder kind %r is not one of %s"
                                       % (w, kind, ", ".join(PLACEHOLDER_KINDS)))
            _check_meta(meta, w)
            if kind == "constant" and "value" in n:
                v = n["value"]
                if not isinstance(v, dict) or set(v) != {"tensor"}:
                    raise GraphFormatError("%s: constant value must be {\"tensor\": ...}" % w)
                _check_inline_tensor(v["tensor"], w)
                if v["tensor"]["dtype"] != meta["dtype"] or v["tensor"]["shape"] != meta["shape"]:
                    raise GraphFormatError("%s: inline value does not match meta" % w)
            elif kind != "input":
                t = n.get("target")
                if not isinstance(t, str) or not t:
                    raise GraphFormatError("%s: %s placeholder needs a \"target\" key" % (w, kind))
                if t in keys and keys[t] != (meta["dtype"], meta["shape"]):
                    raise GraphFormatError("%s: target '%s' used with two different metas" % (w, t))
                keys[t] = (meta["dtype"], meta["shape"])
        else:
            t = n.get("target")
            if not isinstance(t, str) or "." not in t:
                raise GraphFormatError("%s: call_function target must be 'namespace.op', got %r"
                                       % (w, t))
            if not isinstance(n.get("overload"), str) or not n["overload"]:
                raise GraphFormatError("%s: call_function needs an \"overload\"" % w)
            if not isinstance(n.get("args"), list) or not isinstance(n.get("kwargs"), dict):
                raise GraphFormatError("%s: call_function needs \"args\" (list) and \"kwargs\" (object)"
                                       % w)
            c.value(n["args"], name)
            for v in n["kwargs"].values():
                c.value(v, name)
            if isinstance(meta, list):
                if not meta:
                    raise GraphFormatError("%s: empty meta list" % w)
                for m in meta:
                    _check_meta(m, w)
            else:
                _check_meta(meta, w)
            if "stack_trace" in n and not isinstance(n["stack_trace"], str):
                raise GraphFormatError("%s: stack_trace must be a string" % w)
        c.defined[name] = meta
    if nodes[-1].get("op") != "output":
        raise GraphFormatError("%s: the graph has no output node" % where)
    return keys


def check_parameters(graph, header, where):
    """Every non-inline placeholder target must be in the safetensors header with its meta."""
    names = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "F64": "float64",
             "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8",
             "BOOL": "bool"}
    for n in graph["nodes"]:
        if n["op"] != "placeholder" or n["kind"] == "input" or "value" in n:
            continue
        t = n["target"]
        info = header.get(t)
        if info is None:
            raise GraphFormatError("%s: node '%s': '%s' is not in %s"
                                   % (where, n["name"], t, graph["parameters"]))
        got = (names.get(info["dtype"], info["dtype"]), info["shape"])
        if got != (n["meta"]["dtype"], n["meta"]["shape"]):
            raise GraphFormatError("%s: node '%s': '%s' is %s %r in %s, meta says %s %r"
                                   % (where, n["name"], t, got[0], got[1], graph["parameters"],
                                      n["meta"]["dtype"], n["meta"]["shape"]))


def load(path):
    """Read and validate a graph file. Returns the parsed graph."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise GraphFormatError("%s: cannot read: %s" % (path, e.strerror))
    try:
        graph = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise GraphFormatError("%s: not valid JSON: %s" % (path, e))
    validate(graph, path)
    return graph


def dumps(graph):
    """Header fields first, then one node per line: stable, diffable and FileCheck-friendly."""
    def enc(v):
        return json.dumps(v, separators=(", ", ": "), allow_nan=False, ensure_ascii=False)
    head = ",\n ".join("%s: %s" % (enc(k), enc(v)) for k, v in graph.items() if k != "nodes")
    body = ",\n  ".join(enc(n) for n in graph["nodes"])
    return "{%s,\n \"nodes\": [\n  %s\n ]}\n" % (head, body)


class AtomicFiles:
    """Write several files so that either all of them appear under their final names or none.

    Each file is written to a temporary name in the target directory and renamed on commit(); on
    an exception the temporaries are removed and an existing file of the same name is untouched.
    """

    def __init__(self):
        self.pending = []     # (tmp, final)

    def path(self, final):
        d = os.path.dirname(os.path.abspath(final))
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(final) + ".", suffix=".tmp", dir=d)
        os.close(fd)
        # mkstemp makes the file 0600; give it the mode a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        self.pending.append((tmp, final))
        return tmp

    def write(self, final, data):
        tmp = self.path(final)
        with open(tmp, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)

    def commit(self):
        for tmp, final in self.pending:
            os.replace(tmp, final)
        self.pending = []

    def abort(self):
        for tmp, _ in self.pending:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        self.pending = []

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.commit()
        else:
            self.abort()
        return False
