#!/usr/bin/env python3
"""Check llama.cpp (llama-cpp-python) against transformers on one model held as GGUF + HF checkpoint.

    python3 -m pimc_testgen.llama_cpp_oracle --gguf FILE.gguf --hf DIR [--gguf F2.gguf --hf DIR2 ...]
                                             [--text STR] [--prompt-ids 1,2,..] [--n-new 16] [--tol X]
                                             [--threads 1]

1. Loads the GGUF with llama.cpp (F32 KV cache, no flash attention, fixed seed). If llama.cpp cannot
   load it, the error names the file and quotes llama.cpp's own messages.
2. Tokenizes --text with llama.cpp and prints the ids and pieces. The detokenized text must round-trip,
   and the ids must equal those of transformers' tokenizer converted from the same GGUF.
3. Prompt = those ids, or --prompt-ids. llama.cpp generates --n-new greedy tokens with its own sampler,
   evaluating one token at a time through its KV cache, and keeps the logits at every position.
4. transformers' LlamaForCausalLM (float32) runs the HF checkpoint on the same token sequence in one
   pass without a cache. Both logits tables are compared at every position, and so are the greedy
   tokens (argmax of each HF row vs llama.cpp's sampled token).

Exit status 0 when max |diff| <= tolerance and the greedy tokens agree, 1 with an "error:" line
otherwise. A greedy step whose HF top-2 margin is below 2 x tolerance is too close to call (both
logits may move by the tolerance): a disagreement there is reported, not an error. The default
tolerance depends on how the GGUF stores its 2-D weights (TOLERANCE below; docs/llama-cpp-oracle.md).
"""

import argparse
import ctypes
import os
import sys
import time

import numpy as np

# Max |logit diff| accepted, by the storage type of the GGUF's 2-D weights. Logits have std ~2 and
# |max| ~8 on the pimc_testgen.make_gguf models. Measured over seeds 0-9 (docs/llama-cpp-oracle.md):
#  F32:  max 6.2e-6. ggml's F32 matmuls, F32 KV cache and softmax differ from torch by summation order.
#  F16:  max 3.9e-3. ggml rounds the activations to F16 before each F16 matmul.
#  Q8_0: max 0.111. ggml quantizes the activations to Q8_0 (int8 + F16 scale per 32) before each
#        matmul. The HF copy holds the exact dequantized weights, so this rounding is the difference.
TOLERANCE = {"F32": 1e-4, "F16": 2e-2, "Q8_0": 0.25}

DEFAULT_TEXT = "hello world, the PIM model!"


class OracleError(Exception):
    pass


class LlamaCppLog:
    """Collects llama.cpp's error messages (they are the only explanation of a load failure)."""

    ERROR, CONT = 4, 5      # ggml_log_level: NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5

    def __init__(self, llama_cpp):
        self.errors = []
        self._in_error = False

        @llama_cpp.llama_log_callback
        def cb(level, text, user_data):
            if level == self.ERROR or (level == self.CONT and self._in_error):
                self.errors.append(text.decode("utf-8", "replace").rstrip("\n"))
                self._in_error = True
            elif level != self.CONT:
                self._in_error = False

        self._cb = cb           # keep the ctypes thunk alive for the process lifetime
        llama_cpp.llama_log_set(cb, ctypes.c_void_p(0))


def parse_ids(s):
    try:
        ids = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise OracleError("--prompt-ids %r: expected comma-separated integers" % s)
    if not ids:
        raise OracleError("--prompt-ids is empty")
    return ids


def gguf_facts(gguf_path):
    """(storage type of the 2-D tensors, metadata fields, tensor names) read with the gguf package."""
    import gguf
    try:
        r = gguf.GGUFReader(gguf_path)
    except Exception as e:        # the reader raises ValueError/struct errors on damaged files
        raise OracleError("gguf could not read %s: %s" % (gguf_path, e))
    types = sorted({t.tensor_type.name for t in r.tensors if len(t.shape) == 2})
    if len(types) != 1:
        raise OracleError("%s: 2-D tensors use %s; expected one storage type" % (gguf_path, types or "none"))
    fields = {k: f.contents() for k, f in r.fields.items() if not k.startswith("tokenizer.")}
    return types[0], fields, {t.name for t in r.tensors}


def load_llama_cpp(path, n_ctx, threads, log):
    import llama_cpp
    try:
        return llama_cpp.Llama(path, n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx, n_threads=threads,
                               n_threads_batch=threads, seed=0, logits_all=True, flash_attn=False,
                               type_k=llama_cpp.GGML_TYPE_F32, type_v=llama_cpp.GGML_TYPE_F32,
                               verbose=False)
    except ValueError as e:
        detail = "; ".join(log.errors) or str(e)
        raise OracleError("llama.cpp could not load %s: %s" % (path, detail))


