"""Plain-PyTorch reference for Llama-architecture HF checkpoints (llama, mistral, qwen2, qwen3, GPTQ;
RoPE default / linear / dynamic / yarn / llama3) and InternLM2 (remote code, spec 2.23: the same
block under its own tensor names, q/k/v from the grouped fused wqkv, `bias` on wqkv and wo). For
InternLM2, which transformers does not implement, this reference is the golden.

Written from the architecture spec llm-architectures.md ((1.1, 1.3, 2.3-2.7, 3.1-3.6, 5.2), not from
transformers. The goldens come from transformers (make_checkpoints.py); this is an independent
cross-check of them (verify.py), and its GPTQ dequantization feeds the GPTQ goldens. It reads a
checkpoint *from disk* (config.json in the released or the transformers-5 form + safetensors, sharded
or not) with the strict reader in safetensors_io, upcasts every stored value to the compute dtype
(float32 by default) and runs the whole sequence at every step (no KV cache). For `dynamic` RoPE,
whose frequencies depend on the forward call, each position gets the table of the KV-cached call
that first processed it (see forward(), README "Dynamic NTK").

Numerics: weights are the stored values (bf16/f16 -> f32 is exact); GPTQ weights are dequantized in
f32 as W[n,k] = f32(scales[g_idx[k], n]) * (q[k,n] - (qzeros[g_idx[k], n] + 1)). RoPE inv_freq,
angles and cos/sin are computed in f32 exactly as HF does. RMSNorm, softmax and all matmuls in f32.
"""

import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

from pimc_testgen import safetensors_io as st

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "internlm2")
PROJS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
         "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")


# --------------------------------------------------------------------------------------------
# checkpoint reading

def read_tensors(ckpt_dir):
    """All tensors of a checkpoint (single file or sharded with an index)."""
    idx_path = os.path.join(ckpt_dir, "model.safetensors.index.json")
    if os.path.exists(idx_path):
        with open(idx_path) as f:
            index = json.load(f)
        wmap = index["weight_map"]
        out, total = {}, 0
        for fname in sorted(set(wmap.values())):
            ts, _ = st.load_file(os.path.join(ckpt_dir, fname))
            expect = sorted(k for k, v in wmap.items() if v == fname)
            if sorted(ts) != expect:
                raise ValueError("%s: tensors do not match weight_map" % fname)
            for k, v in ts.items():
                total += v.numel() * v.element_size()
            out.update(ts)
        if index.get("metadata", {}).get("total_size") != total:
            raise ValueError("index total_size %r != %d" % (index.get("metadata"), total))
        return out
    ts, _ = st.load_file(os.path.join(ckpt_dir, "model.safetensors"))
    return ts


# --------------------------------------------------------------------------------------------
# RoPE (spec 3.1, 3.6; HF _compute_default_rope_parameters / _compute_llama3_parameters)

def default_inv_freq(base, dim):
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))


