"""One unit of sweep work: simulate one variant with one seed (runs in any worker).

Top-level and fed only plain data (TOML dict, folder, seed) so that a process pool
or Ray can ship it; the result is the simulator's summary dict, which depends only
on these arguments, so where it runs cannot change it.
"""

from __future__ import annotations

from pathlib import Path

from sandbox_fleet.simulate.engine.run import run_workloads


def simulate_variant(data: dict, base_dir: str, source: str, seed: int) -> dict:
    """Build the scenario ``data`` (paths relative to ``base_dir``) and run it with ``seed``."""
    from sandbox_fleet.sweep.variants import check

    _, built = check(data, Path(base_dir), source)
    res = run_workloads(built.fleets, built.workloads, seed, engine=built.engine, inference=built.inference)
    return built.summary(res, seed=seed).to_json()  # plain data: it crosses a process or Ray boundary
