"""A catalog of ``[[TABLE]]`` entries (providers, substrates) read from the bundled data or a user's file.

Every bad entry is one InputError naming the file, the entry and the key, so the CLI prints one line.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from sandbox_fleet.errors import InputError
from sandbox_fleet.safeparse import read_text, toml_loads

M = TypeVar("M", bound=BaseModel)


def load_entries(path: str | Path | None, bundled: str, table: str, model: type[M]) -> list[M]:
    """The ``[[table]]`` entries of ``data/<bundled>`` (``path`` None) or of ``path``, validated by ``model``."""
    if path is None:
        text = resources.files("sandbox_fleet").joinpath(f"data/{bundled}").read_text(encoding="utf-8")
        source = f"bundled {bundled}"
    else:
        p = Path(path)
        if not p.exists():  # anything else that is no regular file: refused by read_text, by kind
            raise InputError(f"{p}: {table} catalog not found; expected a TOML file of [[{table}]] tables")
        text, source = read_text(p, f"{table} catalog"), str(p)
    doc = toml_loads(text, source)
    raw = doc.get(table)
    if set(doc) - {table} or not isinstance(raw, list) or not raw:
        raise InputError(f"{source}: expected only [[{table}]] tables, at least one")
    out: list[M] = []
    for i, entry in enumerate(raw):
        try:
            out.append(model.model_validate(entry))
        except ValidationError as exc:
            err = exc.errors()[0]
            key = ".".join(str(x) for x in err["loc"]) or "?"
            name = entry.get("name", f"#{i + 1}") if isinstance(entry, dict) else f"#{i + 1}"
            raise InputError(f"{source}: {table} {name!r}, key {key!r}: {err['msg']}") from None
    names = [entry["name"] for entry in raw]  # every entry validated: each has a name
    if len(set(names)) != len(names):
        raise InputError(f"{source}: a {table} name appears twice")
    return out
