"""Write an output file atomically: a temporary file in the destination folder, then ``os.replace``.

A small local helper for the Prometheus and Kubernetes outputs; the project-wide atomic-write
module (issue 8) can replace it without touching its callers.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from sandbox_fleet.errors import InputError


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path``: readers see the old file or the whole new one, never a part."""
    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.is_dir():
            raise IsADirectoryError(f"{out} is a folder")
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    except OSError as exc:
        raise InputError(f"{out}: cannot write output ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"{out}: cannot write output ({exc.strerror or exc})") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out
