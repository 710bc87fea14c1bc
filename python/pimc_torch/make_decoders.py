#!/usr/bin/env python3
"""Write the decoder-LM fixture: small causal LMs (token ids -> logits) exported through the torch
bridge and ONNX at a prompt of 8 tokens, with golden greedy tokens from eager PyTorch decoding
with a KV cache on the same weights.

    build/venv/bin/python3 python/pimc_torch/make_decoders.py --out DIR [--only llama_lm,gpt2_lm] [--seed 0]

The exported graphs have no cache: a compiler that synthesizes a decode step with KV caches from
them must reproduce the tokens in generate.json.

DIR/<model>/ (llama_lm, llama_interleaved_lm, llama_sliding_lm, llama_yarn_lm, mixtral_dense_lm,
mixtral_sparse_lm, qwen2_moe_lm, gpt2_lm)
    graph.json, graph.safetensors    the bridge's export of forward(input_ids [1, 8] int64) -> logits
    model.onnx                       torch.onnx.export (TorchScript exporter), opset 17
    inputs.safetensors               input_0: the prompt ids [1, 8]
    outputs.safetensors              output_0: the eager full forward's logits [1, 8, V]
    generate.json                    prompt (8 ids), tokens (16 greedy ids), vocab, margins (16:
                                     top-1 minus top-2 logit of each step), context (24), what
    logits.safetensors               step_0 .. step_15: the [V] f32 logits each token was taken from
DIR/llama_static/                    one decode step over a static cache, on llama_lm's weights:
    graph.json, graph.safetensors,   forward(input_ids [1, 1], cache_position [1], k_0, v_0, k_1,
    model.onnx                       v_1) -> (logits [1, 1, V], k_0', v_0', k_1', v_1'), caches
                                     [1, 2, 24, 16] updated out of place with index_copy
    inputs.safetensors,              the step at cache_position 8 (the caches hold the prompt, the
    outputs.safetensors              input is the first generated token) and its eager outputs
    generate.json, logits.safetensors   as above, decoded with the static step itself (prompt one
                                     token at a time); the tokens must equal llama_lm's
DIR/llama_optimum/                   transformers' LlamaForCausalLM (decoder_config.json), exported
                                     by onnx_decoder.py in optimum's decoder-with-past layout
                                     (model.onnx plus its onnxruntime-checked input/output sets);
                                     generate.json and logits.safetensors from transformers' own
                                     greedy decoding with a DynamicCache; onnxruntime must also
                                     give transformers' logits with an empty past (the form
                                     pimc compiles)

Greedy decoding: the prompt is prefilled with forward_cached (positions 0..7), each token is the
argmax of the last row of logits (the lowest index on ties), then each new token is fed alone with
the cache; 16 tokens. At every step the script also runs the cache-less forward over prompt +
tokens so far and requires its last row to equal the cached path's logits within 1e-5 absolute,
scaled by the row's largest |logit| when that is above 1 (GPT-2's tied head gives logits near 50,
where float32 rounding of two summation orders alone differs by about 2e-5); anything else is an
error naming the model and the step. Margins below 1e-3 are kept and recorded as they are (no seed
search).

Deterministic: the same --seed gives byte-identical files (one intra-op thread; each model's RNG
is seeded from sha256(model, seed) as in make_testdata.py, so --only writes exactly what a full
run writes; the prompt comes from a generator with the same seed). DIR/manifest.json lists the
models, their class, constructor arguments, seed, tracer, op count and smallest margin.
"""

import argparse
import copy
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch                                           # noqa: E402

from pimc_torch import exporter, graph_format as gf, models  # noqa: E402
from pimc_torch import make_testdata                   # noqa: E402
from pimc_torch.cli import InputSpec, make_inputs      # noqa: E402
from pimc_testgen import safetensors_io as st          # noqa: E402

PROMPT_LEN = 8
NEW_TOKENS = 16
CONTEXT = PROMPT_LEN + NEW_TOKENS
CHECK_ATOL = 1e-5

_TD = make_testdata.MODELS

