"""Scenario tooling: TOML scenario files in, engine objects out, and the checks and calibration around them.

``spec`` (the TOML schema as Pydantic models, ``load_scenario``), ``builder`` (a spec into engine
objects), ``images`` (the ``[images]`` table: task bundles, catalogs, shares), ``inference`` (the
``[inference]`` table), ``bounds`` (what a scenario will cost before it runs: finite times,
memory, whether it can finish), ``calibrate`` and ``calibrate_inference`` (``simulate --from``:
a scenario written from measured telemetry), ``run`` (``run_scenario``, ``simulate_scenario``:
load, build, run the engine, summarise).

``from sandbox_fleet.simulate.scenario import run_scenario, simulate_scenario, load_scenario, build``
is the documented import; the names are imported on first use.
"""

from __future__ import annotations

from sandbox_fleet.lazy import lazy_exports

#: public name -> the module defining it, imported on first use
_EXPORTS = {
    "build": "sandbox_fleet.simulate.scenario.builder",
    "BuildSpec": "sandbox_fleet.simulate.scenario.spec",
    "Built": "sandbox_fleet.simulate.scenario.builder",
    "ComponentSpec": "sandbox_fleet.simulate.scenario.spec",
    "DeterministicSpec": "sandbox_fleet.simulate.scenario.spec",
    "DistSpec": "sandbox_fleet.simulate.scenario.spec",
    "EmpiricalSpec": "sandbox_fleet.simulate.scenario.spec",
    "EpisodeParts": "sandbox_fleet.simulate.scenario.spec",
    "ExceptionsSpec": "sandbox_fleet.simulate.scenario.spec",
    "ExponentialSpec": "sandbox_fleet.simulate.scenario.spec",
    "DynamicSamplingSpec": "sandbox_fleet.simulate.scenario.spec",
    "FilterSpec": "sandbox_fleet.simulate.scenario.spec",
    "FleetSpec": "sandbox_fleet.simulate.scenario.spec",
    "ImagesSpec": "sandbox_fleet.simulate.scenario.spec",
    "InferenceSpec": "sandbox_fleet.simulate.scenario.spec",
    "load_scenario": "sandbox_fleet.simulate.scenario.spec",
    "LogNormalSpec": "sandbox_fleet.simulate.scenario.spec",
    "MixtureSpec": "sandbox_fleet.simulate.scenario.spec",
    "NonNegFloat": "sandbox_fleet.simulate.scenario.spec",
    "PosFloat": "sandbox_fleet.simulate.scenario.spec",
    "RetrySpec": "sandbox_fleet.simulate.scenario.spec",
    "run_scenario": "sandbox_fleet.simulate.scenario.run",
    "RunSpec": "sandbox_fleet.simulate.scenario.spec",
    "scenario_from_telemetry": "sandbox_fleet.simulate.scenario.calibrate",
    "ScenarioSpec": "sandbox_fleet.simulate.scenario.spec",
    "simulate_scenario": "sandbox_fleet.simulate.scenario.run",
    "Strict": "sandbox_fleet.simulate.scenario.spec",
    "SubstrateSpec": "sandbox_fleet.simulate.scenario.spec",
    "TurnsSpec": "sandbox_fleet.simulate.scenario.spec",
    "WeibullSpec": "sandbox_fleet.simulate.scenario.spec",
    "WorkloadSpec": "sandbox_fleet.simulate.scenario.spec",
}

__all__ = ["BuildSpec", "Built", "ComponentSpec", "DeterministicSpec", "DistSpec", "DynamicSamplingSpec", "EmpiricalSpec", "EpisodeParts", "ExceptionsSpec", "ExponentialSpec", "FilterSpec", "FleetSpec", "ImagesSpec", "InferenceSpec", "LogNormalSpec", "MixtureSpec", "NonNegFloat", "PosFloat", "RetrySpec", "RunSpec", "ScenarioSpec", "Strict", "SubstrateSpec", "TurnsSpec", "WeibullSpec", "WorkloadSpec", "build", "load_scenario", "run_scenario", "scenario_from_telemetry", "simulate_scenario"]

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
