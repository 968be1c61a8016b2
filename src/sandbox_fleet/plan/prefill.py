"""Prefill the GPUs must compute: measured cache hits count, and caching never saves twice.

Measured: with a cached fraction ``h`` of input tokens reported, the GPUs computed ``(1 - h)`` of
the input. Planned: a byte-identical prefix cache cuts prefill to ``input / S`` (the (turns+1)/2
saving). A fleet that already hits its cache does not save that again on top (never
``(input - cached) / S``): the planned figure is the better of the two states,
``min(input / S, input - cached)``. (The issue's text says max; with nothing cached that would make
planned caching save nothing, so it is read as "the saving does not compound".)
"""

from __future__ import annotations

from typing import Optional

from sandbox_fleet.plan.turns import TurnMoments


def computed_prefill(input_tok_s: float, cached_fraction: Optional[float]) -> float:
    """Prefill tokens/s actually computed: input less the measured cache hits."""
    return input_tok_s * (1.0 - (cached_fraction or 0.0))


def planned_cached_prefill(input_tok_s: float, saving: float, cached_fraction: Optional[float]) -> float:
    """Computed prefill with caching planned: ``min(input / S, input - cached)``, never compounded."""
    return min(input_tok_s / saving, computed_prefill(input_tok_s, cached_fraction))


def mean_context(turn_tokens: Optional[float], turns: Optional[TurnMoments], fallback: float) -> float:
    """Turn-weighted mean context (tokens) from the turn curve ``c x (k+1)/2`` per turn.

    A rollout of ``n`` turns sends contexts ``c, 2c, ... nc``: over the turn distribution the mean
    context of a turn is ``c x E[n(n+1)/2] / E[n]`` (``turns.TurnMoments``); ``fallback`` without either.
    """
    if turn_tokens and turns is not None:
        return turns.context(turn_tokens)
    return fallback
