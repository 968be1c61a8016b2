"""``[inference]`` in a scenario file: bad input is one line naming the key, exit 2."""

from __future__ import annotations

import pytest

BASE = """
[fleet]
cap = 4
[workload]
kind = "closed"
population = 4
count = 40
[turns]
turns = { dist = "deterministic", value_s = 3 }
command = { dist = "exponential", mean_s = 1.0 }
prefill_tokens = { dist = "deterministic", value_s = 1000 }
decode_tokens = { dist = "deterministic", value_s = 1000 }
"""


def _run(run_cli, tmp_path, text):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return run_cli("simulate", p, "--json")


@pytest.mark.parametrize("extra,key", [
    ('[inference]\ngpus = 1\ngpu = "h100-80gb"\nmodel_params_b = 70\nkv_bytes_per_token = 1000\n', "inference.model_params_b"),
    ('[inference]\nreplicas = 1\nprefill_tok_s = 1\ndecode_tok_s = 1\nkv_cache_gb = 0.000001\nkv_bytes_per_token = 1000\n', "kv_cache_gb"),
    ('[inference]\nreplicas = 1\nprefill_tok_s = 1\n', "inference.decode_tok_s"),
    ('[inference]\nreplicas = 1\nprefill_tok_s = 1\ndecode_tok_s = 1\nutilisation = 0.5\n', "inference.utilisation"),
    ('[inference]\nreplicas = 1\nprefill_tok_s = 1\ndecode_tok_s = 1\nrouting = "random"\n', "inference.routing"),
    ('[inference]\nreplicas = 1\nprefill_tok_s = 1\ndecode_tok_s = 1\nbogus = 1\n', "inference.bogus"),
    ('[inference]\nreplicas = 1\ngpu = "z100"\nmodel_params_b = 1\n', "inference.gpu"),
])
def test_bad_inference_is_one_line_exit_2(run_cli, tmp_path, extra, key):
    r = _run(run_cli, tmp_path, BASE + extra)
    assert r.code == 2, r.err
    assert r.err.count("\n") == 1 and key in r.err and "Traceback" not in r.err


def test_model_latency_with_inference_is_refused(run_cli, tmp_path):
    text = BASE.replace("[turns]\n", "[turns]\nmodel_latency = { dist = \"exponential\", mean_s = 1.0 }\n")
    r = _run(run_cli, tmp_path, text + '[inference]\nreplicas = 1\nprefill_tok_s = 1000\ndecode_tok_s = 1000\n')
    assert r.code == 2 and "turns.model_latency" in r.err and r.err.count("\n") == 1


def test_tokens_without_inference_are_refused(run_cli, tmp_path):
    r = _run(run_cli, tmp_path, BASE)
    assert r.code == 2 and "turns.model_latency" in r.err


def test_gpu_roofline_fills_rates_and_cache(tmp_path):
    from sandbox_fleet.gpus import GIB, compute_tok_s, get_gpu, kv_free_bytes, weights_read_s
    from sandbox_fleet.simulate.scenario.run import build, load_scenario

    p = tmp_path / "s.toml"
    p.write_text(BASE + '[inference]\ngpus = 4\ngpus_per_replica = 2\ngpu = "h100-80gb"\nmodel_params_b = 27\n'
                        'kv_bytes_per_token = 65536\n')
    inf = build(load_scenario(p), tmp_path, str(p)).inference
    h = get_gpu("h100-80gb")
    assert inf.replicas == 2 and inf.gpus_per_replica == 2
    assert inf.decode_tok_s == pytest.approx(compute_tok_s(h, 27, 0.4, 2))
    assert inf.iteration_base_s == pytest.approx(weights_read_s(h, 27, 2.0, 2))
    assert inf.kv_cache_bytes == pytest.approx(kv_free_bytes(h, 27, 2)) == pytest.approx(2 * 80 * GIB * 0.9 - 54e9)


def test_closed_population_stays_constant_and_queues_above_the_cap(tmp_path):
    from sandbox_fleet.simulate.scenario.run import run_scenario

    p = tmp_path / "s.toml"
    p.write_text(BASE.replace("population = 4", "population = 6")
                 + '[inference]\nreplicas = 1\nprefill_tok_s = 100000\ndecode_tok_s = 10000\n')
    s = run_scenario(p)
    assert s["concurrency"]["peak"] == 4 and s["queue_wait_s"]["mean"] > 0
    # 6 in the system at all times until the last 6 drain: L = 6 over most of the run.
    assert s["littles_law"]["mean_in_system"] == pytest.approx(6, rel=0.1)


def test_a_sweep_variant_runs_with_its_inference_pool(tmp_path):
    import tomllib

    from sandbox_fleet.sweep.task import simulate_variant

    data = tomllib.loads(BASE + '[inference]\nreplicas = 2\nprefill_tok_s = 100000\ndecode_tok_s = 10000\n')
    s = simulate_variant(data, str(tmp_path), "s.toml", 1)
    assert s["inference"]["replicas"] == 2 and s["inference"]["calls"] == 40 * 3


def test_same_seed_same_bytes(tmp_path):
    import json
    from pathlib import Path

    from sandbox_fleet.simulate.scenario.run import run_scenario

    path = Path(__file__).resolve().parents[3] / "examples" / "scenarios" / "inference_pool.toml"
    a = run_scenario(path, telemetry_out=tmp_path / "a.parquet")
    b = run_scenario(path, telemetry_out=tmp_path / "b.parquet")
    a.pop("telemetry"), b.pop("telemetry")
    assert json.dumps(a) == json.dumps(b)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
