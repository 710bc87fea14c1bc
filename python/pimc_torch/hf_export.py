"""`python -m pimc_torch export --hf config.json`: a transformers causal LM, built from a config
with seeded random weights, exported through torch.export (docs/torch-export-hf.md).

Modes:
  prefill  forward(input_ids [B, T]) -> logits [B, T, V], no cache (use_cache=False); with
           --dynamic-seq, T is a torch.export Dim recorded in the graph ("dynamic_dims").
  decode   one step with a StaticCache of --max-cache-len positions: transformers' own
           TorchExportableModuleWithStaticCache, called as step(input_ids [B, 1],
           cache_position [1]) -> logits [B, 1, V]. The cache buffers it updates are `input`
           placeholders and extra outputs, mapped by the graph's "mutations" list.

Nothing is downloaded: the model is built with from_config and HF_HUB_OFFLINE is set.
"""

import json
import os
import sys

# Set before transformers is imported: a config never makes it reach the Hub.
os.environ["HF_HUB_OFFLINE"] = "1"

from .cli import CliError       # noqa: E402

MODES = ("prefill", "decode")
ATTN_IMPLEMENTATIONS = ("sdpa", "eager")
# Keys of a real config.json that are not config fields but are fine to carry.
_METADATA_KEYS = {"model_type", "torch_dtype", "transformers_version", "architectures",
                  "auto_map"}


def read_config_json(path):
    """The config file as a dict with a string model_type, or CliError naming the file."""
    if not os.path.isfile(path):
        raise CliError("%s: no such file" % path)
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read().decode("utf-8"))
    except OSError as e:
        raise CliError("%s: cannot read: %s" % (path, e.strerror))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CliError("%s: not valid JSON: %s" % (path, e))
    if not isinstance(data, dict):
        raise CliError("%s: the config must be a JSON object" % path)
    mt = data.get("model_type")
    if not isinstance(mt, str) or not mt:
        raise CliError("%s: no \"model_type\" (a string such as \"llama\")" % path)
    return data


def load_config(path):
    """(transformers config, model_type) for a config.json; unknown model types, fields the
    config class does not have (typos that transformers would keep silently) and invalid values
    are errors naming the file and the field."""
    import dataclasses
    import difflib
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    data = read_config_json(path)
    mt = data["model_type"]
    if mt not in CONFIG_MAPPING:
        raise CliError("%s: model_type '%s' is not a transformers %s model type"
                       % (path, mt, transformers.__version__))
    if mt not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise CliError("%s: model_type '%s' has no causal-LM class in transformers %s "
                       "(AutoModelForCausalLM)" % (path, mt, transformers.__version__))
    if "auto_map" in data:
        raise CliError("%s: \"auto_map\" asks for the model's own remote code; only transformers' "
                       "built-in classes are exported" % path)
    cls = CONFIG_MAPPING[mt]
    kwargs = {k: v for k, v in data.items() if k != "model_type"}
    try:
        config = cls(**kwargs)
    except Exception as e:
        raise CliError("%s: invalid %s config: %s" % (path, cls.__name__,
                                                      " ".join(str(e).split())))
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else None
    if fields is not None:
        # transformers keeps an unknown key as a plain attribute that nothing reads; keys it
        # consumes (v4's rope_theta into rope_parameters) do not stay in __dict__. A near-miss
        # of a field is a typo (num_hiden_layers would silently build the default 32 layers);
        # other unknown keys (legacy ones such as Qwen2.5's use_mrope) are reported and ignored,
        # as transformers does.
        # Phi-3 reads partial_rotary_factor into rope_parameters and keeps the key as well.
        rope = getattr(config, "rope_parameters", None)
        rope = rope if isinstance(rope, dict) else {}
        unknown = sorted(k for k in kwargs if k not in fields and k not in _METADATA_KEYS
                         and not k.startswith("_") and k in vars(config)
                         and not (k in rope and rope[k] == kwargs[k]))
        typos = [(k, difflib.get_close_matches(k, fields, n=1, cutoff=0.8)) for k in unknown]
        typos = [(k, m[0]) for k, m in typos if m]
        if typos:
            raise CliError("%s: %s" % (path, "; ".join(
                "'%s' is not a field of %s (did you mean '%s'?)" % (k, cls.__name__, m)
                for k, m in typos)))
        if unknown:
            print("warning: %s: %s %s not a field of %s; transformers ignores %s"
                  % (path, ", ".join("'%s'" % k for k in unknown),
                     "is" if len(unknown) == 1 else "are", cls.__name__,
                     "it" if len(unknown) == 1 else "them"), file=sys.stderr)
    return config, mt


