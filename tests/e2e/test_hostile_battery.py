"""Hostile inputs through the real CLI (issue 24): one case per class and per reader.

Every case runs ``python -m sandbox_fleet.cli`` in a fresh process, in a fresh folder, under an
address-space limit (``RLIMIT_AS``, set in the child before it starts) and a timeout. The
outcome is one of two, never a traceback, a hang or an out-of-memory kill:

- refused: exit 2, exactly one line on stderr naming the file, member, key or flag, nothing on stdout;
- counted: exit 0 and the bad record (trial, task, sample, line) counted by reason in the summary,
  the rest read as usual.

Inputs that would allocate without bound (a gzip or zip member inflating to GiBs, 1e12 RL
steps, 1e9 seeds) must be refused *up front* by the size check, not end as the generic
"out of memory" line: those cases assert the check's own wording.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import resource
import struct
import subprocess
import sys
import tarfile
import zlib
from datetime import UTC
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .conftest import HARBOR, PUBLISHED, ROOT, Run, user_env
from .test_bad_inputs_cli import assert_refused

#: Address space of each case's process: imports (NumPy, PyArrow, DuckDB) map ~1 GiB.
MEMORY_LIMIT_BYTES = 2 << 30
TIMEOUT_S = 60
TB = ROOT / "tests" / "fixtures" / "terminal_bench"
INSPECT = ROOT / "tests" / "fixtures" / "inspect"
SCENARIOS = ROOT / "examples" / "scenarios"
DEEP = 100_000  # nesting levels: far past any parser's recursion limit


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def run(args: list, cwd: Path) -> Run:
    """The CLI in a fresh process under the memory limit and the timeout."""
    proc = subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", *map(str, args)], cwd=cwd,
                          env=user_env(cwd / "_cache"), capture_output=True, text=True, timeout=TIMEOUT_S,
                          preexec_fn=_limit_memory)
    return Run(proc.returncode, proc.stdout, proc.stderr)


#: exit 2, one stderr line naming every given name, no traceback, nothing on stdout
refused = assert_refused


def measured(r: Run) -> dict:
    """Exit 0 with a measure summary on stdout (the command ran with --json)."""
    assert "Traceback" not in r.out + r.err, r.err[-3000:]
    assert r.code == 0, f"exit {r.code}; stderr: {r.err[-2000:]!r}"
    return json.loads(r.out)


def copy_tree(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def harbor_job(tmp: Path) -> tuple[Path, list[Path]]:
    """A copy of the Harbor fixture's oracle job: (jobs folder, its trial folders)."""
    jobs = tmp / "jobs"
    copy_tree(HARBOR / "oracle-n2", jobs / "oracle-n2")
    return jobs, sorted(p for p in (jobs / "oracle-n2").iterdir() if p.is_dir())


def tb_run(tmp: Path) -> Path:
    return copy_tree(TB / "2025-06-01__12-00-00", tmp / "run")


def inspect_json(tmp: Path, edit) -> Path:
    """The Inspect fixture's .json log with ``edit(data)`` applied."""
    data = json.loads((INSPECT / "mock-local.json").read_text())
    edit(data)
    out = tmp / "log.json"
    out.write_text(json.dumps(data, allow_nan=True))
    return out


def deep_json(key: str = "a") -> str:
    return '{"' + key + '": ' + "[" * DEEP + "]" * DEEP + "}"


def deep_toml(key: str = "x") -> str:
    return f"{key} = " + "[" * DEEP + "]" * DEEP + "\n"


CSV_HEAD = "id,task_id,model,job,started_at,finished_at,reward\n"


def csv_rows(n: int, model: str = "m") -> str:
    return "".join(f"r{i},t{i},{model},j,2026-01-01T00:{i % 60:02d}:00Z,2026-01-01T01:{i % 60:02d}:00Z,1.0\n"
                   for i in range(n))


# --- 1. nesting past the parser's limit: every JSON and TOML reader ----------------------
def test_deep_jsonl_field(tmp_path):
    row = {"id": "a", "task_id": "t", "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:01:00Z"}
    (tmp_path / "r.jsonl").write_text(json.dumps(row) + "\n" + deep_json("id") + "\n")
    line = refused(run(["measure", "r.jsonl", "--json"], tmp_path), "r.jsonl")
    assert "line 2" in line


