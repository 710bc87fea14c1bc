"""Shared by the ONNX test-model scripts whose goldens come from the onnx
package's reference implementation (attention_models.py,
newest_opset_models.py): one model file plus its input and expected-output
safetensors (input_0.. in graph input order, output_0..)."""
import os
import sys

import numpy as np
import torch
from onnx import helper, save
from onnx.reference import ReferenceEvaluator

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "python"))
from pimc_testgen import safetensors_io  # noqa: E402


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def dense(a):
    # np.ascontiguousarray makes a 0-d array 1-d (Size's output is 0-d).
    return np.ascontiguousarray(a).reshape(a.shape)


def write(out, name, nodes, inputs, outputs, inits=(), opset=28, ir_version=11):
    """Writes OUT/NAME.onnx, NAME.inputs.safetensors and NAME.expect.safetensors.
    `inputs`: [(name, elem, value)]; `outputs`: [(name, elem, shape)]. f16 outputs are
    stored as f32 (pimc computes every float in f32)."""
    g = helper.make_graph(nodes, name, [vi(n, e, list(v.shape)) for n, e, v in inputs],
                          [vi(n, e, s) for n, e, s in outputs], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="pimc-test")
    m.ir_version = ir_version
    save(m, os.path.join(out, name + ".onnx"))
    got = ReferenceEvaluator(m).run(None, {n: v for n, _, v in inputs})
    safetensors_io.write_file(os.path.join(out, name + ".inputs.safetensors"),
                              {"input_%d" % i: torch.from_numpy(dense(v))
                               for i, (_, _, v) in enumerate(inputs)})
    safetensors_io.write_file(os.path.join(out, name + ".expect.safetensors"),
                              {"output_%d" % i: torch.from_numpy(dense(
                                  a.astype(np.float32) if a.dtype == np.float16 else a))
                               for i, a in enumerate(got)})
