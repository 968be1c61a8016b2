"""The import graph the README describes, enforced: a test fails on an import that breaks it.

telemetry <- measure <- plan and report; plan -> simulate only for target searches
(plan/target.py); simulate reads and writes the canonical telemetry record and uses measure's
sweep line, rate and turn-curve definitions (``measure.concurrency``, ``measure.stats``, ``measure.tokens``);
inside simulate the engine (``simulate/engine/``) imports only itself and the output model, never the
scenario tooling (``simulate/scenario/``) nor the package's public face; synth drives simulate from
outside, through its public API, and only cli and demo import synth; the substrate
catalog is a leaf (``substrates``) both plan and simulate read; sweep drives
simulate from outside, and so does optimize (through sweep's task and backends, pricing with
plan's catalog, reserve, rework and packing helpers), and so does backtest (with measure's sweep line and step
detection); report reads the plan, simulate, optimize and backtest *models* only (and the plan's
decision block, ``plan.decision``, a pure function of the plan model, so the report's first screen and
plan's text say the same words), and plan the backtest model (``plan --backtest``); cli, demo and the
schema registry may import everything. errors, jsonio, contract, atomic (every output write),
outpaths (output-path checks), limits (seeds, memory budget), safeparse (bounded JSON and TOML
parsing), textout (plain lines folded to a width; one-line, terminal and HTML escaping), numfmt (a
figure in its unit, the same in the plan's text and the report), termtable (the terminal's one table
style), gpus (the GPU
catalog and memory model), exact (float operations with the same bits on every CPU), speedups (which
optional C speed-ups are used), toml_entries (a
[[TABLE]] catalog reader) and substrates (the execution-substrate catalog) are leaves
everyone may use.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "sandbox_fleet"
LEAVES = {"errors", "jsonio", "contract", "atomic", "outpaths", "limits", "lazy", "gpus", "exact", "safeparse",
          "textout", "numfmt", "termtable", "toml_entries", "substrates", "speedups", "__version__"}
ALLOWED = {
    "errors": set(),
    "jsonio": set(),
    "exact": set(),
    "textout": set(),
    "numfmt": {"textout"},
    "termtable": {"textout"},
    "speedups": set(),
    "atomic": {"errors"},
    "outpaths": {"errors"},
    "limits": {"errors"},
    "gpus": {"errors"},
    "contract": {"errors", "safeparse"},
    "safeparse": {"errors"},
    "toml_entries": {"errors", "safeparse"},
    "substrates": {"toml_entries"},
    "telemetry": set(),
    "measure": {"telemetry"},
    # (measure.model: a scenario's dynamic_sampling may read a measure summary's per-task pass probabilities)
    "simulate": {"telemetry", "measure.concurrency", "measure.stats", "measure.tokens", "measure.model"},
    "plan": {"measure", "simulate", "backtest.model"},
    "report": {"measure", "plan.model", "plan.decision", "simulate.model", "optimize.model", "backtest.model"},
    "sweep": {"simulate"},
    # synth (the bundled synthetic corpus) drives simulate from outside, through its public API, as
    # sweep does; only the CLI and the demo import synth
    "synth": {"simulate"},
    # optimize drives simulate from outside (through sweep's task and backends) and prices with plan's
    # catalogs, cost helpers and turn fit, packing sandboxes as plan does; it reads measure's model (through
    # measure's one loader), never the plan builder
    "optimize": {"simulate", "sweep", "measure.model", "measure.load", "plan.catalog", "plan.reserve", "plan.rework",
                 "plan.cost_parts", "plan.tier", "plan.gpu_memory", "plan.turns", "plan.packing", "plan.slots"},
    # backtest drives simulate from outside (replays with the --from calibration) and reads
    # measure's sweep line, step detection and quantiles, and telemetry's reader
    "backtest": {"simulate", "measure.concurrency", "measure.stats", "measure.steps", "telemetry"},
    "schemas": {"measure.model", "plan.model", "plan.catalog", "simulate.model", "sweep.model", "report.checks.model",
                "optimize.model", "backtest.model"},
}
ANYTHING = {"cli", "cli_catalog", "demo", "__main__"}
#: the modules of plan that may call the simulator: the target searches (RL schedule; --shape smooth)
#: and the mixed purchase priced by the engine's node replay of the measured history (plan/mixed_replay.py),
#: and ``simulate --replay`` on the plan's order (plan/fleet_replay.py)
PLAN_TO_SIMULATE = {"plan/target.py", "plan/shape.py", "plan/mixed_replay.py", "plan/fleet_replay.py"}
#: inside simulate, by role (first path part under simulate/ -> what of simulate it may import): the
#: engine runs built scenarios and imports neither the scenario tooling nor the package's public face
#: (``from sandbox_fleet.simulate import ...``, which would hide a cycle); its one import outside
#: itself is the output model. The tooling builds engine objects; the model imports no simulate module.
SIMULATE_ROLES = {
    "engine": {"simulate.engine", "simulate.model"},
    "scenario": {"simulate.scenario", "simulate.engine", "simulate.model"},
    "model.py": set(),
    "render.py": {"simulate.model"},
    "__init__.py": set(),
}


def _imports(path: Path) -> set[str]:
    """``sandbox_fleet.X...`` names imported anywhere in the file (lazy imports included)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "sandbox_fleet":
            names = [node.module + "." + a.name for a in node.names] if node.module == "sandbox_fleet" else [node.module]
            out.update(n.split(".", 1)[1] for n in names if "." in n)
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".", 1)[1] for a in node.names if a.name.startswith("sandbox_fleet."))
    return out


