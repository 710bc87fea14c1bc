"""Run an `export --hf --mode decode` graph as a generator would: hf_decode_chain.py OUTDIR.

Starting from the states' "init" (zeros), the graph (replayed node by node with torch's ATen
ops) runs once per token of hf.prompt_ids at cache_position 0, 1, ...; after each step every
"mutations" output replaces its input. The state it reaches must equal the golden's state inputs
(which the eager module produced), and one more step on the golden's input_ids/cache_position
must give the golden logits and updated states. So the JSON and its mutation mapping are all a
consumer needs to decode token after token.
"""

import json
import os
import sys

import torch

from pimc_torch import graph_format as gf, replay
from pimc_testgen import safetensors_io as st


def run(graph, params, feed):
    env = {}
    for n in graph["nodes"]:
        if n["op"] == "placeholder":
            if n["kind"] == "input":
                env[n["name"]] = feed[n["name"]]
            elif "value" in n:
                env[n["name"]] = replay.tensor_of(n["value"]["tensor"])
            else:
                env[n["name"]] = params[n["target"]]
        elif n["op"] == "call_function":
            op = replay.resolve_op(n, "graph.json")
            env[n["name"]] = op(*decode(n["args"], env),
                                **{k: decode(v, env) for k, v in n["kwargs"].items()})
        else:
            return [decode(r, env) for r in n["args"][0]]


def decode(v, env):
    if isinstance(v, list):
        return [decode(x, env) for x in v]
    if isinstance(v, dict) and "node" in v:
        val = env[v["node"]]
        return val[v["output"]] if "output" in v else val
    if isinstance(v, dict):
        tag, x = next(iter(v.items()))
        if tag == "float":
            return gf.decode_float(v)
        if tag == "dtype":
            return getattr(torch, x)
        if tag == "device":
            return torch.device(x)
        if tag in ("layout", "memory_format"):
            return getattr(torch, x)
        if tag == "tensor":
            return replay.tensor_of(x)
    return v


def main(out):
    graph = gf.load(os.path.join(out, "graph.json"))
    params, _ = st.load_file(os.path.join(out, graph["parameters"]))
    gin, _ = st.load_file(os.path.join(out, "inputs.safetensors"))
    gout, _ = st.load_file(os.path.join(out, "outputs.safetensors"))
    inputs = [n for n in graph["nodes"] if n["op"] == "placeholder" and n["kind"] == "input"]
    muts = graph["mutations"]
    state_names = {m["input"] for m in muts}
    user = [n["name"] for n in inputs if n["name"] not in state_names]
    assert user == ["input_ids", "cache_position"], user
    state = {}
    for n in inputs:
        if n["name"] in state_names:
            assert next(m for m in muts if m["input"] == n["name"])["init"] == "zeros"
            state[n["name"]] = torch.zeros(n["meta"]["shape"],
                                           dtype=getattr(torch, n["meta"]["dtype"]))

    prompt = torch.tensor(graph["hf"]["prompt_ids"], dtype=torch.long)
    with torch.no_grad():
        for p in range(prompt.shape[1]):
            outs = run(graph, params, dict(state, input_ids=prompt[:, p:p + 1],
                                           cache_position=torch.tensor([p])))
            state = {m["input"]: outs[m["output"]] for m in muts}
        worst = 0.0
        for i, n in enumerate(inputs):
            if n["name"] in state_names:
                want = gin["input_%d" % i]
                err = (state[n["name"]].double() - want.double()).abs().max().item()
                if err > 1e-5:
                    sys.exit("state %s after %d steps differs from the golden input_%d by %g"
                             % (n["name"], prompt.shape[1], i, err))
                worst = max(worst, err)
        outs = run(graph, params, dict(state, input_ids=gin["input_0"],
                                       cache_position=gin["input_1"]))
        for i, got in enumerate(outs):
            err = (got.double() - gout["output_%d" % i].double()).abs().max().item()
            if err > 1e-5:
                sys.exit("step %d: output_%d differs from the golden by %g"
                         % (prompt.shape[1] + 1, i, err))
            worst = max(worst, err)
    print("chained %d steps from the zero state: %d state tensors and the logits of step %d match "
          "the eager goldens (max abs error %.2g)"
          % (prompt.shape[1] + 1, len(muts), prompt.shape[1] + 1, worst))


if __name__ == "__main__":
    main(sys.argv[1])
