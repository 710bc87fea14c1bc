"""Write one broken copy per case of the graph keys `export --hf` adds (docs/torch-export-hf.md):
hf_mutate_ext.py --decode|--dynamic SRC_DIR OUT_DIR.

--decode: SRC_DIR is a `--mode decode` export ("mutations"); --dynamic: a `--dynamic-seq` one
("dynamic_dims", "sym_shape"). Each OUT_DIR/<case>/graph.json has one defect; `pimc_torch check`
must reject it before replaying (so no parameters file is needed)."""

import json
import os
import sys


def first_sym_node(g):
    """The first node whose sym_shape has a plain-symbol entry, and that entry's index."""
    for n in g["nodes"]:
        for i, e in enumerate(n.get("sym_shape", [])):
            if isinstance(e, str) and e.isidentifier():
                return n, i
    raise SystemExit("no node with a symbolic dim")


def sym_plus_one(g):
    n, i = first_sym_node(g)
    n["sym_shape"][i] += " + 1"


def sym_unknown(g):
    n, i = first_sym_node(g)
    n["sym_shape"][i] = "q9"


def sym_rank(g):
    n, _ = first_sym_node(g)
    n["sym_shape"].append(1)


DECODE_CASES = {
    "mut_output_range": lambda g: g["mutations"][0].update(output=99),
    "mut_not_input": lambda g: g["mutations"][0].update(input=g["nodes"][0]["name"]),
    "mut_meta": lambda g: g["mutations"][0].update(output=0),
    "mut_twice": lambda g: g["mutations"][1].update(input=g["mutations"][0]["input"]),
    "mut_init": lambda g: g["mutations"][0].update(init="ones"),
    "mut_keys": lambda g: g["mutations"][0].pop("buffer"),
}
DYNAMIC_CASES = {
    "dyn_example": lambda g: g["dynamic_dims"][0].update(
        example=g["dynamic_dims"][0]["example"] + 1),
    "dyn_range": lambda g: g["dynamic_dims"][0].update(
        range=[g["dynamic_dims"][0]["example"] + 1, None]),
    "dyn_dim": lambda g: g["dynamic_dims"][0].update(dim=5),
    "sym_plus_one": sym_plus_one,
    "sym_unknown": sym_unknown,
    "sym_rank": sym_rank,
}


def main():
    which, src, out = sys.argv[1:4]
    cases = {"--decode": DECODE_CASES, "--dynamic": DYNAMIC_CASES}[which]
    for case, edit in cases.items():
        with open(os.path.join(src, "graph.json")) as f:
            g = json.load(f)
        edit(g)
        d = os.path.join(out, case)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "graph.json"), "w") as f:
            json.dump(g, f)


if __name__ == "__main__":
    main()
