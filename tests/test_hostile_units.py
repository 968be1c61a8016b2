"""Issue 24's helpers on their own, against hand-made cases: bounded parsing, the memory room
a process really has, cells of the wrong type, escaping, outputs inside input folders."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from sandbox_fleet import limits
from sandbox_fleet.atomic import OutputError
from sandbox_fleet.errors import InputError
from sandbox_fleet.outpaths import check_output
from sandbox_fleet.safeparse import json_loads, load_toml, toml_loads
from sandbox_fleet.telemetry.jsonfile import plausible_cap, raw_rows_table
from sandbox_fleet.textout import html_escape, printable


@pytest.mark.parametrize("text", ["[" * 100_000, '{"a":' * 100_000, '[{"a":' * 50_000])
def test_deep_json_is_one_named_error(text):
    with pytest.raises(InputError, match=r"^f\.json: not valid JSON \(nested too deeply to parse\)$"):
        json_loads(text, "f.json")


def test_json_under_the_limit_parses_as_json_does():
    text = "[" * 50 + "1" + "]" * 50
    assert json_loads(text, "f") == json.loads(text)


def test_json_error_names_line_and_column():
    with pytest.raises(InputError, match=r"^f: not valid JSON \(line 2, column 6: Expecting value\); expected a summary$"):
        json_loads('{\n"a": }', "f", "a summary")


@pytest.mark.parametrize("text", ["x = " + "[" * 100_000, "x = " + "{a = " * 100_000, "x = " + "[{a = " * 5_000])
def test_deep_toml_is_one_named_error(text):
    with pytest.raises(InputError, match=r"^s\.toml: not valid TOML \(nested too deeply to parse\)$"):
        toml_loads(text, "s.toml")


def test_load_toml_names_an_unreadable_file(tmp_path):
    (tmp_path / "io.toml").symlink_to("/proc/self/mem")  # exists; reading fails with EIO
    with pytest.raises(InputError, match=r"io\.toml: cannot read scenario file \(Input/output error\)"):
        load_toml(tmp_path / "io.toml", "scenario file")
    (tmp_path / "b.toml").write_bytes(b"x = '\xff'\n")
    with pytest.raises(InputError, match=r"b\.toml: cannot read scenario file \(not UTF-8: invalid start byte at byte 5\)"):
        load_toml(tmp_path / "b.toml", "scenario file")


def test_rlimit_as_bounds_the_room(tmp_path):
    """In a child whose address space is capped at its current size + 300 MiB, the room is
    about 300 MiB (the child maps a little while it measures), far under free RAM."""
    code = (
        "import resource\n"
        "from sandbox_fleet import limits\n"
        "used = int([l for l in open('/proc/self/status') if l.startswith('VmSize:')][0].split()[1]) * 1024\n"
        "cap = used + (300 << 20)\n"
        "resource.setrlimit(resource.RLIMIT_AS, (cap, resource.RLIM_INFINITY))\n"
        "print(limits.available_memory_bytes())\n"
    )
    room = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert 250 << 20 < room <= 300 << 20


def test_cgroup_v2_limit_minus_usage(tmp_path):
    (tmp_path / "proc").write_text("0::/job/a\n")
    group = tmp_path / "cg" / "job" / "a"
    group.mkdir(parents=True)
    (group / "memory.max").write_text(f"{4 << 30}\n")
    (group / "memory.current").write_text(f"{1 << 30}\n")
    assert limits._cgroup_room(str(tmp_path / "cg"), str(tmp_path / "proc")) == 3 << 30
    (group / "memory.max").write_text("max\n")  # no limit there, none at the root either
    assert limits._cgroup_room(str(tmp_path / "cg"), str(tmp_path / "proc")) is None


def test_cgroup_v1_unlimited_is_no_limit(tmp_path):
    mem = tmp_path / "cg" / "memory"
    mem.mkdir(parents=True)
    (mem / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert limits._cgroup_room(str(tmp_path / "cg"), str(tmp_path / "none")) is None
    (mem / "memory.limit_in_bytes").write_text(f"{2 << 30}\n")
    (mem / "memory.usage_in_bytes").write_text(f"{512 << 20}\n")
    assert limits._cgroup_room(str(tmp_path / "cg"), str(tmp_path / "none")) == (2 << 30) - (512 << 20)


def test_inflated_size_check():
    limits.check_inflated_size(100, "f.gz", limit=100)
    with pytest.raises(InputError, match=r"^f\.gz:m: inflates to .* GiB or more.*refusing to decompress"):
        limits.check_inflated_size(101, "f.gz:m", limit=100)


@pytest.mark.parametrize("value,ok", [(1.5, True), (0, True), (-1, False), (float("nan"), False),
                                      (float("inf"), False), (True, False), ("1", False), (None, True)])
def test_check_range(value, ok):
    if ok:
        limits.check_range("--x", value)
    else:
        with pytest.raises(InputError, match=r"^--x "):
            limits.check_range("--x", value)


def test_check_range_whole():
    limits.check_range("--n", 3, minimum=1, whole=True)
    for bad in (0, 2.5, -8):
        with pytest.raises(InputError, match="expected a whole number >= 1"):
            limits.check_range("--n", bad, minimum=1, whole=True)


def test_wrong_typed_cells_are_null_and_counted():
    rows = [{"id": "a", "task_id": 42, "model": "m", "input_tokens": 10, "reward": 1},
            {"id": "b", "task_id": "t", "model": ["x"], "input_tokens": "many", "reward": "high"},
            {"id": "c", "task_id": "t", "model": "m", "input_tokens": 2**70, "reward": 0.5}]
    bad: dict[str, int] = {}
    t = raw_rows_table(rows, ("id", "task_id", "model", "input_tokens", "reward"), bad)
    assert t.column("task_id").to_pylist() == [None, "t", "t"]
    assert t.column("model").to_pylist() == ["m", None, "m"]
    assert t.column("input_tokens").to_pylist() == [10, None, None]
    assert t.column("reward").to_pylist() == [1.0, None, 0.5]
    assert bad == {"task_id": 1, "model": 1, "input_tokens": 2, "reward": 1}
    assert t.schema.field("input_tokens").type == pa.int64()


def test_good_cells_count_nothing():
    bad: dict[str, int] = {}
    raw_rows_table([{"id": "a", "task_id": "t", "reward": 1}], ("id", "task_id", "reward"), bad)
    assert bad == {}


@pytest.mark.parametrize("value,ok", [(1, True), (10_000_000, True), (10_000_001, False), (0, False),
                                      (True, False), (4.0, False), (10**30, False)])
def test_plausible_cap(value, ok):
    assert plausible_cap(value) is ok


def test_printable_escapes_controls_only():
    assert printable("gpt-4o é") == "gpt-4o é"
    assert printable("a\x1b[31mb\x07\n\x9b\u2028") == "a\\x1b[31mb\\x07\\x0a\\x9b\\u2028"
    assert printable({"k\x1b": ["\r", 1]}) == {"k\\x1b": ["\\x0d", 1]}


def test_printable_escapes_a_model_on_a_copy_of_the_same_model():
    """The CLI hands renderers the stage's model: its text (nested blocks, map keys, lists) is escaped
    on a copy of the same type, the figures untouched, and the producer's model is left as it was."""
    from sandbox_fleet.plan.model import Cost, PlanSummary, Rent

    plan = PlanSummary.build(target={"concurrency": 3, "source": "x\x1b[2J"}, nodes={"type": "[/red]n", "count": 1},
                             cost=Cost(rent={"e\r2b": Rent(limits_hit=["a\x07"], usd_per_h=1.5)}), notes=["\n"])
    shown = printable(plan, markup=True)
    assert type(shown) is PlanSummary and shown is not plan
    assert shown.target.source == "x\\x1b[2J" and shown.target.concurrency == 3
    assert shown.nodes.type == "\\[/red]n"  # Rich reads it as text, not a closing tag
    rent = shown.cost.rent["e\\x0d2b"]
    assert rent.limits_hit == ["a\\x07"] and rent.usd_per_h == 1.5
    assert shown.notes == ["\\x0a"]
    assert plan.target.source == "x\x1b[2J" and plan.nodes.type == "[/red]n"


