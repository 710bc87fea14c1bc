"""torch.compile(backend="pimc") against eager (dynamo*.test).

Usage: dynamo_cases.py CASE[,CASE...] [DIR [ATTN_IMPL...]]  (DIR: bridge's keep_dir, "-" for none;
ATTN_IMPL: hf-llama's attn_implementation values, default sdpa)

Every comparison is torch.allclose(compiled, eager, atol=ATOL, rtol=RTOL) in float32; a
mismatch, a graph that did not run on pimc, or a missing error exits 1 with the reason."""

import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

import pimc_torch.dynamo as pd
from pimc_torch import models

ATOL = RTOL = 1e-5


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def compare(name, got, want):
    if got.shape != want.shape or got.dtype != want.dtype:
        fail("%s: compiled %s %s, eager %s %s" % (name, got.dtype, list(got.shape), want.dtype,
                                                  list(want.shape)))
    diff = (got - want).abs().max().item()
    if not torch.allclose(got, want, atol=ATOL, rtol=RTOL):
        fail("%s: compiled differs from eager by %.3g (atol=rtol=%g)" % (name, diff, ATOL))
    print("%s: %s %s matches eager (atol=rtol=%g)" % (name, str(got.dtype).replace("torch.", ""),
                                                      list(got.shape), ATOL))
    return diff


def last_graphs(n):
    return pd.report().graphs[-n:]


def ran_on_pimc(name, record, calls):
    if record.where != "pimc run-ref (reference interpreter)" or record.calls != calls:
        fail("%s: expected %d call(s) on pimc run-ref, got %s / %d"
             % (name, calls, record.where, record.calls))


def llm_ops(record):
    return " ".join("%s=%d" % (op, c) for op, c in sorted(record.llm_ops.items())
                    if op in ("attention", "rms_norm", "layer_norm", "rope", "gated_mlp", "moe",
                              "gelu", "linear", "matmul", "embedding"))


# ---------------------------------------------------------------------------------------------

def case_bridge(out_dir):
    """The bridge's test models through torch.compile(backend="pimc"), by the registered name."""
    diffs = {}
    cases = [("llama", models.LlamaStack, {}, lambda: torch.randn(1, 8, 64)),
             ("mixtral_dense", models.MixtralStack, {"dispatch": "dense"},
              lambda: torch.randn(1, 8, 64)),
             ("gpt2", models.GPT2Stack, {}, lambda: torch.randint(0, 96, (1, 8)))]
    for name, cls, kwargs, make in cases:
        torch.manual_seed(0)
        model = cls(**kwargs).eval()
        x = make()
        t0 = time.time()
        # GPT-2 keeps its files (graph.json, graph.safetensors, graph.mlir) in out_dir.
        options = {"keep_dir": out_dir} if name == "gpt2" and out_dir else None
        with torch.no_grad():
            compiled = torch.compile(model, backend="pimc", options=options)
            got = compiled(x)
            t1 = time.time()
            again = compiled(x)
            t2 = time.time()
            want = model(x)
        diffs[name] = compare(name, got, want)
        if not torch.equal(got, again):
            fail("%s: a second call gave other values" % name)
        rec, = last_graphs(1)
        ran_on_pimc(name, rec, 2)
        print("%s: 1 graph, %d ATen ops, raised: %s" % (name, rec.aten_ops, llm_ops(rec)))
        print("%s: timing: compile + first call %.2f s, next call %.2f s"
              % (name, t1 - t0, t2 - t1), file=sys.stderr)
    print("max |diff|: " + ", ".join("%s %.2g" % kv for kv in diffs.items()), file=sys.stderr)



def case_shapes(_):
    """Other sequence lengths (Dynamo recompiles with a dynamic length; pimc imports each length
    it sees) and parameters updated in place after compiling (the weights file is rewritten)."""
    torch.manual_seed(0)
    model = models.LlamaStack(num_layers=1).eval()
    compiled = torch.compile(model, backend="pimc")
    with torch.no_grad():
        for T in (8, 5, 6, 5):
            x = torch.randn(1, T, 64)
            compare("llama T=%d" % T, compiled(x), model(x))
    for r in pd.report().graphs:
        print("graph [%s]: %d signature(s), %d call(s)" % (r.compile_id, r.signatures, r.calls))

    x = torch.randn(1, 8, 64)
    with torch.no_grad():
        before = compiled(x)
        model.norm.weight.mul_(2.0)
        model.layers[0].mlp.up_proj.weight.add_(0.5)
        after = compiled(x)
        compare("llama after an in-place weight update", after, model(x))
    if torch.allclose(before, after):
        fail("the weight update changed nothing")
    print("weights rewritten: %d" % sum(r.weight_rewrites for r in pd.report().graphs))


