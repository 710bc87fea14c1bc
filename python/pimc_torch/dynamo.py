"""TorchDynamo backend: `torch.compile(model, backend="pimc")` (docs/torch-dynamo.md).

Dynamo hands the backend each FX graph it captured (torch-level ops). For each graph pimc_backend

  1. lowers it to the ATen form the bridge exports (torch.export of a module that runs the graph,
     `run_decompositions({})`; make_fx when torch.export refuses), with the module's parameters and
     buffers as `parameter`/`buffer` placeholders whether Dynamo lifted them to graph inputs or not;
  2. writes the pimc-fx-graph JSON + safetensors (exporter.write_graph) and runs `pimc import`
     (which raises to llm.rms_norm / rope / attention / gated_mlp / moe) once per input signature;
  3. returns a callable that writes the inputs as safetensors, runs `pimc run-ref` on the imported
     IR and returns its outputs as torch tensors of the traced dtypes and shapes.

Every graph runs on pimc's reference interpreter (`pimc run-ref`). pimc's PIM backend compiles
only the Hugging Face importer's decode step today, so an FX graph cannot be compiled for a PIM
target yet and the option `target=` is an error that says so.

The backend is for inference: it refuses a graph that autograd would have to differentiate
(run under torch.no_grad() or torch.inference_mode()).

Options (`torch.compile(model, backend="pimc", options={...})`, or PimcBackend(**options)):
  fallback   "error" (default): a graph pimc cannot import or trace is an error naming the ops;
             "eager": warn with that message and run the graph eagerly.
  pimc       path of the pimc binary (default: $PIMC_BIN, `pimc` on PATH, the repository's
             build/tools/pimc/pimc).
  raise      False runs `pimc import --no-raise` (primitive llm ops only); default True.
  keep_dir   write each graph's files (graph.json, graph.safetensors, graph.mlir) under this
             directory and keep them; default: a temporary directory removed at exit.
  target     not supported (see above).

`pimc_torch.dynamo.report()` summarises what the registered "pimc" backend compiled in this
process; `pimc_torch.dynamo.explain(model, *inputs)` compiles and runs a model on a fresh backend
and returns the report: every Dynamo graph, the graph break that ended it (reason and user code
location), its ATen op count, what pimc raised it to and where it ran.
`python -m pimc_torch.dynamo MODULE.py:Class --input x:float32:1x8x64` prints that report.
"""

import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import warnings
import weakref

import torch
import torch.fx
import torch.fx.traceback as fx_traceback
import torch.utils._pytree as pytree

from . import exporter
from . import graph_format as gf
from .graph_format import ExportError

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pimc_testgen import safetensors_io as st     # noqa: E402

__all__ = ["PimcBackend", "PimcBackendError", "pimc_backend", "report", "reset", "explain",
           "find_pimc"]

_OPTION_NAMES = ("fallback", "pimc", "raise", "keep_dir", "target")
_WHERE_INTERPRETER = "pimc run-ref (reference interpreter)"
_WHERE_EAGER = "eager (fallback)"


class PimcBackendError(RuntimeError):
    """A graph pimc cannot run (unsupported ops, untraceable code, bad options, pimc failures)."""


def find_pimc(path=None):
    """The pimc binary: `path`, else $PIMC_BIN, else `pimc` on PATH, else the repository's
    build/tools/pimc/pimc (this file is python/pimc_torch/dynamo.py)."""
    if path is None:
        path = os.environ.get("PIMC_BIN") or shutil.which("pimc")
    if path is None:
        repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        cand = os.path.join(repo, "build", "tools", "pimc", "pimc")
        if os.path.isfile(cand):
            path = cand
    if path is None:
        raise PimcBackendError("cannot find the pimc binary: set PIMC_BIN, put pimc on PATH or "
                               "pass options={'pimc': PATH}")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise PimcBackendError("pimc binary %s is not an executable file" % path)
    return path


# ---------------------------------------------------------------------------------------------
# Dynamo graph inputs: which are the module's state and which are per-call inputs.

# L['self']._modules['layers']._modules['0']._parameters['weight'], or L['args'][0]._modules[...]
# when the compiled frame is a decorator's wrapper (transformers' deprecate_kwarg).
_SOURCE_STEP = re.compile(r"\._(modules|parameters|buffers)\['([^']*)'\]")


def _placeholders(gm):
    return [n for n in gm.graph.nodes if n.op == "placeholder"]


