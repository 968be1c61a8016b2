"""Cache of parsed shards, keyed by the shard's path, size and mtime.

Lives in ``cache_dir``, else ``$SANDBOX_FLEET_CACHE_DIR``, else ``~/.cache/sandbox-fleet``;
never inside the input folder. A stale or unreadable entry is simply re-parsed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pyarrow as pa

from sandbox_fleet.errors import InputError

#: Bump when the parser's output changes, so old entries stop matching.
PARSER_VERSION = "2"


def cache_root(cache_dir: str | None, input_root: Path) -> Path:
    """The tasks cache folder; refuses one inside ``input_root`` (we never write into inputs)."""
    base = cache_dir or os.environ.get("SANDBOX_FLEET_CACHE_DIR") or str(Path.home() / ".cache" / "sandbox-fleet")
    root = Path(base).expanduser().resolve() / "tasks"
    if root.is_relative_to(input_root.resolve()):
        raise InputError(f"cache dir {root} is inside the input folder {input_root}; choose another (--cache-dir or SANDBOX_FLEET_CACHE_DIR)")
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
