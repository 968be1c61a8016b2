"""Start-up cost of everyday commands against a minimal peer (issue 12, item 3).

Whole processes, run alternating (peer, then each command, round after round) so a loaded
machine slows all of them alike; each figure is the median wall time and its ratio to the
peer's median in the same run. Target: each command <= 1.6x the peer. Bytecode is compiled
first (one warm-up round not counted). ``--rounds N`` (default 15); ``--src DIR`` times another
checkout's ``src`` (e.g. the commit before this change) with the same interpreter.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = str(ROOT / "examples" / "rst-published.json")
COMMANDS = {
    "peer (Typer + Pydantic, one line)": [str(ROOT / "benchmarks" / "peer_startup.py"), "x"],
    "sandbox-fleet --help": ["-m", "sandbox_fleet.cli", "--help"],
    "plan SUMMARY --node-type seed-96c": ["-m", "sandbox_fleet.cli", "plan", SUMMARY, "--node-type", "seed-96c"],
    "check SUMMARY": ["-m", "sandbox_fleet.cli", "check", SUMMARY],
}


def _once(args: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--src", default=None, help="a src folder to import sandbox_fleet from")
    opts = ap.parse_args()
    env = dict(os.environ)
    if opts.src:
        env["PYTHONPATH"] = opts.src
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for r in range(opts.rounds + 1):
        for name, args in COMMANDS.items():
            t = _once(args, env)
            if r:  # round 0 compiles bytecode and warms the page cache
                times[name].append(t)
    peer = statistics.median(times[next(iter(COMMANDS))])
    print(f"{'command':40s} {'median s':>9s} {'min-max s':>13s} {'x peer':>7s}  (target <= 1.6x)")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:40s} {med:9.3f} {min(ts):6.3f}-{max(ts):<6.3f} {med / peer:7.2f}")


if __name__ == "__main__":
    main()
