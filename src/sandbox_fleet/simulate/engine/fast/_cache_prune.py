"""Pruning the compiled kernels' stale cache directories.

``_jit.cache_dir()`` is keyed by a hash of the sources a kernel compiles (``src-`` and 16 hex
digits): every change of them (an upgrade, a registered policy) starts a new directory, and the old
ones would stay forever. ``prune`` keeps the current one and the ``KEEP`` most recently used others
(another install or a policy registered in some runs may still use them) and removes the rest,
never one used within ``MIN_AGE_S`` (a process may be writing it) nor anything not named as a key.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

KEY = re.compile(r"src-[0-9a-f]{16}")
#: stale key directories kept beside the current one, the most recently used first
KEEP = 3
#: a key directory used this recently is never removed (seconds)
MIN_AGE_S = 3600.0


def is_key(name: str) -> bool:
    """Whether ``name`` is a cache key directory's name (``src-`` and 16 hex digits)."""
    return KEY.fullmatch(name) is not None


def _used_s(path: Path) -> float:
    """When a key directory was last used: its newest entry's modification time (numba writes an
    index and object files inside, and reading them leaves the directory's own time alone)."""
    newest = path.stat().st_mtime
    with os.scandir(path) as it:
        for entry in it:
            try:
                newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
            except OSError:
                continue
    return newest


def prune(current: Path, keep: int = KEEP, min_age_s: float = MIN_AGE_S, now: float | None = None) -> list[Path]:
    """Remove the stale key directories beside ``current`` (see the module); the ones removed.
    Best effort: a directory that cannot be read or removed is left as it is."""
    parent = current.parent
    if not is_key(current.name) or not parent.is_dir():
        return []
    now = time.time() if now is None else now
    stale = []
    try:
        with os.scandir(parent) as it:
            for entry in it:
                if entry.name != current.name and is_key(entry.name) and entry.is_dir(follow_symlinks=False):
                    try:
                        stale.append((_used_s(Path(entry.path)), Path(entry.path)))
                    except OSError:
                        continue
    except OSError:
        return []
    stale.sort(reverse=True)  # the most recently used first
    removed = []
    for used_s, path in stale[keep:]:
        if now - used_s < min_age_s:
            continue
        # moved aside first, so no process finds a half-removed directory under its key
        aside = path.with_name(f".{path.name}.prune-{os.getpid()}")
        try:
            path.rename(aside)
        except OSError:
            continue
        shutil.rmtree(aside, ignore_errors=True)
        removed.append(path)
    return removed
