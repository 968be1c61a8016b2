"""The plan outputs the README and docs show are what the command prints today.

Every console block that is one ``$ sandbox-fleet plan FILE ...`` command on a file in the
repository is run; each line the block shows (``...`` marks lines left out) must appear in the
output, in the order shown. A change that moves a figure fails here until the docs are rerun.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "docs" / "plan.md", ROOT / "docs" / "operate.md"]
BLOCK = re.compile(r"```(?:text|console)\n(\$ sandbox-fleet plan .*?)```", re.S)


def _blocks() -> list[tuple[str, list[str], list[str]]]:
    found = []
    for doc in DOCS:
        for body in BLOCK.findall(doc.read_text(encoding="utf-8")):
            lines = body.splitlines()
            command = [lines.pop(0)]
            while command[-1].endswith("\\"):
                command.append(lines.pop(0))
            if any(line.startswith("$ ") for line in lines):
                continue  # a session of several commands: not one output
            args = shlex.split(" ".join(c.rstrip("\\") for c in command)[2:])[1:]
            if args[1].startswith("out/") or not (ROOT / args[1]).is_file():
                continue  # made by another command first (./dev demo writes out/): not in a clean clone
            found.append((f"{doc.name}: {' '.join(args[:4])}", args, lines))
    return found


BLOCKS = _blocks()


def test_the_docs_show_plan_outputs():
    assert len(BLOCKS) >= 4, [name for name, _, _ in BLOCKS]


@pytest.mark.parametrize(("name", "args", "shown"), BLOCKS, ids=[b[0] for b in BLOCKS])
def test_documented_plan_output_is_current(name, args, shown, run_cli, monkeypatch, tmp_path):
    # run where the docs run it, with the repository's inputs linked in, so outputs land in tmp_path
    for top in {Path(a).parts[0] for a in args if (ROOT / a).exists() and not Path(a).is_absolute()}:
        (tmp_path / top).symlink_to(ROOT / top)
    monkeypatch.chdir(tmp_path)
    # the docs show whole lines, as a wide terminal prints them (plan folds long lines at the width)
    monkeypatch.setenv("COLUMNS", "400")
    r = run_cli(*args)
    assert r.code == 0, r.err
    out = r.out.splitlines()
    err = " ".join(r.err.split())  # "wrote ..." notes, wrapped at the terminal's width
    at = 0
    for line in shown:
        if line.strip() in ("", "...") or (line not in out[at:] and " ".join(line.split()) in err):
            continue
        try:
            at = out.index(line, at) + 1
        except ValueError:
            pytest.fail(f"{name}: the docs show a line the command no longer prints (in this order):\n{line}")
