"""The exported metrics and rules in a real Prometheus, fed by a real Pushgateway and node-exporter.

Debian's ``prometheus``, ``prometheus-pushgateway`` and ``prometheus-node-exporter`` binaries
(installed by ``.ci/run``; skipped without them, failed under CI=true) run on free 127.0.0.1 ports
in a temporary folder and are stopped by PID. One summary with two RL jobs, a large one over the
fail rate and a small one under ``min_rows``, reaches Prometheus three ways at once: the textfile
collector, and one Pushgateway push scraped with ``honor_labels: true`` and with ``false``. For each
way, the alerts Prometheus's own rule evaluation fires are asserted equal to ``check``'s verdicts
(critical = fail, warning = warn), gate for gate.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from producers import healthy_telemetry
from sandbox_fleet.report.prometheus import rules
from sandbox_fleet.report.thresholds import Thresholds, load_thresholds
from summaries import checks_of, measure_json, outputs_of, plan_json

BIG, TINY = "rl-big", "rl-tiny"
#: rows of the small job (under exception_rate_by_job.min_rows = 100) and of the whole corpus
TINY_ROWS, ROWS = 40, 1200
PUSH_JOB = "sandbox-fleet"


BAD_NODE = "sb-bad"


def _two_jobs():
    """The healthy corpus relabelled as two RL jobs: 1,160 rollouts of ``rl-big`` raising on 45%
    (every rollout with i % 20 < 9), 40 of ``rl-tiny`` raising on 90% (i % 10 != 0). The last 80
    rollouts (40 of each job) ran on node ``sb-bad``: 18 + 36 = 54 of 80 raised (67.5%); the
    rest keep the healthy corpus's six nodes."""
    tel = healthy_telemetry()
    tab = tel.rollouts
    n = tab.num_rows
    job = [BIG if i < n - TINY_ROWS else TINY for i in range(n)]
    exc = [(i % 20 < 9) if i < n - TINY_ROWS else (i % 10 != 0) for i in range(n)]
    etype = ["AgentTimeoutError" if e else None for e in exc]
    node = [BAD_NODE if i >= n - 2 * TINY_ROWS else f"node-{(i // 40) % 6}" for i in range(n)]
    for name, values in (("job", job), ("node", node), ("has_exception", exc), ("exception_type", etype)):
        i = tab.schema.get_field_index(name)
        tab = tab.set_column(i, tab.schema.field(i), pa.array(values, type=tab.schema.field(i).type))
    tel.rollouts = tab
    tel.caps = {BIG: 150, TINY: 150}
    return tel


