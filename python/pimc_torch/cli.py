"""python3 -m pimc_torch {export,check}: see docs/torch-bridge.md."""

import argparse
import importlib.util
import inspect
import json
import os
import re
import sys

USAGE_EXAMPLE = """examples:
  python3 -m pimc_torch export python/pimc_torch/models.py:LlamaStack \\
      --input x:float32:1x8x64 -o out/llama --golden --onnx
  python3 -m pimc_torch export models.py:GPT2Stack --input input_ids:int64:1x8:0..96 \\
      --kwargs '{"n_layer": 1}' -o out/gpt2
  python3 -m pimc_torch check out/llama        # validate + replay against the goldens
  python3 -m pimc_torch export --hf config.json --seq-len 8 -o out/hf --golden
  python3 -m pimc_torch export --hf config.json --mode decode --max-cache-len 32 -o out/step
"""

# export options that only --hf takes, and their defaults (None in the parser, so that giving
# one without --hf is an error).
HF_DEFAULTS = {"seq_len": 8, "batch": 1, "mode": "prefill", "max_cache_len": None,
               "attn_implementation": "sdpa", "dynamic_seq": False, "seq_range": None}

INPUT_DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "bool")
DEFAULT_INT_RANGE = (0, 16)


class CliError(Exception):
    pass


class InputSpec:
    def __init__(self, name, dtype, shape, low, high):
        self.name, self.dtype, self.shape, self.low, self.high = name, dtype, shape, low, high


_SPEC = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):([a-z0-9]+):([0-9]+(?:x[0-9]+)*)"
                   r"(?::(-?[0-9]+)\.\.(-?[0-9]+))?$")


def parse_input_spec(text):
    """name:dtype:DxDxD[:low..high] (the range, high exclusive, only for integer inputs)."""
    m = _SPEC.match(text)
    if not m:
        raise CliError("bad --input %r: expected name:dtype:shape[:low..high], e.g. x:float32:1x8x64 "
                       "or ids:int64:1x8:0..100" % text)
    name, dtype, shape, low, high = m.groups()
    if dtype not in INPUT_DTYPES:
        raise CliError("bad --input %r: dtype %r is not one of %s" % (text, dtype, ", ".join(INPUT_DTYPES)))
    dims = [int(d) for d in shape.split("x")]
    if any(d == 0 for d in dims):
        raise CliError("bad --input %r: zero-sized dimension" % text)
    if low is not None:
        if dtype not in ("int64", "int32"):
            raise CliError("bad --input %r: a value range is only for int64/int32 inputs" % text)
        low, high = int(low), int(high)
        if high <= low:
            raise CliError("bad --input %r: empty range %d..%d" % (text, low, high))
    elif dtype in ("int64", "int32"):
        low, high = DEFAULT_INT_RANGE
    return InputSpec(name, dtype, dims, low, high)


