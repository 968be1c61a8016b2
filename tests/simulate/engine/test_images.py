"""The per-node image layer cache (``[images]``), against independent truth: a hand-traced LRU, a
brute-force LRU written here, the one-image limit, and Che's approximation for LRU under independent
references (computed here by bisection, not by the code under test)."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate import Deterministic, Episode, Exponential, Fleet, Poisson, SyncRL, run_workloads
from sandbox_fleet.simulate.engine.entities import Build
from sandbox_fleet.simulate.engine.images import ImageCache, ImageCatalog, lru_hits, zipf_shares


def brute_lru(seq, nodes, sizes, cache_mb, pinned=0):
    """LRU as a recency list per node: scan, move to front, drop from the back until it fits."""
    stacks: dict[int, list[int]] = {}
    out = []
    for img, node in zip(seq, nodes):
        if img < pinned:
            out.append(True)
            continue
        st = stacks.setdefault(node, [])
        if img in st:
            st.remove(img)
            st.insert(0, img)
            out.append(True)
            continue
        out.append(False)
        st.insert(0, img)
        while sum(sizes[i] for i in st) > cache_mb:
            st.pop()
    return out


def test_lru_by_size_on_a_hand_traced_sequence():
    # sizes 3, 2, 2, 4 MB in a 6 MB cache; traced by hand:
    # 0 miss {0}; 1 miss {0,1}=5; 0 hit; 2 miss: evict 1 -> {0,2}=5; 1 miss: evict 0 -> {2,1}=4;
    # 3 miss: evict 2 -> {1,3}=6; 0 miss: evict 1, then 3 -> {0}=3; 0 hit
    sizes = np.array([3.0, 2.0, 2.0, 4.0])
    seq = np.array([0, 1, 0, 2, 1, 3, 0, 0])
    got = lru_hits(seq, np.zeros(seq.size, dtype=np.int64), sizes, 6.0)
    assert got.tolist() == [False, False, True, False, False, False, False, True]
    # image 0 pre-pulled: always a hit, and outside the 6 MB (so 1, 2, 3 share the whole cache)
    got = lru_hits(seq, np.zeros(seq.size, dtype=np.int64), sizes, 6.0, pinned=1)
    assert got.tolist() == [True, False, True, False, True, False, True, True]


def test_lru_matches_a_brute_force_lru_with_nodes_and_pins():
    rng = np.random.default_rng(5)
    for trial in range(20):
        k = int(rng.integers(2, 12))
        sizes = rng.integers(1, 6, k).astype(float)
        cache = float(sizes.max() + rng.integers(0, 12))
        seq = rng.integers(0, k, 400)
        nodes = rng.integers(0, 3, 400)
        pinned = int(rng.integers(0, 3))
        want = brute_lru(seq.tolist(), nodes.tolist(), sizes.tolist(), cache, pinned)
        assert lru_hits(seq, nodes, sizes, cache, pinned).tolist() == want, trial


def _run(cache: ImageCache, n: int, cap: int, slots_per_node: int, seed: int = 3):
    ep = Episode(agent=Exponential(10.0), build=Build(hit=Deterministic(2.0), images=cache))
    return run_workloads(Fleet(cap=cap, slots_per_node=slots_per_node), [Poisson(rate_per_s=1.0, n=n, episode=ep)],
                         seed=seed)


def test_one_image_and_room_for_it_misses_once_per_node():
    cat = ImageCatalog(("only",), np.array([1.0]), np.array([500.0]), "one image")
    res = _run(ImageCache(cat, cache_mb=500.0, pull_mb_per_s=50.0), n=3000, cap=40, slots_per_node=8)
    im = res.images
    assert im.nodes == 5
    assert int(np.count_nonzero(~im.hit)) == 5  # the first build on each node pulls, nothing after
    fig = im.figures()
    assert fig["hit_rate"] == pytest.approx(1 - 5 / 3000)
    # a miss builds warm (2 s) plus the pull, 500 MB / 50 MB/s = 10 s
    first = res.build_s[res.attempt == 0]
    assert sorted(set(np.round(first, 9).tolist())) == [2.0, 12.0]
    assert fig["miss_hours"] == pytest.approx(5 * 10 / 3600)


def che_hit_rate(p: np.ndarray, c: float) -> float:
    """Che's approximation: t_C solves sum_i (1 - exp(-p_i t)) = C; hit rate sum_i p_i (1 - exp(-p_i t_C))."""
    lo, hi = 0.0, 1.0
    while np.sum(1 - np.exp(-p * hi)) < c:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.sum(1 - np.exp(-p * mid)) < c:
            lo = mid
        else:
            hi = mid
    return float(np.sum(p * (1 - np.exp(-p * lo))))


