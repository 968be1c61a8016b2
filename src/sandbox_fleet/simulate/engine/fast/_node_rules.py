"""The node placement rule, written once: which live node of which node pool takes a request.

Called by the node replay (``nodes._kernel``, a pass over finished intervals) and by the admission
kernel (``_admit_kernel.node_dispatch``, where the placement feeds back: a request that fits nowhere
waits for a launched node to join): the placement (``best_fit``, ``take``), a launch's slot and row
(``free_slot``, ``open_node``), a sandbox leaving (``leave``) and the release sweep before a launch
(``sweep``). Each caller keeps its own node-id counter and reclaim clock. Plain Python that numba compiles where a compiled kernel calls
it (``_jit.jitable``); this file is in ``_jit.CALLEES`` (numba checks a cached kernel against its
own file only).

The layout both callers keep (a node "slot" is a reusable row; ``k`` a node pool):

- per slot: ``pool`` (-1: free), ``used`` (slots x 3: cpu, memory MB, disk MB), ``release`` (the
  time it is gone; inf while it holds a sandbox or is a base node), ``node_id`` (launch order),
  ``pos`` / ``opos`` (its position in its pool's live list / open list, -1: not open);
- per pool: the live slots ``plist[k, :plen[k]]``; the open ones ``olist[k, :olen[k]]`` (nodes
  whose free cpu could hold the smallest request), each one's free cpu at the same position in
  ``ofree`` (a contiguous first test); ``pmax[k]``, never below the largest free cpu of its open
  nodes (a full pool is skipped whole); ``lim`` the allocatable with float slack, ``cap`` exact;
  ``inv`` the reciprocals of cpu and memory allocatable (the MostAllocated score); ``spread``.

The rule (docs/simulate.md, "Nodes in the engine"): pools in order; inside one, among its open
nodes not gone before ``t`` that fit the request's cpu, memory and disk, ``pack`` takes the
most-allocated (cpu and memory shares, equally weighted: kube-scheduler's ``MostAllocated``,
Karpenter's consolidation preference), ``spread`` the least-allocated (``LeastAllocated``, the
scheduler's default); ties go to the oldest node.
"""

from __future__ import annotations

import math


def best_fit(k0, k1, cpu, mem, disk, t, olist, ofree, olen, release, used, lim, cap, inv, spread, node_id, pmax):
    """The slot of the node that takes a request of ``cpu``, ``mem``, ``disk`` at ``t`` among pools
    ``k0 <= k < k1`` (-1: none fits). Updates ``pmax`` of each pool it scanned to its exact maximum."""
    for k in range(k0, k1):
        need = cpu - (lim[k, 0] - cap[k, 0])  # the cpu a node must have free, with the float slack
        if pmax[k] < need:
            continue
        best = -1
        best_score = 0.0
        most = 0.0
        for x in range(olen[k]):
            f = ofree[k, x]
            if f > most:
                most = f
            if f < need:  # the cheap first test: most open nodes of a busy pool are short of cpu
                continue
            s = olist[k, x]
            if release[s] < t:  # gone before this start (released at release[s]): not a candidate
                continue
            if used[s, 1] + mem > lim[k, 1] or used[s, 2] + disk > lim[k, 2]:
                continue
            score = used[s, 0] * inv[k, 0] + used[s, 1] * inv[k, 1]
            if spread[k]:
                score = -score
            if best < 0 or score > best_score or (score == best_score and node_id[s] < node_id[best]):
                best = s
                best_score = score
        pmax[k] = most
        if best >= 0:
            return best
    return -1


def holds(k, cpu, mem, disk, lim):
    """Whether a node of pool ``k`` (empty) holds the request."""
    return not (cpu > lim[k, 0] or mem > lim[k, 1] or disk > lim[k, 2])


