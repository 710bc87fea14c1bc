"""Greedy decoding of an exported, compiled family on pimsim against transformers.

usage: hf_export_generate.py CONFIG.json MODEL.pimb WEIGHTS.safetensors --pimc PIMC
           [--attn-implementation eager] [--tokens N] [--tol T]

Builds the family's transformers class from CONFIG exactly as `pimc_torch export --hf` does (same
seed, so the same weights as WEIGHTS), generates N greedy tokens after a fixed prompt with
transformers, runs `pimc run MODEL --weights WEIGHTS` on the same prompt with --logits-out, and
checks that the tokens are equal and that every step's logits agree within
max |diff| / max |logit| <= T. The default T, 4e-3, is hbm3-pim's: the PIM units read fp16
activations and weights (docs/e2e tolerance in python/pimc_testgen/e2e_pim.py). Prints
"<model_type>: N tokens match, max |logit diff| / max |logit| = E" or exits 1 saying why.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

from pimc_torch import hf_export

PROMPT = [1, 2, 3, 4, 5, 6]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("program")
    ap.add_argument("weights")
    ap.add_argument("--pimc", required=True)
    ap.add_argument("--attn-implementation", default=None)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--tol", type=float, default=4e-3)
    args = ap.parse_args()

    config, model_type = hf_export.load_config(args.config)
    model = hf_export.build_model(config, 0, args.attn_implementation)
    with torch.no_grad():
        out = model.generate(torch.tensor([PROMPT]), max_new_tokens=args.tokens, do_sample=False,
                             min_new_tokens=args.tokens, output_logits=True,
                             return_dict_in_generate=True, pad_token_id=None, eos_token_id=None)
    want = out.sequences[0, len(PROMPT):].tolist()
    ref = torch.cat(out.logits, 0).float().numpy()

    with tempfile.TemporaryDirectory() as tmp:
        logits_path = os.path.join(tmp, "logits.f32")
        run = subprocess.run([args.pimc, "run", args.program, "--weights", args.weights,
                              "--prompt-ids", ",".join(map(str, PROMPT)),
                              "--max-new-tokens", str(args.tokens), "--logits-out", logits_path],
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit("%s: pimc run failed:\n%s" % (model_type, run.stderr))
        got_line = [l for l in run.stdout.splitlines() if l.startswith("tokens:")]
        got = [int(t) for t in got_line[0].split()[1:]] if got_line else []
        sim = np.fromfile(logits_path, dtype=np.float32).reshape(len(got), -1)
    if got != want:
        sys.exit("%s: pimsim tokens %s, transformers %s" % (model_type, got, want))
    err = max(float(np.abs(s - r).max() / max(np.abs(r).max(), 1e-30))
              for s, r in zip(sim, ref))
    if err > args.tol:
        sys.exit("%s: max |logit diff| / max |logit| = %.2e > %.0e" % (model_type, err, args.tol))
    print("%s: %d tokens match, max |logit diff| / max |logit| = %.1e" % (model_type, len(got), err))


if __name__ == "__main__":
    main()
