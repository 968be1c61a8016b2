"""A small synthetic release, measured like any real one, against the published figures.

Built once per module at scale 0.05 (16,359 rollouts, 1,874 tasks). Tolerances are
the issue's; those that depend on rare events (touches of the cap) are scaled.
"""

import hashlib

import numpy as np
import pyarrow.parquet as pq
import pytest

from sandbox_fleet.synth import synth
from sandbox_fleet.synth.calibration import PUBLISHED as P
from summaries import paths_json

SCALE = 0.05


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    out = tmp_path_factory.mktemp("rst") / "out"
    summary = synth(out, scale=SCALE, seed=1, progress=False)
    return out, summary


@pytest.fixture(scope="module")
def m(release):
    out, _ = release
    return paths_json([str(out / "trajectories")], tasks=str(out / "tasks"))


def test_rows_span_and_concurrency(m):
    assert m["rows"] == round(P["rollouts"] * SCALE)
    assert m["span_s"] == pytest.approx(P["span_s"], rel=0.03)
    c = m["concurrency"]
    assert c["mean"] == pytest.approx(P["mean_concurrency"] * SCALE, rel=0.05)
    assert c["peak"] == round(P["peak"] * SCALE)
    # The cap is a ceiling touched again and again, a small share of the time.
    assert c["touches"] >= 2000 * SCALE
    assert 0.0035 <= c["time_at_peak_s"] / m["span_s"] <= 0.014
    assert c["cap_detected"]


def test_holds(m):
    h = m["hold_s"]
    assert h["median"] == pytest.approx(P["hold_median_s"], rel=0.05)
    assert h["p99"] == pytest.approx(P["hold_p99_s"], rel=0.10)
    assert h["mean"] == pytest.approx(P["hold_mean_s"], rel=0.05)
    assert h["mean_with_tokens"] == pytest.approx(P["hold_mean_tokens_s"], rel=0.05)
    assert h["mean_without_tokens"] == pytest.approx(P["hold_mean_no_tokens_s"], rel=0.05)
    assert h["min"] >= 3.0 and h["max"] <= P["hold_max_s"]


def test_outcomes_and_coverage(m):
    o, cov, n = m["outcomes"], m["coverage"], m["rows"]
    assert o["exception_rate"] == pytest.approx(P["exception_rate"], abs=0.005)
    assert o["pass_rate"] == pytest.approx(P["pass_rate"], abs=0.005)
    assert o["pass_rate_clean"] == pytest.approx(P["pass_rate_clean"], abs=0.005)
    assert o["pass_rate_exception"] == pytest.approx(P["pass_rate_exception"], abs=0.005)
    assert cov["missing_reward"] / n == pytest.approx(P["missing_reward"], abs=0.005)
    assert cov["missing_tokens"] / n == pytest.approx(P["missing_tokens"], abs=0.005)
    assert cov["missing_trajectory"] / n == pytest.approx(P["missing_trajectory"], abs=0.005)


def test_tokens(m):
    t = m["tokens"]
    assert t["prefill_per_sandbox_s"] == pytest.approx(P["prefill_per_sandbox_s"], rel=0.05)
    assert t["decode_per_sandbox_s"] == pytest.approx(P["decode_per_sandbox_s"], rel=0.05)
    assert t["cached"] == 0 and t["cached_fraction"] == 0
    assert t["turn_tokens"] == pytest.approx(P["turn_tokens"], rel=0.03)
    assert t["r2_quadratic"] >= 0.99 and t["r2_linear"] < t["r2_quadratic"]
    assert t["turns_median"] == P["turns_median"]
    assert abs(t["turns_p90"] - P["turns_p90"]) <= 1
    for n, pub in P["median_input_by_turns"].items():
        if n >= 5:  # 2-turn rows are rare at this scale (a dozen)
            assert t["median_input_by_turns"][str(n)] == pytest.approx(pub, rel=0.1)


