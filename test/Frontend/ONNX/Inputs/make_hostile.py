"""Writes hostile ONNX models for hardening.test (docs/onnx-importer.md, "Limits").

usage: make_hostile.py OUT_DIR   (writes OUT_DIR/<name>.onnx for every model below)

Each model breaks one rule the importer must turn into an error naming the file and
the node, initializer, graph input or field (or, for the folds, must import without
undefined behaviour). helper.make_model does not check them, so they serialize.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def ints(name, vals):
    return numpy_helper.from_array(np.array(vals, np.int64), name)


def model(nodes, inputs, outputs, inits=(), opset=17, domains=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    m = helper.make_model(graph, opset_imports=opsets, producer_name="pimc-test")
    m.ir_version = 8
    return m


def node(op, ins, outs, name, **attrs):
    return helper.make_node(op, ins, outs, name=name, **attrs)


def scalar_in():
    return [vi("x", F, [])]


def rank0_axes():
    # ONNX's checker accepts axis 0 on rank-0 inputs; there is no axis 0.
    y = [vi("y", F, None)]
    return {
        "split_rank0": model([node("Split", ["x"], ["y"], "split0", axis=0)],
                             scalar_in(), y, opset=13),
        "concat_rank0": model([node("Concat", ["x", "x"], ["y"], "concat0", axis=0)],
                              scalar_in(), y),
        "logsoftmax_rank0": model([node("LogSoftmax", ["x"], ["y"], "logsm0", axis=0)],
                                  scalar_in(), y, opset=13),
        "reduce_rank0": model([node("ReduceMax", ["x"], ["y"], "rmax0", axes=[0])],
                              scalar_in(), y, opset=13),
        "topk_rank0": model([node("TopK", ["x", "k"], ["y", "i"], "topk0", axis=0)],
                            scalar_in(), y + [vi("i", I64, None)], [ints("k", [1])]),
        "squeeze_rank0": model([node("Squeeze", ["x", "a"], ["y"], "squeeze0")],
                               scalar_in(), y, [ints("a", [0])]),
        "slice_rank0": model([node("Slice", ["x", "s", "e", "a"], ["y"], "slice0")],
                             scalar_in(), y, [ints("s", [0]), ints("e", [1]), ints("a", [0])]),
        "cumsum_rank0": model([node("CumSum", ["x", "a"], ["y"], "cumsum0")],
                              scalar_in(), y, [ints("a", [0])]),
    }


def bad_axes():
    x = [vi("x", F, [2, 3])]
    y = [vi("y", F, None)]
    return {
        "unsqueeze_axes": model([node("Unsqueeze", ["x", "a"], ["y"], "unsq")], x, y,
                                [ints("a", [0, 5])]),
        "transpose_perm": model([node("Transpose", ["x"], ["y"], "transp", perm=[0, 2])], x, y),
        "gather_axis": model([node("Gather", ["x", "i"], ["y"], "gath", axis=2)], x, y,
                             [ints("i", [0])]),
        "flatten_axis": model([node("Flatten", ["x"], ["y"], "flat", axis=3)], x, y),
        "softmax_axis": model([node("Softmax", ["x"], ["y"], "sm", axis=-3)], x, y),
        "slice_step0": model([node("Slice", ["x", "s", "e", "a", "st"], ["y"], "slice_st")], x, y,
                             [ints("s", [0]), ints("e", [2]), ints("a", [1]), ints("st", [0])]),
        "slice_huge_step": model([node("Slice", ["x", "s", "e", "a", "st"], ["y"], "slice_big")],
                                 x, [vi("y", F, [2, 1])],
                                 [ints("s", [0]), ints("e", [3]), ints("a", [1]),
                                  ints("st", [2**63 - 1])]),
        "reshape_two_minus1": model([node("Reshape", ["x", "s"], ["y"], "reshape_m1")], x, y,
                                    [ints("s", [-1, -1])]),
        "reshape_negative": model([node("Reshape", ["x", "s"], ["y"], "reshape_neg")], x, y,
                                  [ints("s", [-2, 3])]),
        "reshape_overflow": model([node("Reshape", ["x", "s"], ["y"], "reshape_ovf")], x, y,
                                  [ints("s", [2**40, 2**40, -1])]),
        "expand_negative": model([node("Expand", ["x", "s"], ["y"], "expand_neg")], x, y,
                                 [ints("s", [2, -3])]),
        "split_num_outputs": model([node("Split", ["x"], ["a", "b"], "split_n", axis=1,
                                         num_outputs=2**40)],
                                   x, [vi("a", F, None), vi("b", F, None)], opset=18),
    }


def raw_tensor(name, elem, dims, data=b""):
    t = TensorProto()
    t.name, t.data_type, t.raw_data = name, elem, data
    t.dims.extend(dims)
    return t


def sizes():
    y = [vi("y", F, None)]
    return {
        # 2^62 doubles are 2^65 bytes: 0 after a wrapping multiplication.
        "init_bytes_overflow": model([node("Identity", ["w"], ["y"], "id")], [], y,
                                     [raw_tensor("w", TensorProto.DOUBLE, [2**62])]),
        "init_zero_extent": model([node("Identity", ["w"], ["y"], "id")], [], y,
                                  [raw_tensor("w", F, [0, 2**31, 2**31])]),
        "input_negative_dim": model([node("Relu", ["x"], ["y"], "relu")],
                                    [vi("x", F, [2, -3])], y),
        "input_huge": model([node("Relu", ["x"], ["y"], "relu")],
                            [vi("x", F, [2**30, 2**30, 2**30])], y),
        "tile_overflow": model([node("Tile", ["x", "r"], ["y"], "tile_ovf")],
                               [vi("x", F, [4])], y, [ints("r", [2**62])]),
        "matmul_huge": model([node("MatMul", ["a", "b"], ["y"], "mm_big")],
                             [vi("a", F, [2**30, 1]), vi("b", F, [1, 2**30])], y),
        # INT64_MIN / -1 overflows (SIGFPE on x86 when folded naively).
        "div_overflow": model([node("Div", ["p", "q"], ["y"], "div_min")], [],
                              [vi("y", I64, [1])], [ints("p", [-2**63]), ints("q", [-1])]),
    }


def bombs():
    y = [vi("y", F, None)]
    yi = [vi("y", I64, None)]
    f = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
    return {
        "constantofshape_bomb": model([node("ConstantOfShape", ["s"], ["y"], "cos_bomb")], [], y,
                                      [ints("s", [2**20, 2**20])]),
        "range_bomb": model([node("Range", ["a", "b", "c"], ["y"], "range_bomb")], [], yi,
                            [ints("a", 0), ints("b", 2**40), ints("c", 1)]),
        "range_inf": model([node("Range", ["a", "b", "c"], ["y"], "range_inf")], [], y,
                           [f("a", 0), f("b", np.inf), f("c", 1)]),
        "range_mixed": model([node("Range", ["a", "b", "c"], ["y"], "range_mixed")], [], y,
                             [ints("a", 0), ints("b", 4), f("c", 1)]),
        # As doubles start and limit round apart (to 2^63 - 2048 and 2^63): the count is
        # 2, and start + delta is beyond int64.
        "range_overflow": model([node("Range", ["a", "b", "c"], ["y"], "range_ovf")], [], yi,
                                [ints("a", 2**63 - 1537), ints("b", 2**63 - 1), ints("c", 1600)]),
        "expand_bomb": model([node("Expand", ["x", "s"], ["y"], "expand_bomb")],
                             [vi("x", F, [1])], y, [ints("s", [2**41])]),
        "trilu_bomb": model([node("Trilu", ["x"], ["y"], "trilu_bomb")],
                            [vi("x", F, [2**20, 2**20])], y, opset=14),
        "scatter_bomb": model([node("ScatterElements", ["d", "i", "u"], ["y"], "scatter_bomb")],
                              [vi("d", F, [2**30]), vi("u", F, [1])], y, [ints("i", [0])]),
    }


def domains():
    # The unsupported-op report spells the node's domain (a string longer than
    # any small-string buffer, so a dangling reference to a copy shows).
    dom = "org.example.custom.operators"
    return {
        "custom_domain": model([helper.make_node("FancyOp", ["x"], ["y"], name="fancy",
                                                 domain=dom)],
                               [vi("x", F, [2])], [vi("y", F, [2])], domains=[dom]),
    }


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for group in (rank0_axes, bad_axes, sizes, bombs, domains):
        for name, m in group().items():
            with open(os.path.join(out, name + ".onnx"), "wb") as fh:
                fh.write(m.SerializeToString())


if __name__ == "__main__":
    main()