# name -> (class, constructor kwargs, what it exercises)
MODELS = {
    "llama_lm": (models.DecoderLM, {"stack": "LlamaStack"},
                 "DecoderLM(LlamaStack): embedding 96x64, 2 layers GQA 4q/2kv, half-split RoPE, "
                 "causal SDPA, SwiGLU, final RMSNorm, untied lm_head"),
    "llama_interleaved_lm": (models.DecoderLM, {"stack": "LlamaStack", "rope_layout": "interleaved"},
                             "llama_lm with GPT-J interleaved RoPE (rotate_every_two)"),
    "llama_sliding_lm": (models.DecoderLM, {"stack": "LlamaStack", "sliding_window": 3},
                         "llama_lm with a sliding-window (3) causal mask: a query at position p "
                         "sees keys p-2..p"),
    "llama_yarn_lm": (models.DecoderLM, dict({"stack": "LlamaStack"}, **_TD["llama_yarn"][1]),
                      "llama_lm with make_testdata.py's llama_yarn rope_scaling (YaRN factor 4, "
                      "original context 1024, betas 32/1)"),
    "mixtral_dense_lm": (models.DecoderLM, {"stack": "MixtralStack", "dispatch": "dense"},
                         "DecoderLM(MixtralStack): 4 experts top-2, dense dispatch"),
    "mixtral_sparse_lm": (models.DecoderLM,
                          {"stack": "MixtralStack", "dispatch": "sparse",
                           "attn_implementation": "eager"},
                          "DecoderLM(MixtralStack): 4 experts top-2, sparse dispatch (torch.where "
                          "+ index_add_, specialised to the prompt's routing), eager attention"),
    "qwen2_moe_lm": (models.DecoderLM, dict({"stack": "MixtralStack"}, **_TD["qwen2_moe"][1]),
                     "DecoderLM(MixtralStack) with make_testdata.py's qwen2_moe block: top-2 without "
                     "renormalisation, sparse_hf dispatch, sigmoid-gated shared expert (80)"),
    "gpt2_lm": (models.GPT2Stack, {},
                "GPT2Stack as it is (32 learned positions, tied head): MHA 4 heads, LayerNorm, "
                "GELU tanh"),
}
# name -> (the LM whose weights, seed and prompt it uses, what)
STATIC = {
    "llama_static": ("llama_lm",
                     "one decode step of llama_lm over a static cache of 24 positions: "
                     "forward(input_ids [1,1], cache_position [1], k_0, v_0, k_1, v_1) -> "
                     "(logits [1,1,96], k_0', v_0', k_1', v_1'); index_copy at cache_position, "
                     "attention over all 24 slots with slots after cache_position masked"),
}
# name -> (transformers config fields, what): optimum-layout decoders with past
# (onnx_decoder.py), decoded by transformers itself.
OPTIMUM = {
    "llama_optimum": ({"model_type": "llama", "vocab_size": 96, "hidden_size": 64,
                       "intermediate_size": 128, "num_hidden_layers": 2,
                       "num_attention_heads": 4, "num_key_value_heads": 2,
                       "max_position_embeddings": 64, "rms_norm_eps": 1e-6,
                       "rope_theta": 10000.0, "tie_word_embeddings": False},
                      "transformers LlamaForCausalLM (hidden 64, 2 layers, GQA 4q/2kv) exported "
                      "by onnx_decoder.py in optimum's decoder-with-past layout (dynamic axes, "
                      "opset 17); goldens from transformers' own greedy decoding with a "
                      "DynamicCache"),
}
ALL = list(MODELS) + list(STATIC) + list(OPTIMUM)


class DecodeError(RuntimeError):
    pass


def model_seed(name, seed):
    return make_testdata.model_seed(name, seed)


def build(name, seed):
    """(module, prompt [1, 8] int64, seed) of an LM in MODELS."""
    cls, kwargs, _ = MODELS[name]
    s = model_seed(name, seed)
    torch.manual_seed(s)
    module = cls(**copy.deepcopy(kwargs)).eval()
    vocab = module.lm_head.out_features
    if isinstance(module, models.GPT2Stack) and module.wpe.num_embeddings < CONTEXT:
        raise DecodeError("%s: GPT2Stack has %d positions, the fixture needs %d"
                          % (name, module.wpe.num_embeddings, CONTEXT))
    prompt = make_inputs([InputSpec("input_ids", "int64", [1, PROMPT_LEN], 0, vocab)], s)[0]
    return module, prompt, s