@pytest.mark.parametrize("k, c, s", [(20, 5, 0.0), (100, 10, 0.8)])
def test_steady_lru_hit_rate_matches_ches_approximation(k, c, s):
    """Uniform (s = 0) and Zipf catalogs of equal-sized images, a cache of c images per node: the hit
    rate of the second half of the run (past the cold start) against Che; tolerance 4 binomial
    standard errors of that half plus 0.01 for the approximation itself."""
    p = np.ones(k) / k if s == 0 else 1 / np.arange(1, k + 1) ** s / np.sum(1 / np.arange(1, k + 1) ** s)
    cat = ImageCatalog(tuple(f"i{i}" for i in range(k)), p, np.full(k, 100.0), "test")
    res = _run(ImageCache(cat, cache_mb=100.0 * c, pull_mb_per_s=100.0), n=40_000, cap=32, slots_per_node=8)
    hits = res.images.hit[20_000:]
    rate = float(hits.mean())
    want = che_hit_rate(p, c)
    if s == 0:
        assert want == pytest.approx(c / k, rel=1e-9)  # uniform: Che is exactly C/K (and so is LRU)
    tol = 4 * math.sqrt(rate * (1 - rate) / hits.size) + 0.01
    assert abs(rate - want) < tol, (rate, want, tol)


def test_zipf_shares_are_normalised_power_law():
    sh = zipf_shares(4, 1.0)
    assert sh.tolist() == pytest.approx([12 / 25, 6 / 25, 4 / 25, 3 / 25])  # 1, 1/2, 1/3, 1/4 over 25/12
    assert zipf_shares(3, 0.0).tolist() == pytest.approx([1 / 3] * 3)


SCENARIO = """
[fleet]
cap = 32
slots_per_node = 8
[workload]
kind = "poisson"
rate_per_s = 0.5
count = 3000
[hold]
dist = "exponential"
mean_s = 60.0
[build]
hit = {{ dist = "deterministic", value_s = 3.0 }}
[images]
count = 30
zipf_s = 1.0
size_mb = 1500
cache_mb = 6000
pull_mb_per_s = 150
prepull = {prepull}
whatif_prepull = [0, 3, 8]
[run]
seed = 4
"""


def _scenario(tmp_path, name: str, text: str):
    from sandbox_fleet.simulate.scenario.run import run_scenario

    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return run_scenario(path)


def test_prepull_whatif_equals_the_run_with_that_prepull(tmp_path):
    """The what-if line for K is the same draws rerun with prepull = K: its build hours and hit rate
    equal that run's, and build_hours_saved is the difference from the configured run."""
    base = _scenario(tmp_path, "p0.toml", SCENARIO.format(prepull=0))["images"]
    rows = {r["prepull"]: r for r in base["prepull_whatif"]}
    assert rows[0]["build_hours"] == pytest.approx(base["build_hours"], rel=1e-12)
    for k in (3, 8):
        rerun = _scenario(tmp_path, f"p{k}.toml", SCENARIO.format(prepull=k))["images"]
        assert rerun["prepulled"] == [f"image-{i + 1}" for i in range(k)]  # the most-shared, by Zipf rank
        assert rows[k]["hit_rate"] == rerun["hit_rate"]
        assert rows[k]["build_hours"] == pytest.approx(rerun["build_hours"], rel=1e-12)
        assert rows[k]["build_hours_saved"] == pytest.approx(base["build_hours"] - rerun["build_hours"], rel=1e-12)
        assert rows[k]["build_hours_saved"] > 0
    # each saved miss is one pull of 1,500 MB at 150 MB/s = 10 s
    for k in (3, 8):
        saved_misses = (rows[k]["hit_rate"] - base["hit_rate"]) * base["references"]
        assert rows[k]["build_hours_saved"] == pytest.approx(saved_misses * 10 / 3600, rel=1e-9)


