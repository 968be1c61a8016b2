"""CLI conventions: --version, shell completion, --quiet (before or after the command), check -o."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sandbox_fleet import __version__

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "examples" / "rst-published.json"


def test_version(run_cli):
    res = run_cli("--version")
    assert res.code == 0 and res.out == f"sandbox-fleet {__version__}\n" and res.err == ""


def test_shell_completion_script_is_offered():
    """Typer's completion: the script for bash names the program's completion variable."""
    env_src = str(ROOT / "src")
    res = subprocess.run([sys.executable, "-c", "import sys; from sandbox_fleet.cli import main; "
                          "sys.argv = ['sandbox-fleet', '--show-completion', 'bash']; main()"],
                         capture_output=True, text=True, timeout=60, env={"PYTHONPATH": env_src, "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    assert "_SANDBOX_FLEET_COMPLETE=complete_bash" in res.stdout and "complete -o default -F" in res.stdout


def test_quiet_prints_nothing_but_keeps_outputs_and_exit_status(run_cli, tmp_path):
    loud = run_cli("check", PUBLISHED)
    assert loud.code == 1 and loud.out
    for args in (("--quiet", "check", PUBLISHED, "-o", tmp_path / "a.json"),
                 ("check", PUBLISHED, "-o", tmp_path / "b.json", "--quiet")):
        res = run_cli(*args)
        assert (res.code, res.out, res.err) == (1, "", ""), res
    a, b = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    assert a == b and a["kind"] == "checks"
    res = run_cli("check", PUBLISHED, "--json")
    assert json.loads(res.out) == a  # -o writes what --json prints
    res = run_cli("plan", PUBLISHED, "--quiet", "-o", tmp_path / "p.json")
    assert (res.code, res.out, res.err) == (0, "", "") and (tmp_path / "p.json").exists()


def test_quiet_holds_for_one_run_only(run_cli):
    # a process that runs the app again after main() (a notebook, a test run) must not stay silent
    from typer.testing import CliRunner

    from sandbox_fleet.cli import app

    assert run_cli("check", PUBLISHED, "--quiet").out == ""
    assert CliRunner().invoke(app, ["check", str(PUBLISHED)]).output.startswith(("PASS", "FAIL", "WARN"))


def test_quiet_still_prints_errors(run_cli, tmp_path):
    res = run_cli("--quiet", "check", tmp_path / "missing.json")
    assert res.code == 2 and res.out == "" and "missing.json" in res.err


def test_check_o_refuses_an_input_as_output(run_cli, tmp_path):
    summary = tmp_path / "m.json"
    summary.write_text(PUBLISHED.read_text())
    res = run_cli("check", summary, "-o", summary)
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1
    assert json.loads(summary.read_text()) == json.loads(PUBLISHED.read_text())


def test_a_closed_stdout_is_one_line_and_exit_2_unless_nothing_is_printed(tmp_path):
    # `>&-` closes fd 1 before Python starts: sys.stdout is None (a Rich traceback before)
    import shlex

    example = ROOT / "examples" / "rst-published.json"
    cli = f"{shlex.quote(sys.executable)} -m sandbox_fleet.cli"
    loud = subprocess.run(["bash", "-c", f"{cli} plan {shlex.quote(str(example))} >&-"], capture_output=True, text=True, timeout=120)
    assert loud.returncode == 2
    assert loud.stderr == ("error: standard output is closed: the command prints its result there (redirect it to a "
                           "file or /dev/null, or pass --quiet with -o)\n")
    out = tmp_path / "plan.json"
    quiet = subprocess.run(["bash", "-c", f"{cli} plan {shlex.quote(str(example))} -q -o {shlex.quote(str(out))} >&-"],
                           capture_output=True, text=True, timeout=120)
    assert quiet.returncode == 0 and quiet.stderr == "" and out.read_text().startswith("{")
