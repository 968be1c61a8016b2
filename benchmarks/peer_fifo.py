"""A minimal G/G/c FIFO simulator: the peer the simulator's FIFO path is measured against.

NumPy draws the Poisson arrivals and the exponential holds; the Kiefer-Wolfowitz
recursion places each rollout with one ``heapreplace`` on a heap of ``c`` slot-free
times and stores its start time in a preallocated list. No checks, no summary.

Usage: python benchmarks/peer_fifo.py N C LAMBDA [SEED]   (prints the mean wait)
"""

from __future__ import annotations

import sys
from heapq import heapreplace

import numpy as np


def peer(n: int, c: int, lam: float, mu: float = 1.0, seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    arr = np.cumsum(rng.exponential(1.0 / lam, n)).tolist()
    hold = rng.exponential(1.0 / mu, n).tolist()
    free = [0.0] * c
    start = [0.0] * n
    for i in range(n):
        t = arr[i]
        f = free[0]
        s = f if f > t else t
        heapreplace(free, s + hold[i])
        start[i] = s
    return start


if __name__ == "__main__":
    n, c, lam = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    s = peer(n, c, lam, seed=seed)
    print(f"{n} {c} mean start {sum(s) / n:.6f}")
