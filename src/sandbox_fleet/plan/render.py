"""The terminal summary of a plan (read through its model), laid out like a purchase order. Rounding happens only here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from sandbox_fleet.numfmt import money, with_unit
from sandbox_fleet.plan.censored import times
from sandbox_fleet.plan.model import (
    Caching,
    Censored,
    Context,
    Cost,
    CostParts,
    Measured,
    Mixed,
    NodeReserve,
    PerGpu,
    PlanInference,
    PlanSummary,
    Request,
    Resources,
    Storage,
)
from sandbox_fleet.plan.provider_limits import limit_lines
from sandbox_fleet.textout import number, wrap_lines

if TYPE_CHECKING:  # Rich only when printing through it (the CLI prints plain lines itself)
    from rich.console import Console

_TIER_LABEL = {"reserved": "reserved", "on_demand": "on-demand", "spot": "spot"}


def _n(v: Optional[float], fmt: str = ",.0f", none: str = "n/a") -> str:
    return number(v, fmt, none=none)


def _gib(mb: Optional[float]) -> Optional[float]:
    return None if mb is None else mb / 1024


def _tier(tier: Optional[str]) -> str:
    return _TIER_LABEL.get(tier or "", "n/a")


def _money(v: Optional[float]) -> str:
    return money(v)


def _fixed(v: Optional[float], places: int) -> str:
    """``places`` decimals, but significant digits for small values so they do not print as 0."""
    return number(v, f",.{places}f", none="n/a", small=".2g", below=10 ** (1 - places))


def _pick(keys: list[str], preferred: tuple[int, ...], most: int = 8) -> list[str]:
    """Turn-keyed figures to print: the document's turn counts when present, else an even spread."""
    chosen = [k for k in keys if int(k) in preferred]
    if len(chosen) >= min(3, len(keys)):
        return chosen
    if len(keys) <= most:
        return keys
    step = (len(keys) - 1) / (most - 1)
    return [keys[round(i * step)] for i in range(most)]


def _per_h(priced, tier: Optional[str]) -> Optional[float]:
    """The hourly price of ``priced`` (a node type, pool or the fleet's cost) at ``tier``."""
    return {"reserved": priced.reserved_per_h, "on_demand": priced.on_demand_per_h, "spot": priced.spot_per_h}.get(tier or "")


