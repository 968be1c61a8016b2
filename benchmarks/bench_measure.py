"""Benchmark: `sandbox-fleet measure FILE --json` end to end on synthetic canonical Parquet.

Targets (issue 2, section 6): 327,189 rows under 2 s; 10 million rows under 30 s with
peak memory under 2 GiB. Each run is a fresh CLI process; wall time and peak RSS (from
/usr/bin/time -v, else getrusage in a wrapper) are reported as the median of the runs.

    .venv/bin/python benchmarks/bench_measure.py [--sizes 327189,10000000] [--runs 5,3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_rollouts import generate  # noqa: E402

#: rows -> (wall seconds, peak RSS MiB or None), issue 2 section 6.
TARGETS = {327_189: (2.0, None), 10_000_000: (30.0, 2048)}
CLI = str(Path(sys.executable).with_name("sandbox-fleet"))
WRAP = ("import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(rc)")


def run_once(path: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one CLI run."""
    cmd = [CLI, "measure", str(path), "--json"]
    if os.path.exists("/usr/bin/time"):
        full = ["/usr/bin/time", "-v", *cmd]
    else:
        full = [sys.executable, "-c", WRAP, *cmd]
    t = time.perf_counter()
    proc = subprocess.run(full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"measure failed on {path}:\n{proc.stderr}")
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    kb = int(m.group(1)) if m else int(proc.stderr.strip().splitlines()[-1])
    return wall, kb / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="327189,10000000")
    ap.add_argument("--runs", default="5,3", help="runs per size (comma list, last repeats)")
    ap.add_argument("--keep", help="keep generated files in this folder (reused if present)")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    runs = [int(r) for r in a.runs.split(",")]
    folder = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="bench-measure-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        for i, rows in enumerate(sizes):
            path = folder / f"rollouts-{rows}.parquet"
            if not path.exists():
                t = time.perf_counter()
                generate(str(path), rows, seed=0)
                print(f"generated {rows:,} rows ({path.stat().st_size / 2**20:.0f} MiB) "
                      f"in {time.perf_counter() - t:.1f} s", file=sys.stderr)
            n = runs[min(i, len(runs) - 1)]
            results = [run_once(path) for _ in range(n)]
            walls = [w for w, _ in results]
            rss = [m for _, m in results]
            wall, peak = statistics.median(walls), statistics.median(rss)
            target = TARGETS.get(rows)
            verdict = "" if target is None else (
                f"  [target < {target[0]:g} s" + (f", < {target[1]:,} MiB" if target[1] else "") + ": "
                + ("met]" if wall < target[0] and (not target[1] or peak < target[1]) else "MISSED]"))
            print(f"measure {rows:>11,} rows: median {wall:6.2f} s "
                  f"(min {min(walls):.2f}, max {max(walls):.2f}, {n} runs), "
                  f"peak RSS median {peak:,.0f} MiB (min {min(rss):,.0f}, max {max(rss):,.0f}){verdict}")
    finally:
        if not a.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
