"""The run summary. Keys reuse ``measure``'s names where the figure is the same.

Definitions:
- ``concurrency``: sweep line over the attempts that held a sandbox (half-open
  intervals); ``mean`` = sandbox time / span, span = first start to last finish;
  ``touches`` = separate stretches at the peak; ``time_at_peak_s`` their total.
- ``hold_s``: over attempts that held a sandbox. ``queue_wait_s``: per attempt, queue
  entry to start (or to the drop).
- ``utilisation``: sandbox time / (total cap x sim_time_s), over capped pools.
- ``step_s`` (RL): one trainer step's wall time, batch release to the end of its
  training; ``trainer_idle_fraction``: share of the RL span (first release to last
  training end) the trainer spent not training.
- ``lost_sandbox_hours``: sandbox time of attempts that ended in an exception
  (infrastructure or agent) or were reclaimed by preemption.
- ``littles_law``: L (time-average rollouts in the system) against lambda x W.
- ``events`` is deterministic; ``events_per_s`` and ``wall_s`` depend on the machine,
  so they appear only with ``timing=True`` (keeps same-seed output byte-identical).
"""

from __future__ import annotations

import numpy as np

from sandbox_fleet.measure.concurrency import interval_stats, to_us
from sandbox_fleet.measure.stats import arrival_rate_per_s
from sandbox_fleet.simulate.engine.entities import (
    COMPLETED,
    DROPPED,
    EXCEPTION,
    LIFETIME,
    PREEMPTION,
    RETRIED,
    TIMEOUT,
)
from sandbox_fleet.simulate.model import SimulateSummary


def _quantiles(v: np.ndarray, scratch: np.ndarray | None = None) -> dict:
    """Mean, p50 and p99 of ``v``; ``scratch`` (a spare float array, overwritten) saves the copy
    ``percentile`` would make when it is at least ``v``'s size."""
    if v.size == 0:
        return {"mean": None, "p50": None, "p99": None}
    if scratch is not None and scratch.size >= v.size:
        work = scratch[: v.size]
        np.copyto(work, v)
        p50, p99 = np.percentile(work, [50, 99], overwrite_input=True).tolist()  # one partition, no copy
    else:
        p50, p99 = np.percentile(v, [50, 99]).tolist()  # one partition for both
    return {"mean": float(v.mean()), "p50": p50, "p99": p99}


def _hold_summary(v: np.ndarray) -> tuple[dict, np.ndarray | None]:
    """The hold figures, and the sorted copy they were read from (a spare buffer for the caller)."""
    if v.size == 0:
        return dict.fromkeys(("rows", "min", "median", "mean", "p90", "p99", "max")), None
    s = np.sort(v)  # the mean is summed in sorted order (as measure's hold summary does)
    out = {"rows": int(s.size), "min": float(s[0]), "mean": float(s.mean()), "max": float(s[-1])}
    # Read before the partition below reorders s; the quantiles depend only on its values.
    p50, p90, p99 = np.percentile(s, [50, 90, 99], overwrite_input=True).tolist()
    return {"rows": out["rows"], "min": out["min"], "median": p50, "mean": out["mean"], "p90": p90, "p99": p99,
            "max": out["max"]}, s


def concurrency(start: np.ndarray, finish: np.ndarray) -> dict:
    """Mean, peak, touches and time at peak of half-open intervals ``[start, finish)`` (seconds).

    Measure's integer sweep on the times rounded to the microsecond, the grid the simulated
    telemetry is written on: measuring that telemetry gives the same figures.
    """
    return interval_stats(to_us(start), to_us(finish))


