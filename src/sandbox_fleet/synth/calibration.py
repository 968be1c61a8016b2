"""The published RST campaign figures, and the distribution parameters fitted to them.

Everything the synthetic corpus draws comes from this module. ``PUBLISHED`` holds
the document's measured figures (``FIGURES.md``); the parameters below them are
*fitted* so that, once the engine has placed the drawn holds in time, measuring the
written release gives those figures back. Each block says how it was derived.
Nothing here is a column value: the release only ever contains draws.

How the hold mixture was found (the hard part). One lognormal cannot give the
published median 1,332 s, p99 8,845 s *and* mean 2,102.6 s: p99/median = 6.64
forces sigma = ln(6.64)/2.326 = 0.81, whose mean/median is exp(0.81^2/2) = 1.39,
not the 1.58 measured. The corpus is a mix of models, and two published slices
(gpt-oss-120b: 74.5% exceptions, median 139 s; Qwen3.6-27B-base: 5.9%, 1,023 s) sit
*below* the overall median, so the two other models must hold longer and more
tightly (a long, narrow body gives a high mean without a heavy p99). The
components were then tuned by coordinate search on 400k draws against seven
targets at once (overall median, p99, mean; mean over rows with and without
tokens; the two published medians), and two were moved by hand afterwards (the
early-exception component, to get the cap dynamics right, see ``_EARLY``; the late
exceptions of the Qwen3.5 models, to restore the no-token mean). Measured on the
scale-1 release each of the seven lands within 0.5% of its target.

Not reproduced: the document's "passing and failing both hold ~1,300 s". Here the
passing median is ~1,770 s and the failing ~1,640 s: most clean (hence rewarded)
rows belong to the long-holding models, so both sit above the overall median,
which the short exception rows pull down.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# --- the document's figures (FIGURES.md) -------------------------------------------------
# numbers, and two nested tables (median_input_by_turns, by_model): read as Any
PUBLISHED: dict[str, Any] = {
    "rollouts": 327_189,
    "tasks": 37_484,
    "tasks_standard_request": 37_459,
    "span_s": 1_471_279.1,
    "sandbox_s": 687_957_914.0,
    "mean_concurrency": 467.6,
    "peak": 3_000,
    "touches": 5_000,
    "time_at_peak_s": 10_248.0,
    "hold_min_s": 3.8,
    "hold_median_s": 1_332.0,
    "hold_p99_s": 8_845.0,
    "hold_max_s": 26_571.0,
    "hold_mean_s": 2_102.6,
    "hold_mean_tokens_s": 2_379.0,
    "hold_mean_no_tokens_s": 1_361.0,
    "exception_rate": 96_097 / 327_189,  # 29.37%
    "missing_reward": 81_635 / 327_189,  # 25.0%
    "pass_rate": 62_511 / 245_554,  # 25.46% of rewarded rows
    "pass_rate_clean": 0.2665,
    "pass_rate_exception": 0.0097,
    "missing_tokens": 88_774 / 327_189,  # 27.1%
    "missing_trajectory": 18_041 / 327_189,  # 5.5%
    "prefill_per_sandbox_s": 48.1,
    "decode_per_sandbox_s": 1.72,
    "turn_tokens": 824.0,
    "median_input_by_turns": {2: 3_207, 5: 11_760, 11: 52_474, 20: 168_366, 50: 1_044_116},
    "turns_median": 11,
    "turns_p90": 21,
    "bundle_median_bytes": 39_900,
    "bundle_max_bytes": 16_700_000,
    "by_model": {
        "gpt-oss-120b": {"exception_rate": 0.745, "hold_median_s": 139.0},
        "Qwen3.6-27B-base": {"exception_rate": 0.059, "hold_median_s": 1_023.0},
    },
}

#: Bounds of every hold: the published minimum and maximum (the agent timeout cuts the tail).
HOLD_MIN_S = 3.8
HOLD_MAX_S = 26_571.0


@dataclass(frozen=True)
class Component:
    """One lognormal piece of a hold mixture: its weight, median (s) and log-space sigma."""

    weight: float
    median_s: float
    sigma: float


@dataclass(frozen=True)
class ModelProfile:
    """How one model's rollouts behave: share of rows, outcome rates, hold mixtures."""

    name: str
    share: float
    exception_rate: float
    clean_pass: float  # reward == 1 among rows without exception (all of which are rewarded)
    clean_hold: tuple[Component, ...]
    exception_hold: tuple[Component, ...]


