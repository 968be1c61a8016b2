"""First-fit-decreasing packing against brute force, a naive reference, and the lower bound."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.plan.packing import concurrent_mix, ffd, lower_bound
from sandbox_fleet.plan.slots import RESOURCES, ResourceRequest

CAP = {"cpu": 8.0, "memory": 32.0, "disk": 100.0, "gpu": 0.0}


def _vec(q: ResourceRequest) -> tuple:
    return tuple(getattr(q, r) for r in RESOURCES)


def brute_force_min_nodes(items: list[tuple], cap: dict) -> int:
    """Fewest nodes for ``items`` by exhaustive search over set partitions (small inputs only)."""
    capv = tuple(cap[r] for r in RESOURCES)
    best = [len(items)]

    def go(i: int, loads: list[list[float]]):
        if len(loads) >= best[0]:
            return
        if i == len(items):
            best[0] = len(loads)
            return
        it = items[i]
        for load in loads:
            if all(load[d] + it[d] <= capv[d] + 1e-9 for d in range(len(capv))):
                for d in range(len(capv)):
                    load[d] += it[d]
                go(i + 1, loads)
                for d in range(len(capv)):
                    load[d] -= it[d]
        loads.append(list(it))
        go(i + 1, loads)
        loads.pop()

    go(0, [])
    return best[0]


def naive_ffd(items: list[tuple], cap: dict) -> int:
    """Item-by-item FFD written from the definition: sort by dominant share, place in first fit."""
    capv = [cap[r] for r in RESOURCES]

    def shares(it):
        return [it[d] / capv[d] if capv[d] > 0 else (math.inf if it[d] > 0 else 0.0) for d in range(4)]

    order = sorted(items, key=lambda it: (-max(shares(it)), -sum(shares(it)), tuple(-x for x in it)))
    loads: list[list[float]] = []
    for it in order:
        for load in loads:
            if all(load[d] + it[d] <= capv[d] + 1e-9 for d in range(4)):
                for d in range(4):
                    load[d] += it[d]
                break
        else:
            loads.append(list(it))
    return len(loads)


def _assignment_valid(pack, reqs, counts, cap) -> None:
    placed = [0] * len(reqs)
    for node in pack.assignment:
        for r in RESOURCES:
            used = sum(getattr(reqs[i], r) * k for i, k in node.items())
            assert used <= cap[r] + 1e-9
        for i, k in node.items():
            placed[i] += k
    assert placed == counts


request_st = st.builds(
    ResourceRequest,
    cpu=st.sampled_from([1.0, 2.0, 3.0, 4.0, 5.0]),
    memory=st.sampled_from([2.0, 4.0, 8.0, 16.0, 20.0]),
    disk=st.sampled_from([0.0, 10.0, 30.0, 60.0]),
    gpu=st.just(0.0),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(request_st, st.integers(1, 3)), min_size=1, max_size=4))
def test_small_mixes_against_brute_force(mix):
    reqs = [q for q, _ in mix]
    counts = [c for _, c in mix]
    if sum(counts) > 8:
        counts = [min(c, 2) for c in counts]
    pack = ffd(reqs, counts, CAP)
    items = [_vec(q) for q, c in zip(reqs, counts) for _ in range(c)]
    opt = brute_force_min_nodes(items, CAP)
    _assignment_valid(pack, reqs, counts, CAP)
    assert pack.lower_bound <= opt <= pack.nodes
    assert pack.nodes == naive_ffd(items, CAP)  # grouped placement == item-by-item FFD


def test_hand_case_where_ffd_is_optimal():
    # two big (5 cpu, 8 GB) and two small (3 cpu, 24 GB): each node takes one big + one small.
    reqs = [ResourceRequest(5, 8, 0), ResourceRequest(3, 24, 0)]
    pack = ffd(reqs, [2, 2], CAP)
    assert pack.nodes == 2 == brute_force_min_nodes([_vec(reqs[0])] * 2 + [_vec(reqs[1])] * 2, CAP)
    assert pack.stranded["cpu"] == 0 and pack.stranded["memory"] == 0


def test_stranded_hand_computed():
    # 3 x (3 cpu, 16 GB): memory fits 2 per node, so 2 nodes; cpu left 16 - 9 = 7, memory 64 - 48 = 16.
    pack = ffd([ResourceRequest(3, 16, 10)], [3], CAP)
    assert pack.nodes == 2
    assert pack.stranded == {"cpu": 7.0, "memory": 16.0, "disk": 170.0, "gpu": 0.0}
    assert pack.lower_bound_by_resource == {"cpu": 2, "memory": 2, "disk": 1, "gpu": 0}


def test_large_uniform_mix_meets_the_lower_bound():
    node = {"cpu": 96.0, "memory": 393_216.0, "disk": 4_194_304.0, "gpu": 0.0}
    pack = ffd([ResourceRequest(1, 2048, 6144)], [3000], node)
    assert pack.nodes == 32 == pack.lower_bound  # ceil(3000 / 96)


def test_large_cpu_bound_mix_meets_the_lower_bound():
    # Every item asks 1 cpu and at most memory/cpu of the node, so any first fit fills each node's
    # 96 cores before its memory: nodes == ceil(items / 96), the cpu lower bound.
    node = {"cpu": 96.0, "memory": 393_216.0, "disk": 4_194_304.0, "gpu": 0.0}
    reqs = [ResourceRequest(1, 2048, 6144), ResourceRequest(1, 4096, 10240), ResourceRequest(1, 1024, 2048)]
    counts = [7000, 2500, 500]
    pack = ffd(reqs, counts, node)
    assert pack.nodes == math.ceil(10_000 / 96) == pack.lower_bound


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 16), st.integers(0, 40), st.integers(1, 400)), min_size=2, max_size=6))
def test_large_random_mixes_within_proven_bounds(spec):
    # Items are at most 1/ε of a node on every resource (ε = 1/8 here). Any-fit opens a node only when
    # every open node is past 1 - ε on some resource, so nodes <= D * LB / (1 - ε) + 1 with D = 3.
    node = {"cpu": 32.0, "memory": 128.0, "disk": 320.0, "gpu": 0.0}
    reqs = [ResourceRequest(c, m, d) for c, m, d, _ in spec]
    counts = [n for *_, n in spec]
    pack = ffd(reqs, counts, node)
    _assignment_valid(pack, reqs, counts, node)
    lb = max(lower_bound(reqs, counts, node).values())
    assert lb == pack.lower_bound <= pack.nodes <= math.floor(3 * lb / (1 - 1 / 8)) + 1


def test_concurrent_mix_largest_remainder():
    assert concurrent_mix([37_459, 25], 3000) == [2998, 2]  # 2998.0 + 2.001 -> exact total
    assert concurrent_mix([1, 1, 1], 10) == [4, 3, 3]  # ties to the earlier request
    assert sum(concurrent_mix([3, 7, 11], 1001)) == 1001


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(request_st, st.integers(1, 400)), min_size=1, max_size=5))
def test_grouped_packing_equals_item_by_item_ffd_on_large_counts(mix):
    """Runs of nodes packed alike are kept as groups: the node count is still item-by-item FFD's."""
    reqs = [q for q, _ in mix]
    counts = [c for _, c in mix]
    pack = ffd(reqs, counts, CAP)
    items = [_vec(q) for q, c in zip(reqs, counts) for _ in range(c)]
    assert pack.nodes == naive_ffd(items, CAP)
    _assignment_valid(pack, reqs, counts, CAP)
    assert len(pack.groups) <= 3 * len(reqs) ** 2 + 2 * len(reqs)  # groups grow with kinds, not counts


def test_a_billion_sandboxes_pack_as_groups():
    reqs = [ResourceRequest(1.0, 2.0, 6.0, 0.0), ResourceRequest(2.0, 8.0, 20.0, 0.0), ResourceRequest(4.0, 16.0, 50.0, 0.0)]
    counts = concurrent_mix([240, 120, 32], 10**9)
    pack = ffd(reqs, counts, CAP)
    assert sum(g.count for g in pack.groups) == pack.nodes
    assert sum(g.load.get(i, 0) * g.count for g in pack.groups for i in [0]) == counts[0]
    assert len(pack.groups) < 20
    assert pack.lower_bound <= pack.nodes


@given(st.lists(st.floats(0.5, 1e6), min_size=1, max_size=6), st.integers(0, 10**30))
def test_concurrent_mix_total_is_exact_at_any_size(weights, n):
    counts = concurrent_mix(weights, n)
    assert sum(counts) == n and min(counts) >= 0
