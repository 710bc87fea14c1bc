#!/usr/bin/env python3
"""Decoder LMs from PyTorch graphs end to end: each model of the decoder fixture
(python/pimc_torch/make_decoders.py: a causal LM traced over an 8-token prompt, with no
KV cache) is imported from its torch.export graph (graph.json) and from its ONNX export
(model.onnx), and

  * on the reference interpreter: `pimc-opt --llm-synthesize-decode` turns the graph into a
    one-token decode step with KV caches, and `pimc run-ref` generates from the prompt;
  * on pimsim: `pimc compile` (which runs the same synthesis first) for each target, then
    `pimc run` in functional mode.

Every run must give the 16 greedy tokens that eager PyTorch produced WITH a KV cache
(generate.json, a cached code path written independently of the traced forward), with
logits within the tolerance of e2e_pim.py at every step (the same near-tie rule: a step
where the golden's top-2 margin is below the target's logit error may pick the other
token; the golden token is then forced and later steps are still compared).

    e2e_decoders.py --pimc BUILD/tools/pimc/pimc --pimc-opt BUILD/tools/pimc-opt/pimc-opt \
                    --fixtures BUILD/testdata/decoders --targets targets [--models a,b] [--work DIR]

llama_static is a decode step already (a static KV cache, as transformers' StaticCache
exports it): it is compiled as it is and checked on pimsim only.

llama_optimum is transformers' Llama in optimum's decoder-with-past layout (ONNX only): run-ref
takes `pimc import --prompt-form 8` made a step by llm-synthesize-decode, pimsim takes
`pimc compile model.onnx` as it is.

A model whose export cannot become a decode step is expected to be refused with the reason
(EXPECTED_REFUSALS), not to run: GPT-2's ONNX export constant-folds wpe[arange(8)] into an
initializer laid out along the traced positions, so no position but 0..7 can be recovered.
Its export without constant folding (model_unfolded.onnx) keeps the arange and runs.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pimc_testgen import safetensors_io as st        # noqa: E402
from pimc_testgen.e2e_pim import follow_golden, tokens  # noqa: E402

MODELS = ["llama_lm", "llama_interleaved_lm", "llama_sliding_lm", "llama_yarn_lm",
          "mixtral_dense_lm", "mixtral_sparse_lm", "qwen2_moe_lm", "gpt2_lm", "llama_static",
          "llama_optimum"]
# Exported as a decode step already (transformers-style static cache: token, position and
# the caches in, logits and the updated caches out): compiled as it is, its caches kept in
# device memory between steps; pimsim only (run-ref generates from LM-form steps).
STATIC = {"llama_static"}
SOURCES = ["graph.json", "model.onnx"]
# Decoders with past in optimum's layout (transformers' own model and decoding): ONNX only.
# run-ref takes `pimc import --prompt-form 8`, the graph made a step by llm-synthesize-decode;
# pimsim takes `pimc compile model.onnx` as it is (the same prompt form inside).
OPTIMUM = {"llama_optimum"}
# GPT-2 also exported without ONNX constant folding (make_decoders.py): the position arange
# stays in the graph, so its decode step can be made.
EXTRA_SOURCES = {"gpt2_lm": ["model_unfolded.onnx"]}
# (name, target file, tolerance): see e2e_pim.py for the tolerances.
TARGETS = [("hbm3-pim", "hbm3-pim", 4e-3), ("gddr6-aim", "gddr6-aim", 3e-2)]
REF_TOL = 1e-5
# (model, source) -> the error the importer / synthesis must give.
EXPECTED_REFUSALS = {
    ("gpt2_lm", "model.onnx"): "an operand that does not depend on the tokens is laid out along "
                               "the sequence",
}


def run(cmd, expect_fail=None):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if expect_fail is not None:
        return r.returncode != 0 and expect_fail in r.stderr, r.stderr
    if r.returncode != 0:
        raise RuntimeError(f"FAILED ({r.returncode}): {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pimc", required=True)
    ap.add_argument("--pimc-opt", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--targets", required=True)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    work = args.work or os.path.join(args.fixtures, "..", "e2e-decoders")
    os.makedirs(work, exist_ok=True)
    bad = 0
    for model in args.models.split(","):
        d = os.path.join(args.fixtures, model)
        with open(os.path.join(d, "generate.json")) as f:
            gen = json.load(f)
        logits, _ = st.load_file(os.path.join(d, "logits.safetensors"))
        golden = {"prompt_ids": gen["prompt"], "tokens": gen["tokens"]}
        glogits = np.stack([logits["step_%d" % i].float().numpy()
                            for i in range(len(gen["tokens"]))])
        vocab = glogits.shape[1]
        sources = ["model.onnx"] if model in OPTIMUM else SOURCES
        for source in sources + EXTRA_SOURCES.get(model, []):
            tag = "fx" if source == "graph.json" else "onnx"
            variant = source[len("model_"):-len(".onnx")] if source.startswith("model_") else ""
            base = os.path.join(work, f"{model}.{tag}{variant}")
            name = f"{model}/{variant}" if variant else model
            mlir, weights = base + ".mlir", os.path.join(d, "graph.safetensors")
            cmd = [args.pimc, "import", os.path.join(d, source), "-o", mlir]
            if source.endswith(".onnx"):
                weights = base + ".safetensors"
                cmd += ["--weights-out", weights]
                cmd += (["--prompt-form", "8"] if model in OPTIMUM else
                        ["--example-inputs", os.path.join(d, "inputs.safetensors")])
            refusal = EXPECTED_REFUSALS.get((model, source))
            try:
                run(cmd)
                if refusal is not None:
                    ok, err = run([args.pimc_opt, mlir, "--llm-synthesize-decode", "-o",
                                   base + ".step.mlir"], expect_fail=refusal)
                    bad += not ok
                    print(f"{'ok  ' if ok else 'FAIL'} {tag:4s} {name:20s} refused: "
                          f"{refusal if ok else err.strip()}", flush=True)
                    continue
                if model not in STATIC:
                    run([args.pimc_opt, mlir, "--llm-synthesize-decode", "-o",
                         base + ".step.mlir"])
            except RuntimeError as e:
                bad += 1
                print(f"FAIL {tag:4s} {name:20s} import: {e}", flush=True)
                continue

            def check(where, tol, generate):
                nonlocal bad
                try:
                    ok, worst, forced, msg = follow_golden(generate, golden, glogits, tol)
                except RuntimeError as e:
                    ok, worst, forced, msg = False, 0.0, [], str(e)
                bad += not ok
                n = len(gen["tokens"])
                line = (f"{'ok  ' if ok else 'FAIL'} {tag:4s} {name:20s} {where:10s} "
                        f"{n - len(forced)}/{n} tokens = eager with a KV cache, max |logit diff| "
                        f"/ max |logit| = {worst:.2e} (tolerance {tol:.0e})")
                if forced:
                    line += "; near ties forced: " + ", ".join(
                        f"step {s} (golden gap {m:.4f})" for s, m in forced)
                print(line + (f"\n     {msg}" if msg else ""), flush=True)

            out = base + ".ref.logits"

            def ref(prompt, n):
                toks = tokens(run([args.pimc, "run-ref", base + ".step.mlir", "--weights", weights,
                                   "--prompt-ids", ",".join(map(str, prompt)),
                                   "--max-new-tokens", str(n), "--logits-out", out]))
                return toks, np.fromfile(out, dtype=np.float32).reshape(-1, vocab)
            if model not in STATIC:
                check("run-ref", REF_TOL, ref)
            for target, tname, tol in TARGETS:
                tfile = os.path.join(args.targets, tname + ".json")
                prog, out_t = f"{base}.{target}.pimb", f"{base}.{target}.logits"
                compile_cmd = [args.pimc, "compile", mlir, "--target", tfile, "-o", prog,
                               "--quiet"]
                if model in OPTIMUM:
                    compile_cmd[2] = os.path.join(d, source)
                    weights = f"{base}.{target}.safetensors"
                    compile_cmd += ["--weights-out", weights]
                try:
                    run(compile_cmd)
                except RuntimeError as e:
                    bad += 1
                    print(f"FAIL {tag:4s} {name:20s} {target:10s} compile: {e}", flush=True)
                    continue

                def sim(prompt, n, prog=prog, tfile=tfile, out_t=out_t, weights=weights):
                    toks = tokens(run([args.pimc, "run", prog, "--target", tfile, "--weights",
                                       weights, "--prompt-ids", ",".join(map(str, prompt)),
                                       "--max-new-tokens", str(n), "--logits-out", out_t]))
                    return toks, np.fromfile(out_t, dtype=np.float32).reshape(-1, vocab)
                check(target, tol, sim)
    print("all passed" if bad == 0 else f"{bad} failed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
