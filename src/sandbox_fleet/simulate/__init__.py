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

from sandbox_fleet.simulate.distributions import (
    Clipped,
    Deterministic,
    Dist,
    Empirical,
    Exponential,
    LogNormal,
    Mixture,
    Weibull,
)
from sandbox_fleet.simulate.engine import run_workloads
from sandbox_fleet.simulate.entities import (
    COMPLETED,
    DROPPED,
    EXCEPTION,
    RETRIED,
    STATE_NAMES,
    TIMEOUT,
    Build,
    Episode,
    Fleet,
    RetryPolicy,
    Turns,
)
from sandbox_fleet.simulate.invariants import InvariantError
from sandbox_fleet.simulate.result import SimResult
from sandbox_fleet.simulate.inference import Inference
from sandbox_fleet.simulate.workloads import AsyncRL, Closed, Poisson, Replay, SyncRL, Workload

__all__ = [
    "AsyncRL", "Build", "COMPLETED", "Clipped", "Closed", "Inference", "DROPPED", "Deterministic", "Dist", "EXCEPTION",
    "Empirical", "Episode", "Exponential", "Fleet", "InvariantError", "LogNormal", "Mixture",
    "Poisson", "RETRIED", "Replay", "RetryPolicy", "STATE_NAMES", "SimResult", "SyncRL", "TIMEOUT",
    "Turns", "Weibull", "Workload", "run_workloads",
]
