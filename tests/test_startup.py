"""Start-up stays light: importing the CLI and running light commands loads no heavy library.

A behavioural guard (which modules a fresh interpreter ends up holding), not a timing; the timings
are in benchmarks/bench_startup.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "rst-published.json"
HEAVY = ("numpy", "plotly", "duckdb", "pyarrow", "numba")

PROBE = """
import json, sys
sys.argv = ["sandbox-fleet", *json.loads(sys.argv[1])]
from sandbox_fleet import cli
if len(sys.argv) > 1:
    try:
        cli.main()
    except SystemExit:
        pass
sys.stderr.write("\\nLOADED " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def _modules(*argv: str, env: dict[str, str] | None = None) -> set[str]:
    """Every module a fresh interpreter holds after ``sandbox-fleet ARGV`` (stdout a pipe; ``env``: its whole environment)."""
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(argv))],
                          capture_output=True, text=True, timeout=120,
                          env=env)
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("LOADED ")]
    assert line, proc.stderr
    return set(json.loads(line[-1].removeprefix("LOADED ")))


def _loaded(*argv: str) -> list[str]:
    modules = _modules(*argv)
    return sorted(m for m in HEAVY if m in modules)


def _under(modules: set[str], *packages: str) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def test_importing_the_cli_loads_no_heavy_library():
    assert _loaded() == []


def test_check_on_a_summary_loads_no_heavy_library():
    # check writes no HTML (no Plotly) and computes nothing numeric from a summary
    assert _loaded("check", str(EXAMPLE)) == []


def test_plan_on_a_summary_loads_no_heavy_library():
    # a node type without a spot rate: nothing is sampled, so not even NumPy is needed
    assert _loaded("plan", str(EXAMPLE), "--node-type", "seed-96c") == []


def test_plan_with_a_spot_rate_loads_no_heavy_library_nor_rich():
    # every node type priced, rent vs buy (the benchmarked command): the default type has a spot
    # rate, and its re-runs are an expectation over the fitted holds in pure Python (plan/holdfit.py)
    modules = _modules("plan", str(EXAMPLE))
    assert "sandbox_fleet.plan.holdfit" in modules  # it priced the spot re-runs
    assert _under(modules, *HEAVY, "scipy", "rich") == []


def test_a_smooth_shaped_target_samples_holds_with_numpy_but_loads_neither_plotly_nor_duckdb():
    loaded = _loaded("plan", str(EXAMPLE), "--passing-per-hour", "400")  # the smooth shape simulates sampled holds
    assert "numpy" in loaded and "plotly" not in loaded and "duckdb" not in loaded


def test_a_simulation_without_replay_loads_neither_duckdb_nor_arrow():
    scenario = Path(__file__).resolve().parents[1] / "examples" / "scenarios" / "mmc.toml"
    loaded = _loaded("simulate", str(scenario))
    assert "duckdb" not in loaded and "pyarrow" not in loaded and "plotly" not in loaded


def test_a_small_pool_served_simulation_does_not_load_numba(tmp_path):
    # the admission kernel loads numba only for runs that repay it (``admit_loop.worth_it``: rollouts
    # plus model calls); closed_loop.toml's 6,000 rollouts (~60,000 calls) do, 200 (~2,000 calls) do not
    example = Path(__file__).resolve().parents[1] / "examples" / "scenarios" / "closed_loop.toml"
    text = example.read_text()
    assert "count = 6000" in text
    scenario = tmp_path / "small_closed_loop.toml"
    scenario.write_text(text.replace("count = 6000", "count = 200"))
    assert "numba" not in _loaded("simulate", str(scenario))
    # with the kernel in numba's cache (compiled now if it is not yet: once after an install) the
    # example's run pays a load and takes it
    subprocess.run([sys.executable, "-c", "from sandbox_fleet.simulate.engine.fast import admit_loop; admit_loop.load()"],
                   check=True, timeout=1800)
    assert "numba" in _loaded("simulate", str(example))


