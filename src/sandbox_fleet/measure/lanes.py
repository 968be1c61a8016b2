"""Jobs either of two lanes may run: whichever lane is free first takes the next one.

The last stage of ``measure`` has work tied to a lane (the hold sorts on one, the token and
outcome passes on the other) and independent pieces that fit anywhere. Both lanes drain the
same queue once their own work is done, so neither core idles while the other has a backlog.
Each job is a pure function of read-only inputs: which thread ran it never changes its result.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future


class SharedJobs:
    """Queued jobs run once each, by whichever thread calls ``drain`` first; ``results`` waits."""

    def __init__(self, jobs: list[Callable[[], object]]):
        self._jobs: list[Callable[[], object] | None] = list(jobs)
        self._futures: list[Future] = [Future() for _ in self._jobs]
        self._next = 0
        self._lock = threading.Lock()

    def drain(self, until: Future | None = None) -> None:
        """Run queued jobs on this thread until none is left (others may be running elsewhere)
        or, with ``until``, until that future is done (checked before each job)."""
        while until is None or not until.done():
            with self._lock:
                i = self._next
                if i >= len(self._jobs):
                    return
                self._next += 1
            job, self._jobs[i] = self._jobs[i], None  # drop the closure once run (its buffers go)
            assert job is not None  # each index is taken once, under the lock
            try:
                self._futures[i].set_result(job())
            except BaseException as exc:  # re-raised in ``results`` on the caller's thread
                self._futures[i].set_exception(exc)

    def results(self) -> list:
        """Every job's result in queue order; runs what is left here, then waits for the rest."""
        self.drain()
        return [f.result() for f in self._futures]
