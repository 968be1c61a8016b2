"""Reader for Inspect AI eval logs: ``.eval`` archives and ``.json`` logs, or folders of them.

One row per sample and epoch. An ``.eval`` log is a zip whose entries (``header.json``,
``samples/<id>_epoch_<n>.json``) are zstd-compressed (zip method 93), which Python's
zipfile cannot open: each entry is read raw and decompressed with PyArrow's zstd codec.
The mapping is in ``docs/telemetry.md``.
"""

from __future__ import annotations

import json
import re
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry.jsonfile import raw_rows_table
from sandbox_fleet.telemetry.options import ReadOptions, warn_once
from sandbox_fleet.telemetry.progress import track
from sandbox_fleet.telemetry.record import Telemetry

NO_TIMES = "no sample times"
UNREADABLE = "unreadable"
#: Letter scores of Inspect's CORRECT, INCORRECT, PARTIAL, NOANSWER.
LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_ZSTD = 93
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_COLUMNS = ("id", "task_id", "model", "job", "started_at", "finished_at", "input_tokens", "output_tokens",
            "cached_tokens", "turns", "reward", "has_exception", "exception_type")


def is_eval_archive(path: Path) -> bool:
    """A zip holding an Inspect header or journal."""
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
    except (zipfile.BadZipFile, OSError):
        return False
    return "header.json" in names or "_journal/start.json" in names