# Exceptions that fail before the agent does anything (image build, sandbox start):
# holds of about seven minutes (median 400 s, sigma 0.6), the same for every model.
# Their timing also sets how fast a freshly released batch starts freeing slots, i.e.
# how often a saturated pool dips below its cap: with this component the simulated
# campaign spends ~2 s at the cap per touch, as the document's 10,248 s / 5,000 does
# (with a two-minute median it was ~1.3 s a touch).
_EARLY = Component(1.0, 400.0, 0.6)

# --- models --------------------------------------------------------------------------------
# Shares: the two unpublished models must carry the long holds (see the module docstring);
# 16% gpt-oss and 32% Qwen3.6-base leave 52% to them. Exception rates: the published
# slices give 0.16 * 0.745 + 0.32 * 0.059 = 0.138 of all rows; the remaining 0.156 of the
# 0.2937 total is split 22% (the RL checkpoint) and 38.5% (the base model it started from)
# so that 0.27 * 0.22 + 0.25 * 0.385 = 0.156.
# Clean pass rates: reward == 1 among clean rows is 26.65% overall (62,511 passed, of which
# 0.97% x 96,097 = 932 among exceptions); the per-model rates are spread around it (the RL
# checkpoint best, gpt-oss worst) with the share-weighted mean = 26.65%. The spread is
# kept small: a model with long holds and a high pass rate would make passing rollouts
# hold longer than failing ones, and the document has both at about the same median.

# The two Qwen3.5 runs (base and its RL checkpoint) share one episode shape: a quarter of
# clean episodes end fast (easy task or early give-up), the rest are long and narrow
# (median 4,000 s, sigma 0.41); 40% of exceptions fail early, 60% late in the episode
# (crash or timeout-like), and the late median (2,870 s) is what brings rows without
# token counts to a 1,361 s mean.
_QWEN35_CLEAN_HOLD = (Component(0.25, 819.0, 0.6), Component(0.75, 4_000.0, 0.41))
_QWEN35_EXCEPTION_HOLD = (Component(0.40, _EARLY.median_s, _EARLY.sigma), Component(0.60, 2_870.0, 0.556))

MODELS: tuple[ModelProfile, ...] = (
    ModelProfile(
        name="qwen35-27b-iter0000161-hf",
        share=0.27,
        exception_rate=0.22,
        clean_pass=0.28,
        clean_hold=_QWEN35_CLEAN_HOLD,
        exception_hold=_QWEN35_EXCEPTION_HOLD,
    ),
    ModelProfile(
        name="Qwen3.5-27B",
        share=0.25,
        exception_rate=0.38488,
        clean_pass=0.26,
        clean_hold=_QWEN35_CLEAN_HOLD,
        exception_hold=_QWEN35_EXCEPTION_HOLD,
    ),
    ModelProfile(
        name="Qwen3.6-27B-base",
        share=0.32,
        exception_rate=0.059,
        clean_pass=0.0,  # set below so that the clean mean is exactly 26.65%
        # Fitted to the published 1,023 s median of this slice.
        clean_hold=(Component(1.0, 1_050.0, 0.756),),
        exception_hold=(Component(0.5, _EARLY.median_s, _EARLY.sigma), Component(0.5, 965.0, 0.7)),
    ),
    ModelProfile(
        name="gpt-oss-120b",
        share=0.16,
        exception_rate=0.745,
        clean_pass=0.24,
        # 74.5% of this slice are exceptions, most within a couple of minutes
        # (median 100 s): that is what puts the slice median at 139 s.
        clean_hold=(Component(1.0, 404.0, 0.9),),
        exception_hold=(Component(1.0, 100.0, 1.0),),
    ),
)


def _solve_base_pass() -> tuple[ModelProfile, ...]:
    clean = {m.name: m.share * (1 - m.exception_rate) for m in MODELS}
    total = sum(clean.values())
    target = PUBLISHED["pass_rate_clean"] * total
    rest = sum(clean[m.name] * m.clean_pass for m in MODELS if m.name != "Qwen3.6-27B-base")
    base = (target - rest) / clean["Qwen3.6-27B-base"]
    return tuple(
        ModelProfile(**{**m.__dict__, "clean_pass": base}) if m.name == "Qwen3.6-27B-base" else m for m in MODELS
    )