def case_hf_llama(_):
    """A transformers LlamaForCausalLM (tiny config, fixed seed) through torch.compile."""
    import transformers
    for impl in sys.argv[3:] or ("sdpa",):
        config = transformers.LlamaConfig(
            vocab_size=100, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
            attn_implementation=impl)
        torch.manual_seed(0)
        model = transformers.LlamaForCausalLM(config).eval()
        ids = torch.randint(0, 100, (1, 8), generator=torch.Generator().manual_seed(1))
        mask = torch.ones_like(ids)
        t0 = time.time()
        with torch.no_grad():
            want = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
            compiled = torch.compile(model, backend="pimc")
            got = compiled(input_ids=ids, attention_mask=mask, use_cache=False).logits
        compare("hf llama %s (with attention_mask)" % impl, got, want)
        rec, = last_graphs(1)
        ran_on_pimc("hf llama", rec, 1)
        print("hf llama %s: 1 graph, %d ATen ops, raised: %s" % (impl, rec.aten_ops, llm_ops(rec)))
        print("hf llama %s: timing: compile + first call %.2f s" % (impl, time.time() - t0),
              file=sys.stderr)

        # Without an attention_mask, transformers checks position_ids for packed sequences with
        # torch.diff when it is being traced (masking_utils.find_packed_sequence_indices).
        torch._dynamo.reset()
        with torch.no_grad():
            want = model(input_ids=ids, use_cache=False).logits
            got = torch.compile(model, backend="pimc")(input_ids=ids, use_cache=False).logits
        compare("hf llama %s without attention_mask" % impl, got, want)
        rec, = last_graphs(1)
        ran_on_pimc("hf llama without attention_mask", rec, 1)
        print("hf llama %s without attention_mask: raised: %s" % (impl, llm_ops(rec)))
        torch._dynamo.reset()


class GraphBreaks(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(16, 32)
        self.down = nn.Linear(32, 16)

    def forward(self, x):
        h = F.silu(self.up(x))
        print("inside forward: hidden", tuple(h.shape))
        scale = h.abs().amax().item()
        return self.down(h / scale) * 0.5


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        angle = torch.atan2(h, x)
        return torch.roll(angle, 1, dims=-1) + h


class Counter(nn.Module):
    """Updates a buffer in place: not a pure graph."""

    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls += 1
        return x * self.calls


def case_breaks(_):
    torch.manual_seed(0)
    model = GraphBreaks().eval()
    x = torch.randn(2, 16)
    rep = pd.explain(model, x)
    print(rep)
    if len(rep.interpreted()) != 3 or rep.max_diff > ATOL:
        fail("expected 3 graphs on pimc matching eager")
    # torch's own account of the same function.
    theirs = torch._dynamo.explain(model)(x)
    print("torch._dynamo.explain: %d graphs, %d graph breaks"
          % (theirs.graph_count, theirs.graph_break_count))
    if theirs.graph_break_count != len(rep.graph_breaks):
        fail("graph break counts differ")


def case_unsupported(_):
    torch.manual_seed(0)
    model = Unsupported().eval()
    x = torch.randn(4, 8)
    try:
        with torch.no_grad():
            torch.compile(model, backend="pimc")(x)
        fail("expected the strict error")
    except torch._dynamo.exc.BackendCompilerFailed as e:
        print("strict: %s: %s" % (type(e.inner_exception).__name__, e.inner_exception))
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            got = torch.compile(model, backend="pimc", options={"fallback": "eager"})(x)
            want = model(x)
    for w in caught:
        if "pimc" in str(w.message):
            print("warning: %s" % w.message)
    if not torch.equal(got, want):
        fail("the eager fallback differs from eager")
    print(pd.report())

    # A graph that updates a buffer: refused by name, and tracing it changed nothing.
    torch._dynamo.reset()
    model = Counter().eval()
    try:
        with torch.no_grad():
            torch.compile(model, backend="pimc")(x)
        fail("expected the in-place update to be refused")
    except torch._dynamo.exc.BackendCompilerFailed as e:
        print("in place: %s" % e.inner_exception)
    print("buffer after the refused compile: %g" % model.calls.item())


def case_options(_):
    torch.manual_seed(0)
    model = Unsupported().eval()
    x = torch.randn(4, 8)
    for opts in ({"target": "targets/hbm3-pim.json"}, {"fallback": "maybe"}, {"speed": 1}):
        torch._dynamo.reset()
        try:
            with torch.no_grad():
                torch.compile(model, backend="pimc", options=opts)(x)
            fail("options %r accepted" % opts)
        except torch._dynamo.exc.BackendCompilerFailed as e:
            print("options %r: %s" % (opts, e.inner_exception))
    # Autograd on: the backend would drop the graph's gradients, so it refuses.
    torch._dynamo.reset()
    lin = nn.Linear(8, 8)
    try:
        torch.compile(lin, backend="pimc")(x)
        fail("grad mode accepted")
    except torch._dynamo.exc.BackendCompilerFailed as e:
        print("grad: %s" % e.inner_exception)
    # inference_mode works like no_grad.
    torch._dynamo.reset()
    with torch.inference_mode():
        compare("linear under inference_mode", torch.compile(lin, backend="pimc")(x), lin(x))


CASES = {"bridge": case_bridge, "shapes": case_shapes, "hf-llama": case_hf_llama,
         "breaks": case_breaks, "unsupported": case_unsupported, "options": case_options}

if __name__ == "__main__":
    names = sys.argv[1].split(",") if len(sys.argv) > 1 else []
    if not names or any(n not in CASES for n in names):
        sys.exit("usage: dynamo_cases.py CASE[,CASE...] [DIR [ATTN_IMPL...]]; cases: %s"
                 % ", ".join(CASES))
    for n in names:
        print("== %s" % n)
        CASES[n](sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "-" else None)
        torch._dynamo.reset()
        pd.reset()
