"""The mixed purchase's R-search with each candidate's provisioning waits (plan/order_wait.py) against the
plain R-search without them, on bursty RL histories of 1M and 3M rollouts (issue 37).

The history is shaped like users' synchronous-RL runs (tests/simulate/test_node_replay.py's
``bursty_rl`` at scale): steps of ``--batch`` rollouts released within 5 s, lognormal holds (median
240 s, sigma 1.1: most short, a few long), the next release 120 s after the step's last end; three
request kinds (1 cpu / 2 GiB / 6 GiB, 2 / 8 GiB / 10 GiB, 8 / 16 GiB / 50 GiB in shares 0.7 / 0.2 / 0.1)
on nodes of 94 cpu / 368 GiB / 2.9 TB.

Both sides are ``plan.mixed_replay.replay_mixed`` on the same history, candidates and replays (every R
up to the budget, else the grid and the R around its best): "waits" is it as ``plan`` runs it (each R's
replay read by ``order_wait.wait_cost`` against the steps, ``--tolerance`` 1%); "plain" is the same
function with the waits taken out (``step_releases_of`` and ``wait_cost`` replaced by no-ops in that
process only), the R-search issue 37 first landed. Each side of each round runs in its own fresh
process (a warm-up there compiles or loads the replay kernel before its clock starts), so its peak
RSS (``ru_maxrss``) is its own; rounds alternate the sides. Prints medians of wall, CPU and peak RSS
and the ratio waits / plain, and checks both sides chose the same R when the waits rule none out.

Usage: python benchmarks/bench_order_wait.py [--n 1000000] [--rounds 3] [--batch 2048]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

KINDS = [[1.0, 2048.0, 6144.0], [2.0, 8192.0, 10240.0], [8.0, 16384.0, 51200.0]]
SHARES = [0.7, 0.2, 0.1]
NODE = {"cpu": 94.0, "memory": 376832.0, "disk": 3_000_000.0}


def history(n: int, batch: int, seed: int = 3):
    """``n`` rollouts in synchronous steps of ``batch`` (the last step shorter), as ``RolloutIntervals``."""
    import numpy as np

    from sandbox_fleet.measure.intervals import RolloutIntervals

    rng = np.random.default_rng(seed)
    sizes = [batch] * (n // batch) + ([n % batch] if n % batch else [])
    holds = rng.lognormal(np.log(240.0), 1.1, n)
    jitter = rng.uniform(0.0, 5.0, n)
    start = np.empty(n)
    t, at = 0.0, 0
    for b in sizes:
        s = t + jitter[at:at + b]
        start[at:at + b] = s
        t = float((s + holds[at:at + b]).max()) + 120.0
        at += b
    q = np.asarray(KINDS)[rng.choice(3, n, p=SHARES)]
    return RolloutIntervals(start_s=start, end_s=start + holds, cpu=q[:, 0], memory_mb=q[:, 1], disk_mb=q[:, 2])


def side(which: str, n: int, batch: int) -> dict:
    """One side in this process: warm-up, then the timed R-search; its figures as a dict."""
    import resource
    import time

    from sandbox_fleet.plan import mixed_replay
    from sandbox_fleet.plan.model import Mixed
    from sandbox_fleet.plan.order_wait import WaitCost
    from sandbox_fleet.plan.slots import ResourceRequest

    if which == "plain":  # the waits taken out: no steps read, every R costs no time
        mixed_replay.step_releases_of = lambda start_s, end_s: None  # type: ignore[assignment]
        mixed_replay.wait_cost = lambda *a, **k: WaitCost("rollouts", 0.0, None, 0.0, 0.0)  # type: ignore[assignment]
    slot = Mixed(reserved_nodes=0, burst_nodes=0, burst_tier="spot", usd_per_h=0.0, reserved_usd_per_node_h=2.9,
                 burst_usd_per_node_h=1.7)
    fallback = ResourceRequest(cpu=1.0, memory=2048.0, disk=6144.0)
    from sandbox_fleet.simulate.engine.nodes import load

    load()  # the replay kernel compiled (or loaded from its cache) before the clock starts
    mixed_replay.replay_mixed(slot, history(20_000, batch), NODE, fallback, tolerance=0.01)
    h = history(n, batch)
    w0, c0 = time.perf_counter(), time.process_time()
    got = mixed_replay.replay_mixed(slot, h, NODE, fallback, tolerance=0.01)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    rp = got.replay
    assert rp is not None
    return {"wall_s": wall, "cpu_s": cpu, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
            "reserved": got.reserved_nodes, "usd_per_h": got.usd_per_h, "peak": rp.peak_nodes,
            "replays": sum(c is not None for c in rp.usd_per_h_by_reserved or []),
            "costs": rp.usd_per_h_by_reserved, "slowdown": rp.wait.slowdown if rp.wait is not None else None}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--side", choices=("waits", "plain"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.side is not None:
        print(json.dumps(side(a.side, a.n, a.batch)))
        return
    runs: dict[str, list[dict]] = {"waits": [], "plain": []}
    for k in range(a.rounds):
        for which in (("waits", "plain") if k % 2 == 0 else ("plain", "waits")):
            out = subprocess.run([sys.executable, __file__, "--side", which, "--n", str(a.n), "--batch", str(a.batch)],
                                 check=True, capture_output=True, text=True).stdout
            runs[which].append(json.loads(out.strip().splitlines()[-1]))
    med = {w: {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "cpu_s", "rss_mb")} for w, rs in runs.items()}
    w, p = runs["waits"][0], runs["plain"][0]
    print(f"{a.n:,} rollouts in steps of {a.batch:,}; peak {w['peak']} nodes, {w['replays']} replays a side; "
          f"rounds {a.rounds} (medians)")
    for which in ("waits", "plain"):
        m = med[which]
        print(f"  {which:5s}: wall {m['wall_s']:.2f} s, cpu {m['cpu_s']:.2f} s, peak RSS {m['rss_mb']:,.0f} MB")
    print(f"  ratio waits / plain: wall {med['waits']['wall_s'] / med['plain']['wall_s']:.2f}x, "
          f"cpu {med['waits']['cpu_s'] / med['plain']['cpu_s']:.2f}x, "
          f"RSS {med['waits']['rss_mb'] / med['plain']['rss_mb']:.2f}x")
    print(f"  chosen: waits R = {w['reserved']} (${w['usd_per_h']:,.2f}/h, mean step +{(w['slowdown'] or 0.0):.2%}); "
          f"plain R = {p['reserved']} (${p['usd_per_h']:,.2f}/h); same costs by R: {w['costs'] == p['costs']}")


if __name__ == "__main__":
    main()
