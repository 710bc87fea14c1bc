"""Small ONNX models for what decoder-with-past exports need of the importer
(isnan.test, symbolic-dims.test, decoder-prompt-form.test).

usage: make_past_models.py NAME OUT_DIR

Writes OUT_DIR/NAME.onnx and, where the model runs, NAME[.SET].inputs.safetensors
(input_0.. in graph input order) and NAME[.SET].expect.safetensors (output_0..,
computed with numpy here).
"""
import os
import sys

import numpy as np
import torch
from onnx import TensorProto, helper, numpy_helper, save

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "python"))
from pimc_testgen import safetensors_io  # noqa: E402

F = TensorProto.FLOAT
I64 = TensorProto.INT64
B = TensorProto.BOOL


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="pimc-test")
    m.ir_version = 8 if opset <= 18 else 9
    return m


def write_io(out, name, ins, want):
    safetensors_io.write_file(os.path.join(out, name + ".inputs.safetensors"),
                              {"input_%d" % i: torch.from_numpy(np.ascontiguousarray(a))
                               for i, a in enumerate(ins)})
    safetensors_io.write_file(os.path.join(out, name + ".expect.safetensors"),
                              {"output_%d" % i: torch.from_numpy(np.ascontiguousarray(a))
                               for i, a in enumerate(want)})


def isnan(out, opset):
    # torch.onnx's scaled_dot_product_attention: Where(IsNaN(p), 0, p) zeroes the
    # NaN rows of a fully masked softmax. Also IsNaN of a constant (folded).
    x = np.array([[0.5, np.nan, -np.inf, 0.0],
                  [np.inf, -2.0, np.nan, 1e-30]], np.float32)
    c = np.array([np.nan, 1.0, np.inf], np.float32)
    nodes = [helper.make_node("IsNaN", ["x"], ["m"], name="isnan_x"),
             helper.make_node("Where", ["m", "zero", "x"], ["y"], name="zero_nan"),
             helper.make_node("IsNaN", ["c"], ["mc"], name="isnan_c")]
    inits = [numpy_helper.from_array(np.array([0.0], np.float32), "zero"),
             numpy_helper.from_array(c, "c")]
    m = model(nodes, [vi("x", F, [2, 4])],
              [vi("m", B, [2, 4]), vi("y", F, [2, 4]), vi("mc", B, [3])], inits, opset)
    name = "isnan%d" % opset
    save(m, os.path.join(out, name + ".onnx"))
    write_io(out, name, [x], [np.isnan(x), np.where(np.isnan(x), np.float32(0), x),
                              np.isnan(c)])


def isnan_int(out):
    # IsNaN takes float tensors only (written without the checker).
    nodes = [helper.make_node("IsNaN", ["i"], ["m"], name="isnan_int")]
    save(model(nodes, [vi("i", I64, [3])], [vi("m", B, [3])]),
         os.path.join(out, "isnan_int.onnx"))


def symbolic(out):
    # A cache-like graph with optimum's dimension names: past [batch, past, 4]
    # and new [batch, seq, 4] concatenated, positions past..past+seq-1 from the
    # shapes (Shape -> Gather -> Range, folded at import), ids [batch, seq].
    # Two example sets of other sizes.
    nodes = [
        helper.make_node("Concat", ["past", "new"], ["kv"], name="cat_kv", axis=1),
        helper.make_node("Shape", ["past"], ["ps"], name="past_shape"),
        helper.make_node("Gather", ["ps", "one"], ["plen"], name="past_len", axis=0),
        helper.make_node("Shape", ["kv"], ["ks"], name="kv_shape"),
        helper.make_node("Gather", ["ks", "one"], ["klen"], name="kv_len", axis=0),
        helper.make_node("Range", ["plen", "klen", "step"], ["pos"], name="positions"),
        helper.make_node("Add", ["ids", "pos"], ["shifted"], name="shift_ids"),
    ]
    inits = [numpy_helper.from_array(np.array(1, np.int64), "one"),
             numpy_helper.from_array(np.array(1, np.int64), "step")]
    m = model(nodes,
              [vi("past", F, ["batch_size", "past_sequence_length", 4]),
               vi("new", F, ["batch_size", "sequence_length", 4]),
               vi("ids", I64, ["batch_size", "sequence_length"])],
              [vi("kv", F, ["batch_size", "past_sequence_length + sequence_length", 4]),
               vi("shifted", I64, ["batch_size", "sequence_length"])], inits)
    save(m, os.path.join(out, "symbolic_kv.onnx"))
    rng = np.random.RandomState(0)
    for tag, (b, p, t) in (("a", (1, 5, 3)), ("b", (2, 7, 1))):
        past = rng.randn(b, p, 4).astype(np.float32)
        new = rng.randn(b, t, 4).astype(np.float32)
        ids = rng.randint(0, 100, (b, t)).astype(np.int64)
        write_io(out, "symbolic_kv." + tag, [past, new, ids],
                 [np.concatenate([past, new], 1), ids + np.arange(p, p + t)])
    # Inconsistent examples: batch 1 for past, 2 for new; a rank that does not fit.
    safetensors_io.write_file(os.path.join(out, "symbolic_kv.batch.inputs.safetensors"), {
        "input_0": torch.zeros(1, 5, 4), "input_1": torch.zeros(2, 3, 4),
        "input_2": torch.zeros(2, 3, dtype=torch.int64)})
    safetensors_io.write_file(os.path.join(out, "symbolic_kv.rank.inputs.safetensors"), {
        "input_0": torch.zeros(1, 5, 4), "input_1": torch.zeros(1, 3, 5),
        "input_2": torch.zeros(1, 3, dtype=torch.int64)})


