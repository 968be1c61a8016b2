"""Admission queues: which waiting rollout takes the next free slot.

Each queue offers ``append(rollout)``, ``popleft() -> rollout`` and ``len()`` so the
engine treats every policy alike (FIFO is a plain ``deque``, the fastest path). The
policies of ``policies.py`` (``"priority"``, ``"timeout-ceiling"``) also decide when a
head may start, so they run the pool's dispatch themselves (``make_policy``).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable


class KeyedQueue:
    """Smallest key first; FIFO among equal keys (a sequence number breaks ties)."""

    __slots__ = ("_heap", "_key", "_seq")

    def __init__(self, key: Callable[[int], float]):
        self._heap: list[tuple[float, int, int]] = []
        self._seq = 0
        self._key = key

    def append(self, rollout: int) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (self._key(rollout), self._seq, rollout))

    def popleft(self) -> int:
        return heapq.heappop(self._heap)[2]

    def __len__(self) -> int:
        return len(self._heap)


def make_queue(policy: str, timeout_of: Callable[[int], float]):
    """``"fifo"`` or ``"shortest-timeout-first"`` (smallest agent timeout first)."""
    if policy == "fifo":
        return deque()
    if policy == "shortest-timeout-first":
        return KeyedQueue(timeout_of)
    raise ValueError(policy)


def make_policy(policy: str, st, p: int):
    """The dispatching queue of a ``policies.POLICIES`` pool, or ``None`` for a plain queue."""
    from sandbox_fleet.simulate.engine import policies

    return policies.make(policy, st, p) if policy in policies.POLICIES else None