def test_deep_json_table(tmp_path):
    (tmp_path / "r.json").write_text("[" + deep_json() + "]")
    refused(run(["measure", "r.json", "--json"], tmp_path), "r.json")


def test_deep_harbor_result_costs_that_trial(tmp_path):
    _, trials = harbor_job(tmp_path)
    (trials[0] / "result.json").write_text(deep_json("task_name"))
    s = measured(run(["measure", "jobs", "--json"], tmp_path))
    assert s["coverage"]["rejected"] == {"unreadable": 1}
    assert s["rows"] == len(trials) - 1


def test_deep_atif_trajectory_costs_only_its_figures(tmp_path):
    _, trials = harbor_job(tmp_path)
    (trials[0] / "agent").mkdir(exist_ok=True)
    (trials[0] / "agent" / "trajectory.json").write_text(deep_json("steps"))
    s = measured(run(["measure", "jobs", "--json"], tmp_path))
    assert s["rows"] == len(trials)


def test_deep_inspect_json(tmp_path):
    (tmp_path / "log.json").write_text('{"version": 2, "status": "success", "eval": ' + "[" * DEEP + "]" * DEEP + "}")
    refused(run(["measure", "log.json", "--format", "inspect", "--json"], tmp_path), "log.json", "nested")


def test_deep_terminal_bench(tmp_path):
    run_dir = tb_run(tmp_path)
    (run_dir / "results.json").write_text(deep_json("results"))
    refused(run(["measure", "run", "--json"], tmp_path), "results.json", "nested")


def test_deep_measure_summary(tmp_path):
    (tmp_path / "m.json").write_text(deep_json("rows"))
    refused(run(["plan", "m.json", "--json"], tmp_path), "m.json", "nested")


@pytest.mark.parametrize("text", [deep_toml(), "x = " + "{a = " * DEEP + "1" + "}" * DEEP,
                                  "x = " + "[{a = " * 5000 + "1" + "}]" * 5000])
def test_deep_scenario_toml(tmp_path, text):
    (tmp_path / "s.toml").write_text(text)
    refused(run(["simulate", "s.toml", "--json"], tmp_path), "s.toml", "nested")


@pytest.mark.parametrize("args", [["check", str(PUBLISHED), "--thresholds", "bad.toml"],
                                  ["plan", str(PUBLISHED), "--nodes", "bad.toml", "--json"],
                                  ["plan", str(PUBLISHED), "--gpu-catalog", "bad.toml", "--gpu", "h100", "--json"],
                                  ["plan", str(PUBLISHED), "--providers", "bad.toml", "--json"],
                                  ["plan", str(PUBLISHED), "--substrates", "bad.toml", "--json"],
                                  ["sweep", "bad.toml", "--vary", "fleet.cap=1,2", "--json"]],
                         ids=["thresholds", "nodes", "gpus", "providers", "substrates", "sweep"])
def test_deep_toml_catalogs(tmp_path, args):
    (tmp_path / "bad.toml").write_text(deep_toml())
    refused(run(args, tmp_path), "bad.toml", "nested")


# --- 2. decompression: bounded by declared and actual size, refused up front -----------
def test_gzip_header_then_junk(tmp_path):
    (tmp_path / "t.parquet.gz").write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"junk" * 64)
    refused(run(["measure", "t.parquet.gz", "--json"], tmp_path), "t.parquet.gz")


def test_gzip_csv_junk(tmp_path):
    (tmp_path / "t.csv.gz").write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"junk" * 64)
    refused(run(["measure", "t.csv.gz", "--json"], tmp_path), "t.csv.gz")


def test_gzip_inflating_past_the_limit(tmp_path):
    # 192 gzip members of 16 MiB of zeros each: 3 GiB inflated from ~3 MB, every trailer honest
    member = gzip.compress(b"\0" * (16 << 20), compresslevel=1)
    (tmp_path / "big.parquet.gz").write_bytes(member * 192)
    refused(run(["measure", "big.parquet.gz", "--json"], tmp_path), "big.parquet.gz", "refusing to decompress")


def test_gzip_declaring_past_the_limit(tmp_path):
    body = gzip.compress(b"PAR1" * 16)
    (tmp_path / "lie.parquet.gz").write_bytes(body[:-4] + struct.pack("<I", 0xFFFF_FFF0))
    refused(run(["measure", "lie.parquet.gz", "--json"], tmp_path), "lie.parquet.gz", "refusing to decompress")


