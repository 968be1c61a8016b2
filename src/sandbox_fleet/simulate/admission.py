"""Admission queues: which waiting rollout takes the next free slot.

Each queue offers ``append(rollout)``, ``popleft() -> rollout`` and ``len()`` so the
engine treats every policy alike (FIFO is a plain ``deque``, the fastest path).

This is the event loop's admission seam: ``LoopState.dispatch`` hands a pool's free slot
to ``queue.popleft()`` (``make_queue`` builds the queue of a pool's ``admission`` policy).
A new policy adds its queue to ``make_queue``; one that only reorders the queue (the
rollout it names always takes the free slot) also joins ``ORDERS_ONLY``, so the loop may
hand slots over inline; one that can hold a rollout back while a slot is free (a quota)
stays out of it and runs through ``dispatch`` alone. Only ``"fifo"`` runs on the FIFO
recursion (``executors.pool_refusal``).
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


#: Policies whose queue only orders the waiting rollouts (see the module docstring).
ORDERS_ONLY = frozenset({"fifo", "shortest-timeout-first"})


def orders_only(policy: str) -> bool:
    """Whether ``policy``'s first in line always takes a free slot (the loop may inline it)."""
    return policy in ORDERS_ONLY


def make_queue(policy: str, timeout_of: Callable[[int], float]):
    """``"fifo"`` or ``"shortest-timeout-first"`` (smallest agent timeout first)."""
    if policy == "fifo":
        return deque()
    if policy == "shortest-timeout-first":
        return KeyedQueue(timeout_of)
    raise ValueError(policy)