def is_json_log(path: Path) -> bool:
    """A JSON object whose first keys are Inspect's (version, status, eval)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096).decode("utf-8", "replace")
    except OSError:
        return False
    return head.lstrip().startswith("{") and '"eval"' in head and '"version"' in head and '"status"' in head


def is_log(path: Path) -> bool:
    if path.suffix == ".eval":
        return is_eval_archive(path)
    return path.suffix == ".json" and is_json_log(path)


def log_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return [p for p in sorted(path.iterdir()) if p.is_file() and is_log(p)]


def looks_like_inspect(path: Path) -> bool:
    if path.is_file():
        return is_log(path)
    return path.is_dir() and any(is_log(p) for p in path.iterdir() if p.is_file())


def _entry(raw: Any, info: zipfile.ZipInfo) -> bytes:
    """One zip entry's bytes; zstd through PyArrow, the rest through zipfile's own codecs."""
    raw.seek(info.header_offset)
    fields = _LOCAL_HEADER.unpack(raw.read(_LOCAL_HEADER.size))
    raw.seek(fields[9] + fields[10], 1)  # file name and extra field
    data = raw.read(info.compress_size)
    if info.compress_type == _ZSTD:
        return pa.Codec("zstd").decompress(data, decompressed_size=info.file_size).to_pybytes()
    if info.compress_type == zipfile.ZIP_DEFLATED:
        return zlib.decompress(data, -15)
    if info.compress_type == zipfile.ZIP_STORED:
        return data
    raise ValueError(f"zip compression method {info.compress_type}")


def _read_eval(path: Path) -> tuple[dict, list[tuple[str, Any]]]:
    """(eval spec, [(entry name, sample or the exception that made it unreadable)])."""
    with zipfile.ZipFile(path) as z, open(path, "rb") as raw:
        infos = {i.filename: i for i in z.infolist()}
        head_name = "header.json" if "header.json" in infos else "_journal/start.json"
        header = json.loads(_entry(raw, infos[head_name]))
        samples = []
        for name in sorted(n for n in infos if n.startswith("samples/") and n.endswith(".json")):
            try:
                samples.append((name, json.loads(_entry(raw, infos[name]))))
            except (ValueError, zlib.error, OSError) as exc:
                samples.append((name, exc))
    return header.get("eval") or {}, samples


def _read(path: Path) -> tuple[dict, list[tuple[str, Any]]]:
    try:
        if path.suffix == ".eval":
            return _read_eval(path)
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, KeyError, OSError, zipfile.BadZipFile, zlib.error) as exc:
        raise InputError(f"{path}: not a readable Inspect log ({exc.__class__.__name__}: {exc})") from exc
    if not isinstance(data, dict):
        raise InputError(f"{path}: not an Inspect log (expected a JSON object)")
    return data.get("eval") or {}, [(f"samples[{i}]", s) for i, s in enumerate(data.get("samples") or [])]


def _tokens(usage: Any) -> tuple[int | None, int | None, int | None]:
    """(input incl. cache reads and writes, output, cache reads) summed over models."""
    if not isinstance(usage, dict) or not usage:
        return None, None, None
    inp = out = cached = 0
    any_cached = False
    for u in usage.values():
        if not isinstance(u, dict):
            continue
        read = u.get("input_tokens_cache_read")
        any_cached |= read is not None
        inp += _int(u.get("input_tokens")) + _int(read) + _int(u.get("input_tokens_cache_write"))
        out += _int(u.get("output_tokens"))
        cached += _int(read)
    return inp, out, cached if any_cached else None


def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v else 0


def _score(scores: Any, name: str | None) -> tuple[float | None, bool]:
    """(reward, whether the named scorer was missing)."""
    if not isinstance(scores, dict) or not scores:
        return None, False
    if name is None:
        score = next(iter(scores.values()))
    elif name in scores:
        score = scores[name]
    else:
        return None, True
    value = score.get("value") if isinstance(score, dict) else None
    if isinstance(value, bool):
        return float(value), False
    if isinstance(value, (int, float)):
        return float(value), False
    if isinstance(value, str):
        if value in LETTERS:
            return LETTERS[value], False
        try:
            return float(value), False
        except ValueError:
            return None, False
    return None, False


def _exception(sample: dict) -> tuple[bool, str | None]:
    error = sample.get("error")
    if error:
        message = error.get("message", "") if isinstance(error, dict) else str(error)
        m = re.match(r"^\s*([A-Za-z_][\w.]*)\(", message or "")
        return True, m.group(1) if m else "error"
    limit = sample.get("limit")
    if limit:
        kind = limit.get("type") if isinstance(limit, dict) else None
        return True, f"{kind or 'sample'} limit"
    return False, None


def _times(sample: dict) -> tuple[Any, Any]:
    start, end = sample.get("started_at"), sample.get("completed_at")
    if start and end:
        return start, end
    stamps: list[Any] = [e.get("timestamp") for e in sample.get("events") or [] if isinstance(e, dict) and e.get("timestamp")]
    if stamps:
        # Event timestamps are ISO-8601 with an offset; compare them as instants.
        from datetime import datetime

        order = sorted(stamps, key=lambda s: datetime.fromisoformat(s.replace("Z", "+00:00")))
        return start or order[0], end or order[-1]
    return None, None


def sample_row(sample: dict, spec: dict, score: str | None) -> tuple[dict | None, bool]:
    """The canonical row of one sample (None without times); also whether --score was missing."""
    start, end = _times(sample)
    if not (start and end):
        return None, False
    events = sample.get("events")
    inp, out, cached = _tokens(sample.get("model_usage"))
    reward, missing = _score(sample.get("scores"), score)
    exc, kind = _exception(sample)
    epoch = sample.get("epoch", 1)
    row = {
        "id": f"{spec.get('eval_id') or spec.get('run_id') or spec.get('task')}/{sample.get('id')}/{epoch}",
        "task_id": None if sample.get("id") is None else str(sample.get("id")),
        "model": spec.get("model") or (next(iter(sample.get("model_usage") or {}), None)),
        "job": spec.get("eval_id") or spec.get("task"),
        "started_at": start,
        "finished_at": end,
        "input_tokens": inp,
        "output_tokens": out,
        "cached_tokens": cached,
        "turns": sum(1 for e in events if isinstance(e, dict) and e.get("event") == "model")
        if isinstance(events, list) else None,
        "reward": reward,
        "has_exception": exc,
        "exception_type": kind,
    }
    return row, missing


def _cap(spec: dict) -> int | None:
    config = spec.get("config") or {}
    caps = [v for v in (config.get("max_samples"), config.get("max_sandboxes"))
            if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    return min(caps) if caps else None


def read_inspect(path: Path, opts: ReadOptions, tel: Telemetry) -> pa.Table:
    """Every sample of every log under ``path`` as one canonical-named table."""
    files = log_files(path)
    if not files:
        raise InputError(f"{path}: no Inspect AI log (.eval or .json) found")
    rows: list[dict] = []
    missing_score = 0
    for file in track(files, "reading Inspect logs", opts.progress, min_items=20):
        spec, samples = _read(file)
        cap = _cap(spec)
        job = spec.get("eval_id") or spec.get("task")
        if cap is not None and job:
            tel.caps[job] = cap
        for name, sample in samples:
            if not isinstance(sample, dict):
                tel.reject(UNREADABLE)
                warn_once(tel, f"{file}: sample entry {name} is unreadable; counted as rejected ({UNREADABLE})")
                continue
            row, missing = sample_row(sample, spec, opts.score)
            missing_score += missing
            if row is None:
                tel.reject(NO_TIMES)
                continue
            rows.append(row)
    if missing_score:
        warn_once(tel, f"{path}: {missing_score} sample(s) have no score '{opts.score}' (reward left null; see --score)")
    return raw_rows_table(rows, _COLUMNS)