def test_a_first_run_into_an_empty_numba_cache_stays_plain_below_the_compile_price(tmp_path):
    # rent or buy prices a compile (~80 s CPU, once after an install) at 160 loads: closed_loop.toml's
    # 6,000 rollouts and ~60,000 model calls run plain into an empty cache and never import numba
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "empty")}
    env.pop("SANDBOX_FLEET_PURE_PYTHON", None)
    example = Path(__file__).resolve().parents[1] / "examples" / "scenarios" / "closed_loop.toml"
    modules = _modules("simulate", str(example), env=env)
    assert "numba" not in modules
    assert "sandbox_fleet.simulate.engine.fast._admit_kernel[plain]" in modules  # the kernel ran, as plain Python
    assert not (tmp_path / "empty").exists() or not any((tmp_path / "empty").rglob("*.nbi"))


def test_plan_prints_its_purchase_order_without_rich_or_other_commands_modules():
    # plain lines go straight to stdout (textout); simulate and sweep are other commands'; of report,
    # only check's gates load (the decision block names the failing ones), never its HTML or charts
    modules = _modules("plan", str(EXAMPLE), "--node-type", "seed-96c")
    assert _under(modules, "rich") == []
    # of telemetry, only the reader flags' dataclass (``ReadOptions``, no PyArrow): the flags are checked up front
    modules -= {"sandbox_fleet.telemetry", "sandbox_fleet.telemetry.options"}
    assert _under(modules, "sandbox_fleet.simulate", "sandbox_fleet.sweep", "sandbox_fleet.optimize",
                  "sandbox_fleet.telemetry", "sandbox_fleet.report.html", "sandbox_fleet.report.charts",
                  "sandbox_fleet.report.tables", "sandbox_fleet.report.prometheus") == []
    assert "sandbox_fleet.report.decision" in modules


def test_check_loads_only_the_measure_model_of_the_output_models():
    # the plan and simulate models are built only when --plan / --simulate give one
    modules = _modules("check", str(EXAMPLE))
    assert "sandbox_fleet.measure.model" in modules
    assert _under(modules, "sandbox_fleet.plan", "sandbox_fleet.simulate", "sandbox_fleet.sweep",
                  "sandbox_fleet.optimize", "sandbox_fleet.report.html", "sandbox_fleet.report.checks.model") == []


def test_help_builds_every_command_but_a_command_builds_only_itself():
    # a named command runs in an app holding only that command; --help and typos see them all
    from sandbox_fleet.cli import _app_for, app

    assert [c.callback.__name__ for c in _app_for(["plan", "x"]).registered_commands] == ["plan"]
    assert _app_for(["plan", "x"]).registered_callback is app.registered_callback
    assert _app_for(["--help"]) is app and _app_for([]) is app and _app_for(["plna"]) is app


