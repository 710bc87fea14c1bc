"""Decoder-with-past ONNX exports of transformers models (docs/onnx-decoder-with-past.md).

    python -m pimc_torch.onnx_decoder --config llama.json -o OUTDIR [--seed 0]
        [--past-len 5] [--seq-len 3] [--batch 1] [--opset 17] [--static]

Builds `AutoModelForCausalLM.from_config` (float32, seeded weights, eval; the Hub is never
contacted) and exports the form optimum's ONNX exporter writes for text generation with a
KV cache: inputs `input_ids`, `attention_mask`, `position_ids`, `past_key_values.{i}.key`,
`past_key_values.{i}.value` ([B, kv_heads, P, head_dim]); outputs `logits`,
`present.{i}.key`, `present.{i}.value`. torch.onnx.export's TorchScript exporter
(dynamo=False, opset 17, as optimum) with optimum's dynamic axes, or fixed shapes with
--static.

OUTDIR gets model.onnx, inputs.safetensors / outputs.safetensors (input_0.. in graph input
order, output_0.. from eager transformers), ort_outputs.safetensors (onnxruntime's), with
dynamic axes also inputs_alt / outputs_alt / ort_outputs_alt.safetensors (another batch, past
and sequence length, left padding), and manifest.json. onnxruntime must agree with
transformers on every set (max |diff| printed), else nothing is written.
"""

import argparse
import json
import os
import sys
import warnings

# Models are built from configs: transformers must never reach the Hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ORT_ATOL = 1e-4
ORT_RTOL = 1e-4


class DecoderExportError(Exception):
    pass


def load_config(path):
    """A transformers config from a JSON file holding `model_type` and its fields."""
    try:
        with open(path) as f:
            fields = json.load(f)
    except OSError as e:
        raise DecoderExportError("%s: cannot read the config: %s" % (path, e.strerror or e))
    except ValueError as e:
        raise DecoderExportError("%s: not valid JSON: %s" % (path, e))
    if not isinstance(fields, dict) or not isinstance(fields.get("model_type"), str):
        raise DecoderExportError("%s: the config must be a JSON object with a \"model_type\" "
                                 "(e.g. \"llama\")" % path)
    from transformers import AutoConfig
    fields = dict(fields)
    model_type = fields.pop("model_type")
    try:
        return AutoConfig.for_model(model_type, **fields)
    except Exception as e:
        raise DecoderExportError("%s: model_type %r: %s" % (path, model_type, _first_line(e)))


def _first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def build_model(config, seed, attn_implementation=None):
    """AutoModelForCausalLM.from_config under `seed`, float32, eval. transformers initialises
    norm weights to 1 and biases to 0; those 1-D parameters are then drawn around those values
    (1 + 0.1 N, 0.1 N) so that a dropped norm weight or bias shows in the goldens."""
    import torch
    from transformers import AutoModelForCausalLM
    torch.manual_seed(seed)
    kwargs = {"dtype": torch.float32}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    try:
        model = AutoModelForCausalLM.from_config(config, **kwargs)
    except Exception as e:
        raise DecoderExportError("cannot build a causal LM for model_type %r: %s"
                                 % (config.model_type, _first_line(e)))
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                noise = 0.1 * torch.randn(p.shape, generator=gen)
                p.copy_(noise if name.endswith("bias") else 1.0 + noise)
    return model.eval()


def _present_pairs(cache):
    """[(keys, values)] per layer of a transformers cache."""
    layers = getattr(cache, "layers", None)
    if layers is None:
        raise DecoderExportError("the model returned a %s, not a transformers Cache with layers"
                                 % type(cache).__name__)
    return [(layer.keys, layer.values) for layer in layers]


def _forward_cache(out):
    # transformers 5 calls the returned cache `cache` (`past_key_values` before).
    cache = getattr(out, "cache", None)
    return cache if cache is not None else getattr(out, "past_key_values", None)


