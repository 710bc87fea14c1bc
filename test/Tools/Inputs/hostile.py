"""Writes hostile variants of valid inputs for test/Tools/hostile-inputs.test.

usage: hostile.py <llama checkpoint dir> <compiled program text (.s)> <out dir>

- deep/<kind>: JSON nested 100,000 levels deep (llvm::json would recurse until the stack
  overflows) in a config.json, a safetensors header, a target, an FX graph and a program's
  host-kernel parameters;
- index_dotdot, index_absolute: a checkpoint whose model.safetensors.index.json names the (real,
  readable) shard of the source checkpoint by "../" or by an absolute path;
- fx_parameters_dotdot: an FX graph whose "parameters" file lies outside its directory.
"""
import json
import os
import re
import shutil
import struct
import sys

DEEP = "[" * 100000 + "]" * 100000


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def main(src, program_text, out):
    shutil.rmtree(out, ignore_errors=True)
    # config.json
    d = os.path.join(out, "deep", "config")
    shutil.copytree(src, d, ignore=shutil.ignore_patterns("golden*"))
    write(os.path.join(d, "config.json"), '{"model_type": "llama", "x": %s}' % DEEP)
    # safetensors header (a valid length prefix, then the nested header)
    d = os.path.join(out, "deep", "header")
    os.makedirs(d)
    shutil.copy(os.path.join(src, "config.json"), d)
    header = ('{"__metadata__": {"x": %s}}' % DEEP).encode()
    write(os.path.join(d, "model.safetensors"), struct.pack("<Q", len(header)) + header)
    # target
    write(os.path.join(out, "deep", "target.json"), '{"name": "x", "organisation": %s}' % DEEP)
    # FX graph
    write(os.path.join(out, "deep", "graph.json"),
          '{"format": "pimc-fx-graph", "version": 1, "nodes": %s}' % DEEP)
    # host ops: the first op's input buffer starts at INT64_MAX (its end overflows)
    with open(program_text) as f:
        text = f.read()
    text, n = re.subn(r'(\n  [a-z_]+ in=[a-z0-9]+\[[0-9]+\]@)[0-9]+',
                      lambda m: m.group(1) + "9223372036854775807", text, count=1)
    if n != 1:
        raise SystemExit("hostile.py: no host op with an input buffer in %s" % program_text)
    write(os.path.join(out, "huge", "program-op.s"), text)
    # weight layout: the first gemv_rows binding's output rows start at INT64_MAX (the
    # placement's row arithmetic would overflow)
    with open(program_text) as f:
        text = f.read()
    text, n = re.subn(r'(\.weight "[^"]*" .*? layout=gemv_rows n0=)0 ',
                      lambda m: m.group(1) + "9223372036854775807 ", text, count=1)
    if n != 1:
        raise SystemExit("hostile.py: no gemv_rows weight binding in %s" % program_text)
    write(os.path.join(out, "huge", "program-weight.s"), text)

    # A sharded checkpoint whose index points outside its directory.
    shard = os.path.join(os.path.abspath(src), "model.safetensors")
    with open(shard, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        names = [k for k in json.loads(f.read(n)) if k != "__metadata__"]
    for name, where in (("index_dotdot", os.path.join("..", os.path.basename(src) + "-shard",
                                                      "model.safetensors")),
                        ("index_absolute", shard)):
        d = os.path.join(out, name)
        os.makedirs(d)
        shutil.copy(os.path.join(src, "config.json"), d)
        write(os.path.join(d, "model.safetensors.index.json"),
              json.dumps({"metadata": {}, "weight_map": {k: where for k in names}}))
    d = os.path.join(out, os.path.basename(src) + "-shard")
    os.makedirs(d)
    shutil.copy(shard, d)

    # An FX graph naming a parameters file one directory up (which exists).
    d = os.path.join(out, "fx", "graph")
    write(os.path.join(out, "fx", "params.safetensors"),
          struct.pack("<Q", 8) + b"{}      ")
    write(os.path.join(d, "graph.json"), json.dumps({
        "format": "pimc-fx-graph", "version": 1, "parameters": "../params.safetensors",
        "nodes": [{"name": "x", "op": "placeholder", "kind": "input",
                   "meta": {"dtype": "float32", "shape": [2]}},
                  {"name": "output", "op": "output", "args": [[{"node": "x"}]]}]}))


if __name__ == "__main__":
    main(*sys.argv[1:])
