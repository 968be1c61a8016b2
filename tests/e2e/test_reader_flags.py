"""Every command that measures on the fly takes the same reader flags as measure."""

import json

import pytest

S0 = 1764403200  # 2025-11-29T08:00:00Z


@pytest.fixture
def old_times(tmp_path):
    # Durations from epoch 0 (1970): implausible unless --allow-any-time.
    f = tmp_path / "old.csv"
    f.write_text("id,started_at,finished_at,job\n" + "".join(f"r{i},{i},{i + 600},j\n" for i in range(40)))
    return f


def test_measure_rejects_and_shows_reasons_in_the_terminal(run_cli, tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("id,started_at,finished_at\n" + "".join(f"r{i},{S0 + i},{S0 + i + 60}\n" for i in range(5)) + "h,0,10\n")
    r = run_cli("measure", f, "--time-unit", "s")
    assert r.code == 0
    assert "rejected 1 row(s): implausible time" in r.out.replace("\n", " ")


@pytest.mark.parametrize("command", ["check", "plan", "report"])
def test_on_the_fly_commands_take_the_time_window_flags(run_cli, tmp_path, old_times, command):
    extra = ["-o", tmp_path / "r.html"] if command == "report" else []
    refused = run_cli(command, old_times, "--time-unit", "s", *extra)
    assert refused.code == 2 and "implausible time: 40" in refused.err
    ok = run_cli(command, old_times, "--time-unit", "s", "--allow-any-time", "--min-turn-rows", "5", *extra)
    assert ok.code in (0, 1), ok.err  # check exits 1 when a check fails; the input was read


def test_simulate_from_takes_the_reader_flags(run_cli, tmp_path, old_times):
    out = tmp_path / "s.toml"
    assert run_cli("simulate", out, "--from", old_times, "--time-unit", "s").code == 2
    r = run_cli("simulate", out, "--from", old_times, "--time-unit", "s", "--allow-any-time", "--json")
    assert r.code == 0, r.err
    assert out.is_file()


def test_inspect_score_flag(run_cli):
    from pathlib import Path

    log = Path(__file__).resolve().parents[1] / "fixtures" / "inspect" / "faulty.eval"
    r = run_cli("measure", log, "--score", "nope", "--json")
    assert r.code == 0
    summary = json.loads(r.out)
    assert summary["coverage"]["missing_reward"] == 3
    assert any("no score 'nope'" in w for w in summary["warnings"])
