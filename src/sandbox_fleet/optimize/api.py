"""``optimize``: the cheapest fleet + GPU pool whose simulated closed loop meets a target."""

from __future__ import annotations

import math
import statistics
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox_fleet.errors import InputError
from sandbox_fleet.limits import check_range, check_seed
from sandbox_fleet.optimize import tomlout
from sandbox_fleet.optimize.evaluate import CONFIRM_HOLDS, Evaluator, Goal, scenario_data, slice_cap
from sandbox_fleet.optimize.inputs import base_of, sandbox_requests
from sandbox_fleet.optimize.model import OptimizeSummary
from sandbox_fleet.optimize.search import Priced, Search, Space, frontier
from sandbox_fleet.optimize.space import gpu_options, node_types, spot_rates
from sandbox_fleet.simulate.engine.steady import MIN_HOLDS_PER_SANDBOX, t95
from sandbox_fleet.sweep.backends import BACKENDS
from sandbox_fleet.textout import progress_bar

if TYPE_CHECKING:
    from sandbox_fleet.measure.model import MeasureSummary

SCREEN_HOLDS = 24  # holds per sandbox of a search run (the loop's start-up transient is ~1% by then)
NEAR = 0.03  # a cheaper point the screen put this close below the target is re-run at confirmation length
RUNNER_UPS = 2  # at most this many such points


@dataclass
class Outcome:
    model: OptimizeSummary
    scenario_toml: str  # the winner as a scenario `sandbox-fleet simulate` runs

    @property
    def summary(self) -> dict:
        """The summary's JSON (what ``optimize --json`` prints)."""
        return self.model.to_json()


