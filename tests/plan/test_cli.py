"""`sandbox-fleet plan` end to end: mixed requests, --json hygiene, RL schedule, and bad input."""

from __future__ import annotations

import json

import pytest

from .conftest import MIXED, PUBLISHED
from .independent import ffd_nodes, turn_expectations


def test_mixed_corpus_packs_to_hand_computed_nodes(run_cli):
    # The measured mixed corpus (tests/producers.py): 600 / 300 / 80 / 20 rollouts holding 416.67 / 125 /
    # 33.33 / 8.33 sandbox-hours (50 : 15 : 4 : 1). Little's law: the peak of 400 splits by sandbox-TIME,
    # 285.71 / 85.71 / 22.86 / 5.71; floors 285 / 85 / 22 / 5, three more seats by largest remainder
    # (0.857 first; the three 0.714s tie, split by the float hours) -> 286 / 85 / 23 / 6.
    # Demand 596 cores, 2,004 GiB, 5,166 GiB disk on 96-core / 384 GiB / 4 TiB nodes: cpu bound
    # ceil(596 / 96) = 7, and FFD (tests/plan/independent.py) packs it into 7.
    r = run_cli("plan", MIXED, "--node-type", "seed-96c", "--json")
    assert r.code == 0, r.err
    p = json.loads(r.out)
    n = p["nodes"]
    assert [m["concurrent"] for m in n["mix"]] == [286, 85, 23, 6]
    assert n["mix_basis"].startswith("sandbox-hours per kind")
    kinds = [({"cpu": m["cpu"], "memory": m["memory"], "disk": m["disk"]}, m["concurrent"]) for m in n["mix"]]
    assert (n["count"], n["lower_bound"]) == (ffd_nodes(kinds, {"cpu": 96, "memory": 393_216, "disk": 4_194_304}), 7) == (7, 7)
    # stranded = 7 nodes' capacity less the demand
    assert n["stranded"] == {"cpu": 7 * 96 - 596.0, "memory_mb": 7 * 393_216 - 2_052_096.0, "disk_mb": 7 * 4_194_304 - 5_289_984.0}
    assert p["storage"]["scratch_at_target_gb"] == pytest.approx(5_289_984 / 1024)
    # turn mix {1:100, 5:300, 11:400, 21:150, 50:50}: sum h n(n+1)/2 / sum h n = 129,400 / 11,650
    assert p["caching"]["saving_measured_mix"] == pytest.approx(129_400 / 11_650)
    assert p["cost"]["per_passing_trajectory"] is None  # seed-96c has no prices


def test_default_picks_cheapest_priced_type_and_lists_runners_up(run_cli, tmp_path):
    cat = tmp_path / "nodes.toml"
    cat.write_text(
        '[[node]]\nname="big"\nvcpus=96\nmemory_gb=384\ndisk_gb=4096\non_demand_usd_h=4.0\nspot_usd_h=1.0\n'
        '[[node]]\nname="small"\nvcpus=32\nmemory_gb=128\ndisk_gb=1500\non_demand_usd_h=1.5\n'
        '[[node]]\nname="free"\nvcpus=96\nmemory_gb=384\ndisk_gb=4096\n'
        '[[node]]\nname="tiny"\nvcpus=1\nmemory_gb=1\ndisk_gb=10\non_demand_usd_h=0.01\n'
    )
    p = json.loads(run_cli("plan", PUBLISHED, "--nodes", cat, "--price-tier", "on-demand", "--json").out)
    # with the default kubelet reserve (0.31 cores on 96, 0.15 on 32): big: 95 slots -> 32 x 4.0 = 128 $/h;
    # small: 31 slots -> ceil(3000/31) = 97 x 1.5 = 145.5 $/h; free: unpriced; tiny: too small
    assert (p["nodes"]["type"], p["nodes"]["count"], p["cost"]["on_demand_per_h"]) == ("big", 32, 128.0)
    assert [a["type"] for a in p["nodes"]["alternatives"]] == ["small", "free"]
    assert [x["type"] for x in p["nodes"]["too_small"]] == ["tiny"]
    # spot headline: 32 x 1.0 over 3000 x duty busy sandboxes, x sandbox-hours per pass
    s = json.loads(run_cli("plan", PUBLISHED, "--nodes", cat, "--price-tier", "spot", "--json").out)
    duty = 687_957_914 / 1_471_279.1 / 3000
    assert s["cost"]["per_passing_trajectory"] == pytest.approx(32.0 / (3000 * duty) * 687_957_914 / 3600 / 62_511)


