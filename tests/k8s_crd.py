"""Validate objects against real CustomResourceDefinitions the way a Kubernetes API server does.

The CRDs are read unchanged from ``../shared/crds`` beside the repository (its SOURCES names the
upstream commits; CI has it beside the clone), or from ``$SANDBOX_FLEET_CRDS``. For an object:

- ``apiVersion`` / ``kind`` must name a served version of the CRD; a version marked ``deprecated``
  (or carrying a ``deprecationWarning``) is an error, as the warning a client would print;
- metadata as the API server checks it: a DNS-1123 subdomain name, a namespace exactly when the CRD
  is namespaced, label keys and values of valid syntax;
- the version's ``openAPIV3Schema`` structurally, strict: an unknown field is an error (``kubectl
  apply --validate=strict``), as are wrong types, ``enum``, ``pattern``, lengths, bounds, int32 /
  int64 ranges, ``required``, list-map and set uniqueness, ``anyOf`` / ``allOf`` / ``oneOf`` / ``not``;
- schema ``default``s applied before validation (top-down, into defaulted values too), returned;
- every ``x-kubernetes-validations`` CEL rule on a present node evaluated with ``cel-python``
  plus the Kubernetes CEL library functions these CRDs call that it lacks (``split``, ``find``,
  ``lowerAscii``, ``upperAscii``, ``indexOf``, ``lastIndexOf``, ``join``, ``trim``, ``replace``);
  transition rules (those reading ``oldSelf``) are skipped, as on create. A rule that does not
  compile, raises or returns a non-boolean is an error: no rule is passed without being evaluated.

``validate`` returns the defaulted object and a report of the rules evaluated and skipped.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def crd_root() -> Path | None:
    """The CRD folder: $SANDBOX_FLEET_CRDS, else ../shared/crds beside the repository."""
    env = os.environ.get("SANDBOX_FLEET_CRDS")
    path = Path(env) if env else ROOT.parent / "shared" / "crds"
    return path if (path / "SOURCES").is_file() else None


class Invalid(AssertionError):
    """The API server would refuse the object (or warn about it)."""


@dataclass
class Report:
    evaluated: list[str] = field(default_factory=list)
    skipped_transition: list[str] = field(default_factory=list)


@cache
def _load(path: str) -> dict:
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def crds(cluster_set: str) -> dict[tuple[str, str], dict]:
    """(group, kind) -> CRD document, for one of the folder's sets (set-aws, set-azure, set-upstream)."""
    root = crd_root()
    if root is None:
        raise FileNotFoundError("no CRD folder (../shared/crds or $SANDBOX_FLEET_CRDS)")
    out = {}
    for f in sorted((root / cluster_set).glob("*.yaml")):
        doc = _load(str(f))
        out[(doc["spec"]["group"], doc["spec"]["names"]["kind"])] = doc
    return out


# --- metadata ---------------------------------------------------------------------------------

_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def check_label_key(key: str, where: str) -> None:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix)):
        raise Invalid(f"{where}: label/annotation key {key!r}: prefix is not a DNS-1123 subdomain")
    if not name or len(name) > 63 or not _NAME_PART.fullmatch(name):
        raise Invalid(f"{where}: label/annotation key {key!r}: name part is not valid")


def check_metadata(obj: dict, namespaced: bool, where: str) -> None:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise Invalid(f"{where}: metadata missing")
    name = meta.get("name")
    if not isinstance(name, str) or len(name) > 253 or not _SUBDOMAIN.fullmatch(name):
        raise Invalid(f"{where}: metadata.name {name!r} is not a DNS-1123 subdomain")
    ns = meta.get("namespace")
    if namespaced and not (isinstance(ns, str) and len(ns) <= 63 and _LABEL.fullmatch(ns)):
        raise Invalid(f"{where}: namespaced object needs a DNS-1123 label namespace, got {ns!r}")
    if not namespaced and ns is not None:
        raise Invalid(f"{where}: cluster-scoped object has a namespace {ns!r}")
    for key, value in (meta.get("labels") or {}).items():
        check_label_key(key, f"{where}.metadata.labels")
        if not isinstance(value, str) or len(value) > 63 or (value and not _NAME_PART.fullmatch(value)):
            raise Invalid(f"{where}.metadata.labels[{key!r}]: value {value!r} is not a valid label value")
    for key, value in (meta.get("annotations") or {}).items():
        check_label_key(key, f"{where}.metadata.annotations")
        if not isinstance(value, str):
            raise Invalid(f"{where}.metadata.annotations[{key!r}]: not a string")
    unknown = set(meta) - {"name", "namespace", "labels", "annotations"}
    if unknown:
        raise Invalid(f"{where}.metadata: fields this tool must not set: {sorted(unknown)}")


