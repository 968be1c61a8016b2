"""The optional C module in tests: the built module, or a skip (a failure under CI=true, where
.ci/run installs with a C compiler, so an unbuilt module is a broken install, not a missing tool)."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def require_built(module: str, what: str = "the C speed-up") -> ModuleType:
    """``sandbox_fleet.<module>`` as built at install (e.g. ``"measure._select"``)."""
    name = f"sandbox_fleet.{module}"
    try:
        return importlib.import_module(name)
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {name} was not built: .ci/run must install with a C compiler")
        pytest.skip(f"{what} was not built (no C compiler at install)")
