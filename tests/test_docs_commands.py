"""Docs true: every fenced shell command in README.md and docs/*.md runs as written.

Each ``bash``/``sh``/``shell``/``console`` block of the docs is one test, run by bash in one shared
working folder, block after block in the docs' order (a block may read what an earlier one wrote,
as a reader following the page would). The folder holds what the docs assume a reader has:
``out/`` from the demo (``./dev demo``'s outputs, made once per session) and the telemetry the
examples name (``jobs/``: the Harbor fixture, ``runs/``: Terminal-Bench, ``logs/``: Inspect AI,
``release/`` and ``tasks-root/``: the demo's corpus, ``export/*.parquet``: its rows under other
column names, ``rollouts.csv`` / ``trials.csv``: a few of its columns under canonical / other names,
``prices.csv``: a price sheet, ``fleet.json`` / ``plan.json`` / ``sim.json``: the demo's summaries, ``SCENARIO.toml``:
a bundled scenario); the repository's ``examples/`` and ``tests/fixtures/`` are linked in. Every
command must exit 0 (``check`` 0 or 1, as documented: 1 is a failed gate). Where a ``console``
block shows output, each line shown must appear in that command's output, in order (``...``
marks lines left out), so the figures the docs quote are the figures the tool prints.

Commands slower than a few seconds are marked ``slow_docs`` and run only with
``SANDBOX_FLEET_SLOW_DOCS=1`` (the suite runs twice in CI: the harness stays under a minute);
``SKIP`` lists the commands that cannot run inside a test, each with its reason.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(bash|sh|shell|console)[ \t]*\n(.*?)^```", re.S | re.M)
#: commands the harness does not run, by their first words, and why
SKIP = {
    "./dev test": "the test suite itself (this harness is part of it)",
    "./dev demo": "the harness's own preparation: the demo's outputs are made once per session by the same "
                  "`python -m sandbox_fleet.demo` that `./dev demo` runs after setting up .venv",
}
#: blocks (doc, first command's start) that take more than a few seconds: run with SANDBOX_FLEET_SLOW_DOCS=1
SLOW = {
    ("optimize.md", "sandbox-fleet optimize examples/rst-published.json --passing-per-hour 400 --scale 0.1"),
    ("validation.md", "export SANDBOX_FLEET_CACHE_DIR=val/cache"),  # the scale-1 corpus, measured three times
}
MARK = "@@sandbox-fleet-docs rc="
#: commands of other projects the docs run (installed by .ci/run)
EXTERNAL = {"promtool"}


@dataclass
class Command:
    text: str
    shown: list[str] = field(default_factory=list)  # output lines a console block shows under it


@dataclass
class Block:
    doc: str
    line: int
    lang: str
    commands: list[Command]

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def _commands(lang: str, body: str) -> list[Command]:
    lines = body.splitlines()
    prompted = lang == "console" or any(x.startswith("$ ") for x in lines)
    out: list[Command] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if prompted and not line.startswith("$ "):
            if out:
                out[-1].shown.append(line)
            continue
        text = line[2:] if line.startswith("$ ") else line
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        while text.rstrip().endswith("\\") and i < len(lines):
            text = text.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
        out.append(Command(text))
    return out


def blocks() -> list[Block]:
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            cmds = _commands(m.group(1), m.group(2))
            if cmds:
                found.append(Block(doc.name, text.count("\n", 0, m.start()) + 1, m.group(1), cmds))
    return found


BLOCKS = blocks()


def _skip_reason(cmd: str) -> str | None:
    return next((why for start, why in SKIP.items() if cmd.startswith(start)), None)


def _script(cmds: list[Command]) -> str:
    """One bash script running each command in turn, a marker with its exit status after each; the
    status is restored after the marker, so a documented ``echo $?`` reads the command before it."""
    parts = ["__rc=0"]
    for c in cmds:
        parts.append(f"(exit $__rc); {c.text}\n__rc=$?; printf '\\n{MARK}%d\\n' $__rc")
    return "\n".join(parts) + "\n"


def _workdir(demo_out: Path) -> Path:
    """The folder the docs assume, around the demo's ``out/`` (made once, shared by every block)."""
    import pyarrow.parquet as pq

    work = demo_out.parent
    if (work / ".prepared").exists():
        return work
    for name in ("examples", "tests", "docs"):
        (work / name).symlink_to(ROOT / name)
    shutil.copytree(ROOT / "tests" / "fixtures" / "harbor", work / "jobs")
    shutil.copytree(ROOT / "tests" / "fixtures" / "terminal_bench", work / "runs")
    shutil.copytree(ROOT / "tests" / "fixtures" / "inspect", work / "logs")
    corpus = next((demo_out / "cache").glob("rst-*"))
    (work / "release").symlink_to(corpus / "trajectories")
    (work / "tasks-root").symlink_to(corpus / "tasks")
    (work / "export").mkdir()
    table = pq.read_table(demo_out / "simulated.parquet")
    renames = {"id": "rollout_id", "started_at": "t0", "finished_at": "t1", "model": "policy"}
    pq.write_table(table.rename_columns([renames.get(c, c) for c in table.column_names]), work / "export" / "part-0.parquet")
    # a table under the canonical names (rollouts.csv) and one under a harness's own (trials.csv, for --suggest-map)
    import pyarrow.csv as pcsv

    rows = table.select(["id", "task_id", "model", "started_at", "finished_at", "reward", "has_exception"])
    pcsv.write_csv(rows, work / "rollouts.csv")
    pcsv.write_csv(rows.rename_columns(["trial_id", "task", "model_name", "start_time", "end_time", "score", "errored"]),
                   work / "trials.csv")
    # a price sheet as docs/catalog.md describes one (a user's own; the CSV form has no producer to run)
    (work / "prices.csv").write_text("instance,vcpus,memory_gb,disk_gb,on_demand_usd_h,spot_usd_h\n"
                                     "m6id.8xlarge,32,128,1900,1.898,0.66\nc6id.16xlarge,64,128,3800,3.226,1.25\n")
    for name, src in (("fleet.json", "measure.json"), ("plan.json", "plan.json"), ("sim.json", "simulate.json")):
        shutil.copy(demo_out / src, work / name)
    shutil.copy(ROOT / "examples" / "scenarios" / "sync_rl.toml", work / "SCENARIO.toml")
    (work / ".prepared").write_text("")
    return work


