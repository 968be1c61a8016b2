"""Time the planner: the published plan end to end, FFD on a large mix, and the RL-schedule search.

Prints the median of several runs. Run: python benchmarks/bench_plan.py
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from sandbox_fleet.measure import load_measure
from sandbox_fleet.plan import PlanOptions, make_plan, rl_schedule_target
from sandbox_fleet.plan.packing import concurrent_mix, ffd
from sandbox_fleet.plan.slots import ResourceRequest

PUBLISHED = Path(__file__).resolve().parents[1] / "examples" / "rst-published.json"


def median_s(fn, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    summary = load_measure(PUBLISHED)  # the model the stages take, read once
    t = median_s(lambda: make_plan(summary, PlanOptions(node_type="seed-96c")))
    print(f"plan, published summary, whole catalog: {t * 1e3:.1f} ms")

    rng = np.random.default_rng(3)
    reqs = [ResourceRequest(float(c), float(m), float(d)) for c, m, d in zip(rng.integers(1, 9, 50), rng.integers(1, 33, 50) * 1024, rng.integers(1, 41, 50) * 2048)]
    counts = concurrent_mix(rng.integers(1, 1000, 50).tolist(), 100_000)
    node = {"cpu": 96.0, "memory": 393_216.0, "disk": 4_194_304.0, "gpu": 0.0}
    box = {}
    t = median_s(lambda: box.setdefault("p", ffd(reqs, counts, node)))
    p = box["p"]
    print(f"ffd, 100,000 sandboxes of 50 request kinds: {t * 1e3:.1f} ms ({p.nodes} nodes, lower bound {p.lower_bound})")

    t = median_s(lambda: rl_schedule_target(summary, 512, 300.0), runs=3)
    print(f"rl schedule search, batch 512, 16 replications x 20 steps: {t:.2f} s")
    t = median_s(lambda: rl_schedule_target(summary, 4096, 300.0), runs=3)
    print(f"rl schedule search, batch 4,096, 16 replications x 20 steps (target ~10 s): {t:.2f} s")
    t = median_s(lambda: make_plan(summary, PlanOptions(passing_per_hour=400, shape="smooth")), runs=3)
    print(f"plan --passing-per-hour 400 --shape smooth: {t:.2f} s")

    counts = concurrent_mix(rng.integers(1, 1000, 50).tolist(), 10**9)
    t = median_s(lambda: box.__setitem__("p", ffd(reqs, counts, node)))
    p = box["p"]
    print(f"ffd, 10**9 sandboxes of 50 request kinds: {t * 1e3:.1f} ms ({p.nodes:,} nodes in {len(p.groups)} groups)")

    t = median_s(lambda: make_plan(summary, PlanOptions(concurrency=10**9)))
    print(f"plan --concurrency 10**9, published summary, in process: {t * 1e3:.1f} ms")
    t, rss = _cli(["plan", str(PUBLISHED), "--concurrency", str(10**9), "--json"])
    print(f"sandbox-fleet plan --concurrency 10**9 --json, whole CLI process: {t:.2f} s, peak RSS {rss:.0f} MiB")


def _cli(args: list[str], runs: int = 5) -> tuple[float, float]:
    """Median wall time of the CLI in a fresh process, and the largest child peak RSS (MiB)."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", *args], check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


if __name__ == "__main__":
    main()