def llama3_bands(inv_freq, rs):
    """Boolean masks (high=unchanged, medium=smoothed, low=divided) of the llama3 rule."""
    L0 = rs["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv_freq
    low_wl = L0 / rs["low_freq_factor"]
    high_wl = L0 / rs["high_freq_factor"]
    high = wavelen < high_wl
    low = wavelen > low_wl
    return high, ~high & ~low, low


def llama3_inv_freq(inv_freq, rs):
    factor = rs["factor"]
    lff, hff = rs["low_freq_factor"], rs["high_freq_factor"]
    L0 = rs["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv_freq
    _, medium, low = llama3_bands(inv_freq, rs)
    out = torch.where(low, inv_freq / factor, inv_freq)
    if bool(medium.any()):  # never evaluate alpha outside the medium band (lff == hff case)
        alpha = (L0 / wavelen - lff) / (hff - lff)
        smoothed = (1 - alpha) * out / factor + alpha * out
        out = torch.where(medium, smoothed, out)
    return out


def rope_type(cfg):
    rs = cfg.get("rope_scaling")
    if rs is None:
        return "default"
    return rs.get("rope_type", rs.get("type"))


def yarn_correction_range(cfg, dim):
    """(lo, hi) of the YaRN ramp (spec 3.5; HF find_correction_range, plain Python float math)."""
    rs = cfg["rope_scaling"]
    base = cfg.get("rope_theta", 10000.0)
    L0 = rs.get("original_max_position_embeddings") or cfg["max_position_embeddings"]
    beta_fast = rs.get("beta_fast") or 32
    beta_slow = rs.get("beta_slow") or 1

    def corr(rot):
        return (dim * math.log(L0 / (rot * 2 * math.pi))) / (2 * math.log(base))

    lo, hi = corr(beta_fast), corr(beta_slow)
    if rs.get("truncate", True):
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, dim - 1)
    if lo == hi:
        hi += 0.001  # HF linear_ramp_factor: prevent singularity
    return lo, hi


def yarn_inv_freq(cfg, dim):
    """HF _compute_yarn_parameters (newer revision: `factor` from rope_scaling, `truncate`).

    Returns (inv_freq f32 [dim/2], attention_factor Python float). Older revisions replace factor by
    max_position_embeddings / original_max_position_embeddings; the generator only writes configs
    where the two agree.
    """
    rs = cfg["rope_scaling"]
    base = cfg.get("rope_theta", 10000.0)
    factor = rs["factor"]
    af = rs.get("attention_factor")
    mscale, mscale_all_dim = rs.get("mscale"), rs.get("mscale_all_dim")

    def get_mscale(scale, m=1):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    if af is None:
        if mscale and mscale_all_dim:
            af = float(get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim))
        else:
            af = get_mscale(factor)
    lo, hi = yarn_correction_range(cfg, dim)
    pos_freqs = base ** (torch.arange(0, dim, 2).float() / dim)
    inv_extrapolation = 1.0 / pos_freqs
    inv_interpolation = 1.0 / (factor * pos_freqs)
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - lo) / (hi - lo), 0, 1)
    extrapolation_factor = 1 - ramp
    inv = inv_interpolation * (1 - extrapolation_factor) + inv_extrapolation * extrapolation_factor
    return inv, af


def dynamic_inv_freq(cfg, dim, seq_len):
    """HF _compute_dynamic_ntk_parameters for a forward call whose positions end at seq_len - 1.

    seq_len <= max_position_embeddings gives the table built at init (base * 1.0 == base, i.e. the
    default table). Otherwise seq_len is the 0-d int64 tensor HF's dynamic_rope_update passes
    (max(position_ids) + 1), so the new base is an f32 0-d tensor.
    """
    base = cfg.get("rope_theta", 10000.0)
    max_pos = cfg["max_position_embeddings"]
    factor = cfg["rope_scaling"]["factor"]
    if seq_len <= max_pos:
        return default_inv_freq(base, dim)
    sl = torch.tensor(seq_len, dtype=torch.int64)
    new_base = base * ((factor * sl / max_pos) - (factor - 1)) ** (dim / (dim - 2))
    return 1.0 / (new_base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))


def rope_inv_freq(cfg, head_dim):
    """f32 inverse frequencies and attention_factor for a config (HF semantics).

    For `dynamic` this is the table of a call that stays within max_position_embeddings; forward()
    builds the per-call tables (dynamic_inv_freq).
    """
    dim = int(head_dim * cfg.get("partial_rotary_factor", 1.0))
    inv = default_inv_freq(cfg.get("rope_theta", 10000.0), dim)
    rs = cfg.get("rope_scaling")
    if rs is None:
        return inv, 1.0
    rt = rope_type(cfg)
    if rt == "default":
        return inv, 1.0
    if rt == "linear":
        return inv / rs["factor"], 1.0
    if rt == "llama3":
        return llama3_inv_freq(inv, rs), 1.0
    if rt == "dynamic":
        return dynamic_inv_freq(cfg, dim, cfg["max_position_embeddings"]), 1.0
    if rt == "yarn":
        return yarn_inv_freq(cfg, dim)
    if rt == "longrope":
        return longrope_inv_freq(cfg, dim, None)
    raise NotImplementedError("rope_type %r" % rt)


def longrope_original(cfg):
    """Longrope's pretraining length L0: Phi-3's top-level original_max_position_embeddings wins
    over the dict's (transformers' standardize_rope_params), else max_position_embeddings."""
    rs = cfg["rope_scaling"]
    return cfg.get("original_max_position_embeddings",
                   rs.get("original_max_position_embeddings", cfg["max_position_embeddings"]))