def _allowed(target: str, rules: set[str]) -> bool:
    return any(target == r or target.startswith(r + ".") for r in rules)


def violations() -> list[str]:
    bad = []
    for f in sorted(SRC.rglob("*.py")):
        rel = f.relative_to(SRC).as_posix()
        own = rel.split("/")[0].removesuffix(".py")
        if own in ANYTHING:
            continue
        for target in sorted(_imports(f)):
            top = target.split(".")[0]
            if own == "simulate" and top == "simulate":
                bad.extend(_simulate_role(rel, target))
                continue
            if top == own or top in LEAVES:
                continue
            if top in ANYTHING or not _allowed(target, ALLOWED.get(own, set())):
                bad.append(f"{rel} imports sandbox_fleet.{target}")
            elif own == "plan" and top == "simulate" and rel not in PLAN_TO_SIMULATE:
                bad.append(f"{rel} imports sandbox_fleet.{target} (only plan/target.py may)")
    return bad


def _simulate_role(rel: str, target: str) -> list[str]:
    role = rel.split("/")[1]
    if role not in SIMULATE_ROLES:
        return [f"{rel} is in no role of SIMULATE_ROLES (engine/, scenario/, model.py, render.py)"]
    if _allowed(target, SIMULATE_ROLES[role]):
        return []
    return [f"{rel} imports sandbox_fleet.{target} (simulate/{role} may import only "
            f"{', '.join(sorted(SIMULATE_ROLES[role])) or 'leaves'} of simulate)"]


def imports_of_tests() -> list[str]:
    """Production modules importing ``tests`` (lazy imports included): none may. The pure event loop,
    the admission kernel's oracle, lives in ``tests/simulate/engine/oracle/`` and runs in no production
    path (issue 36); a second copy of a rule may live in tests, never be run by production code."""
    bad = []
    for f in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            bad.extend(f"{f.relative_to(SRC).as_posix()} imports {n}" for n in names if n.split(".")[0] == "tests")
    return bad


def test_the_import_graph_is_the_documented_one():
    assert violations() == []
    assert imports_of_tests() == []


