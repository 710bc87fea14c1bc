#!/usr/bin/env python3
"""Write a tiny seeded-random Llama GGUF (v3) that llama.cpp loads, and optionally the same model as
a Hugging Face checkpoint.

    python3 -m pimc_testgen.make_gguf --out FILE.gguf [--seed N] [--type f32|f16|q8_0] [--hf-out DIR]
                                      [--out FILE2.gguf --type q8_0 --hf-out DIR2 ...]

The GGUF is written with the `gguf` package (llama.cpp's gguf-py). Its tensors are the llama.cpp
names and layouts, and Q/K rows are permuted from HF's rotate-half layout to llama.cpp's adjacent-pair
RoPE layout, as llama.cpp's convert_hf_to_gguf.py does. --hf-out writes the *same* model with
transformers' LlamaForCausalLM.save_pretrained (config.json + model.safetensors, float32). For f16 and
q8_0 it holds the weights the GGUF decodes to, so both files describe one model exactly.

--qk-layout hf writes Q/K unpermuted. That is the classic conversion mistake, and the file is wrong
for llama.cpp on purpose: llama_cpp_oracle.py must reject it.

Deterministic: the same --seed and --type give byte-identical files. Outputs are written to temporary
names and renamed when complete. See docs/llama-cpp-oracle.md.
"""

import argparse
import hashlib
import os
import shutil
import sys
import tempfile

import numpy as np

# Llama-3-like GQA block at a small size. Q8_0 blocks run along ne[0] (the input dimension), so
# HIDDEN and INTER are multiples of 32.
SHAPE = dict(hidden=128, layers=2, heads=4, kv_heads=2, head_dim=32, inter=352,
             rope_theta=10000.0, rms_eps=1e-5, context=512)

# SentencePiece-style vocab: <unk> <s> </s>, 256 byte-fallback pieces, "▁", a-z, digits, punctuation,
# and every "▁"-prefix of a few words. With the prefixes present, llama.cpp's SPM merge (best-scored
# pair first) builds each word left to right. Other characters fall back to <0xXX> bytes.
WORDS = ["hello", "world", "the", "in", "memory", "model", "llama", "pim", "token"]
SPACE = "\u2581"
UNK, BOS, EOS = 0, 1, 2


def build_vocab():
    import gguf
    tokens = ["<unk>", "<s>", "</s>"]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    for b in range(256):
        tokens.append("<0x%02X>" % b)
        types.append(gguf.TokenType.BYTE)
    pieces = [SPACE] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + list("0123456789,.!?'-")
    for w in WORDS:
        for k in range(1, len(w) + 1):
            p = SPACE + w[:k]
            if p not in pieces:
                pieces.append(p)
    tokens += pieces
    types += [gguf.TokenType.NORMAL] * len(pieces)
    # Longer pieces score higher, so a word merges into its longest prefix.
    scores = [0.0] * (len(tokens) - len(pieces)) + [float(len(p)) - i * 1e-3 for i, p in enumerate(pieces)]
    return tokens, scores, [int(t) for t in types]