def test_models(m):
    assert set(m["by_model"]) == {"qwen35-27b-iter0000161-hf", "Qwen3.5-27B", "Qwen3.6-27B-base", "gpt-oss-120b"}
    for name, pub in P["by_model"].items():
        got = m["by_model"][name]
        assert got["exception_rate"] == pytest.approx(pub["exception_rate"], abs=0.015)
        assert got["hold_median_s"] == pytest.approx(pub["hold_median_s"], rel=0.10)
    overall = m["hold_s"]["median"]
    assert all(m["by_model"][k]["hold_median_s"] > overall for k in ("qwen35-27b-iter0000161-hf", "Qwen3.5-27B"))


def test_tasks(m):
    t = m["tasks"]
    assert t["count"] == round(P["tasks"] * SCALE)
    standard = [r for r in t["requests"] if (r["cpus"], r["memory_mb"], r["storage_mb"]) == (1, 2048, 6144)]
    assert standard[0]["tasks"] == t["count"] - 1  # round(25 x 0.05) = 1 odd task
    assert t["bundle_bytes_median"] == pytest.approx(P["bundle_median_bytes"], rel=0.05)
    assert t["bundle_bytes_max"] <= P["bundle_max_bytes"]


def test_raw_parquet_independently(release):
    """The same figures straight from the file with NumPy (no measure code)."""
    out, _ = release
    tab = pq.read_table(out / "trajectories" / "metadata" / "trajectories.parquet")
    assert tab.schema.field("started_at").type.tz == "UTC"
    s = tab.column("started_at").cast("int64").to_numpy()
    f = tab.column("finished_at").cast("int64").to_numpy()
    # Brute-force concurrency on a 1-second grid: never above the cap, which is reached.
    grid = np.arange(s.min(), f.max(), 1_000_000)
    level = np.searchsorted(np.sort(s), grid, side="right") - np.searchsorted(np.sort(f), grid, side="right")
    assert level.max() == round(3000 * SCALE)
    assert ((f - s).sum() / (f.max() - s.min())) == pytest.approx(467.6 * SCALE, rel=0.05)
    assert set(tab.column("status").to_pylist()) == {"completed"}
    cached = tab.column("cached_tokens")
    assert cached.null_count == tab.column("input_tokens").null_count
    assert set(cached.drop_null().to_pylist()) == {0}


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
    def digest(out):
        h = hashlib.sha256()
        for p in sorted(out.rglob("*")):
            if p.is_file():
                h.update(str(p.relative_to(out)).encode())
                h.update(p.read_bytes())
        return h.hexdigest()

    a = synth(tmp_path / "a", scale=0.01, seed=3, progress=False)
    synth(tmp_path / "b", scale=0.01, seed=3, progress=False)
    synth(tmp_path / "c", scale=0.01, seed=4, progress=False)
    assert digest(tmp_path / "a") == digest(tmp_path / "b")
    assert digest(tmp_path / "a") != digest(tmp_path / "c")
    assert a.rollouts == round(327_189 * 0.01)


def test_scale_keeps_rates(tmp_path, m):
    small = paths_json([str(synth(tmp_path / "s", scale=0.02, seed=2, progress=False).out) + "/trajectories"])
    assert small["rows"] == round(P["rollouts"] * 0.02)
    assert small["concurrency"]["peak"] == 60
    assert small["span_s"] == pytest.approx(m["span_s"], rel=0.03)
    assert small["concurrency"]["duty"] == pytest.approx(m["concurrency"]["duty"], rel=0.06)
    for key in ("exception_rate", "pass_rate", "pass_rate_clean"):
        assert small["outcomes"][key] == pytest.approx(m["outcomes"][key], abs=0.005)
    assert small["hold_s"]["median"] == pytest.approx(m["hold_s"]["median"], rel=0.05)
    assert small["tokens"]["prefill_per_sandbox_s"] == pytest.approx(m["tokens"]["prefill_per_sandbox_s"], rel=0.05)