def plan_lines(p: PlanSummary, *, previous: PlanSummary | None = None,
               risks: Optional[list[str]] = None, width: Optional[int] = None,
               previous_name: str = "the previous plan") -> list[str]:
    """The summary as plain lines (so tests and the README can read exactly what users see).

    The first lines are the decision block (plan/decision.py): ``previous`` (an earlier plan) adds what
    changed since, ``risks`` the failing ``check`` gates. ``width``: fold long lines to it with a
    hanging indent (commands to copy stay whole); None leaves every line whole.
    """
    from sandbox_fleet.plan.decision import buy_gpus_line, buy_nodes_line, decision_lines

    t, nd = p.target, p.nodes
    m, st, ctx = p.measured or Measured(), p.storage or Storage(), p.context or Context()
    ca, inf, co = p.caching or Caching(), p.inference or PlanInference(), p.cost or Cost()
    L: list[str] = []
    L.append(f"PURCHASE ORDER: sandbox fleet for {t.concurrency:,} concurrent sandboxes ({t.source})")
    L.extend(decision_lines(p, previous, risks, previous_name))  # the censored cap/demand lines among them
    if t.hold_fit is not None and t.hold_fit.basis:
        L.append(f"  hold fit: {t.hold_fit.basis}")
    if t.shape_basis:
        L.append(f"  shape: {t.shape_basis}")
    alt = t.shape_alternative
    if alt is not None:
        L.append(f"  the {alt.shape} shape would buy {_n(alt.concurrency, ',')} ({_n(alt.ratio, '.1f')}x apart): "
                 + ("continuous admission (async RL) needs only the queueing headroom" if alt.shape == "smooth"
                    else "keeping the measured burstiness needs the measured peak-to-mean") + f"; pass --shape {alt.shape} to buy it")
    if p.backtest is not None:
        L.append(f"  {p.backtest.line} (backtest {p.backtest.path})")
    L.append("")
    L.append("Measured (carried over from the input)")
    peak = f", peak {m.peak:,.0f}" if m.peak is not None else ""
    duty = f", duty {m.duty:.1%}" if m.duty is not None else ""
    L.append(f"  mean concurrency {_n(m.concurrency_mean, ',.1f')}{peak}{duty}")
    if m.pass_rate is not None:
        L.append(f"  pass rate {m.pass_rate:.1%}, {_fixed(m.sandbox_hours_per_pass, 2)} sandbox-hours per passing trajectory")
    span = f" over {_fixed(m.span_days, 1)} days" if m.span_days is not None else ""
    L.append(f"  {_fixed(m.sandbox_hours, 0)} sandbox-hours{span}")
    L.append("")
    L.append("Line 1: sandbox nodes")
    s = nd.slots_per_node or {}  # keyed by resource
    slot_txt = " / ".join(f"{r} {s[r]}" for r in ("cpu", "memory", "disk", "gpu") if s.get(r) is not None)
    q = nd.request or Request()
    L.append(f"  {'largest share of sandboxes' if nd.mix else 'request per sandbox'}: {_n(q.cpu, 'g')} cpu / {_n(q.memory)} MB / {_n(q.disk)} MB disk" + (f" / {q.gpu:g} gpu" if q.gpu else ""))
    rv = nd.reserve or NodeReserve()
    if any((rv.cpu, rv.memory_mb, rv.disk_mb)):
        L.append(f"  system reserve per node ({rv.source}): {_n(rv.cpu, 'g')} cpu / {_n(rv.memory_mb)} MB / {_n(rv.disk_mb)} MB disk")
    L.append(f"  slots per node{' (that request alone)' if nd.mix else ''}: {slot_txt}; binding: {nd.binding} ({nd.per_node} per node)")
    if nd.mix:
        L.append(f"  mixed requests packed first-fit-decreasing: {len(nd.mix)} kinds, weighted by {nd.mix_basis or 'n/a'}")
        for x in nd.mix:
            L.append(f"    {_n(x.concurrent, '>7,')} x {_n(x.cpu, 'g')} cpu / {_n(x.memory)} MB / {_n(x.disk)} MB" + (f" / {x.gpu:g} gpu" if x.gpu else ""))
    L.append(f"  {buy_nodes_line(nd)}")
    sd = nd.stranded or Resources()
    L.append(f"  stranded across the fleet: {_n(sd.cpu, ',.1f')} cpu, {_n(_gib(sd.memory_mb))} GiB memory, {_n(_gib(sd.disk_mb))} GiB disk")
    if nd.alternatives:
        L.append("  runners-up:")
        tier = co.tier
        for a in nd.alternatives[:5]:
            price = _per_h(a, tier)
            L.append(f"    {_n(a.count, '>5')} x {a.type:<28} {'not priced' if price is None else f'${price:,.2f}/h {_tier(tier)}'}")
    for small in nd.too_small or []:
        L.append(f"  skipped {small.type}: too small")
    for pl in p.node_pools or []:
        q = pl.request or Request()
        price = _per_h(pl, co.tier)
        L.append(f"  GPU pool: {_n(pl.concurrent, ',')} x {_n(q.cpu, 'g')} cpu / {_n(q.memory)} MB / {_n(q.gpu, 'g')} gpu" + (" (mixed)" if pl.mix else "")
                 + f": BUY {pl.count} x {pl.type} ({pl.binding} binds, {pl.per_node} per node)"
                 + (f", {_money(price)}/h {_tier(co.tier)}" if price is not None else ""))
    for u in nd.unplaced or []:
        hs = f", {u.sandbox_hours_share:.2%} of sandbox-hours" if u.sandbox_hours_share is not None else ""
        L.append(f"  UNPLACED: {_n(u.cpu, 'g')} cpu / {_n(u.memory)} MB / {_n(u.gpu, 'g')} gpu ({_n(u.rollouts_share, '.2%')} of rollouts{hs}): no node type holds it")
    L.append("")
    L.append("Line 2: storage")
    L.append(f"  scratch {_n(st.scratch_gb)} GiB bought ({_n(st.per_node_gb)} GiB per node; {_n(st.scratch_at_target_gb)} GiB in use at target)")
    L.append(f"  left per node for the image/layer cache: {_n(st.cache_gb_per_node)} GiB")
    if st.trajectory_gb_per_day is not None:
        L.append(f"  trajectory records: {st.trajectory_gb_per_day:,.0f} GB/day")
    elif st.trajectory_gb_per_day_upper is None and st.rollouts_per_day:
        L.append(f"  trajectory records: not estimated (no median record size measured; {st.rollouts_per_day:,.0f} rollouts/day)")
    elif st.trajectory_gb_per_day_upper is not None:
        L.append(f"  trajectory records: at most {st.trajectory_gb_per_day_upper:,.0f} GB/day (largest record x {_n(st.rollouts_per_day)} rollouts/day)")
    if st.bundle_store_gb is not None:
        L.append(f"  task bundles: {st.bundle_store_gb:,.1f} GB ({st.bundle_store_basis})")
    L.append("")
    L.append("Line 3: inference")
    if inf.prefill_tok_s is not None:
        L.append(f"  per sandbox-second: prefill {_fixed(m.prefill_per_sandbox_s, 1)} tok, decode {_fixed(m.decode_per_sandbox_s, 2)} tok")
        L.append(f"  at {t.concurrency:,}: prefill {inf.prefill_tok_s:,.0f} tok/s, decode {_n(inf.decode_tok_s)} tok/s")
    if ca.cached_fraction_measured:
        L.append(f"  measured cache hits {ca.cached_fraction_measured:.1%}: prefill computed {_n(inf.prefill_tok_s_computed)} tok/s")
    if inf.prefill_tok_s_cached is not None:
        L.append(f"  with prefix caching (x{_n(ca.saving_applied, '.1f')}, {ca.saving_basis}): prefill {inf.prefill_tok_s_cached:,.0f} tok/s")
    mem = inf.memory
    if mem is not None:
        gpu = f"{inf.gpu}, " if inf.gpu else ""
        L.append(f"  memory ({gpu}GiB): weights {_n(mem.weights_gb, ',.1f')}; KV in flight {_n(mem.kv_gb_inflight, ',.1f')} per replica of {_n(inf.replica_gpus)} GPU(s); free {_n(mem.free_gb_per_gpu, ',.1f')} per GPU")
        off = f" less {inf.kv_offload_gb:g} GiB host offload per GPU" if inf.kv_offload_gb else ""
        L.append(f"  with caching every live rollout keeps its prefix: {_n(mem.kv_gb_live, ',.1f')} GiB KV{off} -> {_n(mem.gpus_memory_bound_cached)} GPUs by memory (replicas of {_n(inf.replica_gpus_cached)})")
    if inf.gpus is not None:
        pg = inf.per_gpu or PerGpu()
        L.append(f"  per GPU: prefill {_n(pg.prefill_tok_s)} tok/s, decode {_n(pg.decode_tok_s)} tok/s ({pg.source}); run at {_n(inf.utilisation_target, '.0%')}")
        L.append(f"  by compute {_n(inf.gpus_compute_bound)}, by memory {_n(mem.gpus_memory_bound) if mem else 'n/a'}; with caching {_n(inf.gpus_compute_bound_cached)} and {_n(mem.gpus_memory_bound_cached) if mem else 'n/a'}")
        L.append(f"  {buy_gpus_line(inf)}")
    if inf.context_basis and inf.context_basis.startswith("measured") and inf.context_tokens_mean is not None:
        L.append(f"  mean context per turn {inf.context_tokens_mean:,.0f} tokens (mean {_n(ctx.turns_mean, ',.2f')} turns; "
                 f"{inf.context_basis}): sizes live KV and the roofline")
    elif ctx.turn_tokens and inf.context_tokens_mean is not None and ctx.turns_basis:
        L.append(f"  mean context per turn {inf.context_tokens_mean:,.0f} tokens (c = {_n(ctx.turn_tokens, 'g')} tok/turn, "
                 f"mean {_n(ctx.turns_mean, ',.2f')} turns, {ctx.turns_basis}): sizes live KV and the roofline")
    if ctx.model_error_by_turns:
        me = ctx.model_error_by_turns  # keyed by turn count
        errs = ", ".join(f"{float(me[k]):+.1%} at {k}" for k in _pick(list(me), (2, 5, 11, 20, 50)))
        L.append(f"  quadratic-model error (c = {_n(ctx.turn_tokens, 'g')} tok/turn): {errs}")
    sav = ca.saving_by_turns or {}  # keyed by turn count
    keys = _pick(list(sav), (1, 5, 11, 21, 50))
    L.append(f"  caching saving: {', '.join(f'{sav[k]:.1f}' for k in keys)} at {'/'.join(keys)} turns")
    if ca.saving_measured_mix is not None:
        L.append(f"  caching saving over the measured turn mix: x{ca.saving_measured_mix:.2f}")
    if ca.prefix_break:
        L.append(f"  with {ca.prefix_break:.0%} of turns breaking the prefix: " + ", ".join(f"{v:.1f}" for v in (ca.saving_by_turns_with_breaks or {}).values()))
    L.append("")
    L.append(f"Line 4: cost (USD; headline tier {_tier(co.tier)})")
    if not co.priced:
        L.append(f"  {nd.type} has no prices: sized but not costed")
    else:
        for tier in ("reserved", "on_demand", "spot"):
            v = _per_h(co, tier)
            if v is not None:
                L.append(f"  {_TIER_LABEL[tier]:<10} {_money(v)}/h for the fleet at peak, {_money(v * 24 * 30)} per 30 days")
        if co.duty is not None:
            which = "simulated" if t.source == "rl-schedule" or t.shape == "smooth" else "measured"
            L.append(f"  at the {which} duty ({co.duty:.1%}) each busy sandbox-hour costs {_money(co.per_busy_sandbox_hour)}")
        basis = f" ({co.per_pass_basis})" if co.per_pass_basis else ""
        L.append(f"  per passing trajectory: {_money(co.per_passing_trajectory)}{basis}")
        if co.exception_waste_per_h is not None:
            L.append(f"  spent on exception rollouts: {_money(co.exception_waste_per_h)}/h ({_n(co.exception_share, '.1%')})")
    L.extend(mixed_lines(co, nd.type))
    rw = co.spot_rework
    if rw is not None and co.priced and rw.rework_per_h is not None:
        L.append(
            f"  spot re-runs: {_n(rw.interruptions_per_node_h, '.2g')} reclaims per node-h re-run {_n(rw.rework_share, '.3%')} of sandbox-hours "
            f"({_n(rw.rework_sandbox_hours_per_h, ',.2f')} sandbox-h/h): spot {_money(rw.spot_per_h_with_rework)}/h with re-runs; "
            f"{_fixed(rw.mean_interruptions_per_hold, 3)} reclaims per hold (E[e^(r h) - 1]); {rw.basis}"
        )
    elif rw is not None and co.priced and rw.unbounded and rw.basis:
        L.append(f"  spot re-runs: {rw.basis}")
    if co.inference_per_h is not None:
        L.append(f"  inference: {_money(co.inference_per_h)}/h, {_money(co.inference_per_h_cached)}/h with caching")
    pp = co.per_passing_trajectory_parts or CostParts()
    parts = (("fleet", pp.fleet), ("inference", pp.inference), ("trainer", pp.trainer))
    if co.per_passing_trajectory_all_in is not None and any(v is not None for k, v in parts if k != "fleet"):
        txt = ", ".join(f"{k} {_money(v)}" for k, v in parts if v is not None)
        L.append(f"  per passing trajectory, all in: {_money(co.per_passing_trajectory_all_in)} ({txt}; {_n(co.passing_per_h, ',.1f')} passes/h)")
    rent = co.rent or {}  # keyed by provider name
    if rent:
        L.append("  rent instead (busy sandbox-hours at the target, illustrative list prices):")
        for name, r in rent.items():
            limits = "within limits" if r.within_limits else "LIMITS: " + "; ".join(r.limits_hit or [])
            if r.within_limits and r.ramp_s:
                share = f", up to {r.ramp_step_share:.2%} of the step" if r.ramp_step_share is not None else ""
                if r.ramp_expected_s is not None and r.ramp_expected_step_share is not None:
                    share = (f": expected +{r.ramp_expected_s:,.1f} s ({r.ramp_expected_step_share:.2%} of the step)"
                             + share.replace(", up to", ", at most"))
                limits += f"; a step's batch ramps over {r.ramp_s:,.1f} s{share}"
            if r.overhead_s_per_rollout is not None:
                limits += f"; +{r.overhead_s_per_rollout:,.3g} s a hold on its substrate"
            L.append(f"    {name:<10} {_money(r.usd_per_h)}/h, {_money(r.usd_per_pass)} per pass ({limits})")
        L.append(f"  verdict: {co.rent_verdict}")
    L.extend(substrate_lines(p))
    L.extend(limit_lines(p))
    L.extend(signal_lines(p))
    if p.assumptions:
        L.append("")
        L.append("Assumptions (source: default, measured, published, flag, catalog)")
        for asm in p.assumptions:
            shown, unit = with_unit(asm.value, asm.unit, none="None")
            L.append(f"  {asm.name:<30} {' '.join(x for x in (shown, unit) if x)} [{asm.source}]" + (f" - {asm.detail}" if asm.detail else ""))
    if p.notes:
        L.append("")
        L.append("Notes")
        L.extend(f"  - {x}" for x in p.notes)
    return wrap_lines(L, width)


