"""A provider's creation limits as rules: a token bucket for the creation rate, a warm pool per template,
a cap on sandboxes starting at once, and the sandbox lifetime; each written once, as plain Python that
numba compiles unchanged (``fast/fifo_compiled.limited``), with the same bits either way.

The bucket (rate ``r`` per second, burst ``b``) holds up to ``b`` tokens and gains ``r`` a second; a
creation takes one token, waiting for it when there is none. It is FIFO: a creation asked for before
the previous one passed waits behind it. So a batch of ``B`` asked for at 0 with a full bucket passes
its ``k``-th creation (``k = 1..B``) at ``max(0, (k - b) / r)``, and with ``b = 1`` the pass times are
``d_k = max(a_k, d_{k-1} + 1/r)``: the waits of an M/D/1 queue with service ``1/r``.

The warm pool is the same bucket that never waits: ``size`` ready sandboxes, refilled at ``refill_per_s``
up to ``size``; a claim takes a ready one (a warm start) or, when none is ready, goes to a fresh
creation (a cold start: the bucket, the starting-at-once cap, then the cold start). Refills are not
drawn from the creation bucket (the provider's refill rate is its own figure).

State lives in small float arrays (``state[0]`` tokens, ``state[1]`` the time they were counted) so that
the compiled and the interpreted rule update the same cells.
"""

from __future__ import annotations

import numpy as np

#: the cells of a bucket's (or a warm pool's) state array
TOKENS, AT = 0, 1


def new_state(full: float) -> np.ndarray:
    """A bucket or warm pool holding ``full`` tokens at time 0."""
    return np.array([full, 0.0])


def bucket_take(state, t, rate_per_s, burst):
    """The time a creation asked for at ``t`` passes a bucket of ``rate_per_s`` and ``burst``
    (FIFO: never before the previous pass); updates ``state``."""
    u = state[AT]
    if t > u:
        u = t
    tokens = state[TOKENS] + (u - state[AT]) * rate_per_s
    if tokens > burst:
        tokens = burst
    if tokens >= 1.0:
        state[TOKENS] = tokens - 1.0
        state[AT] = u
        return u
    d = u + (1.0 - tokens) / rate_per_s
    state[TOKENS] = 0.0
    state[AT] = d
    return d


def warm_take(state, t, refill_per_s, size):
    """Whether a claim at ``t`` finds a ready sandbox in a warm pool of ``size`` refilled at
    ``refill_per_s`` (taking it); a claim that finds none takes nothing."""
    u = state[AT]
    if t > u:
        u = t
    ready = state[TOKENS] + (u - state[AT]) * refill_per_s
    if ready > size:
        ready = size
    state[AT] = u
    if ready >= 1.0:
        state[TOKENS] = ready - 1.0
        return True
    state[TOKENS] = ready
    return False


def lifetime_cut(b, a, v, hold, lifetime_s):
    """Which attempts a sandbox lifetime of ``lifetime_s`` kills (holds longer than it), cutting their
    phases in place where the lifetime falls (build, then agent, then verifier) and their hold to it."""
    over = hold > lifetime_s
    for k in np.flatnonzero(over):
        if b[k] >= lifetime_s:
            b[k] = lifetime_s
            a[k] = 0.0
            v[k] = 0.0
        elif b[k] + a[k] >= lifetime_s:
            a[k] = lifetime_s - b[k]
            v[k] = 0.0
        else:
            v[k] = lifetime_s - b[k] - a[k]
        hold[k] = lifetime_s
    return over
