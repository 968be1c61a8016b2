"""Compile bytecode before whole-process timings.

An editable install in a ``PYTHONDONTWRITEBYTECODE`` environment (this machine's, and many
CI images') never writes ``.pyc`` files, so every process would compile our ~45 modules
from source (~75 ms on the measure path) while the peers' libraries were compiled by pip
at install. A wheel install compiles ours too; the benchmarks time that case.
"""

from __future__ import annotations

import compileall
from pathlib import Path


def compile_package(src: Path | None = None, *scripts: Path) -> None:
    """Compile ``src`` (default: the imported ``sandbox_fleet``'s folder) and any scripts."""
    import sandbox_fleet

    folders = {Path(sandbox_fleet.__file__).resolve().parents[1]}
    if src is not None:
        folders.add(src)
    for folder in folders:
        compileall.compile_dir(str(folder), quiet=1)
    for script in scripts:
        compileall.compile_file(str(script), quiet=1)
