"""Run an ONNX model with onnxruntime (CPU) on inputs from a safetensors file: the external
oracle of the ONNX importer (docs/torch-bridge.md).

Inputs are matched by position (input_0 feeds the model's first graph input, and so on);
outputs are written in the model's output order as output_0, output_1, ...
"""

import os

from .graph_format import AtomicFiles


class OrtError(Exception):
    pass


def _first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def run(model_path, inputs_path, out_path):
    """Returns a one-line summary; raises OrtError naming the file on any failure."""
    import numpy as np
    import onnxruntime as ort
    from pimc_testgen import safetensors_io as st

    if not os.path.isfile(model_path):
        raise OrtError("%s: no such file" % model_path)
    try:
        tensors, _ = st.load_file(inputs_path)
    except Exception as e:
        raise OrtError("%s: cannot read the inputs: %s" % (inputs_path, _first_line(e)))
    opts = ort.SessionOptions()
    opts.log_severity_level = 3          # errors reach the caller as exceptions, not as log lines
    try:
        sess = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
    except Exception as e:
        raise OrtError("%s: onnxruntime cannot load it: %s" % (model_path, _first_line(e)))
    graph_inputs = sess.get_inputs()
    feed = {}
    for i, gi in enumerate(graph_inputs):
        key = "input_%d" % i
        if key not in tensors:
            raise OrtError("%s: no tensor %s for the model's input %d ('%s')"
                           % (inputs_path, key, i, gi.name))
        feed[gi.name] = tensors[key].numpy()
    try:
        outs = sess.run(None, feed)
    except Exception as e:
        raise OrtError("%s: onnxruntime run failed: %s" % (model_path, _first_line(e)))
    import torch
    result = {"output_%d" % i: torch.from_numpy(np.ascontiguousarray(o)) for i, o in enumerate(outs)}
    with AtomicFiles() as files:
        files.write(out_path, st.serialize(result))
    return "%s: %d output(s) -> %s" % (model_path, len(outs), out_path)
