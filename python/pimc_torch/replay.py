"""Replay a pimc-fx-graph with torch's own ATen kernels: the oracle for the exported file.

`check` validates the format, the parameters file and every op's arguments against the ATen
schema (the count of positional arguments, keyword names, required arguments), then runs the
graph node by node on the inputs and compares each node's result with its recorded meta and the
graph outputs with the goldens. A graph that replays to the eager module's outputs carries
everything an importer needs.
"""

import os
import sys

import torch

from . import graph_format as gf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pimc_testgen import safetensors_io as st     # noqa: E402

_DTYPES = {name: getattr(torch, name) for name in gf.DTYPES}


def resolve_op(node, where):
    ns, _, name = node["target"].partition(".")
    try:
        packet = getattr(getattr(torch.ops, ns), name)
        return getattr(packet, node["overload"])
    except (AttributeError, RuntimeError):
        raise gf.GraphFormatError("%s: node '%s': unknown op %s.%s" % (where, node["name"],
                                                                        node["target"], node["overload"]))


def check_schema(op, node, where):
    schema = op._schema
    positional = [a for a in schema.arguments if not a.kwarg_only]
    by_name = {a.name: a for a in schema.arguments}
    args, kwargs = node["args"], node["kwargs"]
    label = "%s: node '%s': %s.%s" % (where, node["name"], node["target"], node["overload"])
    if len(args) > len(positional):
        raise gf.GraphFormatError("%s takes at most %d positional argument(s) (%s), got %d"
                                  % (label, len(positional),
                                     ", ".join(a.name for a in positional), len(args)))
    for k in kwargs:
        if k not in by_name:
            raise gf.GraphFormatError("%s has no argument named '%s'" % (label, k))
        if any(a.name == k for a in positional[:len(args)]):
            raise gf.GraphFormatError("%s: argument '%s' given twice" % (label, k))
    for i, a in enumerate(schema.arguments):
        given = (not a.kwarg_only and i < len(args)) or a.name in kwargs
        if not given and not a.has_default_value():
            raise gf.GraphFormatError("%s: required argument '%s' is missing" % (label, a.name))


def _decode(v, env):
    if isinstance(v, list):
        return [_decode(x, env) for x in v]
    if not isinstance(v, dict):
        return v
    if "node" in v:
        val = env[v["node"]]
        return val[v["output"]] if "output" in v else val
    if "sym" in v:
        return _decode(v["example"], env)     # the graph's example sizes
    tag, x = next(iter(v.items()))
    if tag == "float":
        return gf.decode_float(v)
    if tag == "dtype":
        return _DTYPES[x]
    if tag == "device":
        return torch.device(x)
    if tag == "layout":
        return getattr(torch, x)
    if tag == "memory_format":
        return getattr(torch, x)
    if tag == "tensor":
        return tensor_of(x)
    raise AssertionError("validated value %r" % v)


def tensor_of(t):
    data = [gf.decode_float(x) if isinstance(x, dict) else x for x in t["data"]]
    return torch.tensor(data, dtype=_DTYPES[t["dtype"]]).reshape(t["shape"])


def _matches_meta(value, meta):
    def one(t, m):
        return (isinstance(t, torch.Tensor) and str(t.dtype) == "torch." + m["dtype"]
                and list(t.shape) == m["shape"])
    if isinstance(meta, list):
        return (isinstance(value, (tuple, list)) and len(value) == len(meta)
                and all(one(t, m) for t, m in zip(value, meta)))
    return one(value, meta)


def _load_st(path, what):
    try:
        tensors, _ = st.load_file(path)
    except OSError as e:
        raise gf.GraphFormatError("%s: cannot read %s: %s" % (path, what, e.strerror))
    except st.SafetensorsError as e:
        raise gf.GraphFormatError("%s: bad %s: %s" % (path, what, e))
    return tensors


