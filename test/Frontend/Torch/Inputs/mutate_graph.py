"""Write one broken copy of a bridge export per case: mutate_graph.py SRC_DIR OUT_DIR.

Each OUT_DIR/<case>/ holds graph.json (one defect) and the source's graph.safetensors, for
check-errors.test. The source is the edge_models.py:Constants export."""

import json
import os
import shutil
import sys


def node(g, name):
    return next(n for n in g["nodes"] if n["name"] == name)


def set_meta_shape(g):
    node(g, "p_proj_weight")["meta"]["shape"] = [4, 5]


CASES = {
    "no_format": lambda g: g.pop("format"),
    "dup_name": lambda g: node(g, "mul").update(name="addmm"),
    "forward_ref": lambda g: node(g, "t").update(args=[{"node": "mul"}]),
    "bad_output_index": lambda g: g["nodes"][-1]["args"][0][2].update(output=2),
    "whole_multi_output": lambda g: g["nodes"][-1]["args"][0][2].pop("output"),
    "index_single_output": lambda g: node(g, "mul").update(args=[{"node": "addmm", "output": 0},
                                                                  {"node": "clamp"}]),
    "bad_kind": lambda g: node(g, "a").update(kind="weight"),
    "no_target": lambda g: node(g, "p_proj_bias").pop("target"),
    "bad_dtype": lambda g: node(g, "b").update(meta={"dtype": "float8", "shape": [2, 4]}),
    "raw_nan": lambda g: node(g, "clamp")["args"].__setitem__(2, float("nan")),
    "bad_tag": lambda g: node(g, "clamp")["args"].__setitem__(2, {"complex": [1, 2]}),
    "inline_short": lambda g: node(g, "c_tensor_constant0")["value"]["tensor"]["data"].pop(),
    "output_not_last": lambda g: g["nodes"].insert(0, g["nodes"].pop()),
    "missing_key": lambda g: node(g, "p_proj_bias").update(target="proj.bias2"),
    "shape_vs_file": set_meta_shape,
    "unknown_op": lambda g: node(g, "clamp").update(target="aten.clampp"),
    "unknown_overload": lambda g: node(g, "clamp").update(overload="Tensorr"),
    "unknown_kwarg": lambda g: node(g, "clamp").update(kwargs={"maximum": 4.0}),
    "missing_arg": lambda g: node(g, "addmm").update(args=[{"node": "p_proj_bias"}]),
    "wrong_meta": lambda g: node(g, "mul")["meta"].update(shape=[2, 5]),
}


def main():
    src, out = sys.argv[1], sys.argv[2]
    for case, edit in CASES.items():
        with open(os.path.join(src, "graph.json")) as f:
            g = json.load(f)
        edit(g)
        d = os.path.join(out, case)
        os.makedirs(d, exist_ok=True)
        shutil.copyfile(os.path.join(src, "graph.safetensors"), os.path.join(d, "graph.safetensors"))
        for extra in ("inputs.safetensors", "outputs.safetensors"):
            if os.path.exists(os.path.join(src, extra)):
                shutil.copyfile(os.path.join(src, extra), os.path.join(d, extra))
        with open(os.path.join(d, "graph.json"), "w") as f:
            json.dump(g, f)      # allow_nan: raw_nan writes a bare NaN on purpose


if __name__ == "__main__":
    main()
