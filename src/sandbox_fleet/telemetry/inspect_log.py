"""Reader for Inspect AI eval logs: ``.eval`` archives and ``.json`` logs, or folders of them.

One row per sample and epoch. An ``.eval`` log is a zip whose entries (``header.json``,
``samples/<id>_epoch_<n>.json``) are zstd-compressed (zip method 93), which Python's
zipfile cannot open: each entry is read raw and decompressed with PyArrow's zstd codec.
The mapping is in ``docs/telemetry.md``.
"""

from __future__ import annotations

import math
import re
import struct
import zipfile
import zlib
from datetime import UTC
from pathlib import Path
from typing import Any

import pyarrow as pa

from sandbox_fleet.errors import InputError
from sandbox_fleet.limits import check_inflated_size, inflate_limit_bytes, memory_limit_bytes
from sandbox_fleet.safeparse import first_line, json_loads
from sandbox_fleet.telemetry.jsonfile import plausible_cap, raw_rows_table, warn_bad_cells
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


def _entry(raw: Any, info: zipfile.ZipInfo, where: str) -> bytes:
    """One zip entry's bytes, never more than its declared size or the memory budget;
    zstd through PyArrow, deflate through zlib."""
    raw.seek(info.header_offset)
    fields = _LOCAL_HEADER.unpack(raw.read(_LOCAL_HEADER.size))
    raw.seek(fields[9] + fields[10], 1)  # file name and extra field
    data = raw.read(info.compress_size)
    if info.compress_type == _ZSTD:
        # PyArrow writes at most decompressed_size bytes and fails on a member that inflates past it
        return pa.Codec("zstd").decompress(data, decompressed_size=info.file_size).to_pybytes()
    if info.compress_type == zipfile.ZIP_DEFLATED:
        inflater = zlib.decompressobj(-15)
        out = inflater.decompress(data, info.file_size + 1)
        if len(out) > info.file_size or inflater.unconsumed_tail:
            raise ValueError(f"inflates past its declared {info.file_size:,} bytes")
        return out
    if info.compress_type == zipfile.ZIP_STORED:
        return data
    raise ValueError(f"zip compression method {info.compress_type}")


def _check_declared(path: Path, infos: dict[str, zipfile.ZipInfo]) -> None:
    """Refuse, before inflating any, an archive whose entries declare more than memory allows:
    one entry over the per-member limit, or all of them (every sample is held) over the budget."""
    limit = inflate_limit_bytes()
    for name, info in infos.items():
        check_inflated_size(info.file_size, f"{path}:{name}", limit)
    check_inflated_size(sum(i.file_size for i in infos.values()), f"{path} (all entries)", memory_limit_bytes(None))


def _read_eval(path: Path) -> tuple[Any, list[tuple[str, Any]]]:
    """(eval spec, [(entry name, sample or the exception that made it unreadable)])."""
    with zipfile.ZipFile(path) as z, open(path, "rb") as raw:
        infos = {i.filename: i for i in z.infolist()}
        _check_declared(path, infos)
        head_name = "header.json" if "header.json" in infos else "_journal/start.json"
        header = json_loads(_entry(raw, infos[head_name], f"{path}:{head_name}"), f"{path}:{head_name}")
        samples = []
        for name in sorted(n for n in infos if n.startswith("samples/") and n.endswith(".json")):
            where = f"{path}:{name}"
            try:
                samples.append((name, json_loads(_entry(raw, infos[name], where), where)))
            except (InputError, ValueError, zlib.error, OSError, pa.ArrowException) as exc:
                samples.append((name, exc))
    if not isinstance(header, dict):
        raise InputError(f"{path}:{head_name}: expected a JSON object")
    return header.get("eval"), samples


def _read(path: Path) -> tuple[dict, list[tuple[str, Any]]]:
    try:
        if path.suffix == ".eval":
            spec, samples = _read_eval(path)
        else:
            data = json_loads(path.read_bytes(), str(path))
            if not isinstance(data, dict):
                raise InputError(f"{path}: not an Inspect log (expected a JSON object)")
            listed = data.get("samples")
            if listed is not None and not isinstance(listed, list):
                raise InputError(f"{path}: 'samples' is {type(listed).__name__}, expected a list of samples")
            spec, samples = data.get("eval"), [(f"samples[{i}]", s) for i, s in enumerate(listed or [])]
    except (ValueError, KeyError, OSError, zipfile.BadZipFile, zlib.error, pa.ArrowException, struct.error) as exc:
        raise InputError(f"{path}: not a readable Inspect log ({exc.__class__.__name__}: {first_line(exc)})") from None
    if spec is not None and not isinstance(spec, dict):
        raise InputError(f"{path}: 'eval' is {type(spec).__name__}, expected an object (the eval spec)")
    return spec or {}, samples


def _tokens(usage: Any) -> tuple[int | None, int | None, int | None]:
    """(input incl. cache reads and writes, output, cache reads) summed over models."""
    if not isinstance(usage, dict) or not usage:
        return None, None, None
    inp = out = cached = 0
    any_cached = False
    for u in usage.values():  # counts that are not finite whole numbers add nothing
        if not isinstance(u, dict):
            continue
        read = u.get("input_tokens_cache_read")
        any_cached |= read is not None
        inp += _int(u.get("input_tokens")) + _int(read) + _int(u.get("input_tokens_cache_write"))
        out += _int(u.get("output_tokens"))
        cached += _int(read)
    return inp, out, cached if any_cached else None


def _int(v: Any) -> int:
    ok = isinstance(v, int) or (isinstance(v, float) and math.isfinite(v))
    return int(v) if ok and not isinstance(v, bool) and abs(v) < 2**63 else 0


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
        message = error.get("message", "") if isinstance(error, dict) else error
        m = re.match(r"^\s*([A-Za-z_][\w.]*)\(", message if isinstance(message, str) else "")
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
    events = sample.get("events")
    stamps = [(_instant(e.get("timestamp")), e.get("timestamp")) for e in events if isinstance(e, dict)] \
        if isinstance(events, list) else []
    # Event timestamps are ISO-8601 with an offset, compared as instants; others are skipped.
    order = sorted((t, s) for t, s in stamps if t is not None)
    if order:
        return start or order[0][1], end or order[-1][1]
    return None, None


def _instant(stamp: Any):
    """An ISO-8601 event timestamp as an aware datetime, or None for anything else."""
    from datetime import datetime

    if not isinstance(stamp, str):
        return None
    try:
        t = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


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
        "model": spec.get("model") or (next(iter(usage), None) if isinstance(usage := sample.get("model_usage"), dict) else None),
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
    config = spec.get("config")
    if not isinstance(config, dict):
        return None
    caps = [v for v in (config.get("max_samples"), config.get("max_sandboxes")) if plausible_cap(v)]
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
        if cap is not None and isinstance(job, str) and job:
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
    bad: dict[str, int] = {}
    table = raw_rows_table(rows, _COLUMNS, bad)
    warn_bad_cells(tel, path, bad)
    return table

