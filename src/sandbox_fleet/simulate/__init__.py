"""simulate stage: a discrete-event model of the sandbox fleet behind agentic RL.

Low-level API (stable; scenario files and ``synth`` build on it)::

    from sandbox_fleet.simulate import Fleet, SyncRL, AsyncRL, Poisson, Replay, run_workloads
    res = run_workloads(fleet, workloads, seed)   # -> SimResult
    res.start_s, res.finish_s, res.state ...     # per-attempt NumPy arrays
    res.to_telemetry(epoch=...)                   # canonical ROLLOUT_SCHEMA table
    res.summary()                                 # deterministic dict

Modules by role: ``distributions`` (durations), ``entities`` (fleet, episode, retry
policy, state codes), ``episode`` (vectorised attempt draws), ``workloads``,
``admission`` (queues), ``events`` (event kinds, tie rule), ``engine`` (the loop),
``inference/`` (the model-serving pool: config, cache, routing, pool, driver, figures),
``result``, ``metrics`` (summary), ``invariants``, ``scenario`` (TOML files: run;
re-exports ``scenario_spec``, the schema and loading, and ``scenario_build``, spec to engine).
"""

from __future__ import annotations

from sandbox_fleet.lazy import lazy_exports

#: public name -> the module defining it, imported on first use (start-up stays cheap)
_EXPORTS = {
    "Clipped": "sandbox_fleet.simulate.distributions",
    "Deterministic": "sandbox_fleet.simulate.distributions",
    "Dist": "sandbox_fleet.simulate.distributions",
    "Empirical": "sandbox_fleet.simulate.distributions",
    "Exponential": "sandbox_fleet.simulate.distributions",
    "LogNormal": "sandbox_fleet.simulate.distributions",
    "Mixture": "sandbox_fleet.simulate.distributions",
    "Weibull": "sandbox_fleet.simulate.distributions",
    "run_workloads": "sandbox_fleet.simulate.engine",
    "COMPLETED": "sandbox_fleet.simulate.entities",
    "DROPPED": "sandbox_fleet.simulate.entities",
    "EXCEPTION": "sandbox_fleet.simulate.entities",
    "RETRIED": "sandbox_fleet.simulate.entities",
    "STATE_NAMES": "sandbox_fleet.simulate.entities",
    "TIMEOUT": "sandbox_fleet.simulate.entities",
    "Build": "sandbox_fleet.simulate.entities",
    "Episode": "sandbox_fleet.simulate.entities",
    "Fleet": "sandbox_fleet.simulate.entities",
    "RetryPolicy": "sandbox_fleet.simulate.entities",
    "Turns": "sandbox_fleet.simulate.entities",
    "InvariantError": "sandbox_fleet.simulate.invariants",
    "SimResult": "sandbox_fleet.simulate.result",
    "Inference": "sandbox_fleet.simulate.inference",
    "AsyncRL": "sandbox_fleet.simulate.workloads",
    "Closed": "sandbox_fleet.simulate.workloads",
    "Poisson": "sandbox_fleet.simulate.workloads",
    "Replay": "sandbox_fleet.simulate.workloads",
    "SyncRL": "sandbox_fleet.simulate.workloads",
    "Workload": "sandbox_fleet.simulate.workloads",
}

__all__ = [
    "COMPLETED",
    "DROPPED",
    "EXCEPTION",
    "RETRIED",
    "STATE_NAMES",
    "TIMEOUT",
    "AsyncRL",
    "Build",
    "Clipped",
    "Closed",
    "Deterministic",
    "Dist",
    "Empirical",
    "Episode",
    "Exponential",
    "Fleet",
    "Inference",
    "InvariantError",
    "LogNormal",
    "Mixture",
    "Poisson",
    "Replay",
    "RetryPolicy",
    "SimResult",
    "SyncRL",
    "Turns",
    "Weibull",
    "Workload",
    "run_workloads",
]


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