def test_html_escape_after_printable():
    assert html_escape('<b a="1">\x1b</b>') == "&lt;b a=&quot;1&quot;&gt;\\x1b&lt;/b&gt;"


def test_output_inside_an_input_folder(tmp_path):
    (tmp_path / "jobs" / "j" / "t").mkdir(parents=True)
    inside = tmp_path / "jobs" / "j" / "t" / "result.json"
    inside.write_text("{}")
    with pytest.raises(OutputError, match="inside the input folder"):
        check_output(inside, inputs=[tmp_path / "jobs"])
    # a new file there is refused too (the next run's glob reads it: issue 42 s2), however the path
    # reaches the folder: `..`, a link to it, a link to a folder inside it
    for dest in (tmp_path / "jobs" / "new.json", tmp_path / "out" / ".." / "jobs" / "j" / "new.json"):
        with pytest.raises(OutputError, match="inside the input folder"):
            check_output(dest, inputs=[tmp_path / "jobs"])
    (tmp_path / "link").symlink_to(tmp_path / "jobs" / "j")
    with pytest.raises(OutputError, match="inside the input folder"):
        check_output(tmp_path / "link" / "new.json", inputs=[tmp_path / "jobs"])
    with pytest.raises(OutputError, match="inside the input folder"):  # the input given through the link
        check_output(tmp_path / "jobs" / "j" / "new.json", inputs=[tmp_path / "link"])
    (tmp_path / "out.json").write_text("{}")
    assert check_output(tmp_path / "out.json", inputs=[tmp_path / "jobs"]) == Path(tmp_path / "out.json")
