"""Hostile inputs at every edge, third round (issue 42): one case per mechanism and per surface.

Run as a user would, like the battery of issue 24 (``test_hostile_battery.run``): the CLI in a fresh
process, under an address-space limit and a timeout (a FIFO that blocks, or ``/dev/zero`` read to the
end, fails the case by timeout or memory instead of hanging the suite). Every case that reads an
input folder hashes it before and after: nothing is written into an input, refused or not.

The mechanisms and the one place each is enforced:

1. side inputs: ``safeparse.read_bytes`` (regular file, size cap) under every summary, scenario,
   catalog and thresholds reader;
2. outputs: ``outpaths.check_output`` refuses any output inside any input folder (links, ``..``);
3. scenario bounds: ``simulate.scenario.bounds.check_hold`` on the built episode's parts;
4. read-back figures: ``contract.parse`` (finite numbers, counts in range); gates:
   ``report.checks.result.band_above/band_below`` fail on a non-finite figure;
5. escaping: ``textout.one_line`` (the escape character doubled first), on every printed line;
8. decompression: ``limits.check_inflated_size`` now also on the JSON-lines fault scan
   (``telemetry.table._json_fault``), one line or document at a time; a task.toml's declared size
   (``telemetry.tasktoml.check_toml_size``) before tarfile inflates it; a drawn image catalog's
   memory (``simulate.scenario.images``) before a name is made;
9. strict scenario types: ``simulate.scenario.spec.STRICT``;
11. inputs passed over: named in warnings where they are met (``telemetry.table._check_files``
    for globs, ``telemetry.inspect_log``: a log folder's special files, an .eval entry named twice);
6. backtest split: ``backtest.split`` (refuses a cut inside simultaneous starts, keeps rows with no
   group apart, orders groups in one pass);
7. per-slice cost: ``measure.columns.top`` (``Frame.model``, ``Frame.job``): the ``TOP_SLICES``
   models and jobs with most rollouts, the rest one others row (``slice_cut``); a row naming no model
   never merges with a model named "(none)" (``columns.free_label``);
10, 12. flag gaps and last round's four: each at the option's own check (an unreadable input: the
   readers' own OSError line, ``cli._reader_checks_access`` turning off Typer's usage-box check).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .conftest import HARBOR, PUBLISHED, Run, user_env
from .test_hostile_battery import (
    CSV_HEAD,
    GOOD_SAMPLE,
    GOOD_TASK,
    INSPECT,
    SCENARIOS,
    copy_tree,
    csv_rows,
    refused,
    run,
)

if not hasattr(os, "mkfifo"):
    pytest.skip("FIFOs are POSIX", allow_module_level=True)


def digest(root: Path) -> str:
    """Names, kinds and bytes of everything under ``root``: equal before and after = nothing written."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode("utf-8", "surrogateescape") + b"\0")
        if p.is_symlink():
            h.update(b"L" + os.readlink(p).encode())
        elif p.is_file():
            h.update(b"F" + p.read_bytes())
        else:
            h.update(b"D")
    return h.hexdigest()


@pytest.fixture(scope="module")
def plan_doc(tmp_path_factory) -> dict:
    """A real plan of the published summary, made once by the CLI."""
    work = tmp_path_factory.mktemp("plan")
    r = run(["plan", str(PUBLISHED), "--json"], work)
    assert r.code == 0, r.err
    return json.loads(r.out)


def jobs(tmp: Path) -> Path:
    jobs = tmp / "jobs"
    copy_tree(HARBOR / "oracle-n2", jobs / "oracle-n2")
    return jobs


def backtest_doc(error) -> dict:
    """A backtest summary with a makespan error ``error`` (None: not measured)."""
    fig = {"actual": 100.0, "predicted": 100.0, "interval": [90.0, 110.0], "error": error, "within_interval": True}
    return {"schema_version": 1, "kind": "backtest", "sources": ["x"], "rows": 100,
            "split": {"by": "fraction", "fraction": 0.5, "a_rows": 50, "b_rows": 50, "min_rows": 5, "b_cap": 4,
                      "a_cap": 4},
            "seed": 0, "seeds": 10, "interval_level": 0.95, "figures": {"makespan_s": fig},
            "oracle": {"makespan_s": fig},
            "drift": {"detected": False, "alpha": 0.05, "correction": "holm-bonferroni", "tests": []},
            "verdict": "v", "basis": "b"}


