"""Trace a torch.nn.Module to ATen ops and write the pimc-fx-graph JSON + safetensors.

Tracer: `torch.export` (post-autograd ATen, run_decompositions with an empty table, or torch's
core ATen table); the fallback `make_fx(functionalize(f), tracing_mode="real")` calls the module
through `functional_call`, so every parameter and buffer is a graph input that we can name by
its state_dict key. functionalize removes in-place ops
(`index_add_` becomes `index_add`), as torch.export does, so both tracers hand the importer a
pure graph. Tensors the tracer captures (`_tensor_constant0`) become `constant` placeholders.
"""

import inspect
import json
import linecache
import os
import re
import sys
import sysconfig
import traceback
import warnings

import torch
import torch.fx
import torch.utils._pytree as pytree

from . import graph_format as gf
from . import graph_ext
from .graph_format import ExportError

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pimc_testgen import safetensors_io as st     # noqa: E402

# Value no-ops in a functional graph: dropped, their uses read their input instead.
NO_OP_TARGETS = {"aten.detach", "aten.alias", "aten.lift_fresh"}
# Shape assertions torch.export inserts; they return None and compute nothing.
ASSERT_TARGETS = {"aten._assert_async", "aten._assert_scalar", "aten._assert_tensor_metadata",
                  "aten.sym_constrain_range_for_size", "aten.sym_constrain_range"}


def has_torch_export():
    if not hasattr(torch, "export") and not _try_import("torch.export"):
        return False
    return hasattr(torch.export, "export")


def _try_import(name):
    try:
        __import__(name)
        return True
    except ImportError:
        return False


def _torch_version():
    parts = re.match(r"(\d+)\.(\d+)", torch.__version__)
    return (int(parts.group(1)), int(parts.group(2))) if parts else (0, 0)


def dtype_name(dt):
    return str(dt).replace("torch.", "")


def _example_int(v, node_name):
    """A size or scalar that may be symbolic (torch.export with dynamic dims) at the example:
    the graph's shapes and integer arguments are those of the traced example."""
    if isinstance(v, (torch.SymInt, torch.SymBool, torch.SymFloat)):
        hint = v.node.hint
        if hint is None:
            raise ExportError("node '%s': the size %s depends on tensor data (unbacked symbol), "
                              "it has no example value" % (node_name, v))
        return type(hint)(hint)
    return v


def _encode_sym(v, node_name):
    """A symbolic scalar argument: {"sym": expression over the dynamic dims' symbols,
    "example": its value at the example}; the importer evaluates the expression for the sizes it
    specialises the graph to (docs/torch-export-hf.md, "Symbolic sizes")."""
    example = _example_int(v, node_name)
    expr = str(v)
    try:
        example = int(example) if isinstance(v, torch.SymInt) else example
        if isinstance(v, torch.SymInt) and str(int(expr)) == expr:
            return example          # a symbolic int that is a constant
    except ValueError:
        pass
    if isinstance(v, torch.SymInt):
        return {"sym": expr, "example": example}
    kind = "float" if isinstance(v, torch.SymFloat) else "bool"
    example = gf.encode_float(float(example)) if kind == "float" else bool(example)
    return {"sym": expr, "example": example, "kind": kind}


def _meta_of(value, node_name):
    if isinstance(value, torch.Tensor):
        name = dtype_name(value.dtype)
        if name not in gf.DTYPES:
            raise ExportError("node '%s': dtype %s is not supported by the graph format"
                              % (node_name, name))
        return {"dtype": name, "shape": [int(_example_int(d, node_name)) for d in value.shape]}
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return [_meta_of(v, node_name) for v in value]
    raise ExportError("node '%s': produces %s, not a tensor or a tuple of tensors (data-dependent "
                      "Python scalars such as .item() cannot be exported)"
                      % (node_name, type(value).__name__))


def _sym_shape_of(value):
    """The shape with symbolic dims as torch prints them (s70, s70 + 1), or None if static."""
    if isinstance(value, torch.Tensor):
        if not any(isinstance(d, torch.SymInt) for d in value.shape):
            return None
        return [str(d) if isinstance(d, torch.SymInt) else int(d) for d in value.shape]
    if isinstance(value, (tuple, list)):
        shapes = [_sym_shape_of(v) for v in value]
        if all(s is None for s in shapes):
            return None
        return [s if s is not None else [int(d) for d in v.shape] for s, v in zip(shapes, value)]
    return None


def _inline_tensor(t):
    t = t.detach().cpu()
    data = t.reshape(-1).tolist()
    if t.is_floating_point():
        data = [gf.encode_float(float(x)) for x in data]
    return {"dtype": dtype_name(t.dtype), "shape": list(t.shape), "data": data}


# ---------------------------------------------------------------------------------------------
# Stack traces: the user frames (model code) of the call that created a node, innermost first,
# as 'File "models.py", line 40, in forward\n    q = self.q_proj(x)'. Paths under the model's
# own directory are relative to it so that goldens do not depend on where the tree is checked out.

try:
    import functorch
    _FRAMEWORK = [torch, functorch]
except ImportError:
    _FRAMEWORK = [torch]
_NOT_USER_DIRS = tuple([os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in _FRAMEWORK]
                       + [sysconfig.get_paths()["stdlib"] + os.sep])
