"""One flag vocabulary (cli_flags): panels and plain metavars in every command's --help, -V, a
switch given a value refused naming it, renamed flags kept for a release with a notice, one
request syntax, and the telemetry filters on every command that measures telemetry."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "examples" / "rst-published.json"
COMMANDS = ("measure", "plan", "report", "check", "simulate", "synth", "sweep", "optimize", "backtest", "schema", "demo",
            "catalog check", "catalog import")
#: Typer's own type labels, which the help must not show
TYPER_LABEL = re.compile(r"<(bool|str|int|float|path|file|directory|list\[[^\]]*\]|Path)>")


@pytest.fixture
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "240")
    monkeypatch.setenv("NO_COLOR", "1")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_has_panels_and_plain_metavars(run_cli, wide, command):
    from sandbox_fleet.cli_flags import PANELS

    r = run_cli(*command.split(), "--help")
    assert r.code == 0, r.err
    panels = re.findall(r"╭─ (\w+) ─", r.out)
    assert panels and set(panels) <= {"Arguments", *PANELS}, panels  # no catch-all "Options" panel
    assert panels == sorted(panels, key=lambda x: -1 if x == "Arguments" else PANELS.index(x))
    assert TYPER_LABEL.search(r.out) is None, TYPER_LABEL.search(r.out)
    # a switch shows no metavar at all: "--json" is followed by its help text, not a type
    for line in r.out.splitlines():
        m = re.match(r"│ (--json|--force|--detail|--strict)\s+(\S+)", line)
        assert m is None or (m[2][0].isupper() and m[2] not in ("TEXT", "PATH", "FLOAT", "INTEGER")), line


def test_every_option_of_every_command_has_a_named_panel():
    """Programmatically, not from the text: a new flag must be given a panel in cli_flags.PANEL_OF."""
    from typer.main import get_command

    from sandbox_fleet import cli
    from sandbox_fleet.cli_flags import PANELS

    group = get_command(cli._app_for([]))
    loose = []
    commands = [(name, c) for name, c in group.commands.items() if not hasattr(c, "commands")]
    commands += [(f"{name} {sub}", c) for name, g in group.commands.items() for sub, c in getattr(g, "commands", {}).items()]
    assert any(name.startswith("catalog ") for name, _ in commands)  # the sub-app's commands are looked at too
    for name, command in commands:
        for p in command.params:
            if p.param_type_name == "option" and not p.hidden and getattr(p, "rich_help_panel", None) not in PANELS:
                loose.append(f"{name} {max(p.opts, key=len)}")
    assert loose == []


def test_root_help_has_no_typer_labels_and_v_is_version(run_cli, wide):
    from sandbox_fleet import __version__

    r = run_cli("--help")
    assert r.code == 0 and TYPER_LABEL.search(r.out) is None
    assert "-V" in r.out
    for flag in ("-V", "--version"):
        v = run_cli(flag)
        assert (v.code, v.out) == (0, f"sandbox-fleet {__version__}\n")


@pytest.mark.parametrize("argv, flag, word", [
    (["check", str(PUBLISHED), "--json", "true"], "--json", "true"),
    (["check", str(PUBLISHED), "--strict", "False"], "--strict", "False"),
    (["plan", str(PUBLISHED), "--detail", "yes"], "--detail", "yes"),
    (["measure", str(PUBLISHED), "--allow-any-time", "1"], "--allow-any-time", "1"),
])
def test_a_switch_given_a_value_is_refused_naming_the_switch(run_cli, argv, flag, word):
    r = run_cli(*argv)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert f"{flag} is a switch and takes no value: '{word}'" in r.err
    assert str(PUBLISHED) not in r.err  # the input is not blamed


def test_a_file_named_like_a_value_is_still_an_input(run_cli, tmp_path, monkeypatch):
    """``check --json true`` where ``true`` is a real file: the word is the input, as written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "true").write_text(PUBLISHED.read_text())
    r = run_cli("check", "--json", "true")
    assert "is a switch" not in r.err


def _roofline(*flags: str) -> tuple[str, ...]:
    return (str(PUBLISHED), "--gpu", "h100-80gb", "--model-params-b", "27", "--kv-bytes-per-token", "65536", *flags, "--json")


