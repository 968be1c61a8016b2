"""The simulator's FIFO path against a minimal peer (``peer_fifo.py``) and, with ``--base-src``,
against another checkout run side by side (e.g. the code before a change), as marginal rates.

For c = 10 and c = 3,000 (M/M/c at utilisation 0.7, mu = 1/s) each side runs 0.2M and
1.2M rollouts in fresh processes, alternating side by side; the marginal rate is
``1M / (t(1.2M) - t(0.2M))``, which cancels start-up and fixed costs. Our side is
``run_workloads`` (invariant checks included) plus ``summary()``, on the FIFO rule compiled
by numba (``fast/fifo_compiled``, loaded in the child before its clock starts, so both sizes run
compiled; the load itself is in the fixed cost below), and, as an extra line, on the rule as
plain Python (``SANDBOX_FLEET_PURE_PYTHON=1``); ``base`` is the other checkout's own default
path (``--base-src``, e.g. the former C twin). The peer draws with NumPy and runs the
heapreplace recursion. Times are taken inside each process around the work (wall and CPU).
Prints medians over the rounds and the ratios ours/peer and ours/base (targets >= 0.9), then
the fixed cost: the whole process (interpreter, imports, work) at 0.2M rollouts for each side,
timed from outside, so a faster marginal rate cannot hide a slower start.

Then, unless ``--no-extras``: the recursion alone (1M rollouts, in-process): the rule as plain
Python, compiled, and the base checkout's C twin if it has one (loaded from its built file);
what a fresh process pays for the compiled rule (a first run into an empty numba cache, i.e.
the compile after an install, and later runs loading the cache); and the whole ``simulate``
CLI process on a 1,000-rollout M/M/10 scenario, ours and base alternating.

``--numba-in-base`` (a diagnostic) has base's child import numba and compile a one-line function
before its clock, so both sides run with the same libraries loaded.

Usage: python benchmarks/bench_fifo.py [--rounds 5] [--caps 10 3000] [--src DIR] [--base-src DIR] [--no-extras]
       [--numba-in-base]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SMALL, LARGE = 200_000, 1_200_000
RHO, MU = 0.7, 1.0
NUMBA_IN_BASE = False  # --numba-in-base

CHILD = r"""
import json, sys, time
n, c, side = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
lam = RHO * c * MU
if side == "peer":
    sys.path.insert(0, HERE)
    from peer_fifo import peer
    work = lambda: peer(n, c, lam, MU, seed=1)
else:
    from sandbox_fleet.simulate import Exponential, Fleet, Poisson, run_workloads
    if side == "ours":  # "auto": as a user runs it, the rule compiled or not as worth_it decides
        from sandbox_fleet.simulate.engine.fast import fifo_compiled
        fifo_compiled.load()  # both sizes compiled: the marginal rate is the compiled path's
    if side == "base" and BASE_NUMBA:  # --numba-in-base: the same libraries loaded on both sides
        import numba
        numba.njit(lambda x: x + 1.0)(1.0)
    def work():
        res = run_workloads(Fleet(cap=c), [Poisson(rate_per_s=lam, n=n, holds=Exponential(1.0 / MU))], seed=1)
        return res.summary()