def pick(row):
    """(greedy token: the lowest index of the largest logit, top-1 minus top-2 logit)."""
    best = row.max()
    token = int(torch.nonzero(row == best)[0, 0])
    top2 = torch.topk(row, 2).values
    return token, float(top2[0] - top2[1])


def _check_row(name, step, got, full):
    """The cached path's logits against the cache-less forward's last row."""
    diff = float((got - full).abs().max())
    tol = CHECK_ATOL * max(1.0, float(full.abs().max()))
    if not diff <= tol:
        raise DecodeError("%s: step %d: the KV-cache logits differ from the cache-less forward's "
                          "last row by %.3g (tolerance %.3g)" % (name, step, diff, tol))
    return diff


def _greedy(name, prompt, prefill, step, full):
    """Greedy decoding: `prefill(prompt)` and `step(token)` give the cached path's [1, T, V]
    logits, `full(ids)` the cache-less forward's [V] last row, which each step's logits must
    match. (tokens, margins, [V] logits per step, largest difference from the cache-less
    forward)."""
    tokens, margins, rows, worst = [], [], [], 0.0
    seq = prompt[0].tolist()
    with torch.no_grad():
        logits = prefill(prompt)
        for i in range(NEW_TOKENS):
            row = logits[0, -1].contiguous()
            full_row = full(torch.tensor([seq], dtype=torch.int64))
            worst = max(worst, _check_row(name, i, row, full_row))
            token, margin = pick(row)
            tokens.append(token)
            margins.append(margin)
            rows.append(row.clone())
            seq.append(token)
            if i + 1 < NEW_TOKENS:
                logits = step(torch.tensor([[token]], dtype=torch.int64))
    return tokens, margins, rows, worst


def generate(name, module, prompt):
    """Greedy decoding with forward_cached (see _greedy)."""
    past = None

    def cached(ids):
        nonlocal past
        logits, past = module.forward_cached(ids, past)
        return logits
    return _greedy(name, prompt, cached, cached, lambda ids: module(ids)[0, -1])


def _generate_json(prompt, tokens, vocab, margins, what):
    fields = [("prompt", [int(t) for t in prompt]), ("tokens", tokens), ("vocab", vocab),
              ("margins", margins), ("context", CONTEXT), ("what", what)]
    return "{\n" + ",\n".join("  %s: %s" % (json.dumps(k), json.dumps(v)) for k, v in fields) \
        + "\n}\n"


def _logits_file(rows):
    return st.serialize({"step_%d" % i: r.to(torch.float32).contiguous() for i, r in enumerate(rows)})


def _write_export(d, module, inputs, names, outs, extra, files):
    """graph.json + graph.safetensors, model.onnx, inputs/outputs.safetensors and `extra`
    ({file name: bytes or str}) staged in `files`; returns (graph, export s, onnx s)."""
    t0 = time.time()
    graph, tensors = exporter.trace(module, inputs, names)
    exporter.write_graph(graph, tensors, os.path.join(d, "graph.json"),
                         os.path.join(d, "graph.safetensors"), files)
    t1 = time.time()
    exporter.export_onnx(module, inputs, os.path.join(d, "model.onnx"), names, files=files)
    # GPT-2: the default export folds wpe[arange(T)] into a constant laid out along the traced
    # positions (a decode step cannot be made from it); without folding the arange stays.
    if isinstance(module, models.GPT2Stack):
        exporter.export_onnx(module, inputs, os.path.join(d, "model_unfolded.onnx"), names,
                             files=files, constant_folding=False)
    t2 = time.time()
    files.write(os.path.join(d, "inputs.safetensors"),
                st.serialize({"input_%d" % i: t.contiguous() for i, t in enumerate(inputs)}))
    files.write(os.path.join(d, "outputs.safetensors"),
                st.serialize({"output_%d" % i: t.contiguous() for i, t in enumerate(outs)}))
    for fname, data in extra.items():
        files.write(os.path.join(d, fname), data)
    return graph, t1 - t0, t2 - t1