def run_optimize(
    source: MeasureSummary | str | Path, *, name: str | None = None, passing_per_hour: float | None = None, batch: int | None = None,
    train_s: float = 0.0, max_step_s: float | None = None, steps: int = 2, scale: float = 1.0,
    count: int | None = None, seed: int | None = None, backend: str = "local", workers: int | None = None,
    gpus: list[str] | None = None, gpus_per_replica: int | None = None, caching: str = "both",
    kv_offload_gb: list[float] | None = None, max_replicas: int = 16, max_cap: int | None = None,
    cap_step: int | None = None, reps: int = 5, search_reps: int = 1, screen_holds: int = SCREEN_HOLDS, pass_rate: float | None = None,
    model_params_b: float | None = None, kv_bytes_per_token: float | None = None,
    sandbox_cpu: float | None = None, sandbox_memory_gb: float | None = None, sandbox_disk_gb: float | None = None,
    node_type: list[str] | None = None,
    progress: bool = False,
) -> Outcome:
    """Search sandbox cap, node type and tier, GPU type and count, caching and offload; see docs/optimize.md.

    ``source`` is the loop to resize: a ``MeasureSummary`` (``measure.load.load_measure`` reads one;
    ``name``, the file it came from, names it in messages and its file name is the output's ``input``),
    or, for convenience, a path: a
    scenario ``.toml`` or a measure summary ``.json`` (read here through ``load_measure``).
    """
    goal = _goal(passing_per_hour, batch, train_s, max_step_s, steps)
    if backend not in BACKENDS:
        raise InputError(f"`backend` {backend!r}: expected one of {', '.join(BACKENDS)}")
    for param, v in (("`scale`", scale), ("`sandbox_cpu`", sandbox_cpu), ("`sandbox_memory_gb`", sandbox_memory_gb),
                     ("`sandbox_disk_gb`", sandbox_disk_gb)):
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise InputError(f"{param} {v}: expected a positive number")
    if scale > 1:
        raise InputError(f"`scale` {scale}: expected a fraction in (0, 1]")
    for param, n_given in (("`max_replicas`", max_replicas), ("`reps`", reps), ("`search_reps`", search_reps),
                           ("`steps`", steps)):
        if n_given < 1:
            raise InputError(f"{param} {n_given}: expected a positive integer")
    check_range("`max_cap`", max_cap, minimum=1, whole=True)
    check_range("`cap_step`", cap_step, minimum=1, whole=True)
    check_range("`train_s`", train_s)
    check_range("`max_step_s`", max_step_s, above=True)
    for v in kv_offload_gb or []:
        check_range("`kv_offload_gb`", v)
    if screen_holds < 0:
        raise InputError(f"`screen_holds` {screen_holds}: expected 0 (off) or a positive integer")
    if pass_rate is not None and not 0 < pass_rate <= 1:
        raise InputError(f"`pass_rate` {pass_rate}: expected a fraction in (0, 1]")
    caching_opts = {"both": [True, False], "on": [True], "off": [False]}.get(caching)
    if caching_opts is None:
        raise InputError(f"`caching` {caching!r}: expected on, off or both")
    if progress:  # one bar for the whole search, only on a terminal; piped output stays clean
        from rich.console import Console

        progress = Console(stderr=True).is_terminal
    base = base_of(source, name, pass_rate=pass_rate, model_params_b=model_params_b,
                   kv_bytes_per_token=kv_bytes_per_token)
    where = str(source) if isinstance(source, (str, Path)) else (name or base.name)  # how messages name the input
    seed = int(base.data.get("run", {}).get("seed", 1)) if seed is None else seed
    check_seed(seed)
    if count is not None and count < 1:
        raise InputError(f"`count` {count}: expected a positive integer")
    n = count if count is not None else max(1, round(base.count * scale))
    top = max_cap or (goal.batch if goal.step_mode else (2 * base.cap if base.cap else None))
    if top is None:
        raise InputError(f"{where}: no cap to start from; give `max_cap`")
    step = cap_step or _default_step(top, scale)
    caps = list(range(step, top + 1, step)) or [top]
    pruned: dict[str, int] = {}
    reqs, weights, request_basis = sandbox_requests(base, sandbox_cpu, sandbox_memory_gb, sandbox_disk_gb)
    nodes = node_types(reqs, weights, node_type)
    space = Space(caps=caps, max_replicas=max_replicas, nodes=nodes,
                  options=gpu_options(base.data["inference"], gpus, gpus_per_replica, caching_opts,
                                      kv_offload_gb if kv_offload_gb is not None else [base.kv_offload_gb], pruned),
                  pruned=pruned)
    full_n = base.count if count is None else max(1, round(count / scale))
    with _session(backend, workers):
        ev = Evaluator(base, goal, n, seed, backend=backend, workers=workers, progress=progress,
                       search_reps=search_reps, scale=scale, spot_rates=spot_rates(nodes),
                       screen_holds=screen_holds)
        # a slice searches; the full loop confirms (a slice's passing/h is not the full loop's: docs/optimize.md)
        judge = ev if scale == 1 else Evaluator(base, goal, full_n, seed, backend=backend, workers=workers,
                                                progress=progress, search_reps=search_reps,
                                                spot_rates=spot_rates(nodes), screen_holds=screen_holds)
        search = Search(ev, space)
        with progress_bar(progress, expected_simulations(space, search_reps, reps), "optimize: simulations") as tick:
            ev.ticker = judge.ticker = tick
            found = search.run()
            if found is None:
                raise InputError(_infeasible(goal, search, space))
            best, final, rejected = confirm(search, found, reps, judge)
            if best is None:
                raise InputError(_unconfirmed(goal, rejected, reps))
            best, final, runner_up = challenge(search, best, final, reps, judge)
    points = list(search.points.values())
    front = frontier(points, goal.step_mode)
    if not goal.step_mode:  # the written scenario runs as long as the confirmation did, so it reproduces it
        full_n = judge.rollouts(best.cap, True)
    model = OptimizeSummary.build(
        input=base.name, input_fingerprint=base.fingerprint,
        target={"passing_per_hour": goal.passing_per_hour, "batch": goal.batch,
                "train_s": goal.train_s if goal.step_mode else None, "max_step_s": goal.max_step_s,
                "pass_rate": base.pass_rate, "scale": scale},
        best={**_point(best), **_winner(final, reps, judge, rejected), "runner_up": runner_up},
        search_best=_point(found),
        frontier=[_point(q) for q in front],
        frontier_axis="step_s" if goal.step_mode else "passing_per_hour",
        evaluated=len(points), simulations=ev.simulations + (judge.simulations if judge is not ev else 0),
        backend=backend, seed=seed,
        basis=base.basis + _scale_basis(goal, scale, n, base.count, count, caps, step) + [
            f"caps searched {caps[0]:,}..{caps[-1]:,} step {step:,}; replicas 1..{max_replicas}",
        ] + ([f"a cap above {n // 2:,} runs 2 x cap rollouts (every sandbox at least two holds), not {n:,}"]
             if goal.step_mode and scale == 1 and n < 2 * caps[-1] else []) + [
            request_basis,
            "node prices from the bundled catalog (illustrative); spot re-run priced over the simulated holds: "
            "sum of (e^{rh} - 1)/r - h",
            "GPU prices from the GPU catalog (illustrative on-demand)",
            f"search: {search_reps} replication(s) per candidate (seeds from {seed}, the same for all); "
            f"winner: {reps} (seeds {seed}..{seed + reps - 1})",
        ] + ([] if goal.step_mode else [_length_basis(screen_holds, judge.count)]) + [
            _confidence_basis(goal, reps),
        ] + ([] if goal.step_mode else [
            "one run's interval: mean +- t s sqrt(1 + 1/n) over the n replications, s the larger of their sd and the "
            "root mean square of each run's own batch-means standard error (passing_per_hour_run_se)"]) + ([] if judge is ev else [
            f"confirmed on the full loop, not the slice: the winner (and any step-up or runner-up) re-run at full "
            f"scale, {judge.rollouts(best.cap, True):,} rollouts x {reps} replications; its figures, interval and the written "
            "scenario are those runs' (the written seed is the first replication's)"]),
        pruned=dict(sorted(pruned.items())),
    )
    data = scenario_data(base, goal, best.option, best.replicas, best.cap, full_n, seed)
    won = model.best
    lo, hi = won.passing_per_hour_interval
    head = [f"written by sandbox-fleet optimize from {base.name}: the cheapest configuration found",
            f"${won.usd_per_h:.2f}/h; {won.nodes} x {won.node_type} "
            f"({won.tier}); one run's passing/h is expected in [{lo:.1f}, {hi:.1f}] (95%)"]
    if scale != 1:
        head.append(f"full scale: the search simulated a {scale:g} slice of this loop, the claim is this loop's own "
                    "(confirmed at full scale; docs/optimize.md, --scale)")
    return Outcome(model, tomlout.dumps(data, head))


