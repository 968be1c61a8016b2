"""``dynamic_sampling`` of a scenario's RL workload, built into the engine's ``DynamicSampling``.

``task_pass`` is a list of pass probabilities (tasks drawn uniformly unless ``task_weight``), or the
path of a ``measure --json`` summary (relative to the scenario file): its ``rl_groups`` gives every
task unit's posterior mean pass probability under the measured prior, (alpha + passed) / (alpha +
beta + valid), each unit weighted by how many task units share its counts (tasks drawn at random, as
the plan assumes), and the measured valid rate (unless ``valid_rate`` is given).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import numpy as np

from sandbox_fleet import contract
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.simulate.engine.dynamic_sampling import DynamicSampling
from sandbox_fleet.simulate.scenario.spec import DynamicSamplingSpec

Fail = Callable[[str, str], NoReturn]


def build_dynamic(spec: DynamicSamplingSpec, base: Path, key: str, fail: Fail) -> DynamicSampling:
    """The engine's option; a problem is ``fail(key, what)``."""
    valid = spec.valid_rate
    w: np.ndarray | None
    if isinstance(spec.task_pass, str):
        if spec.task_weight is not None:
            fail(f"{key}.task_weight", "a measure summary weighs its tasks itself; give task_weight with a list")
        path = Path(spec.task_pass) if Path(spec.task_pass).is_absolute() else base / spec.task_pass
        p, w, measured_valid, basis = _from_summary(path, f"{key}.task_pass", fail)
        valid = measured_valid if valid is None else valid
    else:
        p = np.asarray(spec.task_pass, dtype=np.float64)
        w = None if spec.task_weight is None else np.asarray(spec.task_weight, dtype=np.float64)
        basis = f"{p.size} task pass probabilities as given" + (", weighted" if w is not None else ", drawn uniformly")
        if w is not None and w.size != p.size:
            fail(f"{key}.task_weight", f"{w.size} weights for {p.size} tasks; give one per task_pass")
    return DynamicSampling(groups=spec.groups, group_size=spec.group_size, task_pass=p, task_weight=w,
                           valid_rate=1.0 if valid is None else valid, round_groups=spec.round_groups,
                           max_rounds=spec.max_rounds, basis=basis)


def _from_summary(path: Path, key: str, fail: Fail) -> tuple[np.ndarray, np.ndarray, float | None, str]:
    """Per task unit: posterior mean pass probability and weight; the measured valid rate; the basis."""
    rg = contract.load(MeasureSummary, path).rl_groups
    prior = None if rg is None else rg.pass_prior
    if rg is None or not rg.task_counts or prior is None or prior.alpha is None or prior.beta is None:
        fail(key, f"{path}: the measure summary has no per-task pass probabilities (rl_groups.task_counts and "
                  "pass_prior); measure telemetry with task ids and rewards")
    counts = np.asarray(rg.task_counts, dtype=np.float64)
    a, b = prior.alpha, prior.beta
    p = (a + counts[:, 2]) / (a + b + counts[:, 1])
    basis = (f"{int(counts[:, 3].sum()):,} task units of {path.name} at their posterior mean pass probability "
             f"(prior Beta({a:.3g}, {b:.3g})), weighted by units")
    return p, counts[:, 3], rg.valid_rate, basis
