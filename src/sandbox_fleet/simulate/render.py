"""Readable terminal rendering of a simulate summary (``--json`` prints the dict instead).

Both renderers read through the models (``SimulateSummary``, ``Calibration``); a null figure
or block prints as "-". Tables are drawn in the terminal's one style (``termtable``); shares and
money by ``numfmt`` (as the report prints them).
"""

from __future__ import annotations

from rich.console import Console

from sandbox_fleet.numfmt import money, percent
from sandbox_fleet.simulate.model import (
    P50P99,
    Calibration,
    EngineNodes,
    ImageFigures,
    InferenceCalibration,
    InferenceFigures,
    LostHours,
    MeanP99,
    NodeReplayFigures,
    Quantiles,
    SimulatedConcurrency,
    SimulatedHoldStats,
    SimulatedOutcomes,
    SimulateSummary,
    SteadyState,
)
from sandbox_fleet.termtable import grid, pairs, show
from sandbox_fleet.textout import number


def _f(v, nd: int = 1) -> str:
    return number(v, "," if isinstance(v, int) else f",.{nd}f")


def _pct(v) -> str:
    return "-" if v is None else percent(v)


def _usd(v) -> str:
    return "-" if v is None else money(v)


def _hours(seconds) -> str:
    return _f(None if seconds is None else seconds / 3600, 2)


def _node_rows(nodes: EngineNodes) -> list[tuple[str, str]]:
    rows = []
    for p in nodes.pools or []:
        rows.append((f"nodes {p.pool}/{p.name} ({p.tier}): node-h / $ / peak",
                     f"{_f(p.node_hours, 2)} / {_f(p.usd, 2)} / {_f(p.peak_nodes)} (launched {_f(p.launched)})"))
        if p.waited:
            rows.append((f"nodes {p.pool}/{p.name}: waited for a node / mean / max (s)",
                         f"{_f(p.waited)} / {_f(p.wait_s_total / p.waited if p.wait_s_total is not None else None, 1)}"
                         f" / {_f(p.wait_s_max, 1)}"))
    rows.append(("nodes: $ / $ per h (span)", f"{_f(nodes.usd, 2)} / {_f(nodes.usd_per_h, 2)}"))
    if nodes.stranded_cpu_h is not None:
        rows.append(("nodes: stranded cpu-h / memory / disk GB-h (cpu share)",
                     f"{_f(nodes.stranded_cpu_h, 1)} / {_f(nodes.stranded_memory_gb_h, 1)} / "
                     f"{_f(nodes.stranded_disk_gb_h, 1)} ({_pct(nodes.stranded_cpu_share)})"))
    if nodes.reclaim_trace_missed is not None:
        rows.append(("nodes: reclaim trace rows that found no node up", _f(nodes.reclaim_trace_missed)))
    return rows


