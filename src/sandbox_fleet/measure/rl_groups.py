"""Rollout groups as group-based RL counts them: which carry signal, which do not and why, per-task pass
probabilities, and exceptions the harness scored as rewards (``rl_groups`` in the summary).

A group is the rollouts of one task released together: one task within one RL step of one run (runs
and steps as ``steps`` finds them: by job when the input has two or more jobs, else by model), or
within the whole run when that run shows no steps. Rows without a task_id belong to no group. A
rollout is valid when it raised no exception (preemptions and infrastructure timeouts are recorded as
exceptions) and carries a reward; a row with no reward is not valid and is counted apart. The
classes and the binomial expression are in ``signal_math``; definitions in docs/measure.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.measure.columns import dictionary_codes
from sandbox_fleet.measure.signal_math import BetaPrior, beta_cdf, beta_intervals, fit_prior, posterior_shares
from sandbox_fleet.measure.stats import US, quantile_counts, ratio
from sandbox_fleet.measure.steps import step_labels

#: The group size the expected shares are given for when the input records no groups and none is asked for.
DEFAULT_GROUP_SIZE = 8
#: Tasks listed at each end (lowest and highest pass probability).
TOP = 10
#: A task whose 95% interval lies below this (above 1 - this) almost never (always) passes.
EXTREME = 0.1
#: The rollout columns this measurement reads (besides the start and finish times).
COLUMNS = ("task_id", "model", "job", "has_exception", "reward")
PASS, FAIL, EXCEPTION, NO_REWARD = 0, 1, 2, 3
#: Rows per block where a row-sized temporary would otherwise be built.
_BLOCK = 1 << 20


def row_states(has_exception: pa.ChunkedArray, reward: pa.ChunkedArray, threshold: float) -> tuple[np.ndarray, dict]:
    """One code a row: EXCEPTION (flag true), else NO_REWARD (null or NaN), else PASS (>= threshold) or
    FAIL; and the counts of exception rows with a reward, with a failing one, and of rewarded rows."""
    exc = np.asarray(pc.fill_null(has_exception, False).to_numpy(zero_copy_only=False), dtype=bool)
    r = np.asarray(reward.to_numpy(zero_copy_only=False), dtype=np.float64)  # null -> NaN
    rewarded = ~np.isnan(r)
    passed = r >= threshold
    state = np.where(rewarded, np.where(passed, PASS, FAIL), NO_REWARD).astype(np.int8)
    state[exc] = EXCEPTION
    scored = exc & rewarded
    counts = {"scored": int(scored.sum()), "scored_zero": int((scored & ~passed).sum()), "rewarded": int(rewarded.sum())}
    return state, counts


def step_ids(start_us: np.ndarray, run: np.ndarray, n_runs: int, thresholds_us: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(each row's step, numbered across runs; each step's run). Runs with a threshold are cut where
    consecutive starts are more than it apart (``steps``' rule, ties as 1 us); every other run, and
    the rows without a run (code -1, run ``n_runs``), is one step."""
    label = np.zeros(start_us.size, dtype=np.int64)
    r_of = np.where(run < 0, n_runs, run).astype(np.int32)
    steps_in = np.ones(n_runs + 1, dtype=np.int64)
    for r, thr in thresholds_us.items():
        idx = np.flatnonzero(r_of == r)
        if idx.size:
            label[idx], first_us = step_labels(start_us[idx], thr)
            steps_in[r] = first_us.size
    offsets = np.concatenate(([0], np.cumsum(steps_in)))
    label += offsets[r_of]
    return label, np.repeat(np.arange(n_runs + 1), steps_in)


def _runs(table: pa.Table, runs_by: str | None, run_steps: dict[str, dict]) -> tuple[np.ndarray, list, dict[int, int], str]:
    """(run code per row, the run names, step threshold in us per run with steps, how groups are told apart)."""
    col = table.column("job" if runs_by == "job" else "model")
    codes, values = dictionary_codes(col if pa.types.is_dictionary(col.type) else pc.dictionary_encode(col))
    names = values.to_pylist()
    thresholds = {}
    for i, name in enumerate(names):
        st = run_steps.get(name) or {}
        if st.get("detected") and st.get("gap_threshold_s") is not None:
            thresholds[i] = round(st["gap_threshold_s"] * US)
    what = runs_by or "model"
    basis = (f"a task within one step of one run (runs by {what}; steps found in {len(thresholds)} of "
             f"{len(names)} runs, the others one group per task per run)")
    return codes, names, thresholds, basis


