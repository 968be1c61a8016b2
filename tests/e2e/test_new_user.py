"""Issue 41's new user: a CSV of 500 rollouts with other column names and an own price CSV to a signed
purchase order in at most four commands, every command after the first copied from the tool's output.

"Signed" here: the order is priced with the user's own prices (the basis names their file, nothing
illustrative), its $/h is the node count times the CSV's price plus the attached volume (computed
here from the CSV, not by the tool), and the exceptions the user's ``error`` column records are in it
(the exception share of sandbox-hours, computed here from the rows written).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import random
import re
import shlex

ROLLOUTS = 500
#: the user's price list: one type with local disk, one EBS-only with its volume on the row
PRICES = [
    {"instance": "box-local", "vcpu": 64, "memory": 128, "disk_gb": 1500, "on_demand": 3.10, "reserved": 1.95, "spot": 1.20,
     "volume_gb": "", "volume_usd_per_gb_h": ""},
    {"instance": "box-ebs", "vcpu": 64, "memory": 256, "disk_gb": 0, "on_demand": 3.30, "reserved": 2.05, "spot": 0.95,
     "volume_gb": 400, "volume_usd_per_gb_h": 0.0001096},
]


def _rollouts(path) -> tuple[float, int]:
    """Write the user's CSV; return (exception share of sandbox-hours, rows with an error)."""
    r = random.Random(41)
    t0 = dt.datetime(2026, 1, 5, 8, 0, tzinfo=dt.UTC)
    hours_all = hours_err = 0.0
    errors = 0
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["episode_id", "start_ts", "end_ts", "reward", "error", "host", "task"])
        for i in range(ROLLOUTS):
            start = t0 + dt.timedelta(seconds=r.randrange(0, 4 * 3600))
            end = start + dt.timedelta(seconds=r.randrange(60, 1800))
            err = "AgentTimeoutError" if r.random() < 0.2 else ""
            hold_h = (end - start).total_seconds() / 3600
            hours_all += hold_h
            hours_err += hold_h if err else 0.0
            errors += bool(err)
            w.writerow([f"ep-{i:04d}", start.isoformat(), end.isoformat(), "" if err else r.choice(["0", "1"]), err,
                        f"node-{i % 5}", f"task-{i % 40}"])
    return hours_err / hours_all, errors


def _command(text: str, marker: str) -> list[str]:
    """The ``sandbox-fleet ...`` command the tool printed after ``marker``, as argv (no program name)."""
    m = re.search(re.escape(marker) + r"\s*(sandbox-fleet .+?)(?:   \(|$)", text, re.M)
    assert m, f"no {marker!r} command in: {text}"
    argv = shlex.split(m[1])
    assert argv[0] == "sandbox-fleet"
    return argv[1:]


def test_csv_with_other_names_to_a_signed_order_in_four_commands(tmp_path, monkeypatch, run_cli):
    monkeypatch.chdir(tmp_path)
    share, errors = _rollouts(tmp_path / "rollouts.csv")
    with open(tmp_path / "prices.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(PRICES[0]))
        w.writeheader()
        w.writerows(PRICES)
    commands = []

    def run(argv):
        commands.append(argv)
        return run_cli(*argv)

    # 1. typed from docs/catalog.md
    r = run(["catalog", "import", "prices.csv", "-o", "catalog.toml"])
    assert r.code == 0, r.err
    # 2. the check it suggests
    r2 = run(_command(r.err, "check it:"))
    assert r2.code == 0, r2.err
    assert "2 node types" in r2.out
    # 3. the plan it suggests, PATH being the user's telemetry
    plan_argv = ["rollouts.csv" if a == "PATH" else a for a in _command(r.err, "plan with it:")]
    r3 = run(plan_argv)
    assert r3.code == 2 and r3.err.count("\n") == 1, r3.err  # the columns: one line, with the command to run
    assert "missing column(s) id, started_at, finished_at" in r3.err
    # 4. the command the refusal printed
    argv4 = _command(r3.err, "run:")
    r4 = run(argv4)
    assert r4.code == 0, r4.err
    assert len(commands) <= 4

    mapped = dict(kv.split("=") for kv in argv4[argv4.index("--map") + 1].split(","))
    assert mapped == {"id": "episode_id", "started_at": "start_ts", "finished_at": "end_ts", "exception_type": "error",
                      "node": "host", "task_id": "task"}
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["nodes"]["type"] == "box-ebs"  # the cheaper type: its disk is the attached volume
    row = next(p for p in PRICES if p["instance"] == plan["nodes"]["type"])
    volume_h = float(row["volume_gb"] or 0) * float(row["volume_usd_per_gb_h"] or 0)
    n = plan["nodes"]["count"]
    for tier in ("on_demand", "reserved", "spot"):  # the user's prices, the volume in every tier
        assert abs(plan["cost"][f"{tier}_per_h"] - n * (row[tier] + volume_h)) < 1e-9
    basis = next(a for a in plan["assumptions"] if a["name"] == "node_prices")["detail"]
    assert "catalog.toml" in basis and "illustrative" not in basis
    assert abs(plan["cost"]["exception_share"] - share) < 1e-6 and errors > 0  # the error column is read
