"""Lazy package exports: a package's public names are imported on first use.

Start-up stays cheap (``sandbox-fleet --help`` and ``check`` never import NumPy, Plotly, DuckDB or
PyArrow) while ``from sandbox_fleet.plan import make_plan`` keeps working as with eager imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``exports`` maps a public name to its module.

    A name found is cached in ``namespace`` (the package's globals); any other name is tried as a
    submodule (``package.sub`` without importing it first, as eager imports allowed).
    """

    def __getattr__(name: str) -> Any:
        if name not in exports:
            return _submodule(package, name)
        value = getattr(importlib.import_module(exports[name]), name)
        namespace[name] = value
        return value

    return __getattr__


def _submodule(package: str, name: str) -> Any:
    try:
        return importlib.import_module(f"{package}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{package}.{name}":
            raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
