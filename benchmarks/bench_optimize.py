"""Time ``sandbox-fleet optimize examples/rst-published.json --passing-per-hour 400 --scale F`` (issue 14).

Target: <= 5 minutes on two cores at ``--scale 0.1``. Prints the wall time, the CPU time of this
process and its workers, the configurations and simulations, how long one simulation took on
average (worker CPU / simulations), and the winner. Run:
``python benchmarks/bench_optimize.py [--scale 0.1] [--workers 2] [--runs 1]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
from pathlib import Path

from sandbox_fleet.optimize import run_optimize

INPUT = Path(__file__).resolve().parents[1] / "examples" / "rst-published.json"


def _cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def one(scale: float, workers: int, target: float) -> tuple[float, float, dict]:
    t0, c0 = time.perf_counter(), _cpu_s()
    s = run_optimize(INPUT, passing_per_hour=target, scale=scale, workers=workers).summary
    return time.perf_counter() - t0, _cpu_s() - c0, s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=0.1)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--passing-per-hour", type=float, default=400.0)
    a = ap.parse_args()
    walls, cpus, outs = [], [], set()
    for _ in range(a.runs):
        wall, cpu, s = one(a.scale, a.workers, a.passing_per_hour)
        walls.append(wall)
        cpus.append(cpu)
        b = s["best"]
        outs.add((b["sandbox_cap"], b["gpu"], b["replicas"], b["caching"], round(b["usd_per_h"], 6)))
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    print(f"optimize rst-published.json --passing-per-hour {a.passing_per_hour:g} --scale {a.scale:g}, "
          f"{a.workers} workers: {wall:.1f} s wall (median of {a.runs}; {min(walls):.1f}-{max(walls):.1f}), "
          f"{cpu:.1f} s CPU with workers (target <= 300 s wall on two cores)")
    print(f"  {s['evaluated']} configurations, {s['simulations']} simulations, {cpu / s['simulations']:.2f} s CPU "
          f"per simulation; pruned {s['pruned']}")
    print(f"  winner: cap {b['sandbox_cap']:,} ({b['nodes']} x {b['node_type']}, {b['tier']}), {b['replicas']} x "
          f"{b['gpus_per_replica']} {b['gpu']} ({'cache' if b['caching'] else 'no cache'}), ${b['usd_per_h']:.2f}/h, "
          f"{b['passing_per_hour']:.1f} passing/h (95% lower bound {b['passing_per_hour_lower']:.1f}); "
          f"{len(b['stepped_up_from'])} cheaper point(s) set aside; same winner every run: {len(outs) == 1}")


if __name__ == "__main__":
    main()