def test_the_check_catches_production_importing_tests(tmp_path, monkeypatch):
    """The rule is live: an engine module importing the oracle loop from tests is reported, lazily too."""
    fake = tmp_path / "sandbox_fleet"
    (fake / "simulate" / "engine").mkdir(parents=True)
    (fake / "simulate" / "engine" / "run.py").write_text(
        "import tests.simulate.engine.oracle\n"
        "def f():\n    from tests.simulate.engine.oracle.loop import run_events\n"
        "from sandbox_fleet.simulate.engine import prepare\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", fake)
    assert imports_of_tests() == ["simulate/engine/run.py imports tests.simulate.engine.oracle",
                                  "simulate/engine/run.py imports tests.simulate.engine.oracle.loop"]


def test_the_check_catches_a_backward_import(tmp_path, monkeypatch):
    """The rule is live: a measure module importing plan is reported."""
    fake = tmp_path / "sandbox_fleet"
    (fake / "measure").mkdir(parents=True)
    (fake / "measure" / "x.py").write_text("from sandbox_fleet.plan.build import make_plan\n")
    (fake / "plan").mkdir()
    (fake / "plan" / "build.py").write_text("from sandbox_fleet.simulate import Fleet\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", fake)
    assert violations() == ["measure/x.py imports sandbox_fleet.plan.build",
                            "plan/build.py imports sandbox_fleet.simulate (only plan/target.py may)"]


def test_the_check_catches_the_engine_importing_scenario_tooling(tmp_path, monkeypatch):
    """The engine may not import the scenario tooling nor the public face; the tooling may import the
    engine; the model imports nothing of simulate; only cli and demo import synth."""
    fake = tmp_path / "sandbox_fleet"
    for folder in ("simulate/engine", "simulate/scenario", "synth", "sweep"):
        (fake / folder).mkdir(parents=True)
    (fake / "simulate" / "engine" / "loop.py").write_text(
        "from sandbox_fleet.simulate.scenario.spec import FleetSpec\n"
        "from sandbox_fleet.simulate import Fleet\n"
        "from sandbox_fleet.simulate.engine.entities import Fleet\n"
        "from sandbox_fleet.simulate.model import SimulateSummary\n")
    (fake / "simulate" / "scenario" / "builder.py").write_text("from sandbox_fleet.simulate.engine.entities import Fleet\n")
    (fake / "simulate" / "model.py").write_text("from sandbox_fleet.simulate.engine.steady import t95\n")
    (fake / "simulate" / "extra.py").write_text("import sandbox_fleet.simulate.model\n")
    (fake / "synth" / "build.py").write_text("from sandbox_fleet.simulate import run_workloads\nimport sandbox_fleet.plan\n")
    (fake / "sweep" / "run.py").write_text("from sandbox_fleet.synth import synth\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", fake)
    assert violations() == [
        "simulate/engine/loop.py imports sandbox_fleet.simulate (simulate/engine may import only "
        "simulate.engine, simulate.model of simulate)",
        "simulate/engine/loop.py imports sandbox_fleet.simulate.scenario.spec (simulate/engine may import only "
        "simulate.engine, simulate.model of simulate)",
        "simulate/extra.py is in no role of SIMULATE_ROLES (engine/, scenario/, model.py, render.py)",
        "simulate/model.py imports sandbox_fleet.simulate.engine.steady (simulate/model.py may import only "
        "leaves of simulate)",
        "sweep/run.py imports sandbox_fleet.synth",
        "synth/build.py imports sandbox_fleet.plan",
    ]


def test_the_readme_and_package_docstring_state_it():
    import sandbox_fleet

    readme = (SRC.parents[1] / "README.md").read_text(encoding="utf-8")
    for text in (readme, sandbox_fleet.__doc__):
        assert "telemetry <- measure <- plan and report" in text
        assert "plan -> simulate" in text and "sweep -> simulate" in text and "synth -> simulate" in text
