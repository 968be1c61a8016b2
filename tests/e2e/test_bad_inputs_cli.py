"""Every bad input the issues list, through the CLI: exit 2, one line on stderr naming the file or
key, and no traceback (issue 2 s7, issue 3 s4 unknown scenario key, issue 4 s9).

Also: a tar member that climbs out with ``..`` or is absolute is refused and nothing is written
outside the output folder; bad rows are counted by reason and the run goes on.
"""

from __future__ import annotations

import io
import json
import tarfile
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .conftest import PUBLISHED, Run

T0 = datetime(2026, 1, 1, tzinfo=UTC)

TASK_TOML = b"""[environment]
cpus = 1
memory_mb = 2048
storage_mb = 6144
build_timeout_sec = 600
[agent]
timeout_sec = 1800
[verifier]
timeout_sec = 600
"""


def assert_refused(r: Run, *names: str) -> str:
    """Exit 2, exactly one non-blank stderr line that mentions every name, no traceback anywhere."""
    assert "Traceback" not in r.out + r.err, r.err
    assert r.code == 2, f"exit {r.code}; stderr: {r.err!r}"
    lines = r.err_lines()
    assert len(lines) == 1, f"expected one line on stderr, got {lines!r}"
    for name in names:
        assert name in lines[0], f"{name!r} not named in {lines[0]!r}"
    assert r.out.strip() == "", f"stdout not empty: {r.out!r}"
    return lines[0]


def rst_table(n: int = 3, **override) -> pa.Table:
    """A small RST-style trajectories table (the columns issue 2 s3 lists)."""
    cols = {
        "trajectory_id": [f"t{i}" for i in range(n)],
        "task_group_id": ["tg-a"] * n,
        "model_name": ["m"] * n,
        "status": ["ok"] * n,
        "has_trajectory": [True] * n,
        "has_exception": [False] * n,
        "reward": [1.0] * n,
        "started_at": pa.array([T0 + timedelta(seconds=10 * i) for i in range(n)], pa.timestamp("us", tz="UTC")),
        "finished_at": pa.array([T0 + timedelta(seconds=10 * i + 100) for i in range(n)], pa.timestamp("us", tz="UTC")),
        "input_tokens": [1000] * n,
        "output_tokens": [10] * n,
        "cached_tokens": [0] * n,
        "episode_count": [3] * n,
        "shard": ["data/s.tar"] * n,
        "member_prefix": ["tg-a"] * n,
    }
    cols.update(override)
    return pa.table(cols)


def write_release(root: Path, table: pa.Table) -> Path:
    (root / "metadata").mkdir(parents=True)
    pq.write_table(table, root / "metadata" / "trajectories.parquet")
    return root


def write_tasks_root(root: Path, members: dict[str, bytes], prefixes: list[str]) -> Path:
    """A tasks root: metadata/tasks.parquet + data/s.tar holding ``members``."""
    (root / "metadata").mkdir(parents=True)
    (root / "data").mkdir()
    with tarfile.open(root / "data" / "s.tar", "w") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    pq.write_table(pa.table({
        "task_id": [f"task-{i}" for i in range(len(prefixes))],
        "task_group_id": [p.strip("/").split("/")[-1] or f"g{i}" for i, p in enumerate(prefixes)],
        "shard": ["data/s.tar"] * len(prefixes),
        "member_prefix": prefixes,
    }), root / "metadata" / "tasks.parquet")
    return root


# --- issue 2 s7: measure --------------------------------------------------------------------

def test_missing_file(cli):
    assert_refused(cli("measure", "nope.parquet"), "nope.parquet")


def test_missing_column(cli, tmp_path):
    rel = write_release(tmp_path / "rel", rst_table().drop_columns(["finished_at"]))
    line = assert_refused(cli("measure", rel), "trajectories.parquet")
    assert "finished_at" in line


def test_missing_mapped_column_in_csv(cli, tmp_path):
    f = tmp_path / "runs.csv"
    f.write_text("rid,t0,t1\nA,2026-01-01T00:00:00Z,2026-01-01T00:01:00Z\n")
    line = assert_refused(cli("measure", f, "--map", "id=rid,started_at=t0,finished_at=tend"), "runs.csv")
    assert "tend" in line


