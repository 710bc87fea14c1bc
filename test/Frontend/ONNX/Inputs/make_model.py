"""Writes the small ONNX models the lit tests import.

usage: make_model.py NAME OUT_DIR   (writes OUT_DIR/NAME.onnx, + data files)

Weights are seeded (numpy RandomState(0)) so the checked IR is stable.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.RandomState(0)
F = TensorProto.FLOAT
I64 = TensorProto.INT64


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def init(name, array):
    return numpy_helper.from_array(array, name)


def model(nodes, inputs, outputs, inits=(), opset=17, name="g", extra_opsets=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(graph, opset_imports=opsets, producer_name="pimc-test")
    m.ir_version = 8
    return m


def mlp():
    # x[2,8] @ W1[8,16] + b1 -> Relu -> Gemm(transB) W2[4,16] -> Softmax
    w1 = rng.randn(8, 16).astype(np.float32)
    b1 = rng.randn(16).astype(np.float32)
    w2 = rng.randn(4, 16).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="fc1_bias"),
        helper.make_node("Relu", ["hb"], ["r"], name="act"),
        helper.make_node("Gemm", ["r", "w2"], ["logits"], name="fc2", transB=1),
        helper.make_node("Softmax", ["logits"], ["y"], name="probs", axis=-1),
    ]
    return model(nodes, [vi("x", F, [2, 8])], [vi("y", F, [2, 4])],
                 [init("w1", w1), init("b1", b1), init("w2", w2)])


def shapes():
    # torch.onnx-style shape arithmetic: Shape -> Gather -> Unsqueeze ->
    # Concat -> Reshape, all folded at import time.
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Constant", [], ["zero"], name="c0",
                         value=helper.make_tensor("zero", I64, [], [0])),
        helper.make_node("Gather", ["s", "zero"], ["b"], name="batch", axis=0),
        helper.make_node("Unsqueeze", ["b", "axes"], ["b1"], name="unsq"),
        helper.make_node("Concat", ["b1", "minus1"], ["newshape"], name="cat", axis=0),
        helper.make_node("Reshape", ["x", "newshape"], ["flat"], name="flatten"),
        helper.make_node("Transpose", ["x"], ["xt"], name="tr", perm=[0, 2, 1]),
        helper.make_node("Slice", ["xt", "st", "en", "ax"], ["sl"], name="slice"),
        helper.make_node("ReduceMean", ["sl"], ["m"], name="mean", axes=[1, 2], keepdims=0),
    ]
    inits = [init("axes", np.array([0], np.int64)), init("minus1", np.array([-1], np.int64)),
             init("st", np.array([1], np.int64)), init("en", np.array([3], np.int64)),
             init("ax", np.array([1], np.int64))]
    return model(nodes, [vi("x", F, [2, 3, 4])], [vi("flat", F, [2, 12]), vi("m", F, [2])], inits)


def broadcast():
    nodes = [
        helper.make_node("Less", ["a", "b"], ["lt"], name="less"),
        helper.make_node("Where", ["lt", "a", "b"], ["w"], name="where"),
        helper.make_node("Mul", ["w", "s"], ["y"], name="scale"),
        helper.make_node("TopK", ["y", "k"], ["v", "i"], name="topk", axis=-1),
        helper.make_node("Cast", ["i"], ["fi"], name="cast", to=F),
    ]
    return model(nodes, [vi("a", F, [3, 4]), vi("b", F, [4])],
                 [vi("v", F, [3, 2]), vi("fi", F, [3, 2])],
                 [init("s", np.array(2.0, np.float32)), init("k", np.array([2], np.int64))])


def norms():
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g", "bt"], ["ln"], name="ln", epsilon=1e-5),
        helper.make_node("RMSNormalization", ["ln", "g"], ["y"], name="rms", epsilon=1e-6),
    ]
    return model(nodes, [vi("x", F, [2, 8])], [vi("y", F, [2, 8])],
                 [init("g", np.ones(8, np.float32)), init("bt", np.zeros(8, np.float32))],
                 opset=23)


def einsum():
    nodes = [helper.make_node("Einsum", ["a", "b"], ["y"], name="bmm", equation="bij,bjk->bik")]
    return model(nodes, [vi("a", F, [2, 3, 4]), vi("b", F, [2, 4, 5])], [vi("y", F, [2, 3, 5])])


def unsupported():
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv0"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Conv", ["r", "w"], ["c2"], name="conv1"),
        helper.make_node("LpNormalization", ["c2"], ["y"], name="lpnorm"),
        helper.make_node("Unique", ["y"], ["z"], name="uniq"),
    ]
    return model(nodes, [vi("x", F, [1, 1, 4, 4]), vi("w", F, [1, 1, 1, 1])],
                 [vi("z", F, [None])])


def dynamic_shape():
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_dyn")]
    return model(nodes, [vi("x", F, [2, 3]), vi("shape", I64, [2])], [vi("y", F, [3, 2])])


def symbolic():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", F, ["batch", 3])], [vi("y", F, ["batch", 3])])


def dangling():
    nodes = [helper.make_node("Add", ["x", "nowhere"], ["y"], name="add_dangling")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])])


def external():
    # A 16x8 weight in an external data file (offset 64 in weights.bin).
    w = rng.randn(16, 8).astype(np.float32)
    t = numpy_helper.from_array(w, "proj.weight")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "64"), ("length", str(w.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    nodes = [helper.make_node("Gemm", ["x", "proj.weight"], ["y"], name="proj", transB=1)]
    return model(nodes, [vi("x", F, [2, 8])], [vi("y", F, [2, 16])], [t]), w


def write_external(out, name, bad=None):
    m, w = external()
    os.makedirs(out, exist_ok=True)
    data = b"\0" * 64 + w.tobytes()
    if bad == "short":
        data = data[:100]
    if bad != "missing":
        with open(os.path.join(out, "weights.bin"), "wb") as f:
            f.write(data)
    if bad == "offset":
        m.graph.initializer[0].external_data[1].value = "4096"
    if bad == "length":
        m.graph.initializer[0].external_data[2].value = "100"
    if bad == "absolute":
        m.graph.initializer[0].external_data[0].value = "/etc/passwd"
    if bad == "dotdot":
        # weights.bin one directory up, next to the model's directory.
        with open(os.path.join(out, "..", "weights.bin"), "wb") as f:
            f.write(data)
        m.graph.initializer[0].external_data[0].value = "sub/../../weights.bin"
    if bad == "symlink":
        # A link inside the directory that leads out of it.
        with open(os.path.join(out, "..", "outside.bin"), "wb") as f:
            f.write(data)
        os.symlink(os.path.join("..", "outside.bin"), os.path.join(out, "link.bin"))
        m.graph.initializer[0].external_data[0].value = "link.bin"
    onnx.save(m, os.path.join(out, name + ".onnx"))
    np.save(os.path.join(out, name + ".npy"), w)


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def attention():
    # Opset-23 Attention, 3-D inputs, GQA (4 query heads over 2 KV heads),
    # causal; golden computed with numpy from the operator's definition.
    B, S, HQ, HK, D = 1, 5, 4, 2, 8
    nodes = [helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attn",
                              q_num_heads=HQ, kv_num_heads=HK, is_causal=1)]
    m = model(nodes, [vi("q", F, [B, S, HQ * D]), vi("k", F, [B, S, HK * D]),
                      vi("v", F, [B, S, HK * D])], [vi("y", F, [B, S, HQ * D])], opset=23)
    q = rng.randn(B, S, HQ * D).astype(np.float32)
    k = rng.randn(B, S, HK * D).astype(np.float32)
    v = rng.randn(B, S, HK * D).astype(np.float32)
    qh = q.reshape(B, S, HQ, D).transpose(0, 2, 1, 3)
    kh = np.repeat(k.reshape(B, S, HK, D).transpose(0, 2, 1, 3), HQ // HK, axis=1)
    vh = np.repeat(v.reshape(B, S, HK, D).transpose(0, 2, 1, 3), HQ // HK, axis=1)
    sc = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(D)
    sc = np.where(np.tril(np.ones((S, S), bool)), sc, -np.inf)
    y = (np_softmax(sc) @ vh).transpose(0, 2, 1, 3).reshape(B, S, HQ * D)
    return m, [q, k, v], [y]


def rotary(interleaved):
    # Opset-23 RotaryEmbedding on [B, H, S, D] with position_ids and a
    # partial rotary dimension.
    B, H, S, D, R, P = 1, 2, 4, 8, 6, 10
    nodes = [helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], name="rope",
                              interleaved=int(interleaved), rotary_embedding_dim=R)]
    m = model(nodes, [vi("x", F, [B, H, S, D]), vi("cos", F, [P, R // 2]),
                      vi("sin", F, [P, R // 2]), vi("pos", I64, [B, S])],
              [vi("y", F, [B, H, S, D])], opset=23)
    x = rng.randn(B, H, S, D).astype(np.float32)
    ang = rng.rand(P, R // 2).astype(np.float32) * 3
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    pos = np.array([[3, 0, 7, 7]], np.int64)
    c = cos[pos][:, None]  # [B, 1, S, R/2]
    s_ = sin[pos][:, None]
    if interleaved:
        x1, x2 = x[..., 0:R:2], x[..., 1:R:2]
    else:
        x1, x2 = x[..., : R // 2], x[..., R // 2 : R]
    real, imag = c * x1 - s_ * x2, s_ * x1 + c * x2
    if interleaved:
        rot = np.stack([real, imag], -1).reshape(B, H, S, R)
    else:
        rot = np.concatenate([real, imag], -1)
    y = np.concatenate([rot, x[..., R:]], -1)
    return m, [x, cos, sin, pos], [y]


def half():
    # f16 initializers: the MatMul weight (16x8 elements) stays f16 in the
    # weights file, the small bias is widened into an f32 constant; the
    # activations are f32, rounded to f16 only by Cast.
    w = rng.randn(16, 8).astype(np.float16)
    b = rng.randn(8).astype(np.float16)
    nodes = [helper.make_node("Cast", ["x"], ["xh"], to=TensorProto.FLOAT16, name="to_half"),
             helper.make_node("MatMul", ["xh", "w"], ["h"], name="mm"),
             helper.make_node("Add", ["h", "b"], ["hb"], name="bias"),
             helper.make_node("Cast", ["hb"], ["y"], to=F, name="to_float")]
    m = model(nodes, [vi("x", F, [4, 16])], [vi("y", F, [4, 8])], [init("w", w), init("b", b)])
    x = rng.randn(4, 16).astype(np.float32)
    y = x.astype(np.float16).astype(np.float32) @ w.astype(np.float32) + b.astype(np.float32)
    return m, [x], [y]


def scatter_tile(opset):
    # Tile of a run-time tensor (and of constant shape data, folded);
    # ScatterElements along axis 1 with run-time indices, some negative
    # (none), and with duplicate indices accumulating (add, mul; opset 16).
    # Goldens from numpy, by the operators' definitions.
    x = rng.randn(2, 3).astype(np.float32)
    data = rng.randn(3, 5).astype(np.float32)
    idx = np.array([[0, -1], [4, 2], [-5, 3]], np.int64)
    dup = np.array([[1, 1], [0, 4], [2, 2]], np.int64)
    upd = rng.randn(3, 2).astype(np.float32)
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t"], name="tile"),
             helper.make_node("Shape", ["x"], ["xs"], name="shape"),
             helper.make_node("Tile", ["xs", "reps1"], ["ts"], name="tile_shape"),
             helper.make_node("Reshape", ["t", "ts"], ["tr"], name="reshape"),
             helper.make_node("ScatterElements", ["data", "idx", "upd"], ["s"], name="scatter", axis=1)]
    outs = [vi("tr", F, [2, 3, 2, 3]), vi("s", F, [3, 5])]
    ins = [x, data, idx, upd]
    in_vis = [vi("x", F, [2, 3]), vi("data", F, [3, 5]), vi("idx", I64, [3, 2]), vi("upd", F, [3, 2])]
    s = data.copy()
    for i in range(3):
        for j in range(2):
            s[i, idx[i, j] % 5] = upd[i, j]
    want = [np.tile(x, (3, 2)).reshape(2, 3, 2, 3), s]
    if opset >= 16:
        nodes += [helper.make_node("ScatterElements", ["data", "dup", "upd"], ["sa"], name="scatter_add",
                                   axis=-1, reduction="add"),
                  helper.make_node("ScatterElements", ["data", "dup", "upd"], ["sm"], name="scatter_mul",
                                   axis=1, reduction="mul")]
        outs += [vi("sa", F, [3, 5]), vi("sm", F, [3, 5])]
        ins.append(dup)
        in_vis.append(vi("dup", I64, [3, 2]))
        sa, sm = data.copy(), data.copy()
        for i in range(3):
            for j in range(2):
                sa[i, dup[i, j]] += upd[i, j]
                sm[i, dup[i, j]] *= upd[i, j]
        want += [sa, sm]
    inits = [init("reps", np.array([3, 2], np.int64)), init("reps1", np.array([2], np.int64))]
    return model(nodes, in_vis, outs, inits, opset=opset), ins, want


def nonzero(opset):
    # NonZero of a computed mask (Greater, then a Transpose consumer: the
    # torch.where spelling), of a float graph input directly, and of a
    # constant (folded). The count is not in the file: the output shapes
    # are symbolic, as torch.onnx writes them.
    x = np.array([[0.5, -1.0, 2.0, 0.0],
                  [-0.5, 3.0, 0.0, 1.5],
                  [0.0, -2.0, 0.25, -0.75]], np.float32)
    c = np.array([[0, 1, 0], [1, 1, 0]], np.int64)
    nodes = [helper.make_node("Greater", ["x", "zero"], ["mask"], name="positive"),
             helper.make_node("NonZero", ["mask"], ["nz"], name="nz_mask"),
             helper.make_node("Transpose", ["nz"], ["rows_cols"], name="to_rows", perm=[1, 0]),
             helper.make_node("NonZero", ["x"], ["nz_x"], name="nz_input"),
             helper.make_node("NonZero", ["c"], ["nz_c"], name="nz_const")]
    inits = [init("zero", np.array(0.0, np.float32)), init("c", c)]
    outs = [vi("rows_cols", I64, [None, 2]), vi("nz_x", I64, [2, None]), vi("nz_c", I64, [2, None])]
    want = [np.array(np.nonzero(x > 0), np.int64).T, np.array(np.nonzero(x), np.int64),
            np.array(np.nonzero(c), np.int64)]
    return model(nodes, [vi("x", F, [3, 4])], outs, inits, opset=opset), [x], want


def nonzero_embed():
    # NonZero of a mask computed from a weight (an embedding lookup of a
    # [20, 4] initializer, above the inline limit): the example run reads
    # the weight from the importer's temporary safetensors file.
    table = rng.randn(20, 4).astype(np.float32)
    ids = np.array([3, 17, 0, 3], np.int64)
    nodes = [helper.make_node("Gather", ["table", "ids"], ["e"], name="embed"),
             helper.make_node("Greater", ["e", "zero"], ["mask"], name="positive"),
             helper.make_node("NonZero", ["mask"], ["nz"], name="nz_embed")]
    inits = [init("table", table), init("zero", np.array(0.0, np.float32))]
    want = [np.array(np.nonzero(table[ids] > 0), np.int64)]
    return model(nodes, [vi("ids", I64, [4])], [vi("nz", I64, [2, None])], inits), [ids], want


NUMERIC = {"attention": attention, "half": half, "rotary": lambda: rotary(False),
           "rotary_interleaved": lambda: rotary(True),
           "scatter_tile13": lambda: scatter_tile(13), "scatter_tile16": lambda: scatter_tile(16),
           "nonzero": lambda: nonzero(17), "nonzero9": lambda: nonzero(9),
           "nonzero_embed": nonzero_embed}


def write_numeric(out, name):
    # The model plus input_i / output_i safetensors for `pimc run-ref`.
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "python"))
    import torch
    from pimc_testgen import safetensors_io
    m, ins, outs = NUMERIC[name]()
    onnx.save(m, os.path.join(out, name + ".onnx"))
    safetensors_io.write_file(os.path.join(out, name + ".inputs.safetensors"),
                              {"input_%d" % i: torch.from_numpy(np.ascontiguousarray(a)) for i, a in enumerate(ins)})
    safetensors_io.write_file(os.path.join(out, name + ".expect.safetensors"),
                              {"output_%d" % i: torch.from_numpy(np.ascontiguousarray(
                                  a if a.dtype == np.int64 else a.astype(np.float32)))
                               for i, a in enumerate(outs)})


def misc():
    # Assorted mappings: Split, runtime Gather, Unsqueeze, Expand, Trilu,
    # CumSum, LogSoftmax, Gemm with alpha/beta, ReduceMax, Cast to f16.
    nodes = [
        helper.make_node("Split", ["x", "sp"], ["s0", "s1"], name="split", axis=1),
        helper.make_node("Gather", ["s1", "idx"], ["g"], name="gather", axis=1),
        helper.make_node("Unsqueeze", ["g", "ax0"], ["u"], name="unsq"),
        helper.make_node("Expand", ["u", "eshape"], ["e"], name="expand"),
        helper.make_node("Trilu", ["e"], ["t"], name="tril", upper=0),
        helper.make_node("CumSum", ["t", "ax1"], ["cs"], name="cumsum", reverse=1),
        helper.make_node("LogSoftmax", ["cs"], ["ls"], name="logsm", axis=-1),
        helper.make_node("Gemm", ["s0", "s0", "bias"], ["gm"], name="gemm", alpha=0.5, beta=2.0, transB=1),
        helper.make_node("ReduceMax", ["gm"], ["rm"], name="rmax", axes=[1], keepdims=0),
        helper.make_node("Cast", ["rm"], ["h"], name="to_half", to=TensorProto.FLOAT16),
    ]
    inits = [init("sp", np.array([2, 2], np.int64)), init("ax0", np.array([0], np.int64)),
             init("eshape", np.array([3, 1, 1], np.int64)), init("ax1", np.array(1, np.int64)),
             init("bias", np.array([1.0], np.float32))]
    return model(nodes, [vi("x", F, [3, 4]), vi("idx", I64, [2])],
                 [vi("ls", F, [3, 3, 2]), vi("h", TensorProto.FLOAT16, [3])], inits, opset=14)


def raw_tensor(name, elem, dims, data):
    # Bypasses onnx.helper's size check to write an inconsistent tensor.
    t = TensorProto()
    t.name, t.data_type, t.raw_data = name, elem, data
    t.dims.extend(dims)
    return t


def node_errors():
    # One model per node-level error (the first failing node is reported).
    c = lambda name, vals: init(name, np.array(vals, np.int64))
    return {
        "bad_reshape": model([helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape_bad")],
                             [vi("x", F, [2, 3])], [vi("y", F, [4, 2])], [c("s", [4, 2])]),
        "bad_split": model([helper.make_node("Split", ["x", "s"], ["a", "b"], name="split_bad", axis=1)],
                           [vi("x", F, [2, 6])], [vi("a", F, [2, 2]), vi("b", F, [2, 3])], [c("s", [2, 3])]),
        "einsum_diagonal": model([helper.make_node("Einsum", ["x"], ["y"], name="diag", equation="iii->i")],
                                 [vi("x", F, [3, 3, 3])], [vi("y", F, [3])]),
        "attention_past": model([helper.make_node("Attention", ["q", "k", "v", "", "pk"], ["y"],
                                                  name="attn_past")],
                                [vi(n, F, [1, 2, 3, 4]) for n in ("q", "k", "v", "pk")],
                                [vi("y", F, [1, 2, 3, 4])], opset=23),
        "cast_string": model([helper.make_node("Cast", ["x"], ["y"], name="to_string", to=TensorProto.STRING)],
                             [vi("x", F, [2])], [vi("y", TensorProto.STRING, [2])]),
        "topk_k": model([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk_big")],
                        [vi("x", F, [2, 3])], [vi("v", F, [2, 5]), vi("i", I64, [2, 5])], [c("k", [5])]),
        "broadcast_mismatch": model([helper.make_node("Add", ["a", "b"], ["y"], name="add_bad")],
                                    [vi("a", F, [2, 3]), vi("b", F, [4])], [vi("y", F, [2, 3])]),
        "raw_size": model([helper.make_node("Add", ["x", "c"], ["y"], name="add")],
                          [vi("x", F, [4])], [vi("y", F, [4])],
                          [raw_tensor("c", F, [4], b"\0" * 12)]),
        "string_init": model([helper.make_node("Identity", ["s"], ["y"], name="id")],
                             [], [vi("y", TensorProto.STRING, [1])],
                             [helper.make_tensor("s", TensorProto.STRING, [1], [b"hi"])]),
        "dup_output": model([helper.make_node("Relu", ["x"], ["y"], name="first"),
                             helper.make_node("Neg", ["x"], ["y"], name="second")],
                            [vi("x", F, [2])], [vi("y", F, [2])]),
        "scatter_partial": model([helper.make_node("ScatterElements", ["d", "i", "u"], ["y"],
                                                   name="scatter_rows", axis=1)],
                                 [vi("d", F, [3, 5]), vi("i", I64, [2, 2]), vi("u", F, [2, 2])],
                                 [vi("y", F, [3, 5])], opset=13),
        "scatter_range": model([helper.make_node("ScatterElements", ["d", "i", "u"], ["y"],
                                                 name="scatter_oob", axis=0)],
                               [vi("d", F, [3]), vi("u", F, [1])], [vi("y", F, [3])],
                               [c("i", [3])], opset=13),
        "tile_repeats": model([helper.make_node("Tile", ["x", "r"], ["y"], name="tile_rank")],
                              [vi("x", F, [2, 3])], [vi("y", F, [4, 3])], [c("r", [2])]),
        "tile_runtime": model([helper.make_node("Tile", ["x", "r"], ["y"], name="tile_dyn")],
                              [vi("x", F, [2, 3]), vi("r", I64, [2])], [vi("y", F, [4, 3])]),
        "output_shape": model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                              [vi("x", F, [2, 3])], [vi("y", F, [3, 2])]),
    }


MODELS = {f.__name__: f for f in (mlp, shapes, broadcast, norms, einsum, unsupported,
                                  dynamic_shape, symbolic, dangling, misc)}


def main():
    name, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    if name.startswith("external"):
        bad = name.split("_", 1)[1] if "_" in name else None
        write_external(out, name, bad)
        return
    if name == "node_errors":
        for key, m in node_errors().items():
            onnx.save(m, os.path.join(out, key + ".onnx"))
        return
    if name in NUMERIC:
        write_numeric(out, name)
        return
    if name in ("corrupt", "truncated"):
        data = mlp().SerializeToString()
        data = b"\x12\xff\xff\xff\x7fgarbage" if name == "corrupt" else data[: len(data) // 2]
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(data)
        return
    onnx.save(MODELS[name](), os.path.join(out, name + ".onnx"))


if __name__ == "__main__":
    main()
