"""The envelope every stage output shares, and the one reader that refuses the wrong one.

Each output kind is a Pydantic model next to its producer (``measure.model``, ``plan.model``,
``simulate.model``, ``sweep.model``, ``report.checks.model``); each subclasses ``Summary`` and
names its ``KIND`` and ``VERSION``. A reader accepts ``schema_version`` 1 up to the model's own
(keys an older version lacks read as null) and refuses a newer version or another kind in one
line naming what was given and what was expected. The figure blocks measure and simulate both
write (concurrency, holds, outcomes) declare their shared figures here, once, as protocols.
This module imports nothing from the stages.
"""

import json
import math
import types
import typing
from pathlib import Path
from typing import Any, ClassVar, Optional, Protocol, TypeVar, Union

from pydantic import BaseModel, ConfigDict, ValidationError

from sandbox_fleet.errors import InputError
from sandbox_fleet.safeparse import iso_instant

#: Every kind of output, in pipeline order (optimize searches over the others).
KINDS = ("measure", "plan", "simulate", "sweep", "checks", "optimize", "backtest")


class Block(BaseModel):
    """A nested object of a summary: closed (an unknown key is a producer bug), every figure nullable."""

    # protected_namespaces off: Pydantic checks every field name of every class against its
    # namespaces at class creation (~300 fields per stage model, paid by every command that
    # imports one); a field that shadowed a BaseModel method would break the model's own tests.
    model_config = ConfigDict(extra="forbid", defer_build=True, protected_namespaces=())


class Summary(Block):
    """A top-level output: ``schema_version`` and ``kind`` first, then the kind's own figures."""

    KIND: ClassVar[str] = ""
    VERSION: ClassVar[int] = 1

    schema_version: int
    kind: str

    @classmethod
    def build(cls, **figures: Any):
        """The producer's constructor: stamps this kind and version, validates every figure."""
        return cls.model_validate({"schema_version": cls.VERSION, "kind": cls.KIND, **figures})

    def to_json(self) -> dict[str, Any]:
        """JSON-native values (plain lists, ints, floats, None), in the model's field order."""
        return self.model_dump(mode="json")


S = TypeVar("S", bound=Summary)


# --- the blocks measure and simulate share ---------------------------------------------------
# measure writes what a fleet did and simulate what a modelled fleet would do, under the same keys
# for the same figures (docs/simulate.md). The figures both blocks carry are declared once here;
# code that reads either kind takes these types. They are protocols, not a Pydantic base: a base's
# fields come first in a subclass, and each block keeps its own published key order
# (tests/test_one_of_each.py checks both models declare every figure below with its type).


class ConcurrencyFigures(Protocol):
    """Concurrent sandboxes over the run's span (sweep line over [start, finish))."""

    mean: Optional[float]
    peak: Optional[int]
    #: separate times the peak was reached
    touches: Optional[int]
    time_at_peak_s: Optional[float]
    span_s: Optional[float]


class HoldFigures(Protocol):
    """Sandbox hold time (finish - start), seconds: its order statistics over ``rows`` rollouts."""

    rows: Optional[int]
    min: Optional[float]
    median: Optional[float]
    mean: Optional[float]
    p90: Optional[float]
    p99: Optional[float]
    max: Optional[float]


class OutcomeFigures(Protocol):
    """How the rollouts ended: those that raised an exception, of ``rows``."""

    rows: Optional[int]
    exceptions: Optional[int]
    exception_rate: Optional[float]


