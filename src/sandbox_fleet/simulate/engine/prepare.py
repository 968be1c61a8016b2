"""Everything a run needs before its clock starts: checked inputs, random streams,
first attempts drawn in one block, open arrivals merged into one sorted stream."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine import node_fleet
from sandbox_fleet.simulate.engine.entities import EXCEPTION, LIFETIME, PHASE_NAMES, Episode, Fleet
from sandbox_fleet.simulate.engine.episode import draw_attempts
from sandbox_fleet.simulate.engine.limits_rules import lifetime_cut
from sandbox_fleet.simulate.engine.policies import CEILING, cut_at_ceiling, cut_one, problems
from sandbox_fleet.simulate.engine.workloads import OPEN, AsyncRL, Workload

if TYPE_CHECKING:
    from sandbox_fleet.simulate.engine.images import ImageCache, ImageRun, NodeImages
    from sandbox_fleet.simulate.engine.inference.config import Inference
    from sandbox_fleet.simulate.engine.inference.turn_draws import TurnDraws

# Random-stream tags: one independent stream per subsystem (and per workload / pool).
ARRIVALS, ATTEMPTS, RETRIES, PREEMPTIONS, IMAGES, GROUPS = 1, 2, 3, 4, 5, 6
NODE_TRACE = 37  # the node a reclaim trace's row takes (``node_fleet.trace_fields``), a stream a fleet pool


def stream(seed: int, subsystem: int, index: int) -> np.random.Generator:
    """The Generator of one subsystem; adding a workload never shifts another's draws."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(subsystem, index)))


@dataclass
class Prepared:
    seed: int
    pools: list[Fleet]
    workloads: list[Workload]
    episodes: list[Episode]
    counts: list[int]
    offsets: np.ndarray  # rollout ids of workload w: offsets[w] .. offsets[w+1]-1
    n: int
    r_label: np.ndarray
    # First attempt of rollout r (NumPy). The pure-Python loops read lists (``hold``,
    # ``may_retry``, ``arr_t``, ``arr_r``, ``r_work``, ``r_pool``): those are built on first use,
    # so a run whose loop is compiled never pays for them.
    build: np.ndarray
    agent: np.ndarray
    verify: np.ndarray
    plan: np.ndarray  # int8 state if undisturbed
    phase: np.ndarray  # int8 exception phase
    hold_np: np.ndarray  # (build + agent) + verify: both loops add it to the start time
    agent_raw: np.ndarray  # first attempt's agent / verifier durations before any exception cut:
    verify_raw: np.ndarray  # what a retry re-runs
    may_retry_np: np.ndarray  # bool: ends in a retryable exception with retry budget left
    any_retry: bool  # some first attempt may retry
    arr_t_np: np.ndarray  # open arrivals, sorted; ties: lower workload, then release order
    arr_ids: np.ndarray | range  # their rollout ids, int64 (a range when they arrive in id order)
    retry_pos: dict[int, int]  # rollout -> first row of its pre-drawn retries in retry_block
    retry_block: list[tuple[float, float, float, float, int, int]]
    max_retries: list[int]
    retry_on: list[frozenset[int]]
    at_ceiling: list[bool]  # per workload: on a timeout-ceiling pool (holds reclaimed at the timeout)
    arr_in_order: bool = False  # arr_ids is 0, 1, ..., n-1: one open workload, nothing else
    inference: Inference | None = None  # model calls served by a pool
    turn_draws: TurnDraws | None = None  # every rollout's, when served
    images: ImageRun | None = None  # the image cache's pre-pass, with ``[images]``
    turns_total: float = 0.0  # turns drawn for the first attempts (0 without turns or a substrate's turns_mean)
    node_images: NodeImages | None = None  # ``[images]`` on pools made of nodes: the first attempts' misses

    @cached_property
    def hold(self) -> list[float]:
        return self.hold_np.tolist()

    @cached_property
    def may_retry(self) -> list[bool]:
        return self.may_retry_np.tolist() if self.any_retry else [False] * self.n

    @cached_property
    def arr_t(self) -> list[float]:
        return self.arr_t_np.tolist()

    @cached_property
    def arr_r(self) -> list[int] | range:
        return self.arr_ids if isinstance(self.arr_ids, range) else self.arr_ids.tolist()

    @cached_property
    def r_work(self) -> list[int]:
        """Workload of each rollout."""
        return _repeat_list(range(len(self.workloads)), self.counts)

    @cached_property
    def r_pool(self) -> list[int]:
        """Pool of each rollout."""
        return _repeat_list([wl.pool for wl in self.workloads], self.counts)

    def retry_attempt(self, r: int, k: int) -> tuple[float, float, float, float, int, int]:
        """Attempt ``k >= 1`` of rollout ``r``: (build, agent, verify, hold, state, phase).

        The same task re-run (same model, agent and verifier durations; new build
        cache hit and exception draws), or with ``retry.redraw`` a fresh attempt. The
        draw depends only on (seed, r, k), never on the order the loop asks, so both loops agree:
        rollouts whose first attempt may retry have all their retries drawn in one
        block up front; any other retry (after a preemption, or past the budget after
        evictions by a priority pool) gets its own stream. On a timeout-ceiling pool the
        attempt is reclaimed at its ceiling.
        """
        w = self.r_work[r]
        pos = self.retry_pos.get(r)
        if pos is not None and k <= self.max_retries[w]:
            return self.retry_block[pos + k - 1]  # (cut at the ceiling when the block was drawn)
        if self.at_ceiling[w]:
            return cut_one(self._redraw(r, k), self.timeout_of(r))
        return self._redraw(r, k)

    def _redraw(self, r: int, k: int) -> tuple[float, float, float, float, int, int]:
        w = self.r_work[r]
        lab = None if self.r_label[r] < 0 else self.r_label[r : r + 1]
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(RETRIES, w, r, k)))
        fixed = None if self.workloads[w].retry.redraw else (self.agent_raw[r : r + 1], self.verify_raw[r : r + 1])
        att, _ = draw_attempts(self.episodes[w], rng, np.array([r - int(self.offsets[w])]), lab, fixed)
        lim = self.pools[self.workloads[w].pool].limits
        if lim is not None and lim.lifetime_s is not None:
            kill_at_lifetime(att.build_s, att.agent_s, att.verify_s, att.state, att.phase, lim.lifetime_s)
        b, a, v = float(att.build_s[0]), float(att.agent_s[0]), float(att.verify_s[0])
        return b, a, v, b + a + v, int(att.state[0]), int(att.phase[0])

    def retryable(self, r: int, state: int, phase: int, attempt: int) -> bool:
        w = self.r_work[r]
        return state == EXCEPTION and phase in self.retry_on[w] and attempt < self.max_retries[w]

    def timeout_of(self, r: int) -> float:
        t = self.episodes[self.r_work[r]].agent_timeout_s
        if t is None:
            return math.inf
        if isinstance(t, np.ndarray):
            return float(t[r - int(self.offsets[self.r_work[r]])])
        return float(t)

    def node_reclaims(self, p: int) -> NodeReclaims:
        """Pool ``p``'s node preemptions, drawn from their own stream (both loops draw here)."""
        return NodeReclaims(self.seed, p, self.pools[p])


