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

import contextlib
import os
import sys
from collections.abc import Iterator
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
    """numba's ``njit``, with the cache directory set first; None without numba. numba's import
    checks SciPy's version when SciPy is installed (``numba._ensure_critical_deps``: ``import scipy``,
    which imports ``subprocess``, ``shutil`` and its test utilities), for SciPy functions no kernel
    here calls: refused for that one import, as ``load_registries`` refuses SciPy's BLAS (SciPy then
    imports as usual; already imported: nothing is refused)."""
    point_cache()
    with _refused(_SCIPY):
        try:
            from numba import njit as numba_njit
        except ImportError:
            return None
    return numba_njit


#: the package numba's import checks the version of, only when installed (``_numba_njit``)
_SCIPY = "scipy"


@contextlib.contextmanager
def _refused(name: str) -> Iterator[None]:
    """``import name`` refused (``ImportError``, as if not installed) within the block, unless the
    module is already imported; afterwards it imports as usual."""
    if name in sys.modules:
        yield
        return
    sys.modules[name] = None  # type: ignore[assignment]  # import refused: ``ImportError``, not its load
    try:
        yield
    finally:
        if sys.modules.get(name, False) is None:
            del sys.modules[name]


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

    with _refused(_BLAS):
        cpu_target.target_context.refresh()


def _load_overload(self: Any, sig: Any, target_context: Any) -> Any:
    """numba's ``Cache.load_overload`` (``numba.core.caching``) without the ``target_context.refresh()``
    it starts with: machine code loaded from the cache is not lowered again, so it needs numba's
    runtime (``rtsys``, the symbols the code links to) but none of the implementation registries that
    refresh imports (~0.17 s CPU of a process that loads the kernel from the cache, BENCHMARKS.md, "Issue
    36, a cache load without the registries"). A miss loads them (``load_registries``) before the
    compile that follows, which needs them (numba's compiler refreshes both contexts itself)."""
    from numba.core.runtime import rtsys

    rtsys.initialize(target_context)
    cres = None
    with _refused(_BLAS), self._guard_against_spurious_io_errors():  # code calling numba's NumPy
        cres = self._load_overload(sig, target_context)  # rebuilds its environment: imports ``arraymath``
    if cres is None:
        load_registries()
    return cres


def lean_cache_loads() -> None:
    """Cache loads without numba's registries (``_load_overload``), for numba's caching class as
    written for 0.68 (its ``load_overload`` = refresh + ``_load_overload``); another shape of the class:
    the registries loaded now, as ``load_registries`` does."""
    from numba.core import caching

    cache = caching.Cache
    if hasattr(cache, "_load_overload") and hasattr(cache, "_guard_against_spurious_io_errors"):
        cache.load_overload = _load_overload  # type: ignore[method-assign]
    else:
        load_registries()


if COMPILED:
    lean_cache_loads()


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
