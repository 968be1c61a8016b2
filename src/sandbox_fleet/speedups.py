"""The optional C speed-ups built at install, and the one switch that turns them off.

A C speed-up is a twin of a NumPy or Python function that stays in the source as the
reference: the same values, byte for byte, tests check each pair. ``setup.py`` builds them
when a C compiler is present (``optional=True``: without one the install still succeeds and
the reference runs). ``SANDBOX_FLEET_PURE_PYTHON=1`` makes every caller take the reference
(tests use it to compare whole outputs); the closed-loop kernel (numba) honours it too.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def pure_python_forced() -> bool:
    """Whether ``SANDBOX_FLEET_PURE_PYTHON`` asks for the reference paths only."""
    return os.environ.get("SANDBOX_FLEET_PURE_PYTHON", "") not in ("", "0")


def compiled(module: str) -> ModuleType | None:
    """The built C module ``sandbox_fleet.<module>`` (e.g. ``"measure._groups"``), or None when
    it was not built at install or ``SANDBOX_FLEET_PURE_PYTHON`` is set (callers then run the
    reference). Read at each call, so tests can flip the switch within one process."""
    if pure_python_forced():
        return None
    try:
        return importlib.import_module(f"sandbox_fleet.{module}")
    except ImportError:
        return None
