"""The simulator's FIFO path against a minimal peer (``peer_fifo.py``), as marginal rates.

For c = 10 and c = 3,000 (M/M/c at utilisation 0.7, mu = 1/s) each side runs 0.2M and
1.2M rollouts in fresh processes, alternating side by side; the marginal rate is
``1M / (t(1.2M) - t(0.2M))``, which cancels start-up and fixed costs. Our side is
``run_workloads`` (invariant checks included) plus ``summary()``; the peer draws with
NumPy and runs the heapreplace recursion. Times are taken inside each process around
the work (wall and CPU). Prints medians over the rounds and the ratio ours/peer
(target >= 0.9).

Usage: python benchmarks/bench_fifo.py [--rounds 5] [--caps 10 3000] [--src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
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


def run(side: str, n: int, c: int, src: str | None) -> dict:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    code = CHILD.replace("RHO", repr(RHO)).replace("MU", repr(MU)).replace("HERE", repr(str(HERE)))
    out = subprocess.run([sys.executable, "-c", code, str(n), str(c), side], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def marginal(rounds: int, c: int, src: str | None) -> dict:
    rates: dict[str, dict[str, list[float]]] = {s: {"wall": [], "cpu": []} for s in ("ours", "peer")}
    for _ in range(rounds):
        t = {}
        for side in ("peer", "ours"):  # alternating: machine load hits both alike
            for n in (SMALL, LARGE):
                t[side, n] = run(side, n, c, src)
        for side in ("ours", "peer"):
            for k in ("wall", "cpu"):
                rates[side][k].append((LARGE - SMALL) / max(t[side, LARGE][k] - t[side, SMALL][k], 1e-9))
    return rates


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--caps", type=int, nargs="+", default=[10, 3000])
    ap.add_argument("--src", help="put this src directory first on PYTHONPATH (compare another checkout)")
    args = ap.parse_args()
    print(f"FIFO path vs minimal peer: marginal rollouts/s = 1M / (t({LARGE:,}) - t({SMALL:,})), "
          f"M/M/c at utilisation {RHO}, median of {args.rounds} alternating rounds")
    for c in args.caps:
        r = marginal(args.rounds, c, args.src)
        for k in ("wall", "cpu"):
            ours, peer = statistics.median(r["ours"][k]), statistics.median(r["peer"][k])
            spread = min(r["ours"][k]) / max(r["peer"][k]), max(r["ours"][k]) / min(r["peer"][k])
            print(f"  c={c:<5} {k:4s} ours {ours:>11,.0f}/s  peer {peer:>11,.0f}/s  "
                  f"ratio {ours / peer:.2f} (target >= 0.9; per-round ratios "
                  f"{', '.join(f'{a / b:.2f}' for a, b in zip(r['ours'][k], r['peer'][k]))})")


if __name__ == "__main__":
    main()