MAX_STEP_UPS = 12  # candidates re-evaluated before giving up on a confident winner


def expected_simulations(space: Space, search_reps: int, reps: int) -> int:
    """The progress bar's total, before the first run: per GPU option, the run at the bounds, a
    bisection of replicas and, at one replica count, of the cache limit and of the cap (each
    ceil(log2 n) runs), at the search's replications; then the winner's confirmation. A search
    that scans past a cache limit runs more, and the bar's total grows when it does."""
    def log2(n: int) -> int:
        return max(1, math.ceil(math.log2(max(n, 2))))

    per_option = 1 + log2(space.max_replicas) + 1 + 2 * log2(len(space.caps))
    return len(space.options) * per_option * search_reps + reps


def confirm(search: Search, found: Priced, reps: int, judge: Evaluator | None = None) -> tuple[Priced | None, object, list]:
    """Re-evaluate the cheapest feasible point with ``reps`` replications; step up until one is confident.

    ``judge`` re-evaluates (default the search's evaluator): with ``--scale`` it is the full loop, so
    what is bought and claimed is what the written full-scale scenario does, not what its slice did.

    A point is bought only if the 95% confidence bound of its re-evaluated mean meets the target
    (the lower bound of passing/h, the upper of the step time). A point that misses is set aside,
    its next cap and next replica count are simulated (at the search's replications), and the
    cheapest feasible point not yet set aside is tried next. Everything depends only on results
    already in, so the outcome is the same on every backend.
    """
    ev, space = search.ev, search.space
    judge = judge or ev
    rejected: list[tuple[Priced, object]] = []
    seen: set = set()
    cand: Priced | None = found
    while cand is not None and len(rejected) < MAX_STEP_UPS:
        final = judge.run([(cand.option, cand.replicas, cand.cap)], reps=reps, full=True)[0]
        if confident(judge, final, reps):
            return cand, final, rejected
        rejected.append((cand, final))
        seen.add((cand.option, cand.replicas, cand.cap))
        k = space.caps.index(cand.cap)
        up = [(cand.option, cand.replicas, space.caps[k + 1])] if k + 1 < len(space.caps) else []
        up += [(cand.option, cand.replicas + 1, cand.cap)] if cand.replicas < space.max_replicas else []
        ev.run(up)
        for q in up:
            search._record(*q)
        left = [q for key, q in search.points.items() if q.meets and key not in seen]
        cand = min(left, key=lambda q: q.key(search.order)) if left else None
    return None, None, rejected


