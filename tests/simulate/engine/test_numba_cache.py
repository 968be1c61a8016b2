"""numba's compiled code is cached under the user's cache, never beside the installed source."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from sandbox_fleet.simulate.engine.fast import _jit, cache_key

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
    key = _jit.source_key()
    assert _jit.cache_dir() == tmp_path / "home" / ".cache" / "sandbox-fleet" / "numba" / key
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _jit.cache_dir() == tmp_path / "xdg" / "sandbox-fleet" / "numba" / key
    monkeypatch.setenv("SANDBOX_FLEET_CACHE_DIR", str(tmp_path / "ours"))
    assert _jit.cache_dir() == tmp_path / "ours" / "numba" / key
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "theirs"))
    assert _jit.cache_dir() == tmp_path / "theirs" / key
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "theirs" / key))  # as this module sets it for a child
    assert _jit.cache_dir() == tmp_path / "theirs" / key


def test_the_cache_key_follows_every_file_a_kernel_calls_into(monkeypatch, tmp_path):
    """numba checks a cached kernel against its own file only; a change to a file it calls into (the
    limits' rules) must send it to a fresh directory: the key hashes those files' bytes."""
    a, b = tmp_path / "limits_rules.py", tmp_path / "fifo.py"
    a.write_text("x = 1\n")
    b.write_text("y = 1\n")
    monkeypatch.setattr(cache_key, "CALLEES", (a, b))  # (``_jit`` re-exports them from ``cache_key``)
    monkeypatch.setenv("SANDBOX_FLEET_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    before, dir_before = _jit.source_key(), _jit.cache_dir()
    a.write_text("x = 2\n")
    assert _jit.source_key() != before
    assert _jit.cache_dir() != dir_before and _jit.cache_dir().parent == dir_before.parent
    a.write_text("x = 1\n")
    assert _jit.source_key() == before
    b.write_text("y = 2\n")
    assert _jit.source_key() != before


def _files_called(fn, seen: set) -> set:
    """The source files of the plain functions ``fn`` calls by global name, transitively."""
    import inspect
    import types

    out = set()
    names = fn.__code__.co_names
    found = [fn.__globals__.get(name) for name in names]
    for mod in [g for g in found if isinstance(g, types.ModuleType)]:  # ``module.function(...)`` calls
        found += [getattr(mod, name, None) for name in names]
    for g in found:
        g = getattr(g, "py_func", g)  # a numba dispatcher: its Python function
        if isinstance(g, types.FunctionType) and g not in seen:
            seen.add(g)
            src = inspect.getsourcefile(g)
            if src is not None:  # None: the policies' generated dispatch (``policy_registry.fingerprint`` keys it)
                out.add(src)
            out |= _files_called(g, seen)
    return out


def test_callees_name_every_file_the_admission_kernel_calls_into():
    """Every file a kernel function reaches through its calls, other than its own and ``_jit``'s, is in
    ``CALLEES`` (else numba's cache of the kernel would go stale when it changes)."""
    import inspect
    import types
    from pathlib import Path

    from sandbox_fleet.simulate.engine.fast import _admit_kernel as K

    own = {Path(inspect.getsourcefile(K)).resolve(), Path(inspect.getsourcefile(_jit)).resolve()}
    files: set = set()
    for obj in vars(K).values():
        fn = getattr(obj, "py_func", obj)
        src = isinstance(fn, types.FunctionType) and inspect.getsourcefile(fn)
        if src is None or (src and Path(src).resolve() in own):  # None: the generated policy dispatch
            files |= {Path(f).resolve() for f in _files_called(fn, set())}
    package = Path(inspect.getsourcefile(K)).resolve().parents[3]  # src/sandbox_fleet: numba's own files aside
    outside = {f for f in files - own if package in f.parents}
    assert outside  # the limits' rules: fifo.claim, limits_rules.bucket_take ...
    assert outside <= {p.resolve() for p in _jit.CALLEES}, outside - {p.resolve() for p in _jit.CALLEES}


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


def test_a_kernel_index_older_than_its_source_is_not_a_cached_kernel(monkeypatch, tmp_path):
    """``admit_loop.cached`` (the rent-or-buy price of the compiled kernel) counts numba's index of
    ``run`` only when it is not older than ``_admit_kernel.py``: numba drops such an index (its stamp
    is the source's mtime) and compiles again, which a fresh checkout beside an old cache would pay."""
    from pathlib import Path

    from sandbox_fleet.simulate.engine.fast import admit_loop

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "nc"))
    assert not admit_loop.cached()  # empty
    index = cache_key.cache_dir() / "fast_0" / "_admit_kernel.run-1.py3.nbi"
    index.parent.mkdir(parents=True)
    index.write_bytes(b"")
    source_mtime = (Path(admit_loop.__file__).parent / "_admit_kernel.py").stat().st_mtime
    os.utime(index, (source_mtime - 60, source_mtime - 60))
    assert not admit_loop.cached()  # left by an older source
    os.utime(index, (source_mtime + 60, source_mtime + 60))
    assert admit_loop.cached()
