"""The closed loop beside a base checkout: this tree's engine, the base's, and the SimPy model of the same
loop (``bench_closed_loop.simpy_loop``), alternating in one run; then whole ``simulate --json`` processes of
a ~1,000-rollout inference scenario, alternating base and this tree.

In process: ``closed_loop_rst.toml`` scaled by ``--scale``; each engine run is the second ``run_workloads``
of a fresh process of its tree (the first loads the compiled kernel), so the figures are the engine once
loaded; the in-run ratio is SimPy's CPU over each engine's, medians of ``--rounds``. The mean hold of every
run is printed (the same bits for both trees: the same model). Whole processes: ``inference_pool.toml``
with ``count`` set to 1,000 (about 11,000 model calls), wall and CPU of fresh processes, medians.

Usage: python benchmarks/bench_closed_loop_vs_base.py --base /path/to/base/checkout [--scale 0.05]
       [--rounds 3] [--process-rounds 5]
(the base checkout needs its own ``.venv``: ``--base`` is the tree, ``BASE/.venv/bin/python`` runs it.)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

CODE = """
import json, sys
sys.path.insert(0, {bench!r})
from bench_closed_loop import ours, scaled, simpy_loop
if {simpy}:
    w, hold, c = simpy_loop(scaled({scale}))
    print(json.dumps([w, c, 0, hold]))
else:
    ours(scaled({scale}))
    w, hold, ev, c = ours(scaled({scale}))
    print(json.dumps([w, c, ev, hold]))
"""


def child(tree: Path, scale: float, simpy: bool) -> list:
    code = CODE.format(bench=str(tree / "benchmarks"), scale=scale, simpy=simpy)
    out = subprocess.run([str(tree / ".venv" / "bin" / "python"), "-c", code], cwd=tempfile.gettempdir(),
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _figures(out: bytes) -> str:
    """The output without its null top-level keys: a later tree appends summary fields (null here) that
    the base does not have; every figure must still be the same."""
    return json.dumps({k: v for k, v in json.loads(out).items() if v is not None}, sort_keys=True)


def process(tree: Path, scenario: Path) -> tuple[float, float, bytes]:
    """Wall and CPU seconds of one ``simulate --json`` process of ``tree``, and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([str(tree / ".venv" / "bin" / "sandbox-fleet"), "simulate", str(scenario), "--json"],
                         capture_output=True, check=True).stdout
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--scale", type=float, default=0.05)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--process-rounds", type=int, default=5)
    a = ap.parse_args()
    trees = {"base": a.base.resolve(), "this": HERE}
    print(f"load average {os.getloadavg()[0]:.1f}")
    res: dict[str, list] = {"base": [], "this": [], "simpy": []}
    for _ in range(a.rounds):
        for name in ("base", "this", "simpy"):
            res[name].append(child(trees["base" if name == "simpy" else name], a.scale, name == "simpy"))
    med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for k, v in res.items()}
    ev = res["this"][0][2]
    print(f"closed_loop_rst.toml at scale {a.scale}: {ev:,} events, medians of {a.rounds} alternating rounds "
          "(each engine run the second of a fresh process: the kernel loaded)")
    for k, (w, c) in med.items():
        tail = "" if k == "simpy" else f"; SimPy / this: {med['simpy'][0] / w:.1f}x wall, {med['simpy'][1] / c:.1f}x CPU"
        print(f"  {k:<6} {w:7.3f} s wall, {c:7.3f} s CPU, mean hold {res[k][0][3]!r}{tail}")
    print(f"  this / base CPU {med['this'][1] / med['base'][1]:.2f}x, wall {med['this'][0] / med['base'][0]:.2f}x")

    src = (HERE / "examples" / "scenarios" / "inference_pool.toml").read_text()
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "inference_pool_1000.toml"
        scenario.write_text(re.sub(r"(?m)^count = .*$", "count = 1000", src))
        for tree in trees.values():  # the numba cache warm for both before the rounds
            process(tree, scenario)
        runs: dict[str, list] = {"base": [], "this": []}
        outs = set()
        for _ in range(a.process_rounds):
            for k, tree in trees.items():
                wall, cpu, out = process(tree, scenario)
                runs[k].append((wall, cpu))
                outs.add(_figures(out))
    assert len(outs) == 1, "the two trees' figures differ"
    pm = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for k, v in runs.items()}
    print(f"inference_pool.toml at 1,000 rollouts, whole simulate --json processes, medians of {a.process_rounds} "
          "(identical figures: the outputs' bytes but for summary keys one tree adds as null)")
    for k, (w, c) in pm.items():
        print(f"  {k:<6} {w:6.2f} s wall, {c:6.2f} s CPU")
    print(f"  this / base: wall {pm['this'][0] / pm['base'][0]:.2f}x, CPU {pm['this'][1] / pm['base'][1]:.2f}x")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