def _summary() -> dict:
    m = measure_json(_two_jobs())
    # data time two hours ago: telemetry_stale warns (above 1 h, under 6 h) in Prometheus
    m["last_finished_at"] = (datetime.now(UTC) - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return m


def _fast_thresholds(tmp: Path) -> Thresholds:
    """The shipped thresholds with every ``for:`` at 1 s, so alerts fire within seconds."""
    path = tmp / "fast.toml"
    path.write_text("".join(f"[{name}]\nfor_s = 1\n" for name in Thresholds.model_fields))
    return load_thresholds(path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def _wait_http(url: str, proc: subprocess.Popen, deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer")


def _query(port: int, expr: str) -> list[dict]:
    q = urllib.parse.urlencode({"query": expr})
    body = _get(f"http://127.0.0.1:{port}/api/v1/query?{q}")
    assert body["status"] == "success", body
    return body["data"]["result"]


def _expected(results, t: Thresholds) -> tuple[set[str], set[str]]:
    """(critical, warning) alert names from check's verdicts, plus the clock-only stale warning."""
    alert_of = {r.gate: r.alert for r in rules(t)}
    critical = {alert_of[r.name] for r in results if r.status == "fail"}
    warning = {alert_of[r.name] for r in results if r.status == "warn"} | {"SandboxFleetTelemetryStale"}
    return critical, warning - critical


def _firing_by_source(port: int) -> dict[str, tuple[set[str], set[str]]]:
    """scrape way -> (critical names, warning names not also critical) of the firing alerts."""
    out: dict[str, tuple[set[str], set[str]]] = {}
    for a in _query(port, 'ALERTS{alertstate="firing"}'):
        lab = a["metric"]
        # the push's own job wins with honor_labels: true; renamed exported_job with false
        way = {"node": "textfile", "pgw-plain": "push, honor_labels false"}.get(lab.get("job", ""), "push, honor_labels true")
        crit, warn = out.setdefault(way, (set(), set()))
        (crit if lab["severity"] == "critical" else warn).add(lab["alertname"])
    return {k: (c, w - c) for k, (c, w) in out.items()}


@pytest.fixture
def servers(tool, tmp_path):
    """Start node-exporter, the Pushgateway and Prometheus; yield their ports and folders; stop by PID."""
    paths = {name: tool(name) for name in ("prometheus", "prometheus-pushgateway", "prometheus-node-exporter")}
    textdir = tmp_path / "textfile"
    textdir.mkdir()
    ports = {name: _free_port() for name in paths}
    procs: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> subprocess.Popen:
        log = open(tmp_path / f"{name}.log", "wb")
        proc = subprocess.Popen([paths[name], *args], stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
                                stdin=subprocess.DEVNULL)
        procs.append(proc)
        return proc

    def start_prometheus(rules_file: Path) -> subprocess.Popen:
        pgw = f"127.0.0.1:{ports['prometheus-pushgateway']}"
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(rules_file)],
            "scrape_configs": [
                {"job_name": "node", "static_configs": [{"targets": [f"127.0.0.1:{ports['prometheus-node-exporter']}"]}]},
                {"job_name": "pgw-honor", "honor_labels": True, "static_configs": [{"targets": [pgw]}]},
                {"job_name": "pgw-plain", "honor_labels": False, "static_configs": [{"targets": [pgw]}]},
            ],
        }
        (tmp_path / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
        proc = start("prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
                     f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                     f"--web.listen-address=127.0.0.1:{ports['prometheus']}")
        _wait_http(f"http://127.0.0.1:{ports['prometheus']}/-/ready", proc, time.monotonic() + 20)
        return proc

    node = start("prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{ports['prometheus-node-exporter']}",
                 "--collector.disable-defaults", "--collector.textfile",
                 f"--collector.textfile.directory={textdir}")
    pgw = start("prometheus-pushgateway", f"--web.listen-address=127.0.0.1:{ports['prometheus-pushgateway']}")
    deadline = time.monotonic() + 20
    _wait_http(f"http://127.0.0.1:{ports['prometheus-node-exporter']}/metrics", node, deadline)
    _wait_http(f"http://127.0.0.1:{ports['prometheus-pushgateway']}/-/ready", pgw, deadline)
    try:
        yield {"ports": ports, "textdir": textdir, "start_prometheus": start_prometheus, "tmp": tmp_path}
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _push(port: int, text: str) -> int:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics/job/{PUSH_JOB}", data=text.encode(),
                                 method="PUT", headers={"Content-Type": "text/plain; version=0.0.4"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.status


def test_alerts_in_a_live_prometheus_are_checks_verdicts_for_every_way_in(servers):
    tmp, ports = servers["tmp"], servers["ports"]
    t = _fast_thresholds(tmp)
    m = _summary()
    plan = plan_json(m)
    jobs = m["by_job"]
    assert jobs[TINY]["rows"] == TINY_ROWS < t.exception_rate_by_job.min_rows <= jobs[BIG]["rows"]
    results = checks_of(m, plan, t)
    status = {r.name: r.status for r in results}
    # hand-counted: rl-big raises on 9 of every 20 (45% > fail 25%), so the job gate fails; the
    # fleet rate is (1160 x 9/20 + 36) / 1200 = 46.5%, also a fail
    assert jobs[BIG]["exception_rate"] == pytest.approx(0.45) and jobs[TINY]["exception_rate"] == pytest.approx(0.9)
    assert status["exception_rate_by_job"] == "fail" and status["exception_rate"] == "fail"
    # node sb-bad: 54 of 80 against the fleet's 46.5%, P(X >= 54 | 80, 0.465) x 7 nodes < 0.01: critical
    bad = next(e for e in m["by_node"]["per_node"] if e["node"] == BAD_NODE)
    assert (bad["exceptions"], bad["rows"]) == (54, 80) and status["exception_rate_by_node"] == "fail"
    critical, warning = _expected(results, t)

    prom_file, rules_file = servers["textdir"] / "fleet.prom", tmp / "rules.yml"
    outputs_of(m, plan, results, t, metrics_out=prom_file, rules_out=rules_file)
    assert _push(ports["prometheus-pushgateway"], prom_file.read_text()) == 200
    servers["start_prometheus"](rules_file)

    ways = {"textfile", "push, honor_labels true", "push, honor_labels false"}
    want = dict.fromkeys(ways, (critical, warning))
    deadline, got = time.monotonic() + 40, {}
    while time.monotonic() < deadline:
        got = _firing_by_source(ports["prometheus"])
        if got == want:
            break
        time.sleep(1)
    assert got == want
    # both jobs arrived by every way, labelled rl_job, and the small job's rule is the warning only
    series = _query(ports["prometheus"], "sandbox_fleet_job_rollouts")
    assert sorted(s["metric"]["rl_job"] for s in series) == sorted([BIG, TINY] * 3)
    fired = _query(ports["prometheus"], 'ALERTS{alertstate="firing",alertname="SandboxFleetJobExceptionRate"}')
    assert sorted((a["metric"]["rl_job"], a["metric"]["severity"]) for a in fired) == sorted(
        [(BIG, "critical"), (TINY, "warning")] * 3)
    # only the bad node fires, labelled sandbox_node (the scrape's job / instance beside it), every way in
    fired = _query(ports["prometheus"], 'ALERTS{alertstate="firing",alertname="SandboxFleetNodeExceptionRate"}')
    assert sorted((a["metric"]["sandbox_node"], a["metric"]["severity"]) for a in fired) == [(BAD_NODE, "critical")] * 3
    assert not _query(ports["prometheus"], 'ALERTS{alertname="SandboxFleetMetricsAbsent"}')


def _grid_overlaps(panels: list[dict]) -> list[tuple[int, int]]:
    """Pairs of panels whose gridPos rectangles overlap (Grafana would stack them)."""
    cells: dict[tuple[int, int], int] = {}
    clash = []
    for p in panels:
        g = p["gridPos"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                if (x, y) in cells:
                    clash.append((cells[(x, y)], p["id"]))
                cells[(x, y)] = p["id"]
    return clash


def test_grafana_dashboard_queries_evaluate_in_a_live_prometheus_on_exported_metrics(servers, run_cli):
    """``check --grafana-dashboard``: Grafana's classic JSON model (unique panel ids and refIds, the
    24-column grid without overlaps, every panel and target on the ``datasource`` variable of type
    prometheus); every target's expr names only metrics the tool exported (the names Prometheus
    itself lists after scraping them) and evaluates on Prometheus's own HTTP API to data."""
    import re

    tmp, ports = servers["tmp"], servers["ports"]
    m = _summary()
    plan = plan_json(m)
    # the two figures this corpus does not carry, so every panel has a series to show: a fleet-wide
    # configured cap (its caps are per job) and rows a reader rejected
    m["concurrency"]["configured_cap"] = 300
    m["coverage"]["rejected"] = {"implausible_time": 3}
    (tmp / "m.json").write_text(json.dumps(m))
    (tmp / "p.json").write_text(json.dumps(plan))
    prom_file, board = servers["textdir"] / "fleet.prom", tmp / "board.json"
    r = run_cli("check", tmp / "m.json", "--plan", tmp / "p.json", "--metrics-out", prom_file, "--allow-mismatch",
                "--grafana-dashboard", board)
    assert r.code in (0, 1), r.err
    d = json.loads(board.read_text())
    assert run_cli("check", tmp / "m.json", "--grafana-dashboard", tmp / "board.yml").code == 2  # .json only

    panels = d["panels"]
    assert len(panels) >= 12 and len({p["id"] for p in panels}) == len(panels)
    assert d["uid"] and d["title"] and isinstance(d["schemaVersion"], int)
    (var,) = d["templating"]["list"]
    assert (var["name"], var["type"], var["query"]) == ("datasource", "datasource", "prometheus")
    ds = {"type": "prometheus", "uid": "${datasource}"}
    for p in panels:
        g = p["gridPos"]
        assert g["w"] > 0 and g["h"] > 0 and g["x"] >= 0 and g["x"] + g["w"] <= 24, p["title"]
        assert p["datasource"] == ds and p["type"] in ("stat", "timeseries") and p["targets"], p["title"]
        assert len({t["refId"] for t in p["targets"]}) == len(p["targets"])
        assert all(t["datasource"] == ds for t in p["targets"])
    assert _grid_overlaps(panels) == []

    (tmp / "no-rules.yml").write_text("groups: []\n")
    servers["start_prometheus"](tmp / "no-rules.yml")
    written = set(re.findall(r"^# TYPE (sandbox_fleet_[a-z0-9_]+) gauge$", prom_file.read_text(), re.M))
    deadline, exported = time.monotonic() + 30, set()
    while time.monotonic() < deadline:  # until Prometheus lists every name the file holds
        names = set(_get(f"http://127.0.0.1:{ports['prometheus']}/api/v1/label/__name__/values")["data"])
        exported = {n for n in names if n.startswith("sandbox_fleet_")}
        if written <= exported:
            break
        time.sleep(0.5)
    assert len(written) > 30 and written <= exported, written - exported
    empty = []
    for p in panels:
        for t in p["targets"]:
            used = set(re.findall(r"\bsandbox_fleet_[a-z0-9_]+", t["expr"]))
            assert used and used <= exported, (p["title"], t["expr"], used - exported)
            if not _query(ports["prometheus"], t["expr"]):  # a bad expr fails inside _query (status error)
                empty.append((p["title"], t["expr"]))
    assert empty == []
    # a wrong name is caught: Prometheus answers an unknown metric with no data, never an error
    assert not _query(ports["prometheus"], "max(sandbox_fleet_no_such_metric)")