def _groups(task: np.ndarray, n_tasks: int, step: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group (rows with a task): counts of PASS, FAIL, EXCEPTION, NO_REWARD (one row a group), and
    each group's step and task. One sort of (step, task, state) keys: runs of equal keys are the counts.
    ``step`` is consumed: its buffer becomes the keys (8 bytes a row, no second array)."""
    key = step
    key *= n_tasks
    key += task
    key <<= 2
    key |= state
    if (task < 0).any():
        key = key[task >= 0]
    if key.size == 0:
        return np.zeros((0, 4), dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if int(key.max()) < 1 << 32:  # a key that fits 32 bits sorts in about 60% of the time
        key = key.astype(np.uint32)
    key.sort()
    first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    runs = np.diff(np.append(first, key.size))
    cell = key[first].astype(np.int64)
    group = cell >> 2
    new = np.concatenate(([True], group[1:] != group[:-1]))
    g = np.cumsum(new) - 1
    counts = np.zeros((int(g[-1]) + 1, 4), dtype=np.int64)
    counts[g, cell & 3] = runs
    heads = group[new]
    return counts, heads // n_tasks, heads % n_tasks


def _classes(counts: np.ndarray) -> dict:
    """Group counts by class, and the groups every exception scored as 0 would make look informative."""
    p, f, e = counts[:, PASS], counts[:, FAIL], counts[:, EXCEPTION]
    valid = p + f
    informative = (p >= 1) & (f >= 1)
    too_few = valid < 2
    return {
        "informative": int(informative.sum()),
        "all_pass": int(((valid >= 2) & (f == 0)).sum()),
        "all_fail": int(((valid >= 2) & (p == 0)).sum()),
        "too_few_valid": int(too_few.sum()),
        "flipped": int(((p >= 1) & (f == 0) & (e >= 1)).sum()),
    }


def _task_table(counts: np.ndarray, group_run: np.ndarray, group_task: np.ndarray, n_tasks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per task within a run (a policy: a task's pass probability is the policy's), summed over its
    groups: rows, valid, passed (one row a unit), and each unit's run and task codes."""
    key = group_run * n_tasks + group_task
    space = (int(group_run.max(initial=0)) + 1) * n_tasks
    if space <= 8 * key.size + 1024:  # few runs: the (run, task) pairs index a dense table, no sort
        size = np.bincount(key, minlength=space)
        unit = np.flatnonzero(size)
        where = np.zeros(space, dtype=np.int64)
        where[unit] = np.arange(unit.size)
        inverse = where[key]
    else:
        unit, inverse = np.unique(key, return_inverse=True)
    rows = np.bincount(inverse, weights=counts.sum(axis=1), minlength=unit.size)
    passed = np.bincount(inverse, weights=counts[:, PASS], minlength=unit.size)
    valid = passed + np.bincount(inverse, weights=counts[:, FAIL], minlength=unit.size)
    return np.stack([rows, valid, passed], axis=1).astype(np.int64), unit // n_tasks, unit % n_tasks


def _prior_block(prior: BetaPrior, what: str) -> dict:
    return {"alpha": prior.alpha, "beta": prior.beta, "mean": prior.mean, "strength": prior.strength, "of": what}


def _task_entries(units: _Units, order: list[int], prior: BetaPrior) -> list[dict]:
    """The listed units with their posterior means and 95% intervals (one bisection for all)."""
    rows, valid, passed = (units.table[order, k] for k in range(3))
    a, b = prior.alpha + passed, prior.beta + valid - passed
    lo, hi = beta_intervals(a, b)
    return [{"task_id": units.task_id(i), "run": units.run(i), "rows": int(rows[k]), "valid": int(valid[k]),
             "passed": int(passed[k]), "pass_rate_raw": ratio(int(passed[k]), int(valid[k])),
             "pass_prob": float(a[k] / (a[k] + b[k])), "pass_prob_ci95": [float(lo[k]), float(hi[k])]}
            for k, i in enumerate(order)]


def measure_rl_groups(table: pa.Table, times: tuple[np.ndarray, np.ndarray], runs_by: str, run_steps: dict,
                      *, threshold: float, group_size: int | None = None) -> dict:
    """The ``rl_groups`` block (see the module docstring): ``runs_by`` "job" or "model", ``run_steps``
    each run's ``steps``; ``group_size``: the G the expected shares are for (default: the median
    recorded group, else ``DEFAULT_GROUP_SIZE``)."""
    start_us, finish_us = times
    state, scored = row_states(table.column("has_exception"), table.column("reward"), threshold)
    n = int(state.size)
    counts_all = np.bincount(state, minlength=4)
    task_col = table.column("task_id")
    task_codes, task_values = dictionary_codes(task_col if pa.types.is_dictionary(task_col.type)
                                               else pc.dictionary_encode(task_col))
    task = task_codes
    n_tasks = len(task_values)
    run, run_names, thresholds, basis = _runs(table, runs_by, run_steps)
    invalid = int(counts_all[EXCEPTION] + counts_all[NO_REWARD])
    out: dict = {
        "rows": n,
        "rows_without_task": int((task < 0).sum()),
        "valid": int(counts_all[PASS] + counts_all[FAIL]),
        "exceptions": int(counts_all[EXCEPTION]),
        "no_reward": int(counts_all[NO_REWARD]),
        "valid_rate": ratio(int(counts_all[PASS] + counts_all[FAIL]), n),
        "exception_share_of_invalid": ratio(int(counts_all[EXCEPTION]), invalid),
        "exceptions_scored": scored["scored"],
        "exceptions_scored_zero": scored["scored_zero"],
        "exceptions_scored_zero_share": ratio(scored["scored_zero"], scored["rewarded"]),
        "grouped_by": basis,
        "threshold": threshold,
    }
    if n_tasks == 0:
        out["recorded"] = False
        out["note"] = "no row names its task: no groups, no per-task pass probabilities"
        return out
    step, run_of_step = step_ids(start_us, run, len(run_names), thresholds)
    counts, group_step, group_task = _groups(task, n_tasks, step, state)
    del step, state, task
    sizes = counts.sum(axis=1)
    recorded = bool((sizes >= 2).any())
    classes = _classes(counts)
    hours = sum(int((finish_us[i:i + _BLOCK] - start_us[i:i + _BLOCK]).sum(dtype=np.int64))
                for i in range(0, n, _BLOCK)) / (3600 * US)
    out.update({
        "recorded": recorded,
        "groups": int(sizes.size),
        # from the size counts: np.median's partition is slow on millions of equal small sizes (1.3 s at 2M groups)
        "group_size_median": quantile_counts(np.arange(int(sizes.max()) + 1), np.bincount(sizes), 0.5),
        "group_size_min": int(sizes.min()),
        "group_size_max": int(sizes.max()),
        "valid_per_group_mean": int((counts[:, PASS] + counts[:, FAIL]).sum()) / sizes.size,
        **classes,
        **{f"{k}_share": v / sizes.size for k, v in classes.items()},
        "sandbox_hours_per_informative_group": ratio(hours, classes["informative"]) if recorded else None,
    })
    if not recorded:
        for k in classes:
            out[k] = out[f"{k}_share"] = None
        out["note"] = ("no group structure recorded: every task ran once per step (or per run); the expected "
                       "shares below are for groups of `group_size` drawn from the per-task probabilities")
    table3, unit_run, unit_task = _task_table(counts, run_of_step[group_step], group_task, n_tasks)
    names = [*run_names, None]  # run code len(run_names): the rows without a run
    # code-point order of the names (Arrow sorts strings by their bytes): lists tie-break on it, not on row order
    task_rank = np.empty(n_tasks, dtype=np.int64)
    task_rank[np.asarray(pc.sort_indices(task_values))] = np.arange(n_tasks)
    run_rank = np.empty(len(names), dtype=np.int64)
    run_rank[sorted(range(len(names)), key=lambda r: (names[r] is not None, names[r] or ""))] = np.arange(len(names))
    units = _Units(table3, lambda i: task_values[int(unit_task[i])].as_py(), lambda i: names[int(unit_run[i])],
                   task_rank[unit_task], run_rank[unit_run])
    out.update(_per_task(units, n_tasks, out, group_size, recorded))
    return out


@dataclass
class _Units:
    """The (task, run) units: [rows, valid, passed] a row, their names (read only for the listed ones)
    and their ranks in code-point order of task_id, then run (the lists' last tie-break)."""

    table: np.ndarray
    task_id: Callable[[int], str]
    run: Callable[[int], str | None]
    task_rank: np.ndarray
    run_rank: np.ndarray


def _group_size(group_size: int | None, recorded: bool, out: dict) -> tuple[int, str]:
    if group_size is not None:
        return group_size, "--group-size"
    if recorded:
        return max(round(out["group_size_median"]), 2), "the median recorded group"
    return DEFAULT_GROUP_SIZE, f"default {DEFAULT_GROUP_SIZE} (no groups recorded; set --group-size)"


def _per_task(units: _Units, n_tasks: int, out: dict, group_size: int | None, recorded: bool) -> dict:
    """The priors, the compact per-task table, the extremes and the expected shares at the group size."""
    rows, valid = units.table[:, 0], units.table[:, 1]
    # the priors from the distinct rows, ascending: sums in one order whatever the input's row order
    triples, weights = _distinct_rows(units.table)
    pass_prior = fit_prior(triples[:, 2], triples[:, 1], weights)
    valid_prior = fit_prior(triples[:, 1], triples[:, 0], weights)
    assert valid_prior is not None  # every unit has a row
    g, g_basis = _group_size(group_size, recorded, out)
    res: dict = {
        "tasks": n_tasks,
        "task_units": int(rows.size),
        "valid_prior": _prior_block(valid_prior, "valid share of a task's rollouts"),
        "task_counts": [[int(r), int(v), int(p), int(w)] for (r, v, p), w in zip(triples, weights)],
        "group_size": g, "group_size_basis": g_basis,
    }
    if pass_prior is None:
        res["note_tasks"] = "no task has a valid rollout: no pass probabilities"
        return res
    res["pass_prior"] = _prior_block(pass_prior, "pass probability of a task's valid rollouts")
    if not (valid >= 2).any():  # the spread beyond binomial noise needs two valid rollouts of one task
        res["prior_basis"] = (f"Beta(alpha, beta) with mean = the corpus rate and strength {pass_prior.strength:.3g}: no task "
                              "has two valid rollouts, so how tasks differ cannot be measured and they are taken "
                              "alike (the most informative case: a bound, not an estimate)")
        return _expected(res, triples, weights, pass_prior, valid_prior, g, out)
    res["prior_basis"] = (f"Beta(alpha, beta) fitted by moments to the per-task counts: mean = the corpus rate, "
                          f"strength alpha + beta = {pass_prior.strength:.3g} from the spread beyond binomial noise; "
                          f"a task with n valid rollouts keeps n / (n + {pass_prior.strength:.3g}) of its own rate")
    res.update(_extremes(units, pass_prior, triples, weights))
    return _expected(res, triples, weights, pass_prior, valid_prior, g, out)


def _distinct_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct [rows, valid, passed] and how many units have each, ascending (packed into one
    int64 key when every count fits 21 bits: one 1-D unique, not a row-wise one)."""
    if table.size and int(table.max()) < (1 << 21):
        key, weights = np.unique((table[:, 0] << 42) | (table[:, 1] << 21) | table[:, 2], return_counts=True)
        mask = (1 << 21) - 1
        return np.stack([key >> 42, (key >> 21) & mask, key & mask], axis=1), weights
    return np.unique(table, axis=0, return_counts=True)


def _extremes(units: _Units, prior: BetaPrior, triples: np.ndarray, weights: np.ndarray) -> dict:
    """The histogram of posterior means, the TOP units at each end, and the units almost never / always passing."""
    valid, passed = units.table[:, 1], units.table[:, 2]
    mean = (prior.alpha + passed) / (prior.strength + valid)

    def listed(key: np.ndarray) -> list[int]:  # by key, then most valid rollouts, then task_id and run
        top = min(TOP, key.size)
        c = np.flatnonzero(key <= np.partition(key, top - 1)[top - 1])  # the TOP smallest keys, ties included
        return c[np.lexsort((units.run_rank[c], units.task_rank[c], -valid[c], key[c]))][:TOP].tolist()

    low, high = listed(mean), listed(-mean)
    entries = _task_entries(units, low + high, prior)  # one bisection for every listed interval

    # the 95% interval lies below EXTREME when more than 97.5% of the posterior does (one CDF a unit, not two quantiles)
    a, b = prior.alpha + triples[:, 2], prior.beta + triples[:, 1] - triples[:, 2]
    return {
        "pass_prob_histogram": np.histogram(mean, bins=10, range=(0.0, 1.0))[0].tolist(),
        "lowest": entries[:len(low)], "highest": entries[len(low):],
        "tasks_almost_never": int(weights[beta_cdf(EXTREME, a, b) > 0.975].sum()),
        "tasks_almost_always": int(weights[beta_cdf(1.0 - EXTREME, a, b) < 0.025].sum()),
    }


def _expected(res: dict, triples: np.ndarray, weights: np.ndarray, pass_prior: BetaPrior, valid_prior: BetaPrior,
              g: int, out: dict) -> dict:
    """The binomial expression at ``g`` over every unit's posteriors (``signal_math.posterior_shares``)."""
    phi = out["exception_share_of_invalid"]
    sh = posterior_shares(triples[:, 0], triples[:, 1], triples[:, 2], pass_prior, valid_prior, g,
                          phi if phi is not None else 1.0, weights)
    res.update({"expected_informative_share": sh.informative, "expected_all_pass_share": sh.all_pass,
                "expected_all_fail_share": sh.all_fail, "expected_too_few_valid_share": sh.too_few_valid,
                "expected_flipped_share": sh.flipped})
    return res
