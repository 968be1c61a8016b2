"""Cache of parsed shards, keyed by the shard's path, size and mtime.

Lives only where the user asked: ``cache_dir`` (``--cache-dir``), else ``$SANDBOX_FLEET_CACHE_DIR``;
a command that writes an output file (``-o``) caches in ``cache/`` beside it (``cache_dir_for``).
With none of these the shards are parsed and nothing is written: reading user files never writes
outside the output folder. Never inside the input folder. A stale or unreadable entry is re-parsed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pyarrow as pa

from sandbox_fleet.errors import InputError

#: Bump when the parser's output changes, so old entries stop matching.
PARSER_VERSION = "4"  # 4: the image column


#: the cache folder a command writes beside its output file (``-o``) when none is given
BESIDE_OUTPUT = "cache"


def cache_dir_for(cache_dir: str | Path | None, output: str | Path | None,
                  tasks: str | Path | None = None) -> str | None:
    """The cache folder a command with ``--cache-dir`` and ``-o`` uses, or None (parse, write nothing).

    ``cache_dir``, else ``$SANDBOX_FLEET_CACHE_DIR``, else ``cache/`` beside ``output``, except when
    that folder would sit inside the ``tasks`` root (an input): then nothing is cached.
    """
    chosen = cache_dir or os.environ.get("SANDBOX_FLEET_CACHE_DIR")
    if chosen:
        return str(chosen)
    if output is None:
        return None
    beside = Path(output).expanduser().resolve().parent / BESIDE_OUTPUT
    if tasks is not None and beside.is_relative_to(Path(tasks).expanduser().resolve()):
        return None
    return str(beside)


def cache_root(cache_dir: str | None, input_root: Path) -> Path | None:
    """The tasks cache folder (``tasks/`` under ``cache_dir``, else under ``$SANDBOX_FLEET_CACHE_DIR``),
    or None when neither is set (no cache); refuses one inside ``input_root`` (we never write into inputs)."""
    base = cache_dir or os.environ.get("SANDBOX_FLEET_CACHE_DIR")
    if not base:
        return None
    root = Path(base).expanduser().resolve() / "tasks"
    if root.is_relative_to(input_root.resolve()):
        raise InputError(f"cache dir {root} is inside the input folder {input_root}; choose another (`cache_dir` or "
                         "SANDBOX_FLEET_CACHE_DIR)")
    return root


def entry(root: Path, shard: Path) -> Path:
    st = shard.stat()
    key = f"{PARSER_VERSION}|{shard.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    return root / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".arrow")


def load(path: Path) -> pa.Table | None:
    try:
        with pa.OSFile(str(path)) as source:
            return pa.ipc.open_file(source).read_all()
    except (OSError, pa.ArrowInvalid):
        return None


def store(path: Path, table: pa.Table) -> str | None:
    """Write atomically; returns a warning text instead of failing the read."""
    from sandbox_fleet.atomic import OutputError, atomic_path

    try:
        with atomic_path(path) as tmp, open(tmp, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    except (OSError, OutputError) as exc:
        why = str(exc).rsplit("(", 1)[-1].rstrip(")") if isinstance(exc, OutputError) else (exc.strerror or exc)
        return f"cannot write the tasks cache in {path.parent} ({why}); the next read will parse again"
    return None
