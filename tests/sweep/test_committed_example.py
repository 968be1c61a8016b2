"""examples/sweeps/rl_cap.csv is what the command in examples/sweeps/README.md writes, byte for byte.

The sweep's figures are sums and means of integer-microsecond event times and seeded lognormal draws
(NumPy's generator calls the C library's exp), so they hold across CPUs; CI runs this file under
another SIMD kernel family too (tests/other_kernels.py).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "sweeps"


def _documented_command() -> list[str]:
    text = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", text, re.S).group(1)
    args = shlex.split(block.replace("\\\n", " "))
    assert args[:2] == ["sandbox-fleet", "sweep"]
    return args[1:]


def test_committed_sweep_is_what_the_documented_command_writes(run_cli, tmp_path, monkeypatch):
    args = _documented_command()
    out = tmp_path / "rl_cap.csv"
    args[args.index("-o") + 1] = str(out)
    monkeypatch.chdir(ROOT)
    r = run_cli(*args)
    assert r.code == 0, r.err
    assert out.read_bytes() == (EXAMPLES / "rl_cap.csv").read_bytes()
    # the knees the README states
    text = " ".join(r.out.split())
    assert "(workload.batch=256): 192" in text and "(workload.batch=512): 384" in text