def make_wrapper(model):
    """A module taking the flat optimum inputs and returning the flat optimum outputs."""
    import torch
    from transformers import DynamicCache

    class DecoderWithPast(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, position_ids, *past):
            pairs = [(past[2 * i], past[2 * i + 1]) for i in range(len(past) // 2)]
            # With the config the cache gets the model's layer types (sliding or full).
            cache = DynamicCache(ddp_cache_data=pairs, config=self.model.config)
            out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                             position_ids=position_ids, cache=cache, use_cache=True)
            flat = [out.logits]
            for k, v in _present_pairs(_forward_cache(out)):
                flat += [k, v]
            return tuple(flat)

    return DecoderWithPast(model)


def kv_shapes(model):
    """(kv_heads, key head_dim, value head_dim) of every layer, read off the cache of a run
    without past."""
    import torch
    ids = torch.zeros(1, 2, dtype=torch.int64)
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=torch.ones(1, 2, dtype=torch.int64),
                    use_cache=True)
    cache = _forward_cache(out)
    if cache is None:
        raise DecoderExportError("the model returned no KV cache (use_cache=True)")
    shapes = []
    for i, (k, v) in enumerate(_present_pairs(cache)):
        if k is None or k.dim() != 4 or v is None or v.dim() != 4 or k.shape[:3] != v.shape[:3]:
            raise DecoderExportError("layer %d's cache is not [batch, kv_heads, seq, head_dim] "
                                     "keys and values" % i)
        shapes.append((k.shape[1], k.shape[3], v.shape[3]))
    return shapes


def make_inputs(vocab, shapes, batch, past, seq, pad, gen):
    """input_ids, attention_mask (ones, the first row left-padded by `pad`), position_ids as
    transformers' generate derives them from the mask, and N(0, 1) past keys/values."""
    import torch
    ids = torch.randint(0, vocab, (batch, seq), generator=gen)
    mask = torch.ones(batch, past + seq, dtype=torch.int64)
    mask[0, :pad] = 0
    pos = mask.cumsum(-1) - 1
    pos = pos.masked_fill(mask == 0, 1)[:, -seq:].contiguous()
    flat = [ids, mask, pos]
    for heads, kdim, vdim in shapes:
        flat.append(torch.randn(batch, heads, past, kdim, generator=gen))
        flat.append(torch.randn(batch, heads, past, vdim, generator=gen))
    return flat


def io_names(n_layers):
    inputs = ["input_ids", "attention_mask", "position_ids"]
    outputs = ["logits"]
    for i in range(n_layers):
        inputs += ["past_key_values.%d.key" % i, "past_key_values.%d.value" % i]
        outputs += ["present.%d.key" % i, "present.%d.value" % i]
    return inputs, outputs


def dynamic_axes(inputs, outputs):
    """optimum's names for the dynamic dimensions of a decoder with past."""
    total = "past_sequence_length + sequence_length"
    axes = {"input_ids": {0: "batch_size", 1: "sequence_length"},
            "attention_mask": {0: "batch_size", 1: total},
            "position_ids": {0: "batch_size", 1: "sequence_length"},
            "logits": {0: "batch_size", 1: "sequence_length"}}
    for n in inputs[3:]:
        axes[n] = {0: "batch_size", 2: "past_sequence_length"}
    for n in outputs[1:]:
        axes[n] = {0: "batch_size", 2: total}
    return axes