_THIS_DIR = os.path.dirname(os.path.abspath(__file__))
_BRIDGE_FILES = {os.path.join(_THIS_DIR, f)
                 for f in ("exporter.py", "cli.py", "__main__.py", "hf_export.py")}


def _is_user_file(path):
    if path.startswith("<"):        # <string>, <frozen ...>
        return False
    path = os.path.abspath(path)
    return not (path.startswith(_NOT_USER_DIRS) or path in _BRIDGE_FILES)


def _format_frames(frames, root):
    out = []
    for path, lineno, func, line in frames:
        shown = path
        if root and os.path.abspath(path).startswith(root + os.sep):
            shown = os.path.relpath(os.path.abspath(path), root)
        entry = 'File "%s", line %d, in %s' % (shown, lineno, func)
        if line:
            entry += "\n    " + line.strip()
        out.append(entry)
    return "\n".join(out) if out else None


def _user_stack(root):
    frames = []
    f = sys._getframe(1)
    while f is not None:
        path = f.f_code.co_filename
        if f.f_code.co_name == "_call_functional" and os.path.abspath(path) in _BRIDGE_FILES:
            break       # everything above is the bridge and its caller, not the model
        if _is_user_file(path):
            frames.append((path, f.f_lineno, f.f_code.co_name,
                           linecache.getline(path, f.f_lineno)))
        f = f.f_back
    return _format_frames(frames, root)


_TB_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (.+)$')


def _normalise_stack_trace(text, root):
    """torch.export's traceback text (outermost first) to the bridge's form (innermost first)."""
    if not text:
        return None
    frames = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _TB_FRAME.match(line)
        if not m:
            continue
        code = lines[i + 1] if i + 1 < len(lines) and not _TB_FRAME.match(lines[i + 1]) else ""
        if _is_user_file(m.group(1)):
            frames.append((m.group(1), int(m.group(2)), m.group(3), code))
    return _format_frames(list(reversed(frames)), root)


# ---------------------------------------------------------------------------------------------
# Tracing. Both tracers produce a _Traced: an FX graph, what each placeholder is, the value each
# node computes (for meta), the tensors to store and the stack trace of each node.

class _Placeholder:
    def __init__(self, kind, name, target=None, tensor=None):
        self.kind, self.name, self.target, self.tensor = kind, name, target, tensor


class _Traced:
    def __init__(self, tracer, graph, placeholders, values, outputs, stack):
        self.tracer = tracer
        self.graph = graph                  # torch.fx.Graph
        self.placeholders = placeholders    # fx.Node -> _Placeholder (placeholders and get_attr)
        self.values = values                # fx.Node -> traced value (tensor or tuple) or meta
        self.outputs = outputs              # list of fx.Node (user outputs, flattened)
        self.stack = stack                  # fx.Node -> str or None
        self.n_user_outputs = len(outputs)  # outputs after these are updated state
        self.mutations = []                 # (output index, placeholder fx.Node, buffer path)
        self.dynamic_dims = []              # (placeholder fx.Node, dim, Dim name, range)
        self.specialised = False            # values are the example's (data-dependent sizes)


def _tensor_slots(module):
    """(qualified name, tensor, kind) of every parameter and buffer, aliases included, in
    state_dict order. Tied weights (one tensor under two names) appear once per name."""
    out = []

    def walk(m, prefix):
        for n, p in m._parameters.items():
            if p is not None:
                out.append((prefix + n, p, "parameter"))
        for n, b in m._buffers.items():
            if b is not None:
                out.append((prefix + n, b, "buffer"))
        for n, c in m._modules.items():
            if c is not None:
                walk(c, prefix + n + ".")
    walk(module, "")
    return out


def _safe_name(key):
    return re.sub(r"[^0-9A-Za-z_]", "_", key)


class _RecordingInterpreter(torch.fx.Interpreter):
    """Runs the traced graph and keeps each node's dtype and shape (as a tensor on the meta
    device, so that intermediate values are freed as usual) and the outputs' values."""

    def __init__(self, gm, keep):
        super().__init__(gm)
        self.keep = keep
        self.values = {}

    def run_node(self, n):
        v = super().run_node(n)
        if n in self.keep:
            self.values[n] = v
        else:
            self.values[n] = pytree.tree_map(
                lambda t: torch.empty(t.shape, dtype=t.dtype, device="meta")
                if isinstance(t, torch.Tensor) else t, v)
        return v