def _source_name(node):
    source = getattr(node.meta.get("grapharg"), "source", None)
    if source is None:
        return None
    return source.name() if callable(source.name) else source.name


def _state_path(node):
    """(root, 'layers.0.weight') for a placeholder Dynamo lifted from a module's
    _parameters/_buffers (root: the source of that module, e.g. L['self']), else None: a
    per-call input."""
    name = _source_name(node)
    if name is None:
        return None
    first = re.search(r"\._(modules|parameters|buffers)\[", name)
    if first is None:
        return None
    root, rest = name[:first.start()], name[first.start():]
    steps = _SOURCE_STEP.findall(rest)
    # Only registered state: the rest of the source is module steps ending in a tensor.
    if not steps or steps[-1][0] == "modules" or rest != "".join("._%s['%s']" % s
                                                                   for s in steps):
        return None
    return root, ".".join(s[1] for s in steps)


def _input_name(node):
    """The argument's name: 'input_ids' for L['kwargs']['input_ids'], 'x' for L['x']."""
    keys = re.findall(r"\['([A-Za-z_][A-Za-z0-9_]*)'\]", _source_name(node) or "")
    name = keys[-1] if keys else re.sub(r"_$", "", re.sub(r"^l_", "", node.name))
    return re.sub(r"[^0-9A-Za-z_]", "_", name) or node.name


def _graph_location(gm):
    """(function, 'file.py:line') of the frame Dynamo compiled: the outermost frame of the first
    node's stack trace."""
    for n in gm.graph.nodes:
        text = n.meta.get("stack_trace")
        if not text:
            continue
        m = re.search(r'File "([^"]+)", line (\d+), in (\S+)', text)
        if m:
            return m.group(3), "%s:%s" % (os.path.basename(m.group(1)), m.group(2))
    return None, None


class _Break:
    """A graph break: Dynamo's reason and the user code where it happened."""

    def __init__(self, reason, frame):
        lines = [l.strip() for l in str(reason).strip().splitlines() if l.strip()]
        self.reason = lines[0] if lines else "graph break"
        self.explanation = next((l[len("Explanation:"):].strip() for l in lines
                                 if l.startswith("Explanation:")), None)
        self.file = frame.filename if frame is not None else None
        self.line = frame.lineno if frame is not None else None
        self.function = frame.name if frame is not None else None
        self.code = (frame.line or "").strip() if frame is not None else None

    def location(self):
        if self.file is None:
            return "unknown location"
        text = "%s:%d in %s" % (os.path.basename(self.file), self.line, self.function)
        return text + (": " + self.code if self.code else "")

    def __str__(self):
        text = self.reason
        if self.explanation:
            text += " (%s)" % self.explanation
        return "%s at %s" % (text, self.location())


def _graph_break(gm):
    reason = getattr(gm, "compile_subgraph_reason", None)
    if reason is None or not getattr(reason, "graph_break", False):
        return None
    stack = list(getattr(reason, "user_stack", None) or [])
    return _Break(reason.reason, stack[-1] if stack else None)


# ---------------------------------------------------------------------------------------------
# The module the bridge's tracer sees: the Dynamo graph, run node by node (so the ATen nodes keep
# the user's stack traces), with the lifted state registered as parameters/buffers under their
# module paths and the non-tensor inputs (sizes under dynamic shapes) bound to this call's values.

class _DynamoGraph(torch.nn.Module):
    def __init__(self, gm, n_args, state_slots, user_slots, bound):
        super().__init__()
        self._pimc_graph = gm
        self._n_args = n_args
        self._user_slots = user_slots       # [arg position]
        self._bound = bound                 # {arg position: python value}
        self._state_slots = []
        for pos, path, t in state_slots:
            try:
                self._register(path, t)
            except (KeyError, AttributeError, TypeError):
                # A name nn.Module reserves (forward, training, ...): keep it under a safe name.
                path = "_pimc_state." + re.sub(r"[^0-9A-Za-z_]", "_", path)
                self._register(path, t)
            self._state_slots.append((pos, path, t))

    def _register(self, path, t):
        *parents, leaf = path.split(".")
        mod = self
        for p in parents:
            if p not in mod._modules:
                if hasattr(mod, p):
                    raise AttributeError(p)
                mod.add_module(p, torch.nn.Module())
            mod = mod._modules[p]
        if hasattr(mod, leaf):
            raise AttributeError(leaf)
        if isinstance(t, torch.nn.Parameter):
            mod.register_parameter(leaf, t)
        else:
            mod.register_buffer(leaf, t)

    def _lookup(self, path):
        mod = self
        *parents, leaf = path.split(".")
        for p in parents:
            mod = getattr(mod, p)
        return getattr(mod, leaf)   # attribute access, so that functional_call can swap it

    def forward(self, *user):
        args = [None] * self._n_args
        for pos, v in self._bound.items():
            args[pos] = v
        for pos, v in zip(self._user_slots, user):
            args[pos] = v
        for pos, path, _ in self._state_slots:
            args[pos] = self._lookup(path)
        with fx_traceback.preserve_node_meta():
            return torch.fx.Interpreter(self._pimc_graph).run(*args)


