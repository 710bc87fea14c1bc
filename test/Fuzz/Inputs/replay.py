"""Replays every fuzz harness over its committed corpus and reproducers (docs/fuzzing.md).

usage: replay.py <fuzz build dir> <fuzz source dir>

Each harness pimc-fuzz-<name> in the build directory runs over fuzz/corpus/<name> (which must
exist and be non-empty) and fuzz/reproducers/<name> (if present); any crash or non-zero exit
fails. A corpus without a harness, or a harness without a corpus, fails too.
"""
import os
import subprocess
import sys


def main(build, src):
    harnesses = sorted(f[len("pimc-fuzz-"):] for f in os.listdir(build)
                       if f.startswith("pimc-fuzz-") and os.access(os.path.join(build, f), os.X_OK))
    corpora = sorted(os.listdir(os.path.join(src, "corpus")))
    repro_root = os.path.join(src, "reproducers")
    repros = sorted(d for d in os.listdir(repro_root)
                    if os.path.isdir(os.path.join(repro_root, d)))
    bad = ([("harness without corpus", h) for h in harnesses if h not in corpora] +
           [("corpus without harness", c) for c in corpora if c not in harnesses] +
           [("reproducers without harness", r) for r in repros if r not in harnesses])
    for what, name in bad:
        print("error: %s: %s" % (what, name))
    failed = bool(bad)
    for h in harnesses:
        dirs = [os.path.join(src, "corpus", h)]
        if h in repros:
            dirs.append(os.path.join(repro_root, h))
        n = sum(len(os.listdir(d)) for d in dirs)
        r = subprocess.run([os.path.join(build, "pimc-fuzz-" + h)] + dirs,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0 or n == 0:
            print("error: pimc-fuzz-%s exited %d on %d input(s):\n%s"
                  % (h, r.returncode, n, r.stdout[-4000:]))
            failed = True
        else:
            print("%s: %s" % (h, r.stdout.strip().splitlines()[-1]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
