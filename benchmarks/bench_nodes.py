"""Placing on nodes against the same engine with a slot-only fleet (issue 37's speed target: <= 2x).

One process, 1M rollouts of three request kinds (1 cpu / 2 GiB / 6 GiB, 2 cpu / 8 GiB / 10 GiB,
8 cpu / 16 GiB / 50 GiB, in shares 0.7 / 0.2 / 0.1): the slot-only side is ``run_workloads`` on a
FIFO fleet of as many slots as 100 nodes of 94 allocatable cpu hold at the mean request (Poisson
arrivals at utilisation 0.7, exponential holds of mean 600 s) plus ``summary()``; the node side is
the same run followed by the node replay (``simulate.engine.nodes.replay_nodes``) of its per-rollout
intervals on two pools (50 reserved nodes, up to 100 burst nodes with a 60 s join and a 300 s
scale-down, packed). Rounds alternate the sides; the replay's kernel is compiled (and cached) by a
warm-up run first. Prints medians over the rounds and the ratio nodes/slots (target <= 2).

Usage: python benchmarks/bench_nodes.py [--rounds 5] [--n 1000000]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

KINDS = np.array([[1.0, 2048.0, 6144.0], [2.0, 8192.0, 10240.0], [8.0, 16384.0, 51200.0]])
SHARES = np.array([0.7, 0.2, 0.1])
NODE = (94.0, 376832.0, 3_000_000.0)
NODES = 100
HOLD_S = 600.0


def slots() -> int:
    return int(NODES * NODE[0] / float(SHARES @ KINDS[:, 0]))


def engine(n: int, seed: int = 1):
    from sandbox_fleet.simulate import Exponential, Fleet, Poisson, run_workloads

    c = slots()
    res = run_workloads(Fleet(cap=c), [Poisson(rate_per_s=0.7 * c / HOLD_S, n=n, holds=Exponential(HOLD_S))], seed=seed)
    res.summary()
    return res


def requests(n: int, seed: int = 1) -> np.ndarray:
    """Each rollout's request (cpu, memory MB, disk MB): part of the input, drawn before any clock starts."""
    return KINDS[np.random.default_rng(seed).choice(3, n, p=SHARES)]


def nodes(res, q: np.ndarray):
    from sandbox_fleet.simulate.engine.nodes import NodePoolSpec, replay_nodes

    ok = np.isfinite(res.start_s)
    q = q[: int(ok.sum())]
    pools = [NodePoolSpec("reserved", *NODE, usd_per_node_h=2.9, tier="reserved", min_nodes=50, max_nodes=50),
             NodePoolSpec("burst", *NODE, usd_per_node_h=1.7, tier="spot", max_nodes=NODES, provision_s=60.0,
                          scale_down_s=300.0)]
    return replay_nodes(res.start_s[ok], res.finish_s[ok], q[:, 0], q[:, 1], q[:, 2], pools)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=1_000_000)
    a = ap.parse_args()
    q = requests(a.n)
    nodes(engine(20_000), q)  # compile (or load) the replay kernel before any clock starts
    walls: dict[str, list[float]] = {"slots": [], "nodes": [], "pass": []}
    cpus: dict[str, list[float]] = {"slots": [], "nodes": [], "pass": []}
    for _ in range(a.rounds):
        w0, c0 = time.perf_counter(), time.process_time()
        engine(a.n)
        walls["slots"].append(time.perf_counter() - w0)
        cpus["slots"].append(time.process_time() - c0)
        w0, c0 = time.perf_counter(), time.process_time()
        res = engine(a.n)
        w1, c1 = time.perf_counter(), time.process_time()
        out = nodes(res, q)
        w2, c2 = time.perf_counter(), time.process_time()
        walls["nodes"].append(w2 - w0)
        cpus["nodes"].append(c2 - c0)
        walls["pass"].append(w2 - w1)
        cpus["pass"].append(c2 - c1)
    print(f"{a.n:,} rollouts, {slots():,} slots vs {NODES} + 50 nodes; rounds {a.rounds} (medians)")
    for label, got in (("wall", walls), ("cpu", cpus)):
        s, nd, p = (statistics.median(got[k]) for k in ("slots", "nodes", "pass"))
        print(f"{label}: slot-only engine {s:.3f} s; engine + node replay {nd:.3f} s (the replay alone {p:.3f} s); "
              f"ratio {nd / s:.2f}x (target <= 2)")
    print(f"replay: {out.placed:,} placed, {out.unplaced:,} unplaced, peak burst {out.pools[1].peak_nodes}, "
          f"{out.node_hours:,.0f} node-h, ${out.usd_per_h:,.2f}/h")


if __name__ == "__main__":
    main()