def summarise(res, *, timing: bool = False, pass_rate: float | None = None, warmup_s: float | None = None,
              **head) -> SimulateSummary:
    """The run's ``SimulateSummary``; ``head`` (scenario, seed, telemetry) is carried in.

    ``pass_rate`` and ``warmup_s`` (``[run]``) go to the steady-state analysis (``simulate.engine.steady``).
    """
    d = res.derived()
    started, hold, term, waits = d["started"], d["hold"], d["term"], d["waits"]
    n = res.n_rollouts
    by_state = np.bincount(res.state, minlength=RETRIED + 1)  # codes 0..RETRIED (the invariants check)
    n_state = {name: int(by_state[code])
               for name, code in (("completed", COMPLETED), ("exceptions", EXCEPTION), ("timeouts", TIMEOUT), ("dropped", DROPPED))}
    sandbox_s = float(hold.sum())
    sim_time = float(res.end_s)
    caps = [f.cap for f in res.fleets]
    capped = all(c is not None for c in caps)
    retried = int(by_state[RETRIED])
    lost_h = _lost_hours(res, started, int(by_state[EXCEPTION]) + retried)

    # Little's law over the whole run: L = area under rollouts-in-system / time,
    # lambda = rollouts / time, W = mean time in system (first arrival to terminal end).
    sojourn = d["sojourn"]
    t0 = float(np.nanmin(res.rollout_arrival_s)) if n else 0.0
    horizon = sim_time - t0
    hold_figures, spare = _hold_summary(hold)
    out: dict = {
        **head,
        "rollouts": n,
        "attempts": int(res.state.size),
        "completed": n_state["completed"],
        "dropped": n_state["dropped"],
        "sim_time_s": sim_time,
        "concurrency": dict(res.concurrency_stats()),
        "hold_s": hold_figures,
        "outcomes": {
            "rows": n,
            **n_state,
            "retried_attempts": retried,
            "exception_rate": n_state["exceptions"] / n if n else None,
            "timeout_rate": n_state["timeouts"] / n if n else None,
            "completed_rate": n_state["completed"] / n if n else None,
        },
        "queue_wait_s": _quantiles(waits, spare),
        "utilisation": sandbox_s / (sum(caps) * sim_time) if capped and sim_time > 0 else None,
        "sandbox_hours": sandbox_s / 3600,
        "lost_sandbox_hours": lost_h,
        "littles_law": {
            "mean_in_system": float((sandbox_s + float(waits.sum())) / horizon) if horizon > 0 else None,
            "arrival_rate_per_s": arrival_rate_per_s(n, horizon) if horizon > 0 else None,
            "mean_time_in_system_s": float(sojourn.mean()) if n else None,
        },
        "events": res.events,
    }
    steps_of = {w: st["train_end_s"] - st["release_s"] for w, st in res.steps.items()}
    if res.steps:
        step, idle_num, idle_den = [], 0.0, 0.0
        for w, st in res.steps.items():
            step.extend(steps_of[w].tolist())
            span = float(st["train_end_s"][-1] - st["release_s"][0])
            idle_num += span - float(np.sum(st["train_end_s"] - st["train_start_s"]))
            idle_den += span
        out["step_s"] = _quantiles(np.asarray(step))
        out["trainer_idle_fraction"] = idle_num / idle_den if idle_den > 0 else None
        out["steps"] = len(step)
    dynamic = dynamic_figures(res, started)
    if len(dynamic) == 1:
        out["dynamic_sampling"] = next(iter(dynamic.values()))
    if len(res.workloads) > 1:
        out["workloads"] = {}
        for w, wl in enumerate(res.workloads):
            sel = res.workload == w
            st_sel = sel & started
            out["workloads"][wl.name] = {
                "pool": wl.pool,
                "rollouts": int(wl.count),
                "completed": int(np.count_nonzero(sel & term & (res.state == COMPLETED))),
                "queue_wait_s": _quantiles(waits[sel]),
                "sandbox_hours": float(np.sum(res.finish_s[st_sel] - res.start_s[st_sel])) / 3600,
                "priority": (wl.priority or 0) if res.fleets[wl.pool].admission == "priority" else None,
                "preempted_attempts": int(np.count_nonzero(st_sel & (res.phase == PREEMPTION))),
                "step_s": _quantiles(steps_of[w]) if w in steps_of else None,
                "dynamic_sampling": dynamic.get(w),
            }
    if res.inference is not None:
        from sandbox_fleet.simulate.engine.inference.figures import inference_figures

        out.update(inference_figures(res.inference, sim_time, hold, res.rollout[started]))
    if res.images is not None:
        out["images"] = res.images.figures()
    out["substrate"] = substrate_figures(res, started)
    out["limits"] = limits_figures(res, started)
    out["node_pools"] = node_figures(res)
    from sandbox_fleet.simulate.engine.steady import analyse

    out["steady_state"] = analyse(res, pass_rate=pass_rate, warmup_s=warmup_s)
    if timing:
        out["wall_s"] = res.wall_s
        out["engine"] = res.engine
        out["events_per_s"] = res.events / res.wall_s if res.wall_s > 0 else None
        out["rollouts_per_s"] = n / res.wall_s if res.wall_s > 0 else None
    return SimulateSummary.build(**out)


