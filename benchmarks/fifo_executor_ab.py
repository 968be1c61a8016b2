"""The one-pass FIFO executor alone, in one process: this checkout's ``fifo.run_one_pass`` (the compiled
rule) against the former C path (the base checkout's built ``_fifo_speedups``, driven as its
``run_one_pass`` did), on the same prepared 1.2M-rollout M/M/c runs, interleaved, CPU medians of 7.
Separates the executor from the rest of a run (``prepare``, checks, summary), which ``bench_fifo.py``'s
fresh processes time together.

Usage: python benchmarks/fifo_executor_ab.py --base-src DIR
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from pathlib import Path

import numpy as np

from sandbox_fleet.simulate import Exponential, Fleet, Poisson
from sandbox_fleet.simulate.engine import fifo
from sandbox_fleet.simulate.engine.fast import fifo_compiled
from sandbox_fleet.simulate.engine.prepare import prepare
from sandbox_fleet.simulate.engine.result import ExecutorOutput


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-src", required=True)
    args = ap.parse_args()
    built = sorted((Path(args.base_src) / "sandbox_fleet" / "simulate" / "engine").glob("_fifo_speedups*.so"))
    spec = importlib.util.spec_from_file_location("_fifo_speedups", built[0])
    assert spec is not None and spec.loader is not None
    C = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(C)
    fifo_compiled.load()

    def c_one_pass(prep):  # the base's run_one_pass for an in-order run, on its C twin
        start = np.empty(prep.n)
        C.place_stream(np.zeros(prep.pools[0].cap), np.ascontiguousarray(prep.arr_t_np),
                       np.ascontiguousarray(prep.hold_np), prep.pools[0].provision_delay_s, start, None)
        extra: dict[str, list] = {k: [] for k in (*fifo.RETRY_COLUMNS, "finish_s")}
        return ExecutorOutput(first=fifo._first_rows(prep, prep.arr_t_np, start, prep.plan.copy()), extra=extra)

    for c in (10, 3000):
        prep = prepare(Fleet(cap=c), [Poisson(rate_per_s=0.7 * c, n=1_200_000, holds=Exponential(1.0))], 1)
        t: dict[str, list[float]] = {"ours": [], "base C": []}
        for _ in range(7):
            for name, fn in (("ours", fifo.run_one_pass), ("base C", c_one_pass)):
                c0 = time.process_time()
                fn(prep)
                t[name].append(time.process_time() - c0)
        same = np.array_equal(fifo.run_one_pass(prep).first["start_s"].view(np.uint64),
                              c_one_pass(prep).first["start_s"].view(np.uint64))
        med = {k: statistics.median(v) for k, v in t.items()}
        print(f"c={c:<5} one-pass executor, 1.2M rollouts: ours {med['ours'] * 1e3:.1f} ms, base C {med['base C'] * 1e3:.1f} ms "
              f"(ours/base time {med['ours'] / med['base C']:.2f}); identical start times: {same}")


if __name__ == "__main__":
    main()
