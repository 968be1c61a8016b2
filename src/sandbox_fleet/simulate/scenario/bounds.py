"""What a scenario will cost before it runs: finite times, memory, and whether it can finish.

Three refusals, each one line naming the scenario key (exit 2):

- a duration, time or rate whose values overflow (inf/NaN) or reach past year 9999 from
  ``run.epoch`` (the last time the telemetry can carry);
- a run whose estimated memory (rollouts x attempts, x turns where turns are simulated, plus
  the pool's slots, plus the inference pool's calls, rollouts and replicas, and the admission kernel's replica x
  in-flight and prefix-cache arrays) exceeds the budget (``--max-memory-gb``, default 75% of available memory);
- a pool whose preemption rate reclaims each node far faster than a mean attempt runs, so
  almost no attempt can ever finish.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np

from sandbox_fleet.limits import check_memory
from sandbox_fleet.simulate.engine import distributions as D

#: The last instant the telemetry (and Python's datetime) can carry.
YEAR_9999 = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
DEFAULT_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)

# Bytes per unit of work. A 200k-rollout poisson run with telemetry grows the process by
# ~590 B a rollout (RSS; tracemalloc sees ~390 B); retries and turns are rounded up from a
# sync-rl run with both, so the estimate errs high rather than let a run be OOM-killed.
BYTES_PER_ATTEMPT = 600  # a first attempt: the loop's rows, prepared arrays, result and telemetry
BYTES_PER_RETRY = 200  # a pre-drawn retry (one tuple of six numbers)
BYTES_PER_TURN = 24  # a turn is drawn once (float64), summed per attempt
BYTES_PER_SLOT = 120
# With an inference pool (tracemalloc peaks of closed runs of 4 and 40 turns and an open run,
# 6,000-60,000 rollouts: ~210 B a turn for the token and command draws, the per-call records
# and the unloaded-hold arrays, a few hundred B a rollout for its tokens, routing and prefix).
BYTES_PER_SERVED_TURN = 240
BYTES_PER_SERVED_ROLLOUT = 300
BYTES_PER_REPLICA = 1000
#: The admission kernel's arrays that grow with replicas x rollouts in flight (``admit_loop._inference_state``):
#: a replica's decode deadlines ``dv`` (float64) and call queue ``dq`` (two int64) per call it may hold.
BYTES_PER_REPLICA_CALL = 8 + 2 * 8
#: A prefix-cache key of the kernel (``cl``: four int32 links, ``cs``: two float64 sizes, ``cin``: two
#: bools): one per rollout with sticky routing, one per replica x rollout otherwise.
BYTES_PER_CACHE_KEY = 4 * 4 + 2 * 8 + 2
#: An image of a drawn catalog: its generated name (~60 B of text), the list slot, share and size
#: (float64 each) and the per-node cache's entry, rounded up.
BYTES_PER_IMAGE = 200
#: Largest mean token count per turn: draws stay exact integers and run-wide sums fit int64.
MAX_TOKENS_PER_TURN = 1e9
#: P(an attempt of mean length survives its node) below exp(-SURVIVAL_EXP) means it cannot finish.
SURVIVAL_EXP = 20.0


def horizon_s(epoch: str | None) -> float:
    """Seconds from ``epoch`` (ISO, default 2026-01-01 UTC) to the end of year 9999."""
    try:
        start = datetime.fromisoformat(epoch) if epoch else DEFAULT_EPOCH
    except ValueError:
        start = DEFAULT_EPOCH
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    return (YEAR_9999 - start).total_seconds()


def mean_s(d: D.Dist | np.ndarray | None) -> float:
    """A distribution's mean (inf when it overflows); sampled where there is no closed form."""
    if d is None:
        return 0.0
    if isinstance(d, np.ndarray):
        return float(np.mean(d)) if d.size else 0.0
    try:
        with np.errstate(all="ignore"):
            m = float(d.mean())
    except OverflowError:
        return math.inf
    except (NotImplementedError, ZeroDivisionError, ValueError):
        with np.errstate(all="ignore"):
            m = float(np.mean(d.sample(np.random.default_rng(0), 4096)))
    return m if not math.isnan(m) else math.inf


def check_time(value: float, key: str, horizon: float, fail) -> None:
    """A duration or time: finite and within ``horizon`` seconds."""
    if not math.isfinite(value):
        fail(key, f"{value} is not a finite number of seconds")
    if value > horizon:
        fail(key, f"{value:g} s reaches past year 9999 from run.epoch (at most {horizon:.4g} s)")