def export(config_path, outdir, seed=0, past=5, seq=3, batch=1, opset=17, static=False,
           alt=None, attn_implementation=None, log=print):
    """Writes the files into `outdir` (created); returns the manifest dict."""
    # The trace fixes transformers' Python branches on the example's shapes; a one-token
    # query takes a GQA shortcut (sdpa's pack_gqa) that is wrong for longer ones, so a
    # dynamic export is traced with T >= 2 (the second set checks T = 1).
    min_seq = 1 if static else 2
    for name, v, lo in (("--past-len", past, 1), ("--seq-len", seq, min_seq),
                        ("--batch", batch, 1)):
        if v < lo:
            raise DecoderExportError("%s must be at least %d%s, got %d"
                                     % (name, lo, "" if lo == 1 else " for a dynamic export",
                                        v))
    if alt is not None and alt[3] >= alt[1]:
        raise DecoderExportError("the second set's padding (%d) must be shorter than its past "
                                 "(%d)" % (alt[3], alt[1]))
    config = load_config(config_path)
    import torch

    model = build_model(config, seed, attn_implementation)
    shapes = kv_shapes(model)
    wrapper = make_wrapper(model).eval()
    in_names, out_names = io_names(len(shapes))

    gen = torch.Generator().manual_seed(seed)
    sets = [("", (batch, past, seq, 0))]
    if not static:
        sets.append(("_alt", alt or (2, past + 3, 1, 2)))
    sets = [(suffix, dims, make_inputs(config.vocab_size, shapes, *dims, gen))
            for suffix, dims in sets]
    goldens = []
    for suffix, _, flat in sets:
        with torch.no_grad():
            try:
                goldens.append([t.contiguous() for t in wrapper(*flat)])
            except Exception as e:
                raise DecoderExportError("the model's forward with past failed: %s"
                                         % _first_line(e))

    created = not os.path.isdir(outdir)
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as e:
        raise DecoderExportError("%s: cannot create the output directory: %s"
                                 % (outdir, e.strerror or e))
    try:
        return _write(outdir, config, config_path, model, wrapper, sets, goldens, in_names,
                      out_names, seed, opset, static, log)
    except BaseException:
        if created:
            try:
                os.rmdir(outdir)         # only when the failed export left it empty
            except OSError:
                pass
        raise