def render_summary(s: SimulateSummary, console: Console) -> None:
    """Print a simulate run's summary as one table, then its workloads (``--replay``: the node replay)."""
    if s.nodes is not None:
        render_node_replay(s.nodes, console)
        return
    ss = s.steady_state
    if ss is not None and ss.stable is False:  # before any figure: they grow with the run's length
        console.print(f"unstable: {ss.reason}", markup=False, style="bold red")
    c, h = s.concurrency or SimulatedConcurrency(), s.hold_s or SimulatedHoldStats()
    q, o = s.queue_wait_s or Quantiles(), s.outcomes or SimulatedOutcomes()
    lost = s.lost_sandbox_hours or LostHours()
    rows = [
        ("rollouts / completed / dropped", f"{_f(s.rollouts)} / {_f(s.completed)} / {_f(s.dropped)}"),
        ("simulated time", f"{_hours(s.sim_time_s)} h"),
        ("concurrency mean / peak", f"{_f(c.mean)} / {_f(c.peak)}"),
        ("at peak", f"{_f(c.touches)} touches, {_f(c.time_at_peak_s)} s"),
        ("utilisation", _pct(s.utilisation)),
        ("hold median / p99 / mean (s)", f"{_f(h.median)} / {_f(h.p99)} / {_f(h.mean)}"),
        ("queue wait mean / p50 / p99 (s)", f"{_f(q.mean)} / {_f(q.p50)} / {_f(q.p99)}"),
        ("exceptions / timeouts", f"{_f(o.exceptions)} / {_f(o.timeouts)} (+{_f(o.retried_attempts)} retried attempts)"),
        ("sandbox-hours (lost: exception / preemption)",
         f"{_f(s.sandbox_hours)} ({_f(lost.exception)} / {_f(lost.preemption)})"),
    ]
    if s.step_s is not None:
        st = s.step_s
        rows.append(("RL step mean / p50 / p99 (s)", f"{_f(st.mean)} / {_f(st.p50)} / {_f(st.p99)}"))
        rows.append(("trainer idle", _pct(s.trainer_idle_fraction)))
    if s.dynamic_sampling is not None:
        rows += _dynamic_rows(s.dynamic_sampling)
    else:  # several RL workloads with it: each one's rows, named
        for name, w in (s.workloads or {}).items():
            if w.dynamic_sampling is not None:
                rows += [(f"{name}: {label}", text) for label, text in _dynamic_rows(w.dynamic_sampling)]
    if s.inference is not None:
        rows += _inference_rows(s.inference)
        rows.append(("hold stretch (vs unloaded)", _f(s.hold_stretch, 3)))
    if s.images is not None:
        rows += _image_rows(s.images)
    if s.substrate is not None:
        sub = s.substrate
        rows.append((f"substrate {sub.name}: cold start / per action (s)",
                     f"{_f(sub.cold_start_s, 2)} / {_f(sub.per_action_s, 3)} (+{_f(sub.added_sandbox_hours, 2)} sandbox-h)"))
    if s.limits is not None:
        lim = s.limits
        if lim.killed_attempts is not None:
            rows.append((f"killed at the lifetime ({_f(lim.lifetime_s)} s)", _f(lim.killed_attempts)))
        if lim.warm_claims is not None:
            wait = lim.ready_wait_s or Quantiles()
            rows.append(("warm claims / cold starts", f"{_f(lim.warm_claims)} / {_f(lim.cold_starts)}"))
            rows.append(("ready wait mean / p50 / p99 (s)", f"{_f(wait.mean, 1)} / {_f(wait.p50, 1)} / {_f(wait.p99, 1)}"))
    if s.node_pools is not None:
        rows += _node_rows(s.node_pools)
    if ss is not None:
        rows += _steady_rows(ss)
    rows.append(("events", _f(s.events)))
    if s.events_per_s is not None:
        rows.append(("events/s (wall)", _f(s.events_per_s, 0)))
    show(console, pairs(f"simulate: {s.scenario or ''} (seed {'-' if s.seed is None else s.seed})", rows))
    for line in (ss.warnings or []) if ss is not None else []:
        console.print(f"warning: {line}", markup=False)
    if s.substrate is not None:
        console.print(f"substrate figures: {s.substrate.source} (as of {s.substrate.as_of}; illustrative)", markup=False)
    for name, w in (s.workloads or {}).items():
        wait = w.queue_wait_s or Quantiles()
        policy = ("" if w.priority is None else f", priority {w.priority}") + (
            f", {_f(w.preempted_attempts)} preempted attempts" if w.preempted_attempts else "")
        console.print(f"  {name} (pool {w.pool}): {_f(w.completed)}/{_f(w.rollouts)} completed, "
                      f"mean wait {_f(wait.mean)} s, {_f(w.sandbox_hours)} sandbox-h{policy}")
    if s.telemetry is not None:
        console.print(f"telemetry: {s.telemetry}")


def _ci(v, ci, nd: int = 1) -> str:
    return _f(v, nd) + ("" if not ci else f" [{_f(ci[0], nd)}, {_f(ci[1], nd)}]")


def _steady_rows(st: SteadyState) -> list[tuple[str, str]]:
    state = {False: "unstable", None: "-"}.get(st.stable, "saturated" if st.saturated else "stable")
    rows = [("steady state", state),
            ("steady window (s)", f"{_f(st.warmup_s)} .. {_f(st.window_end_s)} ({st.warmup_method})")]
    if st.completed_per_hour is not None:
        rows += [("window: completed / passing per hour (95%)",
                  f"{_ci(st.completed_per_hour, st.completed_per_hour_ci)} / {_ci(st.passing_per_hour, st.passing_per_hour_ci)}"),
                 ("window: hold mean (s, 95%) / holds per sandbox",
                  f"{_ci(st.hold_s_mean, st.hold_s_ci)} / {_f(st.holds_per_sandbox)}")]
    return rows


