#!/usr/bin/env python3
"""Cross-check of the generated test data (optional; not run by the test suite).

    build/venv/bin/python3 python/pimc_testgen/verify.py DIR [--bad DIR/bad]

The goldens come from transformers (make_checkpoints.py). For every DIR/<family>/golden.json:
  * strict re-parse of every safetensors file (header length % 8, contiguous non-overlapping offsets
    covering the buffer, dtype sizes, tensor offsets aligned to their element size), index total_size;
  * re-run the float32 plain-PyTorch reference (reference.py, written from the spec, no transformers)
    from the files: the same tokens as transformers and logits within 1e-4 of golden_logits.bin;
  * float64 run of the same stored weights: max |logit| difference = pure summation/rounding noise
    of the fp32 reference (what an fp32 C++ interpreter can also legitimately differ by);
  * KV-cached greedy run (prefill, then one token per call; RoPE of each call applied to the new
    tokens only, cached keys never re-rotated): same tokens, logits within 1e-4 of the reference. This
    checks the per-position RoPE tables the full-recompute reference uses for `dynamic`;
  * sensitivity: teacher-forced logits with one family feature switched off (sliding window,
    rope_scaling, YaRN attention_factor, qkv bias, q/k norm, RoPE) or one plausible loader mistake
    (GPTQ v2 zeros, honouring qwen2's inactive window, re-rotating cached keys or an off-by-one
    seq_len for dynamic RoPE, the wrong YaRN `truncate` / attention_factor) must move by far more
    than that noise.
For --bad: each variant must be rejected by the strict reader / config check.
"""

import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pimc_testgen import reference as ref          # noqa: E402
from pimc_testgen import safetensors_io as st      # noqa: E402


def check_files(d):
    for fn in sorted(os.listdir(d)):
        if not fn.endswith(".safetensors"):
            continue
        n, hdr, meta = st.read_header_file(os.path.join(d, fn))
        assert n % 8 == 0, (fn, n)
        assert meta == {"format": "pt"}, meta
        for name, info in hdr.items():
            assert info["data_offsets"][0] % st.DTYPES[info["dtype"]][2] == 0, (fn, name)


