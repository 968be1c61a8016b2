"""The simulator's FIFO path against a minimal peer (``peer_fifo.py``), as marginal rates.

For c = 10 and c = 3,000 (M/M/c at utilisation 0.7, mu = 1/s) each side runs 0.2M and
1.2M rollouts in fresh processes, alternating side by side; the marginal rate is
``1M / (t(1.2M) - t(0.2M))``, which cancels start-up and fixed costs. Our side is
``run_workloads`` (invariant checks included) plus ``summary()``, on the C speed-up of the
recursion (``simulate/engine/_fifo_speedups.c``) and, as an extra line, on the pure-Python path
(``SANDBOX_FLEET_PURE_PYTHON=1``); the peer draws with NumPy and runs the heapreplace
recursion. Times are taken inside each process around the work (wall and CPU). Prints
medians over the rounds and the ratio ours/peer (target >= 0.9), then the fixed cost: the
whole process (interpreter, imports, work) at 0.2M rollouts for each side, timed from
outside, so a faster marginal rate cannot hide a slower start.

Then the recursion alone (1M rollouts, in-process): the pure ``place_stream`` against
the C one. ``--numba`` adds the rejected numba prototype (``numba_fifo.py``) and what a
fresh process pays to load it (the figures behind not shipping it, BENCHMARKS.md).

Usage: python benchmarks/bench_fifo.py [--rounds 5] [--caps 10 3000] [--src DIR] [--numba]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SMALL, LARGE = 200_000, 1_200_000
RHO, MU = 0.7, 1.0

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
    def work():
        res = run_workloads(Fleet(cap=c), [Poisson(rate_per_s=lam, n=n, holds=Exponential(1.0 / MU))], seed=1)
        return res.summary()
import numpy  # imported by both sides before the clock starts
w0, c0 = time.perf_counter(), time.process_time()
work()
print(json.dumps({"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0}))
"""


SIDES = ("peer", "ours", "pure")  # pure: our side with SANDBOX_FLEET_PURE_PYTHON=1


def run(side: str, n: int, c: int, src: str | None) -> dict:
    """One fresh process: the times it measured inside, and its whole wall time from outside."""
    env = dict(os.environ)
    env.pop("SANDBOX_FLEET_PURE_PYTHON", None)
    if side == "pure":
        env["SANDBOX_FLEET_PURE_PYTHON"] = "1"
    if src:
        env["PYTHONPATH"] = src
    code = CHILD.replace("RHO", repr(RHO)).replace("MU", repr(MU)).replace("HERE", repr(str(HERE)))
    w0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, str(n), str(c), "peer" if side == "peer" else "ours"],
                         env=env, check=True, capture_output=True, text=True).stdout
    whole = time.perf_counter() - w0
    return {**json.loads(out.strip().splitlines()[-1]), "process": whole}


def _stream(c: int, n: int):
    """Seeded M/M/c arrivals and holds for the recursion-alone timings, as arrays and as lists."""
    import numpy as np

    rng = np.random.default_rng(1)
    arr = np.cumsum(rng.exponential(1.0 / (RHO * c * MU), n))
    hold = rng.exponential(1.0 / MU, n)
    return arr, hold, arr.tolist(), hold.tolist()


def marginal(rounds: int, c: int, src: str | None) -> tuple[dict, dict]:
    """Marginal rates per side (wall and CPU) and whole-process times at the small size."""
    rates: dict[str, dict[str, list[float]]] = {s: {"wall": [], "cpu": []} for s in SIDES}
    fixed: dict[str, list[float]] = {s: [] for s in SIDES}
    for _ in range(rounds):
        t = {}
        for side in SIDES:  # alternating: machine load hits every side alike
            for n in (SMALL, LARGE):
                t[side, n] = run(side, n, c, src)
        for side in SIDES:
            fixed[side].append(t[side, SMALL]["process"])
            for k in ("wall", "cpu"):
                rates[side][k].append((LARGE - SMALL) / max(t[side, LARGE][k] - t[side, SMALL][k], 1e-9))
    return rates, fixed


def compiled_figures(caps: list[int], rounds: int) -> None:
    """The recursion alone, 1M rollouts in-process: pure ``place_stream`` vs the C one."""
    import numpy as np

    from sandbox_fleet.simulate.engine.executors import compiled_place_stream
    from sandbox_fleet.simulate.engine.fifo import place_stream

    place_c = compiled_place_stream()
    if place_c is None:
        print("C speed-up not built (or SANDBOX_FLEET_PURE_PYTHON set): recursion-alone figures skipped")
        return
    n = 1_000_000
    print(f"FIFO recursion alone, {n:,} rollouts, in-process, median of {rounds} (CPU seconds)")
    for c in caps:
        arr, hold, arr_l, hold_l = _stream(c, n)
        pure, comp = [], []
        out = np.empty(n)
        for _ in range(rounds):
            c0 = time.process_time()
            a = place_stream([0.0] * c, arr_l, hold_l, 0.0)
            c1 = time.process_time()
            place_c(np.zeros(c), arr, hold, 0.0, out)
            c2 = time.process_time()
            pure.append(c1 - c0)
            comp.append(c2 - c1)
        same = np.array_equal(np.asarray(a).view(np.uint64), out.view(np.uint64))
        p, k = statistics.median(pure), statistics.median(comp)
        print(f"  c={c:<5} pure {n / p:>12,.0f}/s  C {n / k:>13,.0f}/s  ({p / k:.1f}x; saves {p - k:.3f} s per "
              f"1M rollouts; identical start times: {same})")


