"""make_node_tests.py OUT_DIR

A miniature ONNX node-test tree (model.onnx + test_data_set_0/{input,output}_N.pb)
for testing pimc-onnx-conformance itself: a correct test, a test whose
expected output is wrong, and a test of an out-of-scope op.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def write(root, name, op, x, y, **attrs):
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y.shape)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, os.path.join(d, "model.onnx"))
    for kind, arr in (("input_0", x), ("output_0", y)):
        t = numpy_helper.from_array(arr, kind[:-2] if kind == "input_0" else "y")
        with open(os.path.join(d, "test_data_set_0", kind + ".pb"), "wb") as f:
            f.write(t.SerializeToString())


root = sys.argv[1]
x = np.array([[-1.0, 2.0], [3.0, -4.0]], np.float32)
write(root, "test_relu_ok", "Relu", x, np.maximum(x, 0))
write(root, "test_relu_wrong", "Relu", x, np.maximum(x, 0) + np.float32(0.01))
write(root, "test_hardmax_out_of_scope", "Hardmax", x, x)
