"""decoder_bad_inputs.py DIR: from DIR/inputs.safetensors of a decoder-with-past
export (input_1 = attention_mask, input_4 = past_key_values.0.value) writes
DIR/masked.inputs.safetensors (the mask's second position zeroed: the logits
must change) and DIR/longer_past.inputs.safetensors (past_key_values.0.value
one position longer than the other past inputs)."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "python"))
from pimc_testgen import safetensors_io  # noqa: E402

d = sys.argv[1]
tensors, _ = safetensors_io.load_file(os.path.join(d, "inputs.safetensors"))
masked = dict(tensors)
masked["input_1"] = tensors["input_1"].clone()
masked["input_1"][0, 1] = 0
safetensors_io.write_file(os.path.join(d, "masked.inputs.safetensors"), masked)
longer = dict(tensors)
v = tensors["input_4"]
longer["input_4"] = torch.cat([v, v[:, :, :1]], dim=2).contiguous()
safetensors_io.write_file(os.path.join(d, "longer_past.inputs.safetensors"), longer)