def dynamic_figures(res, started: np.ndarray) -> dict[int, dict]:
    """Per RL workload with dynamic sampling: its ``dynamic_sampling`` block (the draw's figures, and the
    peak of its own attempts)."""
    from sandbox_fleet.simulate.engine.dynamic_sampling import figures

    out = {}
    for w, wl in enumerate(res.workloads):
        dr = getattr(wl, "groups_drawn", None)
        if getattr(wl, "dynamic", None) is None or dr is None:
            continue
        sel = started & (res.workload == w)
        out[w] = {"workload": wl.name, **figures(wl.dynamic, dr),
                  "peak": int(concurrency(res.start_s[sel], res.finish_s[sel])["peak"]) if sel.any() else 0}
    return out


def _lost_hours(res, started: np.ndarray, failed_rows: int) -> dict:
    """Sandbox hours of attempts that ended in an exception (or were retried), and of those reclaimed
    by preemption (an exception too). A run where no attempt failed lost nothing: no row passes."""
    if failed_rows == 0:
        return {"exception": 0.0, "preemption": 0.0}  # = the sums below over no rows: 0.0 / 3600
    exc_rows = started & ((res.state == EXCEPTION) | (res.state == RETRIED)) & (res.phase != PREEMPTION)
    pre_rows = started & (res.phase == PREEMPTION)
    return {"exception": float(np.sum(res.finish_s[exc_rows] - res.start_s[exc_rows])) / 3600,
            "preemption": float(np.sum(res.finish_s[pre_rows] - res.start_s[pre_rows])) / 3600}


def limits_figures(res, started: np.ndarray) -> dict | None:
    """The ``limits`` block: lifetime kills, warm claims and cold starts, the wait for a ready sandbox."""
    lims = [pl.limits for pl in res.fleets if pl.limits is not None]
    if not lims:
        return None
    lifetimes = [lim.lifetime_s for lim in lims if lim.lifetime_s is not None]
    out: dict = {"killed_attempts": int(np.count_nonzero(started & (res.phase == LIFETIME))) if lifetimes else None,
                 "lifetime_s": lifetimes[0] if len(lifetimes) == 1 else None}
    words = ["lifetime kills cut in the drawn holds (exceptions of phase lifetime)"] if lifetimes else []
    if res.limits is not None:
        warm = res.limits["warm"]
        out.update(warm_claims=int(np.count_nonzero(warm)), cold_starts=int(warm.size - np.count_nonzero(warm)),
                   ready_wait_s=_quantiles(res.limits["ready_wait_s"]))
        words.append("first attempts placed by the admission kernel (the pools with limits): a warm claim, or the "
                     "creation bucket, the starting cap and the cold start")
    out["basis"] = "; ".join(words) or None
    return out


def node_figures(res) -> dict | None:
    """The ``node_pools`` block: each node pool's bill, peak and provisioning waits (``node_fleet.figures``)."""
    if res.nodes is None:
        return None
    rows = [{k: v for k, v in row.items() if k not in ("span_s", "node_launch_s", "node_release_s")} for row in res.nodes]
    span_s = max(row["span_s"] for row in res.nodes)
    usd = sum(row["usd"] for row in rows)
    traced = [row["trace_missed"] for row in rows if row["trace_missed"] is not None]
    return {"pools": rows, "node_hours": sum(row["node_hours"] for row in rows), "usd": usd, **_stranded(res),
            "reclaim_trace_missed": sum(traced) if traced else None,
            "usd_per_h": usd / (span_s / 3600.0) if span_s > 0 else None,
            "waited": sum(row["waited"] for row in rows), "wait_s_total": sum(row["wait_s_total"] for row in rows),
            "basis": ("placed inside the engine (the admission kernel): each attempt on a node by the placement "
                      "rule of its node pool (pack: most-allocated; spread: least-allocated), pools in order; a "
                      "request that fits no node launches one and starts when it joins (provision_s), at max_nodes "
                      "it waits for room; billed launch to release (scale_down_s after the last attempt left), "
                      "min_nodes from the first start to the last end")}


#: equal spans of the billed time in the stranded series (the node replay's ``SERIES_BINS``)
NODE_SERIES_BINS = 200
MB_PER_GB = 1024  # requests and allocatable are MiB (``plan.catalog``'s)