def _signature(args):
    """What a specialisation depends on: tensor dtypes and shapes, values of the other inputs."""
    key = []
    for a in args:
        if isinstance(a, torch.Tensor):
            key.append(("tensor", a.dtype, tuple(a.shape)))
        else:
            key.append((type(a).__name__, a))
    return tuple(key)


def _describe_signature(args):
    parts = []
    for a in args:
        if isinstance(a, torch.Tensor):
            parts.append("%s%s" % (exporter.dtype_name(a.dtype), list(a.shape)))
        else:
            parts.append(repr(a))
    return "(" + ", ".join(parts) + ")"


_UNSUPPORTED = re.compile(r"(\S+) x(\d+) \(first: ([^;)]*)")


def _unsupported_ops(message):
    """[(op, count, [node names])] from pimc's 'N unsupported op(s): ...' message."""
    if "unsupported op(s)" not in message:
        return []
    tail = message.split("unsupported op(s):", 1)[1]
    return [(m.group(1), int(m.group(2)), [s.strip() for s in m.group(3).split(",")])
            for m in _UNSUPPORTED.finditer(tail)]


_LLM_OP = re.compile(r"^\s*(?:%[^=]+=\s*)?\"?llm\.([a-z_0-9]+)", re.M)


def _llm_op_counts(mlir_text):
    # llm.weight only names a tensor of the weights file: not an op worth listing.
    return collections.Counter(op for op in _LLM_OP.findall(mlir_text) if op != "weight")


# ---------------------------------------------------------------------------------------------

class _Specialisation:
    """One imported graph: a Dynamo graph traced and imported for one input signature."""

    def __init__(self, directory, graph, tensors, state_keys, mlir):
        self.dir = directory
        self.json = os.path.join(directory, "graph.json")
        self.weights = os.path.join(directory, "graph.safetensors")
        self.mlir = mlir
        nodes = graph["nodes"]
        self.inputs = [n for n in nodes if n["op"] == "placeholder" and n["kind"] == "input"]
        by_name = {n["name"]: n for n in nodes}
        self.outputs = []       # meta of each output, in order
        for ref in nodes[-1]["args"][0]:
            meta = by_name[ref["node"]]["meta"]
            self.outputs.append(meta[ref.get("output", 0)] if isinstance(meta, list) else meta)
        # key -> the tensor written to the weights file. The module state Dynamo passes in was
        # traced on copies, so these are what pimc reads, to compare with the live tensors.
        self.tensors = tensors
        self.state_keys = state_keys        # arg position -> key, for state Dynamo passes in


class _GraphRecord:
    """What happened to one Dynamo graph (one entry of the report)."""

    def __init__(self, index, compile_id, gm):
        self.index = index
        self.compile_id = compile_id
        self.function, self.location = _graph_location(gm)
        self.torch_ops = sum(1 for n in gm.graph.nodes
                             if n.op in ("call_function", "call_method", "call_module"))
        self.graph_break = _graph_break(gm)
        self.where = None           # _WHERE_INTERPRETER or _WHERE_EAGER
        self.why_eager = None
        self.aten_ops = None
        self.llm_ops = None
        self.unsupported = []       # [(op, count, nodes)]
        self.signatures = 0
        self.calls = 0
        self.weight_rewrites = 0
        self.error = None           # why pimc refused it (fallback="error")

    def lines(self):
        head = "graph %d" % self.index
        if self.compile_id:
            head += " [%s]" % self.compile_id
        if self.function:
            head += " %s (%s)" % (self.function, self.location)
        text = "%s: %d torch ops" % (head, self.torch_ops)
        if self.aten_ops is not None:
            text += " -> %d ATen ops" % self.aten_ops
        if self.llm_ops:
            text += " -> llm: " + ", ".join("%d %s" % (c, op)
                                           for op, c in sorted(self.llm_ops.items()))
        out = [text]
        if self.where == _WHERE_EAGER:
            out.append("  runs eagerly (fallback): %s" % self.why_eager)
        elif self.where is not None:
            out.append("  runs on %s: %d call(s), %d input signature(s)"
                       % (self.where, self.calls, self.signatures))
        elif self.error is not None:
            out.append("  refused: %s" % self.error)
        else:
            out.append("  not run yet")
        if self.graph_break is not None:
            out.append("  ended by a graph break: %s" % self.graph_break)
        return out


