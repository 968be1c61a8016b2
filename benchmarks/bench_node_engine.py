"""Nodes inside the engine against the same engine with a slot-only fleet (issue 37 item 1's speed
target: placing on nodes <= 2x).

One process, ~1M rollouts in three open workloads, one request kind each (1 cpu / 2 GiB / 6 GiB,
2 cpu / 8 GiB / 10 GiB, 8 cpu / 16 GiB / 50 GiB, in shares 0.7 / 0.2 / 0.1; Poisson arrivals at
utilisation 0.7 of 100 nodes of 94 allocatable cpu, exponential holds of mean 600 s), both sides on the
admission kernel (``engine="events"``; compiled, warmed up first) followed by ``summary()``:

- slots: one FIFO pool of as many slots as the 100 nodes hold at the mean request (``bench_nodes.slots``);
- nodes: the same workloads with their requests on a pool made of nodes (``[[fleet.node_pools]]``):
  50 reserved nodes, up to 100 burst nodes joining 60 s after launch, released 300 s after their last
  sandbox, packed: each attempt placed by ``_node_rules.best_fit`` inside the kernel.

Rounds alternate the sides; prints medians (wall and process CPU) and the ratio nodes/slots (target <= 2).

Usage: python benchmarks/bench_node_engine.py [--rounds 5] [--n 1000000]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

KINDS = np.array([[1.0, 2048.0, 6144.0], [2.0, 8192.0, 10240.0], [8.0, 16384.0, 51200.0]])
SHARES = np.array([0.7, 0.2, 0.1])
NODE = {"cpu": 94.0, "memory_mb": 376832.0, "disk_mb": 3_000_000.0}
NODES = 100
HOLD_S = 600.0


def slots() -> int:
    return int(NODES * NODE["cpu"] / float(SHARES @ KINDS[:, 0]))


def workloads(n: int, with_requests: bool):
    from sandbox_fleet.simulate import Exponential, Poisson

    rate_per_s = 0.7 * slots() / HOLD_S
    return [Poisson(name=f"k{j}", rate_per_s=rate_per_s * SHARES[j], n=int(n * SHARES[j]), holds=Exponential(HOLD_S),
                    request=tuple(KINDS[j]) if with_requests else None) for j in range(3)]


def run(n: int, nodes: bool, seed: int = 1):
    from sandbox_fleet.simulate import Fleet, run_workloads
    from sandbox_fleet.simulate.engine.entities import FleetNodePool

    if nodes:
        fleet = Fleet(name="nodes", node_pools=[
            FleetNodePool(name="reserved", tier="reserved", usd_per_node_h=2.9, min_nodes=50, max_nodes=50, **NODE),
            FleetNodePool(name="burst", tier="spot", usd_per_node_h=1.7, max_nodes=NODES, provision_s=60.0,
                     scale_down_s=300.0, **NODE)])
    else:
        fleet = Fleet(cap=slots())
    res = run_workloads(fleet, workloads(n, nodes), seed=seed, engine="events", check=False)
    res.summary()
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=1_000_000)
    a = ap.parse_args()
    from sandbox_fleet.simulate.engine.fast import admit_loop

    admit_loop.load()
    run(20_000, True)  # compile (or load) the node paths before any clock starts
    walls: dict[str, list[float]] = {"slots": [], "nodes": []}
    cpus: dict[str, list[float]] = {"slots": [], "nodes": []}
    res = None
    for _ in range(a.rounds):
        for side in ("slots", "nodes"):
            w0, c0 = time.perf_counter(), time.process_time()
            r = run(a.n, side == "nodes")
            walls[side].append(time.perf_counter() - w0)
            cpus[side].append(time.process_time() - c0)
            assert r.engine == "admission-kernel", r.engine
            if side == "nodes":
                res = r
    med = {k: statistics.median(v) for k, v in walls.items()}
    cmed = {k: statistics.median(v) for k, v in cpus.items()}
    print(f"{sum(int(a.n * s) for s in SHARES):,} rollouts, {slots():,} slots vs 50 + up to {NODES} nodes; "
          f"rounds {a.rounds} (medians)")
    print(f"wall: slot-only {med['slots']:.3f} s; nodes {med['nodes']:.3f} s; ratio {med['nodes'] / med['slots']:.2f}x "
          "(target <= 2)")
    print(f"cpu: slot-only {cmed['slots']:.3f} s; nodes {cmed['nodes']:.3f} s; ratio {cmed['nodes'] / cmed['slots']:.2f}x "
          "(target <= 2)")
    assert res is not None and res.nodes is not None
    for row in res.nodes:
        print(f"nodes {row['name']}: {row['node_hours']:,.0f} node-h, peak {row['peak_nodes']}, launched "
              f"{row['launched']:,}, waited for a join {row['waited']:,}")


if __name__ == "__main__":
    main()
