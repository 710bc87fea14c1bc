# Refreshes per pseudo-channel of a `pimsim run --stats` file against the
# run's duration / nREFI: refresh-phases.test.
import json, sys

stats, target = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
refi = target["timings"]["nREFI"]
org = target["organization"]
pchs = org["stacks"] * org["channels"] * org["pseudo_channels"]
phases = stats["phases"]
duration = stats["seconds"] * 1e12 / target["clock"]["tck_ps"]
per_pch = stats["pim"]["commandCounts"]["REFab"] / pchs
print(f"{len(phases)} phases, longest {max(p['pim_cycles'] for p in phases)} cycles; "
      f"{per_pch} refreshes per pCH in {duration:.0f} cycles, nREFI {refi}")
ok = (all(p["pim_cycles"] < refi for p in phases) and duration > 4 * refi
      and abs(per_pch - duration / refi) <= 1)
sys.exit(0 if ok else 1)
