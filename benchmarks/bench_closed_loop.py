"""The fleet + inference pool as one closed loop: our engine against a SimPy model of it.

``examples/scenarios/closed_loop_rst.toml`` (327,189 rollouts of ~11 turns, cap 3,000, 16
replicas with a prefix cache) scaled by ``--scale`` (rollouts, population, cap and GPUs;
default 0.05). Both engines place the same pre-drawn turns (``prepare``): the SimPy model
has one process per rollout slot and one per replica, the replica running the same
prefill-first, virtual-time processor-sharing iteration model with the same sticky
routing and LRU prefix cache. Prints wall times, events per second (the same event count
for both: the model's events) and the ratio, and the two mean holds (they agree to rounding).
``--full`` also times the unscaled scenario on our engine alone.

Usage: python benchmarks/bench_closed_loop.py [--scale 0.05] [--runs 3] [--full]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from collections import deque
from heapq import heappop, heappush
from pathlib import Path

import numpy as np

from sandbox_fleet.simulate.engine import run_workloads
from sandbox_fleet.simulate.inference.cache import PrefixCache
from sandbox_fleet.simulate.prepare import prepare
from sandbox_fleet.simulate.scenario import build, load_scenario

SCENARIO = Path(__file__).resolve().parents[1] / "examples" / "scenarios" / "closed_loop_rst.toml"


def scaled(scale: float):
    built = build(load_scenario(SCENARIO), SCENARIO.parent, str(SCENARIO))
    if scale != 1.0:
        wl = built.workloads[0]
        wl.population = max(1, round(wl.population * scale))
        wl.n = max(1, round(wl.n * scale))
        built.fleets[0].cap = max(1, round(built.fleets[0].cap * scale))
        built.inference = dataclasses.replace(built.inference, replicas=max(1, round(built.inference.replicas * scale)))
    return built


def ours(built) -> tuple[float, float, int, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    res = run_workloads(built.fleets, built.workloads, built.seed, inference=built.inference)
    wall = time.perf_counter() - t0
    return wall, float(np.mean(res.hold_s)), res.events, time.process_time() - c0


def simpy_loop(built) -> tuple[float, float, float]:
    """The same closed loop in SimPy (timing includes the same up-front draws)."""
    import simpy

    t0, c0 = time.perf_counter(), time.process_time()
    prep = prepare(built.fleets, built.workloads, built.seed, built.inference)
    cfg, td = prep.inference, prep.turn_draws
    off, nt = td.off.tolist(), td.turns.tolist()
    new, dec, cmd = td.new_tokens.tolist(), td.decode_tokens.tolist(), td.command_s.tolist()
    wl = built.workloads[0]
    env = simpy.Environment()
    sandboxes = simpy.Resource(env, capacity=built.fleets[0].cap)
    inv_p, inv_d, b, kvb = 1 / cfg.prefill_tok_s, 1 / cfg.decode_tok_s, cfg.base_units, cfg.kv_bytes_per_token

    class Replica:
        def __init__(self):
            self.inbox = deque()
            self.wake = env.event()
            self.cache = PrefixCache(cfg.kv_cache_bytes, cfg.kv_offload_bytes)
            self.live = 0
            env.process(self.run())

        def submit(self, r, ctx, k):
            done = env.event()
            self.inbox.append((r, ctx, k, done))
            if not self.wake.triggered:
                self.wake.succeed()
            return done

        def run(self):
            v, t, n, heap, prefill, seq = 0.0, 0.0, 0, [], deque(), 0
            while True:
                while self.inbox:  # admit arrivals
                    r, ctx, k, done = self.inbox.popleft()
                    i = off[r] + k
                    cached = ctx if (ctx and self.cache.take(r)) else 0
                    prefill.append(((ctx + new[i] - cached) * inv_p, dec[i] * inv_d, r, ctx + new[i] + dec[i], done))
                if prefill:  # the head's prefill runs whole; decoding waits
                    pre, dwork, r, ctx_after, done = prefill.popleft()
                    if pre > 0:
                        yield env.timeout(pre)
                    t = env.now
                    heappush(heap, (v + dwork, seq, r, ctx_after, done))
                    seq += 1
                    continue
                if not heap:
                    self.wake = env.event()
                    yield self.wake
                    t = env.now
                    continue
                gap = (heap[0][0] - v) * (n_dec(heap) + b)
                self.wake = env.event()
                timer = env.timeout(gap)
                yield env.any_of([timer, self.wake])
                now = env.now
                v += (now - t) / (len(heap) + b)
                t = now
                if timer.triggered and not self.inbox:
                    v = max(v, heap[0][0])
                while heap and heap[0][0] <= v:
                    _, _, r, ctx_after, done = heappop(heap)
                    self.cache.put(r, ctx_after * kvb)
                    done.succeed()

    def n_dec(heap):
        return len(heap)

    reps = [Replica() for _ in range(cfg.replicas)]
    live = [0] * cfg.replicas
    holds = np.zeros(wl.n)
    next_id = [0]

    def slot():
        while next_id[0] < wl.n:
            r = next_id[0]
            next_id[0] += 1
            with sandboxes.request() as req:
                yield req
                start = env.now
                i = min(range(len(live)), key=live.__getitem__)
                live[i] += 1
                ctx = 0
                for k in range(nt[r]):
                    yield reps[i].submit(r, ctx, k)
                    j = off[r] + k
                    ctx += new[j] + dec[j]
                    yield env.timeout(cmd[j])
                live[i] -= 1
                holds[r] = env.now - start

    for _ in range(wl.population):
        env.process(slot())
    env.run()
    return time.perf_counter() - t0, float(holds.mean()), time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=0.05)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--full", action="store_true")
    a = ap.parse_args()
    built = scaled(a.scale)
    w_ours, w_simpy, c_ours, c_simpy = [], [], [], []
    for _ in range(a.runs):
        wall, hold, events, cpu = ours(scaled(a.scale))
        w_ours.append(wall)
        c_ours.append(cpu)
        sw, shold, scpu = simpy_loop(scaled(a.scale))
        w_simpy.append(sw)
        c_simpy.append(scpu)
    mo, ms = statistics.median(w_ours), statistics.median(w_simpy)
    co, cs = statistics.median(c_ours), statistics.median(c_simpy)
    wl = built.workloads[0]
    print(f"closed loop at scale {a.scale}: {wl.n} rollouts, population {wl.population}, "
          f"cap {built.fleets[0].cap}, {built.inference.replicas} replica(s); {events:,} events")
    print(f"  sandbox-fleet: {mo:.2f} s, {events / mo:,.0f} events/s, mean hold {hold:.2f} s")
    print(f"  SimPy:         {ms:.2f} s, {events / ms:,.0f} events/s, mean hold {shold:.2f} s")
    print(f"  ratio: {ms / mo:.1f}x wall, {cs / co:.1f}x CPU (target >= 10x); CPU s {co:.2f} vs {cs:.2f}")
    if a.full:
        wall, hold, events, cpu = ours(scaled(1.0))
        print(f"full scenario: {wall:.1f} s wall ({cpu:.1f} s CPU), {events:,} events, {events / wall:,.0f} events/s, "
              f"mean hold {hold:.1f} s (target <= 60 s)")


if __name__ == "__main__":
    main()
