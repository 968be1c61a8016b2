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
from pathlib import Path
from typing import Any

import pyarrow as pa

from sandbox_fleet.errors import InputError
from sandbox_fleet.limits import check_inflated_size, inflate_limit_bytes, memory_limit_bytes
from sandbox_fleet.safeparse import first_line, iso_instant, json_loads
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
            "cached_tokens", "turns", "reward", "has_exception", "exception_type", "limit_type")


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
        infos: dict[str, zipfile.ZipInfo] = {}
        repeated: list[str] = []
        for i in z.infolist():  # a name twice: the first entry is read, each later one counted unreadable
            if i.filename in infos:
                repeated.append(i.filename)
            else:
                infos[i.filename] = i
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
        samples += [(f"{name} (a second entry of this name)", ValueError("repeated entry"))
                    for name in repeated if name.startswith("samples/")]
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


#: Why a sample's reward was left null or read by a default choice (counted, then one warning each).
MISSING, NOT_A_NUMBER, DICT_DEFAULT = "missing", "not a number", "dict default"


def _pick(scores: dict, name: str | None) -> tuple[str, str | None] | None:
    """(scorer, dict key) that ``--score NAME`` names: the scorer NAME itself, else NAME split
    at its last ``/`` as SCORER/KEY (a scorer name may itself hold a ``/``). No NAME: the first
    scorer. None when NAME names neither."""
    if name is None:
        return next(iter(scores)), None
    if name in scores:
        return name, None
    scorer, _, key = name.rpartition("/")
    return (scorer, key) if scorer in scores and key else None


def _number(value: Any) -> float | None:
    if isinstance(value, (bool, int, float)):
        return float(value) if not isinstance(value, int) or abs(value) < 2**1023 else None  # 1e400 as an int
    if isinstance(value, str):
        if value in LETTERS:
            return LETTERS[value]
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _score(scores: Any, name: str | None) -> tuple[float | None, str | None, str | None]:
    """(reward, why it is null or a default choice, the SCORER/KEY read when the value is a dict).

    A dict value (``{"Problem Correctness": 0, "Style": 1}``) gives the KEY named by
    ``--score SCORER/KEY``; with no key named, its only entry, or else its first (``DICT_DEFAULT``:
    which one is a guess the warning states)."""
    if not isinstance(scores, dict) or not scores:
        return None, None, None
    picked = _pick(scores, name)
    if picked is None:
        return None, MISSING, None
    scorer, key = picked
    score = scores[scorer]
    value = score.get("value") if isinstance(score, dict) else None
    if not isinstance(value, dict):
        if key is not None:
            return None, MISSING, None
        number = _number(value)
        return number, None if number is not None or value is None else NOT_A_NUMBER, None
    note = None
    if key is None:
        if not value:
            return None, NOT_A_NUMBER, None
        key = next(iter(value))
        note = DICT_DEFAULT if len(value) > 1 else None
    elif key not in value:
        return None, MISSING, None
    number = _number(value[key])
    if number is None and value[key] is not None:
        note = NOT_A_NUMBER
    return number, note, f"{scorer}/{key}"


def _exception(sample: dict) -> tuple[bool, str | None]:
    """A sample ``error`` is an exception (its type from the message); a ``limit`` is not (see ``_limit``)."""
    error = sample.get("error")
    if error:
        message = error.get("message", "") if isinstance(error, dict) else error
        m = re.match(r"^\s*([A-Za-z_][\w.]*)\(", message if isinstance(message, str) else "")
        return True, m.group(1) if m else "error"
    return False, None


def _limit(sample: dict) -> str | None:
    """The type of the limit that ended the sample (``message``, ``token``, ``time``, ...).

    Inspect stops such a sample and then scores it like any other, so it is its own outcome,
    not an exception. An error wins: a sample with both is an exception."""
    limit = sample.get("limit")
    if not limit or sample.get("error"):
        return None
    kind = limit.get("type") if isinstance(limit, dict) else None
    return str(kind) if kind else "sample"


def _times(sample: dict) -> tuple[Any, Any]:
    start, end = sample.get("started_at"), sample.get("completed_at")
    if start and end:
        return start, end
    events = sample.get("events")
    stamps = [(iso_instant(e.get("timestamp")), e.get("timestamp")) for e in events if isinstance(e, dict)] \
        if isinstance(events, list) else []
    # Event timestamps are ISO-8601 with an offset, compared as instants; others are skipped.
    order = sorted((t, s) for t, s in stamps if t is not None)
    if order:
        return start or order[0][1], end or order[-1][1]
    return None, None


def job_name(spec: dict) -> str | None:
    """The eval's job: ``eval_id``, else ``run_id`` (older logs), else the task name."""
    return spec.get("eval_id") or spec.get("run_id") or spec.get("task")


