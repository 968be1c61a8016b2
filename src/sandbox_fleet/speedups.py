"""The optional C module built at install, and the one switch that turns the speed-ups off.

``setup.py`` builds measure's NumPy allocator hook (``measure._blocks``) when a C compiler is
present (``optional=True``: without one the install still succeeds and NumPy allocates as usual;
no value depends on it). ``SANDBOX_FLEET_PURE_PYTHON=1`` turns it off and makes the numba kernels
of ``simulate`` run as plain Python (tests use it to compare whole outputs).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def pure_python_forced() -> bool:
    """Whether ``SANDBOX_FLEET_PURE_PYTHON`` asks for the reference paths only."""
    return os.environ.get("SANDBOX_FLEET_PURE_PYTHON", "") not in ("", "0")


def compiled(module: str) -> ModuleType | None:
    """The built C module ``sandbox_fleet.<module>`` (e.g. ``"measure._blocks"``), or None when
    it was not built at install or ``SANDBOX_FLEET_PURE_PYTHON`` is set (callers then do without).
    Read at each call, so tests can flip the switch within one process."""
    if pure_python_forced():
        return None
    try:
        return importlib.import_module(f"sandbox_fleet.{module}")
    except ImportError:
        return None
