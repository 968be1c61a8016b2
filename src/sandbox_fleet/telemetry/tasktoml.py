"""Parse one task.toml into a resource request (the TASK_SCHEMA fields it carries)."""

from __future__ import annotations

import math
import re
from typing import Any

from sandbox_fleet.errors import InputError
from sandbox_fleet.safeparse import toml_loads
from sandbox_fleet.telemetry.tomlfast import loads_flat

#: Field order of a parsed request (cache files store exactly these).
REQUEST_FIELDS = ("cpus", "memory_mb", "storage_mb", "gpus", "build_timeout_s", "agent_timeout_s", "verifier_timeout_s")

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:IB|I|B)?\s*$", re.IGNORECASE)
_MB_PER = {"": 1 / (1024 * 1024), "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def size_to_mb(text: str, where: str, key: str) -> int | None:
    """Legacy sizes such as "2G" or "512M" in MB (binary: 1G = 1024 MB; no unit = bytes), rounded up."""
    m = _SIZE_RE.match(text)
    if not m:
        raise InputError(f"{where}: {key} = {text!r}, expected a size such as \"2G\" or \"512M\"")
    mb = float(m.group(1)) * _MB_PER[m.group(2).upper()]
    if not (0 < mb <= LIMITS["storage_mb"]):
        return None
    return math.ceil(mb - 1e-9)


#: A task.toml larger than this is not a task description (refused, never parsed).
MAX_TOML_BYTES = 1 << 20
#: Values outside (0, limit] are no request a node could meet: read as null, never raised.
#: gpus may be 0.
LIMITS = {"cpus": 4096.0, "memory_mb": 1 << 30, "storage_mb": 1 << 40, "gpus": 1024,
          "build_timeout_sec": 1e9, "timeout_sec": 1e9}


def _number(table: dict, key: str, where: str, section: str, integer: bool = False) -> float | int | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where}: [{section}] {key} = {value!r}, expected a number")
    if not _in_range(key, value):
        return None
    if integer:
        if value != int(value):
            raise InputError(f"{where}: [{section}] {key} = {value!r}, expected a whole number")
        return int(value)
    return float(value)


def _in_range(key: str, value: float) -> bool:
    limit = LIMITS.get(key, 1e18)
    low_ok = value >= 0 if key == "gpus" else value > 0
    return math.isfinite(value) and low_ok and value <= limit


def _section(doc: dict, name: str, where: str) -> dict:
    sec = doc.get(name) or {}
    if not isinstance(sec, dict):
        raise InputError(f"{where}: [{name}] is not a table")
    return sec


def _size(env: dict, new_key: str, legacy_key: str, where: str) -> int | None:
    mb = _number(env, new_key, where, "environment", integer=True)
    if mb is not None:
        return int(mb)  # integer=True: already an int; int() tells the checker
    legacy = env.get(legacy_key)
    if legacy is None:
        return None
    if isinstance(legacy, str):
        return size_to_mb(legacy, where, f"[environment] {legacy_key}")
    raise InputError(f"{where}: [environment] {legacy_key} = {legacy!r}, expected a size such as \"2G\"")


_WANTED = ("environment", "agent", "verifier")


def _values(doc: dict, section: str) -> list:
    sec = doc.get(section)
    return list(sec.values()) if isinstance(sec, dict) else []


def check_toml_size(size: int, where: str) -> None:
    """Refuse a task.toml of ``size`` bytes past ``MAX_TOML_BYTES``: called with a member's declared
    size before a byte of it is read (a gzip tar shard inflates what it reads), and on the bytes read."""
    if size > MAX_TOML_BYTES:
        raise InputError(f"{where}: {size:,} bytes, larger than a task.toml can be ({MAX_TOML_BYTES:,})")


def parse_task_toml(data: bytes, where: str) -> dict[str, Any]:
    """Request fields from task.toml bytes; absent keys are None. ``where`` names the file in errors."""
    check_toml_size(len(data), where)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not valid TOML ({exc})") from None
    doc = loads_flat(text)
    if doc is None or any(v is ... for sec in _WANTED for v in _values(doc, sec)):
        doc = toml_loads(text, where)
    env = _section(doc, "environment", where)
    agent = _section(doc, "agent", where)
    verifier = _section(doc, "verifier", where)
    out: dict[str, Any] = {
        "cpus": _number(env, "cpus", where, "environment"),
        "memory_mb": _size(env, "memory_mb", "memory", where),
        "storage_mb": _size(env, "storage_mb", "storage", where),
        "gpus": _number(env, "gpus", where, "environment", integer=True),
        "build_timeout_s": _number(env, "build_timeout_sec", where, "environment"),
        "agent_timeout_s": _number(agent, "timeout_sec", where, "agent"),
        "verifier_timeout_s": _number(verifier, "timeout_sec", where, "verifier"),
    }
    out["out_of_range"] = _out_of_range(env, agent, verifier, out)
    image = env.get("docker_image")  # Harbor's prebuilt image; a Dockerfile's FROM is read beside it
    out["docker_image"] = image.strip() if isinstance(image, str) and image.strip() else None
    return out


_SOURCES = (("cpus", "environment", "cpus"), ("memory_mb", "environment", "memory_mb"),
            ("storage_mb", "environment", "storage_mb"), ("gpus", "environment", "gpus"),
            ("build_timeout_s", "environment", "build_timeout_sec"), ("agent_timeout_s", "agent", "timeout_sec"),
            ("verifier_timeout_s", "verifier", "timeout_sec"))


def _out_of_range(env: dict, agent: dict, verifier: dict, parsed: dict) -> int:
    """How many numeric values the file set that were read as null for being out of range."""
    sections = {"environment": env, "agent": agent, "verifier": verifier}
    n = sum(1 for field, sec, key in _SOURCES if parsed[field] is None and sections[sec].get(key) is not None)
    for field, legacy in (("memory_mb", "memory"), ("storage_mb", "storage")):
        if parsed[field] is None and env.get(field) is None and isinstance(env.get(legacy), str):
            n += 1
    return n