def randomise_weights(model, seed):
    """Replace transformers' init (std 0.02 matrices, unit norms, zero biases) by a seeded draw
    in which every tensor matters: matrices N(0, 1/fan_in), 1-D ones (norm weights)
    1 + 0.1 N(0, 1), other 1-D (biases) 0.1 N(0, 1). Tied weights are drawn once."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    seen = set()
    with torch.no_grad():
        for _, p in model.named_parameters(remove_duplicate=True):
            if id(p) in seen or not p.is_floating_point():
                continue
            seen.add(id(p))
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            if p.dim() >= 2:
                p.copy_(noise * p.shape[-1] ** -0.5)
            elif bool((p == 1).all()):
                p.copy_(1 + 0.1 * noise)
            else:
                p.copy_(0.1 * noise)


def build_model(config, seed, attn_implementation):
    import torch
    from transformers import AutoModelForCausalLM
    torch.manual_seed(seed)
    try:
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32,
                                                 attn_implementation=attn_implementation,
                                                 trust_remote_code=False)
    except Exception as e:
        raise CliError("AutoModelForCausalLM.from_config(%s) failed: %s: %s"
                       % (type(config).__name__, type(e).__name__, " ".join(str(e).split())))
    randomise_weights(model, seed)
    return model.eval()


def _decode_step_class():
    import torch
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    class DecodeStep(TorchExportableModuleWithStaticCache):
        """transformers' static-cache export module with positional (input_ids,
        cache_position), the two inputs of the step graph."""

        def forward(self, input_ids: torch.Tensor, cache_position: torch.Tensor):
            # The cache layers hold the tensors registered as key_cache_i etc. Non-strict
            # torch.export swaps the module's buffers for traced ones, so point the layers at
            # what the module holds now (in eager they are the same tensors): the updates are
            # then buffer mutations, not writes to captured constants.
            for i, layer in enumerate(self.static_cache.layers):
                layer.keys = getattr(self, "key_cache_%d" % i)
                layer.values = getattr(self, "value_cache_%d" % i)
                layer.cumulative_length = getattr(self, "cumulative_length_%d" % i)
            return super().forward(input_ids=input_ids, cache_position=cache_position)

    return DecodeStep


def _strip_prefix(graph, tensors, prefix):
    """Store the wrapped model's weights under its own (checkpoint) names: 'model.lm_head.weight'
    -> 'lm_head.weight', the same keys as the prefill export."""
    renamed = {}
    for n in graph["nodes"]:
        if n["op"] == "placeholder" and n.get("target", "").startswith(prefix):
            old = n["target"]
            n["target"] = old[len(prefix):]
            renamed[old] = n["target"]
    for old, new in renamed.items():
        if new in tensors:
            raise CliError("weight '%s' would be stored twice" % new)
        tensors[new] = tensors.pop(old)


def _golden_decode_inputs(step, graph, ids_next, prompt):
    """Fill the static cache with the prompt by running the eager step token by token, then run
    the step on ids_next at the next position. Returns (inputs, outputs, d) in the graph's
    order: user inputs then the state as it was before the step; logits then the updated state;
    d the largest difference from the model's logits on the whole sequence."""
    import torch
    from . import exporter
    snapshot = exporter.buffer_snapshot(step)
    buffers = dict(step.named_buffers())
    state = {m["input"]: m["buffer"] for m in graph["mutations"]}
    try:
        with torch.no_grad():
            for p in range(prompt.shape[1]):
                step(prompt[:, p:p + 1], torch.tensor([p], dtype=torch.long))
            pos = torch.tensor([prompt.shape[1]], dtype=torch.long)
            before = {k: buffers[k].detach().clone() for k in state.values()}
            logits = step(ids_next, pos)
            after = {k: buffers[k].detach().clone() for k in state.values()}
    finally:
        exporter.restore_buffers(step, snapshot)
    # The step must compute what the model computes on the whole sequence without a cache.
    with torch.no_grad():
        full = step.model(input_ids=torch.cat([prompt, ids_next], 1), use_cache=False).logits
    diff = float((full[:, -1:] - logits).abs().max())
    if not torch.allclose(full[:, -1:], logits, atol=1e-4, rtol=1e-4):
        raise CliError("the StaticCache decode step does not reproduce the model's logits on the "
                       "full sequence (max |diff| %.3g)" % diff)
    user = [ids_next, pos]
    inputs = []
    for n in graph["nodes"]:
        if n["op"] == "placeholder" and n["kind"] == "input":
            inputs.append(before[state[n["name"]]] if n["name"] in state else user.pop(0))
    outputs = [logits] + [after[m["buffer"]] for m in sorted(graph["mutations"],
                                                              key=lambda m: m["output"])]
    return inputs, outputs, diff


