"""The decision block: what to buy, for how much all in, what binds, what could go wrong and what
the order rests on, read from the plan model alone (the first lines of ``plan``'s text and the
first screen of the report). Risks come from ``check``'s gates, which the caller runs: plan does
not import report, so they arrive as lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from sandbox_fleet.plan.model import Cost, CostParts, NodePool, Nodes, PlanInference, PlanSummary
from sandbox_fleet.plan.render import _fixed, _money, _n, _per_h, _tier

#: Assumption sources that are not this fleet's own measurement: the order leans on them.
_NOT_MEASURED = ("default", "catalog", "published")


@dataclass(frozen=True)
class Decision:
    """The decision block's lines by part (each part is plain text, no leading indent)."""

    buy: list[str]
    cost: list[str]
    #: a binding cap's two prices: the cap and the demand it hid (empty when no cap binds)
    censored: list[str]
    binds: str
    rests_on: list[str]
    risks: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)


def buy_nodes_line(nd: Nodes) -> str:
    """The sandbox node line, in the words of the plan's Line 1."""
    return f"BUY {nd.count} x {nd.type} at peak (lower bound {_n(nd.lower_bound)})"


def buy_gpus_line(inf: PlanInference) -> Optional[str]:
    """The inference GPU line, in the words of the plan's Line 3; None when GPUs were not sized."""
    if inf.gpus is None:
        return None
    cached = (f"; {inf.gpus_cached} with caching ({inf.bound_by_cached}-bound, {inf.binding_cached} binds compute)"
              if inf.gpus_cached is not None else "")
    return f"BUY {inf.gpus} inference GPUs ({inf.bound_by}-bound, {inf.binding} binds compute){cached}"


def _buy_pool_line(pl: NodePool) -> str:
    return f"BUY {pl.count} x {pl.type} for the GPU requests ({_n(pl.concurrent, ',')} sandboxes)"


def _censored_lines(plan: PlanSummary) -> list[str]:
    """The cap and the demand it hid ("buy the cap: ..." / "buy the demand: ..."), in the words of
    ``render.censored_lines``, when the target touched a cap that binds (``target.censored``); else []."""
    from sandbox_fleet.plan.render import censored_lines

    t = plan.target
    if t.censored is None:
        return []
    return [x.strip() for x in censored_lines(t.censored, t.tolerance)]


def buy_mixed_line(p: PlanSummary) -> Optional[str]:
    """The mixed purchase's BUY line (reserved base, burst for the rest), in the words of Line 4; None without one."""
    from sandbox_fleet.plan.render import mixed_lines

    found = mixed_lines(p.cost or Cost(), p.nodes.type)
    return "or " + found[0].strip() if found else None


def mixed_is_the_order(co: Cost) -> bool:
    """Whether the order signed is the mixed purchase: the cheapest by replay (``cost.tier_choice.order``)."""
    tc, mx = co.tier_choice, co.mixed
    return (tc is not None and (tc.order or "").startswith("mixed") and mx is not None
            and mx.usd_per_h is not None)


def _buy(p: PlanSummary) -> list[str]:
    inf = p.inference or PlanInference()
    mixed = buy_mixed_line(p)
    co = p.cost or Cost()
    if mixed and mixed_is_the_order(co):  # the mixed purchase first, the single tier as the alternative
        first = [mixed[len("or "):], f"or {buy_nodes_line(p.nodes)}, all {_tier(co.tier)}"]
    else:
        first = [buy_nodes_line(p.nodes), *([mixed] if mixed else [])]
    lines = [*first, *(_buy_pool_line(pl) for pl in p.node_pools or [])]
    gpus = buy_gpus_line(inf)
    if gpus is not None:
        lines.append(gpus)
    elif inf.prefill_tok_s is not None:
        lines.append("inference GPUs: not sized (no per-GPU throughput: --gpu with --model-params-b, or --gpu-prefill-tok-s)")
    return lines