def write_lm(out, name, seed):
    cls, kwargs, what = MODELS[name]
    t0 = time.time()
    module, prompt, s = build(name, seed)
    vocab = module.lm_head.out_features
    tokens, margins, rows, worst = generate(name, module, prompt)
    t_gen = time.time() - t0
    with torch.no_grad():
        outs = exporter._flatten_outputs(module(prompt), cls.__name__)
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    with gf.AtomicFiles() as files:
        graph, t_export, t_onnx = _write_export(
            d, module, [prompt], ["input_ids"], outs,
            {"generate.json": _generate_json(prompt[0].tolist(), tokens, vocab, margins, what),
             "logits.safetensors": _logits_file(rows)}, files)
    print("  %-22s generate %.1f s, export %.1f s, onnx %.1f s; min margin %.4g (step %d), "
          "cache vs full max diff %.2g" % (name, t_gen, t_export, t_onnx, min(margins),
                                           margins.index(min(margins)), worst))
    return {"class": cls.__name__, "kwargs": kwargs, "seed": s,
            "tracer": graph["producer"]["tracer"],
            "ops": sum(1 for n in graph["nodes"] if n["op"] == "call_function"),
            "min_margin": min(margins), "cache_check_max_diff": worst,
            "what": what}


def write_static(out, name, seed):
    src, what = STATIC[name]
    t0 = time.time()
    lm, prompt, s = build(src, seed)
    ref_tokens, _, ref_rows, _ = generate(src, lm, prompt)
    step = models.LlamaStaticStep(lm, max_cache_len=CONTEXT).eval()
    vocab = lm.lm_head.out_features
    caches = [torch.zeros(shape) for shape in step.cache_shapes()]
    seq = prompt[0].tolist()
    tokens, margins, rows = [], [], []
    example = None          # the step at cache_position PROMPT_LEN: (inputs, outputs)
    with torch.no_grad():
        for pos in range(CONTEXT - 1):
            inputs = [torch.tensor([[seq[pos]]], dtype=torch.int64),
                      torch.tensor([pos], dtype=torch.int64)] + caches
            result = step(*inputs)
            if pos == PROMPT_LEN:
                example = (inputs, list(result))
            caches = list(result[1:])
            if pos < PROMPT_LEN - 1:
                continue
            i = len(tokens)
            row = result[0][0, -1].contiguous()
            _check_row(name, i, row, ref_rows[i])
            token, margin = pick(row)
            tokens.append(token)
            margins.append(margin)
            rows.append(row.clone())
            seq.append(token)
    if tokens != ref_tokens:
        raise DecodeError("%s: the static-cache step decodes %s, %s decodes %s"
                          % (name, tokens, src, ref_tokens))
    t_gen = time.time() - t0
    names = ["input_ids", "cache_position"] + [
        "%s_%d" % (kv, i) for i in range(len(caches) // 2) for kv in ("k", "v")]
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    with gf.AtomicFiles() as files:
        graph, t_export, t_onnx = _write_export(
            d, step, example[0], names, example[1],
            {"generate.json": _generate_json(prompt[0].tolist(), tokens, vocab, margins, what),
             "logits.safetensors": _logits_file(rows)}, files)
    print("  %-22s generate %.1f s, export %.1f s, onnx %.1f s; min margin %.4g (step %d), "
          "tokens = %s's" % (name, t_gen, t_export, t_onnx, min(margins),
                             margins.index(min(margins)), src))
    return {"class": type(step).__name__, "weights_of": src, "kwargs": {"max_cache_len": CONTEXT},
            "seed": s, "tracer": graph["producer"]["tracer"],
            "ops": sum(1 for n in graph["nodes"] if n["op"] == "call_function"),
            "inputs": names, "example_cache_position": PROMPT_LEN,
            "min_margin": min(margins), "what": what}


def _transformers_generate(name, model, prompt):
    """Greedy decoding by transformers with its DynamicCache (see _greedy)."""
    from pimc_torch import onnx_decoder
    cache = None

    def cached(ids):
        nonlocal cache
        out = model(input_ids=ids, cache=cache, use_cache=True)
        cache = onnx_decoder._forward_cache(out)
        return out.logits
    return _greedy(name, prompt, cached, cached,
                   lambda ids: model(input_ids=ids).logits[0, -1])[:3]


def _check_prompt_form(name, model_path, model, prompt):
    """onnxruntime runs the export with an empty past, an all-ones mask and positions 0..T-1
    (the form pimc compiles) and must give transformers' cache-less logits."""
    import numpy as np
    import onnxruntime as ort
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    T = prompt.shape[1]
    feeds = {}
    for i in sess.get_inputs():
        if i.name == "input_ids":
            feeds[i.name] = prompt.numpy()
        elif i.name == "attention_mask":
            feeds[i.name] = np.ones((1, T), np.int64)
        elif i.name == "position_ids":
            feeds[i.name] = np.arange(T, dtype=np.int64)[None]
        else:
            heads, dim = i.shape[1], i.shape[3]
            feeds[i.name] = np.zeros((1, heads, 0, dim), np.float32)
    got = sess.run(["logits"], feeds)[0]
    with torch.no_grad():
        want = model(input_ids=prompt).logits.numpy()
    diff = float(np.abs(got - want).max())
    if not diff <= 1e-4:
        raise DecodeError("%s: onnxruntime with an empty past differs from transformers' "
                          "forward by %.3g" % (name, diff))
    return diff


def write_optimum(out, name, seed):
    from pimc_torch import onnx_decoder
    fields, what = OPTIMUM[name]
    s = model_seed(name, seed)
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    cfg_path = os.path.join(d, "decoder_config.json")
    with gf.AtomicFiles() as files:
        files.write(cfg_path, json.dumps(fields, indent=1, sort_keys=True) + "\n")
    t0 = time.time()
    try:
        manifest = onnx_decoder.export(cfg_path, d, seed=s, log=lambda m: None)
    except onnx_decoder.DecoderExportError as e:
        raise DecodeError("%s: %s" % (name, e))
    t_onnx = time.time() - t0
    model = onnx_decoder.build_model(onnx_decoder.load_config(cfg_path), s)
    vocab = fields["vocab_size"]
    prompt = make_inputs([InputSpec("input_ids", "int64", [1, PROMPT_LEN], 0, vocab)], s)[0]
    t0 = time.time()
    tokens, margins, rows = _transformers_generate(name, model, prompt)
    diff = _check_prompt_form(name, os.path.join(d, "model.onnx"), model, prompt)
    t_gen = time.time() - t0
    with gf.AtomicFiles() as files:
        files.write(os.path.join(d, "generate.json"),
                    _generate_json(prompt[0].tolist(), tokens, vocab, margins, what))
        files.write(os.path.join(d, "logits.safetensors"), _logits_file(rows))
    print("  %-22s generate %.1f s, onnx %.1f s; min margin %.4g (step %d), empty-past "
          "onnxruntime vs transformers %.2g" % (name, t_gen, t_onnx, min(margins),
                                                margins.index(min(margins)), diff))
    return {"class": "transformers." + type(model).__name__, "config": fields, "seed": s,
            "exporter": manifest["exporter"], "opset": manifest["opset"],
            "inputs": manifest["inputs"], "outputs": manifest["outputs"],
            "min_margin": min(margins), "prompt_form_max_diff": diff, "what": what}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--only", help="comma-separated models (default: all): " + ", ".join(ALL))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    only = args.only.split(",") if args.only else list(ALL)
    unknown = [m for m in only if m not in ALL]
    if unknown:
        print("error: unknown model(s) %s (have: %s)" % (", ".join(unknown), ", ".join(ALL)),
              file=sys.stderr)
        return 1
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    manifest = {}
    try:
        for name in only:
            write = (write_static if name in STATIC else
                     write_optimum if name in OPTIMUM else write_lm)
            manifest[name] = write(args.out, name, args.seed)
    except (exporter.ExportError, gf.GraphFormatError, DecodeError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    low = min(manifest, key=lambda m: manifest[m]["min_margin"])
    print("wrote %d model(s) to %s in %.1f s; smallest top-2 margin %.4g (%s)"
          % (len(only), args.out, time.time() - t0, manifest[low]["min_margin"], low))
    return 0


if __name__ == "__main__":
    sys.exit(main())