def parse(model: type[S], data: Any, where: str = "input") -> S:
    """``data`` (a decoded JSON object) as ``model``; InputError (one line) when it is not one.

    A version-1 document written before ``kind`` existed is taken as the expected kind; its closed
    top level still refuses another kind's keys.
    """
    expected = f"a {model.KIND} summary (kind {model.KIND!r}, schema_version 1..{model.VERSION})"
    if isinstance(data, model):
        return data
    if isinstance(data, Summary):  # another kind's model: judged by its envelope like its JSON
        data = data.to_json()
    if not isinstance(data, dict):
        raise InputError(f"{where}: expected {expected}, found a JSON {type(data).__name__}")
    version, kind = data.get("schema_version"), data.get("kind")
    if isinstance(version, bool) or not isinstance(version, int):
        raise InputError(f"{where}: schema_version {version!r}; expected {expected}")
    if kind is None and version == 1:
        data = {**data, "kind": model.KIND}
    elif kind != model.KIND:
        raise InputError(f"{where}: kind {kind!r}; expected {expected}")
    if not 1 <= version <= model.VERSION:
        raise InputError(f"{where}: schema_version {version} of kind {kind!r} is not readable here; expected {expected}"
                         + (" (upgrade sandbox-fleet)" if version > model.VERSION else ""))
    try:
        parsed = model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "<top>"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise InputError(f"{where}: key {key}: {err['msg']}, got {err.get('input')!r:.60}{more}; "
                         f"expected {expected}") from None
    bad = _bad_figure(parsed, "")
    if bad is not None:
        raise InputError(f"{where}: key {bad[0]}: {bad[1]}; expected {expected}")
    return parsed


#: The largest count a summary may carry: an int64, the most NumPy, Arrow and DuckDB hold.
MAX_COUNT = 2**63 - 1


def _bad_figure(node: BaseModel, prefix: str) -> tuple[str, str] | None:
    """The first figure of a summary read back that no producer writes: a number that is not finite
    (the writer turns those into null, so a NaN or an infinity was forged or corrupted), or a count
    (a field typed whole numbers only: nodes, GPUs, rows, the target) below 0 or past ``MAX_COUNT``.
    (key, what is wrong), or None. One range check for every model read from a file."""
    for name, field in type(node).model_fields.items():
        bad = _bad_value(getattr(node, name), _counts_only(field.annotation), prefix + name)
        if bad is not None:
            return bad
    return None


def _bad_value(value: Any, counts: bool, key: str) -> tuple[str, str] | None:
    if isinstance(value, BaseModel):
        return _bad_figure(value, key + ".")
    if isinstance(value, dict):
        items: Any = ((f"{key}.{k}", v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"{key}[{i}]", v) for i, v in enumerate(value))
    elif isinstance(value, float) and not math.isfinite(value):
        return key, f"{value} is not a finite number (a figure not measured is null)"
    elif counts and isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= MAX_COUNT:
        return key, f"{value} is not a count (a whole number from 0 to {MAX_COUNT:,})"
    else:
        return None
    for sub, v in items:
        bad = _bad_value(v, counts, sub)
        if bad is not None:
            return bad
    return None


_COUNTS_ONLY: dict[Any, bool] = {}


def _counts_only(annotation: Any) -> bool:
    """Whether a field's type holds whole numbers only (``int``, ``Optional[int]``, ``list[int]``,
    ``dict[str, int]``...): a count. A union with floats or text (a sweep cell, an assumption's
    value) may be signed and is not."""
    try:
        return _COUNTS_ONLY[annotation]
    except (KeyError, TypeError):
        pass
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is dict:
        args = args[1:]
    result = annotation is int or (bool(args) and all(_counts_only(a) for a in args))
    try:
        _COUNTS_ONLY[annotation] = result
    except TypeError:
        pass
    return result


def fingerprint(summary: Summary) -> str:
    """A short, stable digest of ``summary``'s figures: outputs made from it carry it, so a reader
    can tell a plan or an optimize run made from other inputs (the same summary always gives the
    same digest; any changed figure, another)."""
    import hashlib

    text = json.dumps(summary.to_json(), sort_keys=True, separators=(",", ":"), allow_nan=True)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def read_json(path: str | Path, what: str) -> Any:
    """The decoded JSON at ``path``; InputError (one line) when missing, unreadable or not JSON."""
    from sandbox_fleet.safeparse import json_loads, read_text

    return json_loads(read_text(path, f"{what} file"), str(path), f"a {what}")


def load(model: type[S], path: str | Path) -> S:
    """The summary of ``model``'s kind stored at ``path`` (see ``parse``)."""
    return parse(model, read_json(path, f"{model.KIND} summary"), str(path))