def check_tokenizer(llm, gguf_path, text):
    ids = llm.tokenize(text.encode("utf-8"), add_bos=True)
    pieces = [llm.detokenize([i], special=True).decode("utf-8", "backslashreplace") for i in ids]
    print("llama.cpp tokenize %r: %s" % (text, ids))
    print("  pieces: %s" % " ".join(repr(p) for p in pieces))
    back = llm.detokenize(ids).decode("utf-8", "replace")
    if back != text:
        raise OracleError("llama.cpp detokenize(tokenize(%r)) = %r" % (text, back))
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    try:
        tok = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(gguf_path)),
                                            gguf_file=os.path.basename(gguf_path))
    except Exception as e:        # transformers' GGUF conversion raises many kinds
        raise OracleError("transformers could not build a tokenizer from %s: %s: %s"
                          % (gguf_path, type(e).__name__, e))
    hf_ids = tok(text)["input_ids"]
    if hf_ids != ids:
        raise OracleError("tokenizers disagree on %r: llama.cpp %s, transformers (from the GGUF) %s"
                          % (text, ids, hf_ids))
    print("  round-trips; transformers' tokenizer from the GGUF gives the same %d ids" % len(ids))
    return ids


def run_llama_cpp(llm, prompt, n_new):
    """Greedy generation with llama.cpp's sampler. Returns (tokens, logits [len(prompt)+n_new-1, V])."""
    out = []
    for tok in llm.generate(prompt, temp=0.0, repeat_penalty=1.0, reset=True):
        out.append(int(tok))
        if len(out) == n_new:
            break
    n = llm.n_tokens
    if n != len(prompt) + n_new - 1:
        raise OracleError("llama.cpp evaluated %d positions, expected %d" % (n, len(prompt) + n_new - 1))
    logits = np.array(llm.scores[:n], dtype=np.float32)
    # The greedy sampler must pick the argmax of the logits llama.cpp reports.
    own = logits[len(prompt) - 1:].argmax(axis=1).tolist()
    if own != out:
        raise OracleError("llama.cpp's greedy tokens %s are not the argmax of its own logits %s" % (out, own))
    return out, logits


def check_config(llm, fields, tensor_names, cfg, hf_dir):
    """The HF config must describe the model llama.cpp loaded; otherwise the logits mean nothing."""
    import llama_cpp
    arch = fields.get("general.architecture")
    if arch != "llama" or cfg.model_type != "llama":
        raise OracleError("only the llama architecture is compared (LlamaForCausalLM): GGUF %r, "
                          "%s/config.json model_type %r" % (arch, hf_dir, cfg.model_type))
    m = llm.model
    rope = getattr(cfg, "rope_parameters", None) or {}
    hd = cfg.hidden_size // cfg.num_attention_heads
    pairs = [("vocab_size", llm.n_vocab(), cfg.vocab_size),
             ("hidden_size", llama_cpp.llama_model_n_embd(m), cfg.hidden_size),
             ("num_hidden_layers", llama_cpp.llama_model_n_layer(m), cfg.num_hidden_layers),
             ("num_attention_heads", llama_cpp.llama_model_n_head(m), cfg.num_attention_heads),
             ("num_key_value_heads", llama_cpp.llama_model_n_head_kv(m), cfg.num_key_value_heads),
             ("intermediate_size", fields.get("llama.feed_forward_length"), cfg.intermediate_size),
             ("head_dim", fields.get("llama.attention.key_length", hd), getattr(cfg, "head_dim", None) or hd),
             ("tie_word_embeddings", "output.weight" not in tensor_names, bool(cfg.tie_word_embeddings))]
    bad = ["%s: GGUF %s, HF %s" % (k, x, y) for k, x, y in pairs if x != y]
    # GGUF stores these as f32.
    theta = rope.get("rope_theta", getattr(cfg, "rope_theta", None))
    for k, key, hf in [("rope_theta", "llama.rope.freq_base", theta),
                       ("rms_norm_eps", "llama.attention.layer_norm_rms_epsilon", cfg.rms_norm_eps)]:
        g = fields.get(key)
        if g is None or hf is None or abs(g - hf) > 1e-6 * abs(hf):
            bad.append("%s: GGUF %s, HF %s" % (k, g, hf))
    g_scaling, hf_scaling = fields.get("llama.rope.scaling.type", "none"), rope.get("rope_type", "default")
    if g_scaling != "none" or hf_scaling != "default":
        bad.append("rope scaling: GGUF %s, HF %s (only unscaled RoPE is compared)" % (g_scaling, hf_scaling))
    if bad:
        raise OracleError("%s/config.json does not describe the model in the GGUF: %s"
                          % (hf_dir, "; ".join(bad)))


