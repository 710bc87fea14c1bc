#!/usr/bin/env python3
"""Write a small safetensors file for the FX importer's lit tests (no torch needed).

    make_weights.py OUT.safetensors NAME:DTYPE:SHAPE [...]

DTYPE is a safetensors name (F32, F16, BF16, I64, BOOL); SHAPE is 4x8 (or "scalar").
Values are deterministic: element i is ((i * 7) % 13 - 6) / 8 (exact in every float format).
"""
import json
import struct
import sys

FORMATS = {"F32": "f", "F16": "e", "I64": "q", "I32": "i", "BOOL": "?"}


def encode(dtype, values):
    if dtype == "BF16":
        return b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:]
                        for v in values)
    if dtype in ("I64", "I32"):
        values = [int(v * 8) for v in values]
    elif dtype == "BOOL":
        values = [v > 0 for v in values]
    return struct.pack("<%d%s" % (len(values), FORMATS[dtype]), *values)


def main(argv):
    out, specs = argv[0], argv[1:]
    header, blobs, offset = {}, [], 0
    for spec in specs:
        name, dtype, shape = spec.split(":")
        dims = [] if shape == "scalar" else [int(d) for d in shape.split("x")]
        n = 1
        for d in dims:
            n *= d
        data = encode(dtype, [((i * 7) % 13 - 6) / 8 for i in range(n)])
        header[name] = {"dtype": dtype, "shape": dims, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


if __name__ == "__main__":
    main(sys.argv[1:])