def challenge(search: Search, best: Priced, final, reps: int,
              judge: Evaluator | None = None) -> tuple[Priced, object, dict | None]:
    """Re-run, at confirmation length, the cheaper points the screen put just below the target.

    A screen is short and its start-up transient can read a little high or low, so a cheaper point
    the screen failed by less than ``NEAR`` may meet the target on long runs; the cheapest (up to
    ``RUNNER_UPS``) are confirmed like the winner, and one that is confident replaces it. Returns the
    winner, its confirmation and the runner-up that was re-run (None when none was near).
    """
    ev = search.ev
    judge = judge or ev
    target = ev.goal.passing_per_hour
    if ev.goal.step_mode or target is None:
        return best, final, None
    near = sorted((q for q in search.points.values()
                   if not q.meets and q.result.stable and q.key(search.order) < best.key(search.order)
                   and q.result.passing_per_hour >= (1 - NEAR) * target),
                  key=lambda q: q.key(search.order))[:RUNNER_UPS]
    tried = None
    for q in near:
        res = judge.run([(q.option, q.replicas, q.cap)], reps=reps, full=True)[0]
        ok = confident(judge, res, reps)
        tried = {**_point(q), "reevaluated": res.passing_per_hour, "bound": _bound(judge, res, reps), "bought": ok}
        if ok:
            return q, res, tried
    return best, final, tried


def _bound(ev: Evaluator, res, reps: int) -> float:
    """The 95% confidence bound of the mean that must meet the target (the mean itself with one run)."""
    vals = res.steps if ev.goal.step_mode else res.values
    m = statistics.fmean(vals)
    if len(vals) < 2:
        return m
    half = t95(len(vals) - 1) * statistics.stdev(vals) / math.sqrt(len(vals))
    return m + half if ev.goal.step_mode else m - half


def confident(ev: Evaluator, res, reps: int) -> bool:
    if not res.stable:
        return False
    if ev.goal.step_mode:
        assert ev.goal.max_step_s is not None  # step_mode is max_step_s given
        return bool(res.steps) and _bound(ev, res, reps) <= ev.goal.max_step_s
    assert ev.goal.passing_per_hour is not None  # a goal without a step bound has a rate (_goal)
    return _bound(ev, res, reps) >= ev.goal.passing_per_hour


def _confidence_basis(goal: Goal, reps: int) -> str:
    side = "upper bound of the mean step" if goal.step_mode else "lower bound of the mean passing/h"
    length = ("" if goal.step_mode else
              f"; passing/h over each run's steady window (MSER-5 warm-up deleted; at least {MIN_HOLDS_PER_SANDBOX} "
              f"holds per sandbox left in a confirmation); a cheaper point the screen put within {NEAR:.0%} below the "
              "target is confirmed the same way")
    if reps < 2:
        return "bought only if the re-evaluated mean meets the target (one replication: no interval)" + length
    return (f"bought only if the 95% confidence {side} over {reps} replications (mean -/+ t sd / sqrt(n)) meets "
            "the target; otherwise the next cap or replica count and the next cheapest feasible point are tried"
            + length)


