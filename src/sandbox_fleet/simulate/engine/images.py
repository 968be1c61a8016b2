"""Images and a per-node layer cache: which builds hit warm, which pay the pull.

Each rollout's task names one image of a catalog (drawn by share, or the image of its task when
the workload replays tasks). Each node of a pool keeps an LRU cache of whole images by size
(``cache_mb``); the ``prepull`` most-shared images are resident on every node from t = 0, never
evicted and not counted against ``cache_mb``. A build whose image is on its node is warm (the
``[build] hit`` draw); a miss also pays the pull, ``size_mb / pull_mb_per_s`` (or draws
``[build] miss`` instead when no pull rate is given).

The simplification (docs/simulate.md): which node a build lands on is decided before the run.
A pool's first attempts are taken in the order they enter its queue, which under FIFO is the
order they start (open arrivals by time; an RL or closed workload's rollouts in release order),
and the k-th goes to node ``k mod nodes``: each node sees every ``nodes``-th build, so under
independent references each node's stream is an independent-reference stream of the same
popularities (the hit rate of a random placement). Retries build warm (the image was pulled for
the first attempt) and are not counted as references.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from sandbox_fleet.errors import InputError

#: a share total this close to 1 is 1 (shares written to a few decimals)
SHARE_TOLERANCE = 1e-6


@dataclass
class ImageCatalog:
    """Distinct images, most-shared first: their names, shares (sum 1) and sizes in MB."""

    names: tuple[str, ...]
    shares: np.ndarray
    size_mb: np.ndarray
    basis: str
    #: task id -> image index, when the images come from task bundles (rollouts naming a task use its image)
    by_task: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        k = len(self.names)
        if k < 1:
            raise InputError("an image catalog needs at least one image")
        if self.shares.shape != (k,) or self.size_mb.shape != (k,):
            raise InputError(f"an image catalog of {k} images needs {k} shares and {k} sizes")
        if not (np.all(np.isfinite(self.size_mb)) and np.all(self.size_mb > 0)):
            raise InputError("image sizes must be finite and > 0 MB")
        if np.any(self.shares < 0) or abs(float(self.shares.sum()) - 1.0) > SHARE_TOLERANCE:
            raise InputError(f"image shares must be >= 0 and sum to 1, got a sum of {float(self.shares.sum()):.6g}")
        # most-shared first (stable: ties keep the given order), so "the top K" is the first K
        order = np.argsort(-self.shares, kind="stable")
        if np.any(order != np.arange(k)):
            self.names = tuple(self.names[i] for i in order)
            self.shares, self.size_mb = self.shares[order], self.size_mb[order]
            inverse = np.empty(k, dtype=np.int64)
            inverse[order] = np.arange(k)
            self.by_task = {t: int(inverse[i]) for t, i in self.by_task.items()}


def zipf_shares(count: int, s: float) -> np.ndarray:
    """Shares of ``count`` images under a Zipf law of exponent ``s`` (0: uniform): p_i ~ 1 / i^s."""
    w = 1.0 / np.arange(1, count + 1, dtype=float) ** s
    return w / w.sum()


@dataclass
class ImageCache:
    """The scenario's ``[images]``: a catalog and each node's cache."""

    catalog: ImageCatalog
    cache_mb: float
    pull_mb_per_s: float | None = None
    prepull: int = 0
    #: pre-pull sizes to report the build time they would save on the same draws
    whatif_prepull: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        k = len(self.catalog.names)
        for what, v in (("prepull", self.prepull), *(("whatif_prepull", x) for x in self.whatif_prepull)):
            if not 0 <= v <= k:
                raise InputError(f"images {what} = {v}: expected 0..{k} (the catalog has {k} images)")
        if self.pull_mb_per_s is not None and not (self.pull_mb_per_s > 0 and math.isfinite(self.pull_mb_per_s)):
            raise InputError(f"images pull_mb_per_s must be a finite number > 0, got {self.pull_mb_per_s}")
        cached = self.catalog.size_mb[self.prepull:]  # pre-pulled images never take cache space
        if cached.size and not self.cache_mb >= float(cached.max()):
            big = int(np.argmax(cached)) + self.prepull
            raise InputError(f"images cache_mb = {self.cache_mb:g} MB is smaller than image "
                             f"{self.catalog.names[big]!r} ({float(cached.max()):g} MB): a node could never hold it")

    def pull_s(self) -> np.ndarray | None:
        """Seconds a miss adds to the warm build, per image (None: the ``[build] miss`` draw instead)."""
        return None if self.pull_mb_per_s is None else self.catalog.size_mb / self.pull_mb_per_s


def lru_hits(images: np.ndarray, nodes: np.ndarray, size_mb: np.ndarray, cache_mb: float, pinned: int = 0) -> np.ndarray:
    """Per reference (in order): whether its image was on its node.

    ``images``: the image index of each reference; ``nodes``: the node it builds on. Each node keeps
    an LRU cache of whole images by size; images ``0 .. pinned-1`` are resident everywhere (hits,
    outside the cache). A miss loads the image, evicting least recently used ones until it fits.
    """
    from sandbox_fleet.simulate.engine.fast._node_rules import cache_touch, cache_width

    sizes = np.asarray(size_mb, dtype=float)
    n_nodes = int(nodes.max()) + 1 if nodes.size else 0
    lru = np.zeros((n_nodes, cache_width(sizes, cache_mb, pinned)), dtype=np.int64)
    lens = np.zeros(n_nodes, dtype=np.int64)
    used = np.zeros(n_nodes)
    out = np.zeros(images.size, dtype=bool)
    for i, (img, node) in enumerate(zip(images.tolist(), nodes.tolist())):
        out[i] = cache_touch(lru, lens, used, node, img, sizes, cache_mb, pinned)
    return out


@dataclass
class ImageRun:
    """What the pre-pass decided, kept for the summary and the what-if (first attempts only)."""

    config: ImageCache
    nodes: int  # over every pool with images
    rollout: np.ndarray  # reference k is rollout rollout[k] (pool order)
    image: np.ndarray
    node: np.ndarray  # global node index
    hit: np.ndarray
    warm_s: np.ndarray  # per reference: the build if warm, and if it misses (before exception cuts)
    miss_s: np.ndarray
    task_matched: int = 0  # rollouts that built their replayed task's own image (the others drew one by share)
    # pinned, for each what-if K: hits
    whatif: dict[int, np.ndarray] = field(default_factory=dict)
    #: the nodes are the engine's (pools made of nodes: each build on the node its sandbox was placed on),
    #: not the pre-pass's ``k mod nodes``
    placed: bool = False

    def figures(self) -> dict:
        """The summary's ``images`` block."""
        cfg, cat = self.config, self.config.catalog
        n = int(self.hit.size)
        build_s = float(np.where(self.hit, self.warm_s, self.miss_s).sum())
        rows = []
        for k, hits in sorted(self.whatif.items()):
            with_k = float(np.where(hits, self.warm_s, self.miss_s).sum())
            rows.append({"prepull": k, "prepulled": list(cat.names[:k]), "hit_rate": _rate(hits),
                         "build_hours": with_k / 3600, "build_hours_saved": (build_s - with_k) / 3600})
        miss = "size_mb / pull_mb_per_s on top of the warm build" if cfg.pull_mb_per_s else "the [build] miss draw"
        return {
            "catalog": cat.basis,
            "distinct": len(cat.names),
            "nodes": self.nodes,
            "cache_mb": cfg.cache_mb,
            "pull_mb_per_s": cfg.pull_mb_per_s,
            "prepulled": list(cat.names[: cfg.prepull]),
            "references": n,
            "hits": int(np.count_nonzero(self.hit)),
            "hit_rate": _rate(self.hit),
            "build_hours": build_s / 3600,
            "miss_hours": float((self.miss_s - self.warm_s)[~self.hit].sum()) / 3600,
            "prepull_whatif": rows or None,
            "basis": (f"LRU cache of {cfg.cache_mb:g} MB per node; the {cfg.prepull} most-shared image(s) pre-pulled "
                      f"(resident, outside the cache); a miss costs {miss}; first attempts only, "
                      + ("each built on the node the engine placed its sandbox on, in start order (a new node starts "
                         "cold, a released node's cache is gone; the pre-pull what-if replays the same placement)"
                         if self.placed else "the k-th build of a pool on node k mod nodes in queue order")
                      + " (retries build warm); build hours before exception cuts"
                      + (f"; {self.task_matched:,} of {n:,} rollouts named a task of the catalog and built its image"
                         if cat.by_task else "")),
        }