GOOD_SAMPLE = {"id": 1, "epoch": 1, "started_at": "2026-01-01T00:00:00+00:00",
               "completed_at": "2026-01-01T00:01:00+00:00", "scores": {"s": {"value": 1}}}


def _eval_archive(path: Path, sample: bytes, *, method: int, declared: int | None = None) -> Path:
    """An Inspect .eval (zip) with a header, one good sample and one sample entry compressed by
    ``method`` (8 deflate, 93 zstd) that declares ``declared`` inflated bytes; written by hand,
    as zipfile cannot write method 93 (nor lie about a size)."""
    header = json.dumps({"version": 2, "status": "success",
                         "eval": {"task": "t", "eval_id": "e1", "model": "m", "config": {}}}).encode()
    if method == 8:
        co = zlib.compressobj(1, zlib.DEFLATED, -15)
        packed = co.compress(sample) + co.flush()
    else:
        packed = pa.Codec("zstd").compress(sample, asbytes=True)
    good = json.dumps(GOOD_SAMPLE).encode()
    entries = [("header.json", header, 0, len(header)), ("samples/1_epoch_1.json", good, 0, len(good)),
               ("samples/2_epoch_1.json", packed, method, declared or len(sample))]
    blob, central = io.BytesIO(), io.BytesIO()
    for name, body, meth, size in entries:
        raw_name, offset = name.encode(), blob.tell()
        crc = zlib.crc32(body) if meth == 0 else 0
        blob.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 63, 0, meth, 0, 0, crc, len(body), size,
                               len(raw_name), 0) + raw_name + body)
        central.write(struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 63, 63, 0, meth, 0, 0, crc, len(body),
                                  size, len(raw_name), 0, 0, 0, 0, 0, offset) + raw_name)
    cd = central.getvalue()
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(entries), len(entries), len(cd), blob.tell(), 0)
    path.write_bytes(blob.getvalue() + cd + end)
    return path


def test_eval_zstd_member_declaring_gibs(tmp_path):
    _eval_archive(tmp_path / "big.eval", b"{}", method=93, declared=0xFFFF_FF00)
    refused(run(["measure", "big.eval", "--json"], tmp_path), "big.eval", "samples/2_epoch_1.json",
            "refusing to decompress")


def test_eval_deflate_member_inflating_past_its_declared_size(tmp_path):
    # declares 1 KiB, inflates to 256 MiB: the entry is unreadable (counted), never inflated whole
    _eval_archive(tmp_path / "lie.eval", b" " * (256 << 20), method=8, declared=1024)
    s = measured(run(["measure", "lie.eval", "--json"], tmp_path))
    assert s["coverage"]["rejected"].get("unreadable") == 1


def test_eval_zstd_member_inflating_past_its_declared_size(tmp_path):
    _eval_archive(tmp_path / "lie.eval", b" " * (64 << 20), method=93, declared=1024)
    s = measured(run(["measure", "lie.eval", "--json"], tmp_path))
    assert s["coverage"]["rejected"].get("unreadable") == 1


def test_garbage_tar_shard_is_one_line(tmp_path):
    root = tmp_path / "tasks"
    (root / "metadata").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "data" / "s.tar").write_bytes(b"\x00garbage\n" * 300)
    pq.write_table(pa.table({"task_id": ["t0"], "task_group_id": ["tg-a"], "shard": ["data/s.tar"],
                             "member_prefix": ["tg-a"]}),
                   root / "metadata" / "tasks.parquet")
    (tmp_path / "r.csv").write_text(CSV_HEAD + csv_rows(3))
    refused(run(["measure", "r.csv", "--tasks", "tasks", "--json"], tmp_path), "s.tar")


# --- 3. work estimates checked before allocation, against the process's own limit -------
def test_sync_rl_steps_1e12(tmp_path):
    text = (SCENARIOS / "sync_rl.toml").read_text().replace("steps = 50", "steps = 1e12")
    (tmp_path / "s.toml").write_text(text)
    refused(run(["simulate", "s.toml", "--json"], tmp_path), "s.toml", "workload.steps", "GiB")


def test_sweep_seeds_1e9(tmp_path):
    (tmp_path / "s.toml").write_text((SCENARIOS / "mmc.toml").read_text())
    refused(run(["sweep", "s.toml", "--vary", "fleet.cap=10,20", "--seeds", "1000000000", "--json"], tmp_path),
            "--seeds", "--max-variants")