def _draws_finite(d: D.Dist) -> bool:
    """A fixed sample of 1,024 draws is all finite (overflow shows there before the mean does)."""
    with np.errstate(all="ignore"):
        return bool(np.all(np.isfinite(d.sample(np.random.default_rng(0), 1024))))


def check_dist(d: D.Dist, key: str, horizon: float, fail) -> None:
    """Refuse a distribution whose draws overflow or whose mean lies past year 9999."""
    m = mean_s(d)
    if not math.isfinite(m):
        fail(key, "its durations overflow (the mean is infinite); use smaller parameters")
    if m > horizon:
        fail(key, f"its mean duration {m:.4g} s reaches past year 9999 from run.epoch (at most {horizon:.4g} s)")
    if not _draws_finite(d):
        fail(key, "its durations overflow (some draws are infinite or NaN); use smaller parameters")


def check_tokens(d: D.Dist, key: str, fail) -> None:
    """Refuse a token-count distribution whose draws overflow or whose mean is absurd."""
    m = mean_s(d)
    if not math.isfinite(m):
        fail(key, "its token counts overflow (the mean is infinite); use smaller parameters")
    if m > MAX_TOKENS_PER_TURN:
        fail(key, f"a mean of {m:.4g} tokens per turn is more than {MAX_TOKENS_PER_TURN:.0e}")
    if not _draws_finite(d):
        fail(key, "its token counts overflow (some draws are infinite or NaN); use smaller parameters")


def episode_mean_s(ep, inference=None) -> float:
    """Mean seconds one attempt holds its sandbox (build + agent + verifier), undisturbed
    (with an ``inference`` pool: each call served alone, its prefix cached)."""
    if ep.turns is not None:
        per_turn = mean_s(ep.turns.model_latency) + mean_s(ep.turns.command)
        if inference is not None and ep.turns.served:
            with np.errstate(all="ignore"):
                per_turn += (mean_s(ep.turns.prefill_tokens) / inference.prefill_tok_s
                             + mean_s(ep.turns.decode_tokens) / inference.decode_tok_s * (1.0 + inference.base_units))
        agent = max(mean_s(ep.turns.turns), 1.0) * per_turn
    else:
        agent = mean_s(ep.agent)
    build = 0.0
    if ep.build is not None:
        build = ep.build.hit_p * mean_s(ep.build.hit) + (1 - ep.build.hit_p) * mean_s(ep.build.miss)
    return build + agent + mean_s(ep.verifier)


def hold_parts(ep, key, inference=None) -> list[tuple[str, float]]:
    """The mean seconds one attempt holds its sandbox, part by part, each with the scenario key that
    sets it: the built episode's actual quantities (a pull time is size / pull_mb_per_s, a substrate's
    overhead is cold start + turns x per-action), whatever the keys are called. ``key(table)``: the
    workload's key of an episode table (``hold``, ``workload.turns``...)."""
    parts: list[tuple[str, float]] = []
    turns = 1.0
    with np.errstate(all="ignore"):
        if ep.turns is not None:
            t = key("turns")
            turns = max(mean_s(ep.turns.turns), 1.0)
            parts += [(f"{t}.turns", turns * (mean_s(ep.turns.model_latency) + mean_s(ep.turns.command)))]
            if inference is not None and ep.turns.served:
                decode_s = turns * mean_s(ep.turns.decode_tokens) / inference.decode_tok_s
                parts += [("inference.prefill_tok_s", turns * mean_s(ep.turns.prefill_tokens) / inference.prefill_tok_s),
                          ("inference.decode_tok_s", decode_s),
                          ("inference.iteration_base_ms", decode_s * inference.base_units)]
        else:
            parts.append((key("hold"), mean_s(ep.agent)))
        b = ep.build
        if b is not None:
            parts.append((key("build"), b.hit_p * mean_s(b.hit) + (1 - b.hit_p) * mean_s(b.miss)))
            pulls = b.images.pull_s() if b.images is not None else None
            if pulls is not None and pulls.size:
                parts.append(("images.pull_mb_per_s", float(np.max(pulls))))
        parts.append((key("verifier"), mean_s(ep.verifier)))
        sub = ep.substrate
        if sub is not None:
            parts.append(("substrate.name", float(sub.cold_start_s)))  # the catalog entry's cold start
            if sub.turns_mean is not None and ep.turns is None:
                parts.append(("substrate.turns_per_rollout", float(sub.turns_mean) * float(sub.per_action_s)))
            elif ep.turns is not None:
                parts.append((f"{key('turns')}.turns", turns * float(sub.per_action_s)))
    return [(k, v if not math.isnan(v) else math.inf) for k, v in parts]