def _env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SANDBOX_FLEET_", "COLUMNS", "LINES"))}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", NO_COLOR="1", COLUMNS="400",
               EDITOR="true", SANDBOX_FLEET_CACHE_DIR=str(work / ".cache"),
               NUMBA_CACHE_DIR=os.environ.get("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "sandbox-fleet" / "numba")))
    return env


_BOX = str.maketrans("", "", "│┃┌┐└┘├┤┬┴┼─━╭╮╰╯═║")


def _flat(text: str) -> str:
    """Text as a figure reads in it: table borders dropped, every whitespace run one space (a doc
    folds at 80 columns what a wide terminal prints on one line, and draws a table narrower)."""
    return " ".join(text.translate(_BOX).split())


def _in_order(shown: list[str], out: str, err: str) -> list[str]:
    """The shown lines missing from the command's stdout in order (or anywhere in its stderr, which
    is not interleaved with it)."""
    flat_out, flat_err = _flat(out), _flat(err)
    missing, at = [], 0
    for want in (_flat(x) for x in shown):
        if not want or want in ("...", "…"):
            continue
        hit = flat_out.find(want, at)
        if hit >= 0:
            at = hit + len(want)
        elif want not in flat_err:
            missing.append(want)
    return missing


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_documented_command_runs_as_written(block: Block, demo_out, tool):
    first = block.commands[0].text
    if any(first.startswith(s[1]) and block.doc == s[0] for s in SLOW) and os.environ.get("SANDBOX_FLEET_SLOW_DOCS") != "1":
        pytest.skip("slow (minutes): SANDBOX_FLEET_SLOW_DOCS=1 runs it")
    cmds = [c for c in block.commands if _skip_reason(c.text) is None]
    if not cmds:
        pytest.skip(_skip_reason(first) or "")
    for c in cmds:  # an external oracle the docs drive: skip without it (fail under CI=true)
        if c.text.split()[0] in EXTERNAL:
            tool(c.text.split()[0])
    work = _workdir(demo_out)
    done = subprocess.run(["bash", "-c", _script(cmds)], cwd=work, env=_env(work), capture_output=True, text=True,
                          timeout=600)
    # each command's own output: stdout and stderr split at the markers (stderr is not interleaved,
    # so a command's stderr lines are matched against all of stderr)
    pieces = done.stdout.split(MARK)
    outs, codes = [pieces[0]], []
    for piece in pieces[1:]:
        code, _, rest = piece.partition("\n")
        codes.append(int(code))
        outs.append(rest)
    assert len(codes) == len(cmds), (done.stdout[-2000:], done.stderr[-2000:])
    for k, (c, code) in enumerate(zip(cmds, codes, strict=True)):
        allowed = {0, 1} if re.match(r"sandbox-fleet check\b", c.text) else {0}
        assert code in allowed, f"`{c.text}` exited {code}:\n{outs[k][-1500:]}\n{done.stderr[-1500:]}"
        missing = _in_order(c.shown, outs[k], done.stderr)
        assert not missing, f"`{c.text}` does not print, in order:\n" + "\n".join(missing[:8])


def test_figures_the_prose_quotes_are_what_the_tool_prints(demo_out, tmp_path, tool):
    """Figures quoted in running text rather than under a command: the demo's corpus size in the
    README, and the rule count with the serving group in docs/operate.md (promtool's own count)."""
    import json

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quoted = re.search(r"scale 0\.05: ([\d,]+)\s+rollouts, ([\d,]+) tasks", readme)
    assert quoted, "README: the demo's corpus size is no longer quoted"
    m = json.loads((demo_out / "measure.json").read_text())
    assert (int(quoted.group(1).replace(",", "")), int(quoted.group(2).replace(",", ""))) == (m["rows"], m["tasks"]["count"])

    tool("promtool")
    operate = (ROOT / "docs" / "operate.md").read_text(encoding="utf-8")
    total, base, serving = map(int, re.search(r"finds (\d+) rules \((\d+) \+ (\d+)\)", operate).groups())
    rules = tmp_path / "rules.yml"
    work = _workdir(demo_out)
    done = subprocess.run(["bash", "-c", f"sandbox-fleet check out/measure.json --plan out/plan.json --prometheus-rules "
                           f"{rules} --serving-rules >/dev/null; promtool check rules {rules}"],
                          cwd=work, env=_env(work), capture_output=True, text=True, timeout=300)
    assert f"SUCCESS: {total} rules found" in done.stdout, done.stdout + done.stderr
    assert total == base + serving