def _default_step(top: int, scale: float) -> int:
    step = max(1, top // 32)
    if scale < 1:  # a whole number of slice sandboxes per step, so every candidate is the same fraction
        step = max(1, round(max(1, round(step * scale)) / scale))
    return step


def _length_basis(screen_holds: int, n: int) -> str:
    confirm = (f"confirmations at least {CONFIRM_HOLDS} holds per sandbox (or the input's {n:,} rollouts when more)")
    if not screen_holds:
        return f"run length: every run at confirmation length (--screen-holds 0): {confirm}"
    return (f"run length by holds per sandbox: search runs screen {screen_holds} per sandbox (its short steady "
            f"window reads within a few per cent); {confirm}, read over the steady window")


def _scale_basis(goal: Goal, scale: float, n: int, full: int, count: int | None, caps: list[int], step: int) -> list[str]:
    if scale == 1:
        return [f"{n:,} rollouts per simulation"] if goal.step_mode else []
    lo, hi = slice_cap(caps[0], scale), slice_cap(caps[-1], scale)
    what = (f"batch {slice_cap(goal.batch, scale):,} of {goal.batch:,}" if goal.batch is not None and goal.step_mode
            else f"{n:,} rollouts of {full if count is None else round(count / scale):,} per simulation")
    return [f"--scale {scale:g}: each candidate simulates a slice, round({scale:g} x cap) sandboxes "
            f"({lo:,}..{hi:,}) and {what}, on replicas with f = slice cap / cap of their GPUs' prefill and "
            "decode rates, prefix cache and offload (the same iteration floor)",
            "full scale = the slice / f: sandboxes, nodes and GPU count as reported, passing/h = the slice's / f "
            "(per replica, f x the sequences at f x the rate decode at the full replica's speed); "
            "a prompt's own prefill takes 1/f as long in the slice"]


def _goal(pph, batch, train_s, max_step_s, steps) -> Goal:
    step_args = (batch, max_step_s)
    if pph is not None and any(a is not None for a in step_args):
        raise InputError("give `passing_per_hour`, or `batch` with `max_step_s`, not both")
    if pph is not None:
        if not (pph > 0 and math.isfinite(pph)):
            raise InputError(f"`passing_per_hour` {pph}: expected a positive number")
        return Goal(passing_per_hour=pph)
    if batch is None or max_step_s is None:
        raise InputError("give a target: `passing_per_hour` X, or `batch` B `max_step_s` S [`train_s` T]")
    if batch < 1 or not max_step_s > 0 or train_s < 0:
        raise InputError("`batch` must be >= 1, `max_step_s` > 0 and `train_s` >= 0")
    from sandbox_fleet.limits import check_memory
    from sandbox_fleet.simulate.scenario.bounds import BYTES_PER_ATTEMPT

    # up front, in optimize's own words: the scenario's check would advise a flag optimize does not have
    check_memory(float(steps) * (float(batch) * BYTES_PER_ATTEMPT + 64), None,
                 f"`batch` {batch:,}: {steps:,} steps of {batch:,} rollouts per candidate", "lower `batch` or `steps`")
    return Goal(batch=batch, train_s=train_s, max_step_s=max_step_s, steps=steps)


def _infeasible(goal: Goal, search: Search, space: Space) -> str:
    pts = list(search.points.values())
    if goal.step_mode:
        b = min(pts, key=lambda q: q.result.step_s or math.inf)
        want, got = f"`max_step_s` {goal.max_step_s:g}", f"the shortest step was {b.result.step_s:.1f} s"
    else:
        b = max(pts, key=lambda q: q.result.passing_per_hour)
        want, got = f"`passing_per_hour` {goal.passing_per_hour:g}", f"the most was {b.result.passing_per_hour:.1f}/h"
    bounds = f"`max_replicas` {space.max_replicas}"
    if not (goal.step_mode and goal.batch is not None and space.caps[-1] >= goal.batch):  # a step goal has a batch
        bounds += f" and `max_cap` {space.caps[-1]}"
    return (f"no searched configuration meets {want}: {got} ({b.option.label}, {b.replicas} replicas, "
            f"cap {b.cap}) at the bounds {bounds}; raise them or lower the target")


def _point(q: Priced) -> dict:
    usd, node, nodes, tier, rework = q.fleet
    o = q.option
    return {"sandbox_cap": q.cap, "node_type": node, "nodes": nodes, "tier": tier, "gpu": o.gpu,
            "replicas": q.replicas, "gpus_per_replica": o.gpus_per_replica, "gpus": q.gpus, "caching": o.caching,
            "kv_offload_gb": o.kv_offload_gb, "usd_per_h": q.usd_per_h, "fleet_usd_per_h": usd,
            "gpu_usd_per_h": q.gpus * o.usd_per_gpu_h, "rework_usd_per_h": rework,
            "passing_per_hour": q.result.passing_per_hour, "step_s": q.result.step_s, "meets": q.meets}


def _interval(vals: tuple[float, ...], run_se: tuple[float, ...] = ()) -> tuple[float | None, list[float]]:
    """sd and a 95% prediction interval for one more run: mean +- t s sqrt(1 + 1/n), ``s`` the larger of
    the replications' sd and the root mean square of their own steady-window standard errors
    (``run_se``): a handful of replications can agree by chance (5 full-scale runs of the published
    winner spread 0.2/h where each run's batch means say 0.7/h, and a fresh seed read 433.5 against
    [431.3, 432.6]); both estimate the spread of one run's steady-state mean."""
    m = statistics.fmean(vals)
    if len(vals) < 2:
        return None, [m, m]
    sd = statistics.stdev(vals)
    s = max(sd, math.sqrt(statistics.fmean(v * v for v in run_se))) if run_se else sd
    w = t95(len(vals) - 1) * s * math.sqrt(1 + 1 / len(vals))
    return sd, [m - w, m + w]


def _winner(res, reps: int, ev: Evaluator, rejected: list) -> dict:
    sd, iv = _interval(res.values, res.run_se)
    step_iv = _interval(res.steps)[1] if res.steps else None
    b = _bound(ev, res, reps)
    run_se = math.sqrt(statistics.fmean(v * v for v in res.run_se)) if res.run_se else None
    return {"replications": reps, "passing_per_hour": res.passing_per_hour, "step_s": res.step_s,
            "passing_per_hour_run_se": run_se,
            "confirmation_rollouts": res.rollouts, "holds_per_sandbox": res.holds_per_sandbox,
            "passing_per_hour_sd": sd, "passing_per_hour_interval": iv, "step_s_interval": step_iv,
            "meets_on_reevaluation": ev.meets(res),
            "passing_per_hour_lower": None if ev.goal.step_mode else b,
            "step_s_upper": b if ev.goal.step_mode else None,
            "stepped_up_from": [{**_point(q), "reevaluated": (r.step_s if ev.goal.step_mode else r.passing_per_hour),
                                 "bound": _bound(ev, r, reps)} for q, r in rejected]}


def _unconfirmed(goal: Goal, rejected: list, reps: int) -> str:
    q, _ = rejected[-1]
    what = f"`max_step_s` {goal.max_step_s:g}" if goal.step_mode else f"`passing_per_hour` {goal.passing_per_hour:g}"
    return (f"no searched configuration meets {what} with 95% confidence over {reps} replications after "
            f"{len(rejected)} candidate(s) (last: {q.option.label}, {q.replicas} replicas, cap {q.cap}); "
            "raise `max_replicas` / `max_cap` or `search_reps`")


@contextmanager
def _session(backend: str, workers: int | None):
    """One Ray instance for the whole search (run_tasks joins it instead of starting one per batch)."""
    if backend != "ray":
        yield
        return
    try:
        import ray
    except ImportError:
        from sandbox_fleet.sweep.backends import RAY_HINT

        raise InputError(f"`backend` ray needs Ray, which is not installed: {RAY_HINT}") from None
    import logging
    import os

    from sandbox_fleet.sweep.backends import default_workers

    owned = not ray.is_initialized()
    if owned:
        kw: dict[str, Any] = {} if os.environ.get("RAY_ADDRESS") else {"num_cpus": workers or default_workers()}
        ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR, **kw)
    try:
        yield
    finally:
        if owned:
            ray.shutdown()