# --- 1. one reader for every side input: a FIFO never blocks, /dev/zero is never read -------
SIDE_INPUTS = [
    (["simulate", "{f}"], "s.toml"),
    (["plan", "{p}", "--previous", "{f}"], "old.json"),
    (["plan", "{p}", "--backtest", "{f}"], "bt.json"),
    (["plan", "{p}", "--gpu-catalog", "{f}"], "g.toml"),
    (["plan", "{p}", "--nodes", "{f}"], "n.toml"),
    (["plan", "{f}"], "m.json"),
    (["check", "{p}", "--plan", "{f}"], "plan.json"),
    (["check", "{p}", "--thresholds", "{f}"], "t.toml"),
    (["check", "{p}", "--backtest", "{f}"], "bt.json"),
    (["report", "{p}", "--simulate", "{f}", "-o", "r.html"], "sim.json"),
    (["report", "{p}", "--optimize", "{f}", "-o", "r.html"], "opt.json"),
    (["optimize", "{f}", "--passing-per-hour", "10"], "o.toml"),
]


@pytest.mark.parametrize("args,name", SIDE_INPUTS, ids=[f"{a[0]}-{a[-1] if a[-1] != '{f}' else a[-2]}"
                                                         for a, _ in SIDE_INPUTS])
def test_a_fifo_side_input_is_refused_not_waited_on(tmp_path, args, name):
    os.mkfifo(tmp_path / name)
    argv = [a.format(f=name, p=PUBLISHED) for a in args]
    line = refused(run(argv, tmp_path), name)
    assert "FIFO" in line, line


@pytest.mark.parametrize("args", [["plan", "{p}", "--previous", "/dev/zero"], ["check", "{p}", "--plan", "/dev/zero"],
                                  ["simulate", "/dev/zero"], ["check", "{p}", "--thresholds", "/dev/zero"]],
                         ids=["previous", "plan", "scenario", "thresholds"])
def test_dev_zero_is_refused_before_a_byte_is_read(tmp_path, args):
    line = refused(run([a.format(p=PUBLISHED) for a in args], tmp_path), "/dev/zero")
    assert "character device" in line, line


def test_a_fifo_gpu_catalog_inside_a_scenario(tmp_path):
    os.mkfifo(tmp_path / "g.toml")
    text = (SCENARIOS / "inference_pool.toml").read_text().replace("[inference]", '[inference]\ngpu_catalog = "g.toml"')
    (tmp_path / "s.toml").write_text(text)
    line = refused(run(["simulate", "s.toml"], tmp_path), "g.toml")
    assert "FIFO" in line


# --- 2. no output inside an input folder, however the path reaches it -----------------------
def _outputs(tmp: Path) -> list[list[str]]:
    (tmp / "out").mkdir()
    (tmp / "link").symlink_to(tmp / "jobs" / "oracle-n2")
    return [
        ["measure", "jobs", "--json", "-o", "jobs/new.json"],
        ["check", "jobs", "--metrics-out", "jobs/oracle-n2/f.prom"],
        ["check", "jobs", "--prometheus-rules", "link/rules.yml"],
        ["report", "jobs", "-o", "out/../jobs/r.html"],
        ["backtest", "jobs", "-o", "jobs/bt.json"],
        ["simulate", "jobs/s.toml", "--from", "jobs"],
        ["plan", "jobs", "--emit-k8s", "jobs", "--force"],
        ["plan", "jobs", "--emit-k8s", "link/k8s"],
    ]


@pytest.mark.parametrize("case", range(8), ids=["measure-o", "metrics-out", "rules-via-link", "report-dotdot",
                                                "backtest-o", "from-scenario", "k8s-force-on-input", "k8s-via-link"])
