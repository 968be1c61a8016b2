"""The admission policies: each a named unit with its hooks, registered once (``register_policy``).

A pool's ``[fleet] admission`` names a registered policy (``entities.Fleet`` checks the name here);
the admission kernel (``fast/_admit_kernel.py``) runs it, compiled or as plain Python, through one
dispatch per hook generated from this registry (``dispatchers``). A policy registered from outside
the package runs exactly as a built-in one: the built-ins register here too (``policies.py``).

The hooks (numba-compilable functions of the kernel's arrays; ``_admit_kernel``'s column constants
name their cells; a hook given as ``"module:function"`` is looked up when a kernel loads, so the
built-ins' hooks can live in the kernel's own file and its plain-Python twin uses its own copies):

- ``rank(bf, bi, ceil, pi, pw, r_timeout, ri, wf, wi, p, w, r, used, now) -> (int, int)``: the sort
  key of workload ``w``'s waiting head ``r`` before its queue order, smaller first (``used``: the
  slots ``w`` holds); default ``(0, 0)`` (first come, first served among the heads).
- ``admits(...same...) -> bool``: whether that head may start (a head refused does not block the
  others); default ``True``.
- ``started(ai, ceil, r_timeout, wi, w, row, now)`` / ``ended(af, ai, ceil, r_timeout, wi, w, row)``:
  attempt ``row`` of ``w`` took / gave back a slot (the kernel counts ``wi[w, W_USED]`` itself).
- ``victim(af, ai, pi, pw, wi, p, w, used) -> row``: no slot is free and ``evicts(pool)``: the running
  attempt a head of ``w`` evicts (-1: none); the kernel ends it and re-queues its rollout.

And two Python ones, read when a run is set up (``admit_loop.initial_state``):

- ``evicts(pool) -> bool``: whether a pool of this policy may evict (asks ``victim``);
- ``columns = {column: fn(pool, workload) -> int}``: per-workload parameters the hooks read, by
  ``_admit_kernel`` column name, one of ``COLUMNS`` (``"W_PRIO"``, ``"W_NOMINAL"``, ``"W_LIMIT"``: the
  workload columns the kernel keeps for a policy; any other is the kernel's own state, which a
  policy must not write); a name outside ``COLUMNS`` is an error at registration.

A plain queue (``plain=True``) is one queue per pool that the kernel keeps itself (``pop_front``):
a slot goes to its front entry, and a dropped front entry gives the slot back. Without a hook it is
first come, first served (``fifo``); with one, a heap in the order of

- ``key(ri, r_timeout, r) -> float``: rollout ``r``'s place in its pool's queue, smaller first, ties
  in queue order (``shortest-timeout-first``: its agent timeout). It reads only the rollout's own
  figures (``ri[r, ...]``: its workload, RL batch, queue order, evictions; ``r_timeout[r]``) and must
  not change while the rollout waits (the heap keeps the order it had at entry).

numba checks a cached kernel against the kernel's own file only; ``fingerprint()`` (the registered
policies, the generated dispatch's text and the bytes of every hook's file) is part of
``_jit.source_key()``, so registering a policy sends the kernels to a cache directory of their own.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Hook = Callable[..., Any] | str
#: the kernel module whose names a ``"module:function"`` hook of that module resolves in (its twin's own)
KERNEL = "sandbox_fleet.simulate.engine.fast._admit_kernel"

_ARRAYS = "bf, bi, ceil, pi, pw, r_timeout, ri, wf, wi, p, w, r, used, now"
#: hook -> (its arguments, what the dispatch returns for a policy without it)
HOOKS: dict[str, tuple[str, str]] = {
    "rank": (_ARRAYS, "0, 0"),
    "admits": (_ARRAYS, "True"),
    "started": ("ai, ceil, r_timeout, wi, w, row, now", ""),
    "ended": ("af, ai, ceil, r_timeout, wi, w, row", ""),
    "victim": ("af, ai, pi, pw, wi, p, w, used", "-1"),
    "key": ("ri, r_timeout, r", "0.0"),  # a plain queue's order (the others choose through the hooks above)
}
#: what the generated ``policy_queue(code)`` returns: a policy choosing through hooks, a plain queue in
#: arrival order (one list per workload, merged by queue order), a plain queue in ``key`` order (a heap)
CHOOSES, LISTS, KEYED = 0, 1, 2
#: the ``_admit_kernel`` workload columns a policy's ``columns`` may set (the kernel's own state is
#: the other columns; ``test_policy_registry`` checks these are ``wi`` columns of the kernel)
COLUMNS = ("W_PRIO", "W_NOMINAL", "W_LIMIT")
Columns = dict[str, Callable[[Any, Any], int]]


@dataclass(frozen=True)
class Policy:
    """One registered admission policy: its name, its kernel code and its hooks."""

    name: str
    code: int
    plain: bool  # a plain queue the kernel keeps itself (fifo, shortest-timeout-first): no hooks
    hooks: tuple[tuple[str, Hook], ...]  # (hook name, function or "module:function"), in ``HOOKS`` order
    evicts: Callable[[Any], bool] | None = None
    columns: tuple[tuple[str, Callable[[Any, Any], int]], ...] = ()  # (``COLUMNS`` name, fn(pool, workload))

    @property
    def keyed(self) -> bool:
        """A plain queue in ``key`` order: the kernel keeps it as a heap per pool."""
        return self.plain and bool(self.hooks)

    def may_evict(self, pool) -> bool:
        return self.evicts is not None and bool(self.evicts(pool))

    def column_values(self, pool, workload) -> dict[str, int]:
        """The per-workload parameters its hooks read, by kernel column name (``COLUMNS``)."""
        return {col: int(fn(pool, workload)) for col, fn in self.columns}


_REGISTRY: dict[str, Policy] = {}
_BUILTINS_LOADED = [False]


def _builtins() -> None:
    """Register the built-in policies (``policies.py`` does, once, on its import)."""
    if not _BUILTINS_LOADED[0]:
        _BUILTINS_LOADED[0] = True
        importlib.import_module("sandbox_fleet.simulate.engine.policies")


def register_policy(name: str, *, plain: bool = False, evicts: Callable[[Any], bool] | None = None,
                    columns: Columns | None = None, **hooks: Hook) -> Policy:
    """Register admission policy ``name`` with its hooks (``rank``, ``admits``, ``started``,
    ``ended``, ``victim``; see the module), once; the next code is its kernel code. Registering the
    same name again with the same hooks returns the registered policy; other hooks are an error."""
    _builtins()
    unknown = sorted(set(hooks) - set(HOOKS))
    if unknown:
        raise ValueError(f"register_policy({name!r}): unknown hook {unknown[0]!r}; hooks are {', '.join(HOOKS)}")
    if not name or not isinstance(name, str):
        raise ValueError(f"register_policy: a policy's name is a non-empty string, got {name!r}")
    if plain and (set(hooks) - {"key"} or evicts is not None or columns is not None):
        raise ValueError(f"register_policy({name!r}): a plain queue takes only a 'key' hook (the kernel keeps it)")
    if not plain and "key" in hooks:
        raise ValueError(f"register_policy({name!r}): 'key' orders a plain queue: register it with plain=True")
    if not plain and not hooks:
        raise ValueError(f"register_policy({name!r}): a policy that chooses among workloads needs a hook")
    spec = tuple((h, hooks[h]) for h in HOOKS if h in hooks)
    cols = _check_columns(name, columns)
    old = _REGISTRY.get(name)
    if old is not None:
        if old.hooks == spec and old.plain == plain and old.evicts is evicts and old.columns == cols:
            return old
        raise ValueError(f"admission policy {name!r} is already registered")
    code = max((p.code for p in _REGISTRY.values()), default=-1) + 1
    pol = Policy(name, code, plain, spec, evicts, cols)
    _REGISTRY[name] = pol
    return pol


def _check_columns(name: str, columns: Columns | None) -> tuple[tuple[str, Callable[[Any, Any], int]], ...]:
    """``columns`` as (name, fn) pairs in ``COLUMNS`` order; a name outside ``COLUMNS`` (the kernel's
    own state, or a typo) or a value that is not a function is one line naming it."""
    if columns is None:
        return ()
    if not isinstance(columns, dict):
        raise ValueError(f"register_policy({name!r}): columns: expected {{column: fn(pool, workload)}}, "
                         f"got {type(columns).__name__}")
    for col, fn in columns.items():
        if col not in COLUMNS:
            raise ValueError(f"register_policy({name!r}): columns: unknown column {col!r}; a policy's columns "
                             f"are {', '.join(COLUMNS)}")
        if not callable(fn):
            raise ValueError(f"register_policy({name!r}): columns: {col!r}: expected a function of "
                             f"(pool, workload), got {type(fn).__name__}")
    return tuple((c, columns[c]) for c in COLUMNS if c in columns)


def unregister(name: str) -> None:
    """Remove a policy registered from outside the package (a test's); the built-ins stay."""
    pol = _REGISTRY.get(name)
    if pol is not None and _is_builtin(pol):
        raise ValueError(f"{name!r} is a built-in admission policy")
    _REGISTRY.pop(name, None)


def _is_builtin(pol: Policy) -> bool:
    return all(isinstance(fn, str) and fn.startswith(KERNEL + ":") for _, fn in pol.hooks)


def names() -> tuple[str, ...]:
    """The registered policies' names, in code order."""
    _builtins()
    return tuple(sorted(_REGISTRY, key=lambda n: _REGISTRY[n].code))


def get(name: str) -> Policy:
    _builtins()
    return _REGISTRY[name]


def check_name(name: object) -> str:
    """``name`` if a policy of that name is registered, else a ``ValueError`` listing the names."""
    known = names()
    if name not in known:
        raise ValueError(f"expected a registered admission policy ({', '.join(repr(n) for n in known)}), got {name!r}")
    return str(name)


class _Choosing:
    """The registered policies that choose among a pool's workloads (not plain queues), read live:
    ``name in CHOOSING``."""

    def __contains__(self, name: object) -> bool:
        _builtins()
        pol = _REGISTRY.get(name) if isinstance(name, str) else None
        return pol is not None and not pol.plain

    def __iter__(self) -> Iterator[str]:
        return iter([n for n in names() if not _REGISTRY[n].plain])


CHOOSING = _Choosing()


# --- the kernel's dispatch ---------------------------------------------------------------------
def _ref(fn: Hook) -> tuple[str, str]:
    """(module, function name) of a hook."""
    if isinstance(fn, str):
        mod, _, attr = fn.partition(":")
        return mod, attr
    return fn.__module__, fn.__qualname__


def _alias(policy: Policy, hook: str) -> str:
    return f"_h{policy.code}_{hook}"


def dispatch_source() -> str:
    """The text of the generated dispatch: per hook, one function branching on the policy code."""
    pols = [get(n) for n in names()]
    lines = []
    for hook, (args, default) in HOOKS.items():
        lines.append(f"def policy_{hook}(policy, {args}):")
        for pol in pols:
            if hook in dict(pol.hooks):
                lines.append(f"    if policy == {pol.code}:")
                lines.append(f"        return {_alias(pol, hook)}({args})")
        lines.append(f"    return {default}".rstrip())
        lines.append("")
    lines.append("def policy_queue(policy):")  # how the kernel keeps the pool's queue (CHOOSES, LISTS, KEYED)
    for pol in pols:
        if pol.plain:
            lines.append(f"    if policy == {pol.code}:")
            lines.append(f"        return {KEYED if pol.keyed else LISTS}")
    lines.append(f"    return {CHOOSES}")
    lines.append("")
    return "\n".join(lines)


def fingerprint() -> str:
    """A hash of what the generated dispatch compiles: the names, codes, hook references, the
    dispatch's text and the bytes of every hook's file but the kernel's (numba checks that one)."""
    h = hashlib.sha256(dispatch_source().encode())
    files = set()
    for n in names():
        pol = _REGISTRY[n]
        h.update(f"{n}\0{pol.code}\0{pol.plain}\0".encode())
        for hook, fn in pol.hooks:
            mod, attr = _ref(fn)
            h.update(f"{hook}\0{mod}\0{attr}\0".encode())
            if mod != KERNEL:
                files.add(_file_of(fn, mod))
    for path in sorted(files):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _file_of(fn: Hook, mod: str) -> Path:
    if not isinstance(fn, str):
        return Path(inspect.getfile(fn)).resolve()
    module = sys.modules.get(mod) or importlib.import_module(mod)
    return Path(inspect.getfile(module)).resolve()


def dispatchers(kernel_globals: dict[str, Any], njit: Callable[..., Any]) -> tuple[Callable[..., Any], ...]:
    """The generated dispatch functions, in ``HOOKS`` order, for the kernel module whose globals are
    ``kernel_globals`` (a hook of the kernel's own module resolves there: the compiled build's or its
    plain twin's), then ``policy_queue``; ``njit``: the kernel's ``_jit.njit`` (numba's, or the plain
    shim), which compiles each dispatch and each outside hook inline where it is called (the kernel's
    hot path)."""
    ns: dict[str, Any] = {}
    for n in names():
        pol = _REGISTRY[n]
        for hook, fn in pol.hooks:
            mod, attr = _ref(fn)
            if mod == KERNEL:
                ns[_alias(pol, hook)] = kernel_globals[attr]
            else:
                target = fn if not isinstance(fn, str) else getattr(importlib.import_module(mod), attr)
                ns[_alias(pol, hook)] = njit(inline="always")(target)
    exec(compile(dispatch_source(), "<admission policy dispatch>", "exec"), ns)  # our own text, from the registry
    return tuple(njit(inline="always")(ns[f"policy_{hook}"]) for hook in (*HOOKS, "queue"))
