"""The telemetry filter recorded in the outputs that read telemetry (backtest, simulate --replay, a
scenario's [filter]), and a bad [filter] date named as the scenario file spells it.

The telemetry is test_flag_vocabulary's shape: 60 rollouts two minutes apart from 2025-12-01T00:00:00Z,
model b every third, model a the rest; the rows each filter keeps are counted here by hand.
"""

from __future__ import annotations

import json

import pytest

S0 = 1_764_547_200  # 2025-12-01T00:00:00Z


@pytest.fixture
def telemetry(tmp_path):
    """60 rollouts two minutes apart, rollout i holding 600 + 7i s; model b every third, model a the rest."""
    rows = ["id,started_at,finished_at,reward,model"]
    for i in range(60):
        rows.append(f"r{i},{S0 + 120 * i},{S0 + 120 * i + 600 + 7 * i},1,{'b' if i % 3 == 0 else 'a'}")
    path = tmp_path / "tel.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_backtest_records_the_flags_it_filtered_by(run_cli, telemetry):
    r = run_cli("backtest", telemetry, "--model", "a", "--since", "2025-12-01T01:00:00+01:00", "--seeds", "3", "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    # 01:00 at +01:00 is 00:00 UTC: every model-a rollout is kept (40 of 60)
    assert out["rows"] == 40
    assert out["telemetry_filter"] == {"source": "flags", "scenario": None, "models": ["a"],
                                       "since": "2025-12-01T01:00:00+01:00", "until": None,
                                       "since_utc": "2025-12-01T00:00:00+00:00", "until_utc": None}
    plain = json.loads(run_cli("backtest", telemetry, "--seeds", "3", "--json").out)
    assert plain["telemetry_filter"] is None and plain["rows"] == 60


def test_simulate_replay_records_the_flags_it_filtered_by(run_cli, telemetry):
    r = run_cli("simulate", "--replay", telemetry, "--until", "2025-12-01T01:00:00", "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["rollouts"] == 30  # started at 120 i s < 3,600 s: i = 0..29
    assert out["telemetry_filter"] == {"source": "flags", "scenario": None, "models": None, "since": None,
                                       "until": "2025-12-01T01:00:00", "since_utc": None,
                                       "until_utc": "2025-12-01T01:00:00+00:00"}


def _scenario(tmp_path, telemetry_path, table: str):
    p = tmp_path / "replay.toml"
    p.write_text(f'[fleet]\ncap = 4\n[workload]\nkind = "replay"\ntelemetry = "{telemetry_path}"\n\n[filter]\n{table}\n')
    return p


def test_a_scenario_records_its_filter_table(run_cli, telemetry, tmp_path):
    p = _scenario(tmp_path, telemetry, 'models = ["b"]\nsince = "2025-12-01"')
    r = run_cli("simulate", p, "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["rollouts"] == 20  # model b: every third of 60
    assert out["telemetry_filter"] == {"source": "scenario", "scenario": "replay.toml", "models": ["b"],
                                       "since": "2025-12-01", "until": None,
                                       "since_utc": "2025-12-01T00:00:00+00:00", "until_utc": None}


@pytest.mark.parametrize("key", ["since", "until"])
def test_a_bad_filter_date_names_the_scenario_file_and_its_key(run_cli, telemetry, tmp_path, key):
    p = _scenario(tmp_path, telemetry, f'{key} = "last tuesday"')
    r = run_cli("simulate", p)
    assert r.code == 2
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.err
    assert lines[0] == (f"error: {p}: [filter] {key}: 'last tuesday' is not an ISO-8601 date or time "
                        "(e.g. 2026-11-29T08:00:00Z)")
    assert "--" not in lines[0]  # the file's key, not a flag
