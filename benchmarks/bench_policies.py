"""Policy pools on the compiled admission kernel against the pure event loop, in one run.

``examples/scenarios/shared_pool_priority.toml`` (priority with preemption) and
``timeout_ceiling.toml`` with their counts raised to ``--rollouts`` (default 200,000): every
workload's count scaled by the same factor (RL steps rounded, the other workload takes the rest),
so the mix and the pool stay the scenario's. Each round runs, in this process and alternating,
``run_workloads(..., check=False)`` on the kernel (``fast/admit_loop``, loaded before the clock) and
on the pure loop (``SANDBOX_FLEET_PURE_PYTHON=1`` switches the kernel off); both place the same
attempts (the script checks the finish times are the same bytes). Prints medians of wall and CPU
and the ratio pure/kernel (issue 36's target: >= 10).

Then the kernel's one-off costs, in fresh processes: compiling it into an empty cache (what the
first run after an install pays: ``admit_loop.load`` runs a two-rollout scenario, so numba compiles)
and loading it from the cache (every later process's first run),
and a 1,000-rollout run of each scenario, kernel against pure loop (the kernel is not used there
unless already loaded: ``admit_loop.worth_it``).

Usage: python benchmarks/bench_policies.py [--rounds 3] [--rollouts 200000] [--no-extras | --only-extras]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from sandbox_fleet.simulate.engine.run import run_workloads
from sandbox_fleet.simulate.engine.workloads import RL
from sandbox_fleet.simulate.scenario.run import build, load_scenario

SCENARIOS = Path(__file__).resolve().parents[1] / "examples" / "scenarios"
NAMES = ("shared_pool_priority", "timeout_ceiling")


def scaled(name: str, total: int):
    """The scenario with its rollout count raised to ``total`` (every workload by one factor)."""
    path = SCENARIOS / f"{name}.toml"
    built = build(load_scenario(path), path.parent, str(path))
    f = total / sum(wl.count for wl in built.workloads)
    rl = 0
    for wl in built.workloads:
        if wl.kind == RL:
            steps = max(1, round(len(wl.batch) * f))
            wl.batch = np.full(steps, int(wl.batch[0]), dtype=np.int64)
            wl.steps = steps
            rl += wl.count
    others = [wl for wl in built.workloads if wl.kind != RL]
    for i, wl in enumerate(others):
        wl.n = (total - rl) // len(others) + (1 if i < (total - rl) % len(others) else 0)
    assert sum(wl.count for wl in built.workloads) == total
    return built


def timed(built, pure: bool) -> tuple[float, float, object]:
    os.environ["SANDBOX_FLEET_PURE_PYTHON"] = "1" if pure else ""
    w0, c0 = time.perf_counter(), time.process_time()
    res = run_workloads(built.fleets, built.workloads, built.seed, check=False)
    out = time.perf_counter() - w0, time.process_time() - c0, res
    os.environ["SANDBOX_FLEET_PURE_PYTHON"] = ""
    return out


def fresh(code: str, env: dict[str, str]) -> float:
    """Wall time of ``code`` in a fresh interpreter (from outside)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, **env})
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rollouts", type=int, default=200_000)
    ap.add_argument("--no-extras", action="store_true")
    ap.add_argument("--only-extras", action="store_true", help="the one-off costs and the small runs only")
    args = ap.parse_args()
    from sandbox_fleet.simulate.engine.fast import admit_loop

    admit_loop.load()
    print(f"load average {os.getloadavg()[0]:.1f}; {args.rollouts:,} rollouts, {args.rounds} rounds")
    for name in () if args.only_extras else NAMES:
        built = scaled(name, args.rollouts)
        k_wall, k_cpu, p_wall, p_cpu = [], [], [], []
        for _ in range(args.rounds):
            kw, kc, kres = timed(built, pure=False)
            pw, pc, pres = timed(built, pure=True)
            assert kres.engine == "admission-kernel" and pres.engine == "events", (kres.engine, pres.engine)
            assert kres.finish_s.tobytes() == pres.finish_s.tobytes(), "kernel and pure loop disagree"
            k_wall.append(kw)
            k_cpu.append(kc)
            p_wall.append(pw)
            p_cpu.append(pc)
        km, pm = statistics.median(k_wall), statistics.median(p_wall)
        kc_, pc_ = statistics.median(k_cpu), statistics.median(p_cpu)
        print(f"{name}: kernel {km:.3f} s (CPU {kc_:.3f}), pure loop {pm:.3f} s (CPU {pc_:.3f}); "
              f"pure/kernel wall {pm / km:.1f}x, CPU {pc_ / kc_:.1f}x; {args.rollouts / km:,.0f} vs "
              f"{args.rollouts / pm:,.0f} rollouts/s; attempts {len(kres.finish_s):,}")
    print(f"load average {os.getloadavg()[0]:.1f}")
    if args.no_extras:
        return
    load = "from sandbox_fleet.simulate.engine.fast import admit_loop; admit_loop.load()"
    with tempfile.TemporaryDirectory() as empty:
        compile_s = fresh(load, {"NUMBA_CACHE_DIR": empty})
        cached_s = statistics.median(fresh(load, {"NUMBA_CACHE_DIR": empty}) for _ in range(3))
    bare = statistics.median(fresh("import sandbox_fleet.simulate.engine.run", {}) for _ in range(3))
    print(f"fresh process importing the engine and loading the kernel: into an empty cache {compile_s:.1f} s, "
          f"from the cache {cached_s:.2f} s (the engine alone: {bare:.2f} s)")
    for name in NAMES:
        small = scaled(name, 1000)
        kw = statistics.median(timed(small, pure=False)[0] for _ in range(3))
        pw = statistics.median(timed(small, pure=True)[0] for _ in range(3))
        print(f"{name} at 1,000 rollouts (kernel loaded in this process): kernel {kw * 1e3:.1f} ms, "
              f"pure loop {pw * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