def test_json_prints_one_object_and_nothing_else(run_cli):
    r = run_cli("plan", PUBLISHED, "--concurrency", "960", "--json")
    assert r.code == 0
    p = json.loads(r.out)  # the whole of stdout parses
    assert {k: p["target"][k] for k in ("concurrency", "source", "detail")} == {"concurrency": 960, "source": "concurrency", "detail": "--concurrency 960"}
    # the cheapest type keeps a 0.31-core kubelet reserve: 95 one-core slots, ceil(960 / 95) = 11 nodes
    assert p["nodes"]["count"] == 11 and p["nodes"]["per_node"] == 95


def test_rl_schedule_through_the_cli(run_cli):
    r = run_cli("plan", PUBLISHED, "--batch", "64", "--train-s", "120", "--json")
    assert r.code == 0, r.err
    t = json.loads(r.out)["target"]
    assert t["source"] == "rl-schedule" and t["batch"] == 64 and t["method"] in ("simulated", "closed-form")
    assert 1 <= t["concurrency"] <= 64


def test_gpus_from_a_roofline(run_cli):
    # prefill per GPU: 0.4 x 989e12 / (2 x 27e9); decode at the mean context over the lognormal turns
    # through median 11 and p90 21 (numerically integrated, tests/plan/independent.py), not the median's 824 x 6
    r = run_cli("plan", PUBLISHED, "--json", "--gpu-tflops", "989", "--gpu-hbm-tbs", "3.35",
                "--model-params-b", "27", "--kv-bytes-per-token", "65536", "--gpu-usd-h", "2")
    p = json.loads(r.out)["inference"]
    assert p["per_gpu"]["prefill_tok_s"] == pytest.approx(0.4 * 989e12 / 54e9)
    m1, m2 = turn_expectations(11, 21, upto=2000)
    assert p["per_gpu"]["decode_tok_s"] == pytest.approx(0.4 * 3.35e12 / (27e9 * 2 / 64 + 65536 * 824 * m2 / m1), rel=1e-9)
    assert p["gpus"] >= p["gpus_cached"] >= 1
    assert p["binding"] in ("prefill", "decode")


def _one_line_exit_2(r) -> str:
    assert r.code == 2, (r.code, r.out, r.err)
    msg = r.err.strip()
    assert msg.startswith("error:") and "\n" not in msg and "Traceback" not in r.err
    return msg


def test_node_type_smaller_than_one_request(run_cli, tmp_path):
    cat = tmp_path / "n.toml"
    cat.write_text('[[node]]\nname="pico"\nvcpus=4\nmemory_gb=1\ndisk_gb=100\n')
    msg = _one_line_exit_2(run_cli("plan", PUBLISHED, "--nodes", cat, "--node-type", "pico"))
    assert "pico" in msg and "smaller than one sandbox request" in msg


def test_malformed_catalog_entry(run_cli, tmp_path):
    cat = tmp_path / "n.toml"
    cat.write_text('[[node]]\nname="neg"\nvcpus=8\nmemory_gb=-32\ndisk_gb=100\n')
    msg = _one_line_exit_2(run_cli("plan", PUBLISHED, "--nodes", cat))
    assert "'neg'" in msg and "'memory_gb'" in msg and str(cat) in msg


@pytest.mark.parametrize("args", [("--concurrency", "0"), ("--concurrency", "-10"), ("--passing-per-hour", "0"), ("--batch", "0")])
def test_zero_or_negative_target(run_cli, args):
    msg = _one_line_exit_2(run_cli("plan", PUBLISHED, *args))
    assert "must be a positive" in msg


