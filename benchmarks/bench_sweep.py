"""Time the what-if sweep on the bundled sample, per backend and worker count.

The sample (examples/sweeps/rl_cap.toml, 20 variants x 3 seeds, 60 simulations of
5,120-10,240 sync-RL rollouts) is small on purpose: it shows the fixed cost of each
backend. Prints the median of several runs. Ray is timed only when importable.
Run: python benchmarks/bench_sweep.py
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

from sandbox_fleet import jsonio
from sandbox_fleet.sweep import run_sweep

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sweeps" / "rl_cap.toml"
VARY = ["fleet.cap=128:640:64,unbounded", "workload.batch=256,512"]
#: 20 caps x 3 seeds of a 500-rollout M/M/c: 60 simulations of a few milliseconds each.
TINY = Path(__file__).resolve().parent / "data" / "tiny_sweep.toml"
TINY_VARY = ["fleet.cap=2:21:1"]


def tiny_ratio(rounds: int = 7) -> None:
    """1 vs 2 local workers on the tiny sweep, alternating; target: 2 workers not slower."""
    times: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(rounds):
        for w in (1, 2):
            t0 = time.perf_counter()
            run_sweep(TINY, TINY_VARY, seeds=3, target="queue_wait_s.mean", workers=w)
            times[w].append(time.perf_counter() - t0)
    m1, m2 = statistics.median(times[1]), statistics.median(times[2])
    print(f"tiny sweep, 60 simulations: 1 worker {m1:.3f} s ({min(times[1]):.3f}-{max(times[1]):.3f}), "
          f"2 workers {m2:.3f} s ({min(times[2]):.3f}-{max(times[2]):.3f}): 2/1 = {m2 / m1:.2f} (target <= 1.0), "
          f"median of {rounds} alternating")


def median_s(fn, runs: int = 3) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(runs):
        t0 = time.perf_counter()
        out = jsonio.dumps(fn())
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    cores = os.cpu_count() or 1
    configs = [("local", 1), ("local", cores)]
    try:
        import ray  # noqa: F401

        configs.append(("ray", cores))
    except ImportError:
        print("ray: not installed, skipped (pip install 'sandbox-fleet[ray]')")
    outputs = set()
    for backend, workers in configs:
        t, out = median_s(lambda: run_sweep(SAMPLE, VARY, seeds=3, target="step_s.mean",
                                            backend=backend, workers=workers))
        outputs.add(out)
        print(f"sweep sample, 60 simulations, {backend} x {workers} workers: {t:.2f} s ({60 / t:.1f} sims/s)")
    print(f"identical output across backends: {len(outputs) == 1}")
    tiny_ratio()


if __name__ == "__main__":
    main()
