"""One definition of each: a class name means one thing in src, the reader options are declared once
for the CLI, and library errors name parameters that the CLI shows as its flags."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "sandbox_fleet"
READER_FLAGS = ["--format", "--map", "--time-unit", "--assume-tz", "--reward-key", "--score", "--latest-time",
                "--allow-any-time"]


def test_no_class_name_is_defined_twice():
    names = Counter()
    for f in SRC.rglob("*.py"):
        names.update(n.name for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))) if isinstance(n, ast.ClassDef))
    assert [n for n, k in names.items() if k > 1] == []


def test_a_renamed_block_keeps_its_published_schema_name():
    from sandbox_fleet.contract import _named_by_title

    schema = {"$defs": {"B": {"title": "B"}, "SimA": {"title": "A"}},
              "properties": {"a": {"$ref": "#/$defs/SimA"}, "b": {"items": [{"$ref": "#/$defs/B"}]}}}
    assert _named_by_title(schema) == {"$defs": {"A": {"title": "A"}, "B": {"title": "B"}},
                                       "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"items": [{"$ref": "#/$defs/B"}]}}}
    with pytest.raises(ValueError, match="share a title"):
        _named_by_title({"$defs": {"A": {"title": "A"}, "SimA": {"title": "A"}}})


def _commands():
    from typer.main import get_command

    from sandbox_fleet.cli import app

    return get_command(app).commands


def test_every_command_reading_telemetry_takes_the_same_reader_options():
    readers = {}
    for name, command in _commands().items():
        options = [p for p in command.params if p.param_type_name == "option" and p.opts[0] in READER_FLAGS]
        if options:
            readers[name] = [(p.opts[0], p.help, p.default) for p in options]
    assert sorted(readers) == ["backtest", "check", "measure", "plan", "report", "simulate"]
    first = readers["measure"]
    assert [flag for flag, _, _ in first] == READER_FLAGS
    assert all(options == first for options in readers.values())


def test_the_cli_shows_a_library_parameter_as_its_flag():
    from sandbox_fleet.cli import _in_flags

    message = "`column_map`: 'x' is not canonical=source; use `fmt`, not fmt or `fmts`"
    assert _in_flags(message, ["measure", "f.csv"]) == "--map: 'x' is not canonical=source; use --format, not fmt or `fmts`"
    assert _in_flags("no rollouts match `models`/`since`/`until`", ["measure", "f.csv"]) == \
        "no rollouts match --model/--since/--until"
    # a command without the option leaves the parameter's name; a seed of 5 seeds stays prose
    assert _in_flags("`seed` -1: bad", ["measure", "f.csv"]) == "`seed` -1: bad"
    assert _in_flags("`seeds` 5: 5 seeds", ["sweep", "s.toml"]) == "--seeds 5: 5 seeds"


def test_a_bad_reader_option_is_named_by_its_flag(run_cli, tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("id,started_at,finished_at\na,1,2\n")
    r = run_cli("measure", table, "--map", "bogus=x")
    assert r.code == 2 and "error: --map: unknown canonical name 'bogus'" in " ".join(r.err.split())


@pytest.mark.parametrize("shared, measured, simulated", [
    ("ConcurrencyFigures", "Concurrency", "SimulatedConcurrency"),
    ("HoldFigures", "HoldStats", "SimulatedHoldStats"),
    ("OutcomeFigures", "Outcomes", "SimulatedOutcomes"),
])
def test_measure_and_simulate_declare_the_shared_figures_alike(shared, measured, simulated):
    import typing

    from sandbox_fleet import contract
    from sandbox_fleet.measure import model as measure_model
    from sandbox_fleet.simulate import model as simulate_model

    figures = typing.get_type_hints(getattr(contract, shared))
    assert figures
    for model in (getattr(measure_model, measured), getattr(simulate_model, simulated)):
        assert {name: model.model_fields[name].annotation for name in figures if name in model.model_fields} == figures