def parse_range(text, what):
    parts = text.split("..")
    try:
        lo, hi = int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        raise CliError("bad %s %r: expected LO..HI, e.g. 1..64" % (what, text))
    if len(parts) != 2 or lo < 1 or hi < lo:
        raise CliError("bad %s %r: need 1 <= LO <= HI" % (what, text))
    return lo, hi


def cmd_export_hf(args):
    """The `export --hf` command (arguments checked before torch is imported)."""
    if args.mode not in MODES:
        raise CliError("--mode must be one of %s" % ", ".join(MODES))
    if args.attn_implementation not in ATTN_IMPLEMENTATIONS:
        raise CliError("--attn-implementation must be one of %s" % ", ".join(ATTN_IMPLEMENTATIONS))
    if args.batch < 1 or args.seq_len < (0 if args.mode == "decode" else 1):
        raise CliError("--batch must be >= 1 and --seq-len >= %d"
                       % (0 if args.mode == "decode" else 1))
    if args.mode == "decode":
        if args.max_cache_len is None:
            raise CliError("--mode decode needs --max-cache-len L (the StaticCache size, which "
                           "fixes the cache tensors' shapes)")
        if not args.seq_len < args.max_cache_len:
            raise CliError("--mode decode: --seq-len %d (tokens already cached) must be less than "
                           "--max-cache-len %d" % (args.seq_len, args.max_cache_len))
        if args.dynamic_seq:
            raise CliError("--dynamic-seq is for --mode prefill (a decode step has one token)")
    elif args.max_cache_len is not None:
        raise CliError("--max-cache-len is for --mode decode")
    if args.seq_range is not None and not args.dynamic_seq:
        raise CliError("--seq-range needs --dynamic-seq")
    if args.onnx:
        raise CliError("--onnx is not supported with --hf")
    if args.tracer not in ("auto", "torch.export"):
        raise CliError("--hf exports with torch.export; --tracer %s is not available"
                       % args.tracer)
    config_path = args.hf
    read_config_json(config_path)       # file errors before the slow imports

    import torch
    import transformers
    from . import exporter, graph_format as gf
    from pimc_testgen import safetensors_io as st
    if not exporter.has_torch_export():
        raise CliError("--hf needs torch.export (torch >= 2.1), torch is %s" % torch.__version__)

    config, model_type = load_config(config_path)
    max_pos = getattr(config, "max_position_embeddings", None)
    positions = args.seq_len + (1 if args.mode == "decode" else 0)
    if args.mode == "decode" and max_pos is not None and args.max_cache_len > max_pos:
        raise CliError("--max-cache-len %d exceeds the config's max_position_embeddings %d"
                       % (args.max_cache_len, max_pos))
    if max_pos is not None and positions > max_pos:
        raise CliError("--seq-len %d exceeds the config's max_position_embeddings %d"
                       % (args.seq_len, max_pos))
    dynamic = None
    if args.dynamic_seq:
        lo, hi = parse_range(args.seq_range, "--seq-range") if args.seq_range \
            else (1, max_pos or 2 * args.seq_len)
        if max_pos is not None and hi > max_pos:
            raise CliError("--seq-range %d..%d exceeds the config's max_position_embeddings %d"
                           % (lo, hi, max_pos))
        if args.seq_len < 2:
            raise CliError("--dynamic-seq needs an example --seq-len of at least 2 (torch.export "
                           "specialises sizes 0 and 1)")
        if not lo <= args.seq_len <= hi:
            raise CliError("--seq-len %d (the example) is outside --seq-range %d..%d"
                           % (args.seq_len, lo, hi))
        dynamic = [{1: torch.export.Dim("seq", min=lo, max=hi)}]

    model = build_model(config, args.seed, args.attn_implementation)
    vocab = config.get_text_config().vocab_size
    gen = torch.Generator().manual_seed(args.seed)
    prompt = torch.randint(0, vocab, (args.batch, args.seq_len), generator=gen)
    tf_root = os.path.dirname(os.path.abspath(transformers.__file__))
    label = "%s:%s" % (os.path.basename(sys.modules[type(model).__module__].__file__),
                       type(model).__name__)
    info = {"model_type": model_type, "class": type(model).__name__,
            "transformers": transformers.__version__, "mode": args.mode,
            "attn_implementation": args.attn_implementation, "seed": args.seed,
            "batch": args.batch}

    if args.mode == "prefill":
        model.config.use_cache = False      # forward(input_ids) returns the logits only
        module, inputs, names = model, [prompt], ["input_ids"]
        info["seq_len"] = args.seq_len
    else:
        model.generation_config.use_cache = True
        model.generation_config.cache_implementation = "static"
        try:
            module = _decode_step_class()(model, batch_size=args.batch,
                                          max_cache_len=args.max_cache_len)
        except Exception as e:
            raise CliError("%s: cannot build a StaticCache decode step: %s: %s"
                           % (config_path, type(e).__name__, " ".join(str(e).split())))
        module.eval()
        ids_next = torch.randint(0, vocab, (args.batch, 1), generator=gen)
        inputs = [ids_next, torch.tensor([args.seq_len], dtype=torch.long)]
        names = ["input_ids", "cache_position"]
        # The tokens whose keys and values the golden's cache holds (step by step from zeros).
        info.update({"max_cache_len": args.max_cache_len, "cached_tokens": args.seq_len,
                     "prompt_ids": prompt.tolist()})

    graph, tensors = exporter.trace(module, inputs, names, state_io=args.mode == "decode",
                                    dynamic_shapes=dynamic, source_root=tf_root)
    if args.mode == "decode":
        if not graph.get("mutations"):
            raise CliError("the decode step updates no cache buffer (expected the StaticCache "
                           "keys and values as state)")
        _strip_prefix(graph, tensors, "model.")
    graph["module"] = label
    graph["hf"] = info

    # Goldens before anything is written: a failed check leaves no directory behind.
    extra_golden, goldens = "", {}
    if args.golden:
        if args.mode == "prefill":
            with torch.no_grad():
                outs = exporter._flatten_outputs(model(prompt), label)
            gin = [prompt]
        else:
            gin, outs, diff = _golden_decode_inputs(module, graph, ids_next, prompt)
            extra_golden = "; step logits = full-sequence logits (max |diff| %.2g)" % diff
        goldens = {"inputs.safetensors": {"input_%d" % i: t.contiguous()
                                          for i, t in enumerate(gin)},
                   "outputs.safetensors": {"output_%d" % i: t.contiguous()
                                           for i, t in enumerate(outs)}}
    created = not os.path.isdir(args.output)
    os.makedirs(args.output, exist_ok=True)
    try:
        with gf.AtomicFiles() as files:
            exporter.write_graph(graph, tensors, os.path.join(args.output, "graph.json"),
                                 os.path.join(args.output, "graph.safetensors"), files)
            for name, ts in goldens.items():
                files.write(os.path.join(args.output, name), st.serialize(ts))
    except BaseException:
        if created and not os.listdir(args.output):
            os.rmdir(args.output)
        raise
    n_ops = sum(1 for n in graph["nodes"] if n["op"] == "call_function")
    extra = ""
    if graph.get("mutations"):
        extra = ", %d state tensors" % len(graph["mutations"])
    if graph.get("dynamic_dims"):
        extra += ", dynamic " + ", ".join("%s[%d] in %s" % (d["input"], d["dim"], d["range"])
                                          for d in graph["dynamic_dims"])
    print("%s (%s, %s): %d ops, %d tensors%s -> %s%s"
          % (label, model_type, args.mode, n_ops, len(tensors), extra, args.output,
             extra_golden))
    return 0