def _rate(hits: np.ndarray) -> float | None:
    return float(np.count_nonzero(hits)) / hits.size if hits.size else None


def on_nodes(pools, workloads) -> bool:
    """Whether the cache follows the engine's placement: every workload's pool is made of nodes."""
    return bool(workloads) and all(pools[wl.pool].node_pools for wl in workloads)


def check_pools(pools, workloads, open_kind: int) -> None:
    """Refuse pools the cache cannot follow: none when all are made of nodes (``on_nodes``), else each
    pool's ``check_pool``."""
    if on_nodes(pools, workloads):
        return
    kinds = [wl.kind for wl in workloads]
    for p, pl in enumerate(pools):
        mine = [w for w, wl in enumerate(workloads) if wl.pool == p]
        if mine:
            check_pool(pl, mine, kinds, open_kind)


def check_pool(pl, pool_workloads: list[int], kinds: list[int], open_kind: int) -> None:
    """Refuse a pool whose build order is not known before the run (or that has no nodes)."""
    if pl.node_pools is not None:
        raise InputError(f"pool {pl.name} is made of nodes (node_pools) beside a slot pool: [images] follows the "
                         "engine's placement on pools made of nodes and node = k mod nodes on slot pools; give it to a "
                         "run whose pools are all made of nodes, or all slot pools")
    if pl.cap is None:
        raise InputError(f"pool {pl.name} is unbounded; per-node caches need a finite cap (nodes are "
                         "cap / slots_per_node)")
    if pl.admission != "fifo" or pl.queue_timeout_s is not None:
        raise InputError(f"pool {pl.name} needs FIFO admission without queue_timeout_s (the build order "
                         "is the queue order, decided before the run)")
    if len(pool_workloads) > 1 and any(kinds[w] != open_kind for w in pool_workloads):
        raise InputError(f"pool {pl.name} is shared by workloads that are not all open arrivals; their order in the "
                         "queue is decided by the run, so the per-node cache is not simulated there (use one pool each)")


