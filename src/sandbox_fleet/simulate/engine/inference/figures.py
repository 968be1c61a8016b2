"""What a pool-served run reports: the ``inference`` block and ``hold_stretch``.

Definitions (all over the whole run, ``T`` = simulated time from 0 to the end):

- ``utilisation``: share of replica-time a replica has a call in service.
- ``mean_batch``: time-average sequences in service over the time a replica is busy.
- ``queue_wait_s``: per call, waiting for a seat (``max_num_seqs``); ``ttft_s``: per call,
  seat wait + prefill (arrival to first token).
- ``cache_hit_rate``: cached input tokens / input tokens (``measure``'s ``cached_fraction``).
- ``evicted_gb``: GiB of prefixes pushed out of GPU memory (to the host tier or dropped).
- ``prefill_tokens_computed``: input tokens the replicas prefilled (input - cached).
- ``littles_law``: time-average calls in the pool against calls / T x mean time in pool (a call
  withdrawn before it ended, its attempt ended early, counts with its time in the pool; ``calls``
  and the token counts are the calls served).
- ``hold_stretch``: mean hold / mean hold of the same draws served alone on an idle
  replica (same caching; no queueing, no sharing; the same agent cuts: an unloaded loop longer than
  its drawn timeout or agent exception is cut there): >= 1, from the same run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sandbox_fleet.simulate.engine.entities import BUILD

GIB = 1024**3


@dataclass
class ServedRun:
    """Per-call and per-replica records of the pool, and per-rollout tokens."""

    replicas: int
    gpus_per_replica: int
    wait_s: np.ndarray
    ttft_s: np.ndarray
    sojourn_s: np.ndarray
    area_busy: np.ndarray  # per replica
    area_n: np.ndarray
    area_sys: np.ndarray
    input_tokens: int
    cached_tokens: int
    decode_tokens: int
    evicted_bytes: float
    r_input: np.ndarray  # per rollout
    r_cached: np.ndarray
    r_output: np.ndarray
    r_turns: np.ndarray
    unloaded_hold_s: np.ndarray  # per rollout: the same draws served alone
    prefill_tok_s: float = 0.0  # per replica, at full batching (for ``work_s``)
    decode_tok_s: float = 0.0
    #: per call withdrawn (its attempt ended before it did: a retry, an eviction, a node preemption), its
    #: time in the pool; the token counts above are the served calls'
    withdrawn_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    calls: int = -1  # calls sent to the pool: served (``sojourn_s``) + withdrawn (-1: not counted)

    def work_s(self) -> float:
        """Replica-seconds of work the calls took at full batching: the tokens the replicas prefilled
        (after the cache they had) at ``prefill_tok_s`` plus the decoded ones at ``decode_tok_s`` (a full
        batch amortises the iteration floor). A lower bound of the busy time the pool needed."""
        return (self.input_tokens - self.cached_tokens) / self.prefill_tok_s + self.decode_tokens / self.decode_tok_s


def unloaded_holds(prep) -> np.ndarray:
    """Each rollout's hold if every call were served alone on an idle replica.

    A call alone prefills at ``prefill_tok_s`` and decodes at ``1 / (1 + b)`` work units
    per second; it prefills only its new tokens when the pool caches and its prefix fits
    one replica's cache, else its whole context.
    """
    cfg, td = prep.inference, prep.turn_draws
    off = td.off
    grow = td.new_tokens + td.decode_tokens
    csum = np.cumsum(grow) - grow  # context before each turn, run-wide
    ctx = csum - np.repeat(csum[off], td.turns) if grow.size else grow
    fits = cfg.caching & (True if cfg.kv_cache_bytes is None else ctx * cfg.kv_bytes_per_token <= cfg.kv_cache_bytes)
    computed = np.where(fits, td.new_tokens, ctx + td.new_tokens)
    call_s = computed / cfg.prefill_tok_s + td.decode_tokens / cfg.decode_tok_s * (1.0 + cfg.base_units)
    agent = np.add.reduceat(call_s + td.command_s, off) if grow.size else np.zeros(td.turns.size)
    agent = np.where(prep.phase == BUILD, 0.0, agent)
    over = agent > prep.agent  # (served: ``prep.agent`` is where a timeout or an agent exception cuts)
    if not over.any():
        return prep.build + agent + prep.verify
    timeout = np.array([prep.timeout_of(r) for r in range(prep.n)])
    failed = over & (prep.agent < timeout)  # an exception: no verifier
    return prep.build + np.where(over, prep.agent, agent) + np.where(failed, 0.0, prep.verify)


def _q(v: np.ndarray, keys: tuple[str, ...]) -> dict:
    out: dict[str, float | None] = {}
    for k in keys:
        if v.size == 0:
            out[k] = None
        elif k == "mean":
            out[k] = float(v.mean())
        else:
            out[k] = float(np.percentile(v, int(k[1:])))
    return out


def inference_figures(sr: ServedRun, end_s: float, hold_s: np.ndarray, rollout: np.ndarray) -> dict:
    """The ``inference`` summary block plus ``hold_stretch`` (``hold_s``/``rollout``: the
    attempts that held a sandbox and their rollout ids)."""
    busy = float(sr.area_busy.sum())
    calls = int(sr.sojourn_s.size)
    in_pool = sr.sojourn_s if not sr.withdrawn_s.size else np.concatenate([sr.sojourn_s, sr.withdrawn_s])
    unloaded = sr.unloaded_hold_s[rollout]
    return {
        "inference": {
            "replicas": sr.replicas,
            "gpus": sr.replicas * sr.gpus_per_replica,
            "calls": calls,
            "utilisation": busy / (sr.replicas * end_s) if end_s > 0 else None,
            "mean_batch": float(sr.area_n.sum()) / busy if busy > 0 else None,
            "queue_wait_s": _q(sr.wait_s, ("mean", "p99")),
            "ttft_s": _q(sr.ttft_s, ("p50", "p99")),
            "cache_hit_rate": sr.cached_tokens / sr.input_tokens if sr.input_tokens else None,
            "evicted_gb": sr.evicted_bytes / GIB,
            "input_tokens": sr.input_tokens,
            "prefill_tokens_computed": sr.input_tokens - sr.cached_tokens,
            "decode_tokens": sr.decode_tokens,
            "littles_law": {
                "mean_in_pool": float(sr.area_sys.sum()) / end_s if end_s > 0 else None,
                "arrival_rate_per_s": in_pool.size / end_s if end_s > 0 else None,
                "mean_time_in_pool_s": float(in_pool.mean()) if in_pool.size else None,
            },
        },
        "hold_stretch": float(hold_s.mean() / unloaded.mean()) if hold_s.size and unloaded.mean() > 0 else None,
    }
