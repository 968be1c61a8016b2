"""Time the what-if sweep, 1 against 2 local workers, on a medium and a tiny sample (issue 12, item 4).

Medium: the bundled sample (examples/sweeps/rl_cap.toml, 20 variants x 3 seeds, 60 simulations of
5,120-10,240 sync-RL rollouts, ~0.6 s in all). Tiny: benchmarks/data/tiny_sweep.toml (20 caps x 3
seeds of a 500-rollout M/M/c, 60 simulations of a few milliseconds). Each is run with 1 and 2
workers alternately, round after round, so a loaded machine slows both alike; the figures are the
medians with their spread, process CPU time (own plus reaped workers') and the ratio 2/1.
Target: 2 workers no slower than 1 (2/1 <= 1.0) on both. The outputs of every configuration are
compared byte for byte. Ray is timed (3 runs) only when importable.
Run: python benchmarks/bench_sweep.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from sandbox_fleet import jsonio
from sandbox_fleet.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
MEDIUM = (ROOT / "examples" / "sweeps" / "rl_cap.toml", ["fleet.cap=128:640:64,unbounded", "workload.batch=256,512"],
          "step_s.mean")
TINY = (Path(__file__).resolve().parent / "data" / "tiny_sweep.toml", ["fleet.cap=2:21:1"], "queue_wait_s.mean")


def _cpu_s() -> tuple[float, float]:
    """CPU seconds of this process, and of its reaped children (the sweep's helpers)."""
    t = os.times()
    return t.user + t.system, t.children_user + t.children_system


def _run(sample, **kw) -> tuple[float, tuple[float, float], str]:
    path, vary, target = sample
    t0, (s0, h0) = time.perf_counter(), _cpu_s()
    out = run_sweep(path, vary, seeds=3, target=target, **kw)
    s1, h1 = _cpu_s()
    return time.perf_counter() - t0, (s1 - s0, h1 - h0), jsonio.dumps(out)


def ratio(name: str, sample, rounds: int) -> set[str]:
    """1 vs 2 local workers, alternating; prints medians, spread, CPU and 2/1."""
    _run(sample, workers=1)  # warm-up: imports, validators, page cache
    wall: dict[int, list[float]] = {1: [], 2: []}
    cpu: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
    outputs = set()
    for r in range(rounds):
        for w in ((1, 2) if r % 2 == 0 else (2, 1)):  # who goes first alternates too: no order bias
            t, c, out = _run(sample, workers=w)
            wall[w].append(t)
            cpu[w].append(c)
            outputs.add(out)
    m1, m2 = statistics.median(wall[1]), statistics.median(wall[2])
    for w in (1, 2):
        own = statistics.median(c[0] for c in cpu[w])
        helper = statistics.median(c[1] for c in cpu[w])
        print(f"{name}: {w} worker{'s' if w > 1 else ' '} median {statistics.median(wall[w]):.3f} s "
              f"({min(wall[w]):.3f}-{max(wall[w]):.3f}), CPU {own + helper:.3f} s (this process {own:.3f}, helper {helper:.3f})")
    # On a machine with a free core per worker the wall time is the busier process's CPU time: its
    # ratio to one worker's CPU time says what the ratio is once the machine is quiet.
    busiest = statistics.median(max(c) for c in cpu[2]) / statistics.median(sum(c) for c in cpu[1])
    print(f"{name}: 2/1 = {m2 / m1:.2f} (target <= 1.0), median of {rounds} alternating rounds; "
          f"busiest process's CPU with 2 workers / CPU with 1 = {busiest:.2f}; identical outputs: {len(outputs) == 1}")
    return outputs


def ray_once(sample) -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        print("ray: not installed, skipped (pip install 'sandbox-fleet[ray]')")
        return
    cores = os.cpu_count() or 1
    runs = [_run(sample, backend="ray", workers=cores) for _ in range(3)]
    _, _, local = _run(sample, workers=1)
    print(f"medium sweep on Ray x {cores} workers: median {statistics.median(r[0] for r in runs):.2f} s; "
          f"output identical to local: {all(r[2] == local for r in runs)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--no-ray", action="store_true")
    opts = ap.parse_args()
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at the start")
    ratio("medium sweep, 60 sync-RL simulations", MEDIUM, opts.rounds)
    ratio("tiny sweep, 60 M/M/c simulations", TINY, opts.rounds)
    if not opts.no_ray:
        ray_once(MEDIUM)


if __name__ == "__main__":
    main()
