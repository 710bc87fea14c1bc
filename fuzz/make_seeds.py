#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (fuzz/corpus/<harness>/), small valid and
near-valid inputs of every format. Run once after a build, from the repository root:

    build/venv/bin/python3 fuzz/make_seeds.py --build build

The seeds are committed; the test suite replays them (test/Fuzz/replay.test) and scripts/fuzz.sh
starts its campaigns from them. Rerun when a format changes.
"""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def put(harness, name, data):
    d = os.path.join(HERE, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def safetensors_bytes(tensors, metadata=None):
    header, blob = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, arr) in tensors.items():
        raw = arr.tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [len(blob), len(blob) + len(raw)]}
        blob += raw
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + blob


def seeds_safetensors():
    rng = np.random.default_rng(0)
    put("safetensors", "f32-bf16-i64", safetensors_bytes({
        "w": ("F32", rng.standard_normal((2, 3)).astype(np.float32)),
        "b": ("BF16", np.array([0x3f80, 0x4000], dtype=np.uint16)),
        "ids": ("I64", np.arange(4, dtype=np.int64))}, {"format": "pt"}))
    put("safetensors", "empty-tensor", safetensors_bytes({
        "e": ("F32", np.zeros((0, 4), dtype=np.float32))}))
    put("safetensors", "scalar-f16", safetensors_bytes({
        "s": ("F16", np.array(1.5, dtype=np.float16))}))
    put("safetensors", "truncated", safetensors_bytes({
        "w": ("F32", np.ones(8, dtype=np.float32))})[:-4])


def seeds_checkpoint_index():
    shard = "model-00001-of-00001.safetensors"
    put("checkpoint-index", "valid", json.dumps(
        {"metadata": {"total_size": 8}, "weight_map": {"w": shard}}))
    put("checkpoint-index", "missing-tensor", json.dumps(
        {"weight_map": {"w": shard, "v": shard}}))
    put("checkpoint-index", "outside-dir", json.dumps(
        {"weight_map": {"w": "../" + shard}}))
    put("checkpoint-index", "absolute", json.dumps(
        {"weight_map": {"w": "/etc/hostname"}}))


def seeds_hf_config(build):
    for name in ("llama", "llama31", "llama_yarn", "mistral", "qwen2", "qwen3",
                 "llama_gptq4"):
        src = os.path.join(build, "testdata", name, "config.json")
        if os.path.exists(src):
            with open(src, "rb") as f:
                put("hf-config", name, f.read())
    # Real published configs of families pimc does not build yet (their
    # architecture features: examples/configs).
    for name in ("google--gemma-2-9b", "google--gemma-3-1b-it", "microsoft--Phi-3.5-mini-instruct",
                 "tiiuae--falcon-7b", "HuggingFaceTB--SmolLM3-3B"):
        with open(os.path.join(ROOT, "examples", "configs", name, "config.json"), "rb") as f:
            put("hf-config", name, f.read())
    put("hf-config", "nested", "[" * 64 + "]" * 64)
    put("hf-config", "wrong-types", json.dumps(
        {"model_type": "llama", "hidden_size": "64", "num_hidden_layers": -1}))


def seeds_size_expr():
    for i, e in enumerate(["s0", "2*s0 + 1", "((s0 + 1)//2)", "Max(1, s0)", "Min(s0, s1, 4)",
                           "Mod(s0, 4)", "FloorDiv(s0, s1)", "-s0 + 20", "s0 % 3", "s1*s0*2",
                           "9223372036854775807 + 1", "s0 // 0"]):
        put("size-expr", "e%02d" % i, e)


def node(name, target, args, dtype, shape, overload="default", **extra):
    d = {"name": name, "op": "call_function", "target": target, "overload": overload,
         "args": args, "kwargs": {}, "meta": {"dtype": dtype, "shape": shape}}
    d.update(extra)
    return d


def inline(arr):
    return {"tensor": {"dtype": "float32", "shape": list(arr.shape),
                       "data": [float(x) for x in arr.reshape(-1)]}}


def graph(nodes, outputs, **top):
    g = {"format": "pimc-fx-graph", "version": 1, "module": "seed", "parameters": None,
         "nodes": nodes + [{"name": "output", "op": "output",
                            "args": [[{"node": o} for o in outputs]]}]}
    g.update(top)
    return json.dumps(g)


def seeds_fx_graph():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 4)).astype(np.float32)
    x = {"name": "x", "op": "placeholder", "kind": "input",
         "meta": {"dtype": "float32", "shape": [2, 4]}}
    wc = {"name": "w", "op": "placeholder", "kind": "constant",
          "meta": {"dtype": "float32", "shape": [4, 4]}, "value": inline(w)}
    put("fx-graph", "mlp", graph([x, wc,
        node("mm", "aten.mm", [{"node": "x"}, {"node": "w"}], "float32", [2, 4]),
        node("relu", "aten.relu", [{"node": "mm"}], "float32", [2, 4]),
        node("sm", "aten._softmax", [{"node": "relu"}, -1, False], "float32", [2, 4])],
        ["sm"]))
    put("fx-graph", "norm", graph([x,
        node("pow", "aten.pow", [{"node": "x"}, 2], "float32", [2, 4], "Tensor_Scalar"),
        node("mean", "aten.mean", [{"node": "pow"}, [-1], True], "float32", [2, 1], "dim"),
        node("rs", "aten.rsqrt", [{"node": "mean"}], "float32", [2, 1]),
        node("mul", "aten.mul", [{"node": "x"}, {"node": "rs"}], "float32", [2, 4], "Tensor")],
        ["mul"]))
    xs = {"name": "x", "op": "placeholder", "kind": "input",
          "meta": {"dtype": "float32", "shape": [1, 8]}, "sym_shape": [1, "s0"]}
    put("fx-graph", "symbolic", graph([xs,
        node("v", "aten.view", [{"node": "x"}, [{"sym": "s0", "example": 8}, 1]],
             "float32", [8, 1], sym_shape=["s0", 1]),
        node("a", "aten.arange", [{"sym": "2*s0", "example": 16}], "int64", [16],
             sym_shape=["2*s0"])],
        ["v", "a"], dynamic_dims=[{"input": "x", "dim": 1, "name": "seq", "symbol": "s0",
                                   "range": [2, 64], "example": 8}]))
    put("fx-graph", "dangling", graph([x,
        node("mm", "aten.mm", [{"node": "x"}, {"node": "nope"}], "float32", [2, 4])], ["mm"]))


def onnx_seeds():
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(2)

    def model(nodes, inputs, outputs, inits, opset=17):
        g = helper.make_graph(nodes, "seed", inputs, outputs, inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])

    f = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
    w = numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    m = model([helper.make_node("MatMul", ["x", "w"], ["h"]),
               helper.make_node("Add", ["h", "b"], ["a"]),
               helper.make_node("Relu", ["a"], ["y"])],
              [f("x", [2, 4])], [f("y", [2, 4])], [w, b])
    put("onnx", "mlp", m.SerializeToString())
    shape = numpy_helper.from_array(np.array([4, 2], dtype=np.int64), "shape")
    m = model([helper.make_node("Reshape", ["x", "shape"], ["r"]),
               helper.make_node("Transpose", ["r"], ["t"], perm=[1, 0]),
               helper.make_node("Softmax", ["t"], ["y"], axis=-1)],
              [f("x", [2, 4])], [f("y", [2, 4])], [shape])
    put("onnx", "reshape-softmax", m.SerializeToString())
    # External data: the initializer's bytes in data.bin beside the model.
    big = rng.standard_normal((8, 8)).astype(np.float32)
    t = TensorProto()
    t.name, t.data_type = "w", TensorProto.FLOAT
    t.dims.extend([8, 8])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "data.bin"), ("offset", "0"), ("length", str(big.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"])],
              [f("x", [1, 8])], [f("y", [1, 8])], [t])
    put("onnx", "external-data",
        m.SerializeToString() + b"\n--pimc-external-data--\n" + big.tobytes())


def seeds_sim(build):
    pimsim = os.path.join(build, "sim", "pimsim")
    pimc = os.path.join(build, "tools", "pimc", "pimc")
    sdir = os.path.join(ROOT, "test", "Sim", "Inputs")
    tmp = os.path.join(build, "fuzz", "seed-tmp")
    os.makedirs(tmp, exist_ok=True)
    for s in sorted(os.listdir(sdir)) + ["../../../bench/programs/mac-stream-hbm3.s"]:
        if not s.endswith(".s"):
            continue
        src = os.path.join(sdir, s)
        base = os.path.basename(s)[:-2]
        with open(src, "rb") as f:
            put("program-text", base, f.read())
        out = os.path.join(tmp, base + ".pimb")
        subprocess.run([pimsim, "asm", src, "-o", out], check=True)
        with open(out, "rb") as f:
            put("program", base, f.read())
    # Checkpoints, and a decoder graph whose host calls carry MLIR functions.
    for name in ("llama", "llama_gptq4", "decoders/gpt2_lm/graph.json"):
        out = os.path.join(tmp, name.split("/")[-2 if "/" in name else 0] + ".pimb")
        subprocess.run([pimc, "compile", os.path.join(build, "testdata", name), "--target",
                        os.path.join(ROOT, "targets", "hbm3-pim.json"), "-o", out], check=True)
        with open(out, "rb") as f:
            put("program", "compiled-" + os.path.basename(out)[:-5], f.read())
        text = subprocess.run([pimsim, "disasm", out], check=True, capture_output=True).stdout
        put("program-text", "compiled-" + os.path.basename(out)[:-5], text)
    shutil.rmtree(tmp)
    for t in sorted(os.listdir(os.path.join(ROOT, "targets"))):
        with open(os.path.join(ROOT, "targets", t), "rb") as f:
            put("target", t[:-5], f.read())
    with open(os.path.join(ROOT, "test", "Sim", "Inputs", "attacc",
                           "gpt3-attention-bank.trace"), "rb") as f:
        lines = f.read().split(b"\n")
    put("trace", "attacc-head", b"\n".join(lines[:300]) + b"\n")
    put("trace", "plain", "LD 0x0\nST 0x40\nLD 4096\nST 0X1000\n")
    put("trace", "pim-mix", "PIM_WR_GB 0x0\nPIM_MAC_AB 0x0\nPIM_BARRIER 0x0\nPIM_SFM 0x0\n"
        "PIM_MV_SB 0x0\nPIM_MV_GB 0x0\nPIM_MAC_SB 0x0\nPIM_MAC_PB 0x0\n")


# Kernel arguments of a Llama-3.2-1B layer on hbm3-pim (the q/k/v GEMV over 2
# channels and the attention), for the kernel-file seeds.
KERNEL_ARGS = {
    "machine": dict(cols=32, lanes=16, elems=512, banks=64, units=64, per_burst=8,
                    gb_bytes=4096, gb_elems=2048, acc=8, ccdab=4, row_switch=45,
                    readout=80, segment=30, bc_pch=2, bc_bgs=4, bc_chunk=512,
                    pch_stride=32, bg_stride=4),
    "gemv": dict(k_len=2048, k_rows=4, last_cols=32, groups=8, nch=2, parts=1, row0=100),
    "attention": dict(heads_per_ch=4, kpr=4, cpk=8, ag=4, nd=2, split=1, live_kr=8,
                      live_vr=4, kbase=0, vbase=8, vr=4),
}


def seeds_kernel_file():
    kdir = os.path.join(ROOT, "kernels")
    for k in sorted(os.listdir(kdir)):
        with open(os.path.join(kdir, k)) as f:
            text = f.read()
        op = "gemv" if "op=gemv" in text else "attention"
        args = dict(KERNEL_ARGS["machine"], **KERNEL_ARGS[op])
        tail = "".join(f"{n}={v}\n" for n, v in args.items())
        put("kernel-file", k[:-7], text + "\0" + tail)
        put("kernel-file", k[:-7] + "-noargs", text)
        put("kernel-file", k[:-7] + "-zero", text + "\0" + tail.replace("=8\n", "=0\n"))
    put("kernel-file", "minimal", ".kernel k op=gemv\n.arg n\n.cost n\n.body\n"
        "loop i ${n} {\n  barrier\n}\n\0n=3\n")
    put("kernel-file", "bad-expr", ".kernel k op=gemv\n.arg n\n.let m = n / (n - n)\n"
        ".applies m > 0 && cdiv(n, 2) < max(1, n)\n.cost -n % 3\n.body\nbarrier\n\0n=2\n")
    put("kernel-file", "directive-in-body", ".kernel k op=attention\n.runtime kv_len\n"
        ".cost 1\n.body\nsfm length=kv_len\n.stream s channels=0\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="build directory (tools, testdata)")
    args = ap.parse_args()
    shutil.rmtree(os.path.join(HERE, "corpus"), ignore_errors=True)
    seeds_safetensors()
    seeds_checkpoint_index()
    seeds_hf_config(args.build)
    seeds_size_expr()
    seeds_fx_graph()
    onnx_seeds()
    seeds_sim(args.build)
    seeds_kernel_file()
    total = 0
    for root, _, files in os.walk(os.path.join(HERE, "corpus")):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    print("wrote %s (%d bytes)" % (os.path.join(HERE, "corpus"), total))


if __name__ == "__main__":
    sys.exit(main())