def test_output_models_build_their_validators_on_first_use():
    # defer_build: importing every model builds no validator; validating builds the one tree needed
    probe = (
        "import json, sys\n"
        "from sandbox_fleet.schemas import MODELS\n"
        "from sandbox_fleet.contract import load\n"
        "before = sorted(k for k, m in MODELS.items() if m.__pydantic_complete__)\n"
        f"load(MODELS['measure'], {str(EXAMPLE)!r})\n"
        "after = sorted(k for k, m in MODELS.items() if m.__pydantic_complete__)\n"
        "print(json.dumps([before, after]))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True).stdout
    assert json.loads(out) == [[], ["measure"]]


@pytest.mark.parametrize("extra", [[], ["--metrics-out", "{tmp}/fleet.prom", "--prometheus-rules", "{tmp}/rules.yml"]])
def test_check_into_a_pipe_prints_without_rich_or_numpy(extra, tmp_path):
    # stdout not a terminal and narrower than the table: the uncoloured lines Rich would print,
    # written without it (tests/test_terminal_width.py compares the bytes); the operate.md
    # example's metrics and rules files need neither
    argv = ["check", str(EXAMPLE), *(a.replace("{tmp}", str(tmp_path)) for a in extra)]
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    modules = _modules(*argv, env={**env, "COLUMNS": "100"})
    assert "sandbox_fleet.report.checks" in modules  # it ran its gates
    assert _under(modules, "rich", "numpy") == []
    if extra:
        assert (tmp_path / "fleet.prom").stat().st_size > 0 and (tmp_path / "rules.yml").stat().st_size > 0


def test_check_json_prints_without_rich():
    # the table is the only thing check draws with Rich; --json prints one JSON object
    assert _under(_modules("check", str(EXAMPLE), "--json"), "rich") == []


def test_measure_json_and_simulate_json_print_without_rich():
    # the readable tables are imported only when printed; --json writes one object
    root = Path(__file__).resolve().parents[1]
    measured = _modules("measure", str(root / "tests" / "fixtures" / "harbor"), "--json")
    assert "sandbox_fleet.measure.run" in measured and _under(measured, "rich") == []
    simulated = _modules("simulate", str(root / "examples" / "scenarios" / "mmc.toml"), "--json")
    assert "sandbox_fleet.simulate.engine.run" in simulated and _under(simulated, "rich") == []


def test_the_cli_sets_its_environment_defaults_only_where_absent_and_only_while_it_runs(monkeypatch):
    import gc

    from sandbox_fleet import cli

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "")  # the user's choice: plugins on
    before = gc.get_threshold()
    with cli._cli_environment():
        assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
        assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == ""
        assert gc.get_threshold() == (700, 1000, 10)
    assert "OPENBLAS_NUM_THREADS" not in os.environ and os.environ["PYDANTIC_DISABLE_PLUGINS"] == ""
    assert gc.get_threshold() == before