def _pool_order(pool_workloads: list[int], kinds: list[int], offsets: np.ndarray,
                arr_ids, open_kind: int) -> np.ndarray:
    """Pool ``p``'s rollouts in the order they first enter its queue (known before the run)."""
    if all(kinds[w] == open_kind for w in pool_workloads):
        ids = np.asarray(arr_ids, dtype=np.int64) if not isinstance(arr_ids, range) else np.arange(
            arr_ids.start, arr_ids.stop, dtype=np.int64)
        mine = np.zeros(int(offsets[-1]), dtype=bool)
        for w in pool_workloads:
            mine[offsets[w]: offsets[w + 1]] = True
        return ids[mine[ids]]
    w = pool_workloads[0]  # one workload (check_pool): its release order
    return np.arange(offsets[w], offsets[w + 1], dtype=np.int64)


def assign(cfg: ImageCache, pools, workloads, offsets: np.ndarray, arr_ids, rng_for, open_kind: int):
    """The pre-pass: each first attempt's image, node and whether it hits.

    ``rng_for(w)``: workload ``w``'s image stream. Returns (hits per rollout, rollouts in reference
    order, their images, their global nodes, the number of nodes).
    """
    image, matched = draw_images(cfg, workloads, offsets, rng_for)
    n = int(offsets[-1])
    cat = cfg.catalog
    order_parts, node_parts = [], []
    node_base = 0
    kinds = [wl.kind for wl in workloads]
    for p, pl in enumerate(pools):
        mine = [w for w, wl in enumerate(workloads) if wl.pool == p]
        if not mine:
            continue
        check_pool(pl, mine, kinds, open_kind)
        order = _pool_order(mine, kinds, offsets, arr_ids, open_kind)
        k_nodes = -(-pl.cap // pl.slots_per_node)
        order_parts.append(order)
        node_parts.append(node_base + np.arange(order.size, dtype=np.int64) % k_nodes)
        node_base += k_nodes
    order = np.concatenate(order_parts) if order_parts else np.zeros(0, dtype=np.int64)
    node = np.concatenate(node_parts) if node_parts else np.zeros(0, dtype=np.int64)
    hits_ref = lru_hits(image[order], node, cat.size_mb, cfg.cache_mb, cfg.prepull)
    hits = np.zeros(n, dtype=bool)
    hits[order] = hits_ref
    return hits, order, image[order], node, node_base, matched


def draw_images(cfg: ImageCache, workloads, offsets: np.ndarray, rng_for) -> tuple[np.ndarray, int]:
    """Each rollout's image (by share from workload ``w``'s stream ``rng_for(w)``, or its replayed task's
    own image) and how many rollouts named a task of the catalog."""
    cat = cfg.catalog
    n = int(offsets[-1])
    image = np.zeros(n, dtype=np.int64)
    matched = 0  # rollouts naming a task of the catalog
    for w, wl in enumerate(workloads):
        lo, hi = int(offsets[w]), int(offsets[w + 1])
        drawn = rng_for(w).choice(len(cat.names), size=hi - lo, p=cat.shares)
        tasks = wl.attrs.get("task_id") if cat.by_task else None
        if tasks is not None:  # a replayed task builds its own image (unknown tasks keep the draw)
            named = [cat.by_task.get(t) for t in list(tasks)[: hi - lo]]
            matched += sum(t is not None for t in named)
            drawn = np.array([d if t is None else t for d, t in zip(drawn.tolist(), named)], dtype=np.int64)
        image[lo:hi] = drawn
    return image, matched


@dataclass
class NodeImages:
    """``[images]`` on pools made of nodes: the node a build lands on is known only when its sandbox starts
    (the admission kernel's placement), so each first attempt is drawn both ways, warm (the prepared
    attempt) and missing its image (``miss_f``: build, agent, verify, hold; ``miss_i``: planned state,
    phase), the same draws otherwise (``episode.draw_attempts`` with every build a hit, then a miss), and
    the kernel takes one when it starts the attempt on its node (``_node_rules.cache_touch``)."""

    config: ImageCache
    image: np.ndarray  # per rollout
    miss_f: np.ndarray  # (rollouts, 4)
    miss_i: np.ndarray  # (rollouts, 2)
    warm_s: np.ndarray  # per rollout: its build if warm, and if it misses (before exception cuts)
    miss_s: np.ndarray
    matched: int = 0

    def run(self, hit: np.ndarray, node: np.ndarray, seq: np.ndarray) -> ImageRun:
        """The summary's image run from the kernel's per-rollout outcome (``hit``: 1 / 0, -1 for a rollout
        whose first attempt never started), the node id it built on and the order it built in."""
        refs = np.flatnonzero(hit >= 0)
        order = refs[np.argsort(seq[refs], kind="stable")]
        cfg = self.config
        out = ImageRun(cfg, int(np.unique(node[order]).size), order, self.image[order], node[order],
                       hit[order] == 1, self.warm_s[order], self.miss_s[order], self.matched, placed=True)
        for k in cfg.whatif_prepull:
            out.whatif[k] = lru_hits(out.image, out.node, cfg.catalog.size_mb, cfg.cache_mb, k)
        return out
