"""Stored YaRN cos/sin tables for raise-rope-yarn.mlir, computed as Hugging Face does
(pimc_torch.models.compute_yarn_parameters, HF's _compute_yarn_parameters), written to the
safetensors file given as the only argument.

    NAME.cos, NAME.sin     [T, d] (half-split, cat(freqs, freqs)) or [T, 1, d] (interleaved)
"""

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "..", "python"))
import torch                                          # noqa: E402

from pimc_testgen.safetensors_io import write_file    # noqa: E402
from pimc_torch.models import compute_yarn_parameters  # noqa: E402


def tables(d, theta, scaling, positions, interleaved=False, bend=None, cos_only=False):
    inv, af = compute_yarn_parameters(d, theta, scaling)
    if bend is not None:
        # A ramp that is not linear: one blended frequency moved off the line.
        inv = inv.clone()
        inv[bend] = inv[bend] * 1.05
    freqs = torch.outer(torch.tensor(positions, dtype=torch.float32), inv)
    if interleaved:
        emb = freqs.repeat_interleave(2, dim=-1).unsqueeze(1)
    else:
        emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos() * af, emb.sin() * (1.0 if cos_only else af)
    return cos.contiguous(), sin.contiguous()


GPT_OSS = {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096,
           "beta_fast": 32, "beta_slow": 1, "truncate": False}
DEEPSEEK = {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
            "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}
BETAS = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 2048,
         "beta_fast": 16, "beta_slow": 2}
QWEN25 = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
V2_LITE = {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
           "beta_fast": 32, "beta_slow": 1, "mscale": 0.707, "mscale_all_dim": 1.0}

out = {}
for name, (c, s) in {
    "gptoss": tables(64, 150000.0, GPT_OSS, [0, 1, 2, 3]),
    "deepseek": tables(64, 10000.0, DEEPSEEK, [2, 3, 4], interleaved=True),
    "betas": tables(32, 10000.0, BETAS, [0, 1, 2, 3]),
    "qwen": tables(128, 1000000.0, QWEN25, [0, 1, 2, 3]),
    "mscale": tables(64, 10000.0, V2_LITE, [0, 1, 2, 3]),
    "bent": tables(64, 150000.0, GPT_OSS, [0, 1, 2, 3], bend=12),
    "cos_only": tables(64, 10000.0, dict(DEEPSEEK, mscale=None, mscale_all_dim=None), [0, 1, 2, 3],
                       cos_only=True),
}.items():
    out[name + ".cos"] = c
    out[name + ".sin"] = s
write_file(sys.argv[1], out)