def _image_rows(im: ImageFigures) -> list[tuple[str, str]]:
    """The cache's hit rate, and what pre-pulling the top K would save on the same draws."""
    pre = f", {len(im.prepulled)} pre-pulled" if im.prepulled else ""
    rows = [(f"image cache: hit rate ({_f(im.distinct)} images, {_f(im.nodes)} nodes{pre})",
             f"{_pct(im.hit_rate)} of {_f(im.references)} builds"),
            ("image cache: build / miss hours", f"{_f(im.build_hours, 2)} / {_f(im.miss_hours, 2)}")]
    for w in im.prepull_whatif or []:
        rows.append((f"what if the top {w.prepull} were pre-pulled", f"hit rate {_pct(w.hit_rate)}, "
                     f"saves {_f(w.build_hours_saved, 2)} build-h"))
    return rows


def _inference_rows(i: InferenceFigures) -> list[tuple[str, str]]:
    wait, ttft = i.queue_wait_s or MeanP99(), i.ttft_s or P50P99()
    return [
        ("inference: replicas / GPUs / calls", f"{_f(i.replicas)} / {_f(i.gpus)} / {_f(i.calls)}"),
        ("inference: utilisation / mean batch", f"{_pct(i.utilisation)} / {_f(i.mean_batch)}"),
        ("inference: seat wait mean / TTFT p50 / p99 (s)",
         f"{_f(wait.mean, 2)} / {_f(ttft.p50, 2)} / {_f(ttft.p99, 2)}"),
        ("inference: cache hit rate / evicted GiB", f"{_pct(i.cache_hit_rate)} / {_f(i.evicted_gb)}"),
    ]


def render_calibration(s: Calibration, console: Console) -> None:
    """Print what ``simulate --from`` wrote (``calibrate.scenario_from_telemetry``'s figures)."""
    rate = "not recorded" if s.exception_rate is None else percent(s.exception_rate)
    console.print(f"wrote {s.scenario}: cap {number(s.peak, ',')} (measured peak, {number(s.touches, ',')} touches), "
                  f"{number(s.rollouts, ',')} rollouts, exception rate {rate}, "
                  f"mean concurrency {number(s.mean_concurrency, '.1f')}")
    if s.inference is not None:
        i: InferenceCalibration = s.inference
        console.print(f"--inference: {number(i.turn_tokens, '.1f')} tokens/turn, {number(i.decode_per_turn, '.1f')} "
                      f"decoded per turn, {number(i.command_s, '.2f')} s command per turn (assumed "
                      f"{number(i.reference_decode_tok_s, 'g')} tok/s per sequence), {number(i.replicas, '')} replicas")
    # markup=False: "[fleet]" is text here, not a Rich style tag (which would swallow it)
    console.print("next: edit [fleet] cap or the workload, then run:", markup=False)
    # a command to copy: on its own line, whole (soft_wrap: Rich never breaks it)
    console.print(f"sandbox-fleet simulate {s.scenario}", markup=False, highlight=False, soft_wrap=True)


