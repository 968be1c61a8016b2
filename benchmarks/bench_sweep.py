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


if __name__ == "__main__":
    main()
