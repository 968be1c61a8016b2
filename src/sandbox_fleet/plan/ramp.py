"""The step time a creation ramp is expected to add, beside the worst case it is bounded by.

A provider that creates ``c`` sandboxes a second starts a step's batch of ``B`` over ``B / c``
seconds: sandbox ``i`` (first come, first created) starts ``i / c`` late. With no cap on the
rented side the step's rollouts end at ``max_i (i / c + h_i)`` instead of ``max_i h_i``. The worst
case, ``B / c``, is the last-created rollout being the one that ends the step; but the holds are
drawn independently of the creation order, so the rollout that ends the step is anywhere in it and
the expected lengthening ``E[max_i (i / c + h_i)] - E[max_i h_i]`` is about half the bound when one
straggler ends the step, and nearer the bound when many rollouts finish together (narrow holds).

A cap of ``m`` sandboxes starting at once, each starting for ``s`` seconds (the cold start), adds its own
wait: creation ``k`` starts at ``max(e_k, r_{k-m})`` and is ready at ``r_k = max(e_k, r_{k-m}) + s``, the
FIFO G/D/m recursion on the bucket's pass times ``e_k`` (``creation_delays_s``; the simulator places the same
rule in time, ``fifo.claim`` in the admission kernel, and tests check the two agree). The ramp's delay is the
lateness past a lone cold start, ``r_k - s``: the cold start itself every rollout pays alike.

It is taken over the fitted hold distribution (``target.HoldSampler``, the draws the RL search
uses), by ``RAMP_DRAWS`` holds in replications of one batch each, from a fixed seed: the same
figure on every run. Fits are judged on the expected delay; the bound is stated beside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sandbox_fleet.plan.target import HoldSampler

#: hold draws behind the expected delays (replications x batch), and the replications' bounds
RAMP_DRAWS = 400_000
RAMP_MIN_REPS, RAMP_MAX_REPS = 16, 4_096
#: the largest batch whose expected lengthening is drawn (16 replications of it: 6.4M draws, ~50 MB);
#: a larger batch is judged on its bound B / c, which the output says
RAMP_MAX_BATCH = RAMP_DRAWS


def ramp_drawn(batch: float) -> bool:
    """Whether the expected lengthening is drawn for ``batch`` (else only the bound is stated)."""
    return 0 < batch <= RAMP_MAX_BATCH
#: the seed's spawn key, apart from the RL search's streams
_STREAM = (38, 7)


def creation_delays_s(n: int, creates_per_s: float | None, burst: float = 1.0, max_starting: int | None = None,
                      cold_start_s: float = 0.0):
    """Each of ``n`` creations asked for at once (k = 1..n, FIFO): the time its sandbox is ready, as a
    NumPy array: the bucket's pass ``e_k = max(0, k - burst) / creates_per_s`` (0 without a rate), then a
    starting slot of ``max_starting`` (None: no cap), then ``cold_start_s``. Per chain ``k = j, j + m, ...``
    the recursion ``r_i = max(e_i, r_{i-1}) + s`` is ``(i + 1) s + max_{i' <= i} (e_{i'} - i' s)``."""
    import numpy as np

    steps = np.maximum(np.arange(1, n + 1, dtype=np.float64) - float(burst), 0.0)
    e = steps / creates_per_s if creates_per_s is not None else np.zeros(n)
    if max_starting is None or max_starting >= n or cold_start_s == 0.0:
        return e + cold_start_s
    m = int(max_starting)
    rows = -(-n // m)
    grid = np.full(rows * m, np.inf)
    grid[:n] = e
    i = np.arange(rows, dtype=np.float64)[:, None]
    ready = (i + 1.0) * cold_start_s + np.maximum.accumulate(grid.reshape(rows, m) - i * cold_start_s, axis=0)
    return ready.reshape(-1)[:n]


def expected_ramp_delays_s(batch: int, creates_per_s: list[float], holds: HoldSampler,
                           seed: int = 0, burst: float = 1.0, max_starting: int | None = None,
                           cold_start_s: float = 0.0) -> tuple[dict[float, float], int]:
    """({creates per s: expected step lengthening in s}, replications): for each rate, the mean over
    replications of ``max_k (d_k + h_k) - max_k h_k`` for one batch of fitted holds each, where a
    token bucket of that rate and ``burst`` starts the k-th rollout (k = 1..B) ``d_k = max(0, k - burst)
    / c`` late (burst 1: ``i / c`` for i = 0..B-1); every rate sees the same draws (common random
    numbers), so providers are compared on equal holds. With ``max_starting`` (and the ``cold_start_s``
    each start takes) the delays are ``creation_delays_s`` past a lone cold start. The one place the
    ramp's expected lengthening is computed (rent vs buy and the quota fits both read it)."""
    import numpy as np

    if not ramp_drawn(batch):
        raise ValueError(f"batch {batch} is past RAMP_MAX_BATCH {RAMP_MAX_BATCH}: judge it on the bound")
    b = max(batch, 1)
    reps = min(max(RAMP_DRAWS // b, RAMP_MIN_REPS), RAMP_MAX_REPS)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=_STREAM))
    # exact small integers in float64: burst 1 gives the same bits as arange(B)
    steps = np.maximum(np.arange(1, b + 1, dtype=np.float64) - float(burst), 0.0)
    rates = sorted(set(creates_per_s))
    totals = dict.fromkeys(rates, 0.0)
    capped = max_starting is not None and max_starting < b and cold_start_s > 0
    late = {c: creation_delays_s(b, c, burst, max_starting, cold_start_s) - cold_start_s for c in rates} if capped else {}
    for _ in range(reps):
        h = holds.sample(rng, b)
        top = float(np.max(h))
        for c in rates:
            totals[c] += float(np.max(h + (late[c] if capped else steps / c))) - top
    return {c: t / reps for c, t in totals.items()}, reps
