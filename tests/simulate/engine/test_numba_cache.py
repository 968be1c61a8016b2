"""numba's compiled code is cached under the user's cache, never beside the installed source."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from sandbox_fleet.simulate.engine.fast import _jit

TINY = textwrap.dedent("""
    from sandbox_fleet.simulate.engine.fast._jit import njit

    @njit(cache=True)
    def plus_one(x):
        return x + 1
""")

CHILD = textwrap.dedent("""
    import sys
    if sys.argv[1] == "numba_first":
        import numba  # imported before sandbox_fleet sets the cache directory
    from sandbox_fleet.simulate.engine.fast import _jit
    sys.path.insert(0, sys.argv[2])
    import tiny_kernel
    assert tiny_kernel.plus_one(41) == 42 and _jit.COMPILED
""")


def test_cache_dir_precedence(monkeypatch, tmp_path):
    for var in ("NUMBA_CACHE_DIR", "SANDBOX_FLEET_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _jit.cache_dir() == tmp_path / "home" / ".cache" / "sandbox-fleet" / "numba"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _jit.cache_dir() == tmp_path / "xdg" / "sandbox-fleet" / "numba"
    monkeypatch.setenv("SANDBOX_FLEET_CACHE_DIR", str(tmp_path / "ours"))
    assert _jit.cache_dir() == tmp_path / "ours" / "numba"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "theirs"))
    assert _jit.cache_dir() == tmp_path / "theirs"


@pytest.mark.parametrize("order", ["ours_first", "numba_first"])
def test_compiled_code_lands_in_the_cache_dir(tmp_path, order):
    src = tmp_path / "src"
    src.mkdir()
    (src / "tiny_kernel.py").write_text(TINY)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT")}
    env["SANDBOX_FLEET_CACHE_DIR"] = str(tmp_path / "cache")
    run = subprocess.run([sys.executable, "-c", CHILD, order, str(src)], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    written = sorted(p.suffix for p in (tmp_path / "cache" / "numba").rglob("*") if p.is_file())
    assert ".nbi" in written and ".nbc" in written  # numba's index and its compiled code
    assert not [p for p in src.rglob("*") if p.suffix in (".nbi", ".nbc")]  # nothing beside the source
