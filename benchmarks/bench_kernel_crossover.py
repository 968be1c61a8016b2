"""Where the compiled admission kernel pays for its per-process load (``admit_loop.worth_it``).

Each measurement is one fresh process that imports the engine, prepares a scenario and runs it on
the admission kernel, compiled (numba's cache load included: the cache is warm, one untimed run
first) or as its plain-Python twin (``_plain.twin``, numba never imported), and reports its CPU
seconds (``time.process_time``, the whole process but the interpreter's own start). Two scenarios:
``inference_pool.toml`` (an inference pool: ~11 model calls a rollout) and ``timeout_ceiling.toml``
(no pool: a policy pool), each at ``--sizes`` rollouts (counts scaled as ``bench_policies.scaled``; ``timeout_ceiling`` from 1,000:
its RL batch is 512).
Prints medians of ``--rounds`` alternating rounds, the compiled/plain ratio, and what
``worth_it`` chooses at each size (the work it counts, ``admit_loop.work``, against ``MIN_ROLLOUTS``).

Usage: python benchmarks/bench_kernel_crossover.py [--sizes 200,1000,5000,20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
CODE = """
import time, json, sys
t0 = time.process_time()
sys.path.insert(0, {bench!r})
from bench_policies import scaled
from sandbox_fleet.simulate.engine.fast import admit_loop
from sandbox_fleet.simulate.engine.prepare import prepare
built = scaled({name!r}, {n})
prep = prepare(built.fleets, built.workloads, built.seed, inference=built.inference)
out = admit_loop.run(prep, compiled={compiled})
print(json.dumps([time.process_time() - t0, admit_loop.work(prep), prep.n]))
"""


def one(name: str, n: int, compiled: bool) -> tuple[float, int, int]:
    code = CODE.format(bench=str(HERE / "benchmarks"), name=name, n=n, compiled=compiled)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    cpu, work, rollouts = json.loads(out.strip().splitlines()[-1])
    return cpu, work, rollouts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="200,1000,5000,20000")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    from sandbox_fleet.simulate.engine.fast.admit_loop import MIN_ROLLOUTS

    print(f"load average {os.getloadavg()[0]:.1f}; worth_it: work >= {MIN_ROLLOUTS:,}")
    for name in ("inference_pool", "timeout_ceiling"):
        sizes = [int(s) for s in a.sizes.split(",") if name != "timeout_ceiling" or int(s) >= 1000]  # one batch: 512
        one(name, sizes[0], True)  # the cache warm
        for n in sizes:
            cpu: dict[bool, list[float]] = {True: [], False: []}
            work = rollouts = 0
            for _ in range(a.rounds):
                for compiled in (True, False):
                    c, work, rollouts = one(name, n, compiled)
                    cpu[compiled].append(c)
            comp, plain = statistics.median(cpu[True]), statistics.median(cpu[False])
            pick = "compiled" if work >= MIN_ROLLOUTS else "plain"
            better = "compiled" if comp < plain else "plain"
            print(f"  {name:<22} {rollouts:>7,} rollouts (work {work:>8,}): compiled {comp:6.2f} s, plain {plain:6.2f} s "
                  f"CPU, compiled/plain {comp / plain:5.2f}; worth_it picks {pick}, cheaper: {better}")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
