"""Opset-23/24 Attention with a cache, masks, softcap and qk_matmul_output
(attention-cache.test). Goldens from the onnx package's reference
implementation (onnx.reference), the operator specification's own numerics.

usage: attention_models.py OUT_DIR

Writes OUT_DIR/NAME.onnx, NAME.inputs.safetensors (input_0.. in graph input
order) and NAME.expect.safetensors (output_0..).
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_goldens  # noqa: E402

F = TensorProto.FLOAT
B = TensorProto.BOOL
rng = np.random.RandomState(23)


def write(out, name, inputs, outputs, feeds, opset=23, **attrs):
    """One Attention node over `inputs` ([(name, elem, value)], "" for an
    omitted one) with `outputs` ([(name, shape)] or "" for an omitted one)."""
    node = helper.make_node("Attention", [i[0] for i in inputs],
                            [o[0] if o else "" for o in outputs], name=name, **attrs)
    reference_goldens.write(out, name, [node], [i for i in inputs if i[0]],
                            [(o[0], F, o[1]) for o in outputs if o], opset=opset,
                            ir_version=10)


def randn(*shape):
    return rng.randn(*shape).astype(np.float32)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    # 4-D GQA (4 query heads over 2 kv heads) with a cache of 3 positions and
    # 2 new ones, causal (bottom-right: query i sees keys j <= i + 3); the
    # presents are the cache extended.
    write(out, "attention_cache",
          [("q", F, randn(1, 4, 2, 8)), ("k", F, randn(1, 2, 2, 8)), ("v", F, randn(1, 2, 2, 8)),
           ("", F, None), ("past_key", F, randn(1, 2, 3, 8)), ("past_value", F, randn(1, 2, 3, 8))],
          [("y", [1, 4, 2, 8]), ("present_key", [1, 2, 5, 8]), ("present_value", [1, 2, 5, 8])],
          None, is_causal=1)
    # 3-D inputs with a cache and a boolean mask shorter than the 6 keys (the
    # uncovered last key is hidden), one query row hiding every key: that row
    # of y is zero.
    mask = np.array([[True, False, True, True, False],
                     [False, False, False, False, False]])
    write(out, "attention_bool_mask",
          [("q", F, randn(1, 2, 16)), ("k", F, randn(1, 2, 8)), ("v", F, randn(1, 2, 8)),
           ("attn_mask", B, mask), ("past_key", F, randn(1, 2, 4, 4)),
           ("past_value", F, randn(1, 2, 4, 4))],
          [("y", [1, 2, 16]), ("present_key", [1, 2, 6, 4]), ("present_value", [1, 2, 6, 4])],
          None, q_num_heads=4, kv_num_heads=2)
    # Soft-capping, a float mask and causal together; qk_matmul_output after
    # the bias (mode 2). Scores times 3 so the cap (5) matters.
    fmask = np.where(rng.rand(3, 3) < 0.3, -np.inf, rng.randn(3, 3)).astype(np.float32)
    np.fill_diagonal(fmask, 0.5)
    write(out, "attention_softcap",
          [("q", F, 3 * randn(1, 2, 3, 4)), ("k", F, 3 * randn(1, 2, 3, 4)),
           ("v", F, randn(1, 2, 3, 4)), ("attn_mask", F, fmask)],
          [("y", [1, 2, 3, 4]), "", "", ("qk", [1, 2, 3, 3])],
          None, is_causal=1, softcap=5.0, qk_matmul_output_mode=2, scale=0.3)
    # The probabilities (mode 3) with a boolean mask and causal combined, at
    # opset 24.
    bmask = np.array([[[True, True, False], [True, False, True], [False, True, True]]])
    write(out, "attention_probs",
          [("q", F, randn(2, 1, 3, 4)), ("k", F, randn(2, 1, 3, 4)), ("v", F, randn(2, 1, 3, 4)),
           ("attn_mask", B, bmask)],
          [("y", [2, 1, 3, 4]), "", "", ("qk", [2, 1, 3, 3])],
          None, opset=24, is_causal=1, qk_matmul_output_mode=3)
    # softcap with qk_matmul_output after it (mode 1).
    write(out, "attention_softcap_out",
          [("q", F, 3 * randn(1, 1, 2, 4)), ("k", F, 3 * randn(1, 1, 2, 4)),
           ("v", F, randn(1, 1, 2, 4))],
          [("y", [1, 1, 2, 4]), "", "", ("qk", [1, 1, 2, 2])],
          None, softcap=2.0, qk_matmul_output_mode=1)


if __name__ == "__main__":
    main()