@pytest.mark.parametrize("old, new, value", [
    ("--utilisation", "--roofline-utilisation", "0.5"),
    ("--gpu-utilisation", "--gpu-target-utilisation", "0.6"),
])
def test_a_renamed_flag_keeps_its_old_name_with_one_notice(run_cli, wide, old, new, value):
    by_new = run_cli("plan", *_roofline(new, value))
    assert by_new.code == 0 and by_new.err == "", by_new.err
    for spelled in ((old, value), (f"{old}={value}",)):
        by_old = run_cli("plan", *_roofline(*spelled))
        assert by_old.code == 0
        assert json.loads(by_old.out) == json.loads(by_new.out)
        assert by_old.err == f"note: {old} is now {new}; the old name works until the next release\n"
    default = run_cli("plan", *_roofline())
    assert json.loads(default.out)["inference"] != json.loads(by_new.out)["inference"]  # the value was used
    help_text = run_cli("plan", "--help").out
    assert new in help_text and not re.search(rf"│ {old}\s", help_text)


def test_optimize_takes_the_request_as_plan_does(run_cli, monkeypatch, wide):
    """--request CPUS,MEMORY_MB,STORAGE_MB reaches optimize as cores and GiB: 2,4096,10240 is 2 cores,
    4 GiB, 10 GiB (MB as plan reads them, 1,024 to the GiB); the old flags still work, with a notice."""
    import sandbox_fleet.optimize as optimize_pkg

    seen = {}

    class Stop(Exception):
        pass

    def fake(*args, **kwargs):
        seen.update({k: kwargs[k] for k in ("sandbox_cpu", "sandbox_memory_gb", "sandbox_disk_gb")})
        raise Stop

    monkeypatch.setattr(optimize_pkg, "run_optimize", fake)
    with pytest.raises(Stop):
        run_cli("optimize", PUBLISHED, "--passing-per-hour", "10", "--request", "2,4096,10240")
    assert seen == {"sandbox_cpu": 2.0, "sandbox_memory_gb": 4.0, "sandbox_disk_gb": 10.0}
    seen.clear()
    with pytest.raises(Stop):
        run_cli("optimize", PUBLISHED, "--passing-per-hour", "10", "--sandbox-cpu", "3")
    assert seen == {"sandbox_cpu": 3.0, "sandbox_memory_gb": None, "sandbox_disk_gb": None}
    r = run_cli("optimize", PUBLISHED, "--request", "2,4096,10240", "--sandbox-cpu", "3")
    assert r.code == 2 and "--request replaces --sandbox-cpu" in r.err
    r = run_cli("optimize", PUBLISHED, "--request", "2,4096,10240,1")
    assert r.code == 2 and "leave out GPUS" in r.err
    r = run_cli("optimize", PUBLISHED, "--request", "2,lots,10")
    assert r.code == 2 and "--request '2,lots,10'" in r.err
    h = run_cli("optimize", "--help").out
    assert "--request" in h and "--sandbox-cpu" not in h


# --- telemetry filters on check, report and plan ----------------------------------------------
S0 = 1_764_547_200  # 2025-12-01T00:00:00Z


@pytest.fixture
def telemetry(tmp_path) -> Path:
    """60 rollouts two minutes apart, rollout i holding 600 + 7i s; model b every third (reward 1),
    model a the rest (rewards 0.5 and 1 in turn)."""
    rows = ["id,started_at,finished_at,reward,model"]
    for i in range(60):
        model = "b" if i % 3 == 0 else "a"
        reward = 1 if model == "b" else (0.5 if i % 3 == 1 else 1)
        rows.append(f"r{i},{S0 + 120 * i},{S0 + 120 * i + 600 + 7 * i},{reward},{model}")
    path = tmp_path / "tel.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_check_filters_telemetry_as_measure_does(run_cli, telemetry, tmp_path):
    measured = tmp_path / "a.json"
    assert run_cli("measure", telemetry, "--model", "a", "--pass-threshold", "0.75", "-o", measured).code == 0
    direct = run_cli("check", telemetry, "--model", "a", "--pass-threshold", "0.75", "--json")
    via = run_cli("check", measured, "--json")
    assert json.loads(direct.out) == json.loads(via.out)
    small = {r["name"]: r["value"] for r in json.loads(direct.out)["results"]}["small_sample"]
    assert small == 40  # the 40 rollouts of model a


