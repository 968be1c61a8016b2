"""Issue 8, through the CLI: atomic outputs, no traceback at any edge, refusals of what cannot fit.

Every refusal is exit 2 with one line on stderr naming the path or key, and leaves the
previous output (or nothing) in place. Permission cases run the CLI as ``nobody`` (CI runs as
root, which may write anywhere); a full disk is a file-size limit (``RLIMIT_FSIZE``: Python
ignores SIGXFSZ, so the write fails with EFBIG exactly as on a full disk).
"""

from __future__ import annotations

import json
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import pytest

from .conftest import PUBLISHED, ROOT, Run, user_env
from .test_bad_inputs_cli import assert_refused

SCENARIO = """[fleet]
cap = 4
[workload]
kind = "poisson"
rate_per_s = 2.0
count = 200
[hold]
dist = "exponential"
mean_s = 1.0
[run]
seed = 1
"""


def no_traceback(r: Run) -> None:
    assert "Traceback" not in r.out + r.err, r.err


def leftovers(folder: Path) -> list[str]:
    """Temporary files or folders an atomic writer left behind (hidden ``.NAME.PID.XXXX.tmp``)."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp"))


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    """A measure summary, a plan, a scenario and a CSV of rollouts, all real inputs."""
    sc = tmp_path / "s.toml"
    sc.write_text(SCENARIO)
    csv = tmp_path / "x.csv"
    csv.write_text("id,started_at,finished_at\n"
                   + "".join(f"r{i},2026-01-01T00:00:{i:02d}Z,2026-01-01T00:01:{i:02d}Z\n" for i in range(20)))
    m = tmp_path / "m.json"
    shutil.copy(PUBLISHED, m)
    return {"scenario": sc, "csv": csv, "measure": m}


# --- an output that is an input ------------------------------------------------------------
@pytest.mark.parametrize("args, victim", [
    (["measure", "x.csv", "-o", "x.csv"], "x.csv"),
    (["measure", "./x.csv", "-o", "x.csv"], "x.csv"),
    (["plan", "m.json", "-o", "m.json"], "m.json"),
    (["report", "m.json", "-o", "m.json"], "m.json"),
    (["simulate", "s.toml", "-o", "s.toml"], "s.toml"),
    (["simulate", "s.toml", "--telemetry", "s.toml"], "s.toml"),
    (["sweep", "s.toml", "--vary", "fleet.cap=2,4", "-o", "s.toml"], "s.toml"),
    (["simulate", "x.csv", "--from", "x.csv", "--force"], "x.csv"),
    (["check", "m.json", "--metrics-out", "m.json"], "m.json"),
    (["check", "m.json", "--prometheus-rules", "m.json"], "m.json"),
])
def test_output_onto_an_input_is_refused_and_the_input_survives(cli, files, tmp_path, args, victim):
    before = (tmp_path / victim).read_bytes()
    line = assert_refused(cli(*args), victim)
    assert "input" in line
    assert (tmp_path / victim).read_bytes() == before


def test_output_onto_an_input_through_a_symlink_is_refused(cli, files, tmp_path):
    (tmp_path / "alias.json").symlink_to(tmp_path / "m.json")
    assert_refused(cli("plan", "m.json", "-o", "alias.json"), "alias.json")


# --- a folder, a device, a bad suffix, a parent that is a file ----------------------------------
@pytest.mark.parametrize("args", [
    ["measure", "x.csv", "-o", "DIR"],
    ["plan", "m.json", "-o", "DIR"],
    ["report", "m.json", "-o", "DIR"],
    ["simulate", "s.toml", "-o", "DIR"],
    ["simulate", "s.toml", "--telemetry", "DIR"],
    ["simulate", "DIR", "--from", "x.csv"],
    ["sweep", "s.toml", "--vary", "fleet.cap=2,4", "-o", "DIR"],
    ["synth", "OUT", "--scale", "0.01", "-o", "DIR"],
    ["check", "m.json", "--metrics-out", "DIR"],
    ["check", "m.json", "--prometheus-rules", "DIR"],
])
def test_a_folder_as_the_output_file_is_refused(cli, files, tmp_path, args):
    (tmp_path / "DIR").mkdir()
    line = assert_refused(cli(*args), "DIR")
    assert "folder" in line
    assert not (tmp_path / "OUT").exists()  # refused before any work


@pytest.mark.parametrize("args", [
    ["measure", "x.csv", "-o", "/dev/full"],
    ["plan", "m.json", "-o", "/dev/full"],
    ["simulate", "s.toml", "-o", "/dev/null"],
])
def test_a_device_is_never_replaced(cli, files, args):
    line = assert_refused(cli(*args), args[-1])
    assert "not a regular file" in line
    assert not Path(args[-1]).is_file()


@pytest.mark.parametrize("args, option", [
    (["sweep", "s.toml", "--vary", "fleet.cap=2,4", "-o", "t.txt"], "-o"),
    (["simulate", "s.toml", "--telemetry", "t.csv"], "--telemetry"),
    (["report", "m.json", "-o", "r.pdf"], "-o"),
    (["simulate", "new.json", "--from", "x.csv"], "SCENARIO"),
    (["check", "m.json", "--prometheus-rules", "rules.txt"], "--prometheus-rules"),
])
def test_a_bad_suffix_is_refused_before_any_work(cli, files, args, option):
    line = assert_refused(cli(*args), option)
    assert "expected a file ending in" in line


def test_parent_that_is_a_file_is_refused_for_every_command(cli, files, tmp_path):
    for args in (["measure", "x.csv", "-o", "x.csv/out.json"], ["plan", "m.json", "-o", "m.json/p.json"],
                 ["report", "m.json", "-o", "m.json/r.html"], ["simulate", "s.toml", "-o", "s.toml/o.json"],
                 ["sweep", "s.toml", "--vary", "fleet.cap=2", "-o", "s.toml/o.csv"],
                 ["synth", "OUT", "--scale", "0.01", "-o", "m.json/o.json"]):
        line = assert_refused(cli(*args), args[-1])
        assert "not a folder" in line
    assert not (tmp_path / "OUT").exists()


def test_a_missing_parent_folder_is_created(cli, files, tmp_path):
    r = cli("plan", "m.json", "--json", "-o", "new/deeper/p.json")
    assert r.code == 0, r.err
    assert json.loads((tmp_path / "new/deeper/p.json").read_text()) == json.loads(r.out)


def test_demo_into_a_file_is_refused(cli, files):
    assert_refused(cli("demo", "m.json"), "m.json")


# --- unwritable destinations, as a user who may not write there ------------------------------------
@pytest.fixture
def shared(tmp_path):
    """A world-readable work folder with a read-only subfolder ``ro`` and a writable cache."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is needed to drop privileges")
    work = Path(tempfile.mkdtemp(prefix="i8-", dir="/tmp"))
    work.chmod(0o755)
    (work / "s.toml").write_text(SCENARIO)
    shutil.copy(PUBLISHED, work / "m.json")
    (work / "x.csv").write_text("id,started_at,finished_at\n"
                                + "".join(f"r{i},2026-01-01T00:00:{i:02d}Z,2026-01-01T00:02:00Z\n" for i in range(10)))
    for f in work.iterdir():
        f.chmod(0o644)
    (work / "ro").mkdir(mode=0o555)
    (work / "ro").chmod(0o555)
    (work / "ro" / "old.json").write_text("previous\n")
    (work / "ro" / "old.json").chmod(0o666)  # the file itself is writable: only the folder is not
    cache = work / "cache"
    cache.mkdir(mode=0o777)
    cache.chmod(0o777)
    probe = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c",
                            "import sandbox_fleet.cli"], capture_output=True, cwd=work)
    if probe.returncode != 0:
        shutil.rmtree(work)
        pytest.skip(f"the package cannot be imported as nobody here: {probe.stderr.decode()[-200:]}")
    yield work
    shutil.rmtree(work, ignore_errors=True)