def _unwrap(annotation: Any) -> Any:
    """``X`` from ``Optional[X]`` / ``X | None``."""
    if typing.get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def has_path(model: type[BaseModel], dotted: str) -> bool:
    """Whether ``dotted`` (``"concurrency.self_check.area_s"``) names a field of ``model``.

    A map (``by_model``, ``phases``) accepts any key; a list or a scalar ends the path. Only a
    figure named by the user (a sweep ``--metric``) is read by name and checked against this; the
    stages' own consumers read the models by attribute.
    """
    node: Any = model
    for part in dotted.split("."):
        node = _unwrap(node)
        if isinstance(node, type) and issubclass(node, BaseModel):
            if part not in node.model_fields:
                return False
            node = node.model_fields[part].annotation
        elif typing.get_origin(node) is dict:
            node = typing.get_args(node)[1]
        else:
            return False
    return True


def json_schema(model: type[Summary]) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``model``'s output, with its kind and version pinned."""
    schema = _named_by_title(model.model_json_schema(mode="serialization"))
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://sandbox-fleet/schemas/{model.KIND}.schema.json"
    props = schema["properties"]
    props["kind"] = {"const": model.KIND, "title": "Kind", "type": "string"}
    props["schema_version"] = {"const": model.VERSION, "title": "Schema Version", "type": "integer"}
    return dict(sorted(schema.items(), key=lambda kv: (not kv[0].startswith("$"), kv[0])))


def _named_by_title(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each definition keyed by its title, not its Python class name.

    A block whose class name would be ambiguous in the code (``SimulatedConcurrency`` beside
    measure's ``Concurrency``) keeps its published name through ``model_config["title"]``; without
    a title the two are the same and nothing moves.
    """
    defs = schema.get("$defs", {})
    renamed = {key: body.get("title", key) for key, body in defs.items()}
    if all(key == title for key, title in renamed.items()):
        return schema
    if len(set(renamed.values())) != len(renamed):
        raise ValueError(f"two schema definitions share a title: {sorted(renamed.values())}")
    refs = {f"#/$defs/{key}": f"#/$defs/{title}" for key, title in renamed.items()}

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: refs.get(v, v) if k == "$ref" else walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out = walk(schema)
    # Pydantic sorts definitions by key; so do we, by the new keys
    out["$defs"] = dict(sorted((renamed[key], body) for key, body in out["$defs"].items()))
    return out


# --- the telemetry filter a stage's rows were kept by (backtest, simulate) ------------------------
#: One filter, two spellings: the flags every command that reads telemetry takes (``--model``,
#: ``--since``, ``--until``) and a scenario's ``[filter]`` table (``models``, ``since``, ``until``). Both
#: keep the rows ``telemetry.load.rollout_mask`` keeps; the record says which spelling and where, the
#: values as given and the instants as read (UTC), so an output says which rows it describes.
class TelemetryFilter(Block):
    """Which rollouts of the telemetry read were kept: those of ``models`` started in [``since``, ``until``)."""

    #: "flags" (--model / --since / --until) or "scenario" (the scenario file's [filter] table)
    source: Optional[str] = None
    #: the scenario file whose [filter] it is (source "scenario")
    scenario: Optional[str] = None
    models: Optional[list[str]] = None
    since: Optional[str] = None
    until: Optional[str] = None
    #: ``since`` and ``until`` as read, ISO-8601 in UTC (a naive time is UTC)
    since_utc: Optional[str] = None
    until_utc: Optional[str] = None


def _utc(text: Optional[str]) -> Optional[str]:
    if text is None:
        return None
    parsed = iso_instant(str(text).strip())
    return parsed.isoformat() if parsed is not None else None


def filter_used(models: Optional[list[str]], since: Optional[str], until: Optional[str], *, source: str = "flags",
                scenario: Optional[str] = None) -> Optional[TelemetryFilter]:
    """The record of a filter (None when nothing is filtered)."""
    if not models and since is None and until is None:
        return None
    return TelemetryFilter(source=source, scenario=scenario, models=list(models) if models else None, since=since,
                           until=until, since_utc=_utc(since), until_utc=_utc(until))
