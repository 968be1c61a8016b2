"""Every rejection reason, counted, with the survivors checked by hand."""

from telemetry_builders import utc

from sandbox_fleet.telemetry import load_telemetry


def _csv(tmp_path, name, body):
    f = tmp_path / name
    f.write_text("id,started_at,finished_at,model\n" + body)
    return str(f)


def test_each_reason_counted_once(tmp_path):
    path = _csv(tmp_path, "r.csv", "\n".join([
        "ok1,2025-01-01T00:00:00Z,2025-01-01T00:00:10Z,first",
        "bad,yesterday,2025-01-01T00:00:10Z,x",
        "bad2,2025-01-01T00:00:00Z,not a time,x",
        "nofin,2025-01-01T00:00:00Z,,x",
        "nostart,,2025-01-01T00:00:00Z,x",
        "back,2025-01-01T00:00:10Z,2025-01-01T00:00:09Z,x",
        "zero,2025-01-01T00:00:10Z,2025-01-01T00:00:10Z,x",
        "ok1,2025-01-01T00:00:00Z,2025-01-01T00:00:20Z,second",
        ",2025-01-01T00:00:00Z,2025-01-01T00:00:20Z,x",
    ]) + "\n")
    tel = load_telemetry([path], progress=False)
    assert tel.rejected == {
        "unparsable time": 2,
        "missing start or finish": 2,
        "finished before started": 1,
        "duplicate id": 1,
        "missing id": 1,
    }
    rows = tel.rollouts.to_pylist()
    assert [r["id"] for r in rows] == ["ok1", "zero"]
    assert rows[0]["model"] == "first"  # the first in file order is kept
    assert rows[1]["started_at"] == rows[1]["finished_at"] == utc(2025, 1, 1, 0, 0, 10)


def test_duplicate_across_paths_keeps_the_first_path(tmp_path):
    a = _csv(tmp_path, "a.csv", "x,2025-01-01T00:00:00Z,2025-01-01T00:00:10Z,from-a\n")
    b = _csv(tmp_path, "b.csv", "x,2025-01-01T00:00:00Z,2025-01-01T00:00:10Z,from-b\ny,2025-01-01T00:00:00Z,2025-01-01T00:00:10Z,b\n")
    tel = load_telemetry([b, a], progress=False)
    assert tel.rollouts.column("model").to_pylist() == ["from-b", "b"]
    assert tel.rejected == {"duplicate id": 1}
    assert tel.sources == [b, a]


def test_duplicate_of_a_rejected_row_is_not_a_duplicate(tmp_path):
    path = _csv(tmp_path, "r.csv", "x,garbage,2025-01-01T00:00:10Z,bad\nx,2025-01-01T00:00:00Z,2025-01-01T00:00:10Z,good\n")
    tel = load_telemetry([path], progress=False)
    assert tel.rollouts.column("model").to_pylist() == ["good"]
    assert tel.rejected == {"unparsable time": 1}


def test_unreadable_phase_time_is_nulled_not_rejected(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("id,started_at,finished_at,verifier_started_at\na,2025-01-01T00:00:00Z,2025-01-01T00:00:10Z,soon\n")
    tel = load_telemetry([str(f)], progress=False)
    assert tel.rollouts.column("verifier_started_at").to_pylist() == [None]
    assert tel.rejected == {} and any("verifier_started_at" in w for w in tel.warnings)
