#!/usr/bin/env python3
"""Write the torch-bridge test fixture: every test model exported through the bridge and ONNX,
with goldens, plus malformed inputs.

    build/venv/bin/python3 python/pimc_torch/make_testdata.py --out DIR [--only llama,gpt2] [--seed 0]

DIR/<model>/
    graph.json, graph.safetensors    the bridge's export (torch.export; make_fx where it refuses the model)
    model.onnx                       torch.onnx.export (TorchScript exporter), opset 17
    inputs.safetensors               input_0.. (seeded random), inputs of both graph.json and model.onnx
    outputs.safetensors              output_0..: the eager PyTorch module's outputs
    inputs_alt.safetensors,          a second seeded input and its eager outputs: a trace is
    outputs_alt.safetensors          specialised to inputs.safetensors (nonzero counts), these
                                     show whether an imported graph generalises
DIR/bad/<case>/                      one defect each, listed in DIR/bad/manifest.json

Deterministic: the same --seed gives byte-identical files (each model's RNG is seeded from
sha256(model, seed), so --only writes exactly what a full run writes). DIR/manifest.json lists
the models, their class, constructor arguments and inputs.
"""

import argparse
import hashlib
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch                                           # noqa: E402

from pimc_torch import exporter, graph_format as gf, models  # noqa: E402
from pimc_torch.cli import InputSpec, make_inputs      # noqa: E402
from pimc_testgen import safetensors_io as st          # noqa: E402

HIDDEN = InputSpec("x", "float32", [1, 8, 64], None, None)

# name -> (class, constructor kwargs, inputs, what it exercises)
MODELS = {
    "llama": (models.LlamaStack, {}, [HIDDEN],
              "2 layers, GQA 4q/2kv via repeat_kv, half-split RoPE, causal, SwiGLU"),
    "llama_interleaved": (models.LlamaStack, {"rope_layout": "interleaved"}, [HIDDEN],
                          "llama with GPT-J interleaved RoPE (rotate_every_two)"),
    "llama_sliding": (models.LlamaStack, {"sliding_window": 3}, [HIDDEN],
                      "llama with a sliding-window (3) causal mask"),
    "llama_yarn": (models.LlamaStack,
                   {"rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                     "original_max_position_embeddings": 1024,
                                     "beta_fast": 32, "beta_slow": 1}}, [HIDDEN],
                   "llama with HF's YaRN rope_scaling (factor 4, original context 1024: "
                   "ramp over dims 1..5, attention factor 0.1 ln 4 + 1 on cos and sin)"),
    "mixtral_dense": (models.MixtralStack, {"dispatch": "dense"}, [HIDDEN],
                      "2 layers, 4 experts top-2, dense: every expert on every token, scattered routing"),
    # The sparse dispatch has data-dependent sizes (torch.where's counts): torch.export traces
    # them as unbacked sizes, and the bridge specialises the graph to the example (the importer
    # checks each count at run time). These use HF's "eager" attention (matmul, mask, softmax,
    # matmul), the other spelling raising must recognise.
    "mixtral_sparse": (models.MixtralStack, {"dispatch": "sparse", "attn_implementation": "eager"},
                       [HIDDEN], "2 layers, 4 experts top-2, sparse dispatch: torch.where + index_add_"),
    "mixtral_sparse_hf": (models.MixtralStack,
                          {"dispatch": "sparse_hf", "attn_implementation": "eager"}, [HIDDEN],
                          "mixtral_sparse on HF's permuted [E, K, T] mask: (slot, token) pairs"),
    # DeepSeek's per-expert loop skips experts without tokens: 2 tokens, 8 experts top-2, so
    # the trace leaves out at least half of the experts per layer and inputs_alt routes tokens
    # to some of them (raise-check.test). The raised graph must fail there, not drop those experts.
    "moe_skip": (models.MixtralStack,
                 {"dispatch": "sparse_skip", "num_experts": 8, "attn_implementation": "eager"},
                 [InputSpec("x", "float32", [1, 2, 64], None, None)],
                 "DeepSeek's sparse loop skipping empty experts (8 experts top-2, 2 tokens): "
                 "the trace holds only the example's experts"),
    "qwen2_moe": (models.MixtralStack,
                  {"dispatch": "sparse_hf", "norm_topk_prob": False,
                   "shared_expert_intermediate_size": 80, "attn_implementation": "eager"}, [HIDDEN],
                  "HF Qwen2MoeSparseMoeBlock: 4 experts top-2 without renormalisation, sparse_hf "
                  "dispatch, + sigmoid(shared_expert_gate(x)) * shared_expert(x) (width 80)"),
    "gpt2": (models.GPT2Stack, {}, [InputSpec("input_ids", "int64", [1, 8], 0, 96)],
             "2 layers, MHA 4 heads, learned positions, LayerNorm, GELU tanh, Conv1D c_attn, tied head"),
}