def test_memory_budget_is_the_process_limit(tmp_path):
    # 30M rollouts fit the machine's free RAM but not this process's 2 GiB address space
    text = (SCENARIOS / "mmc.toml").read_text()
    import re

    text = re.sub(r"count = \d+", "count = 30000000", text)
    (tmp_path / "s.toml").write_text(text)
    line = refused(run(["simulate", "s.toml", "--json"], tmp_path), "s.toml", "available to this process")
    assert "GiB" in line


# --- 4. wrong-typed cells are null with a warning; one bad record costs that record ----
def test_harbor_number_where_text_belongs(tmp_path):
    _, trials = harbor_job(tmp_path)
    res = json.loads((trials[0] / "result.json").read_text())
    res["started_at"] = 12345
    res["agent_info"] = {"name": 7, "model_info": {"name": 7}}
    (trials[0] / "result.json").write_text(json.dumps(res))
    s = measured(run(["measure", "jobs", "--json"], tmp_path))
    assert s["rows"] == len(trials) - 1  # no start time: that row only
    assert any("wrong JSON type" in w for w in s["warnings"])


def test_harbor_result_null_is_unreadable(tmp_path):
    _, trials = harbor_job(tmp_path)
    (trials[0] / "result.json").write_text("null")
    s = measured(run(["measure", "jobs", "--json"], tmp_path))
    assert s["coverage"]["rejected"] == {"unreadable": 1}


def test_harbor_result_without_names_is_unreadable(tmp_path):
    _, trials = harbor_job(tmp_path)
    res = json.loads((trials[0] / "result.json").read_text())
    res["task_name"] = res["trial_name"] = None
    (trials[0] / "result.json").write_text(json.dumps(res))
    s = measured(run(["measure", "jobs", "--json"], tmp_path))
    assert s["coverage"]["rejected"] == {"unreadable": 1}


def test_harbor_malformed_job_config_warns(tmp_path):
    jobs, _ = harbor_job(tmp_path)
    (jobs / "oracle-n2" / "config.json").write_text('{"n_concurrent_trials": 4,')
    s = measured(run(["measure", "jobs", "--json"], tmp_path))
    assert any("config.json" in w and "cap is unknown" in w for w in s["warnings"])


def test_harbor_absurd_cap_is_no_cap(tmp_path):
    jobs, _ = harbor_job(tmp_path)
    cfg = json.loads((jobs / "oracle-n2" / "config.json").read_text())
    cfg["n_concurrent_trials"] = 10**30
    (jobs / "oracle-n2" / "config.json").write_text(json.dumps(cfg))
    s = measured(run(["measure", "jobs", "--json"], tmp_path))
    assert s["concurrency"]["configured_cap"] is None


def test_terminal_bench_one_bad_cell_costs_one_cell(tmp_path):
    run_dir = tb_run(tmp_path)
    data = json.loads((run_dir / "results.json").read_text())
    n = len(data["results"])
    data["results"][0]["task_id"] = 42
    data["results"][1]["total_input_tokens"] = "many"
    data["results"][2]["is_resolved"] = "yes"
    data["results"].append("not a trial")
    (run_dir / "results.json").write_text(json.dumps(data))
    s = measured(run(["measure", "run", "--json"], tmp_path))
    assert s["rows"] == n
    assert s["coverage"]["rejected"] == {"unreadable": 1}
    assert any("wrong JSON type" in w or "not a number" in w for w in s["warnings"])


@pytest.mark.parametrize("edit", [
    lambda d: [e.__setitem__("timestamp", 17) for s in d["samples"] for e in s.get("events", [])],
    lambda d: [e.__setitem__("timestamp", "garbage") for s in d["samples"] for e in s.get("events", [])],
    lambda d: [u.__setitem__("input_tokens", math.inf) for s in d["samples"] for u in s["model_usage"].values()],
    lambda d: [s.__setitem__("error", {"message": 404}) for s in d["samples"]],
    lambda d: d["eval"].__setitem__("config", [1, 2]),
    lambda d: [s.__setitem__("model_usage", 5) for s in d["samples"]],
    lambda d: d["eval"].__setitem__("model", 3),
    lambda d: [sc.__setitem__("value", 10**400) for s in d["samples"] for sc in s["scores"].values()],
], ids=["stamp-number", "stamp-garbage", "tokens-inf", "error-number", "config-list", "usage-number", "model-number",
        "score-huge-int"])
