"""Scenario data back to TOML: tables of scalars, with distributions as inline tables."""

from __future__ import annotations

import json
import math


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"cannot write {v} to TOML")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a valid TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_value(x)}" for k, x in v.items()) + " }"
    raise ValueError(f"cannot write {type(v).__name__} to TOML")


def dumps(data: dict, header: list[str] | None = None) -> str:
    """``data`` (top-level scalars, then one ``[table]`` per dict) as TOML text."""
    lines = [f"# {h}" for h in header or []]
    for k, v in data.items():
        if not isinstance(v, dict):
            lines.append(f"{k} = {_value(v)}")
    for k, v in data.items():
        if isinstance(v, dict):
            lines += ["", f"[{k}]"] + [f"{kk} = {_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"