def sample_row(sample: dict, spec: dict, score: str | None) -> tuple[dict | None, tuple[str | None, str | None]]:
    """The canonical row of one sample (None without times), and what ``_score`` noted:
    (why the reward is null or a default choice, the SCORER/KEY of a dict score)."""
    start, end = _times(sample)
    if not (start and end):
        return None, (None, None)
    events = sample.get("events")
    inp, out, cached = _tokens(sample.get("model_usage"))
    reward, note, read = _score(sample.get("scores"), score)
    exc, kind = _exception(sample)
    epoch = sample.get("epoch", 1)
    job = job_name(spec)
    row = {
        "id": f"{job}/{sample.get('id')}/{epoch}",
        "task_id": None if sample.get("id") is None else str(sample.get("id")),
        "model": spec.get("model") or (next(iter(usage), None) if isinstance(usage := sample.get("model_usage"), dict) else None),
        "job": job,
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
        "limit_type": _limit(sample),
    }
    return row, (note, read)


def _cap(spec: dict) -> int | None:
    config = spec.get("config")
    if not isinstance(config, dict):
        return None
    caps = [v for v in (config.get("max_samples"), config.get("max_sandboxes")) if plausible_cap(v)]
    return min(caps) if caps else None


class _ScoreTally:
    """What the score reads noted, over every sample of one read, for one warning per kind."""

    def __init__(self) -> None:
        self.notes: dict[str, int] = {}
        self.dict_reads: dict[str, int] = {}
        self.scorers: set[tuple[str, ...]] = set()

    def add(self, sample: dict, note: str | None, read: str | None) -> None:
        if note:
            self.notes[note] = self.notes.get(note, 0) + 1
        if note == DICT_DEFAULT and read:
            self.dict_reads[read] = self.dict_reads.get(read, 0) + 1
        scores = sample.get("scores")
        if isinstance(scores, dict) and len(scores) > 1:
            self.scorers.add(tuple(scores))

    def warn(self, path: Path, score: str | None, tel: Telemetry) -> None:
        n = self.notes
        if n.get(MISSING):
            warn_once(tel, f"{path}: {n[MISSING]} sample(s) have no score '{score}' (reward left null; --score takes "
                           "a scorer NAME, or SCORER/KEY for one entry of a dict score)")
        if n.get(NOT_A_NUMBER):
            warn_once(tel, f"{path}: {n[NOT_A_NUMBER]} sample(s) have a score value that is neither a number, a "
                           "boolean nor a letter grade C/I/P/N (reward left null)")
        for read, count in sorted(self.dict_reads.items()):
            warn_once(tel, f"{path}: {count} sample(s) score a dict of several values; the reward is its first entry, "
                           f"'{read}' (choose one with --score {read.rpartition('/')[0]}/KEY)")
        if score is None:
            for names in sorted(self.scorers):
                warn_once(tel, f"{path}: samples carry {len(names)} scorers ({', '.join(names)}); the reward is the "
                               f"first, '{names[0]}' (choose one with --score NAME)")


def read_inspect(path: Path, opts: ReadOptions, tel: Telemetry) -> pa.Table:
    """Every sample of every log under ``path`` as one canonical-named table."""
    files = log_files(path)
    if not files:
        raise InputError(f"{path}: no Inspect AI log (.eval or .json) found")
    if path.is_dir():  # a log's name on something no file (a FIFO, a dangling link): named, never passed over
        for p in sorted(path.iterdir()):
            if p.suffix in (".eval", ".json") and not p.is_file() and not p.is_dir():
                warn_once(tel, f"{p}: an Inspect log's name on no regular file (a FIFO, device or dangling link); "
                               "skipped")
    rows: list[dict] = []
    tally = _ScoreTally()
    for file in track(files, "reading Inspect logs", opts.progress, min_items=20):
        spec, samples = _read(file)
        cap = _cap(spec)
        job = job_name(spec)
        if cap is not None and isinstance(job, str) and job:
            tel.caps[job] = cap
        for name, sample in samples:
            if not isinstance(sample, dict):
                tel.reject(UNREADABLE)
                warn_once(tel, f"{file}: sample entry {name} is unreadable; counted as rejected ({UNREADABLE})")
                continue
            row, (note, read) = sample_row(sample, spec, opts.score)
            if row is None:
                tel.reject(NO_TIMES)
                continue
            tally.add(sample, note, read)
            rows.append(row)
    tally.warn(path, opts.score, tel)
    bad: dict[str, int] = {}
    table = raw_rows_table(rows, _COLUMNS, bad)
    warn_bad_cells(tel, path, bad)
    return table