def as_nobody(args: list, cwd: Path) -> Run:
    env = user_env(cwd / "cache")
    env["HOME"] = str(cwd / "cache")
    p = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                        sys.executable, "-m", "sandbox_fleet.cli", *map(str, args)],
                       cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    return Run(p.returncode, p.stdout, p.stderr)


@pytest.mark.parametrize("args", [
    ["measure", "x.csv", "-o", "ro/old.json"],
    ["plan", "m.json", "-o", "ro/old.json"],
    ["report", "m.json", "-o", "ro/r.html"],
    ["simulate", "s.toml", "-o", "ro/old.json"],
    ["simulate", "s.toml", "--telemetry", "ro/t.parquet"],
    ["simulate", "ro/new.toml", "--from", "x.csv"],
    ["sweep", "s.toml", "--vary", "fleet.cap=2,4", "-o", "ro/t.csv"],
    ["synth", "ro/OUT", "--scale", "0.01"],
    ["synth", "OUT", "--scale", "0.01", "-o", "ro/old.json"],
    ["demo", "ro/demo"],
    ["check", "m.json", "--metrics-out", "ro/fleet.prom"],
    ["check", "m.json", "--prometheus-rules", "ro/rules.yml"],
    ["plan", "m.json", "--node-type", "aws-m6id.24xlarge", "--emit-k8s", "ro/k8s"],
])
def test_unwritable_destination_is_one_line_for_every_command(shared, args):
    r = as_nobody(args, shared)
    line = assert_refused(r, "ro")
    assert "Permission denied" in line
    assert (shared / "ro" / "old.json").read_text() == "previous\n"
    assert sorted(p.name for p in (shared / "ro").iterdir()) == ["old.json"]
    assert not (shared / "OUT").exists()  # refused before the release was built


