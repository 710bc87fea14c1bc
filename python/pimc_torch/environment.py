"""Checks that the project's Python environment is the pinned one (python/requirements.txt)
and that every package pimc uses imports: `python -m pimc_torch.environment [REQUIREMENTS]`.

A missing or different package is an error naming it, so a test suite run in a broken
environment fails instead of skipping."""

import importlib
import importlib.metadata as md
import os
import re
import sys

# Modules pimc's tests and tools import, with the distribution that provides each.
MODULES = [
    ("torch", "torch"), ("torch.export", "torch"), ("torch._dynamo", "torch"),
    ("torch.onnx", "torch"), ("transformers", "transformers"), ("safetensors", "safetensors"),
    ("tokenizers", "tokenizers"), ("onnx", "onnx"), ("onnx.reference", "onnx"),
    ("onnxruntime", "onnxruntime"), ("onnxscript", "onnxscript"), ("optimum", "optimum"),
    ("gguf", "gguf"), ("llama_cpp", "llama-cpp-python"), ("numpy", "numpy"),
]

_PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s#;]+)")


def _canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path):
    pins = {}
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            m = _PIN.match(text)
            if not m:
                raise SystemExit("%s:%d: not an exact pin (name==version): %s" % (path, lineno, text))
            pins[_canonical(m.group(1))] = m.group(2)
    return pins


def check_pins(pins, source):
    errors = []
    for name, want in sorted(pins.items()):
        try:
            got = md.version(name)
        except md.PackageNotFoundError:
            errors.append("%s==%s is not installed" % (name, want))
            continue
        if got != want:
            errors.append("%s is %s, %s pins %s" % (name, got, source, want))
    return errors


def check_imports(pins):
    errors = []
    for module, dist in MODULES:
        if _canonical(dist) not in pins:
            errors.append("module %s: its distribution %s is not pinned" % (module, dist))
        try:
            importlib.import_module(module)
        except Exception as e:     # ImportError, or a broken native library
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            errors.append("import %s failed: %s: %s" % (module, type(e).__name__, first))
    return errors


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = argv or [os.path.join(here, "requirements.txt"),
                     os.path.join(here, "requirements-build.txt")]
    pins, errors = {}, []
    for p in paths:
        these = read_pins(p)
        errors += check_pins(these, os.path.basename(p))
        pins.update(these)
    errors += check_imports(pins)
    for e in errors:
        print("error: %s" % e, file=sys.stderr)
    if errors:
        print("the Python environment %s does not match %s: run scripts/setup.sh"
              % (sys.prefix, ", ".join(paths)), file=sys.stderr)
        return 1
    import torch
    import transformers
    print("environment ok: %d pinned distributions, %d modules import (python %s, torch %s, "
          "transformers %s)" % (len(pins), len(MODULES), sys.version.split()[0], torch.__version__,
                                transformers.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
