"""Start-up cost of everyday commands against a minimal peer (issue 12, item 3).

Whole processes, run alternating (peer, then each command, round after round) so a loaded
machine slows all of them alike; each figure is the median wall time with its spread (min-max)
and its ratio to the peer's median in the same run, and the median CPU time (user + system of the
process) with its spread and ratio too: on a loaded machine CPU time is the steadier of the two.
Targets (issue 28, CPU time): ``plan SUMMARY`` (every node type, rent vs buy) <= 1.6x the peer and
``check SUMMARY`` <= 1.3x; the others are shown for reference (issue 12: each <= 1.6x). Bytecode is compiled first with ``compileall`` (so a
``PYTHONDONTWRITEBYTECODE`` environment still times compiled code), and one warm-up round is not
counted. ``--rounds N`` (default 15); ``--src DIR`` times another checkout's ``src`` (e.g. the
commit before this change) with the same interpreter.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bytecode import compile_package  # noqa: E402

SUMMARY = str(ROOT / "examples" / "rst-published.json")
COMMANDS = {
    "peer (Typer + Pydantic, one line)": [str(ROOT / "benchmarks" / "peer_startup.py"), "x"],
    "sandbox-fleet --help": ["-m", "sandbox_fleet.cli", "--help"],
    "plan SUMMARY": ["-m", "sandbox_fleet.cli", "plan", SUMMARY],
    "plan SUMMARY --node-type seed-96c": ["-m", "sandbox_fleet.cli", "plan", SUMMARY, "--node-type", "seed-96c"],
    "check SUMMARY": ["-m", "sandbox_fleet.cli", "check", SUMMARY],
    "check SUMMARY --metrics-out --prometheus-rules": [
        "-m", "sandbox_fleet.cli", "check", SUMMARY, "--metrics-out", "{tmp}/fleet.prom", "--prometheus-rules", "{tmp}/rules.yml"],
}
TARGETS = {"plan SUMMARY": 1.6, "check SUMMARY": 1.3}  # issue 28 item 3, CPU time x peer


def _cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _once(args: list[str], env: dict, tmp: str) -> tuple[float, float]:
    """Wall and CPU seconds of one whole process."""
    argv = [sys.executable, *(a.replace("{tmp}", tmp) for a in args)]
    c0, t0 = _cpu_children(), time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, _cpu_children() - c0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--src", default=None, help="a src folder to import sandbox_fleet from")
    opts = ap.parse_args()
    env = dict(os.environ)
    if opts.src:
        env["PYTHONPATH"] = opts.src
    compile_package(Path(opts.src) if opts.src else ROOT / "src", ROOT / "benchmarks" / "peer_startup.py")
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    cpus: dict[str, list[float]] = {name: [] for name in COMMANDS}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(opts.rounds + 1):
            for name, args in COMMANDS.items():
                t, c = _once(args, env, tmp)
                if r:  # round 0 warms the page cache
                    times[name].append(t)
                    cpus[name].append(c)
    peer = statistics.median(times[next(iter(COMMANDS))])
    peer_cpu = statistics.median(cpus[next(iter(COMMANDS))])
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at the end; {opts.rounds} alternating rounds")
    print(f"{'command':48s} {'wall s':>7s} {'min-max s':>13s} {'x peer':>7s} {'CPU s':>7s} {'min-max s':>13s} {'x peer':>7s}  target (CPU)")
    for name, ts in times.items():
        med, cs = statistics.median(ts), cpus[name]
        cpu = statistics.median(cs)
        target = f"<= {TARGETS[name]}x" if name in TARGETS else ""
        print(f"{name:48s} {med:7.3f} {min(ts):6.3f}-{max(ts):<6.3f} {med / peer:7.2f} {cpu:7.3f} "
              f"{min(cs):6.3f}-{max(cs):<6.3f} {cpu / peer_cpu:7.2f}  {target}")


if __name__ == "__main__":
    main()