def ggml_activation_rounding(stype):
    """What ggml's CPU backend does to a matmul's F32 activations before multiplying them with weights
    stored as `stype` (the weight's vec_dot_type): None for F32; F16 rounds them to F16; Q8_0
    quantizes each block of 32 along the row as quantize_row_q8_0 does on x86: id = 127/amax,
    q = round-half-even(x*id), scale d = amax/127 stored as F16. The int8 x int8 block dot product
    times d_w*d_x is then exactly the F32 dot product of the two dequantized vectors (up to
    summation order), so the weights in the HF copy plus this rounding are what llama.cpp computes.
    None also for types not modelled here (the emulation is a diagnostic, never the check)."""
    import torch
    if stype == "F32":
        return None
    if stype == "F16":
        return lambda x: x.to(torch.float16).to(torch.float32)
    if stype == "Q8_0":
        def q8_0(x):
            if x.shape[-1] % 32:
                raise OracleError("Q8_0 activation rows need a multiple of 32 elements, got %d" % x.shape[-1])
            b = x.reshape(-1, 32)
            amax = b.abs().amax(dim=1, keepdim=True)
            inv = torch.where(amax > 0, 127.0 / amax, torch.zeros_like(amax))
            q = torch.round(b * inv)
            d = (amax / 127.0).to(torch.float16).to(torch.float32)
            return (q * d).reshape(x.shape)
        return q8_0
    return None


def load_transformers(hf_dir):
    import torch
    from transformers import LlamaForCausalLM
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        model = LlamaForCausalLM.from_pretrained(hf_dir, dtype=torch.float32)
    except (OSError, ValueError) as e:
        raise OracleError("transformers could not load %s: %s" % (hf_dir, e))
    return model.eval()


def run_transformers(model, ids, rounding):
    """Logits [len(ids), V]: (plain float32, with `rounding` applied to the input of every nn.Linear,
    or None when rounding is None)."""
    import torch
    x = torch.tensor([ids], dtype=torch.long)
    with torch.no_grad():
        plain = model(x, use_cache=False).logits[0].float().numpy()
        if rounding is None:
            return plain, None
        # Every 2-D GGUF weight but token_embd (a row lookup, no matmul) is one of these Linears.
        hooks = [m.register_forward_pre_hook(lambda mod, args: (rounding(args[0]),) + tuple(args[1:]))
                 for m in model.modules() if isinstance(m, torch.nn.Linear)]
        try:
            rounded = model(x, use_cache=False).logits[0].float().numpy()
        finally:
            for h in hooks:
                h.remove()
    return plain, rounded


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", action="append", required=True,
                    help="GGUF file; repeat with --hf to check several pairs in one run")
    ap.add_argument("--hf", action="append", required=True,
                    help="HF checkpoint directory holding the same model as the matching --gguf")
    ap.add_argument("--text", default=DEFAULT_TEXT, help="text tokenized by llama.cpp (default prompt)")
    ap.add_argument("--prompt-ids", help="comma-separated prompt token ids instead of the text's")
    ap.add_argument("--n-new", type=int, default=16, help="greedy tokens to generate")
    ap.add_argument("--tol", type=float, help="max |logit diff| accepted (default: by storage type)")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    if len(a.gguf) != len(a.hf):
        ap.error("%d --gguf but %d --hf: give them in pairs" % (len(a.gguf), len(a.hf)))
    if a.n_new < 1:
        ap.error("--n-new must be >= 1")
    import llama_cpp
    log = LlamaCppLog(llama_cpp)
    failed = 0
    for gguf_path, hf_dir in zip(a.gguf, a.hf):
        if len(a.gguf) > 1:
            print("== %s vs %s" % (gguf_path, hf_dir))
        try:
            log.errors.clear()
            run(a, gguf_path, hf_dir, log)
        except OracleError as e:
            sys.stdout.flush()
            print("error: %s" % e, file=sys.stderr)
            failed += 1
    return 1 if failed else 0