def test_no_output_inside_an_input_folder(tmp_path, case):
    root = jobs(tmp_path)
    args = _outputs(tmp_path)[case]
    before = digest(root)
    line = refused(run(args, tmp_path), "inside the input folder")
    assert digest(root) == before, f"{args} wrote into the input folder"
    assert "jobs" in line


# --- 3. scenario bounds on the built quantities, naming the key that made them ---------------
@pytest.mark.parametrize("scenario,edit,key", [
    ("images.toml", ("pull_mb_per_s = 100", "pull_mb_per_s = 1e-300"), "images.pull_mb_per_s"),
    ("substrate.toml", ('name = "cloud-vm"', 'name = "cloud-vm"\nturns_per_rollout = 1e300'), "substrate.turns_per_rollout"),
    ("inference_pool.toml", ("[inference]", "[inference]\niteration_base_ms = 1e300"), "inference.iteration_base_ms"),
    ("substrate.toml", ("count = 20000", "count = 1e30"), "workload.count"),
], ids=["pull-rate", "substrate-turns", "iteration-base", "count-past-int64"])
def test_scenario_quantities_bounded_as_built(tmp_path, scenario, edit, key):
    text = (SCENARIOS / scenario).read_text()
    if key == "substrate.turns_per_rollout":  # a [hold] workload: turns_per_rollout counts its actions
        text = text.replace("[turns]\n", '[hold]\ndist = "exponential"\nmean_s = 60\n[unused]\n')
        text = "\n".join(ln for ln in text.splitlines() if not ln.startswith(("turns =", "model_latency", "command")))
        text = text.replace("[unused]\n", "")
    assert edit[0] in text
    (tmp_path / "s.toml").write_text(text.replace(edit[0], edit[1]))
    line = refused(run(["simulate", "s.toml", "--json"], tmp_path), "s.toml", f"'{key}'")
    assert "year 9999" in line or "largest count" in line


def test_a_catalog_cold_start_is_bounded_by_its_substrate(tmp_path):
    (tmp_path / "cat.toml").write_text('[[substrate]]\nname = "slow"\ncold_start_s = 1e300\nper_action_s = 0.1\n'
                                       'source = "hand"\nas_of = "2026-01-01"\nkind = "vm"\n')
    text = (SCENARIOS / "substrate.toml").read_text().replace('name = "cloud-vm"', 'name = "slow"\ncatalog = "cat.toml"')
    (tmp_path / "s.toml").write_text(text)
    refused(run(["simulate", "s.toml", "--json"], tmp_path), "s.toml", "'substrate.name'", "1e+300 s")


def test_an_exponent_ending_in_s_is_no_duration(tmp_path):
    # zipf_s is the Zipf exponent: a steep one puts every build on the top image; it is no time
    text = (SCENARIOS / "images.toml").read_text().replace("zipf_s = 1.0", "zipf_s = 1e300")
    (tmp_path / "s.toml").write_text(text)
    r = run(["simulate", "s.toml", "--json"], tmp_path)
    assert r.code == 0, r.err
    assert json.loads(r.out)["completed"] > 0


# --- 4. saved outputs read back: ranges and finiteness; gates fail closed --------------------
def test_forged_previous_plan_with_negative_nodes(tmp_path, plan_doc):
    plan_doc = json.loads(json.dumps(plan_doc))
    plan_doc["nodes"]["count"] = -5
    (tmp_path / "old.json").write_text(json.dumps(plan_doc))
    refused(run(["plan", str(PUBLISHED), "--previous", "old.json"], tmp_path), "old.json", "nodes.count")


def test_check_refuses_a_negative_plan_target(tmp_path, plan_doc):
    plan_doc = json.loads(json.dumps(plan_doc))
    plan_doc["target"]["concurrency"] = -100
    (tmp_path / "p.json").write_text(json.dumps(plan_doc))
    refused(run(["check", str(PUBLISHED), "--plan", "p.json"], tmp_path), "p.json", "target.concurrency")


