"""Policy pools on the admission kernel: this tree against a base tree, side by side (issue 36's
registered policies: the hooks reached through a dispatch generated from ``policy_registry``).

``shared_pool_priority.toml`` and ``timeout_ceiling.toml`` with their counts raised to
``--rollouts`` (``bench_policies.scaled``). Each round runs one fresh process per tree, alternating
(``PYTHONPATH`` on the tree's ``src``); each process loads the compiled kernel from its cache before
the clock (``admit_loop.load``) and times ``run_workloads(..., check=False)`` on the scaled scenario
(wall and CPU), and prints a digest of the finish times (the two trees must place the same bytes).

Usage: python benchmarks/policy_registry_ab.py --base-src DIR [--rounds 5] [--rollouts 200000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OURS = HERE.parent / "src"
NAMES = ("shared_pool_priority", "timeout_ceiling")


def child(name: str, rollouts: int) -> None:
    sys.path.insert(0, str(HERE))
    from bench_policies import scaled
    from sandbox_fleet.simulate.engine.fast import admit_loop
    from sandbox_fleet.simulate.engine.run import run_workloads

    admit_loop.load()
    built = scaled(name, rollouts)
    w0, c0 = time.perf_counter(), time.process_time()
    res = run_workloads(built.fleets, built.workloads, built.seed, check=False)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    digest = hashlib.sha256(res.finish_s.tobytes()).hexdigest()[:16]
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "digest": digest, "src": admit_loop.__file__}))


def run(src: Path, name: str, rollouts: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src), "SANDBOX_FLEET_PURE_PYTHON": ""}
    out = subprocess.run([sys.executable, __file__, "--child", name, "--rollouts", str(rollouts)],
                         check=True, env=env, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-src", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rollouts", type=int, default=200_000)
    ap.add_argument("--child")
    a = ap.parse_args()
    if a.child:
        child(a.child, a.rollouts)
        return
    assert a.base_src is not None, "--base-src DIR: the base tree's src"
    trees = {"base": a.base_src.resolve(), "ours": OURS}
    for name in NAMES:
        for t in trees.values():  # warm each tree's cache (compile once, outside the timing)
            run(t, name, 2_000)
        got: dict[str, list[dict]] = {k: [] for k in trees}
        for i in range(a.rounds):
            for k in (trees if i % 2 == 0 else reversed(list(trees))):
                got[k].append(run(trees[k], name, a.rollouts))
        digests = {r["digest"] for rs in got.values() for r in rs}
        med = {k: (statistics.median(r["wall_s"] for r in rs), statistics.median(r["cpu_s"] for r in rs))
               for k, rs in got.items()}
        print(f"{name} at {a.rollouts:,} rollouts, {a.rounds} rounds, load {os.getloadavg()[0]:.1f}: "
              f"base wall {med['base'][0]:.3f} s cpu {med['base'][1]:.3f} s; ours wall {med['ours'][0]:.3f} s "
              f"cpu {med['ours'][1]:.3f} s; ours/base wall {med['ours'][0] / med['base'][0]:.3f}x "
              f"cpu {med['ours'][1] / med['base'][1]:.3f}x; same finish times: {len(digests) == 1}")
        for k, rs in got.items():
            print(f"  {k} ({rs[0]['src']}): wall " + ", ".join(f"{r['wall_s']:.3f}" for r in rs)
                  + "; cpu " + ", ".join(f"{r['cpu_s']:.3f}" for r in rs))


if __name__ == "__main__":
    main()