class _CompiledGraph:
    """The callable Dynamo runs in place of a graph."""

    def __init__(self, backend, gm, record, example_inputs):
        self.backend = backend
        self.gm = gm
        self.record = record
        self.lock = threading.Lock()
        phs = _placeholders(gm)
        self.n_args = len(phs)
        self.state = []         # (position, path)
        self.user = []          # positions of per-call tensor inputs
        self.names = []
        used, paths = set(), {}
        for i, n in enumerate(phs):
            state = _state_path(n) if isinstance(example_inputs[i], torch.Tensor) else None
            if state is not None:
                root, path = state
                # Two modules' state under the same path (a function of two models): the later
                # one is keyed with its root.
                if paths.setdefault(path, root) != root:
                    path = re.sub(r"\W+", "_", root).strip("_") + "." + path
                self.state.append((i, path))
            else:
                name, k = _input_name(n), 1
                base = name
                while name in used:
                    name, k = "%s_%d" % (base, k), k + 1
                used.add(name)
                self.names.append(name)
                self.user.append(i)
        self.specs = {}
        self.eager = None       # the fallback: gm itself

    # -- tracing and importing -----------------------------------------------------------------

    def _trace(self, args):
        bound = {i: args[i] for i in self.user if not isinstance(args[i], torch.Tensor)}
        user = [i for i in self.user if i not in bound]
        # The tracer runs the graph (eagerly, and make_fx in real mode): on copies, so that a
        # graph that updates its inputs or the module's buffers in place changes nothing of the
        # caller's before it is refused.
        with torch.no_grad():
            copies = {i: _copy(args[i]) for i in user + [i for i, _ in self.state]}
        state = [(i, path, torch.nn.Parameter(copies[i], requires_grad=False)
                  if isinstance(args[i], torch.nn.Parameter) else copies[i])
                 for i, path in self.state]
        module = _DynamoGraph(self.gm, self.n_args, state, user, bound)
        names = [self.names[self.user.index(i)] for i in user]
        try:
            with torch.no_grad():
                graph, tensors = exporter.trace(module, [copies[i] for i in user], names)
        except (ExportError, gf.GraphFormatError) as e:
            self._check_pure(args, copies)
            raise PimcBackendError("%s: cannot lower it to ATen for pimc: %s"
                                   % (self._what(args), e))
        self._check_pure(args, copies)
        label = "dynamo graph %d" % self.record.index
        if self.record.compile_id:
            label += " [%s]" % self.record.compile_id
        if self.record.function:
            label += " %s (%s)" % (self.record.function, self.record.location)
        graph["module"] = label
        # The key each lifted tensor is stored under (its path, unless renamed above).
        state_keys = {i: path for i, path, _ in module._state_slots if path in tensors}
        return graph, tensors, state_keys

    def _specialise(self, args):
        b = self.backend
        directory = b._new_dir(self.record.index)
        try:
            graph, tensors, state_keys = self._trace(args)
            self.record.aten_ops = sum(1 for n in graph["nodes"] if n["op"] == "call_function")
            if any(m["dtype"] == "float64" for m in _io_metas(graph)):
                warnings.warn("pimc: %s has float64 inputs or outputs; pimc's interpreter "
                              "computes them in float32" % self._what(args), stacklevel=2)
            json_path = os.path.join(directory, "graph.json")
            st_path = os.path.join(directory, "graph.safetensors")
            with gf.AtomicFiles() as files:
                exporter.write_graph(graph, tensors, json_path, st_path, files)
            mlir = os.path.join(directory, "graph.mlir")
            cmd = [b.pimc, "import", json_path, "-o", mlir]
            if not b.raise_ops:
                cmd.append("--no-raise")
            proc = _run_pimc(cmd)
            if proc.returncode != 0:
                msg = proc.stderr.strip() or proc.stdout.strip() or (
                    "exit status %d" % proc.returncode)
                if not b.keep_dir:      # the temporary file is gone by the time anyone reads this
                    msg = msg.replace(json_path, "graph.json")
                self.record.unsupported = _unsupported_ops(msg)
                raise PimcBackendError("%s: pimc import refused it%s: %s"
                                       % (self._what(args), self._op_summary(graph), msg))
            with open(mlir) as f:
                self.record.llm_ops = _llm_op_counts(f.read())
            spec = _Specialisation(directory, graph, tensors, state_keys, mlir)
        except BaseException:
            if not b.keep_dir:
                shutil.rmtree(directory, ignore_errors=True)
            raise
        self.record.signatures += 1
        return spec

    def _check_pure(self, args, copies):
        changed = [i for i, c in copies.items() if not _same(c, args[i])]
        if changed:
            phs = _placeholders(self.gm)
            raise PimcBackendError(
                "%s: the graph updates %s in place; pimc runs pure graphs only (return the new "
                "value instead)" % (self._what(args), ", ".join(
                    _source_name(phs[i]) or phs[i].name for i in changed)))

    def _what(self, args):
        r = self.record
        what = "Dynamo graph %d" % r.index
        if r.compile_id:
            what += " [%s]" % r.compile_id
        if r.function:
            what += " (%s at %s)" % (r.function, r.location)
        return what + " on inputs " + _describe_signature([args[i] for i in self.user])

    def _op_summary(self, graph):
        """' (unsupported: aten.x at file:line, ...)' with the user location of each op."""
        ops = self.record.unsupported
        if not ops:
            return ""
        by_name = {n["name"]: n for n in graph["nodes"]}
        parts = []
        for op, count, first in ops:
            where = ""
            node = by_name.get(first[0]) if first else None
            trace = node.get("stack_trace") if node else None
            if trace:
                m = re.match(r'File "([^"]+)", line (\d+)', trace)
                if m:
                    where = " at %s:%s" % (os.path.basename(m.group(1)), m.group(2))
            parts.append("%s%s" % (op, where))
        return " (unsupported: %s)" % ", ".join(parts)

    def prepare(self, args):
        """Trace and import for these inputs now (at compile time), or fall back."""
        try:
            self._spec_for(args)
        except PimcBackendError as e:
            if self.backend.fallback != "eager":
                self.record.error = str(e)
                raise
            self._fall_back(e)

    def _fall_back(self, error):
        warnings.warn("pimc: running it eagerly (fallback='eager'): %s" % error, stacklevel=3)
        self.record.where = _WHERE_EAGER
        self.record.why_eager = str(error)
        self.eager = self.gm

    def _what_short(self):
        return "Dynamo graph %d%s" % (self.record.index, (" [%s]" % self.record.compile_id)
                                      if self.record.compile_id else "")

    def _spec_for(self, args):
        key = _signature(args)
        spec = self.specs.get(key)
        if spec is None:
            spec = self._specialise(args)
            self.specs[key] = spec
            self.record.where = _WHERE_INTERPRETER
        return spec

    # -- running ---------------------------------------------------------------------------------

    def __call__(self, *args):
        if self.eager is not None:
            self.record.calls += 1
            return self.eager(*args)
        _check_inference(args, self._what_short())
        with self.lock:
            try:
                spec = self._spec_for(args)
            except PimcBackendError as e:
                if self.backend.fallback != "eager":
                    self.record.error = str(e)
                    raise
                self._fall_back(e)
                self.record.calls += 1
                return self.eager(*args)
            self.record.calls += 1
            return self._run(spec, args)

    def _run(self, spec, args):
        b = self.backend
        # The weights file holds the module state as traced; Dynamo passes the live tensors on
        # every call (nothing guards their values), so compare and rewrite when they changed.
        stale = [(i, key) for i, key in spec.state_keys.items()
                 if not _same(args[i], spec.tensors[key])]
        if stale:
            for i, key in stale:
                spec.tensors[key] = _copy(args[i])
            with gf.AtomicFiles() as files:
                files.write(spec.weights, st.serialize(
                    {k: t.contiguous() for k, t in spec.tensors.items()}))
            self.record.weight_rewrites += 1
        user = [args[i] for i in self.user if isinstance(args[i], torch.Tensor)]
        if len(user) != len(spec.inputs):
            raise PimcBackendError("%s: %d tensor inputs, the imported graph takes %d"
                                   % (self._what_short(), len(user), len(spec.inputs)))
        feed = {}
        for k, (t, ph) in enumerate(zip(user, spec.inputs)):
            if list(t.shape) != ph["meta"]["shape"]:
                raise PimcBackendError("%s: input %s has shape %s, the graph was imported for %s"
                                       % (self._what_short(), ph["name"], list(t.shape),
                                          ph["meta"]["shape"]))
            t = t.detach()
            # pimc's interpreter computes float activations in f32 and integers in i64.
            if t.is_floating_point():
                t = t.to(torch.float32)
            elif t.dtype != torch.bool:
                t = t.to(torch.int64)
            feed["input_%d" % k] = t.contiguous()
        fd, in_path = tempfile.mkstemp(prefix="inputs.", suffix=".safetensors", dir=spec.dir)
        os.close(fd)
        out_path = in_path.replace("inputs.", "outputs.", 1)
        try:
            st.write_file(in_path, feed)
            cmd = [b.pimc, "run-ref", spec.mlir, "--weights", spec.weights, "--inputs", in_path,
                   "--outputs", out_path]
            proc = _run_pimc(cmd)
            if proc.returncode != 0:
                raise PimcBackendError("%s: pimc run-ref failed: %s" % (
                    self._what_short(), proc.stderr.strip() or "exit status %d" % proc.returncode))
            got, _ = st.load_file(out_path)
        finally:
            for p in (in_path, out_path):
                try:
                    os.unlink(p)
                except OSError:
                    pass
        outs = []
        for k, meta in enumerate(spec.outputs):
            t = got.get("output_%d" % k)
            if t is None:
                raise PimcBackendError("%s: pimc run-ref wrote no output_%d"
                                       % (self._what_short(), k))
            if list(t.shape) != meta["shape"]:
                raise PimcBackendError("%s: output %d has shape %s, traced %s"
                                       % (self._what_short(), k, list(t.shape), meta["shape"]))
            outs.append(t.to(getattr(torch, meta["dtype"])))
        if len(got) != len(spec.outputs):
            raise PimcBackendError("%s: pimc run-ref wrote %d outputs, the graph has %d"
                                   % (self._what_short(), len(got), len(spec.outputs)))
        return self._restructure(outs)

    def _restructure(self, outs):
        out_node = [n for n in self.gm.graph.nodes if n.op == "output"][0]
        leaves, spec = pytree.tree_flatten(out_node.args[0])
        if len(leaves) != len(outs) or not all(isinstance(l, torch.fx.Node) for l in leaves):
            raise PimcBackendError("%s: the graph returns %d values, pimc computed %d tensors"
                                   % (self._what_short(), len(leaves), len(outs)))
        return pytree.tree_unflatten(outs, spec)


