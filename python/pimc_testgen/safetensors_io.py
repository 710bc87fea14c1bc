"""Minimal, dependency-free safetensors writer and strict reader (torch + numpy only).

Format (spec llm-architectures.md 6.2): u64 LE header length N, N bytes of UTF-8 JSON
{name: {"dtype", "shape", "data_offsets": [begin, end)}, "__metadata__": {str: str}},
then the byte buffer. Offsets are relative to the start of the buffer.

The writer mimics the reference (Rust) writer: "__metadata__" first, tensors ordered by
dtype (widest first, in the Rust Dtype enum order) then by name, compact JSON, header
padded with spaces so the data section starts 8-byte aligned.
"""

import json
import struct

import numpy as np
import torch

# dtype name -> (numpy little-endian dtype or None, torch dtype, itemsize)
DTYPES = {
    "BOOL": ("|b1", torch.bool, 1),
    "U8": ("|u1", torch.uint8, 1),
    "I8": ("|i1", torch.int8, 1),
    "I16": ("<i2", torch.int16, 2),
    "U16": ("<u2", None, 2),
    "F16": ("<f2", torch.float16, 2),
    "BF16": ("<i2", torch.bfloat16, 2),   # raw bits read as int16, then .view(bfloat16)
    "I32": ("<i4", torch.int32, 4),
    "U32": ("<u4", None, 4),
    "F32": ("<f4", torch.float32, 4),
    "F64": ("<f8", torch.float64, 8),
    "I64": ("<i8", torch.int64, 8),
    "U64": ("<u8", None, 8),
}

# Order of the Rust `Dtype` enum (safetensors/src/tensor.rs); the writer sorts descending.
_RUST_ORDER = ["BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "I64", "U64"]

_TORCH_TO_NAME = {
    torch.bool: "BOOL", torch.uint8: "U8", torch.int8: "I8", torch.int16: "I16",
    torch.float16: "F16", torch.bfloat16: "BF16", torch.int32: "I32", torch.float32: "F32",
    torch.float64: "F64", torch.int64: "I64",
}

MAX_HEADER = 100 * 1000 * 1000


class SafetensorsError(ValueError):
    pass


def tensor_bytes(t):
    """Raw little-endian bytes of a CPU tensor (C order)."""
    t = t.detach().contiguous().cpu()
    name = _TORCH_TO_NAME[t.dtype]
    if t.dtype == torch.bfloat16:
        arr = t.view(torch.int16).numpy()
    else:
        arr = t.numpy()
    return np.ascontiguousarray(arr).astype(DTYPES[name][0], copy=False).tobytes()


def dtype_name(t):
    return _TORCH_TO_NAME[t.dtype]


def build_header_json(entries, metadata):
    """entries: list of (name, dtype, shape, (begin, end)) in data order."""
    hdr = {}
    if metadata is not None:
        hdr["__metadata__"] = dict(metadata)
    for name, dt, shape, (b, e) in entries:
        hdr[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [b, e]}
    return json.dumps(hdr, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def pad_header(raw, length=None):
    """Pad JSON bytes with spaces: to a multiple of 8, or to exactly `length`."""
    if length is None:
        length = (len(raw) + 7) // 8 * 8
    if len(raw) > length:
        raise SafetensorsError("header of %d bytes does not fit in %d" % (len(raw), length))
    return raw + b" " * (length - len(raw))


def serialize(tensors, metadata=None):
    """tensors: dict name -> torch tensor (already in storage dtype). Returns bytes."""
    if metadata is None:
        metadata = {"format": "pt"}
    items = sorted(tensors.items(),
                   key=lambda kv: (-_RUST_ORDER.index(dtype_name(kv[1])), kv[0]))
    entries, blobs, off = [], [], 0
    for name, t in items:
        b = tensor_bytes(t)
        entries.append((name, dtype_name(t), tuple(t.shape), (off, off + len(b))))
        blobs.append(b)
        off += len(b)
    hdr = pad_header(build_header_json(entries, metadata))
    return struct.pack("<Q", len(hdr)) + hdr + b"".join(blobs)


def write_file(path, tensors, metadata=None):
    data = serialize(tensors, metadata)
    with open(path, "wb") as f:
        f.write(data)
    return len(data)


def parse_header(data):
    """Strictly parse and validate a safetensors blob. Returns (header_len, header_dict_in_order, metadata)."""
    if len(data) < 8:
        raise SafetensorsError("file shorter than 8 bytes")
    (n,) = struct.unpack("<Q", data[:8])
    if n > MAX_HEADER:
        raise SafetensorsError("header length %d too large" % n)
    if 8 + n > len(data):
        raise SafetensorsError("header length %d exceeds file size %d" % (n, len(data)))
    try:
        hdr = json.loads(data[8:8 + n].decode("utf-8"),
                         object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsError("invalid header JSON: %s" % e)
    if not isinstance(hdr, dict):
        raise SafetensorsError("header is not a JSON object")
    meta = hdr.pop("__metadata__", None)
    if meta is not None and not (isinstance(meta, dict)
                                 and all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items())):
        raise SafetensorsError("__metadata__ must map str to str")
    buf_len = len(data) - 8 - n
    spans = []
    for name, info in hdr.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise SafetensorsError("%s: bad tensor entry %r" % (name, info))
        dt = info["dtype"]
        if dt not in DTYPES:
            raise SafetensorsError("%s: unknown dtype %r" % (name, dt))
        shape = info["shape"]
        if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)):
            raise SafetensorsError("%s: bad shape %r" % (name, shape))
        b, e = info["data_offsets"]
        numel = 1
        for d in shape:
            numel *= d
        if e < b:
            raise SafetensorsError("%s: data_offsets end < begin" % name)
        if e - b != numel * DTYPES[dt][2]:
            raise SafetensorsError("%s: %d bytes for shape %r dtype %s" % (name, e - b, shape, dt))
        if e > buf_len:
            raise SafetensorsError("%s: data_offsets [%d,%d) past end of buffer (%d bytes)"
                                   % (name, b, e, buf_len))
        spans.append((b, e, name))
    spans.sort()
    pos = 0
    for b, e, name in spans:
        if b != pos:
            raise SafetensorsError("%s: data_offsets start %d, expected %d (hole or overlap)" % (name, b, pos))
        pos = e
    if pos != buf_len:
        raise SafetensorsError("tensors cover %d bytes of a %d-byte buffer" % (pos, buf_len))
    return n, hdr, meta


def _no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise SafetensorsError("duplicate key %r" % k)
        d[k] = v
    return d


def load_bytes(data):
    """Parse + decode all tensors. Returns (dict name -> torch tensor in stored dtype, metadata)."""
    n, hdr, meta = parse_header(data)
    base = 8 + n
    out = {}
    for name, info in hdr.items():
        np_dt, t_dt, _ = DTYPES[info["dtype"]]
        b, e = info["data_offsets"]
        arr = np.frombuffer(data, dtype=np_dt, count=(e - b) // np.dtype(np_dt).itemsize,
                            offset=base + b).reshape(info["shape"])
        t = torch.from_numpy(arr.astype(arr.dtype.newbyteorder("="), copy=True))
        if info["dtype"] == "BF16":
            t = t.view(torch.bfloat16)
        elif t_dt is None:
            raise SafetensorsError("%s: dtype %s not representable in torch" % (name, info["dtype"]))
        out[name] = t
    return out, meta


def load_file(path):
    with open(path, "rb") as f:
        return load_bytes(f.read())


def read_header_file(path):
    with open(path, "rb") as f:
        return parse_header(f.read())
