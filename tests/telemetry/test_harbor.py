import json
import shutil
from pathlib import Path

from telemetry_builders import HARBOR, utc

from sandbox_fleet.telemetry import load_telemetry


def _by_task(tel, job):
    rows = [r for r in tel.rollouts.to_pylist() if r["job"] == job]
    return {r["task_id"]: r for r in rows}


def test_jobs_folder_reads_both_jobs_with_caps():
    tel = load_telemetry([str(HARBOR)], progress=False)
    assert tel.rollouts.num_rows == 12
    assert tel.caps == {"oracle-n2": 2, "terminus2-n3": 3}
    assert tel.rejected == {}
    assert tel.warnings == []  # Harbor 0.26 trial times carry a Z


def test_terminus_agent_timeout_trial_exact_values():
    tel = load_telemetry([str(HARBOR / "terminus2-n3")], progress=False)
    assert tel.rollouts.num_rows == 6
    assert tel.caps == {"terminus2-n3": 3}
    r = _by_task(tel, "terminus2-n3")["agent-timeout"]
    assert r["id"] == "2a8e3107-a8f4-4adc-a27e-73ff76df8c4f"
    assert r["model"] == "fake-model"
    assert r["exception_type"] == "AgentTimeoutError" and r["has_exception"] is True
    assert (r["input_tokens"], r["output_tokens"], r["cached_tokens"], r["turns"]) == (747, 204, 0, 1)
    assert r["reward"] == 0.0
    assert r["started_at"] == utc(2026, 11, 29, 8, 4, 2, 445643)
    assert r["finished_at"] == utc(2026, 11, 29, 8, 4, 5, 811202)
    assert r["environment_setup_started_at"] == utc(2026, 11, 29, 8, 4, 2, 534084)
    assert r["environment_setup_finished_at"] == utc(2026, 11, 29, 8, 4, 2, 587010)
    assert r["agent_execution_finished_at"] == utc(2026, 11, 29, 8, 4, 5, 668948)
    assert r["verifier_started_at"] == utc(2026, 11, 29, 8, 4, 5, 726574)
    assert r["verifier_finished_at"] == utc(2026, 11, 29, 8, 4, 5, 796946)
    assert r["has_trajectory"] is None  # fixtures had agent/ logs stripped


def test_terminus_other_trials_tokens_and_rewards():
    rows = _by_task(load_telemetry([str(HARBOR / "terminus2-n3")], progress=False), "terminus2-n3")
    assert rows["slow-sort"]["input_tokens"] == 5659
    assert rows["slow-sort"]["cached_tokens"] == 4480
    assert rows["slow-sort"]["output_tokens"] == 942
    assert rows["slow-sort"]["turns"] == 6
    assert sum(r["input_tokens"] for r in rows.values()) == 20499  # the job's own stats total
    assert sum(r["cached_tokens"] for r in rows.values()) == 14528
    assert sum(r["output_tokens"] for r in rows.values()) == 3215
    assert sorted(t for t, r in rows.items() if r["reward"] == 1.0) == [
        "hello-pass", "nap-then-write", "slow-sort", "word-count"]
    assert [t for t, r in rows.items() if r["has_exception"]] == ["agent-timeout"]


def test_oracle_job_has_null_tokens_not_zero_and_agent_name_as_model():
    rows = _by_task(load_telemetry([str(HARBOR / "oracle-n2")], progress=False), "oracle-n2")
    assert len(rows) == 6
    r = rows["hello-pass"]
    assert r["model"] == "oracle"
    assert r["input_tokens"] is None and r["cached_tokens"] is None and r["turns"] is None
    assert r["reward"] == 1.0
    assert rows["agent-timeout"]["exception_type"] == "AgentTimeoutError"


def test_single_trial_folder_and_result_file():
    trial = HARBOR / "oracle-n2" / "hello-pass__hKWP3f9"
    for path in (trial, trial / "result.json"):
        tel = load_telemetry([str(path)], progress=False)
        assert tel.rollouts.column("id").to_pylist() == ["0d19cfb9-" + _id_tail(trial)]
        assert tel.rollouts.column("job").to_pylist() == ["oracle-n2"]
        assert tel.caps == {"oracle-n2": 2}


def _id_tail(trial: Path) -> str:
    return json.loads((trial / "result.json").read_text())["id"].split("-", 1)[1]


def test_reward_key_selects_another_reward_and_warns_for_trials_without_it():
    tel = load_telemetry([str(HARBOR / "oracle-n2")], reward_key="lines", progress=False)
    rewards = {r["task_id"]: r["reward"] for r in tel.rollouts.to_pylist()}
    assert rewards["slow-sort"] == 1000.0
    assert rewards["hello-pass"] is None
    assert any("'lines'" in w and "5 trial" in w for w in tel.warnings)