def longrope_inv_freq(cfg, dim, seq_len):
    """HF _compute_longrope_parameters for a forward call ending at seq_len - 1 (None: the load-time
    table): 1 / (ext * base^(2i/d)) with ext the long factors once seq_len > L0, else the short
    ones; attention factor sqrt(1 + ln(factor) / ln(L0)) with factor max_pos / L0 by default."""
    rs = cfg["rope_scaling"]
    base = cfg.get("rope_theta", 10000.0)
    l0 = longrope_original(cfg)
    factor = rs.get("factor") or cfg["max_position_embeddings"] / l0
    af = rs.get("attention_factor")
    if af is None:
        af = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(l0))
    ext = rs["long_factor"] if seq_len and seq_len > l0 else rs["short_factor"]
    ext = torch.tensor(ext, dtype=torch.float32)
    shape = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
    return 1.0 / (ext * base ** shape), af


# --------------------------------------------------------------------------------------------
# GPTQ (spec 5.2)

def unpack_along_dim0(words, bits):
    """int32 [R, C] packed along dim 0 (LSB first) -> int64 [R*32/bits, C]."""
    w = words.numpy().view(np.uint32).astype(np.uint64)
    pf = 32 // bits
    shifts = (bits * np.arange(pf, dtype=np.uint64))[None, :, None]
    vals = (w[:, None, :] >> shifts) & np.uint64((1 << bits) - 1)
    return torch.from_numpy(vals.reshape(w.shape[0] * pf, w.shape[1]).astype(np.int64))


def unpack_along_dim1(words, bits):
    """int32 [R, C] packed along dim 1 (LSB first) -> int64 [R, C*32/bits]."""
    w = words.numpy().view(np.uint32).astype(np.uint64)
    pf = 32 // bits
    shifts = (bits * np.arange(pf, dtype=np.uint64))[None, None, :]
    vals = (w[:, :, None] >> shifts) & np.uint64((1 << bits) - 1)
    return torch.from_numpy(vals.reshape(w.shape[0], w.shape[1] * pf).astype(np.int64))


def gptq_dequantize(qweight, qzeros, scales, g_idx, bits, checkpoint_format="gptq"):
    """Returns f32 W [N, K]."""
    q = unpack_along_dim0(qweight, bits)                  # [K, N]
    z = unpack_along_dim1(qzeros, bits)                   # [ngroups, N]
    if checkpoint_format == "gptq":
        z = z + 1                                         # v1 stores z - 1
    g = g_idx.long()
    s = scales.float()                                    # [ngroups, N]
    W = s[g, :] * (q - z[g, :]).float()                   # [K, N], one f32 rounding per element
    return W.t().contiguous()


# --------------------------------------------------------------------------------------------
# model

class RefModel:
    pass


def legacy_config(cfg):
    """A transformers-5 config.json (rope_theta / partial_rotary_factor folded into
    `rope_parameters`, rope_type "default" when unscaled) in the released-checkpoint form the
    functions above read: top-level rope_theta, `rope_scaling` null or the scaling dict."""
    rp = cfg.get("rope_parameters")
    if rp is None:
        return cfg
    if cfg.get("rope_scaling") is not None:
        raise ValueError("both rope_scaling and rope_parameters are given")
    cfg = {k: v for k, v in cfg.items() if k != "rope_parameters"}
    rp = dict(rp)
    for key in ("rope_theta", "partial_rotary_factor"):
        if key in rp:
            v = rp.pop(key)
            if key in cfg and cfg[key] != v:
                raise ValueError("rope_parameters.%s disagrees with top-level %s" % (key, key))
            cfg[key] = v
    cfg["rope_scaling"] = None if rp.get("rope_type", rp.get("type")) == "default" else rp
    return cfg