def test_rl_workload_builds_in_release_order():
    """A sync-RL workload: references are the rollouts in release order, round-robin over the nodes."""
    cat = ImageCatalog(("a", "b"), np.array([0.5, 0.5]), np.array([10.0, 10.0]), "two")
    ep = Episode(agent=Exponential(5.0), build=Build(images=ImageCache(cat, cache_mb=20.0, pull_mb_per_s=1.0)))
    res = run_workloads(Fleet(cap=16, slots_per_node=4), [SyncRL(batch=16, steps=5, episode=ep)], seed=2)
    im = res.images
    assert im.rollout.tolist() == list(range(80))
    assert im.node.tolist() == [i % 4 for i in range(80)]
    # both images fit on every node: at most two misses per node (one per image)
    assert int(np.count_nonzero(~im.hit)) <= 8


@pytest.mark.parametrize("text, key", [
    ("[images]\ncount = 3\nsize_mb = 2000\ncache_mb = 1000\npull_mb_per_s = 10\n", "images.cache_mb"),
    ("[images]\nshares = [0.5, 0.4]\nsize_mb = 100\ncache_mb = 1000\npull_mb_per_s = 10\n", "images.shares"),
    ("[images]\ncount = 3\nsize_mb = 100\ncache_mb = 1000\n", "images.pull_mb_per_s"),
    ("[images]\ncount = 3\nsize_mb = 100\ncache_mb = 1000\npull_mb_per_s = 10\nprepull = 4\n", "images.prepull"),
    ("[substrate]\nname = \"no-such-substrate\"\n", "substrate.name"),
])
def test_bad_images_or_substrate_is_one_line_exit_2(tmp_path, run_cli, text, key):
    path = tmp_path / "bad.toml"
    path.write_text("[fleet]\ncap = 8\n[workload]\nkind = \"poisson\"\nrate_per_s = 1.0\ncount = 10\n"
                    "[hold]\ndist = \"exponential\"\nmean_s = 1.0\n" + text)
    r = run_cli("simulate", path, "--json")
    assert r.code == 2 and r.out == ""
    assert len(r.err.strip().splitlines()) == 1 and f"key '{key}'" in r.err, r.err
    assert "Traceback" not in r.err


def test_image_cache_smaller_than_one_image_is_refused_in_the_api():
    cat = ImageCatalog(("big", "small"), np.array([0.5, 0.5]), np.array([900.0, 100.0]), "two")
    with pytest.raises(InputError, match="smaller than image 'big'"):
        ImageCache(cat, cache_mb=500.0, pull_mb_per_s=10.0)
    ImageCache(cat, cache_mb=500.0, pull_mb_per_s=10.0, prepull=1)  # pre-pulled: outside the cache


def test_images_on_a_pool_whose_order_the_run_decides_is_refused(tmp_path, run_cli):
    path = tmp_path / "sjf.toml"
    path.write_text("[fleet]\ncap = 8\nadmission = \"shortest-timeout-first\"\n[workload]\nkind = \"poisson\"\n"
                    "rate_per_s = 1.0\ncount = 10\n[hold]\ndist = \"exponential\"\nmean_s = 1.0\n"
                    "[images]\ncount = 2\nsize_mb = 10\ncache_mb = 100\npull_mb_per_s = 10\n")
    r = run_cli("simulate", path, "--json")
    assert r.code == 2 and "key 'images'" in r.err and "FIFO" in r.err


