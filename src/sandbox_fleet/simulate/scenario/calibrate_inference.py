"""``simulate OUT.toml --from PATH --inference``: ``[turns]`` and ``[inference]`` from telemetry.

From rows that report ``input_tokens``, ``output_tokens`` and ``turns``:

- ``c``: the turn curve, input tokens after n turns ~ c n(n+1)/2: ``measure``'s
  ``tokens.turn_tokens`` on the same rows (its fit through the origin to the medians of the turn
  counts with at least ``MIN_TURN_ROWS`` rows); when no turn count has that many, every count is
  fitted and the scenario says so;
- decode per turn ``d`` = output tokens / turns; new prefill per turn = ``c - d`` (>= 0), so
  the context grows by ``c`` a turn;
- command time per turn = (agent time - the model time the measured fleet would have spent
  decoding at ``reference_decode_tok_s`` per sequence) / turns, summed over rows (>= 0);
- the pool: ``replicas`` such that the measured decode demand (output tokens / span) keeps
  each replica at ``target_utilisation`` of ``replica_decode_tok_s``.

Each of these is a stated assumption, written into the scenario as a comment.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.tokens import MIN_TURN_ROWS, fit_quadratic


def _col(t: pa.Table, name: str) -> np.ndarray:
    return pc.cast(t.column(name), pa.float64()).to_numpy(zero_copy_only=False)


def _us(t: pa.Table, name: str) -> np.ndarray:
    return pc.cast(pc.cast(t.column(name), pa.int64()), pa.float64()).to_numpy(zero_copy_only=False)


def turn_curve(turns: np.ndarray, inputs: np.ndarray, min_turn_rows: int = MIN_TURN_ROWS) -> tuple[float, int]:
    """(c, the fewest rows a fitted turn count had): measure's fit of median input(n) = c n(n+1)/2 over
    the turn counts with at least ``min_turn_rows`` rows (every count when none has that many)."""
    ns, counts = np.unique(turns[turns >= 1], return_counts=True)
    keep = counts >= min_turn_rows
    if not keep.any():
        keep = np.ones(ns.size, dtype=bool)
    med = np.array([np.median(inputs[turns == n]) for n in ns[keep]])
    return float(fit_quadratic(ns[keep], med)["turn_tokens"]), int(counts[keep].min())


def inference_calibration(rollouts: pa.Table, *, reference_decode_tok_s: float = 50.0,
                          replica_decode_tok_s: float = 3000.0, replica_prefill_tok_s: float = 30000.0,
                          target_utilisation: float = 0.5) -> dict:
    for name, v in (("reference_decode_tok_s", reference_decode_tok_s), ("replica_decode_tok_s", replica_decode_tok_s),
                    ("replica_prefill_tok_s", replica_prefill_tok_s)):
        if not (v > 0 and math.isfinite(v)):
            raise InputError(f"--{name.replace('_', '-')} must be a number > 0, got {v}")
    inp, out, turns = _col(rollouts, "input_tokens"), _col(rollouts, "output_tokens"), _col(rollouts, "turns")
    ok = np.isfinite(inp) & np.isfinite(out) & np.isfinite(turns) & (turns >= 1)
    if not ok.any():
        raise InputError("`inference` needs telemetry rows with input_tokens, output_tokens and turns (none have all three)")
    start, finish = _us(rollouts, "started_at"), _us(rollouts, "finished_at")
    a0, a1 = _us(rollouts, "agent_execution_started_at"), _us(rollouts, "agent_execution_finished_at")
    agent_s = np.where(np.isfinite(a0) & np.isfinite(a1), a1 - a0, finish - start) / 1e6
    # the turn curve on the rows measure fits it on: turns and input tokens (output not needed)
    has_c = np.isfinite(inp) & np.isfinite(turns) & (turns >= 1)
    c, fewest = turn_curve(turns[has_c], inp[has_c])
    d = float(out[ok].sum() / turns[ok].sum())
    model_s = out[ok] / reference_decode_tok_s
    command_s = max(float((agent_s[ok] - model_s).sum() / turns[ok].sum()), 0.0)
    span_s = float(finish.max() - start.min()) / 1e6
    demand = float(out[ok].sum()) / span_s if span_s > 0 else 0.0
    replicas = max(1, math.ceil(demand / (target_utilisation * replica_decode_tok_s)))
    return {
        "rows": int(ok.sum()), "skipped_rows": int((~ok).sum()),
        "turn_tokens": c, "turn_fit_all_counts": fewest < MIN_TURN_ROWS, "decode_per_turn": d, "prefill_per_turn": max(c - d, 0.0),
        "command_s": command_s, "turns": turns[ok].astype(int).tolist(),
        "decode_demand_tok_s": demand, "replicas": replicas,
        "reference_decode_tok_s": reference_decode_tok_s, "replica_decode_tok_s": replica_decode_tok_s,
        "replica_prefill_tok_s": replica_prefill_tok_s, "target_utilisation": target_utilisation,
    }


def toml_lines(cal: dict) -> list[str]:
    """The ``[turns]`` and ``[inference]`` tables, each assumption stated beside its number."""
    hist = np.bincount(np.asarray(cal["turns"], dtype=np.int64))
    values = [int(n) for n in np.flatnonzero(hist)]
    return [
        f"# --inference: {cal['rows']} rows with tokens and turns ({cal['skipped_rows']} without, not used).",
        f"# Turn curve c = {cal['turn_tokens']:.1f} tokens/turn (input ~ c n(n+1)/2, measure's tokens.turn_tokens"
        + (f": no turn count has {MIN_TURN_ROWS} rows, so every count is fitted" if cal["turn_fit_all_counts"]
           else f", over turn counts with >= {MIN_TURN_ROWS} rows") + "); decode per turn d =",
        f"# output / turns = {cal['decode_per_turn']:.1f}; new prefill per turn = c - d. ASSUMPTION: the measured",
        f"# fleet's model decoded at {cal['reference_decode_tok_s']:g} tok/s per sequence (--reference-decode-tok-s), so",
        f"# command time per turn = (agent time - output / that rate) / turns = {cal['command_s']:.2f} s.",
        f"# ASSUMPTION: replicas of {cal['replica_decode_tok_s']:g} decode / {cal['replica_prefill_tok_s']:g} prefill tok/s; the measured",
        f"# decode demand {cal['decode_demand_tok_s']:.1f} tok/s at {cal['target_utilisation']:g} utilisation -> {cal['replicas']} replicas.",
        "[turns]",
        "# turns: the measured histogram (one deterministic component per turn count, weighted by rows)",
        "turns = { dist = \"mixture\", components = [" + ", ".join(
            f"{{ weight = {int(hist[v])}, hold = {{ dist = \"deterministic\", value_s = {v} }} }}" for v in values) + "] }",
        f"command = {{ dist = \"exponential\", mean_s = {max(cal['command_s'], 1e-6):.6g} }}",
        f"prefill_tokens = {{ dist = \"deterministic\", value_s = {cal['prefill_per_turn']:.6g} }}",
        f"decode_tokens = {{ dist = \"exponential\", mean_s = {max(cal['decode_per_turn'], 1e-6):.6g} }}",
        "",
        "[inference]",
        f"replicas = {cal['replicas']}",
        f"decode_tok_s = {cal['replica_decode_tok_s']:g}",
        f"prefill_tok_s = {cal['replica_prefill_tok_s']:g}",
        "",
    ]