def _user_location(exc, root):
    """' at File "m.py", line N, in f' for the innermost model frame of an exception."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _is_user_file(f.filename)]
    if not frames:
        return ""
    f = frames[-1]
    text = _format_frames([(f.filename, f.lineno, f.name, f.line)], root)
    return " at " + text.replace("\n    ", ": ")


def _trace_make_fx(module, inputs, input_names, root):
    from torch.fx.experimental import proxy_tensor
    from torch.func import functional_call
    import torch.func

    slots = _tensor_slots(module)
    unique, index_of = [], {}       # unique tensors in first-seen order; id -> index
    for key, t, kind in slots:
        if id(t) not in index_of:
            index_of[id(t)] = len(unique)
            unique.append((key, t, kind))
        elif kind == "parameter":       # a tensor registered as both: call it a parameter
            i = index_of[id(t)]
            unique[i] = (unique[i][0], unique[i][1], "parameter")
    names_to_index = [(key, index_of[id(t)]) for key, t, _ in slots]
    n_state = len(unique)

    def _call_functional(*args):
        state = {key: args[i] for key, i in names_to_index}
        return functional_call(module, state, tuple(args[n_state:]))

    fn = torch.func.functionalize(_call_functional)

    class StackRecordingTracer(proxy_tensor.PythonKeyTracer):
        def create_proxy(self, kind, *args, **kwargs):
            proxy = super().create_proxy(kind, *args, **kwargs)
            if kind == "call_function" and not proxy.node.stack_trace:
                proxy.node.stack_trace = _user_stack(root)
            return proxy

    flat = [t for _, t, _ in unique] + list(inputs)
    saved = proxy_tensor.PythonKeyTracer
    proxy_tensor.PythonKeyTracer = StackRecordingTracer
    try:
        with torch.no_grad():
            gm = proxy_tensor.make_fx(fn, tracing_mode="real")(*flat)
    finally:
        proxy_tensor.PythonKeyTracer = saved

    placeholders = {}
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(phs) != len(flat):
        raise ExportError("make_fx produced %d placeholders for %d inputs" % (len(phs), len(flat)))
    for i, n in enumerate(phs):
        if i < n_state:
            key, t, kind = unique[i]
            placeholders[n] = _Placeholder(kind, ("p_" if kind == "parameter" else "b_")
                                           + _safe_name(key), key, t)
        else:
            placeholders[n] = _Placeholder("input", input_names[i - n_state])
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            t = getattr(gm, n.target)
            if not isinstance(t, torch.Tensor):
                raise ExportError("node '%s': get_attr of a %s (control flow is not supported)"
                                  % (n.name, type(t).__name__))
            placeholders[n] = _Placeholder("constant", "c_" + _safe_name(n.target).lstrip("_"),
                                           n.target, t)

    out_node = [n for n in gm.graph.nodes if n.op == "output"][0]
    outputs = pytree.tree_flatten(out_node.args[0])[0]
    interp = _RecordingInterpreter(gm, set(o for o in outputs if isinstance(o, torch.fx.Node)))
    with torch.no_grad():
        interp.run(*flat)
    stack = {n: n.stack_trace for n in gm.graph.nodes}
    return _Traced("make_fx", gm.graph, placeholders, interp.values, outputs, stack)


def _merge_tied_placeholders(graph, placeholders, module):
    """torch.export lifts a tied tensor (GPT-2's lm_head.weight is wte.weight) once per name;
    the bridge keeps one placeholder under the first name in state_dict order (as make_fx does)
    and points every use at it, so the tensor is stored once."""
    first_key = {}
    for key, t, _ in _tensor_slots(module):
        first_key.setdefault(id(t), key)
    keep = {}
    for n in [n for n in graph.nodes if n.op == "placeholder"]:
        ph = placeholders.get(n)
        if ph is None or ph.kind not in ("parameter", "buffer") or id(ph.tensor) not in first_key:
            continue
        canonical = first_key[id(ph.tensor)]
        if id(ph.tensor) in keep:
            n.replace_all_uses_with(keep[id(ph.tensor)])
            del placeholders[n]
            graph.erase_node(n)
            continue
        keep[id(ph.tensor)] = n
        if ph.target != canonical:
            ph.target = canonical
            ph.name = ("p_" if ph.kind == "parameter" else "b_") + _safe_name(canonical)


def _range_bound(b):
    """An end of a torch.export range as an int, None for infinity (int_oo)."""
    try:
        return int(b) if b.is_finite else None
    except (TypeError, AttributeError):
        return None


def _has_unbacked(value):
    """Whether a traced value has a size that depends on tensor data (no example hint)."""
    if isinstance(value, (torch.SymInt, torch.SymBool, torch.SymFloat)):
        return value.node.hint is None
    if isinstance(value, torch.Tensor):
        return any(isinstance(d, torch.SymInt) and d.node.hint is None for d in value.shape)
    if isinstance(value, (tuple, list)):
        return any(_has_unbacked(v) for v in value)
    return False


def _example_values(gm, placeholders, inputs, outputs):
    """Every node's value on the example inputs (tensors as meta tensors, sizes as ints)."""
    it = iter(inputs)
    flat = []
    for n in gm.graph.nodes:
        if n.op != "placeholder":
            continue
        ph = placeholders[n]
        flat.append(next(it) if ph.kind == "input" and not getattr(ph, "state", False)
                    else ph.tensor)
    interp = _RecordingInterpreter(gm, set(o for o in outputs if isinstance(o, torch.fx.Node)))
    with torch.no_grad():
        interp.run(*flat)
    return interp.values


def _is_size_arith(n):
    """sym_size and the Python arithmetic/comparisons torch.export does on sizes."""
    return n.target is torch.ops.aten.sym_size.int or getattr(n.target, "__module__", "") in (
        "_operator", "operator")


def _identity_mutations(ep, inputs, dynamic_shapes):
    """The buffers a static-shape export 'mutates' to the value they already hold, from nothing
    the inputs' data reach: transformers' longrope `dynamic_rope_update` writes inv_freq =
    where(max position + 1 > original_max, long, original) on every call, positions being an
    arange over the (static) sequence length. Such a write is the identity for every input of
    the traced shape, so it is not state; checked by running the program once."""
    specs = list(getattr(ep.graph_signature, "output_specs", None) or [])
    if dynamic_shapes is not None or not any(s.kind.name == "BUFFER_MUTATION" for s in specs):
        return set()
    out_node = [n for n in ep.graph.nodes if n.op == "output"][0]
    flat_out = pytree.tree_flatten(out_node.args[0])[0]
    user = {n for n, sp in zip([n for n in ep.graph.nodes if n.op == "placeholder"],
                               ep.graph_signature.input_specs)
            if sp.kind.name == "USER_INPUT"}
    reached = set(user)
    for n in ep.graph.nodes:
        if any(a in reached for a in n.all_input_nodes):
            reached.add(n)
    targets = [s.target for o, s in zip(flat_out, specs)
               if s.kind.name == "BUFFER_MUTATION" and o not in reached]
    if not targets:
        return set()
    m = ep.module()
    before = {t: m.get_buffer(t).clone() for t in targets}
    with torch.no_grad():
        m(*inputs)
    return {t for t in targets if torch.equal(before[t], m.get_buffer(t))}


def _trace_torch_export(module, inputs, input_names, root, state_io=False, dynamic_shapes=None,
                        core_aten=False):
    import torch.export as texport
    if dynamic_shapes is None:
        ep = texport.export(module, tuple(inputs))
    else:
        ep = texport.export(module, tuple(inputs), dynamic_shapes=tuple(dynamic_shapes))
    if _torch_version() >= (2, 4):
        # From 2.4 export gives pre-dispatch ("training") IR with aten.linear etc.; an empty
        # decomposition table (accepted from 2.4) lowers it to the post-autograd ATen that
        # make_fx gives. Before 2.4 export already returns that, and {} meant "core ATen".
        # core_aten: torch's default table instead, the core ATen opset backends consume
        # (linear -> permute + addmm/mm, SDPA -> bmm + _softmax + masks).
        ep = ep.run_decompositions() if core_aten else ep.run_decompositions({})
    # Before the graph is edited; a state export keeps every write, so it runs nothing here.
    same = set() if state_io else _identity_mutations(ep, inputs, dynamic_shapes)
    gm = ep.graph_module
    sig = ep.graph_signature
    state = dict(ep.state_dict)
    consts = {}
    for attr in ("constants", "tensor_constants"):
        consts.update(getattr(ep, attr, None) or {})
    module_state = {k: t for k, t, _ in _tensor_slots(module)}

    def lookup(target):
        for d in (state, consts, module_state):
            if target in d:
                return d[target]
        raise ExportError("torch.export: no tensor for '%s'" % target)

    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    kinds = {}
    if hasattr(sig, "input_specs"):
        for spec in sig.input_specs:
            kinds[spec.arg.name] = (spec.kind.name, spec.target)
    else:       # torch 2.1
        for n, k in sig.inputs_to_parameters.items():
            kinds[n] = ("PARAMETER", k)
        for n, k in sig.inputs_to_buffers.items():
            kinds[n] = ("BUFFER", k)
        for n in sig.user_inputs:
            kinds[n] = ("USER_INPUT", None)
    placeholders, user_i = {}, 0
    for n in phs:
        kind, target = kinds.get(n.name, (None, None))
        if kind == "USER_INPUT":
            placeholders[n] = _Placeholder("input", input_names[user_i] if user_i < len(input_names)
                                           else n.name)
            user_i += 1
        elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            pk = {"PARAMETER": "parameter", "BUFFER": "buffer", "CONSTANT_TENSOR": "constant"}[kind]
            placeholders[n] = _Placeholder(pk, n.name, target, lookup(target))
        else:
            raise ExportError("torch.export: placeholder '%s' of kind %s is not supported"
                              % (n.name, kind))
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            t = getattr(gm, n.target)
            if not isinstance(t, torch.Tensor):
                raise ExportError("node '%s': get_attr of a %s (control flow is not supported)"
                                  % (n.name, type(t).__name__))
            placeholders[n] = _Placeholder("constant", "c_" + _safe_name(n.target), n.target, t)
    _merge_tied_placeholders(gm.graph, placeholders, module)

    out_node = [n for n in gm.graph.nodes if n.op == "output"][0]
    flat_out = pytree.tree_flatten(out_node.args[0])[0]
    mutated = []        # (output fx.Node, buffer path)
    if hasattr(sig, "output_specs"):
        specs = list(sig.output_specs)
        if len(specs) != len(flat_out):
            raise ExportError("torch.export: %d output specs for %d outputs"
                              % (len(specs), len(flat_out)))
        allowed = ("USER_OUTPUT", "BUFFER_MUTATION") if state_io else ("USER_OUTPUT",)
        # A buffer written with the value it holds, from no input's data, is not state.
        keep = [s.kind.name != "BUFFER_MUTATION" or s.target not in same for s in specs]
        flat_out = [o for o, k in zip(flat_out, keep) if k]
        specs = [s for s, k in zip(specs, keep) if k]
        bad = [s for s in specs if s.kind.name not in allowed]
        if bad:
            raise ExportError("torch.export: the module mutates %s during forward; only pure "
                              "modules are supported%s"
                              % (", ".join(str(s.target) for s in bad),
                                 "" if state_io else " (buffers are accepted as state inputs "
                                 "and outputs by trace(..., state_io=True))"))
        mutated = [(o, s.target) for o, s in zip(flat_out, specs)
                   if s.kind.name == "BUFFER_MUTATION"]
        flat_out = [o for o, s in zip(flat_out, specs) if s.kind.name == "USER_OUTPUT"]
    elif state_io:
        raise ExportError("torch %s: torch.export has no output specs; state inputs need "
                          "torch >= 2.2" % torch.__version__)
    values = {}
    for n in gm.graph.nodes:
        if "val" in n.meta:
            values[n] = n.meta["val"]
    stack = {n: _normalise_stack_trace(n.meta.get("stack_trace"), root) for n in gm.graph.nodes}
    traced = _Traced("torch.export-core" if core_aten else "torch.export", gm.graph, placeholders,
                     values, flat_out, stack)
    if any(_has_unbacked(v) for v in values.values()):
        # Data-dependent sizes (nonzero in a sparse MoE dispatch): the graph is specialised to
        # the example, as real-mode make_fx is; the importer keeps each count and checks it at
        # run time (llm.nonzero).
        traced.values = _example_values(gm, placeholders, inputs, flat_out)
        traced.specialised = True

    # A mutated buffer is state the caller carries from step to step: an input placeholder
    # named after the buffer, and its new value an extra output after the module's own.
    by_target = {ph.target: n for n, ph in placeholders.items() if ph.kind == "buffer"}
    for o, target in mutated:
        n = by_target.get(target)
        if n is None:
            raise ExportError("torch.export: mutated buffer '%s' has no placeholder" % target)
        old = placeholders[n]
        placeholders[n] = _Placeholder("input", _safe_name(target), target, old.tensor)
        placeholders[n].state = True
        traced.mutations.append((len(traced.outputs), n, target))
        traced.outputs.append(o)

    user_phs = [n for n in phs if placeholders.get(n) is not None
                and placeholders[n].kind == "input"
                and not getattr(placeholders[n], "state", False)]
    for i, n in enumerate(user_phs):
        spec = dynamic_shapes[i] if dynamic_shapes is not None and i < len(dynamic_shapes) else None
        shape = values[n].shape if n in values else ()
        for d, size in enumerate(shape):
            if not isinstance(size, torch.SymInt):
                continue
            sym = str(size)
            if not sym.isidentifier():
                raise ExportError("input '%s' dim %d is the expression %s; only plain symbolic "
                                  "dims are recorded" % (placeholders[n].name, d, sym))
            vr = ep.range_constraints.get(size.node.expr)
            lo, hi = (_range_bound(vr.lower), _range_bound(vr.upper)) if vr is not None \
                else (0, None)
            dim = spec.get(d) if isinstance(spec, dict) else None
            traced.dynamic_dims.append((n, d, getattr(dim, "__name__", sym), [lo, hi], sym))
    return traced


# ---------------------------------------------------------------------------------------------
# Serialisation of a traced graph.

def _op_name(target):
    if not isinstance(target, torch._ops.OpOverload):
        return None, None
    ns, name = target._schema.name.split("::", 1)
    return "%s.%s" % (ns, name), target._overloadname or "default"


def _build_graph(traced, module_label):
    import operator
    graph = traced.graph
    names, used = {}, set()
    # Placeholders first (FX's own invariant), inputs in call order; state inputs (mutated
    # buffers) after every other placeholder; get_attr constants hoisted.
    def is_state(n):
        return getattr(traced.placeholders[n], "state", False)
    phs = [n for n in graph.nodes if n.op == "placeholder"]
    ordered_ph = ([n for n in phs if not is_state(n)] + [n for n in phs if is_state(n)] +
                  [n for n in graph.nodes if n.op == "get_attr"])
    for n in ordered_ph:
        want = traced.placeholders[n].name
        name, k = want, 1
        while name in used:
            name, k = "%s_%d" % (want, k), k + 1
        names[n] = name
        used.add(name)
    for n in graph.nodes:
        if n in names or n.op == "output":
            continue
        name, k = n.name, 1
        while name in used:
            name, k = "%s_%d" % (n.name, k), k + 1
        names[n] = name
        used.add(name)

    refs = {}           # fx.Node -> encoded reference
    scalars = {}        # fx.Node -> its int/float/bool at the example (symbolic sizes)

    multi = set()       # names of multi-output nodes: used only through getitem

    def ref_of(n, user):
        if n not in refs:
            raise ExportError("node '%s': uses '%s', which produces no tensor" % (user, n.name))
        r = refs[n]
        if r["node"] in multi and "output" not in r:
            raise ExportError("node '%s': uses all outputs of multi-output node '%s' at once"
                              % (user, r["node"]))
        return r

    def encode(v, user):
        if isinstance(v, torch.fx.Node) and v in scalars:
            return encode(scalars[v], user)
        if isinstance(v, torch.fx.Node):
            return ref_of(v, user)
        if isinstance(v, (torch.SymInt, torch.SymBool, torch.SymFloat)):
            return _encode_sym(v, user)
        if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
            return v
        if isinstance(v, float):
            return gf.encode_float(v)
        if isinstance(v, (list, tuple)):
            return [encode(x, user) for x in v]
        if isinstance(v, torch.dtype):
            return {"dtype": dtype_name(v)}
        if isinstance(v, torch.device):
            return {"device": str(v)}
        if isinstance(v, torch.layout):
            return {"layout": dtype_name(v)}
        if isinstance(v, torch.memory_format):
            return {"memory_format": dtype_name(v)}
        if isinstance(v, torch.Tensor):
            if v.numel() > gf.INLINE_MAX_ELEMENTS:
                raise ExportError("node '%s': tensor argument with %d elements (at most %d inline)"
                                  % (user, v.numel(), gf.INLINE_MAX_ELEMENTS))
            return {"tensor": _inline_tensor(v)}
        raise ExportError("node '%s': argument %r of type %s cannot be encoded"
                          % (user, v, type(v).__name__))

    nodes, tensors, keys = [], {}, {}
    for n in ordered_ph:
        ph = traced.placeholders[n]
        entry = {"name": names[n], "op": "placeholder", "kind": ph.kind}
        if ph.kind == "input":
            entry["meta"] = _meta_of(traced.values[n], names[n])
            sym = _sym_shape_of(traced.values[n])
            if sym is not None:
                entry["sym_shape"] = sym
        else:
            t = ph.tensor.detach()
            entry["meta"] = _meta_of(t, names[n])
            if ph.kind == "constant" and t.numel() <= gf.INLINE_MAX_ELEMENTS:
                entry["value"] = {"tensor": _inline_tensor(t)}
            else:
                if ph.target in keys and keys[ph.target] is not t:
                    raise ExportError("two different tensors are both named '%s'" % ph.target)
                keys[ph.target] = t
                tensors[ph.target] = t.contiguous()
                entry["target"] = ph.target
        refs[n] = {"node": names[n]}
        nodes.append(entry)

    for n in graph.nodes:
        if n.op in ("placeholder", "get_attr", "output"):
            continue
        if n.op != "call_function":
            raise ExportError("node '%s': FX op %s is not supported (expected ATen call_function)"
                              % (n.name, n.op))
        value = traced.values.get(n)
        if traced.specialised and _is_size_arith(n) and isinstance(value, (int, float, bool)):
            scalars[n] = value      # the example's size (see _example_values)
            continue
        if isinstance(value, (torch.SymInt, torch.SymBool, torch.SymFloat)):
            # sym_size and size arithmetic of a dynamic-shape export: the graph is for the
            # example's sizes (the symbols are recorded in "dynamic_dims" and "sym_shape").
            scalars[n] = value
            continue
        if n.target is operator.getitem:
            src, i = n.args
            if (not isinstance(src, torch.fx.Node) or src not in refs or "output" in refs[src]
                    or refs[src]["node"] not in multi):
                raise ExportError("node '%s': getitem of something that is not a multi-output op"
                                  % n.name)
            refs[n] = {"node": refs[src]["node"], "output": int(i)}
            continue
        target, overload = _op_name(n.target)
        if target is None:
            raise ExportError("node '%s': target %r is not an ATen op" % (n.name, n.target))
        if target in ASSERT_TARGETS:
            continue
        if target in NO_OP_TARGETS:
            refs[n] = ref_of(n.args[0], names[n])
            continue
        if getattr(n.target._schema, "is_mutable", False):
            # Both tracers functionalise; a mutating op left over would change what earlier
            # nodes computed, which a dataflow importer cannot represent.
            raise ExportError("node '%s': %s.%s mutates its input and survived functionalisation"
                              % (names[n], target, overload))
        if n not in traced.values:
            raise ExportError("node '%s' (%s): the tracer recorded no value" % (n.name, target))
        meta = _meta_of(traced.values[n], names[n])
        entry = {"name": names[n], "op": "call_function", "target": target, "overload": overload,
                 "args": encode(list(n.args), names[n]),
                 "kwargs": {k: encode(v, names[n]) for k, v in n.kwargs.items()},
                 "meta": meta}
        sym = _sym_shape_of(traced.values[n])
        if sym is not None:
            entry["sym_shape"] = sym
        st_text = traced.stack.get(n)
        if st_text:
            entry["stack_trace"] = st_text
        refs[n] = {"node": names[n]}
        if isinstance(meta, list):
            multi.add(names[n])
        nodes.append(entry)

    outs = []
    for o in traced.outputs:
        if not isinstance(o, torch.fx.Node) or o in scalars:
            raise ExportError("output %r is not a tensor computed by the graph" % (o,))
        outs.append(ref_of(o, "output"))
    nodes.append({"name": "output", "op": "output", "args": [outs]})
    graph_json = {"format": gf.FORMAT, "version": gf.VERSION,
                  "producer": {"torch": torch.__version__, "tracer": traced.tracer},
                  "module": module_label, "parameters": None, "nodes": nodes}
    if traced.mutations:
        muts = []
        for out_i, n, target in traced.mutations:
            init = traced.placeholders[n].tensor
            if init is None or bool(init.detach().any()):
                # Not zeros: the initial state is stored with the parameters under its path.
                if target in tensors:
                    raise ExportError("state '%s' collides with a stored tensor" % target)
                if init is None:
                    raise ExportError("state '%s' has no initial value" % target)
                tensors[target] = init.detach().contiguous()
                kind = "parameters"
            else:
                kind = "zeros"
            muts.append({"output": out_i, "input": names[n], "buffer": target, "init": kind})
        graph_json["mutations"] = muts
    if traced.dynamic_dims:
        graph_json["dynamic_dims"] = [
            {"input": names[n], "dim": d, "name": name, "symbol": sym, "range": rng,
             "example": int(_example_int(traced.values[n].shape[d], names[n]))}
            for n, d, name, rng, sym in traced.dynamic_dims]
    return graph_json, tensors


def _module_label(module):
    cls = type(module)
    try:
        src = inspect.getsourcefile(cls)
    except TypeError:
        src = None
    return "%s:%s" % (os.path.basename(src) if src else cls.__module__, cls.__name__), \
        os.path.dirname(os.path.abspath(src)) if src else None


def _input_names(module, n, given):
    if given is not None:
        if len(given) != n:
            raise ExportError("%d input names for %d inputs" % (len(given), n))
        return list(given)
    try:
        params = [p.name for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else "input_%d" % i for i in range(n)]


def _flatten_outputs(out, what):
    flat = pytree.tree_flatten(out)[0]
    for i, t in enumerate(flat):
        if not isinstance(t, torch.Tensor):
            raise ExportError("%s: output %d is of type %s, not a tensor"
                              % (what, i, type(t).__name__))
    if not flat:
        raise ExportError("%s returns no tensor" % what)
    return flat


def buffer_snapshot(module):
    """{path: copy} of every buffer, to undo what a forward that updates state did."""
    return {k: t.detach().clone() for k, t, kind in _tensor_slots(module) if kind == "buffer"}


def restore_buffers(module, snapshot):
    slots = {k: t for k, t, kind in _tensor_slots(module) if kind == "buffer"}
    with torch.no_grad():
        for k, t in snapshot.items():
            slots[k].copy_(t)


def trace(module, example_inputs, input_names=None, tracer="auto", *, state_io=False,
          dynamic_shapes=None, source_root=None):
    """Trace `module` on `example_inputs`; return (graph dict, {key: tensor}) without writing.

    state_io: buffers the forward updates in place (a static KV cache) become `input`
    placeholders and their new values extra outputs, mapped by the graph's "mutations" list
    (torch.export only); without it such a module is an error. The module's buffers are left
    as they were before the call.
    dynamic_shapes: per example input None or {dim: torch.export.Dim}; torch.export keeps those
    dims symbolic and the graph records them ("dynamic_dims", "sym_shape"); shapes and integer
    arguments stay those of the example.
    source_root: directory stack-trace paths are made relative to (default: the directory of
    the module's class file).
    """
    inputs = tuple(example_inputs)
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            raise ExportError("example input %d is of type %s; only tensor inputs are supported"
                              % (i, type(x).__name__))
    module.eval()
    label, root = _module_label(module)
    if source_root is not None:
        root = os.path.abspath(source_root)
    names = _input_names(module, len(inputs), input_names)
    if len(set(names)) != len(names):
        raise ExportError("input names are not unique: %s" % ", ".join(names))
    if dynamic_shapes is not None and len(dynamic_shapes) != len(inputs):
        raise ExportError("%d dynamic shape specs for %d inputs" % (len(dynamic_shapes),
                                                                    len(inputs)))
    snapshot = buffer_snapshot(module) if state_io else None
    with torch.no_grad():
        try:
            eager = _flatten_outputs(module(*inputs), label)
        except ExportError:
            raise
        except Exception as e:
            raise ExportError("%s: running forward on the example inputs failed%s: %s: %s"
                              % (label, _user_location(e, root), type(e).__name__, e))
        finally:
            if snapshot is not None:
                restore_buffers(module, snapshot)
    if state_io or dynamic_shapes is not None:
        # Only torch.export represents state updates and symbolic sizes.
        if tracer == "make_fx":
            raise ExportError("%s: state inputs and dynamic shapes need the torch.export tracer"
                              % label)
        try:
            return _trace_with("torch.export", module, inputs, names, root, label, eager,
                               state_io, dynamic_shapes)
        finally:
            if snapshot is not None:
                restore_buffers(module, snapshot)
    if tracer != "auto":
        return _trace_with(tracer, module, inputs, names, root, label, eager)
    if not has_torch_export():
        return _trace_with("make_fx", module, inputs, names, root, label, eager)
    try:
        return _trace_with("torch.export", module, inputs, names, root, label, eager)
    except ExportError as e:
        # A model torch.export refuses may still trace in real-mode make_fx, which
        # specialises on the example; say why in the file.
        graph, tensors = _trace_with("make_fx", module, inputs, names, root, label, eager)
        graph["producer"]["fallback"] = str(e)
        return graph, tensors


def _trace_with(tracer, module, inputs, names, root, label, eager, state_io=False,
                dynamic_shapes=None):
    try:
        if tracer == "torch.export":
            if not has_torch_export():
                raise ExportError("%s: torch %s has no torch.export (needs torch >= 2.1)"
                                  % (label, torch.__version__))
            traced = _trace_torch_export(module, inputs, names, root, state_io, dynamic_shapes)
        elif tracer == "torch.export-core":
            traced = _trace_torch_export(module, inputs, names, root, state_io, dynamic_shapes,
                                         core_aten=True)
        elif tracer == "make_fx":
            traced = _trace_make_fx(module, inputs, names, root)
        else:
            raise ExportError("unknown tracer %r (auto, make_fx, torch.export, "
                              "torch.export-core)" % tracer)
        if traced.n_user_outputs != len(eager):
            raise ExportError("%s: the traced graph has %d outputs, the module %d"
                              % (label, traced.n_user_outputs, len(eager)))
        if traced.tracer == "make_fx":
            # Real-mode tracing specialises on the example data; the replay must match eager.
            for i, (o, e) in enumerate(zip(traced.outputs, eager)):
                got = traced.values.get(o)
                if not isinstance(got, torch.Tensor) or got.shape != e.shape or not torch.allclose(
                        got.double(), e.double(), rtol=1e-5, atol=1e-6, equal_nan=True):
                    raise ExportError("%s: the traced graph does not reproduce output %d of the "
                                      "module" % (label, i))
        return _build_graph(traced, label)
    except ExportError:
        raise
    except Exception as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        if "get value out of a tracing tensor" in msg:
            msg = ("the model reads a tensor's value in Python (.item(), .tolist(), bool(), "
                   "or control flow on tensor data), which cannot be traced")
        if msg.startswith("Constraints violated"):
            # The reasons follow as "  - ..." lines (a dim the model specialises).
            msg += " " + " ".join(" ".join(l.split()) for l in str(e).splitlines()
                                  if l.startswith("  - "))
        raise ExportError("%s: tracing with %s failed%s: %s: %s"
                          % (label, tracer, _user_location(e, root), type(e).__name__, msg))


def graph_paths(path):
    """(json path, safetensors path) for an export target: a directory or a `.json` file."""
    if path.endswith(".json"):
        return path, path[:-len(".json")] + ".safetensors"
    return os.path.join(path, "graph.json"), os.path.join(path, "graph.safetensors")


def write_graph(graph, tensors, json_path, st_path, files):
    """Validate the graph as it will be read back, then stage both files in `files`."""
    graph["parameters"] = os.path.basename(st_path)
    blob = st.serialize(tensors)
    text = gf.dumps(graph)
    reread = json.loads(text)
    gf.validate(reread, json_path)
    _, header, _ = st.parse_header(blob)
    gf.check_parameters(reread, header, json_path)
    graph_ext.validate(reread, json_path, header)
    files.write(st_path, blob)
    files.write(json_path, text)


def export(module, example_inputs, path, input_names=None, tracer="auto"):
    """Export `module` traced on `example_inputs` to `path`.

    `path` is a directory (writes graph.json + graph.safetensors in it) or a `.json` file (writes
    it and `<stem>.safetensors` beside it). Returns the graph dict that was written. Both files
    appear together or not at all.
    """
    json_path, st_path = graph_paths(path)
    os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
    graph, tensors = trace(module, example_inputs, input_names, tracer)
    with gf.AtomicFiles() as files:
        write_graph(graph, tensors, json_path, st_path, files)
    return graph


def export_onnx(module, example_inputs, path, input_names=None, opset=17, files=None,
                constant_folding=True):
    """torch.onnx.export at `opset`, checked with onnx.checker, written atomically (staged in
    `files` when given, committed with them). `constant_folding` as torch.onnx.export's
    do_constant_folding (default on, as exporters ship models)."""
    if files is None:
        with gf.AtomicFiles() as own:
            return export_onnx(module, example_inputs, path, input_names, opset, own,
                               constant_folding)
    import onnx
    inputs = tuple(example_inputs)
    module.eval()
    names = _input_names(module, len(inputs), input_names)
    with torch.no_grad():
        n_out = len(_flatten_outputs(module(*inputs), type(module).__name__))
    label, _ = _module_label(module)
    tmp = files.path(path)
    try:
        # The exporter's TracerWarnings (shape-dependent Python values) are what real-mode
        # tracing means here: the graph is for these input shapes.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # The TorchScript exporter (dynamo=False), as optimum's ONNX exporter uses it: torch
            # 2.x's default dynamo exporter starts at opset 18 and spells the sparse MoE with
            # GatherND/ScatterND, which the ONNX importer does not take yet (docs/torch-bridge.md).
            torch.onnx.export(module, inputs, tmp, opset_version=opset, input_names=names,
                              output_names=["output_%d" % i for i in range(n_out)],
                              do_constant_folding=constant_folding, dynamo=False)
    except Exception as e:
        raise ExportError("%s: torch.onnx.export (opset %d) failed: %s: %s"
                          % (label, opset, type(e).__name__, e))
    try:
        onnx.checker.check_model(tmp)
    except Exception as e:
        raise ExportError("%s: the exported ONNX model does not pass onnx.checker: %s" % (label, e))
