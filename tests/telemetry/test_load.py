import pytest
from telemetry_builders import HARBOR, TBENCH, utc

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry import filter_rollouts, load_telemetry
from sandbox_fleet.telemetry.sniff import sniff


def test_sniff_each_layout(release):
    assert sniff(str(release)) == "rst"
    assert sniff(str(release / "metadata" / "trajectories.parquet")) == "rst"
    assert sniff(str(HARBOR)) == "harbor"
    assert sniff(str(HARBOR / "oracle-n2")) == "harbor"
    assert sniff(str(HARBOR / "oracle-n2" / "hello-pass__hKWP3f9")) == "harbor"
    assert sniff(str(TBENCH)) == "terminal-bench"
    assert sniff(str(TBENCH / "2025-06-01__12-00-00")) == "terminal-bench"
    assert sniff(str(release / "metadata" / "tasks.parquet")) == "table"


def test_several_paths_of_different_formats_are_concatenated(release):
    tel = load_telemetry([str(HARBOR), str(TBENCH), str(release)], progress=False)
    assert tel.rollouts.num_rows == 12 + 6 + 4
    assert set(tel.caps) == {"oracle-n2", "terminus2-n3", "2025-06-01__12-00-00", "2025-06-02__09-30-00"}
    assert tel.sources == [str(HARBOR), str(TBENCH), str(release)]


def test_forced_format_mismatch_is_input_error():
    with pytest.raises(InputError, match="no Terminal-Bench results.json"):
        load_telemetry([str(HARBOR)], fmt="terminal-bench", progress=False)


def test_map_on_non_table_input_warns(release):
    tel = load_telemetry([str(HARBOR)], column_map="id=x", progress=False)
    assert any("--map applies to" in w for w in tel.warnings)


def test_filter_by_model_and_time_window():
    tel = load_telemetry([str(HARBOR)], progress=False)
    assert filter_rollouts(tel) is tel
    fake = filter_rollouts(tel, models=["fake-model"])
    assert fake.rollouts.num_rows == 6 and fake.caps == {"terminus2-n3": 3}
    # slow-sort (08:04:08.194721) and word-count (08:04:08.926927) start in [08:04:08, 08:04:09)
    win = filter_rollouts(tel, since="2026-11-29T08:04:08Z", until="2026-11-29T08:04:09")
    assert sorted(win.rollouts.column("task_id").to_pylist()) == ["slow-sort", "word-count"]
    assert all(utc(2026, 11, 29, 8, 4, 8) <= t < utc(2026, 11, 29, 8, 4, 9) for t in win.rollouts.column("started_at").to_pylist())
    # until is exclusive, since inclusive: the exact start of hello-pass
    exact = filter_rollouts(tel, since="2026-11-29T08:04:02.527084+00:00", until="2026-11-29T08:04:02.527085Z")
    assert exact.rollouts.column("task_id").to_pylist() == ["hello-pass"]
    assert filter_rollouts(tel, until="2026-11-29T08:04:02.527084Z").rollouts.num_rows == 8
    assert tel.rollouts.num_rows == 12  # the input is not modified


def test_filter_errors():
    tel = load_telemetry([str(HARBOR)], progress=False)
    with pytest.raises(InputError, match="`since`: 'last week' is not an ISO-8601"):
        filter_rollouts(tel, since="last week")
    with pytest.raises(InputError, match="no rollouts match"):
        filter_rollouts(tel, models=["gpt-9"])
