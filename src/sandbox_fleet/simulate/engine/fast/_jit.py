"""``njit`` for the kernels: numba's when it is installed, else a decorator that leaves the
function as written, so the one kernel source runs compiled or as plain Python.

numba (a core dependency) caches the machine code it compiles (``cache=True``). By default it
writes that cache in ``__pycache__`` beside the source, i.e. into the install; ours goes to
``cache_dir()`` instead, under the user's cache (``NUMBA_CACHE_DIR`` is set before numba reads its
configuration, unless the user set it). ``NUMBA_DISABLE_JIT=1`` makes numba's own ``njit`` return
the function uncompiled, like the shim.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from sandbox_fleet.simulate.engine.fast import _plain


def cache_dir() -> Path:
    """Where compiled kernels are cached: ``$NUMBA_CACHE_DIR`` if set, else ``numba/`` under
    ``$SANDBOX_FLEET_CACHE_DIR``, else under ``$XDG_CACHE_HOME/sandbox-fleet``, else under
    ``~/.cache/sandbox-fleet``."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    base = os.environ.get("SANDBOX_FLEET_CACHE_DIR")
    if base:
        return Path(base).expanduser() / "numba"
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return root / "sandbox-fleet" / "numba"


def _numba_njit() -> Any:
    """numba's ``njit``, with the cache directory set first; None without numba."""
    if not os.environ.get("NUMBA_CACHE_DIR"):
        os.environ["NUMBA_CACHE_DIR"] = str(cache_dir())
        if sys.modules.get("numba") is not None:  # imported before us: its configuration must read the variable again
            from numba.core import config

            config.reload_config()
    try:
        from numba import njit as numba_njit
    except ImportError:
        return None
    return numba_njit


def _compiles() -> bool:
    from numba.core import config

    return not config.DISABLE_JIT  # type: ignore[attr-defined]  # set by numba from the environment


_real = _numba_njit()
njit: Any = _real if _real is not None else _plain.njit
#: ``numba.objmode`` (a compiled kernel's block that runs as Python), or a no-op context without numba
objmode: Any = _plain.objmode
if _real is not None:
    from numba import objmode as _numba_objmode

    objmode = _numba_objmode
#: whether functions decorated with ``njit`` are compiled in this process (numba is installed and
#: ``NUMBA_DISABLE_JIT`` does not switch it off)
COMPILED = _real is not None and _compiles()


def _numba_borrow() -> Any:
    """An intrinsic that returns the array ``a`` without its reference count (a null ``meminfo``).

    A compiled kernel passes its arrays to helpers; numba counts a reference for every array it
    passes or binds (an atomic add and subtract), which it cannot prune across inlined helpers:
    measured at more than half of a kernel's time. A borrowed array is counted by nothing (numba's
    ``NRT_incref`` skips a null ``meminfo``); the caller must keep the owner alive while the
    borrowed view is in use (a kernel's arguments are alive for the call)."""
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def borrow(typingctx, a):
        def codegen(context, builder, sig, args):
            view = context.make_array(sig.args[0])(context, builder, value=args[0])
            view.meminfo = cgutils.get_null_value(view.meminfo.type)
            view.parent = cgutils.get_null_value(view.parent.type)
            return view._getvalue()

        return a(a), codegen

    return borrow


#: ``borrow(a)``: array ``a`` without reference counting, inside a compiled kernel (``a`` itself when
#: the kernel runs as plain Python)
borrow: Any = _numba_borrow() if COMPILED else _plain.borrow
