"""Time `build_report` and `run_checks` on a full-size summary (2,000-point series, 60 hold bins).

Prints the median of several runs and the page size. Run: python benchmarks/bench_report.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from sandbox_fleet.report import build_report, run_checks

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "report" / "fixtures" / "fleet.json"


def full_summary() -> dict:
    m = json.loads(FIXTURE.read_text(encoding="utf-8"))
    rng = np.random.default_rng(7)
    t = np.sort(rng.uniform(0, 1_471_279.1, 1999)).tolist()
    m["concurrency"]["series"] = {"t_s": [0.0] + t, "level": rng.integers(0, 3001, 2000).tolist()}
    edges = np.geomspace(1, 30_000, 61).tolist()
    m["hold_s"]["histogram"] = {"edges_s": edges, "counts": rng.integers(0, 20_000, 60).tolist()}
    m["tokens"]["turns_histogram"] = {str(n): int(c) for n, c in zip(range(1, 201), rng.integers(1, 5000, 200))}
    m["tokens"]["median_input_by_turns"] = {str(n): 824 * n * (n + 1) / 2 for n in range(1, 201)}
    m["by_model"] = {f"model-{i}": {"rows": 1000, "exception_rate": i / 40} for i in range(8)}
    return m


def median_s(fn, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    m = full_summary()
    html = build_report(m)
    print(f"build_report: median {median_s(lambda: build_report(m)):.3f} s, page {len(html) / 1e6:.2f} MB")
    print(f"run_checks:   median {median_s(lambda: run_checks(m), 20) * 1e3:.2f} ms")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