def load_model(ckpt_dir, dtype=torch.float32, cfg_override=None):
    with open(os.path.join(ckpt_dir, "config.json")) as f:
        cfg = legacy_config(json.load(f))
    if cfg_override:
        cfg = cfg_override(cfg)
    mt = cfg.get("model_type")
    if mt not in SUPPORTED_MODEL_TYPES:
        raise NotImplementedError("model_type %r" % mt)
    T = read_tensors(ckpt_dir)
    m = RefModel()
    m.cfg, m.dtype = cfg, dtype
    m.H = cfg["hidden_size"]
    m.L = cfg["num_hidden_layers"]
    m.nh = cfg["num_attention_heads"]
    m.nkv = cfg.get("num_key_value_heads") or m.nh
    m.hd = cfg.get("head_dim") or m.H // m.nh
    m.V = cfg["vocab_size"]
    m.eps = cfg["rms_norm_eps"]
    assert cfg.get("hidden_act", "silu") == "silu"
    m.inv_freq, m.attention_factor = rope_inv_freq(cfg, m.hd)
    m.rotary_dim = 2 * m.inv_freq.numel()
    m.rope_type = rope_type(cfg)
    m.dynamic_tables = {}          # seq_len -> inv_freq of the forward call ending at seq_len - 1
    m.qk_norm = mt == "qwen3"
    # sliding window per layer (spec 2.4, 2.6)
    m.windows = []
    for l in range(m.L):
        w = None
        if mt == "mistral":
            w = cfg.get("sliding_window")
        elif mt in ("qwen2", "qwen3") and cfg.get("use_sliding_window", False):
            if l >= cfg.get("max_window_layers", m.L):
                w = cfg.get("sliding_window")
        m.windows.append(w)
    qc = cfg.get("quantization_config")
    if qc is not None:
        assert qc["quant_method"] == "gptq", qc   # g_idx is honoured, so desc_act needs no special case

    used = set()
    FLOATS = (torch.float32, torch.float16, torch.bfloat16)

    def raw(name, shape, dtypes):
        if name not in T:
            raise KeyError("missing tensor %s" % name)
        t = T[name]
        if tuple(t.shape) != tuple(shape):
            raise ValueError("%s: shape %s, expected %s" % (name, list(t.shape), list(shape)))
        if t.dtype not in dtypes:
            raise ValueError("%s: dtype %s not allowed" % (name, t.dtype))
        used.add(name)
        return t

    def get(name, shape):
        return raw(name, shape, FLOATS).to(dtype)

    def weight(prefix, N, K):
        if prefix + ".qweight" in T:
            bits, G = qc["bits"], qc["group_size"]
            ng = 1 if G == -1 else K // G
            pf = 32 // bits
            I32 = (torch.int32,)
            W = gptq_dequantize(raw(prefix + ".qweight", (K // pf, N), I32),
                                raw(prefix + ".qzeros", (ng, N // pf), I32),
                                raw(prefix + ".scales", (ng, N), (torch.float16,)),
                                raw(prefix + ".g_idx", (K,), I32),
                                bits, qc.get("checkpoint_format", "gptq"))
            return W.to(dtype)
        return get(prefix + ".weight", (N, K))

    def bias(prefix, N):
        return get(prefix + ".bias", (N,)) if prefix + ".bias" in T else None

    I = cfg["intermediate_size"]
    qd, kvd = m.nh * m.hd, m.nkv * m.hd
    if mt == "internlm2":
        return load_internlm2(m, cfg, get, used, T, I)
    proj_shapes = {"q_proj": (qd, m.H), "k_proj": (kvd, m.H), "v_proj": (kvd, m.H), "o_proj": (m.H, qd),
                   "gate_proj": (I, m.H), "up_proj": (I, m.H), "down_proj": (m.H, I)}
    m.embed = get("model.embed_tokens.weight", (m.V, m.H))
    m.layers = []
    for l in range(m.L):
        p = "model.layers.%d." % l
        d = {"in_norm": get(p + "input_layernorm.weight", (m.H,)),
             "post_norm": get(p + "post_attention_layernorm.weight", (m.H,))}
        for proj in PROJS:
            key = proj.split(".")[1]
            N, K = proj_shapes[key]
            d[key] = weight(p + proj, N, K)
            d[key + "_b"] = bias(p + proj, N)
        if m.qk_norm:
            d["q_norm"] = get(p + "self_attn.q_norm.weight", (m.hd,))
            d["k_norm"] = get(p + "self_attn.k_norm.weight", (m.hd,))
        # bias presence must agree with the family's semantics
        want_qkv_bias = mt == "qwen2" or (mt in ("llama", "mistral", "qwen3") and cfg.get("attention_bias", False))
        for key in ("q_proj", "k_proj", "v_proj"):
            assert (d[key + "_b"] is not None) == want_qkv_bias, (p, key)
        m.layers.append(d)
    m.norm = get("model.norm.weight", (m.H,))
    if cfg.get("tie_word_embeddings", False):
        assert "lm_head.weight" not in T
        m.lm_head = m.embed
    else:
        m.lm_head = get("lm_head.weight", (m.V, m.H))
    extra = set(T) - used
    if extra:
        raise ValueError("unused tensors: %s" % sorted(extra))
    return m


def split_grouped_qkv(w, nh, nkv, hd):
    """InternLM2's wqkv rows (or bias) [(nh + 2 nkv) hd, ...] are nkv groups of
    [q_{g r}, ..., q_{g r + r - 1}, k_g, v_g], r = nh / nkv (spec 2.23): q, k, v in head order."""
    r = nh // nkv
    g = w.reshape(nkv, r + 2, hd, *w.shape[1:])
    q = g[:, :r].reshape(nh * hd, *w.shape[1:])
    k = g[:, r].reshape(nkv * hd, *w.shape[1:])
    v = g[:, r + 1].reshape(nkv * hd, *w.shape[1:])
    return q, k, v


def load_internlm2(m, cfg, get, used, T, I):
    bias = cfg.get("bias", True)
    m.embed = get("model.tok_embeddings.weight", (m.V, m.H))
    m.layers = []
    for l in range(m.L):
        p = "model.layers.%d." % l
        d = {"in_norm": get(p + "attention_norm.weight", (m.H,)),
             "post_norm": get(p + "ffn_norm.weight", (m.H,))}
        rows = (m.nh + 2 * m.nkv) * m.hd
        qkv = split_grouped_qkv(get(p + "attention.wqkv.weight", (rows, m.H)), m.nh, m.nkv, m.hd)
        qkv_b = (split_grouped_qkv(get(p + "attention.wqkv.bias", (rows,)), m.nh, m.nkv, m.hd)
                 if bias else (None, None, None))
        for key, w, b in zip(("q_proj", "k_proj", "v_proj"), qkv, qkv_b):
            d[key], d[key + "_b"] = w, b
        d["o_proj"] = get(p + "attention.wo.weight", (m.H, m.nh * m.hd))
        d["o_proj_b"] = get(p + "attention.wo.bias", (m.H,)) if bias else None
        for key, name, shape in (("gate_proj", "w1", (I, m.H)), ("up_proj", "w3", (I, m.H)),
                                 ("down_proj", "w2", (m.H, I))):
            d[key] = get(p + "feed_forward.%s.weight" % name, shape)
            d[key + "_b"] = None
        m.layers.append(d)
    m.norm = get("model.norm.weight", (m.H,))
    m.lm_head = get("output.weight", (m.V, m.H))
    extra = set(T) - used
    if extra:
        raise ValueError("unused tensors: %s" % sorted(extra))
    return m


def rmsnorm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def call_seq_len(p, prefill_len):
    """seq_len of the KV-cached forward call that first processes position p: the prefill call
    (positions 0 .. prefill_len-1) has seq_len = prefill_len, the decode call adding p has p + 1."""
    return max(prefill_len, p + 1)


def dynamic_table(m, seq_len):
    if seq_len not in m.dynamic_tables:
        m.dynamic_tables[seq_len] = dynamic_inv_freq(m.cfg, m.rotary_dim, seq_len)
    return m.dynamic_tables[seq_len]


def forward(m, ids, ablate=(), prefill_len=None):
    """Logits [T, V] for token ids (list of int). `ablate` switches features off (for sensitivity checks).

    prefill_len: the sequence is what a KV-cached run produces after a prefill of the first
    prefill_len ids followed by one decode call per further id (default: one call over all ids).
    It only matters for `dynamic` RoPE, whose frequencies depend on the call: q and k at position p
    are rotated with the table of the call that first processed p, seq_len = max(prefill_len, p + 1),
    and cached keys are never re-rotated (HF generate semantics).
    """
    dt = m.dtype
    T = len(ids)
    x = m.embed[torch.tensor(ids, dtype=torch.long)]
    # RoPE tables: angles in f32 (HF disables autocast), cos/sin in f32, then to compute dtype
    inv = m.inv_freq
    if "rope_scaling" in ablate:
        inv = default_inv_freq(m.cfg.get("rope_theta", 10000.0), m.rotary_dim)
    pos = torch.arange(T, dtype=torch.int64).float()
    if m.rope_type == "dynamic" and "rope_scaling" not in ablate:
        P = T if prefill_len is None else prefill_len
        lag = 1 if "dynamic_seq_len_minus_1" in ablate else 0
        inv = torch.stack([dynamic_table(m, call_seq_len(p, P) - lag) for p in range(T)])   # [T, d/2]
        freqs = pos[:, None] * inv
    else:
        freqs = pos[:, None] * inv[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    af = 1.0 if ("rope_scaling" in ablate or "attention_factor" in ablate) else m.attention_factor
    cos = (emb.cos() * af).to(dt)
    sin = (emb.sin() * af).to(dt)
    rd = m.rotary_dim
    n_rep = m.nh // m.nkv
    kv_map = torch.arange(m.nh) // n_rep
    t_idx = torch.arange(T)[:, None]
    s_idx = torch.arange(T)[None, :]
    scale = m.hd ** -0.5

    def rope(v):  # v [T, heads, hd]
        r, p = v[..., :rd], v[..., rd:]
        r = r * cos[:, None, :] + rotate_half(r) * sin[:, None, :]
        return torch.cat((r, p), dim=-1)

    for l, d in enumerate(m.layers):
        h = rmsnorm(x, d["in_norm"], m.eps)
        q = F.linear(h, d["q_proj"], None if "bias" in ablate else d["q_proj_b"]).view(T, m.nh, m.hd)
        k = F.linear(h, d["k_proj"], None if "bias" in ablate else d["k_proj_b"]).view(T, m.nkv, m.hd)
        v = F.linear(h, d["v_proj"], None if "bias" in ablate else d["v_proj_b"]).view(T, m.nkv, m.hd)
        if m.qk_norm and "qk_norm" not in ablate:
            q = rmsnorm(q, d["q_norm"], m.eps)
            k = rmsnorm(k, d["k_norm"], m.eps)
        if "rope" not in ablate:
            q, k = rope(q), rope(k)
        qh = q.permute(1, 0, 2)                       # [nh, T, hd]
        kh = k.permute(1, 0, 2)[kv_map]               # [nh, T, hd]  (GQA: kv head = h // n_rep)
        vh = v.permute(1, 0, 2)[kv_map]
        S = torch.matmul(qh, kh.transpose(1, 2)) * scale
        allowed = s_idx <= t_idx
        W = m.windows[l]
        if W is not None and "window" not in ablate:
            allowed = allowed & (s_idx > t_idx - W)
        S = S.masked_fill(~allowed[None], float("-inf"))
        P = torch.softmax(S, dim=-1)
        o = torch.matmul(P, vh).permute(1, 0, 2).reshape(T, m.nh * m.hd)
        x = x + F.linear(o, d["o_proj"], d["o_proj_b"])
        h = rmsnorm(x, d["post_norm"], m.eps)
        x = x + F.linear(F.silu(F.linear(h, d["gate_proj"], d["gate_proj_b"]))
                         * F.linear(h, d["up_proj"], d["up_proj_b"]), d["down_proj"], d["down_proj_b"])
    x = rmsnorm(x, m.norm, m.eps)
    return F.linear(x, m.lm_head)


def greedy(m, prompt_ids, max_new_tokens, ablate=()):
    """Greedy decoding, full recompute each step, with the per-position RoPE tables of a KV-cached
    run (prefill of the prompt, then one token per call). Returns (tokens, logits [n, V])."""
    ids = list(prompt_ids)
    toks, rows = [], []
    for _ in range(max_new_tokens):
        logits = forward(m, ids, ablate, prefill_len=len(prompt_ids))[-1]
        nxt = int(torch.argmax(logits))
        rows.append(logits)
        toks.append(nxt)
        ids.append(nxt)
    return toks, torch.stack(rows)


def top2_margins(logits):
    top = torch.topk(logits.double(), 2, dim=-1).values
    return (top[:, 0] - top[:, 1])