NUMBA_CHILD = r"""
import sys, time
sys.path.insert(0, HERE)
t0 = time.perf_counter()
import numba_fifo
numba_fifo.place_stream([0.0] * 3, [1.0, 2.0], [1.0, 1.0], 0.0)
print(time.perf_counter() - t0)
"""


def numba_figures(caps: list[int], rounds: int) -> None:
    """The recursion alone, pure vs compiled, and the compiled kernel's one-time cost per process."""
    import importlib.util

    if importlib.util.find_spec("numba") is None:
        print("numba not installed (a core dependency: pip install -e .): compiled-kernel figures skipped")
        return
    import time

    import numpy as np

    sys.path.insert(0, str(HERE))
    import numba_fifo
    from sandbox_fleet.simulate.engine.fifo import place_stream

    n = 1_000_000
    numba_fifo.place_stream([0.0] * 3, [1.0, 2.0], [1.0, 1.0], 0.0)  # compile (or load the cache)
    print(f"FIFO recursion alone, {n:,} rollouts, in-process, median of {rounds} (CPU seconds)")
    for c in caps:
        arr, hold, arr_l, hold_l = _stream(c, n)
        pure, comp = [], []
        for _ in range(rounds):
            c0 = time.process_time()
            a = place_stream([0.0] * c, arr_l, hold_l, 0.0)
            c1 = time.process_time()
            b = numba_fifo.place_stream([0.0] * c, arr, hold, 0.0)
            c2 = time.process_time()
            pure.append(c1 - c0)
            comp.append(c2 - c1)
        same = np.array_equal(np.asarray(a), b)
        p, k = statistics.median(pure), statistics.median(comp)
        print(f"  c={c:<5} pure {n / p:>12,.0f}/s  numba {n / k:>12,.0f}/s  ({p / k:.1f}x; saves {p - k:.3f} s per "
              f"1M rollouts; identical start times: {same})")
    once = []
    for _ in range(rounds):
        out = subprocess.run([sys.executable, "-c", NUMBA_CHILD.replace("HERE", repr(str(HERE)))], check=True,
                             capture_output=True, text=True).stdout
        once.append(float(out.strip().splitlines()[-1]))
    print(f"  one-time cost in a fresh process (import numba + load the cached kernel): median "
          f"{statistics.median(once):.2f} s (min {min(once):.2f} s)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--caps", type=int, nargs="+", default=[10, 3000])
    ap.add_argument("--src", help="put this src directory first on PYTHONPATH (compare another checkout)")
    ap.add_argument("--numba", action="store_true", help="add the rejected numba prototype's figures")
    args = ap.parse_args()
    print(f"FIFO path vs minimal peer: marginal rollouts/s = 1M / (t({LARGE:,}) - t({SMALL:,})), "
          f"M/M/c at utilisation {RHO}, median of {args.rounds} alternating rounds; "
          f"ours = C speed-up, pure = SANDBOX_FLEET_PURE_PYTHON=1; load average {os.getloadavg()[0]:.2f} at start")
    for c in args.caps:
        r, fixed = marginal(args.rounds, c, args.src)
        for side in ("ours", "pure"):
            for k in ("wall", "cpu"):
                ours, peer = statistics.median(r[side][k]), statistics.median(r["peer"][k])
                print(f"  c={c:<5} {side:4s} {k:4s} {ours:>11,.0f}/s  peer {peer:>11,.0f}/s  "
                      f"ratio {ours / peer:.2f}{' (target >= 0.9)' if side == 'ours' else ''}; per-round ratios "
                      f"{', '.join(f'{a / b:.2f}' for a, b in zip(r[side][k], r['peer'][k]))}")
        med = {s: statistics.median(v) for s, v in fixed.items()}
        print(f"  c={c:<5} fixed cost, whole process at {SMALL:,} rollouts (median, min-max): "
              + "; ".join(f"{s} {med[s]:.3f} s ({min(fixed[s]):.3f}-{max(fixed[s]):.3f})" for s in SIDES)
              + f"; ours/pure {med['ours'] / med['pure']:.2f}")
    compiled_figures(args.caps, args.rounds)
    if args.numba:
        numba_figures(args.caps, args.rounds)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