# Malformed inputs: name -> (source model, what is wrong). Each is one defect on a valid export.
BAD = {
    "dangling_ref": ("llama", "graph.json: the first aten.linear reads node 'no_such_node', which does not exist"),
    "linear_extra_arg": ("llama", "graph.json: the first aten.linear.default has 4 positional arguments"),
    "bad_version": ("llama", "graph.json: format version 99"),
    "truncated_onnx": ("llama", "model.onnx cut to half its size"),
}


def model_seed(name, seed):
    h = hashlib.sha256(("%s:%d" % (name, seed)).encode()).digest()
    return int.from_bytes(h[:4], "little")


def write_model(out, name, seed):
    cls, kwargs, specs, _ = MODELS[name]
    s = model_seed(name, seed)
    torch.manual_seed(s)
    module = cls(**kwargs).eval()
    inputs = make_inputs(specs, s)
    names = [sp.name for sp in specs]
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    graph, tensors = exporter.trace(module, inputs, names)
    alt = make_inputs(specs, s ^ 0x5A5A5A5A)
    with torch.no_grad():
        outs = exporter._flatten_outputs(module(*inputs), cls.__name__)
        alt_outs = exporter._flatten_outputs(module(*alt), cls.__name__)
    with gf.AtomicFiles() as files:
        exporter.write_graph(graph, tensors, os.path.join(d, "graph.json"),
                             os.path.join(d, "graph.safetensors"), files)
        exporter.export_onnx(module, inputs, os.path.join(d, "model.onnx"), names, files=files)
        files.write(os.path.join(d, "inputs.safetensors"),
                    st.serialize({"input_%d" % i: t for i, t in enumerate(inputs)}))
        files.write(os.path.join(d, "outputs.safetensors"),
                    st.serialize({"output_%d" % i: t.contiguous() for i, t in enumerate(outs)}))
        files.write(os.path.join(d, "inputs_alt.safetensors"),
                    st.serialize({"input_%d" % i: t for i, t in enumerate(alt)}))
        files.write(os.path.join(d, "outputs_alt.safetensors"),
                    st.serialize({"output_%d" % i: t.contiguous() for i, t in enumerate(alt_outs)}))
    return {"class": cls.__name__, "kwargs": kwargs, "seed": s, "tracer": graph["producer"]["tracer"],
            "inputs": ["%s:%s:%s" % (sp.name, sp.dtype, "x".join(map(str, sp.shape))) for sp in specs],
            "ops": sum(1 for n in graph["nodes"] if n["op"] == "call_function")}


def _first_linear(graph):
    for n in graph["nodes"]:
        if n["op"] == "call_function" and n["target"] == "aten.linear":
            return n
    raise RuntimeError("no aten.linear in the source graph")


def write_bad(out):
    bad = os.path.join(out, "bad")
    if os.path.exists(bad):
        shutil.rmtree(bad)
    os.makedirs(bad)
    for case, (src, _) in BAD.items():
        d = os.path.join(bad, case)
        os.makedirs(d)
        s = os.path.join(out, src)
        if case == "truncated_onnx":
            with open(os.path.join(s, "model.onnx"), "rb") as f:
                data = f.read()
            with open(os.path.join(d, "model.onnx"), "wb") as f:
                f.write(data[:len(data) // 2])
            continue
        shutil.copyfile(os.path.join(s, "graph.safetensors"), os.path.join(d, "graph.safetensors"))
        with open(os.path.join(s, "graph.json")) as f:
            graph = json.load(f)
        if case == "dangling_ref":
            _first_linear(graph)["args"][0] = {"node": "no_such_node"}
        elif case == "linear_extra_arg":
            linear = _first_linear(graph)
            linear["args"] += [None] * (4 - len(linear["args"]))
        elif case == "bad_version":
            graph["version"] = 99
        with open(os.path.join(d, "graph.json"), "w") as f:
            f.write(gf.dumps(graph))
    with open(os.path.join(bad, "manifest.json"), "w") as f:
        json.dump({k: v[1] for k, v in BAD.items()}, f, indent=2, sort_keys=True)
        f.write("\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--only", help="comma-separated models (default: all): " + ", ".join(MODELS))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    only = args.only.split(",") if args.only else list(MODELS)
    unknown = [m for m in only if m not in MODELS]
    if unknown:
        print("error: unknown model(s) %s (have: %s)" % (", ".join(unknown), ", ".join(MODELS)),
              file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    manifest = {}
    try:
        for name in only:
            manifest[name] = write_model(args.out, name, args.seed)
            manifest[name]["what"] = MODELS[name][3]
        if all(src in only for src, _ in BAD.values()):
            write_bad(args.out)
    except (exporter.ExportError, gf.GraphFormatError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    print("wrote %d model(s) to %s in %.1f s" % (len(only), args.out, time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