def set_free(k, s, f, thr, olist, ofree, olen, opos, pmax):
    """Node slot ``s`` of pool ``k`` now has ``f`` cpu free: it is on the pool's open list (the nodes a
    start scans) while ``f`` could hold the smallest request, off it otherwise."""
    x = opos[s]
    if f >= thr[k]:
        if x < 0:
            x = olen[k]
            opos[s] = x
            olist[k, x] = s
            olen[k] = x + 1
        ofree[k, x] = f
        if f > pmax[k]:
            pmax[k] = f
    elif x >= 0:
        close(k, s, olist, ofree, olen, opos)


def take(k, s, cpu, mem, disk, cap, thr, used, count, release, olist, ofree, olen, opos, pmax):
    """A sandbox of ``cpu``, ``mem``, ``disk`` placed on node slot ``s`` of pool ``k`` (open: ``best_fit``'s
    pick, or a node just launched for it): the node is not released while it runs, and its less free cpu
    keeps it on the open list or takes it off (``set_free``)."""
    count[s] += 1
    release[s] = math.inf
    used[s, 0] += cpu
    used[s, 1] += mem
    used[s, 2] += disk
    set_free(k, s, cap[k, 0] - used[s, 0], thr, olist, ofree, olen, opos, pmax)


def free_slot(pool, top):
    """The lowest free node slot (``pool`` -1) below ``top``; ``top`` when none is."""
    s = 0
    while s < top and pool[s] >= 0:
        s += 1
    return s


def sweep(k0, k1, t, plist, plen, release, launch, node_id, pool, pos, olist, ofree, olen, opos, billed_s, alive, span):
    """Release the nodes of pools ``k0 <= k < k1`` gone before ``t`` (at ``release``, their scale-down after
    the last sandbox left), so that the live counts are exact before a launch: each is billed launch to
    release (``billed_s[k]``, and ``span[its node id]`` = launch, release), leaves its pool's live and open
    lists and its count ``alive[k]``; its slot is free."""
    for k in range(k0, k1):
        x = 0
        while x < plen[k]:
            s = plist[k, x]
            if release[s] < t:
                billed_s[k] += release[s] - launch[s]
                span[node_id[s], 0] = launch[s]
                span[node_id[s], 1] = release[s]
                release[s] = math.inf
                alive[k] -= 1
                unlist(k, s, pool, pos, plist, plen, olist, ofree, olen, opos)
                continue
            x += 1


def close(k, s, olist, ofree, olen, opos):
    """Take slot ``s`` off pool ``k``'s open list (the last entry moves into its place)."""
    x = opos[s]
    olen[k] -= 1
    last = olist[k, olen[k]]
    olist[k, x] = last
    ofree[k, x] = ofree[k, olen[k]]
    opos[last] = x
    opos[s] = -1


def unlist(k, s, pool, pos, plist, plen, olist, ofree, olen, opos):
    """Take slot ``s`` out of pool ``k``'s live list (the last entry moves into its place) and open list."""
    x = pos[s]
    plen[k] -= 1
    last = plist[k, plen[k]]
    plist[k, x] = last
    pos[last] = x
    pool[s] = -1
    if opos[s] >= 0:
        close(k, s, olist, ofree, olen, opos)


def open_node(k, s, nid, t, ready_s, perm, cap, thr, pool, pos, plist, plen, node_id, used, count, last_out, launch,
              ready, release, permanent, opos, head, olist, ofree, olen, pmax):
    """A node of pool ``k`` (id ``nid``) launched at ``t`` into free slot ``s``, joining at ``ready_s``
    (``perm``: a base node): on its pool's live list and, empty, on its open list; nothing on it."""
    pool[s] = k
    pos[s] = plen[k]
    plist[k, plen[k]] = s
    plen[k] += 1
    node_id[s] = nid
    used[s, 0] = 0.0
    used[s, 1] = 0.0
    used[s, 2] = 0.0
    count[s] = 0
    last_out[s] = -math.inf
    launch[s] = t
    ready[s] = ready_s
    release[s] = math.inf  # up while it holds a sandbox, or until its scale-down after the last left
    permanent[s] = perm
    opos[s] = -1
    set_free(k, s, cap[k, 0], thr, olist, ofree, olen, opos, pmax)
    head[s] = -1