def test_plan_filters_both_the_measure_and_the_node_replay(run_cli, telemetry):
    r = run_cli("plan", telemetry, "--model", "a", "--since", "2025-12-01T00:01:00Z", "--pass-threshold", "0.75", "--json")
    assert r.code == 0, r.err
    p = json.loads(r.out)
    kept = [i for i in range(60) if i % 3 and 120 * i >= 60]  # model a, started at or after 00:01
    holds = {i: 600 + 7 * i for i in kept}
    assert p["measured"]["sandbox_hours"] == pytest.approx(sum(holds.values()) / 3600)
    passing = [i for i in kept if i % 3 == 2]  # reward 1 >= 0.75; the 0.5s fail
    assert p["measured"]["pass_rate"] == pytest.approx(len(passing) / len(kept))
    span_h = (max(120 * i + holds[i] for i in kept) - min(120 * i for i in kept)) / 3600
    assert p["cost"]["mixed"]["replay"]["span_h"] == pytest.approx(span_h)


def test_report_takes_the_filters_and_tasks(run_cli, telemetry, tmp_path):
    out = tmp_path / "r.html"
    r = run_cli("report", telemetry, "--model", "b", "--until", "2025-12-01T01:00:00Z", "-o", out)
    assert r.code == 0, r.err
    assert out.exists()
    help_text = run_cli("report", "--help").out + run_cli("check", "--help").out
    for flag in ("--tasks", "--model", "--since", "--until", "--pass-threshold"):
        assert help_text.count(f"│ {flag} ") == 2, flag


@pytest.mark.parametrize("command", ["check", "report", "plan"])
def test_a_filter_on_a_summary_is_refused_naming_the_flag(run_cli, command, tmp_path):
    extra = ("-o", tmp_path / "r.html") if command == "report" else ()
    r = run_cli(command, PUBLISHED, "--model", "x", *extra)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert "a measure summary, measured already: --model filters telemetry" in r.err


# --- the filters on every command that reads telemetry -----------------------------------------
def _commands():
    from typer.main import get_command

    from sandbox_fleet import cli

    return {name: c for name, c in get_command(cli._app_for([])).commands.items() if not hasattr(c, "commands")}


def test_every_command_that_reads_telemetry_takes_every_filter_with_one_meaning():
    """A command reads telemetry when it takes the reader options (``--format``...): it then takes
    --model, --since and --until, each the one option measure declares (same help, same panel)."""
    from sandbox_fleet.cli_flags import TELEMETRY_FILTERS

    commands = _commands()
    readers = sorted(name for name, c in commands.items() if any("--format" in p.opts for p in c.params))
    assert readers == ["backtest", "check", "measure", "plan", "report", "simulate"]
    ref = {o: p for p in commands["measure"].params for o in p.opts}
    for name in readers:
        opts = {o: p for p in commands[name].params for o in p.opts}
        for flag in TELEMETRY_FILTERS:
            assert flag in opts, f"{name} lacks {flag}"
            assert (opts[flag].help, opts[flag].rich_help_panel, opts[flag].multiple) == (
                ref[flag].help, "Telemetry", ref[flag].multiple), f"{name} {flag}"


def _subset(telemetry: Path, tmp_path: Path, keep) -> Path:
    """The fixture's rows ``keep(i)`` keeps, written as their own file: what a filter must equal."""
    lines = telemetry.read_text().splitlines()
    out = tmp_path / "subset.csv"
    out.write_text("\n".join([lines[0], *[row for i, row in enumerate(lines[1:]) if keep(i)]]) + "\n")
    return out


def _without(doc, *keys):
    """``doc`` with the keys that name the input files left out, at any depth."""
    if isinstance(doc, dict):
        return {k: _without(v, *keys) for k, v in doc.items() if k not in keys}
    if isinstance(doc, list):
        return [_without(v, *keys) for v in doc]
    return doc


