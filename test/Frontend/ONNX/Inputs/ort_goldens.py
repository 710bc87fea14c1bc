"""onnxruntime against the numeric goldens of make_model.py, in one process (torch and
onnxruntime load once): ort_goldens.py OUTDIR NAME[:ATOL:RTOL] ...

Writes each model and its goldens with make_model.write_numeric, runs it with pimc_torch's
onnxruntime runner and compares like `pimc_torch compare`; prints one line per model and exits
1 at the first disagreement."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_model                                     # noqa: E402
from pimc_torch import ort, replay                    # noqa: E402


def main():
    out = sys.argv[1]
    for spec in sys.argv[2:]:
        name, atol, rtol = (spec.split(":") + ["1e-5", "1e-5"])[:3]
        make_model.write_numeric(out, name)
        base = os.path.join(out, name)
        ort.run(base + ".onnx", base + ".inputs.safetensors", base + ".ort.safetensors")
        try:
            print(name + ": " + replay.compare_files(base + ".ort.safetensors",
                                                     base + ".expect.safetensors",
                                                     float(atol), float(rtol)))
        except Exception as e:
            print("error: %s: %s" % (name, e), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