# --- defaults ---------------------------------------------------------------------------------


def apply_defaults(value, schema: dict):
    """Schema defaults filled in top-down (a defaulted object gets its own properties' defaults)."""
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                value[key] = apply_defaults(value[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in value:
                if key not in (schema.get("properties") or {}):
                    value[key] = apply_defaults(value[key], extra)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [apply_defaults(v, schema["items"]) for v in value]
    return value


# --- structural validation ----------------------------------------------------------------------

_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def _type_ok(value, kind: str | None, schema: dict) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    if kind is None:
        return True
    return {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
    }[kind](value)


def _check_value(value, schema: dict, where: str) -> None:
    if value is None:
        if schema.get("nullable"):
            return
        raise Invalid(f"{where}: null")
    if not _type_ok(value, schema.get("type"), schema):
        raise Invalid(f"{where}: expected {schema.get('type') or 'int-or-string'}, got {type(value).__name__} {value!r}")
    if "enum" in schema and value not in schema["enum"]:
        raise Invalid(f"{where}: {value!r} not one of {schema['enum']}")
    if isinstance(value, str):
        if "pattern" in schema and not re.search(schema["pattern"], value):
            raise Invalid(f"{where}: {value!r} does not match {schema['pattern']!r}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise Invalid(f"{where}: longer than {schema['maxLength']}")
        if "minLength" in schema and len(value) < schema["minLength"]:
            raise Invalid(f"{where}: shorter than {schema['minLength']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and (value < schema["minimum"] or (schema.get("exclusiveMinimum") and value == schema["minimum"])):
            raise Invalid(f"{where}: {value} below minimum {schema['minimum']}")
        if "maximum" in schema and (value > schema["maximum"] or (schema.get("exclusiveMaximum") and value == schema["maximum"])):
            raise Invalid(f"{where}: {value} above maximum {schema['maximum']}")
        lo_hi = _INT_RANGE.get(schema.get("format", ""))
        if lo_hi and isinstance(value, int) and not (lo_hi[0] <= value <= lo_hi[1]):
            raise Invalid(f"{where}: {value} out of {schema['format']} range")


def _check_list(value: list, schema: dict, where: str) -> None:
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        raise Invalid(f"{where}: more than {schema['maxItems']} items")
    if "minItems" in schema and len(value) < schema["minItems"]:
        raise Invalid(f"{where}: fewer than {schema['minItems']} items")
    kind = schema.get("x-kubernetes-list-type")
    if kind == "set" and len({repr(v) for v in value}) != len(value):
        raise Invalid(f"{where}: duplicate items in a set list")
    if kind == "map":
        keys = [tuple(repr(v.get(k)) for k in schema.get("x-kubernetes-list-map-keys", [])) for v in value]
        if len(set(keys)) != len(keys):
            raise Invalid(f"{where}: duplicate map keys {schema.get('x-kubernetes-list-map-keys')}")


def _check_object(value: dict, schema: dict, where: str) -> None:
    props = schema.get("properties") or {}
    for key in schema.get("required", []):
        if key not in value:
            raise Invalid(f"{where}: required field {key!r} missing")
    extra = schema.get("additionalProperties")
    if not props and extra is None and schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    for key in value:
        if key not in props and not isinstance(extra, dict) and extra is not True \
                and not schema.get("x-kubernetes-preserve-unknown-fields"):
            raise Invalid(f"{where}: unknown field {key!r} (strict field validation)")
    for bound, test in (("maxProperties", lambda n, b: n > b), ("minProperties", lambda n, b: n < b)):
        if bound in schema and test(len(value), schema[bound]):
            raise Invalid(f"{where}: {bound} {schema[bound]}")


def _walk(value, schema: dict, where: str, report: Report) -> None:
    _check_value(value, schema, where)
    for sub in schema.get("allOf", []):
        _walk(value, sub, where, report)
    if "anyOf" in schema and not any(_passes(value, s) for s in schema["anyOf"]):
        raise Invalid(f"{where}: matches none of anyOf")
    if "oneOf" in schema and sum(_passes(value, s) for s in schema["oneOf"]) != 1:
        raise Invalid(f"{where}: does not match exactly one of oneOf")
    if "not" in schema and _passes(value, schema["not"]):
        raise Invalid(f"{where}: matches 'not'")
    if isinstance(value, dict):
        _check_object(value, schema, where)
        props, extra = schema.get("properties") or {}, schema.get("additionalProperties")
        for key, sub_value in value.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            if sub is not None:
                _walk(sub_value, sub, f"{where}.{key}", report)
    elif isinstance(value, list):
        _check_list(value, schema, where)
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                _walk(item, schema["items"], f"{where}[{i}]", report)
    for rule in schema.get("x-kubernetes-validations", []):
        evaluate_rule(rule, value, where, report)


def _passes(value, schema: dict) -> bool:
    try:
        _walk(value, schema, "", Report())
    except Invalid:
        return False
    return True


# --- CEL ----------------------------------------------------------------------------------------


def _k8s_functions() -> dict:
    """Kubernetes' CEL string and regex library functions, which cel-python does not define."""
    from celpy import celtypes

    def s(x) -> str:
        return str(x)

    def strings(xs) -> celtypes.ListType:
        return celtypes.ListType([celtypes.StringType(x) for x in xs])

    def find(text, pattern):
        m = re.search(s(pattern), s(text))
        return celtypes.StringType(m.group(0) if m else "")

    return {
        "split": lambda text, sep, n=None: strings(s(text).split(s(sep)) if n is None else s(text).split(s(sep), int(n) - 1)),
        "find": find,
        "lowerAscii": lambda text: celtypes.StringType(s(text).lower()),
        "upperAscii": lambda text: celtypes.StringType(s(text).upper()),
        "indexOf": lambda text, sub: celtypes.IntType(s(text).find(s(sub))),
        "lastIndexOf": lambda text, sub: celtypes.IntType(s(text).rfind(s(sub))),
        "join": lambda xs, sep="": celtypes.StringType(s(sep).join(s(x) for x in xs)),
        "trim": lambda text: celtypes.StringType(s(text).strip()),
        "replace": lambda text, old, new: celtypes.StringType(s(text).replace(s(old), s(new))),
    }


def cel_go_syntax(rule: str) -> str:
    """``rule`` with the trailing commas cel-go's grammar allows in list and map literals
    (``[a, b, ]``) removed, outside string literals: cel-python's parser does not accept them."""
    out, quote, i = [], None, 0
    while i < len(rule):
        c = rule[i]
        if quote:
            out.append(c)
            if c == "\\" and i + 1 < len(rule):
                out.append(rule[i + 1])
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
            out.append(c)
        elif c in "]}" and "".join(out).rstrip().endswith(","):
            text = "".join(out).rstrip()
            out = [text[:-1], c]
        else:
            out.append(c)
        i += 1
    return "".join(out)


@cache
def _program(rule: str):
    import celpy

    env = celpy.Environment()
    return env.program(env.compile(cel_go_syntax(rule)), functions=_k8s_functions())


def evaluate_rule(rule: dict, value, where: str, report: Report) -> None:
    import celpy
    from celpy import celtypes

    text = rule["rule"]
    label = f"{where}: {text}"
    if re.search(r"\boldSelf\b", text):
        report.skipped_transition.append(label)  # a transition rule: no old object on create
        return
    try:
        result = _program(text).evaluate({"self": celpy.json_to_cel(value)})
    except Exception as exc:
        raise Invalid(f"{label}: not evaluated ({type(exc).__name__}: {exc})") from None
    if not isinstance(result, celtypes.BoolType):
        raise Invalid(f"{label}: not evaluated (result {result!r})")
    report.evaluated.append(label)
    if not result:
        raise Invalid(f"{label}: rule failed: {rule.get('message', '')}")


# --- objects ------------------------------------------------------------------------------------


def validate(obj: dict, cluster_set: str) -> tuple[dict, Report]:
    """The object as the API server stores it on create (defaults applied), and the rules evaluated;
    ``Invalid`` for anything it would refuse or warn about."""
    group, _, version = obj.get("apiVersion", "").rpartition("/")
    kind = obj.get("kind")
    where = f"{kind}/{(obj.get('metadata') or {}).get('name')}"
    crd = crds(cluster_set).get((group, kind))
    if crd is None:
        raise Invalid(f"{where}: no CRD for {group}/{kind} in {cluster_set}")
    served = {v["name"]: v for v in crd["spec"]["versions"] if v.get("served")}
    if version not in served:
        raise Invalid(f"{where}: version {version!r} is not served (served: {sorted(served)})")
    v = served[version]
    if v.get("deprecated") or v.get("deprecationWarning"):
        raise Invalid(f"{where}: deprecation warning: {v.get('deprecationWarning') or version + ' is deprecated'}")
    check_metadata(obj, crd["spec"]["scope"] == "Namespaced", where)
    schema = copy.deepcopy(v["schema"]["openAPIV3Schema"])
    # metadata is ObjectMeta, checked above; the CRD's schema may only say "type: object"
    schema.setdefault("properties", {})["metadata"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    report = Report()
    stored = apply_defaults(copy.deepcopy(obj), schema)
    _walk(stored, schema, where, report)
    return stored, report
