"""Admission queues: which waiting rollout takes the next free slot.

Each queue offers ``append(rollout)``, ``popleft() -> rollout`` and ``len()`` so the
pure loop treats both plain queues alike (FIFO is a plain ``deque``, the fastest path). The
policies of ``policies.py`` (``"priority"``, ``"timeout-ceiling"``) also decide when a head
may start; the admission kernel runs them (the pure loop's, its oracle, live in ``tests/``).
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