def _io_metas(graph):
    nodes = graph["nodes"]
    by_name = {n["name"]: n for n in nodes}
    metas = [n["meta"] for n in nodes if n["op"] == "placeholder" and n["kind"] == "input"]
    for ref in nodes[-1]["args"][0]:
        meta = by_name[ref["node"]]["meta"]
        metas.append(meta[ref.get("output", 0)] if isinstance(meta, list) else meta)
    return metas


def _copy(t):
    return t.detach().clone()


def _same(a, b):
    """Equal shapes, dtypes and values (NaN equal to NaN)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    a, b = a.detach(), b.detach()
    if torch.equal(a, b):
        return True
    if a.is_floating_point() or a.is_complex():
        return bool(torch.isclose(a, b, rtol=0, atol=0, equal_nan=True).all())
    return False


def _run_pimc(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise PimcBackendError("cannot run %s: %s" % (cmd[0], e))


def _check_inference(args, what):
    for a in args:
        if isinstance(a, torch.Tensor) and a.device.type != "cpu":
            raise PimcBackendError("%s: an input is on %s; pimc's reference interpreter runs on "
                                   "the CPU" % (what, a.device))
    if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad
                                       for a in args):
        raise PimcBackendError("%s: the pimc backend is inference-only, and autograd is on for "
                               "inputs that require grad: call the compiled model under "
                               "torch.no_grad() or torch.inference_mode()" % what)


# ---------------------------------------------------------------------------------------------

class PimcBackend:
    """A Dynamo backend instance: `torch.compile(model, backend=PimcBackend(fallback="eager"))`.
    Keeps a record of every graph it compiled (report()) and a temporary directory for the
    graphs' files, removed at exit (or by close())."""

    def __init__(self, fallback="error", pimc=None, target=None, keep_dir=None, **kw):
        raise_ops = kw.pop("raise", True)
        records = kw.pop("_records", None)
        if kw:
            raise PimcBackendError("unknown pimc backend option(s) %s (known: %s)"
                                   % (", ".join(sorted(kw)), ", ".join(_OPTION_NAMES)))
        if target is not None:
            raise PimcBackendError(
                "option target=%r: graphs from torch.compile cannot be compiled for a PIM target "
                "yet (pimc's PIM backend compiles decode steps: whole causal LMs from token ids to "
                "logits, not the partial graphs Dynamo hands over); "
                "every Dynamo graph runs on pimc's reference interpreter, so leave target unset"
                % (target,))
        if fallback not in ("error", "eager"):
            raise PimcBackendError("option fallback=%r: expected 'error' or 'eager'" % (fallback,))
        if not isinstance(raise_ops, bool):
            raise PimcBackendError("option raise=%r: expected True or False" % (raise_ops,))
        self.fallback = fallback
        self.raise_ops = raise_ops
        self.pimc = find_pimc(pimc)
        self.keep_dir = keep_dir
        # Graph records; the instances behind backend="pimc" share one list (one numbering).
        self.records = records if records is not None else []
        self._tmp = None
        self._finalizer = None
        self._dirs = 0

    def _new_dir(self, index):
        if self.keep_dir:
            root = self.keep_dir
            os.makedirs(root, exist_ok=True)
        else:
            if self._tmp is None:
                self._tmp = tempfile.mkdtemp(prefix="pimc-dynamo-")
                self._finalizer = weakref.finalize(self, shutil.rmtree, self._tmp, True)
            root = self._tmp
        while True:     # a fresh directory: never reuse (another backend's graph may run there)
            self._dirs += 1
            d = os.path.join(root, "graph%d_%d" % (index, self._dirs))
            try:
                os.makedirs(d)
                return d
            except FileExistsError:
                pass

    def close(self):
        """Remove the temporary directory (the compiled graphs can no longer run)."""
        if self._finalizer is not None:
            self._finalizer()

    def __call__(self, gm, example_inputs, **kw):
        if _merge_options(kw):
            raise PimcBackendError("pass options to PimcBackend(...), not to torch.compile, when "
                                   "the backend is an instance (got %s)" % ", ".join(sorted(kw)))
        compile_id = None
        try:
            from torch._guards import CompileContext
            cid = CompileContext.current_compile_id()
            compile_id = str(cid) if cid is not None else None
        except Exception:       # older torch: no compile ids in the report
            pass
        record = _GraphRecord(len(self.records) + 1, compile_id, gm)
        self.records.append(record)
        compiled = _CompiledGraph(self, gm, record, example_inputs)
        what = compiled._what_short()
        _check_inference(example_inputs, what)
        # Under dynamic shapes the sizes arrive as SymInts: specialise on the first call's values.
        symbolic = any(isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool))
                       or type(a).__name__ == "FakeTensor" for a in example_inputs)
        if not symbolic:
            compiled.prepare(list(example_inputs))
        return compiled

    def report(self):
        return Report(self.records)