class NodeReclaims:
    """When a preemptible pool's next node fails and which node: one stream per pool, drawn in the
    order the loop asks (a gap at the start, then at each preemption the node, then the next gap),
    so the event loop and the admission kernel draw the same numbers."""

    def __init__(self, seed: int, p: int, pool: Fleet):
        self.nodes = -(-pool.cap // pool.slots_per_node) if pool.cap else 0
        rate = pool.preempt_rate_per_node_s
        self.mean_gap_s = 1.0 / (rate * self.nodes) if rate > 0 and self.nodes else math.inf
        self.rng = stream(seed, PREEMPTIONS, p)

    def gap_s(self) -> float:
        """Time to the next node failure: the pool's nodes fail as one Poisson stream."""
        return float(self.rng.exponential(self.mean_gap_s))

    def node(self) -> int:
        """The node that fails (uniform)."""
        return int(self.rng.integers(self.nodes))

    def node_life_s(self, rate_per_s: float) -> float:
        """A pool made of nodes: a node's time from launch to its reclaim (Poisson per node, memoryless),
        drawn at its launch from the pool's stream."""
        return float(self.rng.exponential(1.0 / rate_per_s))


def prepare(fleet: Fleet | Sequence[Fleet], workloads: list[Workload], seed: int, inference=None) -> Prepared:
    pools = [fleet] if isinstance(fleet, Fleet) else list(fleet)
    workloads = list(workloads)
    if not pools or not workloads:
        raise InputError("a simulation needs at least one fleet and one workload")
    for w, wl in enumerate(workloads):
        if wl.name is None:
            wl.name = f"w{w}"
        if not 0 <= wl.pool < len(pools):
            raise InputError(f"workload {wl.name}: pool {wl.pool} does not exist ({len(pools)} pool(s))")
        if isinstance(wl, AsyncRL) and wl.dynamic is not None:
            wl.draw_groups(stream(seed, GROUPS, w))  # dynamic sampling: how many rollouts each step releases
        wl.check_arrays()
    node_fleet.check(pools, workloads)
    names = [wl.name for wl in workloads]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(f"workload name {dup!r} is used twice (names key the telemetry ids)")
    for where, i, key, msg in problems(pools, workloads, inference is not None):
        what = f"fleet {pools[i].name}" if where == "fleet" else f"workload {workloads[i].name}"
        raise InputError(f"{what}: {key}: {msg}")
    from sandbox_fleet.simulate.engine.fifo import limits_refusal  # (fifo reads Prepared)

    why = limits_refusal(pools, inference)
    if why is not None:
        raise InputError(why)
    counts = [wl.count for wl in workloads]
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    episodes = [wl.resolved_episode() for wl in workloads]
    at_ceiling = [pools[wl.pool].admission == CEILING and ep.agent_timeout_s is not None
                  for wl, ep in zip(workloads, episodes)]

    lifetimes = [lim.lifetime_s if (lim := pools[wl.pool].limits) is not None else None for wl in workloads]
    cache = _image_cache(episodes)
    # Arrivals have their own streams, so when they are drawn changes no value. The image cache's
    # pre-pass reads the queue order: with one they come first; without, after the attempts, so the
    # attempts' zero arrays get untouched pages rather than the arrival draw's freed (dirty) ones.
    arrivals = _arrivals(workloads, offsets, seed) if cache is not None else None
    hits: np.ndarray | None = None
    ref: list | None = None
    node_image: np.ndarray | None = None  # [images] on pools made of nodes: each rollout's image
    from sandbox_fleet.simulate.engine.images import on_nodes

    if cache is not None and on_nodes(pools, workloads):
        from sandbox_fleet.simulate.engine.images import draw_images

        node_image, matched = draw_images(cache, workloads, offsets, lambda w: stream(seed, IMAGES, w))
    elif cache is not None:
        from sandbox_fleet.simulate.engine.images import assign

        assert arrivals is not None  # drawn above when there is a cache
        hits, *ref = assign(cache, pools, workloads, offsets, arrivals[1], lambda w: stream(seed, IMAGES, w), OPEN)

    def first_attempts(w: int, ep: Episode, img: tuple):
        """Workload ``w``'s first attempts (``img``: each build's hit and image, or Nones), cut at the ceiling
        and the lifetime."""
        att, lab = draw_attempts(ep, stream(seed, ATTEMPTS, w), np.arange(counts[w]), hits=img[0], images=img[1])
        if at_ceiling[w]:
            assert ep.agent_timeout_s is not None  # at_ceiling: the workload has a timeout
            h = att.build_s + att.agent_s + att.verify_s
            cut_at_ceiling(att.build_s, att.agent_s, att.verify_s, h, att.state, att.phase,
                           _per_rollout(ep.agent_timeout_s, counts[w]))
        if (life_s := lifetimes[w]) is not None:
            if att.agent_raw is att.agent_s or att.verify_raw is att.verify_s:  # a retry re-runs the uncut task
                att.agent_raw, att.verify_raw = att.agent_s.copy(), att.verify_s.copy()
            kill_at_lifetime(att.build_s, att.agent_s, att.verify_s, att.state, att.phase, life_s)
        return att, lab

    parts: dict[str, list] = {k: [] for k in ("b", "a", "v", "s", "p", "l", "d", "ar", "vr", "wm", "ms", "miss")}
    turns_total = 0.0
    for w, ep in enumerate(episodes):
        lo, hi = int(offsets[w]), int(offsets[w + 1])
        img = (None, None) if hits is None or ref is None else (hits[lo:hi], _images_of(ref, lo, hi))
        if node_image is not None:  # drawn warm here, and missing below (the kernel takes one at the start)
            img = (np.ones(hi - lo, dtype=bool), node_image[lo:hi])
            miss, _ = first_attempts(w, ep, (np.zeros(hi - lo, dtype=bool), node_image[lo:hi]))
            parts["miss"].append(miss)
        att, lab = first_attempts(w, ep, img)
        turns_total += att.turns_total
        if cache is not None:
            parts["wm"].append(att.warm_s)
            parts["ms"].append(att.miss_s)
        parts["d"].append(att.turn_draws)
        for k, v in zip("bavsp", (att.build_s, att.agent_s, att.verify_s, att.state, att.phase)):
            parts[k].append(v)
        parts["ar"].append(att.agent_raw)
        parts["vr"].append(att.verify_raw)
        parts["l"].append(lab if lab is not None else np.full(counts[w], -1, dtype=np.int64))

    arr_t_np, arr_ids = arrivals if arrivals is not None else _arrivals(workloads, offsets, seed)
    arr_in_order = len(workloads) == 1 and isinstance(arr_ids, range)
    build = _join(parts["b"], float)
    agent = _join(parts["a"], float)
    verify = _join(parts["v"], float)
    plan = _join(parts["s"], np.int8)
    phase = _join(parts["p"], np.int8)
    hold = hold_of(build, agent, verify, all(ep.build is None and ep.substrate is None for ep in episodes),
                   all(ep.verifier is None for ep in episodes))
    images = None
    if cache is not None and hits is not None and ref is not None:
        images = _image_run(cache, hits, ref, _join(parts["wm"], float), _join(parts["ms"], float))
    node_run = None
    if cache is not None and node_image is not None:
        node_run = _node_images(cache, node_image, matched, parts["miss"], _join(parts["wm"], float),
                                _join(parts["ms"], float), all(ep.verifier is None for ep in episodes))
    agent_raw = _join(parts["ar"], float)
    verify_raw = _join(parts["vr"], float)
    # Retryable phases per workload as a (workload x phase) table, then one lookup per rollout.
    table = np.zeros((len(workloads), len(PHASE_NAMES)), dtype=bool)
    for w, wl in enumerate(workloads):
        if wl.retry.max_retries > 0:
            table[w, list(wl.retry.phase_codes)] = True
    retrying = table.any(axis=1)
    if retrying.any():
        r_work = np.repeat(np.arange(len(workloads), dtype=np.int64), counts)
        may_retry = (plan == EXCEPTION) & table[r_work, phase]
    else:
        may_retry = np.zeros(plan.size, dtype=bool)

    # Retries of rollouts whose first attempt is retryable: max_retries attempts each.
    retry_pos: dict[int, int] = {}
    retry_block: list = []
    r_label = _join(parts["l"], np.int64)
    for w, ep in enumerate(episodes):
        m = workloads[w].retry.max_retries
        ids = np.flatnonzero(may_retry[offsets[w] : offsets[w + 1]])
        if m == 0 or ids.size == 0:
            continue
        idx = np.repeat(ids, m)
        lab = r_label[offsets[w] + idx]
        rows = offsets[w] + idx
        fixed = None if workloads[w].retry.redraw else (agent_raw[rows], verify_raw[rows])
        att, _ = draw_attempts(ep, stream(seed, RETRIES, w), idx, lab if np.all(lab >= 0) else None, fixed)
        h = att.hold_s
        if at_ceiling[w]:
            assert ep.agent_timeout_s is not None  # at_ceiling: the workload has a timeout
            timeout_s = ep.agent_timeout_s[idx] if isinstance(ep.agent_timeout_s, np.ndarray) else ep.agent_timeout_s
            h = h.copy()
            cut_at_ceiling(att.build_s, att.agent_s, att.verify_s, h, att.state, att.phase, timeout_s)
        if (life_s := lifetimes[w]) is not None:
            h = kill_at_lifetime(att.build_s, att.agent_s, att.verify_s, att.state, att.phase, life_s, h)
        base = len(retry_block)
        retry_block.extend(zip(att.build_s.tolist(), att.agent_s.tolist(), att.verify_s.tolist(), h.tolist(),
                               att.state.astype(int).tolist(), att.phase.astype(int).tolist()))
        retry_pos.update(zip((ids + offsets[w]).tolist(), range(base, base + idx.size, m)))
    return Prepared(
        seed=seed,
        pools=pools,
        workloads=workloads,
        episodes=episodes,
        counts=counts,
        offsets=offsets,
        n=int(offsets[-1]),
        r_label=r_label,
        build=build,
        agent=agent,
        verify=verify,
        plan=plan,
        phase=phase,
        hold_np=hold,
        agent_raw=agent_raw,
        verify_raw=verify_raw,
        may_retry_np=may_retry,
        any_retry=bool(retrying.any()) and bool(may_retry.any()),  # (not reading an all-zero mask)
        arr_t_np=arr_t_np,
        arr_ids=arr_ids,
        arr_in_order=arr_in_order,
        retry_pos=retry_pos,
        retry_block=retry_block,
        max_retries=[wl.retry.max_retries for wl in workloads],
        retry_on=[wl.retry.phase_codes for wl in workloads],
        at_ceiling=at_ceiling,
        inference=inference,
        turn_draws=_served(inference, workloads, episodes, pools, parts["d"]),
        images=images,
        turns_total=turns_total,
        node_images=node_run,
    )


def _arrivals(workloads: list[Workload], offsets: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray | range]:
    """Every open workload's arrivals merged into one sorted stream, and the rollout id of each."""
    times, id_parts = [], []
    for w, wl in enumerate(workloads):
        if wl.kind != OPEN:
            continue
        times.append(np.asarray(wl.arrivals(stream(seed, ARRIVALS, w)), dtype=float))  # a fresh array each
        id_parts.append(np.arange(offsets[w], offsets[w + 1], dtype=np.int64))
    return _merge_arrivals(times, id_parts, offsets)


def _image_cache(episodes: list[Episode]) -> ImageCache | None:
    """The one image cache the run's builds share, or None (a different one per workload is refused)."""
    found = [ep.build.images if ep.build is not None else None for ep in episodes]
    caches = {id(c): c for c in found if c is not None}
    if caches and (len(caches) > 1 or any(c is None for c in found)):
        raise InputError("[images]: every workload must share one image cache (one [images] table per scenario)")
    return next(iter(caches.values()), None)


def _images_of(ref: list, lo: int, hi: int) -> np.ndarray:
    """Rollouts ``lo .. hi-1``'s images, from the pre-pass's reference order."""
    order, image = ref[0], ref[1]
    out = np.zeros(hi - lo, dtype=np.int64)
    sel = (order >= lo) & (order < hi)
    out[order[sel] - lo] = image[sel]
    return out


def _node_images(cache: ImageCache, image: np.ndarray, matched: int, miss: list, warm_s: np.ndarray,
                 miss_s: np.ndarray, no_verifier: bool):
    """The first attempts drawn missing their image, for the kernel to take at a miss (``images.NodeImages``)."""
    from sandbox_fleet.simulate.engine.images import NodeImages

    b, a, v = (_join([getattr(m, k) for m in miss], float) for k in ("build_s", "agent_s", "verify_s"))
    f = np.column_stack([b, a, v, hold_of(b, a, v, False, no_verifier)])
    i = np.column_stack([_join([m.state for m in miss], np.int64), _join([m.phase for m in miss], np.int64)])
    return NodeImages(cache, image, f, i, warm_s, miss_s, matched)


def _image_run(cache: ImageCache, hits: np.ndarray, ref: list, warm: np.ndarray, miss: np.ndarray) -> ImageRun:
    """The pre-pass with each reference's two build lengths, and the what-if pre-pulls on the same draws."""
    from sandbox_fleet.simulate.engine.images import ImageRun, lru_hits

    order, image, node, nodes, matched = ref
    run = ImageRun(cache, nodes, order, image, node, hits[order], warm[order], miss[order], matched)
    cat = cache.catalog
    for k in cache.whatif_prepull:
        run.whatif[k] = lru_hits(image, node, cat.size_mb, cache.cache_mb, k)
    return run


def kill_at_lifetime(b: np.ndarray, a: np.ndarray, v: np.ndarray, state: np.ndarray, phase: np.ndarray,
                     lifetime_s: float, hold: np.ndarray | None = None) -> np.ndarray:
    """The sandbox lifetime on drawn attempts, in place (``limits_rules.lifetime_cut``): a hold longer
    than it ends there, killed (an exception of phase ``lifetime``, which the retry rules may retry).
    Returns the holds (``hold`` cut in place, or ``b + a + v`` cut)."""
    h = b + a + v if hold is None else hold
    killed = lifetime_cut(b, a, v, h, lifetime_s)
    state[killed] = EXCEPTION
    phase[killed] = LIFETIME
    return h


def hold_of(build: np.ndarray, agent: np.ndarray, verify: np.ndarray, zero_build: bool, zero_verify: bool) -> np.ndarray:
    """``(build + agent) + verify``, bit for bit, without reading a phase that is all zeros.

    ``zero_build`` / ``zero_verify``: that phase never runs (no build, no verifier in any episode),
    so its array is still the allocator's untouched zero pages. Adding +0.0 instead leaves every
    value as it is except -0.0, which becomes +0.0 exactly as adding the zeros would.
    """
    hold = np.add(agent, 0.0) if zero_build else build + agent
    if not zero_verify:
        hold += verify  # in place: no second temporary
    elif not zero_build:
        hold += 0.0  # (a + 0.0) + 0.0 is a + 0.0: only needed once
    return hold


def _per_rollout(timeout_s: float | np.ndarray, n: int) -> float | np.ndarray:
    """A workload's agent timeout for its first ``n`` rollouts (a number, or an array cut to ``n``)."""
    return timeout_s[:n] if isinstance(timeout_s, np.ndarray) else float(timeout_s)


def _join(arrays: list[np.ndarray], dtype) -> np.ndarray:
    """The workloads' arrays as one, of ``dtype``: one workload's own array when there is only
    one (freshly drawn and not kept elsewhere), else a concatenated copy."""
    out = arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
    return out.astype(dtype, copy=False)


def ids_index(ids: np.ndarray | list[int] | range) -> np.ndarray | slice:
    """Rollout ids (``arr_ids``) as a NumPy index: a slice when they are a range."""
    if isinstance(ids, range):
        return slice(ids.start, ids.stop)
    return np.asarray(ids, dtype=np.int64)


def _repeat_list(values, counts: list[int]) -> list[int]:
    """``values[w]`` repeated ``counts[w]`` times, as one list (faster than NumPy's repeat + tolist)."""
    out: list[int] = []
    for v, c in zip(values, counts):
        out += [v] * c
    return out


def _merge_arrivals(times: list[np.ndarray], ids: list[np.ndarray], offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray | range]:
    """Every open arrival in time order (a stable sort: ties keep workload, then release, order):
    the times, and the rollout ids (a range when one workload's stream is already in order)."""
    if not times:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    if len(times) == 1 and (times[0].size < 2 or bool(np.all(times[0][1:] >= times[0][:-1]))):
        # one stream already in order: the stable sort would leave it as it is
        return times[0], range(int(ids[0][0]), int(ids[0][0]) + ids[0].size) if ids[0].size else ids[0]
    t_all, id_all = np.concatenate(times), np.concatenate(ids)
    order = np.argsort(t_all, kind="stable")
    return t_all[order], id_all[order]


def _served(inference, workloads, episodes, pools, draws) -> TurnDraws | None:
    """Check a pool-served run and merge every workload's per-turn draws (or ``None``)."""
    served = [ep.turns is not None and ep.turns.served for ep in episodes]
    if inference is None:
        if any(served):
            w = served.index(True)
            raise InputError(f"workload {workloads[w].name}: turns without model_latency need an inference pool")
        return None
    from sandbox_fleet.simulate.engine.inference.turn_draws import TurnDraws

    for w, (wl, ep) in enumerate(zip(workloads, episodes)):
        if not served[w]:
            raise InputError(f"workload {wl.name}: with an inference pool every workload needs turns with "
                             "prefill_tokens and decode_tokens (and no model_latency)")
        if wl.retry.max_retries > 0 and wl.retry.redraw:  # a retry re-runs the rollout's drawn turns
            raise InputError(f"workload {wl.name}: key 'retry.redraw': a fresh draw of a retry's turns is not "
                             "simulated with an inference pool yet (a retry re-runs the same turns)")
        if ep.exception_p.get("agent", 0.0) > 0:
            raise InputError(f"workload {wl.name}: key 'exception_p.agent': a fixed-probability agent-phase "
                             "exception is not simulated with an inference pool yet (use exception_rate_per_s.agent)")
        if ep.agent_timeout_s is not None and pools[wl.pool].admission == CEILING:
            raise InputError(f"workload {wl.name}: key 'agent_timeout_s': a timeout-ceiling pool's reclaim of a "
                             "whole hold is not simulated with an inference pool yet")
    td = TurnDraws(*(np.concatenate([getattr(d, k) for d in draws])
                     for k in ("turns", "new_tokens", "decode_tokens", "command_s")))
    kv = inference.kv_cache_bytes
    if kv and td.turns.size:
        final = np.add.reduceat(td.new_tokens + td.decode_tokens, td.off) if td.new_tokens.size else np.zeros(1)
        one = float(final.mean()) * inference.kv_bytes_per_token
        if kv < one:
            raise InputError(f"inference kv_cache_gb {kv / 2**30:.3g} GiB is below one context "
                             f"(mean final context {final.mean():.0f} tokens = {one / 2**30:.3g} GiB)")
    return td
