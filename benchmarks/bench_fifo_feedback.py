"""FIFO runs with feedback (retries; several pools) on this checkout beside another one (``--base-src``):
before issue 36's item 3 the FIFO executor's heap loop (``fifo.run_fifo``) ran them, now the admission
kernel does. For each size, the process's wall time (a fresh interpreter: imports, the run, its checks
and summary; the kernel loaded from numba's cache when the run pays it) and the in-process CPU time of
``run_workloads`` + ``summary()`` once warm (the compiled forms loaded first), medians, sides interleaved.

    python benchmarks/bench_fifo_feedback.py --base-src /tmp/base/src [--sizes 1000,200000] [--reps 3]
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

HERE = Path(__file__).resolve().parents[1] / "src"

SETUP = """
from sandbox_fleet.simulate import Episode, Exponential, Fleet, Poisson, RetryPolicy, run_workloads
def case(name, n):
    if name == "retries":
        ep = Episode(agent=Exponential(1.0), verifier=Exponential(0.1), exception_rate_per_s={"verifier": 3.0})
        return Fleet(cap=50), [Poisson(rate_per_s=38.0, n=n, episode=ep, retry=RetryPolicy(max_retries=3))]
    return ([Fleet(cap=30, name="a"), Fleet(cap=20, name="b")],
            [Poisson(rate_per_s=24.0, n=n // 2, holds=Exponential(1.0), pool=0, name="x"),
             Poisson(rate_per_s=16.0, n=n - n // 2, holds=Exponential(1.0), pool=1, name="y")])
"""

WALL = SETUP + """
import time, sys
t = time.perf_counter()
fleet, wls = case(sys.argv[1], int(sys.argv[2]))
res = run_workloads(fleet, wls, seed=1); res.summary()
print(res.engine)
"""

WARM = SETUP + """
import json, statistics, sys, time
from sandbox_fleet.simulate.engine import fast
if fast.available():
    from sandbox_fleet.simulate.engine.fast import admit_loop, fifo_compiled
    admit_loop.load(); fifo_compiled.load()
name, n, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fleet, wls = case(name, n)
run_workloads(fleet, wls, seed=1).summary()
ts = []
for _ in range(reps):
    t = time.process_time(); res = run_workloads(fleet, wls, seed=1); s = res.summary(); ts.append(time.process_time() - t)
print(json.dumps([res.engine, statistics.median(ts), s["queue_wait_s"]["mean"]]))
"""


def run(src: Path, code: str, *args: str) -> tuple[float, str]:
    env = dict(os.environ, PYTHONPATH=str(src))
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - t, out.stdout.strip().splitlines()[-1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-src", required=True, type=Path)
    ap.add_argument("--sizes", default="1000,200000")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    rows = []
    for name in ("retries", "two_pools"):
        for n in (int(x) for x in a.sizes.split(",")):
            wall: dict[str, list[float]] = {"base": [], "ours": []}
            warm = {}
            for _ in range(a.reps):
                for side, src in (("base", a.base_src), ("ours", HERE)):
                    w, _ = run(src, WALL, name, str(n))
                    wall[side].append(w)
            for side, src in (("base", a.base_src), ("ours", HERE)):
                warm[side] = json.loads(run(src, WARM, name, str(n), str(a.reps))[1])
            assert warm["base"][2] == warm["ours"][2], (name, n, warm)  # the same run either side
            row = {"case": name, "rollouts": n, "path": [warm["base"][0], warm["ours"][0]],
                   "wall_s": [round(statistics.median(wall["base"]), 3), round(statistics.median(wall["ours"]), 3)],
                   "in_process_cpu_s": [round(warm["base"][1], 4), round(warm["ours"][1], 4)]}
            rows.append(row)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
