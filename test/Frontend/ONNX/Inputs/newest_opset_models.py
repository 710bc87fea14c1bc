"""Models at the newest opsets pimc claims (opset 28, ONNX 1.23): Mod (integer
floor / trunc remainders, float fmod 0 and 1 with ONNX Mod-28's special cases),
Size, CastLike, Attention-25's windows, and a small block of unchanged ops
imported at opset 28 (newest-opset.test). Goldens from the onnx package's
reference implementation.

usage: newest_opset_models.py OUT_DIR

Writes OUT_DIR/NAME.onnx, NAME.inputs.safetensors (input_0.. in graph input
order) and NAME.expect.safetensors (output_0..).
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_goldens import vi, write  # noqa: E402

F = TensorProto.FLOAT
F16 = TensorProto.FLOAT16
I64 = TensorProto.INT64
rng = np.random.RandomState(28)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    # Mod: run-time integers (floor: the divisor's sign; fmod: the dividend's),
    # floats with fmod 0 (new at opset 28) and 1 including zeros, infinities
    # and NaN, and a constant integer Mod folded at import.
    ia = np.array([7, -7, 7, -7, 0, 13, -13, 6], np.int64)
    ib = np.array([3, 3, -3, -3, 5, 4, 4, -3], np.int64)
    fa = np.array([5.5, -5.5, 5.5, -5.5, 0.0, -0.0, np.inf, 3.0, 3.0, -3.0, np.nan, 1e6 + 0.25],
                  np.float32)
    fb = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 2.0, 0.0, np.inf, np.inf, 1.0, 3.0], np.float32)
    write(out, "mod", [
        helper.make_node("Mod", ["ia", "ib"], ["floor_i"], name="mod_floor_int"),
        helper.make_node("Mod", ["ia", "ib"], ["trunc_i"], name="mod_trunc_int", fmod=1),
        helper.make_node("Mod", ["fa", "fb"], ["floor_f"], name="mod_floor_float"),
        helper.make_node("Mod", ["fa", "fb"], ["trunc_f"], name="mod_trunc_float", fmod=1),
        helper.make_node("Mod", ["ca", "cb"], ["folded"], name="mod_const")],
        [("ia", I64, ia), ("ib", I64, ib), ("fa", F, fa), ("fb", F, fb)],
        [("floor_i", I64, [8]), ("trunc_i", I64, [8]), ("floor_f", F, [12]),
         ("trunc_f", F, [12]), ("folded", I64, [4])],
        [numpy_helper.from_array(np.array([-9, 9, -9, 9], np.int64), "ca"),
         numpy_helper.from_array(np.array([4, -4, -4, 4], np.int64), "cb")])
    # Size of an input (a constant at import) and CastLike to an f16
    # initializer (values rounded to f16) and to an int64 input.
    x = (rng.randn(2, 3) * 1000).astype(np.float32)
    write(out, "size_castlike", [
        helper.make_node("Size", ["x"], ["n"], name="size"),
        helper.make_node("CastLike", ["x", "half"], ["xh"], name="to_half"),
        helper.make_node("CastLike", ["x", "ids"], ["xi"], name="to_int")],
        [("x", F, x), ("ids", I64, np.array([1, 2], np.int64))],
        [("n", I64, []), ("xh", F16, [2, 3]), ("xi", I64, [2, 3])],
        [numpy_helper.from_array(np.array([0.5], np.float16), "half")])
    # Attention-25: causal with a left window of 2 (a query sees itself and the
    # 2 keys before it: Mistral's sliding window of 3), over a cache of 2.
    q, k, v = (rng.randn(1, 2, 3, 4).astype(np.float32) for _ in range(3))
    pk, pv = (rng.randn(1, 2, 2, 4).astype(np.float32) for _ in range(2))
    write(out, "attention_window", [
        helper.make_node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y"],
                         name="window", is_causal=1, left_window_size=2)],
        [("q", F, q), ("k", F, k), ("v", F, v), ("pk", F, pk), ("pv", F, pv)],
        [("y", F, [1, 2, 3, 4])], opset=25)
    # A block of ops unchanged since opset 23 and earlier, at opset 28.
    w = rng.randn(8, 4).astype(np.float32)
    write(out, "block28", [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="proj"),
        helper.make_node("Reshape", ["h", "shape"], ["h2"], name="view"),
        helper.make_node("Softmax", ["h2"], ["p"], name="probs", axis=-1),
        helper.make_node("Transpose", ["p"], ["y"], name="swap", perm=[1, 0])],
        [("x", F, rng.randn(3, 8).astype(np.float32))],
        [("y", F, [4, 3])],
        [numpy_helper.from_array(w, "w"),
         numpy_helper.from_array(np.array([3, 4], np.int64), "shape")])

    # Refused, by name: CastLike to a computed float (its precision is not
    # known), an integer Mod by a constant zero, Attention-25's head counts on
    # 4-D inputs.
    def bad(name, nodes, inputs, outputs, inits=(), opset=28):
        g = helper.make_graph(nodes, name, [vi(n, e, s) for n, e, s in inputs],
                              [vi(n, e, s) for n, e, s in outputs], list(inits))
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 11
        save(m, os.path.join(out, name + ".onnx"))
    bad("castlike_computed", [helper.make_node("Exp", ["y"], ["e"], name="exp"),
                              helper.make_node("CastLike", ["x", "e"], ["z"], name="like_exp")],
        [("x", F, [2]), ("y", F, [2])], [("z", F, [2])])
    bad("mod_zero", [helper.make_node("Mod", ["a", "zero"], ["r"], name="mod_by_zero")],
        [], [("r", I64, [2])],
        [numpy_helper.from_array(np.array([3, 4], np.int64), "a"),
         numpy_helper.from_array(np.array([1, 0], np.int64), "zero")])
    bad("attention_heads4d", [helper.make_node("Attention", ["q", "k", "v"], ["y"],
                                               name="attn4d", q_num_heads=2, kv_num_heads=2)],
        [(n, F, [1, 2, 3, 4]) for n in "qkv"], [("y", F, [1, 2, 3, 4])], opset=25)


if __name__ == "__main__":
    main()