def check(json_path, graph, inputs=None, expect=None, atol=1e-5, rtol=1e-5, schema_only=False):
    d = os.path.dirname(os.path.abspath(json_path))
    params = _load_st(os.path.join(d, graph["parameters"]), "parameters")
    gf.check_parameters(graph, {k: {"dtype": st.dtype_name(t), "shape": list(t.shape)}
                                for k, t in params.items()}, json_path)
    ops = {}
    for n in graph["nodes"]:
        if n["op"] == "call_function":
            op = resolve_op(n, json_path)
            check_schema(op, n, json_path)
            ops[n["name"]] = op
    n_ops = len(ops)
    summary = "%s: valid, %d nodes, %d ops" % (json_path, len(graph["nodes"]), n_ops)
    if schema_only:
        return summary
    inputs = inputs or os.path.join(d, "inputs.safetensors")
    expect = expect or os.path.join(d, "outputs.safetensors")
    if not os.path.exists(inputs):
        return summary + " (no inputs.safetensors: not replayed)"
    given = _load_st(inputs, "inputs")
    env, n_in = {}, 0
    for n in graph["nodes"]:
        name = n["name"]
        if n["op"] == "placeholder":
            if n["kind"] == "input":
                key = "input_%d" % n_in
                n_in += 1
                if key not in given:
                    raise gf.GraphFormatError("%s: no %s for input '%s'" % (inputs, key, name))
                env[name] = given[key]
            elif "value" in n:
                env[name] = tensor_of(n["value"]["tensor"])
            else:
                env[name] = params[n["target"]]
            if not _matches_meta(env[name], n["meta"]):
                raise gf.GraphFormatError("%s: node '%s': value is %s %s, meta says %s %s"
                                          % (json_path, name, env[name].dtype,
                                             list(env[name].shape), n["meta"]["dtype"],
                                             n["meta"]["shape"]))
        elif n["op"] == "call_function":
            try:
                with torch.no_grad():
                    env[name] = ops[name](*_decode(n["args"], env),
                                          **{k: _decode(v, env) for k, v in n["kwargs"].items()})
            except Exception as e:
                raise gf.GraphFormatError("%s: node '%s' (%s.%s) fails to run: %s"
                                          % (json_path, name, n["target"], n["overload"], e))
            if not _matches_meta(env[name], n["meta"]):
                raise gf.GraphFormatError("%s: node '%s' (%s): result does not match its meta %r"
                                          % (json_path, name, n["target"], n["meta"]))
        else:
            outs = [_decode(r, env) for r in n["args"][0]]
    summary += ", replayed on %s" % os.path.basename(inputs)
    if not os.path.exists(expect):
        return summary
    return summary + ", " + compare(outs, expect, atol, rtol)


def compare(outs, expect, atol, rtol):
    """Compare a list of tensors with output_0.. of a safetensors file; a summary or an error."""
    want = _load_st(expect, "expected outputs")
    if len(want) != len(outs):
        raise gf.GraphFormatError("%d outputs, %s has %d" % (len(outs), expect, len(want)))
    worst = 0.0
    for i, got in enumerate(outs):
        w = want.get("output_%d" % i)
        if w is None:
            raise gf.GraphFormatError("%s: no output_%d" % (expect, i))
        if list(w.shape) != list(got.shape) or w.dtype != got.dtype:
            raise gf.GraphFormatError("output %d: got %s %s, expected %s %s" % (
                i, got.dtype, list(got.shape), w.dtype, list(w.shape)))
        g64, w64 = got.double(), w.double()
        # isclose: equal infinities match, NaN matches only NaN.
        bad = ~torch.isclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True)
        both_finite = torch.isfinite(g64) & torch.isfinite(w64)
        err = torch.where(both_finite, (g64 - w64).abs(), torch.zeros_like(g64))
        if bad.any():
            raise gf.GraphFormatError("output %d: %d of %d elements differ (max abs error %.3g, "
                                      "atol %g rtol %g)" % (i, int(bad.sum()), bad.numel(),
                                                            float(err.max()), atol, rtol))
        if err.numel():
            worst = max(worst, float(err.max()))
    return "%d output(s) match %s (max abs error %.3g)" % (len(outs), os.path.basename(expect),
                                                           worst)


def compare_files(got_path, expect, atol, rtol):
    got = _load_st(got_path, "outputs")
    outs = []
    for i in range(len(got)):
        if "output_%d" % i not in got:
            raise gf.GraphFormatError("%s: no output_%d" % (got_path, i))
        outs.append(got["output_%d" % i])
    return "%s: %s" % (got_path, compare(outs, expect, atol, rtol))