def spot_check_gptq(d, m, count=64):
    """Scalar transcription of spec 5.2 at a few (k, n), against the vectorized dequant in reference."""
    T = ref.read_tensors(d)
    qc = m.cfg["quantization_config"]
    bits = qc["bits"]
    pf, maxq = 32 // bits, (1 << bits) - 1
    gen = torch.Generator().manual_seed(0)
    for l, layer in enumerate(m.layers):
        for proj, key in (("self_attn.q_proj", "q_proj"), ("self_attn.k_proj", "k_proj"),
                          ("self_attn.o_proj", "o_proj"), ("mlp.down_proj", "down_proj")):
            p = "model.layers.%d.%s." % (l, proj)
            qw, qz, sc, gi = T[p + "qweight"], T[p + "qzeros"], T[p + "scales"], T[p + "g_idx"]
            K, N = qw.shape[0] * pf, qw.shape[1]
            for _ in range(count):
                k = int(torch.randint(0, K, (1,), generator=gen))
                n = int(torch.randint(0, N, (1,), generator=gen))
                g = int(gi[k])
                q = ((int(qw[k // pf, n]) & 0xFFFFFFFF) >> (bits * (k % pf))) & maxq
                z = (((int(qz[g, n // pf]) & 0xFFFFFFFF) >> (bits * (n % pf))) & maxq) + 1
                w = np.float32(float(sc[g, n])) * np.float32(q - z)
                assert float(layer[key][n, k]) == float(w), (p, k, n)


def cached_greedy(m, prompt_ids, max_new_tokens):
    """Greedy decoding the way HF `generate` runs it: a prefill call over the prompt, then one call
    per token with a KV cache. Each call computes its RoPE table for seq_len = positions so far
    (only `dynamic` depends on it) and rotates only its own q/k. Written separately from
    reference.forward (which recomputes the whole sequence) as a cross-check."""
    n_rep = m.nh // m.nkv
    kv_map = torch.arange(m.nh) // n_rep
    cache = [([], []) for _ in m.layers]
    ids, toks, rows = list(prompt_ids), [], []
    new = list(prompt_ids)
    for _ in range(max_new_tokens):
        start, T = len(ids) - len(new), len(new)
        seq_len = start + T
        inv = ref.dynamic_inv_freq(m.cfg, m.rotary_dim, seq_len) if m.rope_type == "dynamic" else m.inv_freq
        pos = torch.arange(start, seq_len, dtype=torch.int64).float()
        freqs = pos[:, None] * inv[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = (emb.cos() * m.attention_factor).to(m.dtype)[:, None, :]
        sin = (emb.sin() * m.attention_factor).to(m.dtype)[:, None, :]
        rd = m.rotary_dim

        def rope(v):
            r = v[..., :rd]
            return torch.cat((r * cos + ref.rotate_half(r) * sin, v[..., rd:]), dim=-1)

        x = m.embed[torch.tensor(new, dtype=torch.long)]
        for l, d in enumerate(m.layers):
            h = ref.rmsnorm(x, d["in_norm"], m.eps)
            q = F.linear(h, d["q_proj"], d["q_proj_b"]).view(T, m.nh, m.hd)
            k = F.linear(h, d["k_proj"], d["k_proj_b"]).view(T, m.nkv, m.hd)
            v = F.linear(h, d["v_proj"], d["v_proj_b"]).view(T, m.nkv, m.hd)
            if m.qk_norm:
                q, k = ref.rmsnorm(q, d["q_norm"], m.eps), ref.rmsnorm(k, d["k_norm"], m.eps)
            q, k = rope(q), rope(k)
            cache[l][0].append(k)
            cache[l][1].append(v)
            K, Vv = torch.cat(cache[l][0]), torch.cat(cache[l][1])          # [S, nkv, hd]
            S = K.shape[0]
            sc = torch.matmul(q.permute(1, 0, 2), K.permute(1, 0, 2)[kv_map].transpose(1, 2)) * m.hd ** -0.5
            t_idx = torch.arange(start, seq_len)[:, None]
            s_idx = torch.arange(S)[None, :]
            allowed = s_idx <= t_idx
            if m.windows[l] is not None:
                allowed = allowed & (s_idx > t_idx - m.windows[l])
            P = torch.softmax(sc.masked_fill(~allowed[None], float("-inf")), dim=-1)
            o = torch.matmul(P, Vv.permute(1, 0, 2)[kv_map]).permute(1, 0, 2).reshape(T, m.nh * m.hd)
            x = x + F.linear(o, d["o_proj"], d["o_proj_b"])
            h = ref.rmsnorm(x, d["post_norm"], m.eps)
            x = x + F.linear(F.silu(F.linear(h, d["gate_proj"], d["gate_proj_b"]))
                             * F.linear(h, d["up_proj"], d["up_proj_b"]), d["down_proj"], d["down_proj_b"])
        logits = F.linear(ref.rmsnorm(x[-1:], m.norm, m.eps), m.lm_head)[0]
        nxt = int(torch.argmax(logits))
        rows.append(logits)
        toks.append(nxt)
        ids.append(nxt)
        new = [nxt]
    return toks, torch.stack(rows)


def check_family(d, ablations=True):
    torch.set_num_threads(1)
    with open(os.path.join(d, "golden.json")) as f:
        g = json.load(f)
    check_files(d)
    m = ref.load_model(d)
    toks, logits = ref.greedy(m, g["prompt_ids"], g["max_new_tokens"])
    with open(os.path.join(d, g["logits_file"]), "rb") as f:
        stored = np.frombuffer(f.read(), dtype="<f4").reshape(g["logits_shape"])
    assert toks == g["tokens"], "reference tokens differ from transformers' (golden.json)"
    vs_golden = float((logits - torch.from_numpy(stored.copy())).abs().max())
    assert vs_golden <= 1e-4, "reference logits differ from transformers' by %.3g" % vs_golden
    margin = float(ref.top2_margins(torch.from_numpy(stored.copy())).min())
    assert abs(margin - g["min_top2_margin"]) < 1e-5
    if "quantization_config" in m.cfg:
        spot_check_gptq(d, m)
    m64 = ref.load_model(d, dtype=torch.float64)
    toks64, logits64 = ref.greedy(m64, g["prompt_ids"], g["max_new_tokens"])
    noise = float((logits.double() - logits64).abs().max())
    toks_c, logits_c = cached_greedy(m, g["prompt_ids"], g["max_new_tokens"])
    cached = float((logits_c - logits).abs().max())
    assert toks_c == toks and cached <= 1e-4, "KV-cached run differs: max |dlogit| %.3g" % cached
    out = {"family": g["family"], "margin": margin, "ref_vs_golden": vs_golden, "fp32_vs_fp64": noise,
           "fp64_tokens_match": toks64 == toks,
           "distinct_tokens": len(set(toks)), "cached_vs_reference": cached}
    if ablations:
        seq = g["prompt_ids"] + g["tokens"][:-1]
        P = len(g["prompt_ids"])
        base = ref.forward(m, seq, prefill_len=P)[P - 1:]
        out["teacher_forced_vs_reference"] = float((base - logits).abs().max())
        feats = ["rope"]
        if any(w is not None for w in m.windows):
            feats.append("window")
        if m.cfg.get("rope_scaling"):
            feats.append("rope_scaling")
        if m.attention_factor != 1.0:
            feats.append("attention_factor")
        if m.rope_type == "dynamic":
            feats.append("dynamic_seq_len_minus_1")
        if m.layers[0]["q_proj_b"] is not None:
            feats.append("bias")
        if m.qk_norm:
            feats.append("qk_norm")
        out["ablation"] = {f: float((ref.forward(m, seq, ablate=(f,), prefill_len=P)[P - 1:] - base).abs().max())
                           for f in feats}
        if m.rope_type == "dynamic":
            # no-cache semantics: every call re-rotates all keys with its own (current) table
            rerot = torch.stack([ref.forward(m, seq[:P + r], prefill_len=P + r)[-1] for r in range(len(base))])
            out["ablation"]["rerotate_cached_keys"] = float((rerot - base).abs().max())
        # config-level mistakes a loader could make
        overrides = {}
        if "quantization_config" in m.cfg:
            overrides["zeros_as_gptq_v2"] = lambda c: dict(
                c, quantization_config=dict(c["quantization_config"], checkpoint_format="gptq_v2"))
        if m.cfg.get("model_type") == "qwen2":
            overrides["honour_sliding_window"] = lambda c: dict(c, use_sliding_window=True, max_window_layers=0)
        if m.rope_type == "yarn":
            rs = m.cfg["rope_scaling"]
            overrides["yarn_truncate_flipped"] = lambda c: dict(
                c, rope_scaling=dict(c["rope_scaling"], truncate=not rs.get("truncate", True)))
            if "attention_factor" in rs:
                overrides["yarn_ignore_attention_factor"] = lambda c: dict(
                    c, rope_scaling={k: v for k, v in c["rope_scaling"].items() if k != "attention_factor"})
        for name, fn in overrides.items():
            m2 = ref.load_model(d, cfg_override=fn)
            out["ablation"][name] = float((ref.forward(m2, seq, prefill_len=P)[P - 1:] - base).abs().max())
    return out


def check_bad(bad_dir):
    with open(os.path.join(bad_dir, "manifest.json")) as f:
        man = json.load(f)
    results = {}
    for name in man["variants"]:
        d = os.path.join(bad_dir, name)
        try:
            ref.load_model(d)
            results[name] = "NOT REJECTED"
        except (st.SafetensorsError, NotImplementedError, ValueError, KeyError, AssertionError) as e:
            results[name] = "%s: %s" % (type(e).__name__, str(e)[:110])
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--bad", default=None)
    ap.add_argument("--no-ablations", action="store_true")
    a = ap.parse_args(argv)
    ok = True
    for fam in sorted(os.listdir(a.dir)):
        d = os.path.join(a.dir, fam)
        if not os.path.exists(os.path.join(d, "golden.json")):
            continue
        try:
            r = check_family(d, not a.no_ablations)
        except AssertionError as e:
            print("%-18s FAIL %s" % (fam, e))
            ok = False
            continue
        weakest = min(r.get("ablation", {"-": float("inf")}).values())
        print("%-18s ok  margin %.4f  ref-vs-transformers %.2e  fp32-vs-fp64 %.2e  cached %.2e  fp64 tokens %s  "
              "distinct %2d  ablations %s"
              % (fam, r["margin"], r["ref_vs_golden"], r["fp32_vs_fp64"], r["cached_vs_reference"],
                 "same" if r["fp64_tokens_match"] else "DIFFER", r["distinct_tokens"],
                 " ".join("%s=%.3g" % kv for kv in r.get("ablation", {}).items())))
        if not r["fp64_tokens_match"] or weakest < 100 * r["fp32_vs_fp64"]:
            ok = False
            print("    ^ weak: fp64 tokens differ or an ablation is within 100x of the fp32 noise")
    if a.bad:
        for name, res in check_bad(a.bad).items():
            print("bad/%-18s %s" % (name, res))
            ok &= res != "NOT REJECTED"
    print("ALL OK" if ok else "FAILURES")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