def _stranded(res) -> dict:
    """Allocatable on live nodes minus requested (stranded) cpu / memory / disk over the nodes' billed time,
    in all and per equal span, with the nodes up per node pool: the node replay's computation
    (``nodes.stranded_over_time`` / ``nodes_over_time``) over the engine's node spans and attempt intervals
    (each attempt's request from its start to its end, a reclaimed one to its reclaim)."""
    from sandbox_fleet.simulate.engine.nodes import nodes_over_time, stranded_over_time

    specs = [n for fl in res.fleets for n in fl.node_pools or []]
    k_of = np.concatenate([np.full(len(row["node_launch_s"]), k) for k, row in enumerate(res.nodes)]).astype(np.int64)
    launch = np.concatenate([np.asarray(row["node_launch_s"], float) for row in res.nodes])
    release = np.concatenate([np.asarray(row["node_release_s"], float) for row in res.nodes])
    if launch.size == 0:
        return {}
    cap = np.array([[n.cpu, n.memory_mb, n.disk_mb] for n in specs])
    req = np.array([wl.request if wl.request is not None else (0.0,) * 3 for wl in res.workloads], float)
    on_nodes = np.array([wl.request is not None for wl in res.workloads])
    ran = on_nodes[res.workload] & ~np.isnan(res.start_s)
    begin, end = res.start_s[ran], res.finish_s[ran]
    edges, stranded = stranded_over_time(launch, release, k_of, cap, begin, end, res.workload[ran], req,
                                         NODE_SERIES_BINS)
    _, up = nodes_over_time(k_of, launch, release, len(specs), NODE_SERIES_BINS)
    billed_h = float(np.sum((release - launch) * cap[k_of, 0])) / 3600.0
    total = stranded.sum(axis=1)
    width = float(edges[1] - edges[0]) if edges.size > 1 else 0.0
    names = [f"{fl.name}/{n.name}" for fl in res.fleets for n in fl.node_pools or []]
    return {"stranded_cpu_h": float(total[0]), "stranded_memory_gb_h": float(total[1]) / MB_PER_GB,
            "stranded_disk_gb_h": float(total[2]) / MB_PER_GB,
            "stranded_cpu_share": float(total[0]) / billed_h if billed_h > 0 else None,
            "series": {"t_h": [(float(t) - float(edges[0])) / 3600.0 for t in edges], "span_h": width / 3600.0,
                       "nodes_by_pool": {name: [int(v) for v in up[k]] for k, name in enumerate(names)},
                       "stranded_cpu_h": [float(v) for v in stranded[0]],
                       "stranded_memory_gb_h": [float(v) / MB_PER_GB for v in stranded[1]],
                       "stranded_disk_gb_h": [float(v) / MB_PER_GB for v in stranded[2]]}}


def substrate_figures(res, started: np.ndarray) -> dict | None:
    """The ``substrate`` block: the overhead the holds include (one substrate per scenario)."""
    subs = [ep.substrate for ep in (wl.resolved_episode() for wl in res.workloads) if ep.substrate is not None]
    if not subs:
        return None
    sub = subs[0]
    has_turns = any(wl.resolved_episode().turns is not None for wl in res.workloads)
    attempts = int(np.count_nonzero(started))
    first = res.n_rollouts
    turns_mean = res.turns_total / first if first else None
    if has_turns:
        basis = "each rollout's own turn count ([turns])"
    elif sub.turns_mean is not None:
        basis = f"turns_per_rollout = {sub.turns_mean:g}"
    else:
        basis = "no turn count: cold start only"
    per_rollout = sub.cold_start_s + (turns_mean or 0.0) * sub.per_action_s
    return {
        "name": sub.name, "kind": sub.kind, "cold_start_s": sub.cold_start_s, "per_action_s": sub.per_action_s,
        "attempts": attempts, "turns_mean": turns_mean, "turns_basis": basis,
        "added_sandbox_hours": (sub.cold_start_s * attempts + sub.per_action_s * res.turns_total) / 3600,
        "added_worker_hours_per_million": per_rollout * 1_000_000 / 3600,
        "source": sub.source, "as_of": sub.as_of,
        "basis": ("cold start once per attempt (added to the build) + per-action overhead x turns (added to the agent "
                  "phase); illustrative substrate figures (data/substrates.toml), not measured"),
    }
