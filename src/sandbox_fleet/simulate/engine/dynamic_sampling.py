"""Dynamic sampling (DAPO): a step keeps releasing groups until B of them carry a learning signal.

A group is ``group_size`` (G) rollouts of one task, the task drawn from ``task_pass`` (each task's
pass probability) with ``task_weight`` (uniform by default). Each rollout is valid (no exception, a
reward the trainer can use) with ``valid_rate`` and, valid, passes with its task's probability. A group
is **informative** when it holds at least one valid pass and one valid fail (the rule of
``measure.signal_math``: its valid rewards differ, so it has two valid rollouts or more); the others
are discarded.

A step releases its groups in **rounds**: the first round at the step's release, each next round when
the round before has ended (every rollout of it finished: a trainer filters a generated batch once it
is complete, as verl's DAPO trainer does), until the step holds ``groups`` (B) informative groups. A
round releases ``round_groups`` groups (verl's ``data.gen_batch_size``; the informative groups past B
are trimmed, released but not trained), or by default the **shortfall**: B minus the informative
groups so far, the least a trainer can release (the step then ends exactly when its B-th informative
group completes). The trainer trains once the step's last round has ended.

The outcomes depend on the draws only, never on when a rollout runs, so every step's rounds are drawn
here before the clock starts (``draw``); the trainer (the admission kernel's ``release``) releases them. This is the
one place the rule lives; definitions and a worked example: docs/simulate.md#dynamic-sampling.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sandbox_fleet.errors import InputError

#: A step that has released this many times B groups without B informative ones is refused (a
#: simulation of it would not end in memory; the informative share is far too low for the batch).
MAX_GROUPS_PER_INFORMATIVE = 10_000


@dataclass(kw_only=True)
class DynamicSampling:
    """The option on an RL workload (``[workload] dynamic_sampling`` in a scenario)."""

    groups: int
    group_size: int
    task_pass: np.ndarray
    task_weight: np.ndarray | None = None
    valid_rate: float = 1.0
    round_groups: int | None = None
    max_rounds: int | None = None
    #: where the pass probabilities came from (said in the summary)
    basis: str = "task_pass as given"

    def __post_init__(self) -> None:
        p = np.atleast_1d(np.asarray(self.task_pass, dtype=np.float64))
        if p.ndim != 1 or p.size == 0 or not np.all((p >= 0) & (p <= 1)):
            raise InputError("dynamic_sampling: task_pass needs one or more pass probabilities, each in [0, 1]")
        self.task_pass = p
        if self.task_weight is not None:
            w = np.asarray(self.task_weight, dtype=np.float64)
            if w.shape != p.shape or not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
                raise InputError(f"dynamic_sampling: task_weight needs {p.size} weights >= 0 (one per task), "
                                 "not all zero")
            self.task_weight = w / w.sum()
        if int(self.groups) != self.groups or self.groups < 1:
            raise InputError(f"dynamic_sampling: groups must be an integer >= 1, got {self.groups}")
        if int(self.group_size) != self.group_size or self.group_size < 1:
            raise InputError(f"dynamic_sampling: group_size must be an integer >= 1, got {self.group_size}")
        if not 0.0 <= self.valid_rate <= 1.0:
            raise InputError(f"dynamic_sampling: valid_rate must be in [0, 1], got {self.valid_rate}")
        if self.round_groups is not None and self.round_groups < 1:
            raise InputError(f"dynamic_sampling: round_groups must be >= 1, got {self.round_groups}")
        if self.max_rounds is not None and self.max_rounds < 1:
            raise InputError(f"dynamic_sampling: max_rounds must be >= 1, got {self.max_rounds}")
        why = self.never_informative()
        if why is not None:
            raise InputError(f"dynamic_sampling: no group can be informative ({why}): a step would never end")

    def never_informative(self) -> str | None:
        """Why no group can hold a valid pass and a valid fail (``None``: some can)."""
        if self.group_size < 2:
            return "group_size 1: a group of one never holds a pass and a fail"
        if self.valid_rate <= 0.0:
            return "valid_rate 0: no rollout is valid"
        drawn = self.task_pass if self.task_weight is None else self.task_pass[self.task_weight > 0]
        if not np.any((drawn > 0.0) & (drawn < 1.0)):
            return "every task passes always or never"
        return None


@dataclass
class GroupDraw:
    """Every step's rounds, drawn before the run. Groups and rollouts are in release order (step by
    step, round by round): group ``i`` is rollouts ``i * G .. i * G + G - 1`` of the workload."""

    group_size: int
    #: per step: the groups each of its rounds releases
    rounds: list[list[int]]
    #: per group: its task, its valid rollouts, its valid passes, whether it is informative
    task: np.ndarray
    valid: np.ndarray
    passed: np.ndarray
    informative: np.ndarray
    #: per rollout: valid, and passed (a valid pass)
    rollout_valid: np.ndarray = field(repr=False)
    rollout_passed: np.ndarray = field(repr=False)

    @property
    def step_rollouts(self) -> np.ndarray:
        """Rollouts each step releases, over all its rounds."""
        return np.array([sum(r) for r in self.rounds], dtype=np.int64) * self.group_size


def draw(ds: DynamicSampling, steps: int, rng: np.random.Generator) -> GroupDraw:
    """Draw ``steps`` steps of dynamic sampling: rounds of groups until each step holds B informative ones."""
    g, b = int(ds.group_size), int(ds.groups)
    n_tasks = ds.task_pass.size
    rounds: list[list[int]] = []
    tasks, valids, passes = [], [], []
    for j in range(steps):
        got, released = 0, 0
        step_rounds: list[int] = []
        while got < b:
            if ds.max_rounds is not None and len(step_rounds) >= ds.max_rounds:
                raise InputError(f"dynamic_sampling: step {j} released max_rounds = {ds.max_rounds} rounds "
                                 f"({released:,} groups) and holds {got} of {b} informative groups")
            n = ds.round_groups if ds.round_groups is not None else b - got
            if released + n > MAX_GROUPS_PER_INFORMATIVE * b:
                raise InputError(f"dynamic_sampling: step {j} released {released:,} groups for {got} of {b} "
                                 "informative ones: the informative share is far too low to simulate")
            task = rng.choice(n_tasks, size=n, p=ds.task_weight) if n_tasks > 1 else np.zeros(n, dtype=np.int64)
            valid = rng.random((n, g)) < ds.valid_rate
            passed = valid & (rng.random((n, g)) < ds.task_pass[task][:, None])
            got += int(np.count_nonzero(informative(valid, passed)))
            released += n
            step_rounds.append(n)
            tasks.append(task)
            valids.append(valid)
            passes.append(passed)
        rounds.append(step_rounds)
    valid_all = np.concatenate(valids)
    passed_all = np.concatenate(passes)
    return GroupDraw(group_size=g, rounds=rounds, task=np.concatenate(tasks).astype(np.int64),
                     valid=valid_all.sum(axis=1), passed=passed_all.sum(axis=1),
                     informative=informative(valid_all, passed_all), rollout_valid=valid_all.ravel(),
                     rollout_passed=passed_all.ravel())


def informative(valid: np.ndarray, passed: np.ndarray) -> np.ndarray:
    """Per group (a row of G rollouts): at least one valid pass and one valid fail. ``passed`` is
    true only for valid rollouts."""
    return passed.any(axis=1) & (valid & ~passed).any(axis=1)


def figures(ds: DynamicSampling, dr: GroupDraw) -> dict:
    """The summary's ``dynamic_sampling`` block for one workload's draw (``metrics.summarise``)."""
    per_step = np.array([sum(r) for r in dr.rounds], dtype=np.float64)
    n_rounds = np.array([len(r) for r in dr.rounds], dtype=np.float64)
    released = float(per_step.sum())
    inf = int(np.count_nonzero(dr.informative))
    rollouts = per_step * dr.group_size
    b = int(ds.groups)
    return {
        "groups": b, "group_size": dr.group_size, "round_groups": ds.round_groups,
        "release": "fixed rounds of round_groups" if ds.round_groups is not None else "rounds of the shortfall",
        "valid_rate": ds.valid_rate, "tasks": int(ds.task_pass.size), "steps": int(per_step.size),
        "groups_released": int(released), "groups_informative": inf,
        "groups_trimmed": inf - b * int(per_step.size),
        "groups_released_per_step_mean": float(per_step.mean()), "groups_released_per_step_max": int(per_step.max()),
        "rounds_per_step_mean": float(n_rounds.mean()), "rounds_per_step_max": int(n_rounds.max()),
        "rollouts_per_step_mean": float(rollouts.mean()), "rollouts_per_step_max": int(rollouts.max()),
        "first_round_rollouts": int((ds.round_groups or b) * dr.group_size),
        "informative_share": inf / released,
        "oversampling_factor": released / (b * per_step.size),
        "oversampling_factor_se": float(per_step.std(ddof=1) / np.sqrt(per_step.size) / b) if per_step.size > 1 else None,
        "basis": (f"{ds.basis}; groups of {dr.group_size} drawn per task, each rollout valid with {ds.valid_rate:g} "
                  "and, valid, passing with its task's probability; informative: a valid pass and a valid fail; a "
                  "step releases rounds (each when the round before has ended) until it holds "
                  f"{b} informative groups; share = informative / released groups; factor = released / (B x steps)"),
    }
