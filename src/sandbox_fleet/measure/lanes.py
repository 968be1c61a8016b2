"""Measure's passes, and the runner that starts them in order on a small thread pool and frees their values.

A ``Pass`` is one named step: a figure of the summary, or a value later passes read (the
frame, the sorted starts, the group rows). It declares the values it reads (``needs``) and the
passes that must be finished before it starts although it reads nothing of theirs (``after``:
buffers that should never coexist, for peak memory). ``run_plan`` submits the passes, in list
order, to a first-in first-out pool of ``workers`` threads; each waits for what it reads, and each
value is dropped once the last pass reading it is done, so memory is freed by the plan, not by hand.
As every pass waits only on passes listed before it, and the pool takes them in that order, a
waiting pass always waits on one already running or done: no order of the threads deadlocks.

Each pass is a function of its inputs only, so which thread ran it, and when, never changes its
value: the worker count changes time and peak memory, never a figure.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass


@dataclass(frozen=True)
class Pass:
    """``run(*values of needs)`` gives the value named ``name``; ``label``: the progress bar's
    step once done (figures; None for intermediate values)."""

    name: str
    run: Callable[..., object]
    needs: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    label: str | None = None


def run_plan(passes: Sequence[Pass], inputs: dict, keep: Sequence[str], advance: Callable[[str], None] = lambda label: None,
             workers: int = 1) -> dict:
    """Run every pass, in order, on ``inputs``; the ``keep`` values.

    ``inputs`` is taken over: its entries are dropped as their last reader is done (so the
    caller must hold no other reference for their memory to be freed). Raises a pass's own
    exception, unchanged (the first in list order), and ValueError for a pass listed before
    a value it reads or waits on."""
    values, lock = inputs, threading.Lock()
    readers = Counter(n for p in passes for n in p.needs)
    done: dict[str, Future] = {}
    for name in inputs:
        done[name] = Future()
        done[name].set_result(None)

    def run(p: Pass) -> None:
        for n in p.after + p.needs:
            done[n].result()  # an earlier pass's failure is raised here too
        value = p.run(*[values[n] for n in p.needs])
        with lock:
            values[p.name] = value
            for n in p.needs:  # the last reader of a value done: drop it (its buffers are freed)
                readers[n] -= 1
                if readers[n] == 0 and n not in keep:
                    values.pop(n, None)
        if p.label is not None:
            advance(p.label)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="measure") as pool:
        try:
            for p in passes:
                unknown = [n for n in p.needs + p.after if n not in done]
                if unknown or p.name in done:
                    raise ValueError(f"plan: pass {p.name!r} placed twice or before {unknown}")
                done[p.name] = pool.submit(run, p)
            for f in done.values():
                f.result()
        except BaseException:
            pool.shutdown(cancel_futures=True)  # the passes not started yet never run
            raise
    return {name: values[name] for name in keep}
