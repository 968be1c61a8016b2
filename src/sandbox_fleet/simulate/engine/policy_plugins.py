"""Admission policies from outside the package, loaded where a scenario asks for them.

A policy registers itself when its module is imported (``policy_registry.register_policy``). A
scenario reaches such a policy in two ways, both before its fleets are validated (the fleet model
checks ``admission`` against the registry):

- **An entry point** (Python's standard plug-in mechanism): an installed distribution declares, in
  group ``sandbox_fleet.policies`` (``ENTRY_POINTS``), an entry named after the policy whose value is
  the module that registers it (``"my_policies"``), or a function of it that registers it, called
  with no arguments (``"my_policies:register"``). A scenario naming an admission policy that is not
  registered loads the entry of that name, and only that one (``pyproject.toml``:
  ``[project.entry-points."sandbox_fleet.policies"]`` ``longest-queue-first = "my_policies"``).
- **An explicit list**: ``[run] plugins = ["my_policies"]``, modules imported first, in order (a
  module on ``PYTHONPATH`` that is not installed as a distribution).

A module that cannot be imported, raises, or does not register the policy it was loaded for is one
``InputError`` line naming the scenario's key and the module.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine import policy_registry

#: the entry-point group an installed distribution declares its admission policies in
ENTRY_POINTS = "sandbox_fleet.policies"


def load_for(data: dict, source: str) -> None:
    """Load what scenario ``data`` (its parsed tables) needs from outside: ``[run] plugins``, then the
    entry point of every admission policy it names that is not registered. Values of the wrong type
    are left to the scenario's validation, which words them."""
    run = data.get("run")
    plugins = run.get("plugins") if isinstance(run, dict) else None
    if isinstance(plugins, list) and all(isinstance(m, str) for m in plugins):
        for i, module in enumerate(plugins):
            _import(module, f"{source}: key 'run.plugins.{i}'")
    for key, name in _admissions(data):
        if name not in policy_registry.names():
            load_policy(name, f"{source}: key '{key}'")


def _admissions(data: dict) -> list[tuple[str, str]]:
    """(key path, name) of every ``admission`` the scenario's fleets give as text."""
    out = []
    fleet, fleets = data.get("fleet"), data.get("fleets")
    if isinstance(fleet, dict) and isinstance(fleet.get("admission"), str):
        out.append(("fleet.admission", fleet["admission"]))
    if isinstance(fleets, list):
        for i, f in enumerate(fleets):
            if isinstance(f, dict) and isinstance(f.get("admission"), str):
                out.append((f"fleets.{i}.admission", f["admission"]))
    return out


def load_policy(name: str, where: str) -> bool:
    """Load the entry point that registers admission policy ``name`` (group ``ENTRY_POINTS``); whether
    there was one. ``where`` starts the error line (the file and key that named the policy)."""
    found = [ep for ep in entry_points(group=ENTRY_POINTS) if ep.name == name]
    if not found:
        return False
    ep = found[0]
    what = f"entry point {ep.name!r} ({ep.value}, group {ENTRY_POINTS})"
    try:
        target = ep.load()
        if ep.attr:  # "module:function": the function registers
            target()
    except Exception as exc:  # a plug-in's failure, whatever it is, is one line naming it
        raise InputError(f"{where}: {what} failed: {_one_line(exc)}") from None
    if name not in policy_registry.names():
        raise InputError(f"{where}: {what} did not register admission policy {name!r}")
    return True


def _import(module: str, where: str) -> None:
    try:
        importlib.import_module(module)
    except Exception as exc:  # ImportError, or whatever the module raises while it registers
        raise InputError(f"{where}: cannot load plug-in module {module!r}: {_one_line(exc)}") from None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