def signal_lines(p: PlanSummary) -> list[str]:
    """The ``signal`` block (plan/signal.py): informative groups, dynamic sampling's release, cost per informative group."""
    sg = p.signal
    if sg is None or sg.informative_share is None:
        return []
    b = f", B = {sg.groups_per_batch:,} informative groups a step ({sg.groups_per_batch_basis})" if sg.groups_per_batch else ""
    L = ["", f"Signal (group-based RL: groups of {sg.group_size} ({sg.group_size_basis}){b})"]
    measured = f" ({_n(sg.informative_share_measured, '.1%')} measured)" if sg.informative_share_measured is not None else ""
    L.append(f"  informative groups: {_n(sg.informative_share, '.1%')} expected{measured}; all fail "
             f"{_n(sg.all_fail_share, '.1%')}, all pass {_n(sg.all_pass_share, '.1%')}, too few valid "
             f"{_n(sg.too_few_valid_share, '.1%')}")
    if sg.groups_released is not None:
        L.append(f"  dynamic sampling releases {sg.groups_released:,} groups ({_n(sg.release_rollouts, ',')} rollouts at once, "
                 f"{_fixed(sg.oversampling_factor, 2)}x; mean {_fixed(sg.oversampling_factor_mean, 2)}x) to hold "
                 f"{sg.groups_per_batch:,} informative with {_n(sg.confidence, '.0%')} confidence, against "
                 f"{_n(sg.release_rollouts_without, ',')} rollouts without over-sampling")
        L.append(f"  that release needs {_n(sg.nodes_release, ',')} x {sg.node_type} ({_money(sg.usd_per_h_release)}/h) "
                 f"against {_n(sg.nodes_without, ',')} ({_money(sg.usd_per_h_without)}/h) for the batch alone")
    L.append(f"  per informative group: {_fixed(sg.sandbox_hours_per_informative_group, 2)} sandbox-hours, "
             f"{_money(sg.usd_per_informative_group)}; per pass: {_fixed(sg.sandbox_hours_per_pass, 2)} sandbox-hours, "
             f"{_money(sg.usd_per_pass)}")
    if sg.bias:
        L.append(f"  bias: {sg.bias}")
    return L