def test_inspect_odd_cells(tmp_path, edit):
    inspect_json(tmp_path, edit)
    s = measured(run(["measure", "log.json", "--format", "inspect", "--json"], tmp_path))
    assert s["rows"] + s["coverage"]["rejected_total"] > 0


@pytest.mark.parametrize("edit,named", [
    (lambda d: d.__setitem__("eval", [1]), "'eval'"),
    (lambda d: d.__setitem__("samples", {"a": 1}), "'samples'"),
], ids=["eval-list", "samples-object"])
def test_inspect_odd_structure(tmp_path, edit, named):
    inspect_json(tmp_path, edit)
    refused(run(["measure", "log.json", "--format", "inspect", "--json"], tmp_path), "log.json", named)


def _tasks_root(root: Path, tomls: dict[str, bytes]) -> Path:
    (root / "metadata").mkdir(parents=True)
    (root / "data").mkdir()
    with tarfile.open(root / "data" / "s.tar", "w") as tar:
        for name, body in tomls.items():
            info = tarfile.TarInfo(f"{name}/task.toml")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    names = list(tomls)
    pq.write_table(pa.table({"task_id": names, "task_group_id": names, "shard": ["data/s.tar"] * len(names), "member_prefix": names}),
                   root / "metadata" / "tasks.parquet")
    return root


GOOD_TASK = b"[environment]\ncpus = 1\nmemory_mb = 2048\nstorage_mb = 4096\n"


@pytest.mark.parametrize("bad", [b'[environment]\ncpus = "four"\n', b'[environment]\nmemory = "-3G"\n',
                                 b"[environment\n", b"environment = 5\n"], ids=["cpus-text", "memory-negative",
                                                                               "broken", "not-a-table"])
def test_one_bad_task_costs_that_task(tmp_path, bad):
    _tasks_root(tmp_path / "tasks", {"tg-a": GOOD_TASK, "tg-b": bad, "tg-c": GOOD_TASK})
    (tmp_path / "r.csv").write_text(CSV_HEAD.replace("task_id", "task_id") + csv_rows(3))
    r = run(["measure", "r.csv", "--tasks", "tasks", "--json"], tmp_path)
    s = measured(r)
    assert s["tasks"] is not None
    assert any("tg-b" in w for w in s["warnings"]), s["warnings"]


def test_unclosed_csv_quote_counts_the_lines(tmp_path):
    body = CSV_HEAD + csv_rows(3) + 'r9,"t9,m,j,2026-01-01T00:00:00Z,2026-01-01T00:01:00Z,1.0\n' + csv_rows(2).replace("r", "s")
    (tmp_path / "r.csv").write_text(body)
    s = measured(run(["measure", "r.csv", "--json"], tmp_path))
    assert s["rows"] == 3
    assert s["coverage"]["rejected"] == {"malformed CSV row": 3}


