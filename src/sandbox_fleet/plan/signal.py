"""Plan for signal: the informative groups a group-based RL step needs, what dynamic sampling
over-samples to get them, the release that puts on the fleet, and the cost per informative group.

For a step that trains on B groups of G rollouts, the expected informative share s is the binomial
expression over the measured per-task posteriors (``measure.signal_math``). Dynamic sampling (DAPO)
discards groups without signal and samples more: releasing N groups at once holds B informative
ones with probability ``confidence`` when P(Binomial(N, s) >= B) >= confidence (groups drawn from
tasks at random, independently). The release is then N x G rollouts at once instead of B x G, and a
synchronous step is bound by its release (the document's sizing step 2): the nodes that hold it at
once are the fleet it buys. One informative group costs G x mean hold / s sandbox-hours.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

from sandbox_fleet.measure.model import MeasureSummary, RlGroups
from sandbox_fleet.plan.model import Signal

#: The chance a release of N groups holds the B informative ones the step needs (``--signal-confidence``).
DEFAULT_CONFIDENCE = 0.95

#: (nodes, $/h at the plan's tier or None) that hold n sandboxes at once
Sizer = Callable[[int], tuple[int, Optional[float]]]


def _prior(block):
    """The measured Beta prior (``signal_math.BetaPrior``), or None when not measured."""
    from sandbox_fleet.measure.signal_math import BetaPrior

    if block is None or block.alpha is None or block.beta is None:
        return None
    return BetaPrior(block.alpha, block.beta)


def _batch_groups(m: MeasureSummary, g: int, groups_per_batch: int | None, batch: int | None) -> tuple[int | None, str]:
    """B and where it came from: the flag, ``--batch`` rollouts / G, else the measured step's batch / G
    (the run with most rollouts among those with steps)."""
    if groups_per_batch is not None:
        return groups_per_batch, "--groups-per-batch"
    if batch is not None:
        return max(batch // g, 1), f"--batch {batch:,} rollouts / G = {g}"
    st = m.steps
    if st is not None and st.detected and not st.mixed and st.batch_size:
        return max(round(st.batch_size / g), 1), f"the measured step batch {st.batch_size:g} / G = {g}"
    runs = (m.by_job if st is not None and st.runs_by == "job" else m.by_model) or {}
    found = [(s.rows or 0, name, s.steps.batch_size) for name, s in runs.items()
             if s.steps is not None and s.steps.detected and s.steps.batch_size]
    if found:
        _, name, size = max(found, key=lambda f: (f[0], f[1]))
        return max(round(size / g), 1), f"the measured step batch of {name} ({size:g} rollouts) / G = {g}"
    return None, "no step batch measured: pass --groups-per-batch"


def signal_block(m: MeasureSummary, *, group_size: int | None, groups_per_batch: int | None, batch: int | None,
                 confidence: float, hold_mean_s: float, sandbox_hours_per_pass: float | None,
                 usd_per_busy_sandbox_h: float | None, usd_per_pass: float | None, node_type: str,
                 size: Sizer) -> Signal | None:
    """The ``signal`` block, or None when the input measured no groups (an older summary)."""
    rg: RlGroups | None = m.rl_groups
    if rg is None or rg.task_counts is None:
        return None
    g = group_size or rg.group_size
    g_basis = "--group-size" if group_size else (rg.group_size_basis or "measure's group size")
    out = Signal(group_size=g, group_size_basis=g_basis, confidence=confidence,
                 exceptions_scored_zero=rg.exceptions_scored_zero, exceptions_scored_zero_share=rg.exceptions_scored_zero_share,
                 sandbox_hours_per_pass=sandbox_hours_per_pass, usd_per_pass=usd_per_pass,
                 sandbox_hours_per_informative_group_measured=rg.sandbox_hours_per_informative_group,
                 exception_zero_flipped_share_measured=rg.flipped_share,
                 informative_share_measured=rg.informative_share if rg.recorded and rg.group_size_median == g else None)
    pass_prior, valid_prior = _prior(rg.pass_prior), _prior(rg.valid_prior)
    if g is None or pass_prior is None or valid_prior is None:
        out.basis = "no per-task pass probabilities measured: no signal figures"
        return out
    # NumPy only here: a plan of a summary without groups (the published one) never loads it
    import numpy as np

    from sandbox_fleet.measure.signal_math import groups_needed, posterior_shares

    counts = np.asarray(rg.task_counts, dtype=np.float64)
    phi = rg.exception_share_of_invalid if rg.exception_share_of_invalid is not None else 1.0
    sh = posterior_shares(counts[:, 0], counts[:, 1], counts[:, 2], pass_prior, valid_prior, g, phi, counts[:, 3])
    out.informative_share, out.all_pass_share, out.all_fail_share = sh.informative, sh.all_pass, sh.all_fail
    out.too_few_valid_share, out.exception_zero_flipped_share = sh.too_few_valid, sh.flipped
    out.bias = _bias(sh.flipped, rg)
    if sh.informative > 0:
        out.oversampling_factor_mean = 1.0 / sh.informative
        out.sandbox_hours_per_informative_group = g * hold_mean_s / 3600.0 / sh.informative
        if usd_per_busy_sandbox_h is not None:
            out.usd_per_informative_group = usd_per_busy_sandbox_h * out.sandbox_hours_per_informative_group
    b, out.groups_per_batch_basis = _batch_groups(m, g, groups_per_batch, batch)
    out.groups_per_batch = b
    n = groups_needed(b, sh.informative, confidence) if b is not None else None
    if b is not None and n is not None:
        out.groups_released, out.oversampling_factor = n, n / b
        out.release_rollouts, out.release_rollouts_without = n * g, b * g
        out.node_type = node_type
        out.nodes_release, out.usd_per_h_release = size(n * g)
        out.nodes_without, out.usd_per_h_without = size(b * g)
    out.basis = (f"groups of {g} drawn from the measured tasks at random; each task's pass probability and valid rate "
                 "are its Beta posteriors (rl_groups.pass_prior, valid_prior); the share is the binomial expression "
                 "over them; dynamic sampling releases N groups at once, N the least with "
                 f"P(Binomial(N, share) >= B) >= {confidence:g}; nodes hold the release at once; "
                 "cost per informative group = G x mean hold / share x $ per busy sandbox-hour")
    return out


def _bias(flipped: float, rg: RlGroups) -> str:
    scored = ""
    if rg.exceptions_scored_zero:
        scored = (f"; the harness already scored {rg.exceptions_scored_zero:,} exception rows with a failing reward "
                  f"({(rg.exceptions_scored_zero_share or 0) * 100:.3g}% of rewarded rows)")
    return (f"an exception or preemption scored as a zero reward is a bias, not a failure: it would make "
            f"{flipped * 100:.3g}% of groups (expected) look informative that carry no signal, pushing the policy "
            f"away from rollouts that merely crashed{scored}; mask them out of the group instead")
