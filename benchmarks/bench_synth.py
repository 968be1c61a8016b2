"""Benchmark: `sandbox-fleet synth OUT --preset rst --scale 1` end to end, and what it measures.

Target (issue 3, section 8): the scale-1 release written in under 30 s. Each run is a
fresh CLI process into a fresh folder; the median wall time is printed with the
stage times of the last run. ``--check`` then measures the last release with
``measure_paths`` and prints each published figure beside the measured one.

    .venv/bin/python benchmarks/bench_synth.py [--scale 1] [--runs 3] [--seed 1] [--check]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = str(Path(sys.executable).with_name("sandbox-fleet"))


def run_once(out: Path, scale: float, seed: int) -> tuple[float, dict]:
    t = time.perf_counter()
    proc = subprocess.run(
        [CLI, "synth", str(out), "--preset", "rst", "--scale", str(scale), "--seed", str(seed), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - t, json.loads(proc.stdout)


def check(out: Path, scale: float) -> None:
    from sandbox_fleet.measure import measure_paths
    from sandbox_fleet.synth.calibration import PUBLISHED as P

    m = measure_paths([str(out / "trajectories")], tasks=str(out / "tasks"), progress=False) if _takes_progress() else measure_paths(
        [str(out / "trajectories")], tasks=str(out / "tasks")
    )
    m = m.to_json() if hasattr(m, "to_json") else m  # a MeasureSummary since the stages hand models
    c, h, t, o, cov, n = m["concurrency"], m["hold_s"], m["tokens"], m["outcomes"], m["coverage"], m["rows"]
    rows = [
        ("rollouts", P["rollouts"] * scale, n),
        ("span days", P["span_s"] / 86400, m["span_s"] / 86400),
        ("mean concurrency", P["mean_concurrency"] * scale, c["mean"]),
        ("peak", P["peak"] * scale, c["peak"]),
        ("touches", P["touches"] * scale, c["touches"]),
        ("time at peak %", 100 * P["time_at_peak_s"] / P["span_s"], 100 * c["time_at_peak_s"] / m["span_s"]),
        ("hold min", P["hold_min_s"], h["min"]),
        ("hold median", P["hold_median_s"], h["median"]),
        ("hold p99", P["hold_p99_s"], h["p99"]),
        ("hold max", P["hold_max_s"], h["max"]),
        ("hold mean", P["hold_mean_s"], h["mean"]),
        ("hold mean, tokens", P["hold_mean_tokens_s"], h["mean_with_tokens"]),
        ("hold mean, no tokens", P["hold_mean_no_tokens_s"], h["mean_without_tokens"]),
        ("exception %", 100 * P["exception_rate"], 100 * o["exception_rate"]),
        ("pass rate %", 100 * P["pass_rate"], 100 * o["pass_rate"]),
        ("clean pass %", 100 * P["pass_rate_clean"], 100 * o["pass_rate_clean"]),
        ("exception pass %", 100 * P["pass_rate_exception"], 100 * o["pass_rate_exception"]),
        ("no reward %", 100 * P["missing_reward"], 100 * cov["missing_reward"] / n),
        ("no tokens %", 100 * P["missing_tokens"], 100 * cov["missing_tokens"] / n),
        ("no trajectory %", 100 * P["missing_trajectory"], 100 * cov["missing_trajectory"] / n),
        ("prefill tok/s", P["prefill_per_sandbox_s"], t["prefill_per_sandbox_s"]),
        ("decode tok/s", P["decode_per_sandbox_s"], t["decode_per_sandbox_s"]),
        ("turn increment", P["turn_tokens"], t["turn_tokens"]),
        ("R^2 quadratic", 0.9956, t["r2_quadratic"]),
        ("turns median", P["turns_median"], t["turns_median"]),
        ("turns p90", P["turns_p90"], t["turns_p90"]),
        *[(f"median input @{k}", v, t["median_input_by_turns"].get(str(k))) for k, v in P["median_input_by_turns"].items()],
        *[(f"{k} exception %", 100 * v["exception_rate"], 100 * m["by_model"][k]["exception_rate"]) for k, v in P["by_model"].items()],
        *[(f"{k} hold median", v["hold_median_s"], m["by_model"][k]["hold_median_s"]) for k, v in P["by_model"].items()],
        ("tasks", P["tasks"] * scale, m["tasks"]["count"]),
        ("bundle median B", P["bundle_median_bytes"], m["tasks"]["bundle_bytes_median"]),
        ("bundle max B", P["bundle_max_bytes"], m["tasks"]["bundle_bytes_max"]),
    ]
    print(f"{'figure':<34}{'published':>14}{'measured':>14}{'diff':>9}")
    for name, pub, got in rows:
        diff = "" if got is None or not pub else f"{(got / pub - 1) * 100:+.1f}%"
        print(f"{name:<34}{pub:>14,.2f}{(got if got is not None else float('nan')):>14,.2f}{diff:>9}")
    for k, v in m["by_model"].items():
        print(f"  model {k}: rows {v['rows']}, exceptions {v['exception_rate']:.1%}, hold median {v['hold_median_s']:.0f} s")


def _takes_progress() -> bool:
    import inspect

    from sandbox_fleet.measure import measure_paths

    return "progress" in inspect.signature(measure_paths).parameters


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check", action="store_true", help="measure the last release against the published figures")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-synth-"))
    try:
        walls = []
        for k in range(args.runs):
            wall, summary = run_once(tmp / f"run{k}", args.scale, args.seed)
            walls.append(wall)
            if k + 1 < args.runs:
                shutil.rmtree(tmp / f"run{k}")
        stages = ", ".join(f"{name} {sec:.2f}" for name, sec in summary["timing"].items())
        print(f"synth --preset rst --scale {args.scale:g}: {summary['rollouts']:,} rollouts, {summary['tasks']:,} tasks, {summary['events']:,} events")
        print(f"  wall (CLI process) median of {args.runs}: {statistics.median(walls):.2f} s  [runs: {', '.join(f'{w:.2f}' for w in walls)}]  target < 30 s")
        print(f"  stages of the last run (s): {stages}")
        if args.check:
            check(tmp / f"run{args.runs - 1}", args.scale)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
