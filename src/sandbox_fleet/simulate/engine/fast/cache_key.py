"""Where the kernels' compiled machine code is cached, and under which key: importable without numba
(``admit_loop.cached`` asks whether the kernel is in the cache before deciding to import numba at all).
``_jit`` points numba at ``cache_dir()``; see its docstring for why the key hashes ``CALLEES``."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from sandbox_fleet.simulate.engine.fast import _cache_prune

_ENGINE = Path(__file__).resolve().parent.parent
#: the files whose functions a cached kernel calls from another file (numba does not check them)
CALLEES: tuple[Path, ...] = (_ENGINE / "limits_rules.py", _ENGINE / "fifo.py", _ENGINE / "fast" / "event_heap.py",
                             _ENGINE / "fast" / "_inference_rules.py", _ENGINE / "fast" / "_node_rules.py",
                             _ENGINE / "policy_registry.py")  # it generates the policies' dispatch


def source_key() -> str:
    """The cache directory's key: a hash of ``CALLEES``' bytes and of the registered admission
    policies (``policy_registry.fingerprint``: the generated dispatch the admission kernel compiles
    and its hooks' files) (``src-`` and 16 hex digits)."""
    from sandbox_fleet.simulate.engine import policy_registry

    h = hashlib.sha256()
    for path in CALLEES:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(b"policies\0" + policy_registry.fingerprint().encode())
    return "src-" + h.hexdigest()[:16]


def cache_dir() -> Path:
    """Where compiled kernels are cached: ``$NUMBA_CACHE_DIR`` if set, else ``numba/`` under
    ``$SANDBOX_FLEET_CACHE_DIR``, else under ``$XDG_CACHE_HOME/sandbox-fleet``, else under
    ``~/.cache/sandbox-fleet``; in each, the subdirectory ``source_key()`` (a ``$NUMBA_CACHE_DIR``
    that already ends in it, as this module sets it for a child process, is kept)."""
    key = source_key()
    if os.environ.get("NUMBA_CACHE_DIR"):
        base = Path(os.environ["NUMBA_CACHE_DIR"])
        if _cache_prune.is_key(base.name):  # set by this module, for another key (policies registered since)
            base = base.parent
        return base / key
    ours = os.environ.get("SANDBOX_FLEET_CACHE_DIR")
    if ours:
        return Path(ours).expanduser() / "numba" / key
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return root / "sandbox-fleet" / "numba" / key
