"""An admission policy from outside the package, reached from the CLI (docs/engine.md, "How to add an
admission policy"; ``simulate.engine.policy_plugins``).

A tiny distribution is installed into a temporary site folder the way an installer leaves one: the
package's module, and its ``.dist-info`` folder with ``METADATA`` and ``entry_points.txt`` (what
``importlib.metadata`` reads; pip writes the same files). ``sandbox-fleet simulate`` then runs, in a
process whose ``PYTHONPATH`` is that folder, a scenario naming the policy, and its starts are the
hand-worked schedule of ``test_policy_registry`` (``longest-queue-first``).
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tests.simulate.engine.test_policy_registry import lqf_rank

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine import policy_registry
from sandbox_fleet.simulate.scenario.spec import validate_scenario

LQF = "longest-queue-first"
# test_policy_registry's hand-worked schedule (one slot; a: 0, 1 holding 10 s; b: 2, 3, 4 holding 1 s):
# a0 [0, 10], b0 [10, 11], b1 [11, 12], then the lists tie and a1 entered first: a1 [12, 22], b2 [22, 23]
LQF_START_S = {"a-0-0": 0.0, "a-1-0": 12.0, "b-0-0": 10.0, "b-1-0": 11.0, "b-2-0": 22.0}

#: the plug-in's module: test_policy_registry's hook (its source, not a copy) and a function registering it
MODULE = "\n".join([
    '"""A plug-in: the longest-queue-first admission policy (test_policy_registry\'s)."""',
    "from sandbox_fleet.simulate.engine import policy_registry",
    "from sandbox_fleet.simulate.engine.fast._admit_kernel import R_QN, R_QUEUED", "", "",
    inspect.getsource(lqf_rank), "",
    "def register():",
    "    policy_registry.register_policy('longest-queue-first', rank=lqf_rank)", ""])

SCENARIO = '''\
[fleet]
cap = 1
admission = "{admission}"
[[workloads]]
kind = "replay"
name = "a"
arrivals_s = [0.0, 1.0]
hold = {{ dist = "deterministic", value_s = 10.0 }}
[[workloads]]
kind = "replay"
name = "b"
arrivals_s = [2.0, 3.0, 4.0]
hold = {{ dist = "deterministic", value_s = 1.0 }}
'''


def _install(site: Path, dist: str, module: str, body: str, entries: dict[str, str] | None) -> None:
    """Install module ``module`` (``body``) as distribution ``dist`` into ``site``, with entry points
    ``entries`` (name -> value) in group ``sandbox_fleet.policies``; ``None``: the module only."""
    site.mkdir(exist_ok=True)
    (site / f"{module}.py").write_text(body)
    if entries is None:
        return
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entries.items())
    (info / "entry_points.txt").write_text(f"[sandbox_fleet.policies]\n{lines}")
    (info / "RECORD").write_text("")


def _simulate(tmp_path: Path, site: Path | None, scenario: str) -> subprocess.CompletedProcess:
    path = tmp_path / "lqf.toml"
    path.write_text(scenario)
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = str(site)
    else:
        env.pop("PYTHONPATH", None)
    code = "import sys; from sandbox_fleet.cli import console_main; sys.argv[0] = 'sandbox-fleet'; console_main()"
    return subprocess.run([sys.executable, "-c", code, "simulate", str(path), "--json",
                           "--telemetry", str(tmp_path / "lqf.parquet")],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)


def _starts_s(path: Path) -> dict[str, float]:
    t = pq.read_table(path).to_pydict()
    t0 = datetime(2026, 1, 1, tzinfo=UTC)  # the scenario's epoch ([run] epoch's default)
    return {i: (s - t0).total_seconds() for i, s in zip(t["id"], t["started_at"])}


