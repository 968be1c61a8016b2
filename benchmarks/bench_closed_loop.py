"""The fleet + inference pool as one closed loop: our engine against a SimPy model of it.

``examples/scenarios/closed_loop_rst.toml`` (327,189 rollouts of ~11 turns, cap 3,000, 16
replicas with a prefix cache) scaled by ``--scale`` (rollouts, population, cap and GPUs;
default 0.05). Both engines place the same pre-drawn turns (``prepare``): the SimPy model
has one process per rollout slot and one per replica, the replica running the same
prefill-first, virtual-time processor-sharing iteration model with the same sticky
routing and LRU prefix cache. Prints wall and CPU times, events per second (the same event
count for every engine: the model's events) and the ratios, and the mean holds (they agree
to rounding).

It first prints the path the default install takes (numba is a core dependency: the compiled
admission kernel with the inference replica's rules, ``simulate/engine/fast``; its source as plain
Python where numba is missing). Ours runs twice per round: the compiled kernel and its source as
plain Python (``SANDBOX_FLEET_PURE_PYTHON=1``); rounds alternate compiled, plain, SimPy, and medians
are reported. The kernel's source run as plain Python (numba blocked, in a fresh CPython process) is
timed against ``loop.py`` (the tests' oracle) in that process, alternating, at ``--shim-scale``. The
kernel's one-off costs are measured in fresh processes: compiling it into an empty cache (what a
fresh install pays once), and loading it from the cache (what every later process pays on its first
run). The full scenario then runs once in a fresh process (cache warm, so its first-run cost is
included) on the kernel; ``--full-pure`` adds its plain-Python source on it too (slow).

Usage: python benchmarks/bench_closed_loop.py [--scale 0.05] [--runs 3] [--shim-scale 0.01] [--no-full] [--full-pure]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from heapq import heappop, heappush
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the pure loop, the oracle (issue 36)
from tests.simulate.engine.oracle.cache import PrefixCache

from sandbox_fleet.simulate.engine.prepare import prepare
from sandbox_fleet.simulate.engine.run import run_workloads
from sandbox_fleet.simulate.scenario.run import build, load_scenario

SCENARIO = Path(__file__).resolve().parents[1] / "examples" / "scenarios" / "closed_loop_rst.toml"


def scaled(scale: float):
    built = build(load_scenario(SCENARIO), SCENARIO.parent, str(SCENARIO))
    if scale != 1.0:
        wl = built.workloads[0]
        wl.population = max(1, round(wl.population * scale))
        wl.n = max(1, round(wl.n * scale))
        built.fleets[0].cap = max(1, round(built.fleets[0].cap * scale))
        built.inference = dataclasses.replace(built.inference, replicas=max(1, round(built.inference.replicas * scale)))
    return built


def ours(built) -> tuple[float, float, int, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    res = run_workloads(built.fleets, built.workloads, built.seed, inference=built.inference)
    wall = time.perf_counter() - t0
    return wall, float(np.mean(res.hold_s)), res.events, time.process_time() - c0


def simpy_loop(built) -> tuple[float, float, float]:
    """The same closed loop in SimPy (timing includes the same up-front draws)."""
    import simpy

    t0, c0 = time.perf_counter(), time.process_time()
    prep = prepare(built.fleets, built.workloads, built.seed, built.inference)
    cfg, td = prep.inference, prep.turn_draws
    off, nt = td.off.tolist(), td.turns.tolist()
    new, dec, cmd = td.new_tokens.tolist(), td.decode_tokens.tolist(), td.command_s.tolist()
    wl = built.workloads[0]
    env = simpy.Environment()
    sandboxes = simpy.Resource(env, capacity=built.fleets[0].cap)
    inv_p, inv_d, b, kvb = 1 / cfg.prefill_tok_s, 1 / cfg.decode_tok_s, cfg.base_units, cfg.kv_bytes_per_token

    class Replica:
        def __init__(self):
            self.inbox = deque()
            self.wake = env.event()
            self.cache = PrefixCache(cfg.kv_cache_bytes, cfg.kv_offload_bytes)
            self.live = 0
            env.process(self.run())

        def submit(self, r, ctx, k):
            done = env.event()
            self.inbox.append((r, ctx, k, done))
            if not self.wake.triggered:
                self.wake.succeed()
            return done

        def run(self):
            v, t, _n, heap, prefill, seq = 0.0, 0.0, 0, [], deque(), 0
            while True:
                while self.inbox:  # admit arrivals
                    r, ctx, k, done = self.inbox.popleft()
                    i = off[r] + k
                    cached = ctx if (ctx and self.cache.take(r)) else 0
                    prefill.append(((ctx + new[i] - cached) * inv_p, dec[i] * inv_d, r, ctx + new[i] + dec[i], done))
                if prefill:  # the head's prefill runs whole; decoding waits
                    pre, dwork, r, ctx_after, done = prefill.popleft()
                    if pre > 0:
                        yield env.timeout(pre)
                    t = env.now
                    heappush(heap, (v + dwork, seq, r, ctx_after, done))
                    seq += 1
                    continue
                if not heap:
                    self.wake = env.event()
                    yield self.wake
                    t = env.now
                    continue
                gap = (heap[0][0] - v) * (n_dec(heap) + b)
                self.wake = env.event()
                timer = env.timeout(gap)
                yield env.any_of([timer, self.wake])
                now = env.now
                v += (now - t) / (len(heap) + b)
                t = now
                if timer.triggered and not self.inbox:
                    v = max(v, heap[0][0])
                while heap and heap[0][0] <= v:
                    _, _, r, ctx_after, done = heappop(heap)
                    self.cache.put(r, ctx_after * kvb)
                    done.succeed()

    def n_dec(heap):
        return len(heap)

    reps = [Replica() for _ in range(cfg.replicas)]
    live = [0] * cfg.replicas
    holds = np.zeros(wl.n)
    next_id = [0]

    def slot():
        while next_id[0] < wl.n:
            r = next_id[0]
            next_id[0] += 1
            with sandboxes.request() as req:
                yield req
                start = env.now
                i = min(range(len(live)), key=live.__getitem__)
                live[i] += 1
                ctx = 0
                for k in range(nt[r]):
                    yield reps[i].submit(r, ctx, k)
                    j = off[r] + k
                    ctx += new[j] + dec[j]
                    yield env.timeout(cmd[j])
                live[i] -= 1
                holds[r] = env.now - start

    for _ in range(wl.population):
        env.process(slot())
    env.run()
    return time.perf_counter() - t0, float(holds.mean()), time.process_time() - c0


def _with_env(var: str, value: str | None, fn):
    old = os.environ.get(var)
    if value is None:
        os.environ.pop(var, None)
    else:
        os.environ[var] = value
    try:
        return fn()
    finally:
        if old is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = old


FRESH = """
import json, sys, time
if {shim}:
    sys.modules["numba"] = None  # as on a machine without numba: the kernel runs through _jit's shim
