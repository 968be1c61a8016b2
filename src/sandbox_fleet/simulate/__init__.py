"""simulate stage: a discrete-event model of the sandbox fleet behind agentic RL.

Low-level API (stable; scenario files and ``synth`` build on it)::

    from sandbox_fleet.simulate import Fleet, SyncRL, AsyncRL, Poisson, Replay, run_workloads
    res = run_workloads(fleet, workloads, seed)   # -> SimResult
    res.start_s, res.finish_s, res.state ...     # per-attempt NumPy arrays
    res.to_telemetry(epoch=...)                   # canonical ROLLOUT_SCHEMA table
    res.summary()                                 # deterministic dict

Layout: ``engine/`` runs a scenario once it is built (entities, rules, the admission kernel
and its closed form for a run where nothing feeds back, ``prepare``, ``result``, ``metrics``, ``steady``, ``invariants``, ``inference/``; see
``engine/__init__.py``); ``scenario/`` is the tooling around TOML scenario files (``spec``,
``builder``, ``images``, ``inference``, ``bounds``, ``calibrate``, ``run``); ``model.py`` is the
stage's output model and ``render.py`` its terminal view. The engine never imports the tooling.
"""

from __future__ import annotations

from sandbox_fleet.lazy import lazy_exports

#: public name -> the module defining it, imported on first use (start-up stays cheap)
_EXPORTS = {
    "Clipped": "sandbox_fleet.simulate.engine.distributions",
    "Deterministic": "sandbox_fleet.simulate.engine.distributions",
    "Dist": "sandbox_fleet.simulate.engine.distributions",
    "Empirical": "sandbox_fleet.simulate.engine.distributions",
    "Exponential": "sandbox_fleet.simulate.engine.distributions",
    "LogNormal": "sandbox_fleet.simulate.engine.distributions",
    "Mixture": "sandbox_fleet.simulate.engine.distributions",
    "Weibull": "sandbox_fleet.simulate.engine.distributions",
    "run_workloads": "sandbox_fleet.simulate.engine.run",
    "COMPLETED": "sandbox_fleet.simulate.engine.entities",
    "DROPPED": "sandbox_fleet.simulate.engine.entities",
    "EXCEPTION": "sandbox_fleet.simulate.engine.entities",
    "RETRIED": "sandbox_fleet.simulate.engine.entities",
    "STATE_NAMES": "sandbox_fleet.simulate.engine.entities",
    "TIMEOUT": "sandbox_fleet.simulate.engine.entities",
    "Build": "sandbox_fleet.simulate.engine.entities",
    "Episode": "sandbox_fleet.simulate.engine.entities",
    "Fleet": "sandbox_fleet.simulate.engine.entities",
    "RetryPolicy": "sandbox_fleet.simulate.engine.entities",
    "Turns": "sandbox_fleet.simulate.engine.entities",
    "InvariantError": "sandbox_fleet.simulate.engine.invariants",
    "SimResult": "sandbox_fleet.simulate.engine.result",
    "Inference": "sandbox_fleet.simulate.engine.inference",
    "AsyncRL": "sandbox_fleet.simulate.engine.workloads",
    "DynamicSampling": "sandbox_fleet.simulate.engine.dynamic_sampling",
    "Closed": "sandbox_fleet.simulate.engine.workloads",
    "Poisson": "sandbox_fleet.simulate.engine.workloads",
    "Replay": "sandbox_fleet.simulate.engine.workloads",
    "SyncRL": "sandbox_fleet.simulate.engine.workloads",
    "Workload": "sandbox_fleet.simulate.engine.workloads",
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
    "DynamicSampling",
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
