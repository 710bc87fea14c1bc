"""check_weights.py FILE.safetensors MODEL.onnx KEY INIT [transpose]

Checks that safetensors tensor KEY holds initializer INIT of the ONNX model
(transposed when asked), byte for byte.
"""
import json
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper

path, model_path, key, init = sys.argv[1:5]
transpose = len(sys.argv) > 5 and sys.argv[5] == "transpose"
data = open(path, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
entry = header[key]
assert entry["dtype"] == "F32", entry
begin, end = entry["data_offsets"]
got = np.frombuffer(data[8 + n + begin:8 + n + end], np.float32).reshape(entry["shape"])
model = onnx.load(model_path)
want = [numpy_helper.to_array(t) for t in model.graph.initializer if t.name == init][0]
if transpose:
    want = want.T
if got.shape != want.shape or not np.array_equal(got, want):
    sys.exit(f"{key}: stored tensor differs from initializer {init}")
print(f"{key}: ok {list(got.shape)}")