def render_node_replay(n: NodeReplayFigures, console: Console) -> None:
    """``simulate --replay``: what the measured rollouts cost and waited on the node configuration, by pool."""
    t = grid(f"simulate --replay: {', '.join(n.telemetry or [])} on the {'plan' if n.configuration == 'plan' else 'given'}'s nodes",
             ("pool", "tier", "nodes min..max", "peak", "launched", "node-h", "$", "stranded cpu-h / GiB-h",
              "reclaims", "lost / reclaim", "re-run sandbox-h"), left=("pool", "tier"))
    for p in n.pools or []:
        t.add_row(p.name or "-", (p.tier or "-").replace("_", "-"),
                  f"{_f(p.min_nodes)}..{'unbounded' if p.max_nodes is None else _f(p.max_nodes)}", _f(p.peak_nodes),
                  _f(p.launched), _f(p.node_hours, 1), _usd(p.usd),
                  f"{_f(p.stranded_cpu_h, 1)} / {_f(p.stranded_memory_gb_h, 1)}", _f(p.reclaims),
                  _f(p.sandboxes_lost_per_reclaim, 1), _f(p.rerun_sandbox_h, 2))
    show(console, t)
    tiers = ", ".join(f"{k.replace('_', '-')} {_f(v.node_hours, 1)} node-h {_usd(v.usd)}" for k, v in (n.by_tier or {}).items())
    lines = [
        f"rollouts {_f(n.rollouts)}: placed {_f(n.placed)}, unplaced {_f(n.unplaced)}"
        + (f" ({_f(n.rollouts_assumed_request)} at an assumed request)" if n.rollouts_assumed_request else ""),
        f"cost: {_usd(n.usd)} over {_f(n.span_h, 2)} h = {_usd(n.usd_per_h)}/h; {_f(n.node_hours, 1)} node-h ({tiers})",
        f"waits caused by provisioning: {_f(n.waited)} rollouts, mean {_f(n.wait_s_mean, 1)} s, max {_f(n.wait_s_max, 1)} s",
        f"reclaims ({n.reclaim_model}): {_f(n.reclaims)}, {_f(n.sandboxes_lost)} sandboxes lost "
        f"({_f(n.sandboxes_lost_per_reclaim, 1)} per reclaim), re-run {_f(n.rerun_sandbox_h, 2)} sandbox-h "
        f"({_pct(n.rerun_share)} of the work)",
    ]
    if n.reclaim_trace is not None:
        given = (f" ({_f(n.reclaim_trace_timestamps)} as timestamps"
                 + (f", {_f(n.reclaim_trace_naive)} without a UTC offset read as UTC" if n.reclaim_trace_naive else "")
                 + ")" if n.reclaim_trace_timestamps else "")
        lines.append(f"reclaim trace {n.reclaim_trace}: {_f(n.reclaim_trace_rows)} rows{given}, "
                     f"{_f(n.reclaim_trace_missed)} found no node of their pool up")
    series = n.series
    if series is not None and series.stranded_cpu_h and series.t_h:
        cpu_h, t_h = series.stranded_cpu_h, series.t_h
        most = max(range(len(cpu_h)), key=lambda b: cpu_h[b])
        lines.append(f"stranded cpu over time: {len(cpu_h)} spans of {_f(series.span_h, 3)} h, "
                     f"most {_f(cpu_h[most], 1)} core-h at {_f(t_h[most], 2)} h")
    if n.cap is not None and n.cap.basis:
        lines.append(f"cap: {n.cap.basis}")
    if n.cap is not None and n.cap.demand_peak_nodes is not None:
        peaks = ", ".join(f"{k} {v:,}" for k, v in n.cap.demand_peak_nodes.items())
        lines.append(f"un-queued at the steps' releases: peak nodes {peaks}; {_usd(n.cap.demand_usd_per_h)}/h; "
                     f"{_f(n.cap.demand_waited)} waited, {_f(n.cap.demand_unplaced)} unplaced")
    lines.append(f"basis: {n.basis}")
    for line in lines:
        console.print(line, markup=False, highlight=False)


def _dynamic_rows(d) -> list[tuple[str, str]]:
    """Dynamic sampling: B, the measured share and over-sampling, what a step releases, the peak."""
    se = f" (+/- {_f(d.oversampling_factor_se, 2)})" if d.oversampling_factor_se is not None else ""
    release = d.release if d.round_groups is None else f"fixed rounds of {d.round_groups} groups"
    return [
        ("dynamic sampling: B x G / release", f"{d.groups} x {d.group_size} / {release}"),
        ("informative share / over-sampling", f"{_pct(d.informative_share)} / {_f(d.oversampling_factor, 2)}x{se}"),
        ("groups released / informative / trimmed",
         f"{_f(d.groups_released)} / {_f(d.groups_informative)} / {_f(d.groups_trimmed)}"),
        ("groups per step mean / max", f"{_f(d.groups_released_per_step_mean, 1)} / {d.groups_released_per_step_max}"),
        ("rounds per step mean / max", f"{_f(d.rounds_per_step_mean, 2)} / {d.rounds_per_step_max}"),
        ("rollouts per step mean / max", f"{_f(d.rollouts_per_step_mean, 1)} / {d.rollouts_per_step_max}"),
        ("first round / peak (sandboxes)", f"{d.first_round_rollouts} / {d.peak}"),
    ]