sys.path.insert(0, {bench!r})
from bench_closed_loop import ours, scaled
from sandbox_fleet.simulate.engine.fast import admit_loop
from tests.simulate.engine.oracle.loop import run_events
if {force}:
    admit_loop.MIN_ROLLOUTS = 0  # a tiny run that still takes the compiled kernel
out = []
kernel_run = admit_loop.run
for _ in range({runs}):
    if {shim}:
        admit_loop.run = kernel_run  # numba is blocked: the kernel's source as plain Python
        wall, hold, events, cpu = ours(scaled({scale}))
        out.append(["shim", wall, cpu, events, hold])
        admit_loop.run = lambda prep, on_progress=None, compiled=None: run_events(prep, on_progress)
        wall, hold, events, cpu = ours(scaled({scale}))
        out.append(["loop", wall, cpu, events, hold])
    else:
        wall, hold, events, cpu = ours(scaled({scale}))
        out.append([wall, cpu, events, hold])
print(json.dumps(out))
"""


def fresh(scale: float, runs: int = 1, env: dict | None = None, force: bool = False, shim: bool = False) -> list:
    """``runs`` runs of ``ours`` in a fresh process: [wall, cpu, events, mean hold] each
    (``force``: the kernel however small the run; ``shim``: numba blocked, and each run is the
    kernel as plain Python then ``loop.py``, labelled)."""
    code = FRESH.format(bench=str(Path(__file__).resolve().parent), runs=runs, scale=scale, force=force or shim,
                        shim=shim)
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **(env or {})}, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def shim_vs_loop(scale: float, runs: int) -> tuple[float, float, int]:
    """Medians of (kernel as plain Python, loop.py) CPU seconds in one CPython process without
    numba, alternating; and the events of one run."""
    rows = fresh(scale, runs, shim=True)
    shim = statistics.median(r[2] for r in rows if r[0] == "shim")
    loop = statistics.median(r[2] for r in rows if r[0] == "loop")
    holds = {r[4] for r in rows}
    assert len(holds) == 1, holds  # the same mean hold, to the bit, both ways
    return shim, loop, rows[0][3]


def default_path() -> str:
    """Which closed-loop path this install takes by default, and why."""
    import importlib.metadata

    from sandbox_fleet.simulate.engine import fast
    from sandbox_fleet.simulate.engine.fast import _jit, admit_loop

    if fast.available():
        return (f"default install: numba {importlib.metadata.version('numba')} installed, so runs with an "
                f"inference pool (from {admit_loop.MIN_ROLLOUTS:,} rollouts + model calls / "
                f"{admit_loop.CALLS_PER_ROLLOUT}) take the compiled admission kernel; its cache: {_jit.cache_dir()}")
    return ("default install: numba unavailable (or switched off), so runs with an inference pool take the "
            "admission kernel's source as plain Python")


def kernel_costs(scale: float = 0.002) -> dict[str, tuple[float, float]]:
    """(wall, CPU) seconds of: compiling into an empty cache, loading from the cache, a warm tiny
    run; from fresh processes running a tiny scenario twice (first run minus second run)."""
    with tempfile.TemporaryDirectory() as cache:
        env = {"NUMBA_CACHE_DIR": cache}
        cold = fresh(scale, 2, env, force=True)
        warm = fresh(scale, 2, env, force=True)
    return {"compile": (cold[0][0] - cold[1][0], cold[0][1] - cold[1][1]),
            "load": (warm[0][0] - warm[1][0], warm[0][1] - warm[1][1]), "tiny": (warm[1][0], warm[1][1])}


def main() -> None:
    from sandbox_fleet.simulate.engine import fast

    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=0.05)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shim-scale", type=float, default=0.01)
    ap.add_argument("--no-full", action="store_true")
    ap.add_argument("--full-pure", action="store_true")
    a = ap.parse_args()
    print(default_path())
    built = scaled(a.scale)
    compiled = fast.available()
    if compiled:
        costs = kernel_costs()
        ours(scaled(a.scale))  # this process loads the kernel once, outside the rounds
    rounds: dict[str, list] = {"fast": [], "pure": [], "simpy": []}
    for _ in range(a.runs):
        if compiled:
            rounds["fast"].append(ours(scaled(a.scale)))
        rounds["pure"].append(_with_env("SANDBOX_FLEET_PURE_PYTHON", "1", lambda: ours(scaled(a.scale))))
        sw, shold, scpu = simpy_loop(scaled(a.scale))
        rounds["simpy"].append((sw, shold, 0, scpu))
    med = {k: (statistics.median(r[0] for r in v), statistics.median(r[3] for r in v)) for k, v in rounds.items() if v}
    events = rounds["pure"][0][2]
    wl = built.workloads[0]
    print(f"closed loop at scale {a.scale}: {wl.n} rollouts, population {wl.population}, "
          f"cap {built.fleets[0].cap}, {built.inference.replicas} replica(s); {events:,} events; "
          f"medians of {a.runs} alternating rounds")
    names = {"fast": "sandbox-fleet, compiled", "pure": "sandbox-fleet, plain Py", "simpy": "SimPy"}
    sw, sc = med["simpy"]
    for k, (w, c) in med.items():
        hold = rounds[k][0][1]
        ratio = "" if k == "simpy" else f"; vs SimPy {sw / w:.1f}x wall, {sc / c:.1f}x CPU"
        print(f"  {names[k]:<24} {w:6.2f} s wall, {c:6.2f} s CPU, {events / w:>12,.0f} events/s, "
              f"mean hold {hold:.2f} s{ratio}")
    if compiled:
        (cw, cc), (lw, lc), (tw, tc) = costs["compile"], costs["load"], costs["tiny"]
        print(f"  compiled kernel: compile into an empty cache {cw:.1f} s wall, {cc:.1f} s CPU (once per install); "
              f"load from the cache {lw:.2f} s wall, {lc:.2f} s CPU (first run of each process); "
              f"a tiny run warm {tw:.3f} s wall, {tc:.3f} s CPU")
    else:
        print("  numba is unavailable: the compiled kernel was not measured (it is a core dependency)")
    print("  target: >= 10x SimPy events/s")
    shim_s, loop_s, shim_events = shim_vs_loop(a.shim_scale, a.runs)
    print(f"kernel source as plain Python (CPython, numba blocked) vs loop.py at scale {a.shim_scale} "
          f"({shim_events:,} events), CPU medians of {a.runs} alternating rounds: {shim_s:.2f} s vs {loop_s:.2f} s, "
          f"kernel as plain Python / loop.py = {shim_s / loop_s:.1f}x")
    if not a.no_full:
        for label, env in (("compiled", {}), ("pure", {"SANDBOX_FLEET_PURE_PYTHON": "1"})):
            if (label == "compiled" and not compiled) or (label == "pure" and not (a.full_pure or not compiled)):
                continue
            c0 = time.perf_counter()
            wall, cpu, ev, hold = fresh(1.0, 1, env)[0]
            proc = time.perf_counter() - c0
            print(f"full scenario, {label}, first run in a fresh process: {wall:.1f} s wall ({cpu:.1f} s CPU) in "
                  f"run_workloads, {proc:.1f} s for the whole process; {ev:,} events, {ev / wall:,.0f} events/s, "
                  f"mean hold {hold:.1f} s (target <= 60 s)")


if __name__ == "__main__":
    main()