def substrate_lines(p: PlanSummary) -> list[str]:
    """Worker-hours per execution substrate side by side (nothing when the plan has none)."""
    sb = p.substrates
    if sb is None or not sb.by_substrate:
        return []
    L = ["", "Substrates: worker-hours their overhead adds (ILLUSTRATIVE figures, data/substrates.toml)",
         f"  {sb.basis}",
         f"  {'substrate':<16} {'cold s':>7} {'per turn s':>10} {'+s/rollout':>10} {'+h per 1M':>10} "
         f"{'h per 1M':>10} {'+h per h':>9}"]
    for name, s in sb.by_substrate.items():
        L.append(f"  {name:<16} {_n(s.cold_start_s, '>7,.3g')} {_n(s.per_action_s, '>10,.3g')} "
                 f"{_n(s.overhead_s_per_rollout, '>10,.3g')} {_n(s.added_worker_hours_per_million, '>10,.0f')} "
                 f"{_n(s.worker_hours_per_million, '>10,.0f')} {_n(s.added_worker_hours_per_h, '>9,.3g')}")
    return L


def mixed_lines(co: Cost, node_type: str) -> list[str]:
    """The mixed purchase's BUY line and its basis (nothing when the plan has none)."""
    mx = co.mixed
    if mx is None or mx.usd_per_h is None:
        return []
    singles = [(_per_h(co, t), _TIER_LABEL[t]) for t in ("reserved", "on_demand", "spot") if _per_h(co, t) is not None]
    vs = ", ".join(f"{_money(v)}/h all {label}" for v, label in singles)
    return [
        f"  BUY mixed: {mx.reserved_nodes:,} x {node_type} reserved + up to {mx.burst_nodes:,} x {node_type} "
        f"{_tier(mx.burst_tier)} as the load needs them: {_money(mx.usd_per_h)}/h ({_waits(mx)}vs {vs} at peak)",
        f"    ({mx.basis})",
        *replay_lines(mx),
    ]


