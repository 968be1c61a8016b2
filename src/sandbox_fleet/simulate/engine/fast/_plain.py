"""The kernels' one source run as plain Python, in a process that may also run it compiled.

``njit``, ``objmode``, ``borrow`` and ``jitable`` here are what ``_jit`` gives without numba: a decorator that
leaves the function as written, a block that runs as the Python it is, the array itself. ``twin(name)``
loads a kernel module again from its file with these in place of ``_jit``'s (without importing
numba): a run too small to pay numba's per-process load runs the twin, a larger run the compiled
module, and both are the same text (tests compare their bits).
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import types
from collections.abc import Callable
from typing import Any

_JIT = "sandbox_fleet.simulate.engine.fast._jit"
SUFFIX = "[plain]"  # a twin's module name: the kernel's, with this after it


def njit(*args: Any, **options: Any) -> Any:
    """``@njit``, ``@njit(...)`` and ``njit(signature, ...)(fn)`` without numba: ``fn`` itself."""
    if len(args) == 1 and callable(args[0]) and not options:
        return args[0]

    def keep(fn: Callable) -> Callable:
        return fn

    return keep


def objmode(**types_: Any) -> Any:
    """``numba.objmode(...)`` without numba: the block runs as the Python it is."""
    return contextlib.nullcontext()


def borrow(a: Any) -> Any:
    return a


def jitable(fn: Any, inline: bool = False) -> Any:
    """``_jit.jitable`` without numba: ``fn`` itself."""
    return fn


def twin(name: str) -> types.ModuleType:
    """Kernel module ``name`` as plain Python (loaded once per process; numba is not imported)."""
    key = name + SUFFIX
    mod = sys.modules.get(key)
    if mod is not None:
        return mod
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None, name
    plain = importlib.util.spec_from_file_location(key, spec.origin)
    assert plain is not None and plain.loader is not None
    mod = importlib.util.module_from_spec(plain)
    stand_in = types.ModuleType(_JIT + SUFFIX)
    for attr, fn in (("njit", njit), ("objmode", objmode), ("borrow", borrow), ("jitable", jitable)):
        setattr(stand_in, attr, fn)
    real = sys.modules.get(_JIT)
    sys.modules[_JIT] = stand_in  # what the kernel's ``from ..._jit import ...`` binds while it loads
    try:
        plain.loader.exec_module(mod)
    finally:
        if real is None:
            del sys.modules[_JIT]
        else:
            sys.modules[_JIT] = real
    sys.modules[key] = mod
    return mod
