#!/usr/bin/env python3
"""Write malformed copies of a (single-file) llama checkpoint, each broken in exactly one way.

    build/venv/bin/python3 python/pimc_testgen/make_bad_inputs.py --from DIR/llama --out DIR/bad

Every variant DIR/bad/<name>/ is a copy of the source's config.json, generation_config.json and
model.safetensors (golden files are not copied) with one defect; EXPECTED below (also written to
DIR/bad/manifest.json) says which. A loader must reject each one with a diagnostic
(never crash or read out of bounds).
"""

import argparse
import json
import os
import shutil
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pimc_testgen import safetensors_io as st      # noqa: E402

ST = "model.safetensors"

EXPECTED = {
    "truncated": "model.safetensors cut in the middle of the data section",
    "offsets_overrun": "model.norm.weight data_offsets point past the end of the file (file length unchanged)",
    "dtype_mismatch": "model.norm.weight declared I16 instead of BF16 (same byte size, wrong kind)",
    "unknown_model_type": "config.json model_type 'llamafoo'",
    "bad_rope_scaling": "config.json longrope rope_scaling whose short_factor is one entry short",
    "missing_tensor": "model.layers.1.mlp.up_proj.weight absent from model.safetensors",
    "wrong_shape": "model.layers.0.self_attn.k_proj.weight shape transposed to [in, out] (same numel)",
    "bad_header_json": "safetensors header is not valid JSON (same length)",
}


def split(data):
    (n,) = struct.unpack("<Q", data[:8])
    return n, json.loads(data[8:8 + n].decode("utf-8")), data[8 + n:]


def rewrite_header(data, edit):
    """Apply edit(header_dict) and re-serialize the header into exactly the original length."""
    n, hdr, buf = split(data)
    edit(hdr)
    raw = json.dumps(hdr, separators=(",", ":")).encode("utf-8")
    return data[:8] + st.pad_header(raw, n) + buf


def copy_variant(src, out, name):
    d = os.path.join(out, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    shutil.copytree(src, d, ignore=shutil.ignore_patterns("golden*"))   # no golden: must not load
    return d


def rd(path):
    with open(path, "rb") as f:
        return f.read()


def wr(path, data):
    with open(path, "wb") as f:
        f.write(data)


def edit_config(d, edit):
    p = os.path.join(d, "config.json")
    with open(p) as f:
        cfg = json.load(f)
    edit(cfg)
    with open(p, "w") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from", dest="src", required=True, help="source checkpoint dir (single model.safetensors)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    src_st = os.path.join(a.src, ST)
    data = rd(src_st)
    st.parse_header(data)                       # the source itself must be valid
    n, hdr, buf = split(data)
    with open(os.path.join(a.src, "config.json")) as f:
        cfg = json.load(f)
    os.makedirs(a.out, exist_ok=True)

    def variant(name, detail):
        print("%-20s %s  [%s]" % (name, EXPECTED[name], detail))

    # truncated: keep header and the first half of the data section
    d = copy_variant(a.src, a.out, "truncated")
    cut = 8 + n + len(buf) // 2
    wr(os.path.join(d, ST), data[:cut])
    variant("truncated", "%d -> %d bytes" % (len(data), cut))

    # offsets_overrun: model.norm.weight moved to [len(buf), len(buf)+nbytes)
    d = copy_variant(a.src, a.out, "offsets_overrun")
    b, e = hdr["model.norm.weight"]["data_offsets"]

    def overrun(h):
        h["model.norm.weight"]["data_offsets"] = [len(buf), len(buf) + (e - b)]
    wr(os.path.join(d, ST), rewrite_header(data, overrun))
    variant("offsets_overrun", "data_offsets [%d,%d) -> [%d,%d), buffer %d bytes"
            % (b, e, len(buf), len(buf) + e - b, len(buf)))

    # dtype_mismatch
    d = copy_variant(a.src, a.out, "dtype_mismatch")
    old_dt = hdr["model.norm.weight"]["dtype"]
    assert old_dt == "BF16"

    def dt(h):
        h["model.norm.weight"]["dtype"] = "I16"
    wr(os.path.join(d, ST), rewrite_header(data, dt))
    variant("dtype_mismatch", "BF16 -> I16")

    # unknown_model_type
    d = copy_variant(a.src, a.out, "unknown_model_type")
    edit_config(d, lambda c: c.__setitem__("model_type", "llamafoo"))
    variant("unknown_model_type", "%s -> llamafoo" % cfg["model_type"])

    # bad_rope_scaling: Phi-3-128k style longrope whose short_factor lacks its last entry
    # (the lists need rotary_dim/2 entries)
    d = copy_variant(a.src, a.out, "bad_rope_scaling")
    hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    half = hd // 2

    def longrope(c):
        c["rope_scaling"] = {"rope_type": "longrope",
                             "short_factor": [1.0 + 0.05 * i for i in range(half - 1)],
                             "long_factor": [1.0 + 2.0 * i for i in range(half)],
                             "original_max_position_embeddings": 4096}
        c["max_position_embeddings"] = 131072
    edit_config(d, longrope)
    variant("bad_rope_scaling", "longrope, %d-entry short_factor (needs %d)" % (half - 1, half))

    # missing_tensor: a valid file without one tensor (offsets of the rest recomputed)
    d = copy_variant(a.src, a.out, "missing_tensor")
    ts, _ = st.load_bytes(data)
    gone = "model.layers.1.mlp.up_proj.weight"
    del ts[gone]
    st.write_file(os.path.join(d, ST), ts)
    variant("missing_tensor", "%d tensors left" % len(ts))

    # wrong_shape: [out, in] -> [in, out]
    d = copy_variant(a.src, a.out, "wrong_shape")
    k = "model.layers.0.self_attn.k_proj.weight"
    shp = hdr[k]["shape"]

    def ws(h):
        h[k]["shape"] = [shp[1], shp[0]]
    wr(os.path.join(d, ST), rewrite_header(data, ws))
    variant("wrong_shape", "%s -> %s" % (shp, [shp[1], shp[0]]))

    # bad_header_json: first ':' (after "__metadata__") replaced by '='
    d = copy_variant(a.src, a.out, "bad_header_json")
    raw = bytearray(data[8:8 + n])
    i = raw.index(b":")
    raw[i:i + 1] = b"="
    wr(os.path.join(d, ST), data[:8] + bytes(raw) + buf)
    variant("bad_header_json", "header byte %d ':' -> '='" % i)

    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        f.write(json.dumps({"source": os.path.basename(os.path.normpath(a.src)), "variants": EXPECTED},
                           indent=2) + "\n")
    print("wrote %d variants + manifest.json to %s" % (len(EXPECTED), a.out))


if __name__ == "__main__":
    main()
