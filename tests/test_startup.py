"""Start-up stays light: importing the CLI and running light commands loads no heavy library.

A behavioural guard (which modules a fresh interpreter ends up holding), not a timing; the timings
are in benchmarks/bench_startup.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
sys.stderr.write("\\nLOADED " + json.dumps(sorted(m for m in %r if m in sys.modules)) + "\\n")
""" % (HEAVY,)


def _loaded(*argv: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(argv))],
                          capture_output=True, text=True, timeout=120)
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("LOADED ")]
    assert line, proc.stderr
    return json.loads(line[-1].removeprefix("LOADED "))


def test_importing_the_cli_loads_no_heavy_library():
    assert _loaded() == []


def test_check_on_a_summary_loads_no_heavy_library():
    # check writes no HTML (no Plotly) and computes nothing numeric from a summary
    assert _loaded("check", str(EXAMPLE)) == []


def test_plan_on_a_summary_loads_no_heavy_library():
    # a node type without a spot rate: nothing is sampled, so not even NumPy is needed
    assert _loaded("plan", str(EXAMPLE), "--node-type", "seed-96c") == []


def test_plan_with_a_spot_rate_loads_numpy_but_neither_plotly_nor_duckdb():
    loaded = _loaded("plan", str(EXAMPLE))  # the default type has a spot rate: holds are sampled
    assert "numpy" in loaded and "plotly" not in loaded and "duckdb" not in loaded


def test_a_simulation_without_replay_loads_neither_duckdb_nor_arrow():
    scenario = Path(__file__).resolve().parents[1] / "examples" / "scenarios" / "mmc.toml"
    loaded = _loaded("simulate", str(scenario))
    assert "duckdb" not in loaded and "pyarrow" not in loaded and "plotly" not in loaded


def test_a_small_pool_served_simulation_does_not_load_numba():
    # the compiled closed loop (the fast extra) loads numba only for runs that repay it
    scenario = Path(__file__).resolve().parents[1] / "examples" / "scenarios" / "closed_loop.toml"
    assert "numba" not in _loaded("simulate", str(scenario))
