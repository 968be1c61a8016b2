"""The plan's RL-step search (``rl_schedule_target``) against another checkout, side by side.

Each side runs the search on the published summary (batch 512 and 4,096, train 300 s, 16
replications x 20 steps) in a fresh process, alternating, so a side's numba load (when the search
runs the engine's FIFO rule compiled) is in its time. Prints the median wall seconds per side, the
ratio ours/base, and whether both give the same ``Target`` (JSON bytes).

Usage: python benchmarks/bench_rl_step.py --base-src DIR [--rounds 3] [--batches 512 4096]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PUBLISHED = Path(__file__).resolve().parents[1] / "examples" / "rst-published.json"
CHILD = r"""
import sys, time
from sandbox_fleet.measure import load_measure
from sandbox_fleet.plan import rl_schedule_target
summary = load_measure(sys.argv[1])
t0 = time.perf_counter()
target = rl_schedule_target(summary, int(sys.argv[2]), 300.0)
print(time.perf_counter() - t0)
print(target.model_dump_json() if hasattr(target, "model_dump_json") else repr(target))
"""


def once(src: str | None, batch: int) -> tuple[float, float, str]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    w0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, str(PUBLISHED), str(batch)], env=env, check=True,
                         capture_output=True, text=True).stdout.splitlines()
    return time.perf_counter() - w0, float(out[0]), hashlib.sha256(out[1].encode()).hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-src", required=True)
    ap.add_argument("--src")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batches", type=int, nargs="+", default=[512, 4096])
    args = ap.parse_args()
    print(f"RL-step search, published summary, train 300 s; load average {os.getloadavg()[0]:.2f} at start")
    for batch in args.batches:
        t: dict[str, list[tuple[float, float]]] = {"ours": [], "base": []}
        digest = {}
        for _ in range(args.rounds):
            for side, src in (("ours", args.src), ("base", args.base_src)):
                whole, search, digest[side] = once(src, batch)
                t[side].append((whole, search))
        med = {s: (statistics.median(w for w, _ in v), statistics.median(x for _, x in v)) for s, v in t.items()}
        print(f"  batch {batch:>5}: ours process {med['ours'][0]:.2f} s (search {med['ours'][1]:.2f} s), base process "
              f"{med['base'][0]:.2f} s (search {med['base'][1]:.2f} s); ours/base process "
              f"{med['ours'][0] / med['base'][0]:.2f}, search {med['ours'][1] / med['base'][1]:.2f}; "
              f"same target: {digest['ours'] == digest['base']}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