@pytest.mark.parametrize("command", ["check", "plan"])
def test_a_nan_backtest_error_is_refused(tmp_path, command):
    (tmp_path / "bt.json").write_text(json.dumps(backtest_doc(float("nan"))))  # Python writes NaN
    line = refused(run([command, str(PUBLISHED), "--backtest", "bt.json"], tmp_path), "bt.json",
                   "figures.makespan_s.error")
    assert "nan%" not in line


def test_a_backtest_without_a_makespan_error_fails_the_gate(tmp_path):
    (tmp_path / "bt.json").write_text(json.dumps(backtest_doc(None)))
    r = run(["check", str(PUBLISHED), "--backtest", "bt.json", "--json"], tmp_path)
    assert r.code == 1, r.err
    gate = next(c for c in json.loads(r.out)["results"] if c["name"] == "backtest_drift")
    assert gate["status"] == "fail" and "no makespan error" in gate["message"]


def test_a_summary_count_past_int64_is_refused(tmp_path):
    data = json.loads(PUBLISHED.read_text())
    data["rows"] = 2**64
    (tmp_path / "m.json").write_text(json.dumps(data))
    refused(run(["plan", "m.json", "--json"], tmp_path), "m.json", "key rows")


# --- 5. one escaping, injective, on every line the user reads ---------------------------------
def test_two_model_names_never_share_a_metrics_series(tmp_path):
    data = json.loads(PUBLISHED.read_text())
    slice_ = {"rows": 10, "exception_rate": 0.1, "hold_median_s": 60.0, "pass_rate": 0.5}
    data["by_model"] = {"a\nb": slice_, "a\\x0ab": slice_}  # a newline, and the six characters a\x0ab
    (tmp_path / "m.json").write_text(json.dumps(data))
    r = run(["check", "m.json", "--metrics-out", "m.prom"], tmp_path)
    assert r.code in (0, 1), r.err
    series = [ln.rsplit(" ", 1)[0] for ln in (tmp_path / "m.prom").read_text().splitlines() if ln and ln[0] != "#"]
    assert len(series) == len(set(series)), "duplicate series"
    rollouts = [s for s in series if s.startswith("sandbox_fleet_model_rollouts{")]
    assert len(rollouts) == 2, rollouts


def test_previous_plan_names_cannot_forge_lines(tmp_path, plan_doc):
    evil = "t\x1b[2J\n  BUY 999 x evil"
    old = json.loads(json.dumps(plan_doc))
    old["nodes"]["type"] = evil
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "p.json").write_text(json.dumps(plan_doc))
    r = run(["plan", str(PUBLISHED), "--previous", "old.json"], tmp_path)
    assert r.code == 0, r.err
    assert "\x1b" not in r.out and not any(ln.startswith("  BUY 999") for ln in r.out.splitlines())
    assert "\\x1b[2J\\x0a  BUY 999 x evil" in r.out
    r = run(["report", str(PUBLISHED), "--plan", "p.json", "--previous", "old.json", "-o", "r.html"], tmp_path)
    assert r.code == 0, r.err
    html = (tmp_path / "r.html").read_text()
    assert "\x1b" not in html and "BUY 999 x evil</p>" not in html and "\\x1b[2J\\x0a  BUY 999" in html


# --- 6. backtest split ------------------------------------------------------------------------------
def test_backtest_refuses_to_cut_simultaneous_starts(tmp_path):
    rows = "".join(f"r{i},t{i},m,j,2026-01-01T00:00:00Z,2026-01-01T01:00:00Z,1.0\n" for i in range(12))
    (tmp_path / "r.csv").write_text(CSV_HEAD + rows)
    refused(run(["backtest", "r.csv", "--json"], tmp_path), "--split-at", "same instant")


