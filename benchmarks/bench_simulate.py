"""Simulator speed: the same M/M/c model in SimPy and in sandbox-fleet, and an
RST-scale synchronous-RL campaign.

Prints the median of several runs (the lead records the figures in BENCHMARKS.md):
- M/M/c (lambda 7/s, mu 1/s, c 10, 200,000 rollouts): mean queue wait from both (same
  within noise, and against Erlang C), rollouts per second of each, and the ratio.
  Both timings include drawing the random numbers; ours includes the invariant checks.
- RST-like campaign: 327,189 rollouts, cap 3,000, batch-released sync RL with a 2 s
  slot-refill delay and lognormal holds: wall time of ``run_workloads``.

Usage: python benchmarks/bench_simulate.py [--runs 5] [--n 200000]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

from sandbox_fleet.simulate import Exponential, Fleet, LogNormal, Poisson, SyncRL, run_workloads

LAM, MU, C = 7.0, 1.0, 10


def erlang_c_wait(lam: float, mu: float, c: int) -> float:
    a = lam / mu
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top) / (c * mu - lam)


def simpy_mmc(n: int, seed: int) -> tuple[float, float]:
    """M/M/c in SimPy: a generator process per rollout on a Resource of capacity c."""
    import simpy

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1 / LAM, n)
    service = rng.exponential(1 / MU, n)
    env = simpy.Environment()
    slots = simpy.Resource(env, capacity=C)
    waits = np.empty(n)

    def rollout(i):
        arrived = env.now
        with slots.request() as req:
            yield req
            waits[i] = env.now - arrived
            yield env.timeout(service[i])

    def source():
        for i in range(n):
            yield env.timeout(gaps[i])
            env.process(rollout(i))

    env.process(source())
    env.run()
    return float(waits.mean()), time.perf_counter() - t0


def ours_mmc(n: int, seed: int, engine: str = "auto") -> tuple[float, float]:
    t0 = time.perf_counter()
    res = run_workloads(Fleet(cap=C), [Poisson(rate_per_s=LAM, n=n, holds=Exponential(1 / MU))], seed=seed, engine=engine)
    wait = float(np.mean(res.start_s - res.arrival_s))
    return wait, time.perf_counter() - t0


def rst_campaign(seed: int) -> tuple[dict, float]:
    """Four sync-RL runs sharing a 3,000-slot pool, 327,189 rollouts in all."""
    n, runs, steps = 327_189, 4, 40
    per = np.full(runs * steps, n // (runs * steps))
    per[: n - per.sum()] += 1  # 327,189 rollouts exactly
    t0 = time.perf_counter()
    res = run_workloads(
        Fleet(cap=3000, provision_delay_s=2.0),
        [SyncRL(batch=per[k * steps : (k + 1) * steps], train_s=900.0, start_s=k * 3600.0,
                holds=LogNormal(1332.0, 1.05), name=f"run{k}") for k in range(runs)],
        seed=seed,
    )
    wall = time.perf_counter() - t0
    return res.summary(), wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--n", type=int, default=200_000)
    args = ap.parse_args()
    n = args.n

    rows = {"simpy": [], "ours": [], "ours_events": []}
    waits = {"simpy": [], "ours": [], "ours_events": []}
    for run in range(args.runs):
        # Interleaved so machine load affects both alike.
        for name, fn in (("simpy", lambda run=run: simpy_mmc(n, run)), ("ours", lambda run=run: ours_mmc(n, run)),
                         ("ours_events", lambda run=run: ours_mmc(n, run, "events"))):
            w, dt = fn()
            rows[name].append(n / dt)
            waits[name].append(w)
    theory = erlang_c_wait(LAM, MU, C)
    print(f"M/M/c lambda={LAM} mu={MU} c={C}, {n:,} rollouts, median of {args.runs} runs")
    print(f"  Erlang C mean wait          {theory:.5f} s")
    for name in rows:
        print(f"  {name:12s} mean wait {statistics.mean(waits[name]):.5f} s   "
              f"{statistics.median(rows[name]):>12,.0f} rollouts/s")
    print(f"  ratio ours/simpy            {statistics.median(rows['ours']) / statistics.median(rows['simpy']):.1f}x "
          f"(general event loop: {statistics.median(rows['ours_events']) / statistics.median(rows['simpy']):.1f}x)")

    walls = []
    for run in range(args.runs):
        s, wall = rst_campaign(run)
        walls.append(wall)
    c = s["concurrency"]
    print(f"RST-like sync-RL campaign: {s['rollouts']:,} rollouts, cap 3,000: "
          f"median {statistics.median(walls):.2f} s (min {min(walls):.2f} s) over {args.runs} runs")
    print(f"  sim {s['sim_time_s'] / 86400:.1f} d, mean concurrency {c['mean']:.1f}, "
          f"peak {c['peak']}, {c['touches']} touches, {c['time_at_peak_s']:.0f} s at peak")


if __name__ == "__main__":
    main()
