"""The search: for each GPU option, bisect replicas and cap instead of simulating a grid.

For one option (GPU type, GPUs per replica, caching, offload):

1. throughput is monotone in GPUs, so bisect the fewest replicas that meet the target at the
   largest cap, as long as that cap evicts nothing (then nothing fewer can meet it at any cap);
   at a count whose largest cap evicts, stop bisecting and search every count from there;
2. for each replica count from there up, bisect the smallest cap that meets it, but only below
   the cache limit (the largest cap whose live prefixes fit: no eviction), where throughput is
   monotone in cap; above it evictions can make more sandboxes slower, so scan upward;
3. prune: a replica count whose GPUs plus the smallest fleet already cost more than the best
   found is not simulated, nor any larger count; once the smallest cap meets the target, more
   GPUs cannot be cheaper. The smallest feasible cap never grows with GPUs, so it bounds the next
   bisection.

Options advance in lockstep, one batch of candidates per step on the sweep backend, so the
best-so-far (and with it every pruning decision) is the same on every backend.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field

from sandbox_fleet.optimize.evaluate import Evaluation, Evaluator
from sandbox_fleet.optimize.space import Option, PricedNodes, cheapest_fleet


@dataclass
class Priced:
    option: Option
    replicas: int
    cap: int
    result: Evaluation
    usd_per_h: float
    fleet: tuple  # cheapest_fleet(...) output
    meets: bool

    @property
    def gpus(self) -> int:
        return self.replicas * self.option.gpus_per_replica

    def key(self, order: dict[Option, int]) -> tuple:
        """Cheapest first; ties go to fewer GPUs, a smaller cap, then the option listed first."""
        return (round(self.usd_per_h, 6), self.gpus, self.cap, order[self.option])


@dataclass
class Space:
    caps: list[int]
    max_replicas: int
    nodes: list[PricedNodes]
    options: list[Option]
    pruned: dict[str, int] = field(default_factory=dict)


def price(ev: Evaluator, space: Space, opt: Option, r: int, cap: int, res: Evaluation) -> Priced:
    fleet = cheapest_fleet(cap, res.rework_share, space.nodes)
    usd = fleet[0] + r * opt.gpus_per_replica * opt.usd_per_gpu_h
    return Priced(opt, r, cap, res, usd, fleet, ev.meets(res))


def lower_bound(space: Space, opt: Option, r: int, cap: int) -> float:
    """What (opt, r, cap) costs at least before it is simulated (spot priced without re-runs)."""
    return cheapest_fleet(cap, None, space.nodes)[0] + r * opt.gpus_per_replica * opt.usd_per_gpu_h


class Search:
    def __init__(self, ev: Evaluator, space: Space):
        self.ev, self.space = ev, space
        self.order = {o: i for i, o in enumerate(space.options)}
        self.best: Priced | None = None
        self.points: dict[tuple, Priced] = {}

    def _bump(self, why: str, n: int = 1) -> None:
        self.space.pruned[why] = self.space.pruned.get(why, 0) + n

    def _record(self, opt: Option, r: int, cap: int) -> Priced:
        res = self.ev.searched((opt, r, cap))
        p = self.points.get((opt, r, cap)) or price(self.ev, self.space, opt, r, cap, res)
        self.points[(opt, r, cap)] = p
        if p.meets and (self.best is None or p.key(self.order) < self.best.key(self.order)):
            self.best = p
        return p

    def _too_dear(self, opt: Option, r: int, cap: int) -> bool:
        return self.best is not None and lower_bound(self.space, opt, r, cap) > self.best.usd_per_h

    def option(self, opt: Option) -> Generator[list, None, None]:
        """One option's search; yields the points it needs simulated next."""
        caps, top_r = self.space.caps, self.space.max_replicas
        top = len(caps) - 1
        yield [(opt, top_r, caps[top])]
        if not self._record(opt, top_r, caps[top]).meets:
            self._bump("options_infeasible_at_bounds")
            return
        lo, hi = 1, top_r
        while lo < hi:  # fewest replicas meeting the target at the largest cap
            mid = (lo + hi) // 2
            yield [(opt, mid, caps[top])]
            q = self._record(opt, mid, caps[top])
            if q.meets:
                hi = mid
            elif q.result.evicted_gb == 0:
                lo = mid + 1  # below the cache limit the largest cap is the most productive: mid is too few
            else:
                break  # evicting: a smaller cap might still meet it with mid replicas; search each count from lo
        limit_hi = top  # the smallest feasible cap so far bounds the next replica count's search
        for r in range(lo, top_r + 1):
            if self._too_dear(opt, r, caps[0]):
                self._bump("replica_counts_priced_out", top_r - r + 1)
                return
            k = yield from self._smallest_cap(opt, r, limit_hi)
            if k is None:
                continue
            limit_hi = k
            if k == 0:  # the smallest cap already meets it: more GPUs only cost more
                self._bump("replica_counts_priced_out", top_r - r)
                return

    def _cache_limit(self, opt: Option, r: int, hi: int) -> Generator[list, None, int]:
        """Largest cap index <= hi whose run evicts nothing (-1: even the smallest evicts)."""
        caps = self.space.caps
        yield [(opt, r, caps[hi])]
        if self._record(opt, r, caps[hi]).result.evicted_gb == 0 or not opt.caching:
            return hi
        lo, h = -1, hi  # evicted at h; find the last index without eviction
        while h - lo > 1:
            mid = (lo + h) // 2
            yield [(opt, r, caps[mid])]
            if self._record(opt, r, caps[mid]).result.evicted_gb == 0:
                lo = mid
            else:
                h = mid
        return lo

    def _smallest_cap(self, opt: Option, r: int, hi: int) -> Generator[list, None, int | None]:
        caps = self.space.caps
        limit = yield from self._cache_limit(opt, r, hi)
        if limit >= 0 and self._record(opt, r, caps[limit]).meets:
            lo, h = -1, limit  # meets at h; bisect the first that meets
            while h - lo > 1:
                mid = (lo + h) // 2
                yield [(opt, r, caps[mid])]
                if self._record(opt, r, caps[mid]).meets:
                    h = mid
                else:
                    lo = mid
            return h
        for k in range(limit + 1, hi + 1):  # past the cache limit: not monotone, scan upward
            if self._too_dear(opt, r, caps[k]):
                self._bump("caps_priced_out", hi - k + 1)
                return None
            yield [(opt, r, caps[k])]
            if self._record(opt, r, caps[k]).meets:
                return k
        return None

    def run(self) -> Priced | None:
        gens = {i: self.option(o) for i, o in enumerate(self.space.options)}
        want = {}
        for i, g in list(gens.items()):
            try:
                want[i] = next(g)
            except StopIteration:
                pass
        while want:
            self.ev.run([p for i in sorted(want) for p in want[i]])
            for i in sorted(want):
                for p in want[i]:
                    self._record(*p)
            nxt = {}
            for i in sorted(want):
                try:
                    nxt[i] = gens[i].send(None)
                except StopIteration:
                    pass
            want = nxt
        return self.best


def frontier(points: list[Priced], step_mode: bool) -> list[Priced]:
    """Pareto: by rising $/h, each point strictly better (more passing/h, or a shorter step) than all cheaper."""
    out: list[Priced] = []
    for p in sorted(points, key=lambda q: (round(q.usd_per_h, 4), -q.result.passing_per_hour, q.gpus, q.cap)):
        if step_mode:
            s = p.result.step_s
            last = out[-1].result.step_s if out else None  # every point kept has a step
            if s is not None and (last is None or s < last):
                out.append(p)
        elif not out or p.result.passing_per_hour > out[-1].result.passing_per_hour:
            out.append(p)
    return out