# --- 8. decompression bounded on every path -----------------------------------------------------
def test_a_multi_member_jsonl_gz_line_is_bounded(tmp_path):
    # line 1 a row, line 2 1.5 GiB of "x" in 96 gzip members (7 MB): DuckDB refuses the line, and the
    # scan that finds the bad line by number must not read it whole (was: the generic out-of-memory line)
    import gzip

    row = b'{"id":"a","task_id":"t","started_at":"2026-01-01T00:00:00Z","finished_at":"2026-01-01T00:01:00Z"}\nx'
    member = gzip.compress(b"x" * (16 << 20), compresslevel=1)
    (tmp_path / "bad.jsonl.gz").write_bytes(gzip.compress(row, compresslevel=1) + member * 96)
    line = refused(run(["measure", "bad.jsonl.gz", "--json"], tmp_path), "bad.jsonl.gz", "line 2")
    assert "refusing to decompress" in line


class _Spaces(io.RawIOBase):
    """``n`` bytes of spaces, read in blocks (a member body the test never holds whole)."""

    def __init__(self, n: int):
        self.left = n

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        k = min(len(b), self.left)
        b[:k] = b" " * k
        self.left -= k
        return k


def test_a_huge_task_toml_in_a_gzip_tar_is_refused_before_it_is_read(tmp_path):
    # a gzip tar is read by tarfile, which inflates what it reads: the 1.5 GiB member's declared size
    # is judged first (was: read whole under the 2 GiB limit, then judged)
    import gzip
    import tarfile

    root = tmp_path / "tasks"
    (root / "metadata").mkdir(parents=True)
    (root / "data").mkdir()
    big = 3 << 29
    with gzip.open(root / "data" / "s.tar.gz", "wb", compresslevel=1) as gz, tarfile.open(fileobj=gz, mode="w|") as tar:
        for name, size, body in (("tg-a", len(GOOD_TASK), io.BytesIO(GOOD_TASK)), ("tg-b", big, _Spaces(big))):
            info = tarfile.TarInfo(f"{name}/task.toml")
            info.size = size
            tar.addfile(info, body)
    pq.write_table(pa.table({"task_id": ["tg-a", "tg-b"], "task_group_id": ["tg-a", "tg-b"],
                             "shard": ["data/s.tar.gz"] * 2, "member_prefix": ["tg-a", "tg-b"]}),
                   root / "metadata" / "tasks.parquet")
    (tmp_path / "r.csv").write_text(CSV_HEAD + csv_rows(3))
    r = run(["measure", "r.csv", "--tasks", "tasks", "--json"], tmp_path)
    assert r.code == 0, r.err
    assert any("tg-b" in w and "larger than a task.toml can be" in w for w in json.loads(r.out)["warnings"])


def test_an_image_count_past_memory_is_refused_at_its_key(tmp_path):
    text = (SCENARIOS / "images.toml").read_text()
    assert "count = 200\n" in text
    (tmp_path / "s.toml").write_text(text.replace("count = 200\n", "count = 100000000\n"))
    line = refused(run(["simulate", "s.toml", "--json"], tmp_path), "s.toml", "'images.count'", "100,000,000 images")
    assert "GiB" in line and "out of memory" not in line


# --- 9. strict scenario types -------------------------------------------------------------------
@pytest.mark.parametrize("edit,key,given", [
    (("cap = 256", 'cap = "10"'), "fleet.cap", "'10'"),
    (("cap = 256", 'cap = 256\nadmission = "priority"\npreempt = "yes"'), "fleet.preempt", "'yes'"),
    (("seed = 1", 'seed = "1"'), "run.seed", "'1'"),
    (("train_s = 120.0", 'train_s = "120"'), "workload.train_s", "'120'"),
], ids=["cap-text", "preempt-text", "seed-text", "train-text"])
def test_scenario_text_is_no_number(tmp_path, edit, key, given):
    text = (SCENARIOS / "images.toml").read_text()
    assert edit[0] in text
    (tmp_path / "s.toml").write_text(text.replace(edit[0], edit[1], 1))
    refused(run(["simulate", "s.toml", "--json"], tmp_path), "s.toml", f"'{key}'", given)


# --- 10. flag gaps ---------------------------------------------------------------------------------
OPT = str(SCENARIOS / "closed_loop_rst.toml")