@pytest.mark.parametrize("flags, keep", [
    (("--model", "a"), lambda i: i % 3 != 0),
    (("--since", "2025-12-01T00:30:00Z", "--until", "2025-12-01T01:40:00Z"), lambda i: 1800 <= 120 * i < 6000),
])
def test_backtest_filtered_equals_the_backtest_of_the_kept_rows(run_cli, telemetry, tmp_path, flags, keep):
    subset = _subset(telemetry, tmp_path, keep)
    filtered = run_cli("backtest", telemetry, *flags, "--seeds", "4", "--json")
    direct = run_cli("backtest", subset, "--seeds", "4", "--json")
    assert filtered.code == 0 and direct.code == 0, filtered.err + direct.err
    f, d = json.loads(filtered.out), json.loads(direct.out)
    assert f["rows"] == sum(map(keep, range(60)))
    # the same figures; only the filtered run records its filter (tests/test_filter_record.py)
    assert _without(f, "sources", "telemetry_filter") == _without(d, "sources", "telemetry_filter")
    assert f["telemetry_filter"]["source"] == "flags" and d["telemetry_filter"] is None
    unfiltered = json.loads(run_cli("backtest", telemetry, "--seeds", "4", "--json").out)
    assert unfiltered["rows"] == 60 and unfiltered["split"] != f["split"]  # the filter moved the split


def test_simulate_from_filtered_calibrates_and_runs_on_the_kept_rows(run_cli, telemetry, tmp_path):
    """--from --model a: the calibration is the one-model subset's, and the scenario it writes (its
    [filter] table) replays those rows when run, byte for byte the subset's own scenario's run."""
    subset = _subset(telemetry, tmp_path, lambda i: i % 3 != 0)
    sa, sb = tmp_path / "a.toml", tmp_path / "b.toml"
    filtered = run_cli("simulate", sa, "--from", telemetry, "--model", "a", "--json")
    direct = run_cli("simulate", sb, "--from", subset, "--json")
    assert filtered.code == 0 and direct.code == 0, filtered.err + direct.err
    f, d = json.loads(filtered.out), json.loads(direct.out)
    assert f["rollouts"] == 40 and _without(f, "scenario") == _without(d, "scenario")
    assert '[filter]' in sa.read_text() and 'models = ["a"]' in sa.read_text()
    ran_a, ran_b = run_cli("simulate", sa, "--json"), run_cli("simulate", sb, "--json")
    assert ran_a.code == 0 and ran_b.code == 0, ran_a.err + ran_b.err
    a, b = json.loads(ran_a.out), json.loads(ran_b.out)
    assert a["completed"] == 40
    assert (_without(a, "scenario", "sources", "telemetry", "telemetry_filter")
            == _without(b, "scenario", "sources", "telemetry", "telemetry_filter"))
    assert a["telemetry_filter"]["source"] == "scenario" and b["telemetry_filter"] is None


def test_simulate_replay_filtered_equals_the_replay_of_the_kept_rows(run_cli, telemetry, tmp_path):
    subset = _subset(telemetry, tmp_path, lambda i: 120 * i < 3600)
    filtered = run_cli("simulate", "--replay", telemetry, "--until", "2025-12-01T01:00:00Z", "--json")
    direct = run_cli("simulate", "--replay", subset, "--json")
    assert filtered.code == 0 and direct.code == 0, filtered.err + direct.err
    f, d = json.loads(filtered.out), json.loads(direct.out)
    assert _without(f, "sources", "telemetry", "telemetry_filter") == _without(d, "sources", "telemetry", "telemetry_filter")
    assert f["telemetry_filter"]["until"] == "2025-12-01T01:00:00Z" and d["telemetry_filter"] is None
    whole = json.loads(run_cli("simulate", "--replay", telemetry, "--json").out)
    assert _without(whole, "sources", "telemetry") != _without(f, "sources", "telemetry")


def test_simulate_of_a_scenario_refuses_the_filters(run_cli, tmp_path):
    scenario = ROOT / "examples" / "scenarios" / "mmc.toml"
    r = run_cli("simulate", scenario, "--model", "a")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and "[filter]" in r.err, r.err


def test_the_node_replay_flags_are_one_declaration_with_the_librarys_defaults():
    # plan (with telemetry) and simulate --replay read the same three flags: same default, same help
    import typer.main

    from sandbox_fleet import cli
    from sandbox_fleet.plan.mixed_replay import PROVISION_S, SCALE_DOWN_S

    group = typer.main.get_command(cli.app)
    want = {"--node-provision-s": PROVISION_S, "--node-scale-down-s": SCALE_DOWN_S, "--node-placement": "pack"}
    for flag, default in want.items():
        seen = [(p.default, p.help) for name in ("plan", "simulate") for p in group.commands[name].params
                if flag in getattr(p, "opts", ())]
        assert len(seen) == 2 and seen[0] == seen[1], (flag, seen)
        assert seen[0][0] == default, (flag, seen[0][0], default)