@pytest.mark.parametrize("column,values", [
    ("started_at", [True, False, True]),             # a time column holding booleans
    ("input_tokens", ["lots", "many", "few"]),       # a count holding words
])
def test_wrong_type(cli, tmp_path, column, values):
    rel = write_release(tmp_path / "rel", rst_table(**{column: values}))
    line = assert_refused(cli("measure", rel), str(rel))  # the release the user named
    assert column in line


@pytest.mark.parametrize("name", ["empty.parquet", "empty.csv", "empty.jsonl"])
def test_empty_file(cli, tmp_path, name):
    (tmp_path / name).write_bytes(b"")
    assert_refused(cli("measure", tmp_path / name), name)


def test_parquet_with_no_rows(cli, tmp_path):
    rel = write_release(tmp_path / "rel", rst_table(0))
    assert_refused(cli("measure", rel), str(rel))


def test_corrupt_parquet_garbage(cli, tmp_path):
    f = tmp_path / "junk.parquet"
    f.write_bytes(b"PAR1" + bytes(range(256)) * 8 + b"PAR1")
    assert_refused(cli("measure", f), "junk.parquet")


def test_corrupt_parquet_truncated(cli, tmp_path):
    good = tmp_path / "good.parquet"
    pq.write_table(rst_table(50), good)
    data = good.read_bytes()
    bad = tmp_path / "cut.parquet"
    bad.write_bytes(data[: len(data) // 2])
    assert_refused(cli("measure", bad), "cut.parquet")


def test_corrupt_parquet_damaged_pages(cli, tmp_path):
    """Footer intact, column data overwritten: the failure comes while reading, not opening."""
    good = tmp_path / "good.parquet"
    pq.write_table(rst_table(200), good, compression="snappy")
    data = bytearray(good.read_bytes())
    for i in range(8, len(data) // 2):
        data[i] = 0xFF
    bad = tmp_path / "damaged.parquet"
    bad.write_bytes(bytes(data))
    assert_refused(cli("measure", bad), "damaged.parquet")


def test_unknown_map_name(cli, tmp_path):
    f = tmp_path / "runs.csv"
    f.write_text("rid,t0,t1\nA,2026-01-01T00:00:00Z,2026-01-01T00:01:00Z\n")
    line = assert_refused(cli("measure", f, "--map", "id=rid,started_at=t0,finished_at=t1,nonsense=t1"), "--map")
    assert "nonsense" in line


@pytest.mark.parametrize("option,value", [("--format", "xml"), ("--time-unit", "fortnights"),
                                          ("--assume-tz", "Mars/Olympus"), ("--since", "last tuesday")])
def test_bad_measure_option_values(cli, tmp_path, option, value):
    rel = write_release(tmp_path / "rel", rst_table())
    line = assert_refused(cli("measure", rel, option, value), option)
    assert value in line


# --- tar members that escape their folder ---------------------------------------------------

def _outside_target() -> Path:
    return Path("/tmp") / f"sandbox-fleet-e2e-escape-{uuid.uuid4().hex}"


@pytest.mark.parametrize("kind", ["dotdot", "absolute"])
def test_tar_member_escaping_its_folder_is_refused(cli, tmp_path, kind):
    outside = _outside_target()
    member = f"../../{outside.name}/task.toml" if kind == "dotdot" else f"{outside}/task.toml"
    work = tmp_path / "work"
    rel = write_release(work / "rel", rst_table())
    tasks = write_tasks_root(work / "tasks", {"tg-a/task.toml": TASK_TOML, member: TASK_TOML}, ["tg-a"])
    before = set(tmp_path.rglob("*"))
    line = assert_refused(cli("measure", rel, "--tasks", tasks), "s.tar")
    assert member in line or member.lstrip("/") in line
    assert not outside.exists(), "a tar member was written outside"
    assert not (tmp_path / outside.name).exists() and not (work / outside.name).exists()
    # nothing new anywhere under the test folder except the tasks cache (the output folder)
    new = set(tmp_path.rglob("*")) - before
    assert all(p.is_relative_to(tmp_path / "_cache") for p in new), sorted(map(str, new))


def test_shard_path_escaping_the_tasks_root_is_refused(cli, tmp_path):
    rel = write_release(tmp_path / "rel", rst_table())
    tasks = write_tasks_root(tmp_path / "tasks", {"tg-a/task.toml": TASK_TOML}, ["tg-a"])
    t = pq.read_table(tasks / "metadata" / "tasks.parquet")
    t = t.set_column(t.schema.get_field_index("shard"), "shard", pa.array(["../../etc/passwd"]))
    pq.write_table(t, tasks / "metadata" / "tasks.parquet")
    assert_refused(cli("measure", rel, "--tasks", tasks), "../../etc/passwd")


def test_valid_tasks_root_is_read(cli, tmp_path):
    """The control for the cases above: the same layout without the bad member measures fine."""
    rel = write_release(tmp_path / "rel", rst_table())
    tasks = write_tasks_root(tmp_path / "tasks", {"tg-a/task.toml": TASK_TOML}, ["tg-a"])
    r = cli("measure", rel, "--tasks", tasks, "--json")
    assert r.code == 0, r.err
    m = json.loads(r.out)
    # TASK_TOML names no gpus: missing is null, never 0 (issue 2 s2)
    # the release's 3 rollouts name task group tg-a, this task's group: 3 rollouts x 100 s = 300 s
    assert m["tasks"]["requests"] == [{"cpus": 1.0, "memory_mb": 2048, "storage_mb": 6144, "gpus": None, "tasks": 1,
                                       "rollouts": 3, "sandbox_hours": pytest.approx(300 / 3600)}]


# --- bad rows: counted by reason, and the run goes on ---------------------------------------

def test_bad_rows_are_counted_by_reason_and_the_run_goes_on(cli, tmp_path):
    f = tmp_path / "runs.csv"
    f.write_text(
        "rid,t0,t1\n"
        "A,2026-01-01T00:00:00Z,2026-01-01T00:01:40Z\n"   # kept: 100 s
        "B,2026-01-01T00:00:10Z,2026-01-01T00:00:05Z\n"   # finished before started
        "C,,2026-01-01T00:01:00Z\n"                       # missing start
        "D,not-a-time,2026-01-01T00:01:00Z\n"             # unparsable time
        "A,2026-01-01T00:00:00Z,2026-01-01T09:00:00Z\n"   # duplicate id: the first is kept
        "E,2026-01-01T00:00:50Z,2026-01-01T00:02:30Z\n"   # kept: 100 s, overlaps A by 50 s
    )
    r = cli("measure", f, "--map", "id=rid,started_at=t0,finished_at=t1", "--json")
    assert r.code == 0, r.err
    m = json.loads(r.out)
    assert m["rows"] == 2
    assert m["coverage"]["rejected"] == {"finished before started": 1, "missing start or finish": 1,
                                         "unparsable time": 1, "duplicate id": 1}
    assert m["hold_s"]["max"] == 100.0  # the duplicate's 9-hour hold was not the one kept
    assert m["concurrency"]["peak"] == 2 and m["span_s"] == 150.0


# --- issue 3: scenario files ----------------------------------------------------------------

GOOD_SCENARIO = """[fleet]
cap = 10
[workload]
kind = "poisson"
rate_per_s = 7.0
count = 2000
[hold]
dist = "exponential"
mean_s = 1.0
[run]
seed = 1
"""


def test_the_issue_example_scenario_runs(cli, tmp_path):
    (tmp_path / "ok.toml").write_text(GOOD_SCENARIO)
    r = cli("simulate", "ok.toml", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["rollouts"] == 2000


@pytest.mark.parametrize("old,new,key", [
    ("cap = 10", "cap = 10\ncapp = 3", "capp"),                         # unknown key in a table
    ("mean_s = 1.0", "mean_s = 1.0\nmedian = 2", "median"),            # unknown key for the dist
    ("[run]", "[turbo]\nx = 1\n[run]", "turbo"),                        # unknown table
    ('kind = "poisson"', 'kind = "poison"', "workload.kind"),           # unknown workload kind
    ('dist = "exponential"', 'dist = "gaussian"', "hold.dist"),         # unknown distribution
])
def test_bad_scenario_key(cli, tmp_path, old, new, key):
    (tmp_path / "bad.toml").write_text(GOOD_SCENARIO.replace(old, new))
    assert_refused(cli("simulate", "bad.toml"), "bad.toml", key)


def test_scenario_not_toml(cli, tmp_path):
    (tmp_path / "bad.toml").write_text("[fleet\ncap = ")
    assert_refused(cli("simulate", "bad.toml"), "bad.toml")


def test_scenario_missing(cli):
    assert_refused(cli("simulate", "absent.toml"), "absent.toml")


# --- issue 4 s9: plan -----------------------------------------------------------------------

def _catalog(tmp_path: Path, body: str) -> Path:
    f = tmp_path / "nodes.toml"
    f.write_text(body)
    return f


def test_node_type_smaller_than_one_sandbox(cli, tmp_path):
    cat = _catalog(tmp_path, '[[node]]\nname = "pico"\nvcpus = 1\nmemory_gb = 1\ndisk_gb = 100\n')
    assert_refused(cli("plan", PUBLISHED, "--nodes", cat, "--node-type", "pico"), "pico")
    # without --node-type: no type in the catalog fits
    assert_refused(cli("plan", PUBLISHED, "--nodes", cat), "pico")


@pytest.mark.parametrize("line,key", [
    ("vcpus = -8", "vcpus"),
    ("vcpus = \"lots\"", "vcpus"),
    ("memory_gb = -1.5", "memory_gb"),
    ("spot_usd_h = -0.1", "spot_usd_h"),
])
def test_catalog_entry_with_a_bad_value(cli, tmp_path, line, key):
    base = {"vcpus": "vcpus = 32", "memory_gb": "memory_gb = 128", "disk_gb": "disk_gb = 1000"}
    field = line.split("=")[0].strip()
    body = "[[node]]\nname = \"n1\"\n" + "\n".join(v for k, v in base.items() if k != field) + f"\n{line}\n"
    assert_refused(cli("plan", PUBLISHED, "--nodes", _catalog(tmp_path, body)), "nodes.toml", key)


@pytest.mark.parametrize("args,option", [
    (["--concurrency", "0"], "--concurrency"),
    (["--concurrency", "-5"], "--concurrency"),
    (["--passing-per-hour", "0"], "--passing-per-hour"),
    (["--passing-per-hour", "-3"], "--passing-per-hour"),
    (["--batch", "0", "--train-s", "60"], "--batch"),
    (["--batch", "-4", "--train-s", "60"], "--batch"),
])
def test_zero_or_negative_target(cli, args, option):
    assert_refused(cli("plan", PUBLISHED, *args), option)


def test_input_with_no_hold_times(cli, tmp_path):
    summary = json.loads(PUBLISHED.read_text())
    summary["sandbox_s"] = None
    summary["hold_s"] = dict.fromkeys(summary.get("hold_s") or {"mean": None})
    summary.get("concurrency", {})["mean"] = None
    summary.get("tokens", {})["hold_mean_s"] = None
    f = tmp_path / "noholds.json"
    f.write_text(json.dumps(summary))
    line = assert_refused(cli("plan", f), "noholds.json")
    assert "hold" in line


def test_plan_input_not_a_summary(cli, tmp_path):
    f = tmp_path / "list.json"
    f.write_text("[1, 2, 3]")
    assert_refused(cli("plan", f), "list.json")


# --- error text survives the terminal -------------------------------------------------------

def test_error_messages_keep_their_square_brackets(cli, tmp_path):
    """Messages name TOML tables; printed through Rich they must not be read as style tags."""
    (tmp_path / "nofleet.toml").write_text(GOOD_SCENARIO.replace("[fleet]\ncap = 10\n", ""))
    line = assert_refused(cli("simulate", "nofleet.toml"), "nofleet.toml")
    assert "[fleet]" in line and "[[fleets]]" in line
    line = assert_refused(cli("plan", PUBLISHED, "--nodes", "absent.toml"), "absent.toml")
    assert "[[node]]" in line