def all_in_per_h(co: Cost) -> tuple[Optional[float], list[str]]:
    """$/h for everything bought at the headline tier (fleet, GPU pools, inference GPUs, trainer)
    and its parts as text; None when the fleet has no price. The trainer's $/h is its cost per
    pass times passes per hour (the plan carries it only that way)."""
    fleet = _per_h(co, co.tier)
    label = f"fleet {_tier(co.tier)}"
    if mixed_is_the_order(co):
        assert co.mixed is not None  # mixed_is_the_order checked it
        fleet, label = co.mixed.usd_per_h, f"fleet {order_words(co)}"
    if fleet is None:
        return None, []
    parts = [(label, fleet), ("GPU node pools", co.node_pools_per_h), ("inference GPUs", co.inference_per_h)]
    pp = co.per_passing_trajectory_parts or CostParts()
    if pp.trainer is not None and co.passing_per_h:
        parts.append(("trainer", pp.trainer * co.passing_per_h))
    known = [(k, v) for k, v in parts if v is not None]
    return sum(v for _, v in known), [f"{k} {_money(v)}" for k, v in known]


def order_words(co: Cost) -> str:
    """The tier the order is on, in words: the single tier, or "reserved + <burst tier> burst"."""
    if not mixed_is_the_order(co):
        return _tier(co.tier)
    assert co.mixed is not None  # mixed_is_the_order checked it
    r = co.mixed.reserved_nodes or 0
    return f"{r:,} reserved + {_tier(co.tier)} burst" if r else f"{_tier(co.tier)} burst only (autoscaled)"


def _cost(p: PlanSummary) -> list[str]:
    co = p.cost or Cost()
    total, parts = all_in_per_h(co)
    if total is None:
        return [f"cost: not costed ({p.nodes.type} has no prices in the node catalog)"]
    month = f"{_money(total * 24 * 30)} per 30 days"
    if len(parts) == 1:
        lines = [f"{_money(total)}/h on {order_words(co)}, {month}: the fleet only (no inference GPUs or trainer priced)"]
    else:
        lines = [f"{_money(total)}/h all in on {order_words(co)} ({' + '.join(parts)}), {month}"]
    per_pass = co.per_passing_trajectory_all_in
    if per_pass is None and co.tier == "spot" and co.spot_rework is not None and co.spot_rework.unbounded:
        lines.append("$ per passing trajectory: not costed (spot re-runs unbounded at this reclaim rate: "
                     "price another tier with --price-tier)")
    elif per_pass is None and p.measured is not None and p.measured.pass_rate == 0:
        lines.append("$ per passing trajectory: not costed (no rollout passed the pass threshold; with "
                     "fractional rewards, measure suggests one: --pass-threshold)")
    elif per_pass is None:
        lines.append("$ per passing trajectory: not costed (no pass rate or duty measured)")
    elif len(parts) == 1:
        lines.append(f"{_money(per_pass)} per passing trajectory, the fleet only")
    else:
        lines.append(f"{_money(per_pass)} per passing trajectory all in ({_n(co.passing_per_h, ',.1f')} passes/h)")
    return lines


def _binds(p: PlanSummary) -> str:
    nd = p.nodes
    slots = nd.slots_per_node or {}  # keyed by resource
    others = ", ".join(f"{r} {v}" for r, v in slots.items() if v is not None and r != nd.binding)
    return f"binds: {nd.binding}, {nd.per_node} sandboxes per node" + (f" ({others} by the others)" if others else "")


def _rests_on(p: PlanSummary) -> list[str]:
    t, m = p.target, p.measured
    lines = [f"target: {t.detail or t.source}"]
    if t.tier_basis:
        lines.append(f"pricing tier: {t.tier_basis}")
    if m is not None and m.duty is not None and m.sandbox_hours_per_pass is not None:
        lines.append(f"measured: duty {m.duty:.1%}, {_fixed(m.sandbox_hours_per_pass, 2)} sandbox-hours per passing trajectory")
    by_source: dict[str, list[str]] = {}
    for a in p.assumptions or []:
        if a.source in _NOT_MEASURED:
            by_source.setdefault(a.source, []).append(a.name)
    lines += [f"{src} figures: {', '.join(names)}" for src, names in by_source.items()]
    return lines


def _arrow(old, new, fmt: str) -> str:
    return f"{_n(old, fmt)} -> {_n(new, fmt)}"