def _merge_options(kw):
    """torch.compile passes options={...} (and mode=, name= when set) as keyword arguments."""
    kw = dict(kw)
    opts = dict(kw.pop("options", None) or {})
    mode = kw.pop("mode", None)
    kw.pop("name", None)
    if mode not in (None, "default"):
        raise PimcBackendError("mode=%r: the pimc backend has no compile modes" % (mode,))
    opts.update(kw)
    return opts


class Report:
    """The graphs a backend compiled, their graph breaks and where each ran."""

    def __init__(self, records, max_diff=None):
        self.graphs = list(records)
        self.max_diff = max_diff

    @property
    def graph_breaks(self):
        return [r.graph_break for r in self.graphs if r.graph_break is not None]

    def interpreted(self):
        return [r for r in self.graphs if r.where == _WHERE_INTERPRETER]

    def eager(self):
        return [r for r in self.graphs if r.where == _WHERE_EAGER]

    def __str__(self):
        out = ["pimc dynamo report: %d graph(s), %d graph break(s); %d graph(s) on pimc's "
               "reference interpreter, %d eager (fallback)"
               % (len(self.graphs), len(self.graph_breaks), len(self.interpreted()),
                  len(self.eager()))]
        for r in self.graphs:
            out.extend(r.lines())
        out.append("no graph is compiled for a PIM target: pimc's PIM backend compiles decode "
                   "steps of whole causal LMs (pimc compile graph.json), not Dynamo's graphs")
        if self.max_diff is not None:
            out.append("outputs vs eager: max |diff| %.3g" % self.max_diff)
        return "\n".join(out)