def make_weights(seed, vocab):
    """HF-named float32 weights. Init as pimc_testgen/make_checkpoints.py: logit std about 2 and
    greedy output that does not collapse into a repeat loop."""
    s = SHAPE
    H, L, nh, nkv, hd, inter = s["hidden"], s["layers"], s["heads"], s["kv_heads"], s["head_dim"], s["inter"]
    # Seeded as pimc_testgen/make_checkpoints.py seeds its families: from sha256(name, seed).
    h = hashlib.sha256(("pimc_testgen:gguf-llama:%d" % seed).encode()).digest()
    rng = np.random.default_rng(int.from_bytes(h[:8], "little"))

    def normal(shape, var):
        return (rng.standard_normal(shape) * np.sqrt(var)).astype(np.float32)

    def norm_w(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    w = {"model.embed_tokens.weight": normal((vocab, H), 1.0)}
    for i in range(L):
        p = "model.layers.%d." % i
        w[p + "input_layernorm.weight"] = norm_w(H)
        w[p + "self_attn.q_proj.weight"] = normal((nh * hd, H), 1.0 / H)
        w[p + "self_attn.k_proj.weight"] = normal((nkv * hd, H), 1.0 / H)
        w[p + "self_attn.v_proj.weight"] = normal((nkv * hd, H), 1.0 / H)
        w[p + "self_attn.o_proj.weight"] = normal((H, nh * hd), 2.0 / (L * nh * hd))
        w[p + "post_attention_layernorm.weight"] = norm_w(H)
        w[p + "mlp.gate_proj.weight"] = normal((inter, H), 1.0 / H)
        w[p + "mlp.up_proj.weight"] = normal((inter, H), 1.0 / H)
        w[p + "mlp.down_proj.weight"] = normal((H, inter), 2.0 / (L * inter))
    w["model.norm.weight"] = norm_w(H)
    w["lm_head.weight"] = 2.0 * normal((vocab, H), 1.0 / H)
    return w


def permute_qk(w, n_head):
    """HF rotate-half rows -> llama.cpp adjacent-pair rows (convert_hf_to_gguf.py LlamaModel.permute):
    within each head, HF row j (first half) and j + hd/2 (second half) become rows 2j and 2j+1."""
    rows = w.shape[0]
    return w.reshape(n_head, 2, rows // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_tensor_name(hf):
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    parts = hf.split(".")          # model.layers.N.<module...>.weight
    blk, rest = parts[2], ".".join(parts[3:-1])
    names = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
             "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down"}
    return "blk.%s.%s.weight" % (blk, names[rest])


def encode(arr, qtype):
    """(payload for GGUFWriter.add_tensor, raw_dtype, decoded float32 values llama.cpp will see)."""
    import gguf
    if arr.ndim == 1 or qtype == "f32":    # norms stay F32, as convert_hf_to_gguf.py keeps them
        return arr, None, arr
    if qtype == "f16":
        h = arr.astype(np.float16)
        return h, None, h.astype(np.float32)
    if qtype == "q8_0":
        q = gguf.quants.quantize(arr, gguf.GGMLQuantizationType.Q8_0)
        # d (f16) * q (int8) is exact in float32, so the HF copy holds exactly what llama.cpp decodes.
        return q, gguf.GGMLQuantizationType.Q8_0, gguf.quants.dequantize(q, gguf.GGMLQuantizationType.Q8_0)
    raise ValueError(qtype)


FILE_TYPES = {"f32": 0, "f16": 1, "q8_0": 7}       # gguf.LlamaFileType ALL_F32 / MOSTLY_F16 / MOSTLY_Q8_0


def write_gguf(path, weights, qtype, qk_layout, seed):
    """Returns the decoded (HF-layout) weights the GGUF describes."""
    import gguf
    s = SHAPE
    tokens, scores, types = build_vocab()
    tmp = path + ".tmp-%d" % os.getpid()
    w = gguf.GGUFWriter(tmp, "llama")
    w.add_name("pimc-tiny-llama-seed%d-%s" % (seed, qtype))
    w.add_file_type(FILE_TYPES[qtype])
    if qtype == "q8_0":
        w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.add_context_length(s["context"])
    w.add_embedding_length(s["hidden"])
    w.add_block_count(s["layers"])
    w.add_feed_forward_length(s["inter"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_key_length(s["head_dim"])
    w.add_value_length(s["head_dim"])
    w.add_rope_dimension_count(s["head_dim"])
    w.add_rope_freq_base(s["rope_theta"])
    w.add_layer_norm_rms_eps(s["rms_eps"])
    w.add_vocab_size(len(tokens))
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(UNK)
    w.add_bos_token_id(BOS)
    w.add_eos_token_id(EOS)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    decoded = {}
    for hf, arr in weights.items():
        name = gguf_tensor_name(hf)
        if qk_layout == "gguf" and name.endswith(("attn_q.weight", "attn_k.weight")):
            n = s["heads"] if "attn_q" in name else s["kv_heads"]
            stored = permute_qk(arr, n)
        else:
            stored = arr
        payload, raw, dec = encode(np.ascontiguousarray(stored), qtype)
        w.add_tensor(name, payload, raw_dtype=raw)
        if stored is not arr:   # undo the permutation: inverse of permute_qk is the HF view
            dec = dec.reshape(n, dec.shape[0] // n // 2, 2, -1).swapaxes(1, 2).reshape(dec.shape)
        decoded[hf] = dec
    try:
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        os.replace(tmp, path)
    except BaseException:
        w.close()
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return decoded


HF_FILES = {"config.json", "generation_config.json", "model.safetensors"}


def check_hf_out(out_dir):
    """--hf-out may replace an earlier HF copy, never a directory holding anything else."""
    if not os.path.lexists(out_dir):
        return
    if not os.path.isdir(out_dir) or os.path.islink(out_dir):
        raise FileExistsError("--hf-out %s exists and is not a directory; refusing to replace it" % out_dir)
    extra = set(os.listdir(out_dir)) - HF_FILES
    if extra:
        raise FileExistsError("--hf-out %s exists and holds other files (%s); refusing to replace it"
                              % (out_dir, ", ".join(sorted(extra))))


def write_hf(out_dir, weights, vocab):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()
    s = SHAPE
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=s["hidden"], intermediate_size=s["inter"],
                      num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                      num_key_value_heads=s["kv_heads"], head_dim=s["head_dim"],
                      max_position_embeddings=s["context"], rms_norm_eps=s["rms_eps"],
                      rope_parameters={"rope_type": "default", "rope_theta": s["rope_theta"]},
                      tie_word_embeddings=False, bos_token_id=BOS, eos_token_id=EOS,
                      dtype="float32")
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(torch.float32)
    state = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in weights.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise RuntimeError("HF state_dict mismatch: missing %s, unexpected %s" % (missing, unexpected))

    check_hf_out(out_dir)
    parent = os.path.dirname(os.path.abspath(out_dir))
    tmp = tempfile.mkdtemp(prefix=".hf-tmp-", dir=parent)
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        # mkdtemp makes the directory 0700 and safetensors writes 0600: give the usual umask modes.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)
        for f in os.listdir(tmp):
            os.chmod(os.path.join(tmp, f), 0o666 & ~umask)
        if os.path.exists(out_dir):
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", action="append", required=True,
                    help="GGUF file to write; repeat to write several variants in one run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--type", action="append", choices=sorted(FILE_TYPES),
                    help="storage of the 2-D weights (norms stay F32), default f32; once per --out")
    ap.add_argument("--hf-out", action="append",
                    help="also write the same model as a HF checkpoint directory; once per --out")
    ap.add_argument("--qk-layout", choices=["gguf", "hf"], default="gguf",
                    help="'hf' writes Q/K unpermuted: a deliberately wrong file for negative tests")
    a = ap.parse_args(argv)
    if a.seed < 0:
        ap.error("--seed must be >= 0")
    n = len(a.out)
    # Pairing by position: with several --out, a lone --type would be ambiguous, so it is refused.
    types = a.type or ["f32"] * n
    if len(types) != n:
        ap.error("%d --type for %d --out: give one per --out (or none for f32)" % (len(types), n))
    hf_outs = a.hf_out or [None] * n
    if len(hf_outs) != n:
        ap.error("%d --hf-out for %d --out: give one per --out" % (len(hf_outs), n))
    # Check every destination before writing anything.
    for path, flag in [(o, "--out") for o in a.out] + [(h, "--hf-out") for h in hf_outs if h]:
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            print("error: %s %s: directory %s does not exist" % (flag, path, parent), file=sys.stderr)
            return 1
    try:
        for h in hf_outs:
            if h:
                check_hf_out(h)
    except FileExistsError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1

    tokens, _, _ = build_vocab()
    weights = make_weights(a.seed, len(tokens))
    s = SHAPE
    n_params = sum(v.size for v in weights.values())
    for out, qtype, hf_out in zip(a.out, types, hf_outs):
        try:
            decoded = write_gguf(out, weights, qtype, a.qk_layout, a.seed)
            if hf_out:
                # The HF copy always holds the *correct* model: with --qk-layout hf the GGUF is wrong.
                write_hf(hf_out, decoded, len(tokens))
        except OSError as e:
            print("error: %s" % e, file=sys.stderr)
            return 1
        print("wrote %s: llama %s, hidden %d, %d layers, %d q / %d kv heads, head_dim %d, ffn %d, vocab %d, "
              "%d params, seed %d, qk-layout %s%s" % (
                  out, qtype, s["hidden"], s["layers"], s["heads"], s["kv_heads"], s["head_dim"], s["inter"],
                  len(tokens), n_params, a.seed, a.qk_layout, (", hf copy " + hf_out) if hf_out else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