def test_starting_a_command_rescans_no_old_objects():
    # Start-up builds ~50k long-lived objects; once main() runs, only young collections run during
    # a measure of a small input (the default thresholds also ran 11 middle and one full collection).
    probe = (
        "import gc, json, sys\n"
        f"sys.argv = ['sandbox-fleet', 'measure', {str(Path(__file__).resolve().parent / 'fixtures' / 'harbor')!r}, '--json']\n"
        "from sandbox_fleet import cli\n"
        "counts = [0, 0, 0]\n"  # from main() on: the thresholds are its to set
        "gc.callbacks.append(lambda phase, info: phase == 'stop' and counts.__setitem__(info['generation'], counts[info['generation']] + 1))\n"
        "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write('\\nGC ' + json.dumps(counts) + '\\n')\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("GC ")]
    assert line, proc.stderr
    young, middle, full = json.loads(line[-1][3:])
    assert young > 0 and middle == 0 and full == 0


THREADS_PROBE = """
import json, os, sys
sys.argv = ["sandbox-fleet", *json.loads(sys.argv[1])]
from sandbox_fleet import cli
try:
    cli.main()
except SystemExit:
    pass
import numpy  # already loaded by the command
sys.stderr.write("\\nTHREADS " + str(len(os.listdir("/proc/self/task"))) + "\\n")
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads through Linux /proc")
def test_a_numpy_command_starts_no_blas_threads():
    # OpenBLAS starts a spinning thread per extra core at NumPy's import unless told one thread;
    # plan with a smooth-shaped target samples holds with NumPy and starts no thread of its own.
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    proc = subprocess.run([sys.executable, "-c", THREADS_PROBE,
                           json.dumps(["plan", str(EXAMPLE), "--passing-per-hour", "400"])],
                          capture_output=True, text=True, timeout=120, env=env)
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("THREADS ")]
    assert line, proc.stderr
    assert int(line[-1].split()[1]) == 1


def test_measuring_canonical_parquet_loads_neither_duckdb_nor_toml(tmp_path):
    # Parquet is read with PyArrow and ids are hashed in NumPy (no DuckDB); without a configured
    # cap the shipped checks.toml threshold is never needed, so nothing parses TOML.
    import pyarrow as pa
    import pyarrow.parquet as pq

    ts = pa.timestamp("us", tz="UTC")
    path = tmp_path / "rollouts.parquet"
    t0 = 1_780_000_000_000_000  # 2026, inside the plausible window
    pq.write_table(pa.table({"id": ["a", "b", "c"],
                             "started_at": pa.array([t0, t0 + 10_000_000, t0 + 20_000_000], pa.int64()).cast(ts),
                             "finished_at": pa.array([t0 + 5_000_000, t0 + 30_000_000, t0 + 25_000_000], pa.int64()).cast(ts)}), path)
    modules = _modules("measure", str(path), "--json")
    assert "sandbox_fleet.measure.model" in modules  # measured to the end
    assert "duckdb" not in modules and "tomllib" not in modules


TEARDOWN_PROBE = """
import atexit, os, runpy, sys
class Witness:  # freed only by the interpreter's teardown
    def __del__(self):
        os.write(2, b"\\nTEARDOWN\\n")
sys.modules["__main__"].witness = Witness()
if sys.argv[1] == "with-handler":
    atexit.register(lambda: os.write(2, b"\\nHANDLER\\n"))
sys.argv = ["sandbox-fleet", *sys.argv[2:]]
runpy.run_module("sandbox_fleet.cli", run_name="__main__")
"""


@pytest.mark.parametrize("argv, code", [(["check", str(EXAMPLE)], 1), (["plan", str(EXAMPLE), "--node-type", "seed-96c"], 0),
                                        (["plan", str(EXAMPLE) + ".missing"], 2)])
def test_the_process_ends_without_teardown_unless_an_exit_handler_waits(argv, code):
    # python -m sandbox_fleet.cli (and the console script) exits at once after flushing: same bytes,
    # same status as Python's own exit, which still runs when anything is registered to run at exit
    fast = subprocess.run([sys.executable, "-c", TEARDOWN_PROBE, "plain", *argv], capture_output=True, timeout=120)
    slow = subprocess.run([sys.executable, "-c", TEARDOWN_PROBE, "with-handler", *argv], capture_output=True, timeout=120)
    assert fast.returncode == slow.returncode == code
    assert fast.stdout == slow.stdout and (fast.stdout if code != 2 else fast.stderr)
    assert b"TEARDOWN" not in fast.stderr and b"HANDLER" not in fast.stderr
    assert b"HANDLER" in slow.stderr and b"TEARDOWN" in slow.stderr
    assert fast.stderr == slow.stderr.replace(b"\nHANDLER\n", b"").replace(b"\nTEARDOWN\n", b"")


def test_the_entry_points_are_the_exiting_one():
    import tomllib

    from sandbox_fleet import cli

    scripts = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["sandbox-fleet"] == "sandbox_fleet.cli:console_main" and callable(cli.console_main)


def test_plan_compiles_no_annotation_nor_tokenizer_pattern():
    # Typer reads each command's hints and Pydantic each model's: evaluated annotations, not strings
    # compiled on every read; a builtin default factory would make Pydantic tokenize its signature
    probe = (
        "import json, sys, tokenize, typing\n"
        "made = []\n"
        "init = typing.ForwardRef.__init__\n"
        "def spy(self, arg, *a, **k):\n"
        "    made.append(sys._getframe(2).f_code.co_name)\n"  # who converted a string annotation
        "    init(self, arg, *a, **k)\n"
        "typing.ForwardRef.__init__ = spy\n"
        f"sys.argv = ['sandbox-fleet', 'plan', {str(EXAMPLE)!r}]\n"
        "from sandbox_fleet import cli\n"
        "before = len(made)\n"
        "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write('\\nRESULT ' + json.dumps([made[before:], tokenize._compile.cache_info().misses]) + '\\n')\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("RESULT ")]
    assert line, proc.stderr
    readers, tokenizer_compiles = json.loads(line[-1][7:])
    assert tokenizer_compiles == 0
    # typing.get_type_hints (Typer) and Pydantic's eval_type: ~170 strings before (cli.py, catalogs)
    assert [r for r in readers if r in ("get_type_hints", "eval_type")] == []


def test_a_backtest_line_gets_its_own_empty_list():
    from sandbox_fleet.plan.model import BacktestLine

    a = BacktestLine(path="bt.json", drifted=False, line="x")
    b = BacktestLine(path="bt.json", drifted=False, line="x")
    assert a.drifted_quantities == [] and a.drifted_quantities is not b.drifted_quantities
