"""``[images]`` on pools made of nodes (issue 37 item 1: the image cache follows the real placement): each
first attempt builds on the node the admission kernel placed its sandbox on; a new node starts cold and a
released node's cache is gone. Checked by hand on a small case and against a brute-force replay of the
engine's own placement (an LRU per node id written here, not the engine's ``_node_rules.cache_touch``)."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest
from tests.simulate.test_node_replay import KINDS

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate import Fleet
from sandbox_fleet.simulate.engine import fast
from sandbox_fleet.simulate.engine.distributions import Deterministic, Exponential, LogNormal
from sandbox_fleet.simulate.engine.entities import Build, Episode, FleetNodePool
from sandbox_fleet.simulate.engine.images import ImageCache, ImageCatalog, zipf_shares
from sandbox_fleet.simulate.engine.run import run_workloads
from sandbox_fleet.simulate.engine.workloads import Poisson, SyncRL

ROOT = Path(__file__).resolve().parents[3]


def _one_image_episode() -> Episode:
    """One image of 200 MB, pulled at 20 MB/s (a miss adds 10 s to the 1-s warm build); agent 100 s."""
    cat = ImageCatalog(names=("img",), shares=np.array([1.0]), size_mb=np.array([200.0]), basis="test")
    cache = ImageCache(catalog=cat, cache_mb=500.0, pull_mb_per_s=20.0)
    return Episode(agent=Deterministic(100.0), build=Build(hit=Deterministic(1.0), images=cache))


def _two_steps(scale_down_s: float):
    """Sync RL, 4 rollouts a step of 2 cpu, burst nodes of 4 cpu (2 sandboxes each) launched at once."""
    pools = [FleetNodePool(name="b", max_nodes=2, scale_down_s=scale_down_s, cpu=4.0, memory_mb=100.0, disk_mb=100.0)]
    wl = SyncRL(batch=4, steps=2, train_s=50.0, episode=_one_image_episode(), request=(2.0, 1.0, 1.0))
    return run_workloads(Fleet(node_pools=pools), [wl], seed=0)


def test_a_new_node_starts_cold_and_a_released_nodes_cache_is_gone_by_hand():
    """Step 1 at 0: r0 launches node 0 and pulls (build 11 s), r1 lands beside it and finds the image
    (1 s); r2, r3 the same on node 1. The step ends at 111; with scale_down_s = 0 both nodes are released
    then, so step 2 (released at 111 + 50 = 161) launches nodes 2 and 3, cold: the same 11 / 1 pattern
    (a cache kept by slot, as node = k mod nodes assumes, would hit all four)."""
    res = _two_steps(0.0)
    first = res.attempt == 0
    order = np.argsort(res.rollout[first])
    assert res.build_s[first][order].tolist() == [11.0, 1.0, 11.0, 1.0, 11.0, 1.0, 11.0, 1.0]
    assert np.allclose(res.steps[0]["release_s"], [0.0, 161.0])
    im = res.images
    assert im is not None and im.placed
    assert dict(zip(im.rollout.tolist(), im.node.tolist())) == {0: 0, 1: 0, 2: 1, 3: 1, 4: 2, 5: 2, 6: 3, 7: 3}
    fig = res.summary()["images"]
    assert fig["hit_rate"] == 0.5 and fig["nodes"] == 4 and "placed its sandbox on" in fig["basis"]


def test_a_node_still_up_keeps_its_cache_by_hand():
    """The same with scale_down_s = 100: nodes 0 and 1 are up until 211, so step 2 (at 161) packs onto
    them (the oldest first on ties) and every build hits: the step lasts 101 s, not 111."""
    res = _two_steps(100.0)
    first = res.attempt == 0
    order = np.argsort(res.rollout[first])
    assert res.build_s[first][order].tolist() == [11.0, 1.0, 11.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert res.images is not None and sorted(set(res.images.node.tolist())) == [0, 1]
    assert res.nodes[0]["launched"] == 2


def _brute_hits(image, node, size_mb, cache_mb, pinned):
    """An LRU of whole images per node id, in build order (written here, independent of the engine)."""
    caches: dict[int, OrderedDict] = {}
    used: dict[int, float] = {}
    out = []
    for img, nd in zip(image, node):
        if img < pinned:
            out.append(True)
            continue
        c = caches.setdefault(nd, OrderedDict())
        used.setdefault(nd, 0.0)
        if img in c:
            c.move_to_end(img)
            out.append(True)
            continue
        while used[nd] + size_mb[img] > cache_mb and c:
            old, _ = c.popitem(last=False)
            used[nd] -= size_mb[old]
        c[img] = None
        used[nd] += size_mb[img]
        out.append(False)
    return np.array(out)


def _zipf_case(prepull: int = 1):
    cat = ImageCatalog(names=tuple(f"i{j}" for j in range(8)), shares=zipf_shares(8, 1.0),
                       size_mb=np.array([900.0, 400.0, 700.0, 300.0, 800.0, 500.0, 600.0, 350.0]), basis="test")
    cache = ImageCache(catalog=cat, cache_mb=1500.0, pull_mb_per_s=50.0, prepull=prepull, whatif_prepull=(0, 3))
    ep = Episode(agent=LogNormal(400.0, 0.8), build=Build(hit=Exponential(5.0), images=cache))
    pools = [FleetNodePool(name="r", tier="reserved", min_nodes=2, max_nodes=2, cpu=32.0, memory_mb=131072.0,
                           disk_mb=409600.0),
             FleetNodePool(name="b", max_nodes=12, provision_s=30.0, scale_down_s=60.0, cpu=32.0, memory_mb=131072.0,
                           disk_mb=409600.0)]
    share = (0.5, 0.3, 0.2)
    wls = [Poisson(name=f"k{j}", rate_per_s=0.25 * share[j], n=int(900 * share[j]), episode=ep,
                   request=tuple(KINDS[j])) for j in range(3)]
    return Fleet(admission="fifo", node_pools=pools), wls, cache


def test_the_node_cache_is_a_brute_force_lru_over_the_engines_placement():
    """Each first attempt's hit is the brute-force LRU's over the engine's own (node, build order), and
    its build the warm draw plus its image's pull on a miss; a what-if pre-pull replays the same
    placement."""
    fl, wls, cache = _zipf_case()
    res = run_workloads(fl, wls, seed=4)
    im = res.images
    n = int(np.count_nonzero(res.attempt == 0))
    assert im is not None and im.placed and im.hit.size == n
    size = cache.catalog.size_mb
    want = _brute_hits(im.image.tolist(), im.node.tolist(), size.tolist(), cache.cache_mb, cache.prepull)
    assert np.array_equal(im.hit, want)
    assert 0.2 < want.mean() < 0.95 and len(set(im.node.tolist())) > 2  # misses, hits and several nodes
    first = res.attempt == 0
    build = np.empty(n)
    build[res.rollout[first]] = res.build_s[first]
    pull = size / cache.pull_mb_per_s
    assert np.allclose(build[im.rollout], im.warm_s + np.where(want, 0.0, pull[im.image]), rtol=0, atol=1e-9)
    for k in (0, 3):
        assert np.array_equal(im.whatif[k], _brute_hits(im.image.tolist(), im.node.tolist(), size.tolist(),
                                                        cache.cache_mb, k))
    assert res.summary()["images"]["hit_rate"] == pytest.approx(float(want.mean()))


@pytest.mark.skipif(not fast.available(), reason="numba may not run here")
def test_the_node_cache_compiled_and_plain_give_the_same_bits():
    from sandbox_fleet.simulate.engine.fast import admit_loop
    from sandbox_fleet.simulate.engine.prepare import prepare

    fl, wls, _ = _zipf_case()
    a, b = (admit_loop.run(prepare(fl, wls, 2), compiled=c) for c in (False, True))
    for key in a.first:
        assert np.array_equal(a.first[key], b.first[key], equal_nan=True), key
    assert np.array_equal(a.images.hit, b.images.hit) and np.array_equal(a.images.node, b.images.node)


def test_images_beside_a_slot_pool_are_refused_in_one_line():
    fl, wls, _ = _zipf_case()
    slot_wl = Poisson(name="s", rate_per_s=0.1, n=10, pool=1, episode=wls[0].episode)
    with pytest.raises(InputError, match="made of nodes .* beside a slot pool"):
        run_workloads([fl, Fleet(name="slots", cap=4)], [*wls, slot_wl], seed=0)


def test_a_scenario_with_images_on_a_pool_made_of_nodes_builds(tmp_path):
    """The scenario builder's check lets ``[images]`` through when every pool is made of nodes."""
    from sandbox_fleet.simulate.scenario.run import build, load_scenario

    text = (ROOT / "examples" / "scenarios" / "nodes.toml").read_text().replace("[run]", (
        '[build]\nhit = { dist = "deterministic", value_s = 5.0 }\n\n[images]\ncount = 20\nsize_mb = 2000\n'
        'cache_mb = 8000\npull_mb_per_s = 100\n\n[run]'))
    path = tmp_path / "nodes_images.toml"
    path.write_text(text)
    b = build(load_scenario(path), tmp_path, str(path))
    assert b.fleets[0].node_pools is not None and b.workloads[0].episode.build.images is not None