def test_unwritable_input_folder_read_error_is_one_line(shared):
    (shared / "secret").mkdir(mode=0o700)
    (shared / "secret" / "x.csv").write_text("rollout_id\n")
    r = as_nobody(["measure", "secret/x.csv"], shared)
    no_traceback(r)
    assert r.code == 2 and len(r.err_lines()) == 1, r.err


# --- a write that fails or is killed midway leaves the previous file --------------------------------
def _fsize_limit(n_bytes: int):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (n_bytes, n_bytes))
    return limit


def test_report_over_the_file_size_limit_keeps_the_previous_report(files, tmp_path):
    old = tmp_path / "r.html"
    old.write_text("<html>previous report</html>\n")
    p = subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", "report", "m.json", "-o", "r.html"], cwd=tmp_path,
                       env=user_env(tmp_path / "cache"), capture_output=True, text=True, timeout=300,
                       preexec_fn=_fsize_limit(64 * 1024))  # the report inlines ~4 MB of plotly.js
    line = assert_refused(Run(p.returncode, p.stdout, p.stderr), "r.html")
    assert "File too large" in line
    assert old.read_text() == "<html>previous report</html>\n"
    assert leftovers(tmp_path) == []


def test_sigterm_during_synth_keeps_the_previous_release(tmp_path):
    env = user_env(tmp_path / "cache")
    first = subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", "synth", "OUT", "--scale", "0.01", "--seed", "5",
                            "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    manifest = (tmp_path / "OUT" / "synth.json").read_bytes()
    before = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "OUT").rglob("*"))
    proc = subprocess.Popen([sys.executable, "-m", "sandbox_fleet.cli", "synth", "OUT", "--scale", "0.2", "--seed", "6",
                             "--force", "--json"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not leftovers(tmp_path) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)  # wait until its temporary release folder exists: the kill lands mid-build
    assert leftovers(tmp_path), "the forced synth never started its temporary folder"
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM
    assert (tmp_path / "OUT" / "synth.json").read_bytes() == manifest
    assert sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "OUT").rglob("*")) == before
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_inside_an_atomic_write_leaves_the_previous_file(tmp_path, sig):
    (tmp_path / "out.json").write_text("previous\n")
    code = ("import os, signal\nfrom sandbox_fleet import atomic\n"
            "with atomic.atomic_path('out.json') as tmp:\n"
            "    open(tmp, 'w').write('half a fi')\n"
            f"    os.kill(os.getpid(), {int(sig)})\n"
            "    signal.pause()\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, timeout=60, capture_output=True)
    # The process ends as it would have without us: killed by SIGTERM; by SIGINT after its KeyboardInterrupt.
    assert p.returncode == -sig
    assert (tmp_path / "out.json").read_text() == "previous\n"
    assert leftovers(tmp_path) == []


# --- simulate --from and synth never overwrite without --force ---------------------------------------
def test_simulate_from_refuses_to_overwrite_a_scenario(cli, files, tmp_path):
    edited = tmp_path / "mine.toml"
    edited.write_text("# hand-edited\n" + SCENARIO)
    line = assert_refused(cli("simulate", "mine.toml", "--from", "x.csv"), "mine.toml")
    assert "--force" in line
    assert edited.read_text().startswith("# hand-edited")
    r = cli("simulate", "mine.toml", "--from", "x.csv", "--force")
    assert r.code == 0, r.err
    assert "[workload]" in edited.read_text() and "# hand-edited" not in edited.read_text()


def test_synth_replaces_a_release_only_with_force(cli, tmp_path):
    assert cli("synth", "OUT", "--scale", "0.01", "--seed", "2", "--json").code == 0
    first = json.loads((tmp_path / "OUT" / "synth.json").read_text())
    line = assert_refused(cli("synth", "OUT", "--scale", "0.01", "--seed", "3"), "OUT")
    assert "--force" in line
    assert json.loads((tmp_path / "OUT" / "synth.json").read_text()) == first
    r = cli("synth", "OUT", "--scale", "0.01", "--seed", "3", "--force", "--json")
    assert r.code == 0, r.err
    assert json.loads((tmp_path / "OUT" / "synth.json").read_text())["seed"] == 3
    assert json.loads(r.out)["out"] == "OUT"
    assert leftovers(tmp_path) == []


def test_synth_force_never_replaces_foreign_data(cli, tmp_path):
    (tmp_path / "OUT").mkdir()
    (tmp_path / "OUT" / "notes.txt").write_text("mine")
    assert_refused(cli("synth", "OUT", "--scale", "0.01", "--force"), "OUT")
    assert (tmp_path / "OUT" / "notes.txt").read_text() == "mine"


# --- bounded work ------------------------------------------------------------------------------
def scenario(tmp_path: Path, text: str, name: str = "big.toml") -> Path:
    (tmp_path / name).write_text(text)
    return tmp_path / name


@pytest.mark.parametrize("body", [
    'kind = "poisson"\nrate_per_s = 7.0\ncount = 100000000',
    'kind = "poisson"\nrate_per_s = 7.0\ncount = 1e12',
    'kind = "sync-rl"\nbatch = 1000000000\nsteps = 1',
])
def test_a_scenario_over_the_memory_limit_is_refused_with_estimate_and_limit(cli, tmp_path, body):
    scenario(tmp_path, f"[fleet]\ncap = 10\n[workload]\n{body}\n[hold]\ndist = \"exponential\"\nmean_s = 1.0\n")
    tracemalloc.start()
    line = assert_refused(cli("simulate", "big.toml", "--max-memory-gb", "4"), "big.toml", "GiB", "--max-memory-gb 4")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "estimated" in line
    assert peak < 64 * 2**20  # refused before anything per rollout was allocated


def test_memory_limit_defaults_to_available_memory(cli, tmp_path):
    scenario(tmp_path, "[fleet]\ncap = 9223372036854775807\n[workload]\nkind = \"poisson\"\nrate_per_s = 7.0\n"
                       "count = 100\n[hold]\ndist = \"exponential\"\nmean_s = 1.0\n")
    line = assert_refused(cli("simulate", "big.toml"), "big.toml", "GiB", "9,223,372,036,854,775,807 slots")
    assert "75% of the" in line and "available" in line


def test_retries_count_in_the_memory_estimate(cli, tmp_path):
    scenario(tmp_path, "[fleet]\ncap = 10\n[workload]\nkind = \"poisson\"\nrate_per_s = 7.0\ncount = 1000\n"
                       "[workload.retry]\nmax_retries = 1000000000\n[workload.exceptions]\np = {agent = 0.5}\n"
                       "[hold]\ndist = \"exponential\"\nmean_s = 1.0\n")
    assert_refused(cli("simulate", "big.toml", "--max-memory-gb", "8"), "big.toml", "GiB")


def test_a_run_within_the_limit_runs(cli, files):
    r = cli("simulate", "s.toml", "--json", "--max-memory-gb", "1")
    assert r.code == 0, r.err
    assert json.loads(r.out)["rollouts"] == 200


def test_a_preemption_rate_no_attempt_can_survive_is_refused(cli, tmp_path):
    scenario(tmp_path, "[fleet]\ncap = 96\npreempt_rate_per_node_s = 1e9\n[workload]\nkind = \"poisson\"\n"
                       "rate_per_s = 7.0\ncount = 100\n[hold]\ndist = \"exponential\"\nmean_s = 60.0\n")
    line = assert_refused(cli("simulate", "big.toml"), "big.toml", "fleet.preempt_rate_per_node_s")
    assert "can finish" in line
    assert_refused(cli("sweep", "big.toml", "--vary", "fleet.cap=96,192"), "fleet.preempt_rate_per_node_s")


def test_a_grid_over_max_variants_is_refused_up_front(cli, files):
    t0 = time.perf_counter()
    line = assert_refused(cli("sweep", "s.toml", "--vary", "fleet.cap=1:100000:1", "--vary", "workload.rate_per_s=1:10:1"),
                          "1,000,000 variants", "--max-variants 10,000")
    assert "fleet.cap" in line
    assert_refused(cli("sweep", "s.toml", "--vary", "fleet.cap=1,2,3", "--max-variants", "2"), "3 variants")
    assert time.perf_counter() - t0 < 30  # nothing was built; generous for a loaded CI machine


def test_sweep_output_suffix_is_checked_before_the_grid_runs(cli, files, tmp_path):
    assert_refused(cli("sweep", "s.toml", "--vary", "fleet.cap=1:20:1", "-o", "missing/results.txt"), "results.txt")
    assert not (tmp_path / "missing").exists()


# --- overflow and seeds ----------------------------------------------------------------------------------
@pytest.mark.parametrize("hold, key", [
    ('dist = "deterministic"\nvalue_s = 1e308', "hold.value_s"),
    ('dist = "lognormal"\nmedian_s = 10.0\nsigma = 1000.0', "hold"),
    ('dist = "exponential"\nmean_s = 1e12', "hold.mean_s"),
    ('dist = "weibull"\nshape = 0.001\nscale_s = 10.0', "hold"),
])
def test_overflowing_durations_name_the_key(cli, tmp_path, hold, key):
    scenario(tmp_path, f"[fleet]\ncap = 4\n[workload]\nkind = \"poisson\"\nrate_per_s = 2.0\ncount = 10\n[hold]\n{hold}\n")
    line = assert_refused(cli("simulate", "big.toml"), "big.toml", f"'{key}'")
    assert "overflow" in line or "year 9999" in line
    assert_refused(cli("sweep", "big.toml", "--vary", "fleet.cap=2,4"), f"'{key}'")


@pytest.mark.parametrize("extra, key", [
    ("rate_per_s = 1e-300\ncount = 10", "workload.rate_per_s"),
    ("rate_per_s = 1.0\ncount = 10\nstart_s = 1e300", "workload.start_s"),
])
def test_times_past_year_9999_name_the_key(cli, tmp_path, extra, key):
    scenario(tmp_path, f"[fleet]\ncap = 4\n[workload]\nkind = \"poisson\"\n{extra}\n[hold]\ndist = \"exponential\"\nmean_s = 1.0\n")
    assert_refused(cli("simulate", "big.toml"), "big.toml", f"'{key}'", "year 9999")


def test_a_clock_that_sums_past_year_9999_is_refused(cli, tmp_path):
    scenario(tmp_path, "[fleet]\ncap = 4\n[workload]\nkind = \"sync-rl\"\nbatch = 2\nsteps = 400\ntrain_s = 2e9\n"
                       "[hold]\ndist = \"exponential\"\nmean_s = 1.0\n")
    assert_refused(cli("simulate", "big.toml"), "big.toml", "year 9999")


@pytest.mark.parametrize("args", [
    ["simulate", "s.toml", "--seed", "-1"],
    ["simulate", "new.toml", "--from", "x.csv", "--seed", "-1"],
    ["synth", "OUT", "--seed", "-1"],
    ["plan", "m.json", "--seed", "-1"],
])
def test_a_negative_seed_option_is_refused(cli, files, tmp_path, args):
    assert_refused(cli(*args), "--seed -1", "whole number >= 0")
    assert not (tmp_path / "OUT").exists() and not (tmp_path / "new.toml").exists()


def test_a_negative_scenario_seed_is_refused_in_simulate_and_sweep(cli, tmp_path):
    scenario(tmp_path, SCENARIO.replace("seed = 1", "seed = -3"))
    assert_refused(cli("simulate", "big.toml"), "big.toml", "'run.seed'")
    assert_refused(cli("sweep", "big.toml", "--vary", "fleet.cap=2,4"), "'run.seed'")
    scenario(tmp_path, SCENARIO, "ok.toml")
    assert_refused(cli("sweep", "ok.toml", "--vary", "run.seed=1,-1"), "'run.seed'")


def test_large_seeds_work(cli, files):
    r = cli("simulate", "s.toml", "--json", "--seed", str(2**70))
    assert r.code == 0, r.err
    assert json.loads(r.out)["seed"] == 2**70


# --- plan works on counts -------------------------------------------------------------------------
def _plan_peak(cli, *args) -> tuple[int, dict]:
    tracemalloc.start()
    r = cli("plan", *args, "--json")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert r.code == 0, r.err
    return peak, json.loads(r.out)


@pytest.mark.parametrize("summary", [PUBLISHED, ROOT / "tests" / "plan" / "data" / "mixed.json"])
def test_plan_concurrency_of_a_billion_uses_the_memory_of_a_thousand(cli, summary):
    small_peak, _small = _plan_peak(cli, summary, "--concurrency", "1000")
    _, mid = _plan_peak(cli, summary, "--concurrency", str(10**6))
    big_peak, big = _plan_peak(cli, summary, "--concurrency", str(10**9))
    assert big["target"]["concurrency"] == 10**9
    # FFD of a mix scaled a thousandfold packs a thousandfold nodes, up to one partly filled node per kind
    # (the 10**6 packing itself is checked node by node in tests/plan/test_packing.py).
    assert big["nodes"]["lower_bound"] <= big["nodes"]["count"]
    assert abs(big["nodes"]["count"] - 1000 * mid["nodes"]["count"]) <= 1000 * 8
    assert big_peak < small_peak * 2 + 2**20, (small_peak, big_peak)


def test_plan_concurrency_count_matches_the_slot_arithmetic(cli):
    _, plan = _plan_peak(cli, PUBLISHED, "--concurrency", str(10**9), "--node-type", "seed-96c")
    assert plan["nodes"]["count"] == math.ceil(10**9 / plan["nodes"]["per_node"])


def test_plan_batch_of_a_hundred_million_answers_within_bounded_memory(cli):
    peak, plan = _plan_peak(cli, PUBLISHED, "--batch", str(10**8), "--train-s", "300")
    assert plan["target"]["concurrency"] == 10**8
    assert plan["target"]["method"] == "closed-form" and "search limit" in plan["target"]["note"]
    assert peak < 256 * 2**20


# --- a disk that fills at the last moment, for every writer ----------------------------------------
@pytest.mark.parametrize("args, dest", [
    (["measure", "x.csv", "-o", "out.json"], "out.json"),
    (["plan", "m.json", "-o", "out.json"], "out.json"),
    (["simulate", "s.toml", "-o", "out.json"], "out.json"),
    (["simulate", "s.toml", "--telemetry", "t.parquet"], "t.parquet"),
    (["simulate", "new.toml", "--from", "x.csv", "--force"], "new.toml"),
    (["sweep", "s.toml", "--vary", "fleet.cap=2,4", "--workers", "1", "-o", "t.csv"], "t.csv"),
    (["sweep", "s.toml", "--vary", "fleet.cap=2,4", "--workers", "1", "-o", "t.parquet"], "t.parquet"),
    (["sweep", "s.toml", "--vary", "fleet.cap=2,4", "--workers", "1", "-o", "t.json"], "t.json"),
    (["report", "m.json", "-o", "r.html"], "r.html"),
])
def test_no_space_left_is_one_line_and_keeps_the_previous_file(cli, files, tmp_path, monkeypatch, args, dest):
    from sandbox_fleet import atomic

    (tmp_path / dest).write_bytes(b"previous")
    real = os.replace

    def full_disk(src, dst):
        if Path(dst).name == dest:
            raise OSError(28, os.strerror(28))
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", full_disk)
    line = assert_refused(cli(*args), dest, "No space left on device")
    assert line.startswith("error: ")
    assert (tmp_path / dest).read_bytes() == b"previous"
    assert leftovers(tmp_path) == []


def test_no_space_left_at_the_release_rename_keeps_the_previous_release(cli, tmp_path, monkeypatch):
    from sandbox_fleet import atomic

    assert cli("synth", "OUT", "--scale", "0.01", "--seed", "2", "--json").code == 0
    manifest = (tmp_path / "OUT" / "synth.json").read_bytes()
    real = os.rename

    def full_disk(src, dst):
        if Path(dst).name == "OUT":
            raise OSError(28, os.strerror(28))
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "rename", full_disk)
    assert_refused(cli("synth", "OUT", "--scale", "0.01", "--seed", "3", "--force"), "OUT", "No space left on device")
    assert (tmp_path / "OUT" / "synth.json").read_bytes() == manifest
    assert leftovers(tmp_path) == []


def test_a_timeout_past_the_end_of_time_never_fires_and_is_allowed(cli, tmp_path):
    scenario(tmp_path, SCENARIO.replace("[hold]", "agent_timeout_s = 1e300\n[hold]").replace("cap = 4", "cap = 4\nqueue_timeout_s = 1e300"))
    r = cli("simulate", "big.toml", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["completed"] == 200


def test_telemetry_with_from_is_refused_not_ignored(cli, files, tmp_path):
    assert_refused(cli("simulate", "new.toml", "--from", "x.csv", "--telemetry", "t.parquet"), "--telemetry", "--from")
    assert not (tmp_path / "new.toml").exists()