MODELS = _solve_base_pass()

# --- outcomes and coverage ----------------------------------------------------------------
# 81,635 rows lack a reward and 96,097 carry an exception; 245,554 = 327,189 - 81,635 are
# rewarded, which is exactly the 231,092 clean rows plus 14,462 exception rows. So every
# clean row is rewarded and 14,462 / 96,097 = 15.05% of exception rows are.
EXCEPTION_REWARDED = 14_462 / 96_097
# 0.97% of all exception rows passed: 932 rows, i.e. 6.44% of the rewarded ones.
EXCEPTION_PASS_GIVEN_REWARD = 0.0097 / EXCEPTION_REWARDED

# Rows without token or turn counts (27.1%) hold 1,361 s on average against 2,379 s for
# the others: they are mostly exception rows (whose holds are short). With 86% of
# exception rows missing counts, 27.13% overall needs 3.0% of clean rows missing them too.
EXCEPTION_NO_TOKENS = 0.86
CLEAN_NO_TOKENS = (PUBLISHED["missing_tokens"] - PUBLISHED["exception_rate"] * EXCEPTION_NO_TOKENS) / (
    1 - PUBLISHED["exception_rate"]
)
# 5.5% of rows have no trajectory: all among rows without counts (the run left nothing).
NO_TRAJECTORY_GIVEN_NO_TOKENS = PUBLISHED["missing_trajectory"] / PUBLISHED["missing_tokens"]

# --- turns ---------------------------------------------------------------------------------
# Turns (episode_count) on rows with counts: median 11, p90 21; passing rollouts take
# fewer (median 9 against 11). A lognormal body alone with p90/median = 21/11 has sigma
# 0.50 but then its mean context is too small for the published prefill rate: mean input
# per row must be 48.1 tok/s x 2,379 s = 114,430 tokens, while that body gives ~87,000.
# So the body is narrower (sigma 0.46) and 3% of episodes are long loops (median 48.5
# turns) that carry the missing context; fitted on 238k draws to median 11, p90 21 and
# prefill 48.2 tok/s. Turn counts are tied to the hold by a Gaussian copula (longer
# holds, more turns) with a weak correlation, as passing and failing rollouts hold for
# about the same time despite their different turn counts.
TURNS_FAIL_MEDIAN = 11.0
TURNS_PASS_MEDIAN = 9.0
TURNS_SIGMA = 0.46
TURNS_TAIL_WEIGHT = 0.03
TURNS_TAIL_MEDIAN = 48.5
TURNS_TAIL_SIGMA = 0.45
TURNS_MAX = 250
TURNS_HOLD_CORRELATION = 0.3

# --- tokens --------------------------------------------------------------------------------
# Input tokens are summed over turns because the context is re-sent every turn, so the
# median at n turns is ratio(n) * n(n+1)/2. The ratio at the published turn counts is
# median / (n(n+1)/2): 3,207/3 = 1,069 at 2 turns (the fixed prompt dominates), then
# 784, 795, 802, 819 at 5, 11, 20, 50; 1 turn carries the prompt alone (~1,600 tokens),
# and long episodes approach the fitted 824. Interpolated linearly in log(n).
INPUT_RATIO_KNOTS = ((1, 1_600.0), (2, 1_069.0), (5, 784.0), (11, 795.06), (20, 801.74), (50, 818.91), (100, 824.0))
# Spread of one rollout's input around that median: per-turn sizes vary, but a sum over
# n turns averages them, so the log-spread shrinks like 1/sqrt(n).
INPUT_SIGMA_ONE_TURN = 0.5
# Decode: output tokens = turns x per-turn output. Per-turn output scaled so the mean
# output per row with counts is 1.72 tok/s x 2,379 s = 4,092 (the document's 4,085).
# With mean turns ~14.7 and the spread below, 265 tokens per turn gives 1.72 tok/s.
OUTPUT_PER_TURN = 265.0
OUTPUT_SIGMA = 0.6