def test_truncated_json_array_is_refused(tmp_path):
    rows = [{"id": f"r{i}", "task_id": "t", "started_at": "2026-01-01T00:00:00Z",
             "finished_at": "2026-01-01T00:01:00Z"} for i in range(50)]
    text = json.dumps(rows)
    (tmp_path / "r.json").write_text(text[: len(text) // 2])
    refused(run(["measure", "r.json", "--json"], tmp_path), "r.json")


def test_jsonl_lines_not_objects(tmp_path):
    (tmp_path / "r.jsonl").write_text("1\n2\n3\n")
    line = refused(run(["measure", "r.jsonl", "--json"], tmp_path), "r.jsonl")
    assert "not a JSON object" in line, line


# --- 5. every flag range-checked ---------------------------------------------------------
@pytest.mark.parametrize("args,flag", [
    (["measure", str(HARBOR), "--pass-threshold", "nan"], "--pass-threshold"),
    (["measure", str(HARBOR), "--pass-threshold", "inf"], "--pass-threshold"),
    (["measure", str(HARBOR), "--min-turn-rows", "-5"], "--min-turn-rows"),
    (["plan", str(PUBLISHED), "--trainer-gpus", "-8"], "--trainer-gpus"),
    (["plan", str(PUBLISHED), "--batch", "8", "--train-s", "10", "--tolerance", "-1"], "--tolerance"),
    (["plan", str(PUBLISHED), "--tolerance", "nan"], "--tolerance"),
    (["plan", str(PUBLISHED), "--gpu-memory-fraction", "nan"], "--gpu-memory-fraction"),
    (["plan", str(PUBLISHED), "--decode-batch", "-1"], "--decode-batch"),
    (["optimize", str(SCENARIOS / "closed_loop.toml"), "--passing-per-hour", "100", "--cap-step", "0"], "--cap-step"),
    (["optimize", str(SCENARIOS / "closed_loop.toml"), "--passing-per-hour", "100", "--max-cap", "-3"], "--max-cap"),
    (["sweep", str(SCENARIOS / "mmc.toml"), "--vary", "fleet.cap=10", "--seeds", "0"], "--seeds"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_flag_out_of_range(tmp_path, args, flag):
    refused(run([*args, "--json"], tmp_path), flag)


def test_scenario_cap_true(tmp_path):
    (tmp_path / "s.toml").write_text((SCENARIOS / "mmc.toml").read_text().replace("cap = ", "cap = true #"))
    refused(run(["simulate", "s.toml", "--json"], tmp_path), "s.toml", "fleet.cap")


def test_summary_peak_1e300(tmp_path):
    data = json.loads(PUBLISHED.read_text())
    data["concurrency"]["peak"] = 1e300
    (tmp_path / "m.json").write_text(json.dumps(data))
    refused(run(["plan", "m.json", "--json"], tmp_path), "m.json", "concurrency.peak")


def test_nan_threshold(tmp_path):
    (tmp_path / "t.toml").write_text("[cap_binding]\nwarn_above = nan\n")
    refused(run(["check", str(PUBLISHED), "--thresholds", "t.toml"], tmp_path), "t.toml", "cap_binding.warn_above")


# --- 6. an output is never an input, even a file inside an input folder -----------------
def test_output_inside_harbor_input(tmp_path):
    _, trials = harbor_job(tmp_path)
    target = trials[0] / "result.json"
    before = target.read_bytes()
    refused(run(["measure", "jobs", "-o", target], tmp_path), "-o", "result.json", "input")
    assert target.read_bytes() == before


def test_output_inside_terminal_bench_input(tmp_path):
    run_dir = tb_run(tmp_path)
    target = run_dir / "run_metadata.json"
    before = target.read_bytes()
    refused(run(["measure", "run", "-o", target], tmp_path), "-o", "run_metadata.json")
    assert target.read_bytes() == before


def test_output_is_scenario_telemetry_input(tmp_path):
    (tmp_path / "r.csv").write_text(CSV_HEAD + csv_rows(3))
    refused(run(["plan", "r.csv", "-o", "r.csv"], tmp_path), "-o", "r.csv")


# --- 7. values escaped for their medium ------------------------------------------------
EVIL_MODEL = "m\x1b]0;pwned\x07\x1b[31m[/red]<script>alert(1)</script>\"\\{x=\"1\"}\x9b"


def _evil_csv(tmp_path: Path) -> Path:
    """12 rollouts of a model whose name holds terminal escapes, HTML, quotes and a backslash."""
    import csv

    path = tmp_path / "r.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(CSV_HEAD.strip().split(","))
        for i in range(12):
            w.writerow([f"r{i}", f"t{i}", EVIL_MODEL, "j", f"2026-01-01T00:{i:02d}:00Z", f"2026-01-01T01:{i:02d}:00Z", "1.0"])
    return path


def test_terminal_gets_no_escape_sequences(tmp_path):
    _evil_csv(tmp_path)
    r = run(["measure", "r.csv"], tmp_path)
    assert r.code == 0, r.err
    assert "pwned" in r.out  # the name is shown, escaped
    assert not any(ch in r.out + r.err for ch in "\x1b\x07\x9b")


def test_check_table_gets_no_escape_sequences_nor_markup(tmp_path):
    _evil_csv(tmp_path)
    r = run(["check", "r.csv"], tmp_path)
    assert "Traceback" not in r.out + r.err and r.code in (0, 1), r.err
    assert not any(ch in r.out + r.err for ch in "\x1b\x07\x9b")


def test_prometheus_text_escapes_labels(tmp_path):
    import shutil

    _evil_csv(tmp_path)
    r = run(["measure", "r.csv", "--json", "-o", "m.json"], tmp_path)
    assert r.code == 0, r.err
    r = run(["check", "m.json", "--metrics-out", "m.prom"], tmp_path)
    assert "Traceback" not in r.err and r.code in (0, 1), r.err
    text = (tmp_path / "m.prom").read_text()
    assert "\x1b" not in text and "\x07" not in text
    if shutil.which("promtool"):
        check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        assert "error" not in (check.stdout + check.stderr).lower(), check.stdout + check.stderr


def test_html_escapes_model_names(tmp_path):
    _evil_csv(tmp_path)
    r = run(["report", "r.csv", "-o", "r[/red].html"], tmp_path)  # the "wrote" line is no markup either
    assert r.code == 0 and "Traceback" not in r.err, r.err
    text = (tmp_path / "r[/red].html").read_text()
    assert "<script>alert(1)</script>" not in text
    assert "\x1b" not in text

    class Collect(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tags: list[str] = []

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)

    p = Collect()
    p.feed(text)
    assert "html" in p.tags


# --- 8. clear errors ---------------------------------------------------------------------
def test_all_rejected_names_the_file(tmp_path):
    (tmp_path / "r.csv").write_text(CSV_HEAD + "r0,t0,m,j,not a time,also not,1.0\n")
    refused(run(["measure", "r.csv", "--json"], tmp_path), "r.csv", "rejected")


def test_unreadable_input_is_one_line(tmp_path):
    import os

    (tmp_path / "t.toml").write_text("[cap_binding]\nwarn_above = 0.5\n")
    os.chmod(tmp_path / "t.toml", 0)
    if os.access(tmp_path / "t.toml", os.R_OK):
        pytest.skip("running as root: every file is readable")
    refused(run(["check", str(PUBLISHED), "--thresholds", "t.toml"], tmp_path), "t.toml")


def test_unreadable_summary_is_one_line_no_usage_box(tmp_path):
    (tmp_path / "m.json").mkdir()
    line = refused(run(["check", "m.json"], tmp_path), "m.json")
    assert "Usage" not in line


def test_file_name_with_a_newline(tmp_path):
    (tmp_path / "a\nb.csv").write_text("not,a,telemetry\n1,2,3\n")
    line = refused(run(["measure", "a\nb.csv", "--json"], tmp_path), "b.csv")
    assert "\\x0a" in line


@pytest.mark.parametrize("args,name", [
    (["simulate", "io.toml"], "io.toml"),
    (["sweep", "io.toml", "--vary", "fleet.cap=1,2"], "io.toml"),
    (["plan", str(PUBLISHED), "--nodes", "io.toml"], "io.toml"),
    (["check", str(PUBLISHED), "--thresholds", "io.toml"], "io.toml"),
    (["plan", "io.json"], "io.json"),
], ids=["scenario", "sweep", "nodes", "thresholds", "summary"])
def test_input_that_fails_to_read_names_the_file(tmp_path, args, name):
    # reading /proc/self/mem at offset 0 fails with EIO: a file that exists and cannot be read
    (tmp_path / name).symlink_to("/proc/self/mem")
    line = refused(run([*args, "--json"] if args[0] != "check" else args, tmp_path), name, "cannot read")
    assert "Usage" not in line


def test_simulate_telemetry_out_is_the_replayed_input(tmp_path):
    from datetime import datetime, timedelta

    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    pq.write_table(pa.table({
        "id": [f"r{i}" for i in range(5)], "task_id": ["t"] * 5,
        "started_at": pa.array([t0 + timedelta(seconds=i) for i in range(5)], pa.timestamp("us", tz="UTC")),
        "finished_at": pa.array([t0 + timedelta(seconds=60 + i) for i in range(5)], pa.timestamp("us", tz="UTC")),
    }), tmp_path / "in.parquet")
    before = (tmp_path / "in.parquet").read_bytes()
    (tmp_path / "s.toml").write_text('[fleet]\ncap = 4\n[workload]\nkind = "replay"\ntelemetry = "in.parquet"\n')
    refused(run(["simulate", "s.toml", "--telemetry", "in.parquet", "--json"], tmp_path), "--telemetry", "in.parquet")
    assert (tmp_path / "in.parquet").read_bytes() == before


def test_sweep_runs_checked_against_memory_even_past_max_variants(tmp_path):
    (tmp_path / "s.toml").write_text((SCENARIOS / "mmc.toml").read_text())
    refused(run(["sweep", "s.toml", "--vary", "fleet.cap=10,20", "--seeds", "100000000", "--max-variants",
                 "1000000000", "--json"], tmp_path), "--seeds", "GiB", "available to this process")