def changes(old: PlanSummary, new: PlanSummary) -> list[str]:
    """What moved since ``old``: the nodes, GPUs and $/h bought, then the figures that moved them."""
    out = []
    if (old.nodes.count, old.nodes.type) != (new.nodes.count, new.nodes.type):
        out.append(f"nodes: {old.nodes.count} x {old.nodes.type} -> {new.nodes.count} x {new.nodes.type}")
    g_old, g_new = (old.inference or PlanInference()).gpus, (new.inference or PlanInference()).gpus
    if g_old != g_new:
        out.append(f"inference GPUs: {_n(g_old, ',', 'not sized')} -> {_n(g_new, ',', 'not sized')}")
    c_old, c_new = all_in_per_h(old.cost or Cost())[0], all_in_per_h(new.cost or Cost())[0]
    if c_old != c_new:
        out.append(f"$/h all in: {_money(c_old)} -> {_money(c_new)}")
    moved = _moved_figures(old, new)
    if out and moved:
        out.append("moved by: " + "; ".join(moved))
    elif moved:
        out.append("the order is unchanged; figures that moved: " + "; ".join(moved))
    return out or ["nothing: the same nodes, GPUs and $/h on the same figures"]


def _moved_figures(old: PlanSummary, new: PlanSummary) -> list[str]:
    mo, mn = old.measured, new.measured
    pairs = [
        ("target concurrency", old.target.concurrency, new.target.concurrency, ","),
        ("measured peak", mo.peak if mo else None, mn.peak if mn else None, ",.0f"),
        ("duty", mo.duty if mo else None, mn.duty if mn else None, ".1%"),
        ("sandbox-hours per pass", mo.sandbox_hours_per_pass if mo else None, mn.sandbox_hours_per_pass if mn else None, ",.2f"),
        ("sandboxes per node", old.nodes.per_node, new.nodes.per_node, ","),
    ]
    out = [f"{name} {_arrow(a, b, fmt)}" for name, a, b, fmt in pairs if _n(a, fmt) != _n(b, fmt)]
    if old.nodes.binding != new.nodes.binding:
        out.append(f"binding {old.nodes.binding} -> {new.nodes.binding}")
    to, tn = (old.cost or Cost()).tier, (new.cost or Cost()).tier
    if to != tn:
        out.append(f"tier {_tier(to)} -> {_tier(tn)}")
    return out


def decide(plan: PlanSummary, previous: Optional[PlanSummary] = None, risks: Optional[list[str]] = None) -> Decision:
    """The decision block of ``plan``; ``previous``: an earlier plan to say what changed since;
    ``risks``: the failing ``check`` gates as lines (None: check was not run)."""
    return Decision(buy=_buy(plan), cost=_cost(plan), censored=_censored_lines(plan), binds=_binds(plan),
                    rests_on=_rests_on(plan),
                    risks=list(risks or []), changed=changes(previous, plan) if previous is not None else [])


def decision_lines(plan: PlanSummary, previous: Optional[PlanSummary] = None, risks: Optional[list[str]] = None,
                   previous_name: str = "the previous plan") -> list[str]:
    """The decision block as the plan text's first indented lines (after its title line)."""
    d = decide(plan, previous, risks)
    lines: list[str] = []
    if plan.target.censored is not None:  # the cap and the demand it hid lead, indented as plan prints them
        from sandbox_fleet.plan.render import censored_lines

        lines += censored_lines(plan.target.censored, plan.target.tolerance)
    lines += [*(f"  {x}" for x in d.buy), *(f"  {x}" for x in d.cost), f"  {d.binds}"]
    if risks is not None:
        lines.append("  top risks (failing check gates):" if d.risks else "  top risks: no check gate fails")
        lines += [f"    - {x}" for x in d.risks]
    lines.append("  rests on:")
    lines += [f"    - {x}" for x in d.rests_on]
    if previous is not None:
        lines.append(f"  changed since {previous_name}:")
        lines += [f"    - {x}" for x in d.changed]
    return lines


def money(usd: Optional[float]) -> str:
    """A dollar figure as the decision block writes it (the report's headline cards use it too)."""
    return _money(usd)