def test_input_without_hold_times(run_cli, tmp_path):
    f = tmp_path / "empty.json"
    f.write_text(json.dumps({"schema_version": 2, "kind": "measure", "rows": 0, "span_s": None, "sandbox_s": None,
                             "hold_s": {"mean": None}}))
    assert "no hold times" in _one_line_exit_2(run_cli("plan", f))


def test_other_bad_inputs(run_cli, tmp_path):
    assert "not found" in _one_line_exit_2(run_cli("plan", tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert "bad.json" in _one_line_exit_2(run_cli("plan", bad))
    assert "not in the" in _one_line_exit_2(run_cli("plan", PUBLISHED, "--node-type", "nope"))
    assert "--request" in _one_line_exit_2(run_cli("plan", PUBLISHED, "--request", "1,2"))
    assert "--gpu-hbm-tbs" in _one_line_exit_2(run_cli("plan", PUBLISHED, "--gpu-tflops", "900"))
    assert "--prefix-break" in _one_line_exit_2(run_cli("plan", PUBLISHED, "--prefix-break", "1.5"))


def test_telemetry_is_measured_on_the_fly(run_cli):
    from pathlib import Path

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "harbor" / "terminus2-n3"
    r = run_cli("plan", fixture, "--concurrency", "4", "--json")
    assert r.code == 0, r.err
    p = json.loads(r.out)
    assert p["target"]["concurrency"] == 4
    assert p["measured"]["peak"] == 3  # the fixture job ran 3 trials at once (n_concurrent_trials = 3)
    assert any("assumed 1 cpu" in n for n in p["notes"])  # no tasks given: the assumption is stated


@pytest.mark.parametrize(
    "args, words",
    [
        (["--gpu", "nope", "--model-params-b", "27", "--kv-bytes-per-token", "65536"], "--gpu 'nope'"),
        (["--gpu", "l40s-48gb", "--model-params-b", "405", "--kv-bytes-per-token", "65536"], "--max-tp 8"),
        (["--gpu-prefill-tok-s", "9000", "--gpu-decode-tok-s", "900", "--gpu-target-utilisation", "1.5"], "--gpu-target-utilisation"),
        (["--passing-per-hour", "10", "--shape", "smooth", "--max-wait-s", "-1"], "--max-wait-s"),
        (["--passing-per-hour", "10", "--shape", "bursty"], "--shape"),
    ],
)
def test_bad_gpu_and_shape_input_is_one_line_and_exit_2(run_cli, args, words):
    r = run_cli("plan", PUBLISHED, *args)
    assert r.code == 2 and words in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_gpu_from_the_catalog_sizes_by_memory(run_cli):
    r = run_cli("plan", PUBLISHED, "--concurrency", "374", "--gpu", "h100-80gb", "--model-params-b", "27",
                "--kv-bytes-per-token", "65536", "--json")
    inf = json.loads(r.out)["inference"]
    # h100-80gb: 80 GiB x 0.9 = 72 usable; 374 live prefixes x 7,054 tok (the mean context over the
    # lognormal turns, not the median's 4,944) x 64 KiB = 161.0 GiB
    m1, m2 = turn_expectations(11, 21, upto=2000)
    assert inf["gpu"] == "h100-80gb" and inf["memory"]["kv_gb_live"] == pytest.approx(374 * 824 * m2 / m1 / 16384, rel=1e-9)
    assert inf["gpus_cached"] >= inf["memory"]["gpus_memory_bound_cached"] == 4


def test_the_reader_flags_are_checked_once_even_for_a_summary_input(run_cli):
    # the flags travel as one ReadOptions built before the input is read: a bad one is refused
    # whatever PATH is, not only when it turns out to be telemetry
    assert "--time-unit" in _one_line_exit_2(run_cli("plan", PUBLISHED, "--time-unit", "fortnights"))
    assert "--assume-tz" in _one_line_exit_2(run_cli("check", PUBLISHED, "--assume-tz", "Mars/Olympus"))
