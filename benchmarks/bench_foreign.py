"""Benchmark: `sandbox-fleet measure FILE --json` on a foreign RST-layout file vs one DuckDB query.

Issue 28.2: whole-process ``measure`` <= 2.5x ``peer_measure.py`` (the same DuckDB peer as
``bench_measure.py``: peak and mean concurrency and hold quantiles in one query) at 2.4M and
10M rows of a corpus this project's canonical generator did not write (``gen_foreign.py``: the
16 columns of an RST release's trajectories file, unique hex ids, plain-string names, shard and
member paths, nullable token counts, PyArrow's writer defaults, rows not in time order).
Issue 28.4: 30M rows within 6 GiB peak RSS (``--sizes 30000000``). Fresh processes, measure and
the peer alternating (the first of each pair alternating too); medians, per-pair spread, CPU
time and peak RSS as in ``bench_measure.py``. Bytecode is compiled first, as a wheel has it.

    .venv/bin/python benchmarks/bench_foreign.py [--sizes 2400000,10000000] [--runs 5,3] [--keep DIR] [--time-unit us]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_measure import bench_size, each_size  # noqa: E402
from bytecode import compile_package  # noqa: E402
from gen_foreign import generate  # noqa: E402

RATIO_TARGET = 2.5
#: Issue 28.4: 30M rows within 6 GiB.
RSS_TARGET_MIB = {30_000_000: 6 * 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2400000,10000000")
    ap.add_argument("--runs", default="5,3", help="runs per size (comma list, last repeats)")
    ap.add_argument("--keep", help="keep generated files in this folder (reused if present)")
    ap.add_argument("--time-unit", choices=["us", "ns"], default="us", help="timestamp unit of the generated files")
    a = ap.parse_args()
    compile_package()
    make = lambda path, rows: generate(str(path), rows, seed=0, time_unit=a.time_unit)  # noqa: E731
    for path, rows, n_runs in each_size(a, f"foreign-{a.time_unit}", make):
        print(bench_size(path, rows, n_runs, ratio_target=RATIO_TARGET, rss_target_mib=RSS_TARGET_MIB.get(rows),
                         absolute=False), flush=True)


if __name__ == "__main__":
    main()
