"""``njit`` for the kernels: numba's when it is installed, else a decorator that leaves the
function as written, so the one kernel source runs compiled or as plain Python.

numba (a core dependency) caches the machine code it compiles (``cache=True``). By default it
writes that cache in ``__pycache__`` beside the source, i.e. into the install; ours goes to
``cache_dir()`` instead, under the user's cache (``NUMBA_CACHE_DIR`` is set before numba reads its
configuration; a directory the user set gets the key below appended). ``NUMBA_DISABLE_JIT=1`` makes
numba's own ``njit`` return the function uncompiled, like the shim.

numba checks a cached function against its own file only: a kernel that calls a function of another
file (the admission kernel calls ``fifo.claim``, ``limits_rules``' rules and ``_inference_rules``) would load stale machine
code after that file changed. So the cache directory is keyed by a hash of those files (``CALLEES``,
``source_key``): a change to one of them sends every kernel to a fresh directory, where it compiles.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from sandbox_fleet.simulate.engine.fast import _cache_prune, _plain
from sandbox_fleet.simulate.engine.fast.cache_key import CALLEES, cache_dir, source_key

__all__ = ["CALLEES", "cache_dir", "source_key"]  # (they live in ``cache_key``, which imports no numba)

def point_cache() -> Path:
    """Point numba's cache at ``cache_dir()`` (for the functions decorated from now on: a kernel
    loaded again after a policy was registered) and return it; stale key directories are pruned."""
    target = cache_dir()
    if os.environ.get("NUMBA_CACHE_DIR") != str(target):
        os.environ["NUMBA_CACHE_DIR"] = str(target)
        if sys.modules.get("numba") is not None:  # imported before us: its configuration must read the variable again
            from numba.core import config

            config.reload_config()
    _cache_prune.prune(target)
    return target


def _numba_njit() -> Any:
    """numba's ``njit``, with the cache directory set first; None without numba."""
    point_cache()
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

#: the module numba's registries import to learn whether SciPy's BLAS is there (``numba.np.arraymath``)
_BLAS = "scipy.linalg.cython_blas"


def load_registries() -> None:
    """Load numba's own implementations now (it does on the first compile or cache load), without
    importing SciPy for them.

    numba's CPU target imports every implementation module on its first compile or cache load, and
    one of them (``numba.np.arraymath``) imports ``scipy.linalg`` only to set a flag that picks
    ``np.correlate`` / ``np.convolve``'s inner product: ~0.15-0.3 s CPU of a process that loads the
    kernels from the cache (~0.6 s in all), for functions no kernel here calls (BENCHMARKS.md, "Issue
    36, a cache load without SciPy"). The import is refused for that one load (the flag then picks
    numba's own loop, the same arithmetic); ``np.dot`` and ``np.linalg`` still import SciPy when a
    function using them compiles. SciPy already imported: nothing is refused."""
    from numba.core.registry import cpu_target

    if _BLAS in sys.modules:
        cpu_target.target_context.refresh()
        return
    sys.modules[_BLAS] = None  # type: ignore[assignment]  # import refused: ``ImportError``, not SciPy's load
    try:
        cpu_target.target_context.refresh()
    finally:
        if sys.modules.get(_BLAS, False) is None:
            del sys.modules[_BLAS]


if COMPILED:
    load_registries()


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


_jitable: set[int] = set()


def jitable(fn: Any, inline: bool = False) -> Any:
    """``fn`` made callable from compiled kernels (numba's ``register_jitable``, once per function:
    the admission kernel calls the limits' rules from several modules; ``inline``: its
    body is inlined where it is called, for a tiny hot helper); ``fn`` itself."""
    if _real is not None and id(fn) not in _jitable:
        from numba.extending import register_jitable

        register_jitable(inline="always" if inline else "never")(fn)
        _jitable.add(id(fn))
    return fn


#: ``borrow(a)``: array ``a`` without reference counting, inside a compiled kernel (``a`` itself when
#: the kernel runs as plain Python)
borrow: Any = _numba_borrow() if COMPILED else _plain.borrow