@pytest.mark.parametrize("args,named", [
    (["plan", str(PUBLISHED), "--price-tier", ""], "--price-tier"),
    (["plan", str(PUBLISHED), "--gpu-catalog", "missing.toml"], "missing.toml"),
    (["plan", str(PUBLISHED), "--emit-k8s", "k8s", "--k8s-cluster", "c1", "--k8s-provision-s", "1e308"], "--k8s-provision-s"),
    (["plan", str(PUBLISHED), "--emit-k8s", "k8s", "--k8s-cluster", "c1", "--k8s-namespace", "kube-system"], "--k8s-namespace"),
    (["measure", str(HARBOR), "--map", "node=host,node=model"], "--map"),
    (["optimize", OPT, "--passing-per-hour", "100", "--gpus-per-replica", "0"], "--gpus-per-replica"),
    (["optimize", OPT, "--passing-per-hour", "100", "--node-type", "bogus"], "'bogus'"),
    (["optimize", OPT, "--batch", "100000000", "--max-step-s", "100"], "--batch"),
], ids=["price-tier-empty", "gpu-catalog-missing", "provision-1e308", "kube-system", "map-twice", "gpus-per-replica-0",
        "node-type-bogus", "batch-1e8"])
def test_flag_gaps(tmp_path, args, named):
    line = refused(run([*args, "--json"], tmp_path), named)
    assert "max-memory-gb" not in line  # optimize has no such flag
    assert not (tmp_path / "k8s").exists()


def test_nodes_fifo_is_named_for_what_it_is(tmp_path):
    os.mkfifo(tmp_path / "n.toml")
    line = refused(run(["plan", str(PUBLISHED), "--nodes", "n.toml"], tmp_path), "n.toml")
    assert "not found" not in line and "FIFO" in line


# --- 11. no input dropped without a word ----------------------------------------------------------
def test_glob_matches_that_are_no_file_are_named(tmp_path):
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "a.csv").write_text(CSV_HEAD + csv_rows(3))
    (tmp_path / "g" / "b.csv").symlink_to("nowhere.csv")
    (tmp_path / "g" / "loop.csv").symlink_to("loop.csv")
    os.mkfifo(tmp_path / "g" / "f.csv")
    before = digest(tmp_path / "g")
    r = run(["measure", "g/*.csv", "--json"], tmp_path)
    assert r.code == 0, r.err
    s = json.loads(r.out)
    assert s["rows"] == 3
    named = {w.split(":")[0]: w for w in s["warnings"] if "matched by" in w}
    assert set(named) == {"g/b.csv", "g/loop.csv", "g/f.csv"}, s["warnings"]
    assert "dangling link" in named["g/b.csv"] and "link loop" in named["g/loop.csv"]
    assert digest(tmp_path / "g") == before