def _write(outdir, config, config_path, model, wrapper, sets, goldens, in_names, out_names,
           seed, opset, static, log):
    """Exports, checks with onnxruntime and writes every file or none."""
    import torch
    import onnx
    import onnxruntime as ort
    from pimc_testgen import safetensors_io as st
    from .graph_format import AtomicFiles

    model_path = os.path.join(outdir, "model.onnx")
    manifest = {"config": os.path.basename(config_path), "model_type": config.model_type,
                "seed": seed, "opset": opset, "exporter": "torch.onnx.export (TorchScript, "
                "dynamo=False)", "attn_implementation": model.config._attn_implementation,
                "dynamic": not static, "sets": {}}
    with AtomicFiles() as files:
        tmp_model = files.path(model_path)
        try:
            with torch.no_grad(), warnings.catch_warnings():
                # The tracer's warnings list the Python-level branches it fixed (see the doc).
                warnings.simplefilter("ignore")
                torch.onnx.export(wrapper, tuple(sets[0][2]), tmp_model, opset_version=opset,
                                  input_names=in_names, output_names=out_names,
                                  dynamic_axes=None if static else dynamic_axes(in_names,
                                                                                out_names),
                                  do_constant_folding=True, dynamo=False)
        except Exception as e:
            raise DecoderExportError("torch.onnx.export (opset %d) failed: %s: %s"
                                     % (opset, type(e).__name__, _first_line(e)))
        try:
            onnx.checker.check_model(tmp_model)
        except Exception as e:
            raise DecoderExportError("the exported model does not pass onnx.checker: %s"
                                     % _first_line(e))
        graph = onnx.load(tmp_model, load_external_data=False).graph
        inits = {t.name for t in graph.initializer}
        graph_inputs = [i.name for i in graph.input if i.name not in inits]
        graph_outputs = [o.name for o in graph.output]
        if graph_outputs != out_names:
            raise DecoderExportError("the exported outputs are %s, expected %s"
                                     % (graph_outputs, out_names))
        unknown = [n for n in graph_inputs if n not in in_names]
        if unknown:
            raise DecoderExportError("the exported model has unexpected inputs %s" % unknown)
        # The TorchScript exporter drops inputs the graph does not read.
        dropped = [n for n in in_names if n not in graph_inputs]
        manifest["inputs"], manifest["outputs"] = graph_inputs, graph_outputs
        manifest["dropped_inputs"] = dropped
        if dropped:
            log("note: the exported graph does not read %s" % ", ".join(dropped))

        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        try:
            sess = ort.InferenceSession(tmp_model, opts, providers=["CPUExecutionProvider"])
        except Exception as e:
            raise DecoderExportError("onnxruntime cannot load the export: %s" % _first_line(e))
        for (suffix, (b, p, t, pad), flat), gold in zip(sets, goldens):
            by_name = dict(zip(in_names, flat))
            feed = {n: by_name[n].numpy() for n in graph_inputs}
            try:
                got = sess.run(None, feed)
            except Exception as e:
                raise DecoderExportError("onnxruntime failed on the%s inputs: %s"
                                         % (" alternative" if suffix else "", _first_line(e)))
            diffs = {}
            for name, g, want in zip(out_names, got, gold):
                g = torch.from_numpy(g)
                if g.shape != want.shape:
                    raise DecoderExportError("onnxruntime's %s is %s, transformers' %s"
                                             % (name, list(g.shape), list(want.shape)))
                diff = (g - want).abs()
                diffs[name] = float(diff.max())
                if not bool((diff <= ORT_ATOL + ORT_RTOL * want.abs()).all()):
                    raise DecoderExportError(
                        "onnxruntime and transformers disagree on %s (inputs%s): max |diff| %.3g "
                        "(tolerance %g + %g |y|)" % (name, suffix, diffs[name], ORT_ATOL,
                                                     ORT_RTOL))
            worst_present = max([v for k, v in diffs.items() if k != "logits"], default=0.0)
            log("inputs%s: batch %d, past %d, seq %d, left pad %d: onnxruntime vs transformers "
                "max |diff| logits %.3g, presents %.3g" % (suffix, b, p, t, pad, diffs["logits"],
                                                          worst_present))
            manifest["sets"]["inputs%s" % suffix] = {
                "batch": b, "past": p, "seq": t, "left_pad": pad,
                "ort_max_abs_diff": diffs}
            files.write(os.path.join(outdir, "inputs%s.safetensors" % suffix), st.serialize(
                {"input_%d" % i: by_name[n].contiguous() for i, n in enumerate(graph_inputs)}))
            files.write(os.path.join(outdir, "outputs%s.safetensors" % suffix), st.serialize(
                {"output_%d" % i: t for i, t in enumerate(gold)}))
            files.write(os.path.join(outdir, "ort_outputs%s.safetensors" % suffix), st.serialize(
                {"output_%d" % i: torch.from_numpy(g).contiguous() for i, g in enumerate(got)}))
        files.write(os.path.join(outdir, "manifest.json"),
                    json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def _alt_spec(text):
    try:
        parts = [int(x) for x in text.split(",")]
    except ValueError:
        parts = []
    if len(parts) != 4 or min(parts[:3]) < 1 or parts[3] < 0:
        raise argparse.ArgumentTypeError("expected BATCH,PAST,SEQ,PAD (e.g. 2,8,1,2), got %r"
                                         % text)
    return tuple(parts)


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m pimc_torch.onnx_decoder",
        description="Export a transformers causal LM, built from a config, as a "
                    "decoder-with-past ONNX model with goldens (docs/onnx-decoder-with-past.md).")
    p.add_argument("--config", required=True, help="JSON file: model_type and config fields")
    p.add_argument("-o", "--output", required=True, metavar="OUTDIR")
    p.add_argument("--seed", type=int, default=0,
                   help="seeds the weights and the inputs (default 0)")
    p.add_argument("--past-len", type=int, default=5, help="P of the first input set (default 5)")
    p.add_argument("--seq-len", type=int, default=3, help="T of the first input set (default 3)")
    p.add_argument("--batch", type=int, default=1, help="B of the first input set (default 1)")
    p.add_argument("--alt", type=_alt_spec, metavar="B,P,T,PAD",
                   help="the second input set: batch, past, sequence length and left padding of "
                        "its first row (default 2,P+3,1,2)")
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--static", action="store_true",
                   help="export at the first set's shapes (no dynamic axes, no second set)")
    p.add_argument("--attn-implementation", choices=("sdpa", "eager"),
                   help="transformers' attention implementation (default: its own choice, sdpa)")
    args = p.parse_args(argv)
    try:
        export(args.config, args.output, seed=args.seed, past=args.past_len, seq=args.seq_len,
               batch=args.batch, opset=args.opset, static=args.static, alt=args.alt,
               attn_implementation=args.attn_implementation)
    except DecoderExportError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