def test_catalog_from_task_bundles_and_replayed_tasks_build_their_own_image(tmp_path):
    """``tasks``: images and shares counted from the bundles' Dockerfiles; a replayed rollout naming a
    task builds that task's image (checked: the simulated telemetry's task_id against the image used)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sandbox_fleet.simulate.scenario.run import build, load_scenario, run_scenario
    from sandbox_fleet.telemetry.record import ROLLOUT_SCHEMA

    tasks = tmp_path / "tasks"
    for name, base in (("t1", "ubuntu:24.04"), ("t2", "ubuntu:24.04"), ("t3", "python:3.12-slim"), ("t4", None)):
        (tasks / name).mkdir(parents=True)
        (tasks / name / "task.toml").write_text("[agent]\ntimeout_sec = 60.0\n")
        if base:
            (tasks / name / "Dockerfile").write_text(f"FROM {base}\nRUN true\n")
    n = 60
    start = (1_767_225_600_000_000 + np.arange(n) * 7_000_000).astype("int64")  # from 2026-01-01
    rows = {"id": [f"r{i}" for i in range(n)], "started_at": start, "finished_at": start + 30_000_000,
            "task_id": [["t1", "t2", "t3", "t4", "zz"][i % 5] for i in range(n)]}
    table = pa.table({k: pa.array(v) for k, v in rows.items()})
    table = table.set_column(1, "started_at", table.column("started_at").cast(pa.timestamp("us", tz="UTC")))
    table = table.set_column(2, "finished_at", table.column("finished_at").cast(pa.timestamp("us", tz="UTC")))
    cols = [table.column(f.name) if f.name in table.column_names else pa.nulls(n, f.type) for f in ROLLOUT_SCHEMA]
    pq.write_table(pa.Table.from_arrays(cols, schema=ROLLOUT_SCHEMA), tmp_path / "runs.parquet")
    scen = tmp_path / "s.toml"
    scen.write_text('[fleet]\ncap = 4\nslots_per_node = 2\n[workload]\nkind = "replay"\ntelemetry = "runs.parquet"\n'
                    '[images]\ntasks = "tasks"\nsize_mb = { "ubuntu:24.04" = 80, "python:3.12-slim" = 50 }\n'
                    'cache_mb = 100\npull_mb_per_s = 10\n')
    out = run_scenario(scen)["images"]
    assert out["distinct"] == 2 and "3 task bundle(s)" in out["catalog"] and "1 task(s) name no image" in out["catalog"]
    # t1, t2, t3: 3 of every 5 rollouts; t4 and zz draw by share (2/3, 1/3)
    assert "36 of 60 rollouts named a task of the catalog" in out["basis"]
    built = build(load_scenario(scen), tmp_path)
    res = run_workloads(built.fleets, built.workloads, seed=built.seed)
    cat = built.workloads[0].episode.build.images.catalog
    assert cat.names == ("ubuntu:24.04", "python:3.12-slim") and cat.shares.tolist() == pytest.approx([2 / 3, 1 / 3])
    task_of = dict(zip(res.images.rollout.tolist(), (rows["task_id"][r] for r in res.images.rollout.tolist())))
    want = {"t1": 0, "t2": 0, "t3": 1}
    for r, img in zip(res.images.rollout.tolist(), res.images.image.tolist()):
        if task_of[r] in want:
            assert img == want[task_of[r]], (r, task_of[r], img)
    # one node holds 100 MB: ubuntu (80) and python (50) evict each other; t1, t2 (ubuntu) in a row hit
    assert 0 < out["hit_rate"] < 1


# --- the worked examples of docs/simulate.md, reproduced -------------------------------------
def doc_table(heading: str) -> list[list[str]]:
    """The body rows (cells stripped) of the first table after ``heading`` in docs/simulate.md."""
    from pathlib import Path

    lines = (Path(__file__).resolve().parents[3] / "docs" / "simulate.md").read_text(encoding="utf-8").splitlines()
    i = lines.index(heading)
    while not lines[i].startswith("|"):
        i += 1
    rows = []
    for line in lines[i + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def test_worked_example_prepull_table(tmp_path):
    from pathlib import Path

    from sandbox_fleet.simulate.scenario.run import run_scenario

    src = (Path(__file__).resolve().parents[3] / "examples" / "scenarios" / "images.toml").read_text()
    rows = doc_table("### Worked example: pre-pulling the top K images")
    assert [r[0] for r in rows] == ["0", "5", "20", "50"]
    p = 1 / np.arange(1, 201)
    p /= p.sum()
    base = None
    for r in rows:
        k = int(r[0])
        (tmp_path / f"k{k}.toml").write_text(src.replace("prepull = 0\n", f"prepull = {k}\n"))
        s = run_scenario(tmp_path / f"k{k}.toml")
        im = s["images"]
        top = float(p[:k].sum())
        che = top + (1 - top) * che_hit_rate(p[k:] / p[k:].sum(), 10)  # 10 images of 2 GB in 20 GB
        got = [f"{im['hit_rate']:.1%}", f"{che:.1%}", f"{im['build_hours']:.2f}", f"{im['miss_hours']:.2f}",
               f"{s['sandbox_hours']:,.1f}", f"{s['step_s']['mean']:,.1f} s"]
        assert got == r[1:], (k, got, r)
        assert abs(im["hit_rate"] - che) < 0.01  # the run against the independent steady state
        if k == 0:
            base = im
    saved = {w["prepull"]: w for w in base["prepull_whatif"]}
    assert [f"{saved[k]['build_hours_saved']:.2f}" for k in (5, 20, 50)] == ["6.27", "13.87", "19.96"]


def test_worked_example_substrate_table(tmp_path):
    from pathlib import Path

    from sandbox_fleet.simulate.scenario.run import run_scenario
    from sandbox_fleet.substrates import load_substrates

    src = (Path(__file__).resolve().parents[3] / "examples" / "scenarios" / "substrate.toml").read_text()
    catalog = {s.name: s for s in load_substrates()}
    plain = None
    for r in doc_table("### Worked example: one workload on three substrates"):
        name = r[0].strip("`")
        text = (src.replace('[substrate]\nname = "cloud-vm"\n', "") if name == "none"
                else src.replace('name = "cloud-vm"', f'name = "{name}"'))
        (tmp_path / f"{name}.toml").write_text(text)
        s = run_scenario(tmp_path / f"{name}.toml")
        got = [f"{s['hold_s']['mean']:,.1f} s", f"{s['concurrency']['mean']:,.1f}", f"{s['sandbox_hours']:,.1f}"]
        assert got == r[2:5], (name, got, r)
        if name == "none":
            plain = s
            continue
        sub, block = catalog[name], s["substrate"]
        assert [f"{block['added_sandbox_hours']:,.2f}", f"{block['added_worker_hours_per_million']:,.1f}"] == r[5:7]
        # independent: every rollout held c + (its turns) x a longer, the same draws otherwise
        want_h = (20_000 * sub.cold_start_s + block["turns_mean"] * 20_000 * sub.per_action_s) / 3600
        assert s["sandbox_hours"] - plain["sandbox_hours"] == pytest.approx(want_h, rel=1e-9)


def test_retries_build_warm_and_are_not_references():
    """Preempted attempts re-run on the admission kernel: their builds are the warm draw, and only first
    attempts are the cache's references."""
    from sandbox_fleet.simulate.engine.entities import RetryPolicy

    cat = ImageCatalog(tuple("abcdefgh"), np.full(8, 1 / 8), np.full(8, 100.0), "eight")
    ep = Episode(agent=Exponential(200.0), build=Build(hit=Deterministic(2.0),
                                                       images=ImageCache(cat, cache_mb=200.0, pull_mb_per_s=10.0)))
    fleet = Fleet(cap=16, slots_per_node=4, preempt_rate_per_node_s=1 / 2000, node_replace_s=30.0)
    wl = Poisson(rate_per_s=0.05, n=2000, episode=ep, retry=RetryPolicy(max_retries=3, on=("preemption",)))
    res = run_workloads(fleet, [wl], seed=8)
    assert res.engine == "admission-kernel" and res.preemptions > 0
    retry_rows = (res.attempt > 0) & res.started
    assert retry_rows.any()
    cut = res.phase == 4  # a preempted retry's build may be cut short
    assert np.all(res.build_s[retry_rows & ~cut] == 2.0)
    assert res.images.hit.size == 2000 and res.images.nodes == 4