def make_inputs(specs, seed):
    """Seeded random inputs: floats N(0, 1), integers uniform in [low, high), bools 0/1."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    out = []
    for s in specs:
        if s.dtype in ("int64", "int32"):
            t = torch.randint(s.low, s.high, s.shape, generator=gen, dtype=getattr(torch, s.dtype))
        elif s.dtype == "bool":
            t = torch.randint(0, 2, s.shape, generator=gen).bool()
        else:
            t = torch.randn(s.shape, generator=gen, dtype=torch.float32).to(getattr(torch, s.dtype))
        out.append(t)
    return out


def load_class(ref):
    """'path/module.py:ClassName' -> the class, with clear errors."""
    if ":" not in ref:
        raise CliError("bad module reference %r: expected path/module.py:ClassName" % ref)
    path, cls_name = ref.rsplit(":", 1)
    if not os.path.isfile(path):
        raise CliError("%s: no such file" % path)
    mod_name = "pimc_torch_user_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(mod_name, os.path.abspath(path))
    if spec is None or spec.loader is None:
        raise CliError("%s: not a Python module" % path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = mod
    # The module's own directory first, so it can import its siblings.
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(mod)
    except Exception as e:
        raise CliError("%s: cannot import: %s: %s" % (path, type(e).__name__, e))
    cls = getattr(mod, cls_name, None)
    if cls is None:
        import torch
        have = sorted(n for n, v in vars(mod).items()
                      if inspect.isclass(v) and issubclass(v, torch.nn.Module)
                      and v.__module__ == mod_name)
        raise CliError("%s has no class '%s' (torch.nn.Module classes there: %s)"
                       % (path, cls_name, ", ".join(have) or "none"))
    import torch
    if not (inspect.isclass(cls) and issubclass(cls, torch.nn.Module)):
        raise CliError("%s:%s is not a torch.nn.Module class" % (path, cls_name))
    return path, cls


def cmd_export(args):
    given_hf = sorted("--" + k.replace("_", "-") for k in HF_DEFAULTS
                      if getattr(args, k) is not None)
    if args.hf is not None:
        if args.module is not None or args.input or args.kwargs:
            raise CliError("--hf CONFIG.json builds the model itself: no MODULE.py:Class, "
                           "--input or --kwargs")
        for k, v in HF_DEFAULTS.items():
            if getattr(args, k) is None:
                setattr(args, k, v)
        from . import hf_export
        return hf_export.cmd_export_hf(args)
    if given_hf:
        raise CliError("%s only with --hf CONFIG.json" % ", ".join(given_hf))
    if args.module is None:
        raise CliError("export needs MODULE.py:Class (or --hf CONFIG.json)")
    specs = [parse_input_spec(s) for s in args.input]
    if not specs:
        raise CliError("at least one --input is needed")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise CliError("--input names must be unique, got %s" % ", ".join(names))
    try:
        kwargs = json.loads(args.kwargs) if args.kwargs else {}
    except json.JSONDecodeError as e:
        raise CliError("bad --kwargs %r: not JSON: %s" % (args.kwargs, e))
    if not isinstance(kwargs, dict):
        raise CliError("bad --kwargs %r: must be a JSON object" % args.kwargs)
    path, cls = load_class(args.module)

    import torch
    from . import exporter, graph_format as gf
    from pimc_testgen import safetensors_io as st
    torch.manual_seed(args.seed)
    try:
        module = cls(**kwargs)
    except Exception as e:
        raise CliError("%s(**%s) failed: %s: %s" % (cls.__name__, json.dumps(kwargs),
                                                    type(e).__name__, e))
    module.eval()
    inputs = make_inputs(specs, args.seed)

    os.makedirs(args.output, exist_ok=True)
    graph, tensors = exporter.trace(module, inputs, names, args.tracer)
    graph["module"] = "%s:%s" % (os.path.basename(path), cls.__name__)
    with gf.AtomicFiles() as files:
        exporter.write_graph(graph, tensors, os.path.join(args.output, "graph.json"),
                             os.path.join(args.output, "graph.safetensors"), files)
        if args.onnx:
            exporter.export_onnx(module, inputs, os.path.join(args.output, "model.onnx"), names,
                                 files=files)
        if args.golden:
            with torch.no_grad():
                outs = exporter._flatten_outputs(module(*inputs), cls.__name__)
            files.write(os.path.join(args.output, "inputs.safetensors"),
                        st.serialize({"input_%d" % i: t for i, t in enumerate(inputs)}))
            files.write(os.path.join(args.output, "outputs.safetensors"),
                        st.serialize({"output_%d" % i: t.contiguous() for i, t in enumerate(outs)}))
    n_ops = sum(1 for n in graph["nodes"] if n["op"] == "call_function")
    print("%s: %d ops, %d tensors (%s) -> %s" % (graph["module"], n_ops, len(tensors),
                                               graph["producer"]["tracer"], args.output))
    return 0


def check_onnx(path):
    """Parse and check an .onnx file; a summary of its opset and op types."""
    import onnx
    if not os.path.isfile(path):
        raise CliError("%s: no such file" % path)
    try:
        model = onnx.load(path)
        onnx.checker.check_model(model)
    except Exception as e:
        raise CliError("%s: not a valid ONNX model: %s" % (path, str(e).strip().splitlines()[0]
                                                           if str(e).strip() else type(e).__name__))
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
    ops = sorted({n.op_type for n in model.graph.node})
    return "%s: valid ONNX, opset %d, %d nodes, %d initializers, ops: %s" % (
        path, opset, len(model.graph.node), len(model.graph.initializer), ", ".join(ops))


def cmd_check(args):
    from . import graph_format as gf
    path = args.graph
    if path.endswith(".onnx"):
        print(check_onnx(path))
        return 0
    json_path = os.path.join(path, "graph.json") if os.path.isdir(path) else path
    graph = gf.load(json_path)
    from . import graph_ext
    extra = graph_ext.validate(graph, json_path)
    from . import replay
    report = replay.check(json_path, graph, inputs=args.inputs, expect=args.expect,
                          atol=args.atol, rtol=args.rtol, schema_only=args.no_run)
    if graph.get("mutations"):
        # The initial states stored with the parameters (init "parameters").
        from pimc_testgen import safetensors_io as st
        params = os.path.join(os.path.dirname(os.path.abspath(json_path)), graph["parameters"])
        graph_ext.validate(graph, json_path, st.read_header_file(params)[1])
    print(report + ("; " + extra if extra else ""))
    return 0


def cmd_compare(args):
    from . import replay
    print(replay.compare_files(args.got, args.expect, args.atol, args.rtol))
    return 0


def cmd_ort_run(args):
    from . import ort
    try:
        print(ort.run(args.model, args.inputs, args.output))
    except ort.OrtError as e:
        raise CliError(str(e))
    return 0


def build_parser():
    p = argparse.ArgumentParser(
        prog="python3 -m pimc_torch",
        description="Export PyTorch modules to pimc's JSON ATen graph (docs/frontend-graphs.md).",
        epilog=USAGE_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="{export,check,compare,ort-run}")
    e = sub.add_parser("export", help="trace a module and write graph.json + graph.safetensors",
                       epilog=USAGE_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("module", nargs="?",
                   help="path/module.py:ClassName (a torch.nn.Module subclass); not with --hf")
    e.add_argument("--hf", metavar="CONFIG.json",
                   help="export transformers' AutoModelForCausalLM for this config (random "
                        "seeded float32 weights) instead of a module (docs/torch-export-hf.md)")
    e.add_argument("--mode", choices=("prefill", "decode"),
                   help="--hf: prefill = input_ids [B, T] -> logits, no cache (default); decode "
                        "= one step input_ids [B, 1], cache_position [1] with a StaticCache")
    e.add_argument("--seq-len", type=int, metavar="T",
                   help="--hf: prefill length, or for decode the tokens already in the cache "
                        "(default 8)")
    e.add_argument("--batch", type=int, metavar="B", help="--hf: batch size (default 1)")
    e.add_argument("--max-cache-len", type=int, metavar="L",
                   help="--hf --mode decode: StaticCache length (required)")
    e.add_argument("--attn-implementation", choices=("sdpa", "eager"),
                   help="--hf: transformers' attention implementation (default sdpa)")
    e.add_argument("--dynamic-seq", action="store_true", default=None,
                   help="--hf prefill: export T as a torch.export Dim, recorded in the graph")
    e.add_argument("--seq-range", metavar="LO..HI",
                   help="--dynamic-seq: the Dim's range (default 1..max_position_embeddings)")
    e.add_argument("--input", action="append", default=[], metavar="NAME:DTYPE:SHAPE[:LO..HI]",
                   help="one forward() argument, in order, e.g. x:float32:1x8x64 or "
                        "ids:int64:1x8:0..100 (integers uniform in [LO, HI), default 0..16)")
    e.add_argument("--kwargs", help="JSON object of constructor keyword arguments")
    e.add_argument("--seed", type=int, default=0,
                   help="seeds the module's initialisation and the random inputs (default 0)")
    e.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="output directory")
    e.add_argument("--golden", action="store_true",
                   help="also write inputs.safetensors (input_0..) and the eager module's "
                        "outputs.safetensors (output_0..)")
    e.add_argument("--onnx", action="store_true",
                   help="also write model.onnx (torch.onnx.export, opset 17)")
    e.add_argument("--tracer", choices=("auto", "make_fx", "torch.export", "torch.export-core"),
                   default="auto",
                   help="auto: torch.export, make_fx where torch.export refuses the model; "
                        "torch.export-core: torch.export decomposed to the core ATen opset")
    c = sub.add_parser("check", help="validate a graph.json and replay it with torch's ATen ops "
                                     "(or check a model.onnx)")
    c.add_argument("graph", help="graph.json, a directory holding it, or a .onnx file")
    c.add_argument("--inputs", help="inputs.safetensors (default: beside the graph, if present)")
    c.add_argument("--expect", help="outputs.safetensors (default: beside the graph, if present)")
    c.add_argument("--atol", type=float, default=1e-5)
    c.add_argument("--rtol", type=float, default=1e-5)
    c.add_argument("--no-run", action="store_true",
                   help="only validate the format, the parameters and each op's arguments")
    m = sub.add_parser("compare", help="compare output_0.. of two safetensors files "
                                       "(e.g. onnxruntime's outputs with the goldens)")
    m.add_argument("got", help="safetensors file with output_0, output_1, ...")
    m.add_argument("expect", help="safetensors file with the expected output_0, ...")
    m.add_argument("--atol", type=float, default=1e-5)
    m.add_argument("--rtol", type=float, default=1e-5)
    r = sub.add_parser("ort-run", help="run a model.onnx with onnxruntime (CPU) on safetensors "
                                       "inputs (input_0.. by position), write output_0..")
    r.add_argument("model", help="model.onnx")
    r.add_argument("inputs", help="safetensors file with input_0, input_1, ...")
    r.add_argument("output", help="safetensors file to write")
    return p


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    # pimc_testgen (the safetensors writer) sits beside this package.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # Torch is imported only by the commands that need it: format errors stay fast.
    from .graph_format import ExportError, GraphFormatError
    try:
        return {"export": cmd_export, "check": cmd_check, "compare": cmd_compare,
                "ort-run": cmd_ort_run}[args.command](args)
    except (CliError, ExportError, GraphFormatError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