# The instances behind backend="pimc", one per distinct set of options, and their records.
_SHARED = {}
_SHARED_RECORDS = []


def pimc_backend(gm, example_inputs, **kw):
    """The entry point torch.compile(backend="pimc") calls (python/pyproject.toml)."""
    opts = _merge_options(kw)
    key = tuple(sorted((k, repr(v)) for k, v in opts.items()))
    backend = _SHARED.get(key)
    if backend is None:
        backend = PimcBackend(_records=_SHARED_RECORDS, **opts)
        _SHARED[key] = backend
    return backend(gm, example_inputs)


def report():
    """Report of every graph the registered "pimc" backend compiled in this process."""
    return Report(_SHARED_RECORDS)


def reset():
    """Forget the shared backends' records (their files are removed at exit)."""
    del _SHARED_RECORDS[:]


def _max_diff(a, b):
    la, sa = pytree.tree_flatten(a)
    lb, sb = pytree.tree_flatten(b)
    if sa != sb or len(la) != len(lb):
        raise PimcBackendError("the compiled model returns a different structure than eager: %s "
                               "vs %s" % (sb, sa))
    worst = 0.0
    for x, y in zip(la, lb):
        if isinstance(x, torch.Tensor):
            if not isinstance(y, torch.Tensor) or x.shape != y.shape or x.dtype != y.dtype:
                raise PimcBackendError("compiled output %s differs in type/shape/dtype from "
                                       "eager %s" % (_describe_signature([y]),
                                                     _describe_signature([x])))
            if x.numel():
                d = (x.double() - y.double()).abs().max().item()
                worst = max(worst, d)
        elif x != y:
            raise PimcBackendError("compiled output %r differs from eager %r" % (y, x))
    return worst