import numpy  # imported by every side before the clock starts
w0, c0 = time.perf_counter(), time.process_time()
work()
print(json.dumps({"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0}))
"""


def _env(side: str, src: str | None, base_src: str | None) -> dict:
    env = dict(os.environ)
    env.pop("SANDBOX_FLEET_PURE_PYTHON", None)
    if side == "pure":
        env["SANDBOX_FLEET_PURE_PYTHON"] = "1"
    path = base_src if side == "base" else src
    if path:
        env["PYTHONPATH"] = path
    return env


def run(side: str, n: int, c: int, src: str | None, base_src: str | None) -> dict:
    """One fresh process: the times it measured inside, and its whole wall time from outside."""
    code = (CHILD.replace("RHO", repr(RHO)).replace("MU", repr(MU)).replace("HERE", repr(str(HERE)))
            .replace("BASE_NUMBA", repr(NUMBA_IN_BASE)))
    w0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, str(n), str(c), side], env=_env(side, src, base_src),
                         check=True, capture_output=True, text=True).stdout
    whole = time.perf_counter() - w0
    return {**json.loads(out.strip().splitlines()[-1]), "process": whole}


def marginal(rounds: int, c: int, sides: tuple[str, ...], src: str | None, base_src: str | None):
    """Marginal rates per side (wall and CPU) and whole-process times at the small size (ours
    there as ``auto``: without the up-front load, as a user runs it)."""
    rates: dict[str, dict[str, list[float]]] = {s: {"wall": [], "cpu": []} for s in sides}
    fixed: dict[str, list[float]] = {s: [] for s in (*sides, "auto")}
    for _ in range(rounds):
        t = {}
        for side in sides:  # alternating: machine load hits every side alike
            for n in (SMALL, LARGE):
                t[side, n] = run(side, n, c, src, base_src)
        t["auto", SMALL] = run("auto", SMALL, c, src, base_src)
        fixed["auto"].append(t["auto", SMALL]["process"])
        for side in sides:
            fixed[side].append(t[side, SMALL]["process"])
            for k in ("wall", "cpu"):
                rates[side][k].append((LARGE - SMALL) / max(t[side, LARGE][k] - t[side, SMALL][k], 1e-9))
    return rates, fixed


def _stream(c: int, n: int):
    """Seeded M/M/c arrivals and holds for the recursion-alone timings."""
    import numpy as np

    rng = np.random.default_rng(1)
    arr = np.cumsum(rng.exponential(1.0 / (RHO * c * MU), n))
    hold = rng.exponential(1.0 / MU, n)
    return arr, hold


def _base_c_twin(base_src: str | None):
    """The base checkout's built C twin of the recursion (``_fifo_speedups``), or None."""
    import importlib.util

    if not base_src:
        return None
    built = sorted((Path(base_src) / "sandbox_fleet" / "simulate" / "engine").glob("_fifo_speedups*.so"))
    if not built:
        return None
    spec = importlib.util.spec_from_file_location("_fifo_speedups", built[0])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.place_stream


def recursion_alone(caps: list[int], rounds: int, base_src: str | None) -> None:
    """The recursion alone, 1M rollouts in-process: the rule interpreted, compiled, and the base C twin."""
    import numpy as np

    from sandbox_fleet.simulate.engine.fast import fifo_compiled
    from sandbox_fleet.simulate.engine.fifo import place_stream

    compiled = fifo_compiled.load()
    place_c = _base_c_twin(base_src)
    n = 1_000_000
    print(f"FIFO recursion alone, {n:,} rollouts, in-process, median of {rounds} (CPU seconds)")
    for c in caps:
        arr, hold = _stream(c, n)
        arr_l, hold_l = arr.tolist(), hold.tolist()
        times: dict[str, list[float]] = {"interpreted": [], "compiled": [], "base C": []}
        for _ in range(rounds):
            out_i = [0.0] * n
            c0 = time.process_time()
            place_stream([0.0] * c, arr_l, None, 0, n, hold_l, 0.0, out_i, None)
            c1 = time.process_time()
            out_n = np.empty(n)
            compiled(np.zeros(c), arr, None, 0, n, hold, 0.0, out_n, None)
            c2 = time.process_time()
            times["interpreted"].append(c1 - c0)
            times["compiled"].append(c2 - c1)
            if place_c is not None:
                out_c = np.empty(n)
                c3 = time.process_time()
                place_c(np.zeros(c), arr, hold, 0.0, out_c)
                times["base C"].append(time.process_time() - c3)
        same = np.array_equal(np.asarray(out_i).view(np.uint64), out_n.view(np.uint64))
        med = {k: statistics.median(v) for k, v in times.items() if v}
        line = f"  c={c:<5} interpreted {n / med['interpreted']:>11,.0f}/s  compiled {n / med['compiled']:>12,.0f}/s"
        if "base C" in med:
            same = same and np.array_equal(out_c.view(np.uint64), out_n.view(np.uint64))
            line += f"  base C {n / med['base C']:>12,.0f}/s  (compiled/base C {med['base C'] / med['compiled']:.2f})"
        print(line + f"; identical start times: {same}")


LOAD_CHILD = r"""
import time
t0 = time.perf_counter()
from sandbox_fleet.simulate.engine.fast import fifo_compiled
fifo_compiled.load()
print(time.perf_counter() - t0)
"""


def load_cost(rounds: int, src: str | None) -> None:
    """What a fresh process pays for the compiled rule: compiling into an empty cache (the first
    run after an install), then loading that cache (every later process)."""
    with tempfile.TemporaryDirectory() as cache:
        env = _env("ours", src, None)
        env["NUMBA_CACHE_DIR"] = cache

        def once() -> float:
            out = subprocess.run([sys.executable, "-c", LOAD_CHILD], env=env, check=True, capture_output=True,
                                 text=True).stdout
            return float(out.strip().splitlines()[-1])

        first = once()
        later = [once() for _ in range(rounds)]
    print(f"compiled FIFO rule, per fresh process (import numba + build): first run into an empty cache "
          f"(the compile after an install) {first:.2f} s; later runs (cache load) median {statistics.median(later):.2f} s "
          f"(min {min(later):.2f}, max {max(later):.2f})")


SMALL_SCENARIO = """[fleet]
cap = 10
[workload]
kind = "poisson"
rate_per_s = 7.0
count = 1000
[hold]
dist = "exponential"
mean_s = 1.0
[run]
seed = 1
"""
CLI = "import sys; from sandbox_fleet.cli import console_main; sys.argv[0] = 'sandbox-fleet'; sys.exit(console_main())"


def small_run(rounds: int, src: str | None, base_src: str | None) -> None:
    """The whole ``simulate`` process on a 1,000-rollout M/M/10 scenario, ours and base alternating."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mmc_1000.toml"
        path.write_text(SMALL_SCENARIO)
        sides = ("ours", "base") if base_src else ("ours",)
        walls: dict[str, list[float]] = {s: [] for s in sides}
        outs: dict[str, bytes] = {}
        for _ in range(rounds):
            for side in sides:
                w0 = time.perf_counter()
                outs[side] = subprocess.run([sys.executable, "-c", CLI, "simulate", str(path), "--json", "-q"],
                                            env=_env(side, src, base_src), check=True, capture_output=True).stdout
                walls[side].append(time.perf_counter() - w0)
    med = {s: statistics.median(v) for s, v in walls.items()}
    line = f"1,000-rollout M/M/10 `simulate` process, median of {rounds}: ours {med['ours']:.2f} s"
    if base_src:
        line += (f", base {med['base']:.2f} s (ours/base {med['ours'] / med['base']:.2f}, target <= 2); "
                 f"same JSON: {outs['ours'] == outs['base']}")
    print(line)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--caps", type=int, nargs="+", default=[10, 3000])
    ap.add_argument("--src", help="put this src directory first on PYTHONPATH for our side")
    ap.add_argument("--base-src", help="a second checkout's src directory, run side by side as 'base'")
    ap.add_argument("--no-extras", action="store_true", help="only the marginal rates and fixed costs")
    ap.add_argument("--numba-in-base", action="store_true",
                    help="base's child imports numba and compiles a one-line function before its clock (a diagnostic)")
    args = ap.parse_args()
    global NUMBA_IN_BASE
    NUMBA_IN_BASE = args.numba_in_base
    sides = ("peer", "ours", "base", "pure") if args.base_src else ("peer", "ours", "pure")
    print(f"FIFO path vs minimal peer: marginal rollouts/s = 1M / (t({LARGE:,}) - t({SMALL:,})), "
          f"M/M/c at utilisation {RHO}, median of {args.rounds} alternating rounds; "
          f"ours = compiled rule, pure = SANDBOX_FLEET_PURE_PYTHON=1, base = {args.base_src}; "
          f"load average {os.getloadavg()[0]:.2f} at start")
    for c in args.caps:
        r, fixed = marginal(args.rounds, c, sides, args.src, args.base_src)
        for side in sides[1:]:
            for k in ("wall", "cpu"):
                ours, peer = statistics.median(r[side][k]), statistics.median(r["peer"][k])
                line = (f"  c={c:<5} {side:4s} {k:4s} {ours:>11,.0f}/s  peer {peer:>11,.0f}/s  ratio {ours / peer:.2f}; "
                        f"per-round {', '.join(f'{a / b:.2f}' for a, b in zip(r[side][k], r['peer'][k]))}")
                if side == "ours" and "base" in r:
                    base = statistics.median(r["base"][k])
                    line += (f"; ours/base {ours / base:.2f} (target >= 0.9; per-round "
                             f"{', '.join(f'{a / b:.2f}' for a, b in zip(r['ours'][k], r['base'][k]))})")
                print(line)
        med = {s: statistics.median(v) for s, v in fixed.items()}
        print(f"  c={c:<5} fixed cost, whole process at {SMALL:,} rollouts (median, min-max): "
              + "; ".join(f"{s} {med[s]:.3f} s ({min(fixed[s]):.3f}-{max(fixed[s]):.3f})" for s in fixed)
              + " (ours: numba loaded up front; auto: as worth_it decides)")
    if not args.no_extras:
        recursion_alone(args.caps, args.rounds, args.base_src)
        load_cost(args.rounds, args.src)
        small_run(args.rounds, args.src, args.base_src)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
