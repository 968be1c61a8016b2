"""Run every benchmark script in turn and print its output (``./dev bench``).

Each script prints the median of several runs for its own targets; the figures are
recorded by hand in BENCHMARKS.md with the machine they ran on. Pass script names
(e.g. ``bench_simulate``) to run only those; ``--scale F`` is passed to ``bench_optimize``
(default 0.1, the issue's target case).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = ["bench_measure", "bench_tasks", "bench_simulate", "bench_fifo", "bench_closed_loop", "bench_policies", "bench_synth", "bench_plan", "bench_report", "bench_sweep", "bench_startup", "bench_optimize"]


def main(argv: list[str]) -> int:
    extra: dict[str, list[str]] = {}
    if "--scale" in argv:
        i = argv.index("--scale")
        extra["bench_optimize"] = ["--scale", argv[i + 1]]
        argv = argv[:i] + argv[i + 2:]
    names = argv or [n for n in ORDER if (HERE / f"{n}.py").exists()]
    failed = 0
    for name in names:
        script = HERE / f"{name.removesuffix('.py')}.py"
        print(f"\n=== {script.name}", flush=True)
        failed += subprocess.call([sys.executable, str(script), *extra.get(script.stem, [])]) != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