def layout(out, name, extra_input=False, drop_output=None, past_len="past_sequence_length",
           drop_input=None):
    """A one-layer decoder with past in optimum's layout (or a variant that breaks it):
    ids -> table rows [b, T, 8] are the logits; the rows as [b, 2, T, 4] are the new keys and
    values, appended to the past along dimension 2; the logits add position_ids and the
    attention mask's sum so both inputs are read."""
    table = np.arange(40 * 8, dtype=np.float32).reshape(40, 8) / 100
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["rows"], name="embed"),
        helper.make_node("Reshape", ["rows", "kv_shape"], ["kv4"], name="split_heads"),
        helper.make_node("Transpose", ["kv4"], ["kv"], name="heads_first", perm=[0, 2, 1, 3]),
        helper.make_node("Concat", ["past_key_values.0.key", "kv"], ["present.0.key"],
                         name="append_key", axis=2),
        helper.make_node("Concat", ["past_key_values.0.value", "kv"], ["present.0.value"],
                         name="append_value", axis=2),
        helper.make_node("Cast", ["position_ids"], ["posf"], name="pos_float", to=F),
        helper.make_node("Unsqueeze", ["posf", "last"], ["pos3"], name="pos_col"),
        helper.make_node("ReduceSum", ["attention_mask"], ["masked"], name="mask_sum",
                         keepdims=1),
        helper.make_node("Cast", ["masked"], ["maskf"], name="mask_float", to=F),
        helper.make_node("Add", ["rows", "pos3"], ["shifted"], name="add_pos"),
        helper.make_node("Add", ["shifted", "maskf"], ["logits"], name="add_mask"),
    ]
    inits = [numpy_helper.from_array(table, "table"),
             numpy_helper.from_array(np.array([0, -1, 2, 4], np.int64), "kv_shape"),
             numpy_helper.from_array(np.array([2], np.int64), "last")]
    total = "past_sequence_length + sequence_length"
    inputs = [vi("input_ids", I64, ["batch_size", "sequence_length"]),
              vi("attention_mask", I64, ["batch_size", total]),
              vi("position_ids", I64, ["batch_size", "sequence_length"]),
              vi("past_key_values.0.key", F, ["batch_size", 2, past_len, 4]),
              vi("past_key_values.0.value", F, ["batch_size", 2, past_len, 4])]
    if extra_input:
        inputs.append(vi("token_type_ids", I64, ["batch_size", "sequence_length"]))
    inputs = [i for i in inputs if i.name != drop_input]
    if drop_input:
        nodes = [n for n in nodes if drop_input not in n.input]
        nodes.append(helper.make_node("Identity", ["kv"], [drop_input.replace(
            "past_key_values", "present")], name="no_past"))
    outputs = [vi("logits", F, ["batch_size", "sequence_length", 8]),
               vi("present.0.key", F, ["batch_size", 2, total, 4]),
               vi("present.0.value", F, ["batch_size", 2, total, 4])]
    outputs = [o for o in outputs if o.name != drop_output]
    save(model(nodes, inputs, outputs, inits), os.path.join(out, name + ".onnx"))
    if name == "layout_ok":
        # The prompt form over 4 tokens: positions 0..3, a mask of 4 ones.
        ids = np.array([[3, 1, 4, 1]], np.int64)
        want = table[ids] + np.arange(4, dtype=np.float32)[None, :, None] + 4.0
        write_io(out, name, [ids], [want])


def main():
    name, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    if name == "isnan":
        for opset in (9, 13, 20):
            isnan(out, opset)
        isnan_int(out)
    elif name == "symbolic":
        symbolic(out)
    elif name == "layouts":
        layout(out, "layout_ok")
        layout(out, "layout_extra_input", extra_input=True)
        layout(out, "layout_no_present", drop_output="present.0.value")
        layout(out, "layout_static_past", past_len=3)
        layout(out, "layout_no_value", drop_input="past_key_values.0.value")
    else:
        sys.exit("unknown model %r" % name)


if __name__ == "__main__":
    main()
