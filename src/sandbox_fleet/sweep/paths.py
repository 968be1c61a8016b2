"""Dotted paths into a scenario's TOML data, checked against the scenario model.

A key names one leaf of the parsed TOML: ``fleet.cap``, ``hold.median_s``,
``workloads.0.batch`` (array-of-tables entries by index), ``exceptions.p.build``.
``*`` in place of an index means every entry (``workloads.*.batch``). Valid keys are
the fields of the tables the file already has (a ``hold`` table's fields follow its
``dist``) and of tables with defaults (``run``), so a sweep can set an unset field of
an existing table but never invents a table the file does not have.
"""

from __future__ import annotations

import copy
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.scenario.spec import FleetSpec, ScenarioSpec

UNBOUNDED = "unbounded"  # on a fleet's cap: drop the cap and set unbounded = true


def _strip(ann: Any) -> Any:
    """Unwrap Annotated[...] and Optional[...] down to the informative type."""
    while get_origin(ann) is typing.Annotated:
        ann = get_args(ann)[0]
    if get_origin(ann) in (Union, types.UnionType):
        args = [a for a in get_args(ann) if a is not type(None)]
        if len(args) == 1:
            return _strip(args[0])
        stripped = [_strip(a) for a in args]
        if all(isinstance(a, type) and issubclass(a, BaseModel) for a in stripped):
            return Union[tuple(stripped)]
    return ann


def _models(ann: Any) -> list[type[BaseModel]]:
    """The model class(es) a field holds as a table, or [] for a leaf."""
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return [ann]
    if get_origin(ann) in (Union, types.UnionType):
        args = get_args(ann)
        if all(isinstance(a, type) and issubclass(a, BaseModel) for a in args):
            return list(args)
    return []


def _pick(models: list[type[BaseModel]], table: dict) -> type[BaseModel] | None:
    """The union member a table is: the one whose ``dist`` literal matches (or the only one)."""
    if len(models) == 1:
        return models[0]
    for m in models:
        tag = m.model_fields.get("dist")
        if tag is not None and table.get("dist") in get_args(_strip(tag.annotation)):
            return m
    return None


def _leaves(model: type[BaseModel], table: dict, prefix: str, out: dict[str, type[BaseModel]]) -> None:
    for name, field in model.model_fields.items():
        ann = _strip(field.annotation)
        value = table.get(name)
        key = prefix + name
        sub = _models(ann)
        if sub:
            if value is None and isinstance(field.default, BaseModel):
                value = {}  # a table with a default (run) may be set even when the file omits it
            if isinstance(value, dict) and (m := _pick(sub, value)) is not None:
                _leaves(m, value, key + ".", out)
            continue
        if get_origin(ann) is list:
            inner = _models(_strip(get_args(ann)[0]))
            if inner:
                if isinstance(value, list):
                    for i, item in enumerate(value):
                        if isinstance(item, dict) and (m := _pick(inner, item)) is not None:
                            _leaves(m, item, f"{key}.{i}.", out)
                continue
        if get_origin(ann) is dict:
            ktype = _strip(get_args(ann)[0])
            if get_origin(ktype) is Literal:
                for k in get_args(ktype):
                    out[f"{key}.{k}"] = model
                continue
        out[key] = model


def valid_keys(data: dict) -> dict[str, type[BaseModel]]:
    """Every key a sweep may set in this scenario -> the model of the table holding it."""
    out: dict[str, type[BaseModel]] = {}
    _leaves(ScenarioSpec, data, "", out)
    return out


def _grouped(keys: list[str]) -> str:
    groups: dict[str, list[str]] = {}
    for k in keys:
        head, _, tail = k.rpartition(".")
        groups.setdefault(head, []).append(tail)
    return "; ".join(f"{h}.{{{', '.join(t)}}}" if h else ", ".join(t) for h, t in groups.items())


def resolve(data: dict, key: str, source: str = "scenario") -> list[str]:
    """The concrete keys ``key`` names (``*`` expanded); InputError listing valid keys if none."""
    valid = valid_keys(data)
    want = key.split(".")
    hits = [k for k in valid if _match(want, k.split("."))]
    if not hits:
        raise InputError(f"`vary` {key}: unknown key in {source}; valid keys: {_grouped(list(valid))}")
    return hits


def _match(want: list[str], have: list[str]) -> bool:
    return len(want) == len(have) and all(w == h or (w == "*" and h.isdigit()) for w, h in zip(want, have))


def set_value(data: dict, concrete: str, value: Any, model: type[BaseModel]) -> None:
    """Set one resolved key in place (creating a Literal-keyed sub-dict such as ``exceptions.p``)."""
    parts = concrete.split(".")
    node: Any = data
    for p in parts[:-1]:
        if isinstance(node, list):
            node = node[int(p)]
        else:
            node = node.setdefault(p, {})
    leaf = parts[-1]
    if model is FleetSpec and leaf == "cap" and value == UNBOUNDED:
        node.pop("cap", None)
        node["unbounded"] = True
        return
    if model is FleetSpec and leaf == "cap":
        node["unbounded"] = False  # a numeric cap replaces an unbounded base pool
    node[leaf] = value


def apply(data: dict, settings: dict[str, Any], source: str = "scenario") -> dict:
    """A deep copy of ``data`` with every ``key -> value`` of ``settings`` applied."""
    out = copy.deepcopy(data)
    models = valid_keys(data)
    for key, value in settings.items():
        for concrete in resolve(data, key, source):
            set_value(out, concrete, value, models[concrete])
    return out