def explain(model, *inputs, options=None, **kwargs):
    """Compile `model` with a fresh pimc backend, run it on `inputs` (and keyword `kwargs`)
    under no_grad next to eager, and return the Report: every graph, its graph break, where
    it ran, and the largest difference from eager. Resets Dynamo's caches first (as
    torch._dynamo.explain does)."""
    backend = PimcBackend(**(options or {}))
    torch._dynamo.reset()
    try:
        compiled = torch.compile(model, backend=backend)
        with torch.no_grad():
            want = model(*inputs, **kwargs)
            got = compiled(*inputs, **kwargs)
        return Report(backend.records, _max_diff(want, got))
    finally:
        torch._dynamo.reset()


# ---------------------------------------------------------------------------------------------

def main(argv=None):
    import argparse
    import json
    from .cli import CliError, load_class, make_inputs, parse_input_spec
    p = argparse.ArgumentParser(
        prog="python -m pimc_torch.dynamo",
        description="Run a module through torch.compile(backend='pimc') and print the report: "
                    "graphs, graph breaks, where each graph ran, difference from eager.")
    p.add_argument("module", help="path/module.py:ClassName (a torch.nn.Module subclass)")
    p.add_argument("--input", action="append", default=[], metavar="NAME:DTYPE:SHAPE[:LO..HI]",
                   help="one forward() argument, in order (as in python -m pimc_torch export)")
    p.add_argument("--kwargs", help="JSON object of constructor keyword arguments")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fallback", choices=("error", "eager"), default="error")
    p.add_argument("--no-raise", action="store_true", help="pimc import --no-raise")
    p.add_argument("--keep-dir", help="keep each graph's files under this directory")
    args = p.parse_args(argv)
    try:
        specs = [parse_input_spec(s) for s in args.input]
        if not specs:
            raise CliError("at least one --input is needed")
        try:
            kwargs = json.loads(args.kwargs) if args.kwargs else {}
        except json.JSONDecodeError as e:
            raise CliError("bad --kwargs %r: not JSON: %s" % (args.kwargs, e))
        _, cls = load_class(args.module)
        torch.manual_seed(args.seed)
        try:
            module = cls(**kwargs).eval()
        except Exception as e:
            raise CliError("%s(**%s) failed: %s: %s" % (cls.__name__, json.dumps(kwargs),
                                                        type(e).__name__, e))
        inputs = make_inputs(specs, args.seed)
        rep = explain(module, *inputs, options={"fallback": args.fallback,
                                                "raise": not args.no_raise,
                                                "keep_dir": args.keep_dir})
    except (CliError, PimcBackendError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    except torch._dynamo.exc.BackendCompilerFailed as e:
        print("error: %s" % getattr(e, "inner_exception", e), file=sys.stderr)
        return 1
    print(rep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
