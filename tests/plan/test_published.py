"""The source document's table, reproduced figure by figure through the CLI.

Every expected value below is copied from the document's printed output (its "Executed output"
block), not computed with the planner.
"""

from __future__ import annotations

import json

import pytest

from .conftest import PUBLISHED


@pytest.fixture
def published(run_cli):
    text = run_cli("plan", PUBLISHED, "--node-type", "seed-96c", "--detail")  # the whole order
    assert text.code == 0, text.err
    js = run_cli("plan", PUBLISHED, "--node-type", "seed-96c", "--json")
    assert js.code == 0, js.err
    return text.out, json.loads(js.out)


def test_terminal_prints_the_documents_figures(published):
    out, _ = published
    out = " ".join(out.split())  # the text folds long lines at the terminal's width: compare words
    for figure in [
        "mean concurrency 467.6",
        "duty 15.6%",
        "cpu 96 / memory 192 / disk 682; binding: cpu",
        "BUY 32 x seed-96c",
        "prefill 48.1 tok, decode 1.72 tok",
        "prefill 144,186 tok/s, decode 5,151 tok/s",
        "-22.9% at 2, +5.1% at 5, +3.6% at 11, +2.8% at 20, +0.6% at 50",
        "1.0, 3.0, 6.0, 11.0, 25.5 at 1/5/11/21/50 turns",
        "pass rate 25.5%",
        "3.06 sandbox-hours per passing trajectory",
        "191,099 sandbox-hours over 17.0 days",
        "sized but not costed",
    ]:
        assert figure in out, figure


def test_json_carries_the_documents_figures(published):
    _, p = published
    m = p["measured"]
    assert round(m["concurrency_mean"], 1) == 467.6
    assert round(m["duty"] * 100, 1) == 15.6
    assert p["target"] == {**p["target"], "concurrency": 3000, "source": "measured-peak"}
    n = p["nodes"]
    assert n["type"] == "seed-96c"
    assert {k: n["slots_per_node"][k] for k in ("cpu", "memory", "disk")} == {"cpu": 96, "memory": 192, "disk": 682}
    assert n["binding"] == "cpu" and n["count"] == 32 and n["lower_bound"] == 32
    assert round(m["prefill_per_sandbox_s"], 1) == 48.1
    assert round(m["decode_per_sandbox_s"], 2) == 1.72
    assert round(p["inference"]["prefill_tok_s"]) == 144_186
    assert round(p["inference"]["decode_tok_s"]) == 5_151
    errs = {k: round(v * 100, 1) for k, v in p["context"]["model_error_by_turns"].items()}
    assert errs == {"2": -22.9, "5": 5.1, "11": 3.6, "20": 2.8, "50": 0.6}
    saving = p["caching"]["saving_by_turns"]
    assert {k: round(saving[k], 1) for k in ("1", "5", "11", "21", "50")} == {"1": 1.0, "5": 3.0, "11": 6.0, "21": 11.0, "50": 25.5}
    assert round(m["pass_rate"] * 100, 1) == 25.5
    assert round(m["sandbox_hours_per_pass"], 2) == 3.06
    assert round(m["sandbox_hours"]) == 191_099
    assert round(m["span_days"], 1) == 17.0
    # an unpriced type: sized, not costed
    assert p["cost"]["on_demand_per_h"] is None and p["cost"]["per_passing_trajectory"] is None


def test_json_has_the_issue_keys(published):
    _, p = published
    need = {
        "target": ["concurrency", "source"],
        "nodes": ["type", "count", "binding", "slots_per_node", "lower_bound", "stranded", "alternatives"],
        "storage": ["scratch_gb", "per_node_gb"],
        "inference": ["prefill_tok_s", "decode_tok_s", "prefill_tok_s_cached", "gpus", "gpus_cached", "binding"],
        "caching": ["saving_by_turns", "saving_measured_mix"],
        "cost": ["reserved_per_h", "on_demand_per_h", "spot_per_h", "per_passing_trajectory", "exception_waste_per_h"],
        "measured": ["concurrency_mean", "duty", "pass_rate", "sandbox_hours_per_pass", "sandbox_hours", "span_days"],
    }
    for block, keys in need.items():
        assert set(keys) <= set(p[block]), block
    assert isinstance(p["nodes"]["alternatives"], list)
    assert "model_error_by_turns" in p["context"]


def test_example_is_a_published_summary():
    doc = json.loads(PUBLISHED.read_text())
    assert doc["source"] == ["published"] and doc["kind"] == "measure"
    assert doc["tokens"]["turns_median"] == 11 and doc["tasks"]["bundle_bytes_median"] == 39_900
    assert doc["rows"] == 327_189 and doc["span_s"] == 1_471_279.1 and doc["sandbox_s"] == 687_957_914
    assert doc["concurrency"]["peak"] == 3000
    t = doc["tokens"]
    assert (t["rows"], t["sandbox_s"], t["input"], t["output"], t["turn_tokens"]) == (
        238_415, 567_158_849, 27_258_761_216, 973_830_402, 824)
    assert t["median_input_by_turns"] == {"2": 3207, "5": 11760, "11": 52474, "20": 168366, "50": 1044116}
    o = doc["outcomes"]
    assert (o["passed"], o["rewarded"], round(o["exception_rate"], 4)) == (62_511, 245_554, 0.2937)
    assert doc["tasks"]["requests"][0] | {"gpus": None} == {"cpus": 1, "memory_mb": 2048, "storage_mb": 6144, "gpus": None, "tasks": 37_459}
    # the document does not give p90 holds or a turn histogram: null, not invented
    assert doc["hold_s"]["p90"] is None and t["turns_histogram"] is None


def test_json_output_is_byte_identical_across_runs(run_cli):
    a = run_cli("plan", PUBLISHED, "--json").out
    b = run_cli("plan", PUBLISHED, "--json").out
    assert a == b and a.startswith("{") and a.rstrip().endswith("}")