def _copy_job(tmp_path: Path) -> Path:
    job = tmp_path / "jobs" / "terminus2-n3"
    shutil.copytree(HARBOR / "terminus2-n3", job)
    for p in job.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return job


def _rewrite(result: Path, **changes) -> None:
    data = json.loads(result.read_text())
    data.update(changes)
    result.write_text(json.dumps(data))


def test_naive_times_taken_as_utc_and_warned_once(tmp_path):
    job = _copy_job(tmp_path)
    for trial, start in (("hello-pass__KHZpk96", "2026-11-29T08:04:02.527084"), ("word-count__uGhcF8a", "2026-11-29T08:04:08.926927")):
        _rewrite(job / trial / "result.json", started_at=start)
    tel = load_telemetry([str(job)], progress=False)
    naive = [w for w in tel.warnings if "naive" in w]
    # the general note once, and how many naive cells sat among offset ones (2 of 6 starts)
    assert len(naive) == 2
    assert naive[1].endswith("2 naive timestamp(s) in column 'started_at' mixed with offset ones were taken as UTC")
    rows = _by_task(tel, "terminus2-n3")
    assert rows["hello-pass"]["started_at"] == utc(2026, 11, 29, 8, 4, 2, 527084)


def test_assume_tz_shifts_naive_times(tmp_path):
    job = _copy_job(tmp_path)
    _rewrite(job / "hello-pass__KHZpk96" / "result.json", started_at="2026-11-29T03:04:02.527084")
    tel = load_telemetry([str(job)], assume_tz="America/New_York", progress=False)
    # 03:04 in New York (EST, UTC-5, in late November) is 08:04 UTC.
    assert _by_task(tel, "terminus2-n3")["hello-pass"]["started_at"] == utc(2026, 11, 29, 8, 4, 2, 527084)
    assert any("America/New_York" in w for w in tel.warnings)


def test_has_trajectory_from_agent_folder(tmp_path):
    job = _copy_job(tmp_path)
    (job / "hello-pass__KHZpk96" / "agent").mkdir()
    (job / "hello-pass__KHZpk96" / "agent" / "trajectory.json").write_text("{}")
    (job / "hello-fail__QeAkrsh" / "agent").mkdir()
    rows = _by_task(load_telemetry([str(job)], progress=False), "terminus2-n3")
    assert rows["hello-pass"]["has_trajectory"] is True
    assert rows["hello-fail"]["has_trajectory"] is False
    assert rows["slow-sort"]["has_trajectory"] is None


def test_null_agent_result_gives_null_tokens(tmp_path):
    job = _copy_job(tmp_path)
    _rewrite(job / "slow-sort__9aMSiLH" / "result.json", agent_result=None, verifier_result=None)
    r = _by_task(load_telemetry([str(job)], progress=False), "terminus2-n3")["slow-sort"]
    assert r["input_tokens"] is None and r["output_tokens"] is None and r["turns"] is None
    assert r["reward"] is None


def test_unfinished_trial_is_rejected_not_dropped(tmp_path):
    job = _copy_job(tmp_path)
    _rewrite(job / "slow-sort__9aMSiLH" / "result.json", finished_at=None)
    tel = load_telemetry([str(job)], progress=False)
    assert tel.rollouts.num_rows == 5
    assert tel.rejected == {"missing start or finish": 1}


def test_invalid_json_rejects_that_trial_only(tmp_path):
    job = _copy_job(tmp_path)
    (job / "hello-pass__KHZpk96" / "result.json").write_text("{not json")
    tel = load_telemetry([str(job)], progress=False)
    assert tel.rollouts.num_rows == 5
    assert tel.rejected == {"unreadable": 1}
    assert any("1 trial folder(s) rejected (unreadable): hello-pass__KHZpk96" in w for w in tel.warnings)


def test_wrong_type_token_count_becomes_null_with_a_warning(tmp_path):
    job = _copy_job(tmp_path)
    data = json.loads((job / "word-count__uGhcF8a" / "result.json").read_text())
    data["agent_result"]["n_input_tokens"] = "many"
    (job / "word-count__uGhcF8a" / "result.json").write_text(json.dumps(data))
    tel = load_telemetry([str(job)], progress=False)
    rows = _by_task(tel, "terminus2-n3")
    assert rows["word-count"]["input_tokens"] is None  # the bad cell, not the trial or the file
    assert rows["hello-pass"]["input_tokens"] is not None
    assert any("1 trial(s) have a 'agent_result.n_input_tokens' that is not a number" in w for w in tel.warnings)
