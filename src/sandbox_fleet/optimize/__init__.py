"""optimize: the cheapest sandbox fleet + GPU pool whose simulated closed loop meets a target.

Lives outside the engine, like ``sweep``: it writes scenario data, runs it through the sweep
backends (``sweep.task.simulate_variant``), and prices results with plan's catalogs::

    from sandbox_fleet.measure.load import load_measure
    from sandbox_fleet.optimize import run_optimize
    out = run_optimize(load_measure("measure.json"), name="measure.json", passing_per_hour=400)
    out = run_optimize("loop.toml", passing_per_hour=400, max_cap=256)  # a scenario (or a .json) by path
    out.model.best           # an OptimizeSummary: cap, node type and tier, GPU type and count, caching, $/h
    out.summary["best"]      # the same, as the JSON optimize --json prints
    out.scenario_toml        # the winner as a scenario `sandbox-fleet simulate` reproduces

Modules: ``inputs`` (INPUT to a base loop), ``space`` (GPU options, node prices), ``evaluate``
(candidate scenarios, memoised simulations), ``search`` (bisection, pruning, frontier),
``model`` (``OptimizeSummary``), ``render``, ``tomlout``.
"""

from sandbox_fleet.optimize.api import Outcome, run_optimize

__all__ = ["Outcome", "run_optimize"]