def check_hold(ep, key, horizon: float, fail, inference=None) -> None:
    """Refuse an episode whose mean hold (``hold_parts``) overflows or reaches past year 9999 from
    run.epoch, naming the key of the part that does (of the largest part when only the sum does):
    the one bound on the holds a built scenario will simulate."""
    parts = hold_parts(ep, key, inference)
    for k, v in parts:
        if not v <= horizon:
            fail(k, f"makes a mean attempt hold its sandbox {v:.4g} s, past year 9999 from run.epoch "
                    f"(at most {horizon:.4g} s)")
    total = math.fsum(v for _, v in parts)
    if not total <= horizon:
        k = max(parts, key=lambda kv: kv[1])[0]
        fail(k, f"the parts of a mean attempt add up to {total:.4g} s of holding its sandbox, past year 9999 "
                f"from run.epoch (at most {horizon:.4g} s); this part is the largest")


def _may_retry(wl, ep, preempts: bool) -> bool:
    """Can this workload's attempts be retried (an exception source, or preemption, meets a retry budget)?"""
    if wl.retry.max_retries == 0:
        return False
    mix = D.mixture_of(ep.agent) if isinstance(ep.agent, D.Dist) else None
    return bool(ep.exception_rate_per_s or ep.exception_p or ep.exception is not None
                or (mix is not None and any(mix.exceptions)) or (preempts and "preemption" in wl.retry.on))


def estimate_bytes(fleets, workloads, inference=None) -> float:
    """Peak memory of a run: attempts (first ones and pre-drawn retries), simulated turns, slots,
    and with an ``inference`` pool its calls (one per turn), rollouts and replicas."""
    total = 0.0
    for wl in workloads:
        ep = wl.resolved_episode()
        n = float(wl.count)
        preempts = 0 <= wl.pool < len(fleets) and fleets[wl.pool].preempt_rate_per_node_s > 0
        retries = n * wl.retry.max_retries if _may_retry(wl, ep, preempts) else 0.0
        attempts = n + retries
        total += n * BYTES_PER_ATTEMPT + retries * BYTES_PER_RETRY
        if ep.turns is not None:
            turns = attempts * max(mean_s(ep.turns.turns), 1.0)
            total += turns * BYTES_PER_TURN
            if inference is not None:
                total += turns * BYTES_PER_SERVED_TURN + n * BYTES_PER_SERVED_ROLLOUT
    total += sum(float(f.cap or 0) for f in fleets) * BYTES_PER_SLOT
    if inference is not None:
        total += inference_grid_bytes(fleets, workloads, inference) + float(inference.replicas) * BYTES_PER_REPLICA
    return total


def inference_grid_bytes(fleets, workloads, inference) -> float:
    """The admission kernel's inference arrays that grow as replicas x rollouts: each replica's room for
    every rollout that may hold a sandbox at once (``admit_loop._in_flight``), and the prefix cache's
    keys (``admit_loop._inference_state``)."""
    n = float(sum(wl.count for wl in workloads))
    R = float(inference.replicas)
    in_flight = n if any(f.cap is None for f in fleets) else min(n, float(sum(int(f.cap) for f in fleets)))
    keys = 1.0 if not inference.caching else (n if inference.routing == "sticky" else R * n)
    return R * max(1.0, in_flight) * BYTES_PER_REPLICA_CALL + keys * BYTES_PER_CACHE_KEY


def check_run(built, source: str, max_memory_gb: float | None) -> None:
    """Refuse, before it starts, a run that cannot fit in memory or cannot finish."""
    from sandbox_fleet.errors import InputError

    est = estimate_bytes(built.fleets, built.workloads, built.inference)
    rollouts = sum(w.count for w in built.workloads)
    slots = sum(f.cap or 0 for f in built.fleets)  # the loop keeps state per slot of every capped pool
    check_memory(est, max_memory_gb, f"{source}: {rollouts:,} rollouts on {slots:,} slots" if slots else
                 f"{source}: {rollouts:,} rollouts")
    for p, fleet in enumerate(built.fleets):
        rate = fleet.preempt_rate_per_node_s
        if rate <= 0:
            continue
        means = [episode_mean_s(w.resolved_episode()) for w in built.workloads if w.pool == p]
        hold = min(means) if means else 0.0
        if rate * hold > SURVIVAL_EXP:
            key = f"fleets.{p}" if len(built.fleets) > 1 else "fleet"
            raise InputError(
                f"{source}: key '{key}.preempt_rate_per_node_s': a node is reclaimed every {1 / rate:.3g} s on "
                f"average but a mean attempt holds its sandbox {hold:.3g} s, so almost no attempt can finish "
                f"(P(survive) < {math.exp(-SURVIVAL_EXP):.1e}); lower the rate")
