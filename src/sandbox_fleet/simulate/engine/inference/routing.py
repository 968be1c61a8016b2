"""Routing a model call to a replica.

- ``sticky`` (default): a rollout's first call goes to the replica with the fewest live
  rollouts (lowest index on ties) and every later call follows it, so its prefix cache
  is where its prefix is.
- ``least-loaded``: every call goes to the replica with the fewest calls in service or
  waiting for a seat (lowest index on ties), wherever the prefix is cached.
"""

from __future__ import annotations


def fewest(counts: list[int]) -> int:
    """Index of the smallest count, lowest index on ties."""
    best, low = 0, counts[0]
    for i in range(1, len(counts)):
        c = counts[i]
        if c < low:
            best, low = i, c
    return best