def test_an_installed_policy_runs_from_the_cli_by_its_entry_point(tmp_path):
    site = tmp_path / "site"
    _install(site, "lqf-plugin", "lqf_plugin", MODULE + "\nregister()\n", {LQF: "lqf_plugin"})
    done = _simulate(tmp_path, site, SCENARIO.format(admission=LQF))
    assert done.returncode == 0, done.stderr
    assert _starts_s(tmp_path / "lqf.parquet") == LQF_START_S
    # without the distribution on the path, the name is unknown: one line, exit 2
    done = _simulate(tmp_path, None, SCENARIO.format(admission=LQF))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'lqf.toml'}: key 'fleet.admission': expected a registered admission policy ('fifo', "
        f"'priority', 'timeout-ceiling', 'shortest-timeout-first'), got 'longest-queue-first'"]


def test_an_entry_point_may_name_the_function_that_registers(tmp_path):
    site = tmp_path / "site"
    _install(site, "lqf-plugin", "lqf_fn", MODULE, {LQF: "lqf_fn:register"})
    done = _simulate(tmp_path, site, SCENARIO.format(admission=LQF))
    assert done.returncode == 0, done.stderr
    assert _starts_s(tmp_path / "lqf.parquet") == LQF_START_S


def test_run_plugins_imports_a_module_that_is_not_installed(tmp_path):
    site = tmp_path / "site"
    _install(site, "-", "my_policies", MODULE + "\nregister()\n", None)  # a bare module: no entry point
    scenario = SCENARIO.format(admission=LQF) + '[run]\nplugins = ["my_policies"]\n'
    done = _simulate(tmp_path, site, scenario)
    assert done.returncode == 0, done.stderr
    assert _starts_s(tmp_path / "lqf.parquet") == LQF_START_S


# --- bad plug-ins: one line naming the key and the module (in this process: nothing registers) ------
def _data(admission: str, plugins: object = None) -> dict:
    import tomllib

    data = tomllib.loads(SCENARIO.format(admission=admission))
    if plugins is not None:
        data["run"] = {"plugins": plugins}
    return data


@pytest.fixture
def site(tmp_path, monkeypatch):
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    yield path
    for name in ("broken_plugin", "silent_plugin"):
        sys.modules.pop(name, None)
    assert LQF not in policy_registry.names()


def test_a_module_that_cannot_be_imported_is_one_line(site):
    with pytest.raises(InputError) as info:
        validate_scenario(_data("fifo", ["no_such_policies"]), "s.toml")
    assert str(info.value) == ("s.toml: key 'run.plugins.0': cannot load plug-in module 'no_such_policies': "
                               "ModuleNotFoundError: No module named 'no_such_policies'")


@pytest.mark.parametrize("module, body, what", [
    ("broken_plugin", "raise RuntimeError('no GPU\\nhere')\n", "failed: RuntimeError: no GPU here"),
    ("silent_plugin", "X = 1\n", "did not register admission policy 'x-first'"),
], ids=["raises", "registers_nothing"])
def test_a_bad_entry_point_is_one_line_naming_it(site, module, body, what):
    _install(site, module, module, body, {"x-first": module})
    with pytest.raises(InputError) as info:
        validate_scenario(_data("x-first"), "s.toml")
    assert str(info.value) == f"s.toml: key 'fleet.admission': entry point 'x-first' ({module}, group sandbox_fleet.policies) {what}"


def test_plugins_of_the_wrong_type_are_the_models_error(site):
    with pytest.raises(InputError, match=r"s.toml: key 'run.plugins': Input should be a valid list"):
        validate_scenario(_data("fifo", "my_policies"), "s.toml")


def test_a_kernel_imported_for_its_constants_is_not_loaded():
    """A plug-in imports the kernel module for its column constants: no machine code is loaded yet, so
    a small run still takes the plain twin (``admit_loop.worth_it``), not a compile for the new key."""
    code = ("from sandbox_fleet.simulate.engine.fast import _admit_kernel, admit_loop; "
            "print(admit_loop.loaded())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