def test_a_fifo_in_an_inspect_folder_is_named(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.json").write_bytes((INSPECT / "mock-local.json").read_bytes())
    os.mkfifo(tmp_path / "logs" / "b.eval")
    r = run(["measure", "logs", "--format", "inspect", "--json"], tmp_path)
    assert r.code == 0, r.err
    assert any("b.eval" in w and "no regular file" in w for w in json.loads(r.out)["warnings"])


def test_an_eval_entry_named_twice_is_counted(tmp_path):
    import warnings
    import zipfile

    header = json.dumps({"version": 2, "status": "success",
                         "eval": {"task": "t", "eval_id": "e1", "model": "m", "config": {}}})
    other = {**GOOD_SAMPLE, "id": "other"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name it is asked to write
        with zipfile.ZipFile(tmp_path / "dup.eval", "w") as z:
            z.writestr("header.json", header)
            z.writestr("samples/1_epoch_1.json", json.dumps(GOOD_SAMPLE))
            z.writestr("samples/1_epoch_1.json", json.dumps(other))
    r = run(["measure", "dup.eval", "--json"], tmp_path)
    assert r.code == 0, r.err
    s = json.loads(r.out)
    assert s["rows"] == 1 and s["coverage"]["rejected"] == {"unreadable": 1}  # 2 entries: 1 read, 1 counted
    assert any("second entry" in w for w in s["warnings"])


# --- 12. last round's four ----------------------------------------------------------------------
def test_a_jsonl_is_faulted_at_its_first_bad_line(tmp_path):
    row = json.dumps({"id": "a", "task_id": "t", "started_at": "2026-01-01T00:00:00Z",
                      "finished_at": "2026-01-01T00:01:00Z"})
    (tmp_path / "r.jsonl").write_text(f'{row}\n[1, 2]\n{row}\n"x"\n')  # line 2 is the first that is no object
    refused(run(["measure", "r.jsonl", "--json"], tmp_path), "r.jsonl", "line 2")


def test_a_smooth_search_past_memory_is_refused_up_front(tmp_path):
    line = refused(run(["plan", str(PUBLISHED), "--passing-per-hour", "1e15", "--shape", "smooth", "--json"],
                       tmp_path), "--passing-per-hour")
    assert "GiB" in line and "out of memory" not in line


def test_an_unreadable_csv_is_one_line_naming_it(tmp_path):
    """Permission denied for real: as root, the run drops to ``nobody`` (root reads any file, and
    Typer's access() check, the five-line usage box, then never fired); otherwise a mode-000 file."""
    import shutil
    import tempfile

    as_root = os.geteuid() == 0
    if as_root and shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: no way to be denied a read")
    work = Path(tempfile.mkdtemp(prefix="sf-unreadable-"))  # outside pytest's 0700 folder: nobody enters it
    try:
        work.chmod(0o777)
        (work / "r.csv").write_text(CSV_HEAD + csv_rows(3))
        (work / "r.csv").chmod(0)
        before = digest(work)
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if as_root else []
        proc = subprocess.run([*prefix, sys.executable, "-m", "sandbox_fleet.cli", "measure", "r.csv", "--json"],
                              cwd=work, env={**user_env(work / "_cache"), "HOME": str(work)},
                              capture_output=True, text=True, timeout=60)
        r = Run(proc.returncode, proc.stdout, proc.stderr)
        if as_root and "Permission denied" in r.err and "python" in r.err.lower():
            pytest.skip(f"nobody cannot run this Python: {r.err[-200:]}")
        line = refused(r, "r.csv")
        assert "ermission denied" in line and "Usage" not in r.err
        assert digest(work) == before
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --- 7. per-slice cost ----------------------------------------------------------------------------
def test_many_distinct_models_and_jobs_are_bounded(tmp_path):
    """200k rollouts, each its own model and job (200k models ran out of 4 GiB; 40k made 80 MB of
    JSON): under the battery's memory limit, by_model and by_job keep the TOP_SLICES models (jobs)
    with most rollouts, the rest one '(others)' row, stated in slice_cut and a warning."""
    n, k = 200_000, 50  # k: columns.TOP_SLICES, as docs/measure.md states it
    folder = tmp_path / "in"
    folder.mkdir()
    with open(folder / "r.csv", "w") as f:
        f.write(CSV_HEAD)
        f.writelines(f"r{i},t{i},model-{i:06d},job-{i:06d},2026-01-01T00:{i % 60:02d}:00Z,"
                     f"2026-01-01T01:{i % 60:02d}:00Z,1.0\n" for i in range(n))
    before = digest(folder)
    r = run(["measure", folder / "r.csv", "--json"], tmp_path)
    assert r.code == 0 and "Traceback" not in r.err, r.err[-2000:]
    s = json.loads(r.out)
    # one row each: the tie is broken by name, so the first k names are kept
    for key, what in (("by_model", "model"), ("by_job", "job")):
        assert sorted(s[key]) == sorted([f"{what}-{i:06d}" for i in range(k)] + ["(others)"])
        assert s[key]["(others)"]["rows"] == n - k
        assert s["slice_cut"][key] == {"top": k, "groups": n, "groups_merged": n - k, "rows_merged": n - k,
                                       "others": "(others)"}
        assert any(f"{n:,} distinct {what}s" in w for w in s["warnings"])
    assert len(r.out) < 2_000_000
    assert digest(folder) == before
