"""The inference figures live in the typed ``SimulateSummary`` (schema version 3)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from sandbox_fleet.contract import has_path, parse
from sandbox_fleet.schemas import schema_text
from sandbox_fleet.simulate.model import SimulateSummary
from sandbox_fleet.simulate.scenario.run import run_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
KEYS = ("inference.replicas", "inference.gpus", "inference.calls", "inference.utilisation", "inference.mean_batch",
        "inference.queue_wait_s.mean", "inference.queue_wait_s.p99", "inference.ttft_s.p50", "inference.ttft_s.p99",
        "inference.cache_hit_rate", "inference.evicted_gb", "inference.input_tokens",
        "inference.prefill_tokens_computed", "inference.decode_tokens", "inference.littles_law.mean_in_pool",
        "inference.littles_law.arrival_rate_per_s", "inference.littles_law.mean_time_in_pool_s", "hold_stretch")


def _validate(doc: dict) -> None:
    jsonschema.Draft202012Validator(json.loads(schema_text("simulate"))).validate(doc)


def test_every_inference_figure_is_a_declared_path():
    assert all(has_path(SimulateSummary, k) for k in KEYS)
    assert not has_path(SimulateSummary, "inference.queue_wait_s.p50")  # not a figure the pool reports


def test_a_pool_served_run_fills_the_blocks_and_validates():
    s = run_scenario(EXAMPLES / "closed_loop.toml")
    _validate(s)
    m = parse(SimulateSummary, s)
    inf = m.inference
    # closed_loop.toml: 6,000 rollouts x 4 deterministic turns, one replica, no prefill tokens.
    assert (inf.replicas, inf.gpus, inf.calls) == (1, 1, 24_000)
    assert inf.input_tokens == inf.prefill_tokens_computed + round(inf.cache_hit_rate * inf.input_tokens)
    assert m.hold_stretch >= 1.0
    ll = inf.littles_law
    assert ll.mean_in_pool == ll.arrival_rate_per_s * ll.mean_time_in_pool_s or \
        abs(ll.mean_in_pool - ll.arrival_rate_per_s * ll.mean_time_in_pool_s) <= 1e-9 * ll.mean_in_pool


def test_a_run_without_a_pool_has_null_blocks():
    s = run_scenario(EXAMPLES / "mmc.toml")
    _validate(s)
    assert s["schema_version"] == 6 and s["inference"] is None and s["hold_stretch"] is None and s["nodes"] is None