def _waits(mx: Mixed) -> str:
    """The time the burst's provisioning waits cost (plan/order_wait.py), as the BUY line states it."""
    w = mx.replay.wait if mx.replay is not None else None
    if w is None or not w.slowdown:
        return ""
    return f"waits: {'mean step' if w.method == 'steps' else 'mean rollout'} +{w.slowdown or 0.0:.1%}; "


def replay_lines(mx: Mixed) -> list[str]:
    """The node replay behind the mixed purchase (nothing without one)."""
    rp = mx.replay
    if rp is None:
        return []
    return [f"    node replay: {_n(rp.peak_nodes, ',')} nodes at the real mix's peaks; burst {_n(rp.burst_node_hours, ',.1f')} "
            f"node-h over {_n(rp.span_h, ',.1f')} h, {_n(rp.burst_launches, ',')} launches, {_n(rp.waited, ',')} rollouts "
            f"waited for a node ({_n(rp.wait_s_total, ',.0f')} s in all); stranded cpu {_n(rp.stranded_cpu_share, '.0%')}; "
            f"lower bound (slot curve): {_money(rp.slot_curve_usd_per_h)}/h",
            f"    ({rp.basis})"]


def censored_lines(c: Censored, tolerance: Optional[float]) -> list[str]:
    """The cap and the demand it hid, both priced, the chosen one marked (they lead the order)."""
    mark = {c.chosen: "  <- chosen"}
    if c.demand_below_cap:
        hid = f"a loose one: the demand {_n(c.demand, ',')} is below it"
    elif c.demand_is_lower_bound and c.demand == c.cap:
        hid = "it may have hidden demand"
    else:
        hid = "it hid demand"
    head = f"  the measured peak {_n(c.cap, ',')} is a cap (reached {times(c.touches or 0)}): {hid}"
    if c.demand_is_lower_bound:
        return [head,
                f"    buy the cap:    {_n(c.cap, ',')} slots{mark.get('cap', '')}",
                f"    the demand:     at least {_n(c.demand, ',')} (lower bound), not estimated",
                f"    basis: {c.basis}"]
    def over(v: Optional[float]) -> str:
        return f"{v / c.step_s_uncapped - 1:+.1%}" if v is not None and c.step_s_uncapped else "n/a"
    if c.step_s_at_cap is None:  # a release too large to search: sized by the release itself
        return [head,
                f"    buy the cap:    {_n(c.cap, ',')} slots{mark.get('cap', '')}",
                f"    buy the demand: {_n(c.demand, ',')} slots (the release itself; step times not simulated){mark.get('demand', '')}",
                f"    basis: {c.basis}"]
    tol = f"{tolerance:.1%}" if tolerance is not None else "the tolerance"

    def bought(nodes: Optional[int], usd_h: Optional[float], reserved: Optional[int], burst: Optional[int]) -> str:
        if reserved is not None and burst is not None:  # priced as the mixed order signed (plan/censored_order.py)
            return f", {_money(usd_h)}/h on {reserved:,} reserved + up to {burst:,} burst"  # $ first: a short line keeps it
        return f", {_n(nodes, ',')} nodes, {_money(usd_h)}/h" if nodes is not None else ""
    basis = [f"    basis: {c.basis}"] + ([f"    lines priced: {c.lines_basis}"]
                                           if c.lines_basis is not None and c.reserved_at_cap is not None else [])
    return [head,
            f"    buy the cap:    {_n(c.cap, ',')} slots{bought(c.nodes_at_cap, c.usd_per_h_at_cap, c.reserved_at_cap, c.burst_at_cap)}: "
            f"mean step {_n(c.step_s_at_cap, ',.0f')} s "
            f"({over(c.step_s_at_cap)} over the uncapped {_n(c.step_s_uncapped, ',.0f')} s){mark.get('cap', '')}",
            f"    buy the demand: {_n(c.demand, ',')} slots{bought(c.nodes_at_demand, c.usd_per_h_at_demand, c.reserved_at_demand, c.burst_at_demand)}: "
            f"mean step {_n(c.step_s_at_demand, ',.0f')} s "
            f"({over(c.step_s_at_demand)}; the fewest slots within {tol} for releases of {_n(c.release, ',')}){mark.get('demand', '')}",
            *basis]


def render_plan(plan: PlanSummary, console: Console) -> None:
    """Print the decision (``render_short``: one screen, BUY lines bold) at the console's width (no
    markup interpretation: names may hold brackets); ``plan_lines`` is the whole order."""
    from sandbox_fleet.plan.render_short import buy_marks, short_lines

    lines = short_lines(plan, width=console.width)
    for line, bold in zip(lines, buy_marks(lines)):
        console.print(line, markup=False, highlight=False, soft_wrap=True, style="bold" if bold else None)
