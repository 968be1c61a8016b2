"""Measure's passes and the small scheduler that places them on lanes and frees their values.

A ``Pass`` is one named step: a figure of the summary, or a value later passes read (the
frame, the sorted starts, the group rows). It declares the values it reads (``needs``) and the
passes that must be finished before it starts although it reads nothing of theirs (``after``:
buffers that should never coexist, for peak memory). A plan places each pass, in order, on a
lane: ``HERE`` (the calling thread), a worker lane (1, 2, ...: one thread each, running its
passes in plan order), or ``ANY`` (a queue that every lane drains when it would otherwise wait
or idle). ``run_plan`` walks the plan and drops each value once the last pass reading it is
done, so memory is freed by the plan, not by hand.

Each pass is a function of its inputs only, so which lane ran it, and when, never changes its
value: a schedule changes time and peak memory, never a figure.
"""

from __future__ import annotations

import contextvars
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

HERE = 0
ANY = -1


class SharedJobs:
    """Queued jobs run once each, by whichever thread calls ``drain`` first; ``results`` waits."""

    def __init__(self, jobs: Iterable[Callable[[], object]] = ()):
        self._jobs: list[Callable[[], object] | None] = []
        self._futures: list[Future] = []
        self._next = 0
        self._lock = threading.Lock()
        self.add(jobs)

    def add(self, jobs: Iterable[Callable[[], object]]) -> list[Future]:
        """Queue ``jobs`` behind those already queued; their futures, in order."""
        jobs = list(jobs)
        futures: list[Future] = [Future() for _ in jobs]
        with self._lock:
            self._jobs.extend(jobs)
            self._futures.extend(futures)
        return futures

    def drain(self, until: Future | None = None) -> None:
        """Run queued jobs on this thread until none is left (others may be running elsewhere)
        or, with ``until``, until that future is done (checked before each job)."""
        while until is None or not until.done():
            with self._lock:
                i = self._next
                if i >= len(self._jobs):
                    return
                self._next += 1
                job, self._jobs[i] = self._jobs[i], None  # drop the closure once taken (its buffers go)
                future = self._futures[i]
            assert job is not None  # each index is taken once, under the lock
            try:
                future.set_result(job())
            except BaseException as exc:  # re-raised where the result is asked for
                future.set_exception(exc)

    def results(self) -> list:
        """Every job's result in queue order; runs what is left here, then waits for the rest."""
        self.drain()
        return [f.result() for f in self._futures]


@dataclass(frozen=True)
class Pass:
    """``run(*values of needs)`` gives the value named ``name``.

    ``fanout``: ``run`` returns zero-argument jobs instead, queued on the shared queue (any
    lane runs them); the value is their results in order. ``label``: the progress bar's step
    once done (figures; None for intermediate values)."""

    name: str
    run: Callable[..., object]
    needs: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    fanout: bool = False
    label: str | None = None


class _Schedule:
    def __init__(self, passes: Sequence[Pass], plan: Sequence[tuple[str, int]], inputs: dict,
                 keep: Sequence[str], advance: Callable[[str], None]):
        self.passes = {p.name: p for p in passes}
        self.plan = list(plan)
        self.values = inputs  # taken over, not copied: a copy would keep every input alive to the end
        self.done: dict[str, Future] = {}
        for name in inputs:
            self.done[name] = _finished()
        for name, _ in self.plan:
            p = self.passes[name]
            unknown = [n for n in p.needs + p.after if n not in self.done]
            if unknown or name in self.done:
                raise ValueError(f"plan: pass {name!r} placed twice or before {unknown}")
            self.done[name] = Future()
        self.readers = Counter(n for name, _ in self.plan for n in self.passes[name].needs)
        self.keep = set(keep)
        self.lock = threading.Lock()
        self.shared = SharedJobs()
        self.advance = advance

    def _await(self, names: Iterable[str], drain: bool) -> None:
        for name in names:
            if drain:  # this lane would wait: run shared jobs meanwhile
                self.shared.drain(until=self.done[name])
            self.done[name].result()

    def _run(self, p: Pass, drain: bool) -> None:
        """Run ``p`` on this thread once its inputs are there; its outcome goes to ``done``."""
        try:
            self._await(p.after + p.needs, drain)
            args = [self.values[n] for n in p.needs]
            value = p.run(*args)
            del args
            if p.fanout:
                self._gather(p, value)
            else:
                self._finish(p, value)
        except BaseException as exc:
            if not self.done[p.name].done():
                self.done[p.name].set_exception(exc)

    def _gather(self, p: Pass, jobs) -> None:
        futures = self.shared.add(jobs)
        left = [len(futures)]

        def one_done(_: Future) -> None:
            with self.lock:
                left[0] -= 1
                last = left[0] == 0
            if last:
                try:
                    self._finish(p, [f.result() for f in futures])
                except BaseException as exc:
                    self.done[p.name].set_exception(exc)

        if not futures:
            self._finish(p, [])
        for f in futures:
            f.add_done_callback(one_done)

    def _finish(self, p: Pass, value: object) -> None:
        self.values[p.name] = value
        with self.lock:
            for n in p.needs:  # the last reader of a value done: drop it (its buffers are freed)
                self.readers[n] -= 1
                if self.readers[n] == 0 and n not in self.keep:
                    self.values.pop(n, None)
        self.done[p.name].set_result(None)
        if p.label is not None:
            self.advance(p.label)

    def run(self) -> dict:
        last = {lane: i for i, (_, lane) in enumerate(self.plan) if lane > HERE}
        lanes = {lane: ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"measure-lane{lane}") for lane in last}
        try:
            for i, (name, lane) in enumerate(self.plan):
                p = self.passes[name]
                if lane == HERE:
                    self._run(p, drain=True)
                    if not p.fanout or self.done[name].done():  # a fanout's jobs are queued, not awaited
                        self.done[name].result()  # a failure here stops the walk
                elif lane == ANY:
                    self._await(p.after + p.needs, drain=True)  # queued ready: a queued job never waits on this lane
                    self.shared.add([partial(self._run, p, False)])
                else:
                    # A lane runs in a copy of the caller's context (its context variables, such
                    # as NumPy's allocator, hold there too); one copy a call, as a context is
                    # entered by one thread at a time.
                    lanes[lane].submit(contextvars.copy_context().run, self._run, p, False)
                    if last[lane] == i:  # its last pass: the lane then helps with the shared queue
                        lanes[lane].submit(contextvars.copy_context().run, self.shared.drain)
            self._await(self.keep, drain=True)
            self.shared.drain()
            self._await((name for name, _ in self.plan), drain=False)
        finally:
            for name, _ in self.plan:  # after a failure: release lanes waiting on passes never run
                if not self.done[name].done():
                    self.done[name].set_exception(RuntimeError(f"measure pass {name!r} not run: an earlier pass failed"))
            for pool in lanes.values():
                pool.shutdown(wait=True)
        return {name: self.values[name] for name in self.keep}


def _finished() -> Future:
    f: Future = Future()
    f.set_result(None)
    return f


def run_plan(passes: Sequence[Pass], plan: Sequence[tuple[str, int]], inputs: dict, keep: Sequence[str],
             advance: Callable[[str], None] = lambda label: None) -> dict:
    """Run every pass of ``plan`` (``(name, lane)`` in order) on ``inputs``; the ``keep`` values.

    ``inputs`` is taken over: its entries are dropped as their last reader is done (so the
    caller must hold no other reference for their memory to be freed).

    Raises the first failure of a pass the walk waited on (a pass's own exception, unchanged).
    """
    return _Schedule(passes, plan, inputs, keep, advance).run()