def leave(k, s, cpu, mem, disk, end_s, down_s, cap, thr, used, count, last_out, release, permanent, olist, ofree, olen,
          opos, pmax):
    """A sandbox of ``cpu``, ``mem``, ``disk`` left node slot ``s`` of pool ``k`` at ``end_s``: an emptied
    node holds nothing (no float residue) and, unless a base node, is due for release ``down_s`` after its
    last sandbox left; more cpu free puts it on the open list (or keeps it there)."""
    used[s, 0] -= cpu
    used[s, 1] -= mem
    used[s, 2] -= disk
    count[s] -= 1
    if end_s > last_out[s]:
        last_out[s] = end_s
    if count[s] == 0:
        used[s, 0] = 0.0
        used[s, 1] = 0.0
        used[s, 2] = 0.0
        if not permanent[s]:
            release[s] = last_out[s] + down_s
    f = cap[k, 0] - used[s, 0]  # more cpu free than before: it stays on the open list, or goes onto it
    x = opos[s]  # (``set_free`` written out: callers inline this, once an end)
    if x >= 0:
        ofree[k, x] = f
    elif f >= thr[k]:
        x = olen[k]
        opos[s] = x
        olist[k, x] = s
        ofree[k, x] = f
        olen[k] = x + 1
    if f > pmax[k]:
        pmax[k] = f


def trace_pick(k, u, t, plist, plen, release):
    """The node slot of pool ``k`` a reclaim trace's row at ``t`` takes: one of the nodes up then (launched,
    not released before ``t``), the ``u``-th fraction of them in live-list order (``u`` uniform); -1: none up."""
    up = 0
    for x in range(plen[k]):
        if release[plist[k, x]] >= t:
            up += 1
    if up == 0:
        return -1
    pick = min(int(u * up), up - 1)
    for x in range(plen[k]):
        if release[plist[k, x]] >= t:
            if pick == 0:
                return plist[k, x]
            pick -= 1
    return -1


def billed_until(perm, release_s, last_end_s):
    """Where a node still up when the history ends stops being billed: a base node (``min_nodes``) at
    the last end, any other at its release (``scale_down_s`` after its last sandbox left)."""
    return last_end_s if perm else release_s


def cache_touch(lru, lens, used_mb, s, img, size_mb, cache_mb, pinned):
    """Node ``s`` builds image ``img``: whether it was on the node (``images``' rule, written once: the
    slot pools' pre-pass ``images.lru_hits`` and the admission kernel's pools made of nodes call it).
    Each node keeps an LRU cache of whole images by size, ``lru[s, :lens[s]]`` oldest first, ``used_mb[s]``
    of ``cache_mb``; images ``0 .. pinned-1`` are resident everywhere (hits, outside the cache). A miss
    loads the image, evicting the least recently used ones until it fits."""
    if img < pinned:
        return True
    n = lens[s]
    for j in range(n):
        if lru[s, j] == img:  # a hit: the image becomes the most recently used
            for x in range(j, n - 1):
                lru[s, x] = lru[s, x + 1]
            lru[s, n - 1] = img
            return True
    need = size_mb[img]
    drop = 0
    while used_mb[s] + need > cache_mb and drop < n:
        used_mb[s] -= size_mb[lru[s, drop]]
        drop += 1
    for x in range(drop, n):
        lru[s, x - drop] = lru[s, x]
    n -= drop
    lru[s, n] = img
    lens[s] = n + 1
    used_mb[s] += need
    return False


def cache_width(size_mb, cache_mb, pinned):
    """The most images one node's cache holds at once (the columns ``cache_touch``'s ``lru`` needs)."""
    rest = size_mb[pinned:]
    if rest.size == 0:
        return 1
    return int(min(rest.size, cache_mb // rest.min() + 1))
