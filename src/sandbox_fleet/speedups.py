"""The one switch that turns the speed-ups off: ``SANDBOX_FLEET_PURE_PYTHON=1``.

It makes the numba kernels of ``simulate`` run as plain Python; tests use it to compare whole outputs.
"""

from __future__ import annotations

import os


def pure_python_forced() -> bool:
    """Whether ``SANDBOX_FLEET_PURE_PYTHON`` asks for the reference paths only."""
    return os.environ.get("SANDBOX_FLEET_PURE_PYTHON", "") not in ("", "0")
