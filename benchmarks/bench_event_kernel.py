"""Event runs without an inference pool: the pure loop (``loop.run_events``) against the admission
kernel, compiled and as plain Python (its ``_plain.twin``), in one process; then whole ``simulate``
processes against another checkout (issue 36: a 1,000-rollout run within 2x of before).

In-process part: each non-inference example the event family runs (``async_rl_full``, ``model_mix``,
``shared_pool_priority``, ``timeout_ceiling``) at its own size and at 1,000 rollouts (every workload's
count scaled, as ``bench_policies.scaled``), each way ``--rounds`` times alternating; the three give
the same finish times (checked). Prints medians in ms and the ratios to the pure loop.

Whole-process part (``--base-src DIR``: another checkout's ``src``): ``python -m sandbox_fleet.cli
simulate X.toml --json`` in fresh processes, alternating base and this tree, the numba cache warm (one
untimed run of each first); medians of wall and of the children's CPU, and this/base. The
1,000-rollout cases are written as scenario files beside each other in a temporary folder.

Usage: python benchmarks/bench_event_kernel.py [--rounds 5] [--base-src DIR] [--process-rounds 5]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the pure loop, the oracle (issue 36)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_policies import scaled
from sandbox_fleet.simulate.engine.fast import admit_loop
from sandbox_fleet.simulate.engine.prepare import prepare

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "examples" / "scenarios"
NAMES = ("async_rl_full", "model_mix", "shared_pool_priority", "timeout_ceiling")
SMALL = ("shared_pool_priority", "timeout_ceiling")  # also at 1,000 rollouts (``bench_policies.scaled``)


LOOP_CHILD = """
import json, statistics, sys, time, hashlib
sys.path.insert(0, {bench!r})
from bench_policies import scaled
from bench_event_kernel import _built
from sandbox_fleet.simulate.engine.prepare import prepare
from tests.simulate.engine.oracle.loop import run_events
built = scaled({name!r}, {n}) if {n} else _built({name!r})
xs = []
for _ in range({rounds}):
    prep = prepare(built.fleets, built.workloads, built.seed)
    t0 = time.perf_counter()
    out = run_events(prep)
    xs.append(time.perf_counter() - t0)
print(json.dumps([statistics.median(xs), hashlib.sha256(out.first["finish_s"].tobytes()).hexdigest()]))
"""


def loop_at_base(base_src: str, name: str, n: int | None, rounds: int) -> tuple[float, str]:
    """The base checkout's pure loop on the same run, in a child process: median seconds, digest."""
    code = LOOP_CHILD.format(bench=str(Path(__file__).resolve().parent), name=name, n=n or 0, rounds=rounds)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": base_src}, cwd=ROOT)
    t, digest = json.loads(out.stdout.strip().splitlines()[-1])
    return float(t), digest


def in_process(rounds: int, base_src: str | None) -> None:
    admit_loop.load()  # compiled and loaded before the clock (the cache-load cost is the process part's)
    ways = {"plain": lambda p: admit_loop.run(p, compiled=False), "compiled": lambda p: admit_loop.run(p, compiled=True)}
    if base_src is None:  # this tree's pure loop (the oracle, with the tests' policies)
        from tests.simulate.engine.oracle_policies import run_oracle

        ways["loop"] = run_oracle
    print(f"load average {os.getloadavg()[0]:.1f}; {rounds} rounds, ms (median); the loop: "
          f"{'the base checkout, child process' if base_src else 'this tree (oracle)'}")
    for name, n in [(nm, 1000) for nm in SMALL] + [(nm, None) for nm in NAMES]:
        built = _built(name) if n is None else scaled(name, n)
        times: dict[str, list[float]] = {k: [] for k in ways}
        finish = {}
        for _ in range(rounds):
            for k, fn in ways.items():
                prep = prepare(built.fleets, built.workloads, built.seed)
                t0 = time.perf_counter()
                out = fn(prep)
                times[k].append(time.perf_counter() - t0)
                finish[k] = hashlib.sha256(out.first["finish_s"].tobytes()).hexdigest()
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        if base_src is not None:
            t, finish["loop"] = loop_at_base(base_src, name, n, rounds)
            med["loop"] = t * 1e3
        assert len(set(finish.values())) == 1, f"{name}: the three ways disagree"
        size = sum(wl.count for wl in built.workloads)
        print(f"{name} at {size:,} rollouts: loop {med['loop']:.1f}, plain kernel {med['plain']:.1f} "
              f"({med['plain'] / med['loop']:.2f}x the loop), compiled kernel {med['compiled']:.1f} "
              f"({med['compiled'] / med['loop']:.3f}x)", flush=True)


def _built(name: str):
    """The example as it is."""
    from sandbox_fleet.simulate.scenario.run import build, load_scenario

    path = SCENARIOS / f"{name}.toml"
    return build(load_scenario(path), path.parent, str(path))


def _count(name: str) -> int:
    return sum(wl.count for wl in _built(name).workloads)


def _child_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def one(src: str, path: Path) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": src}
    c0, t0 = _child_cpu(), time.perf_counter()
    subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", "simulate", str(path), "--json"], check=True,
                   env=env, stdout=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - t0, _child_cpu() - c0


def processes(base_src: str, rounds: int) -> None:
    here = str(ROOT / "src")
    with tempfile.TemporaryDirectory() as tmp:
        cases = [SCENARIOS / f"{n}.toml" for n in NAMES]
        for n in SMALL:  # the same scenario at about 1,000 rollouts
            text = (SCENARIOS / f"{n}.toml").read_text()
            small = Path(tmp) / f"{n}_1000.toml"
            small.write_text(_scaled_text(n, text))
            cases.append(small)
        print(f"load average {os.getloadavg()[0]:.1f}; whole processes, {rounds} rounds, s (median)")
        for path in cases:
            for src in (base_src, here):
                one(src, path)  # warm: bytecode, the numba cache
            res: dict[str, list[tuple[float, float]]] = {"base": [], "this": []}
            for _ in range(rounds):
                res["base"].append(one(base_src, path))
                res["this"].append(one(here, path))
            bw, tw = (statistics.median(w for w, _ in res[k]) for k in ("base", "this"))
            bc, tc = (statistics.median(c for _, c in res[k]) for k in ("base", "this"))
            print(f"{path.stem}: base {bw:.2f} s (CPU {bc:.2f}), this {tw:.2f} s (CPU {tc:.2f}); "
                  f"this/base wall {tw / bw:.2f}x, CPU {tc / bc:.2f}x", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f}")


def _scaled_text(name: str, text: str) -> str:
    """The example's TOML with its counts scaled to 1,000 rollouts (``count`` and RL ``steps`` keys)."""
    import re

    total = _count(name)
    f = 1000 / total

    def sub(m: re.Match) -> str:
        return f"{m.group(1)}{max(1, round(int(m.group(2)) * f))}"

    return re.sub(r"^((?:count|steps)\s*=\s*)(\d+)", sub, text, flags=re.M)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--process-rounds", type=int, default=5)
    ap.add_argument("--base-src", help="another checkout's src (the whole-process part)")
    args = ap.parse_args()
    in_process(args.rounds, args.base_src)
    if args.base_src:
        processes(args.base_src, args.process_rounds)


if __name__ == "__main__":
    main()