def run(a, gguf_path, hf_dir, log):
    if not os.path.isfile(gguf_path):
        raise OracleError("--gguf %s: no such file" % gguf_path)
    if not os.path.isfile(os.path.join(hf_dir, "config.json")):
        raise OracleError("--hf %s: no config.json (not a HF checkpoint directory)" % hf_dir)

    t0 = time.perf_counter()
    prompt = parse_ids(a.prompt_ids) if a.prompt_ids else None
    # Room for the default text's prompt; a longer --prompt-ids gets what it needs.
    n_ctx = max(128, 32 * ((len(prompt or []) + a.n_new + 31) // 32))
    llm = load_llama_cpp(gguf_path, n_ctx, a.threads, log)
    t_load = time.perf_counter() - t0
    stype, fields, tensor_names = gguf_facts(gguf_path)
    tol = a.tol if a.tol is not None else TOLERANCE.get(stype)
    if tol is None:
        raise OracleError("%s stores weights as %s, for which no tolerance is measured; pass --tol"
                          % (gguf_path, stype))

    t0 = time.perf_counter()
    text_ids = check_tokenizer(llm, gguf_path, a.text)
    t_tok = time.perf_counter() - t0
    if prompt is None:
        prompt = text_ids
        if len(prompt) + a.n_new > n_ctx:
            raise OracleError("--text has %d tokens; with --n-new %d that exceeds llama.cpp's n_ctx %d"
                              % (len(prompt), a.n_new, n_ctx))
    bad = [t for t in prompt if not 0 <= t < llm.n_vocab()]
    if bad:
        raise OracleError("--prompt-ids %s outside the vocab [0, %d)" % (bad, llm.n_vocab()))

    t0 = time.perf_counter()
    tokens, ll_logits = run_llama_cpp(llm, prompt, a.n_new)
    t1 = time.perf_counter()
    model = load_transformers(hf_dir)
    check_config(llm, fields, tensor_names, model.config, hf_dir)
    seq = prompt + tokens[:-1]
    ref, rounded = run_transformers(model, seq, ggml_activation_rounding(stype))
    t2 = time.perf_counter()

    ll = ll_logits.astype(np.float64)
    diff = np.abs(ll - ref)
    per_pos = diff.max(axis=1)
    worst = int(per_pos.argmax())
    P = len(prompt)
    ref_rows = ref[P - 1:]
    ref_tokens = ref_rows.argmax(axis=1).tolist()
    top2 = np.sort(ref_rows, axis=1)[:, -2:]
    margins = top2[:, 1] - top2[:, 0]
    differ = [i for i, (x, y) in enumerate(zip(tokens, ref_tokens)) if x != y]
    # A step is decided when no pair of logits moved by <= tol each can swap the top two.
    close = [i for i in differ if margins[i] <= 2 * tol]
    wrong = [i for i in differ if margins[i] > 2 * tol]

    print("prompt (%d ids): %s" % (P, prompt))
    print("llama.cpp greedy (%d): %s" % (a.n_new, tokens))
    print("transformers argmax on the same tokens: %s" % ref_tokens)
    print("weights %s, F32 KV cache; %d positions x %d logits, logit std %.2f" % (
        stype, diff.shape[0], diff.shape[1], float(ref.std())))
    print("max |diff| %.3g at position %d (tolerance %.3g); mean |diff| %.3g; min top-2 margin %.3g" % (
        float(per_pos.max()), worst, tol, float(diff.mean()), float(margins.min())))
    if rounded is not None:
        # Diagnostic only: one rounding flip from an F32 summation-order difference decorrelates
        # everything after it, so this is either ~1e-6 or as large as the plain difference.
        print("  with ggml's %s activation rounding emulated in transformers: max |diff| %.3g "
              "(reported, not checked)" % (stype, float(np.abs(ll - rounded).max())))
    for i in close:
        print("  step %d: llama.cpp %d, transformers %d, top-2 margin %.3g <= 2 x tolerance: too close "
              "to call" % (i, tokens[i], ref_tokens[i], float(margins[i])))
    print("time: llama.cpp load %.3f s, generate %.3f s; tokenizer check %.2f s and transformers %.2f s "
          "(first pair: with imports)" % (t_load, t1 - t0, t_tok, t2 - t1))

    errors = []
    if not per_pos.max() <= tol:       # also catches NaN
        errors.append("llama.cpp and transformers logits differ by %.3g at position %d (input token %d), "
                      "above tolerance %.3g" % (float(per_pos.max()), worst, seq[worst], tol))
    if wrong:
        i = wrong[0]
        errors.append("greedy tokens disagree at %d step(s), first at step %d: llama.cpp %d, transformers "
                      "%d (top-2 margin %.3g > 2 x tolerance)" % (
                          len(wrong), i, tokens[i], ref_tokens[i], float(margins[i])))
    if errors:
        raise OracleError("; ".join(errors) + " [%s vs %s]" % (gguf_path, hf_dir))
    print("agree: llama.cpp matches transformers, max |diff| %.3g <= %.3g, greedy %d/%d tokens%s" % (
        float(per_pos.max()), tol, a.n_new - len(differ), a.n_new,
        " (%d too close to call)" % len(close) if close else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
