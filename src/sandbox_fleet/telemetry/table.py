"""Reader for any Parquet, CSV or JSONL file or glob, through DuckDB, streamed as Arrow.

Columns already named canonically need no map; ``--map canonical=source`` renames the rest.
"""

from __future__ import annotations

import errno
import glob as globmod
import gzip
import os
import zlib
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sandbox_fleet.errors import InputError
from sandbox_fleet.limits import check_inflated_size, inflate_limit_bytes
from sandbox_fleet.safeparse import json_loads
from sandbox_fleet.telemetry.progress import track
from sandbox_fleet.telemetry.record import (
    CODED_COLUMNS,
    REQUIRED_ROLLOUT_COLUMNS,
    ROLLOUT_COLUMNS,
    Telemetry,
    is_text,
    null_column,
)

EXTENSIONS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "csv",
    ".jsonl": "json",
    ".ndjson": "json",
    ".json": "json",
}
BATCH_ROWS = 1 << 20


def table_kind(path: str) -> str | None:
    """'parquet', 'csv' or 'json' from the extension (``.gz`` and globs allowed)."""
    name = path.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return EXTENSIONS.get(Path(name).suffix)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _source_sql(kind: str, typed: bool = False, fixed: bool = False) -> str:
    if kind == "parquet":
        return "read_parquet($path)"
    if kind == "csv":
        # Explicit header, delimiter and quote: a malformed row near the top must not steer
        # the sniffer to another dialect; rows that do not parse are collected, not fatal.
        opts = "header=true, delim=$delim, quote='\"', escape='\"', store_rejects=true, encoding=$encoding"
        if fixed:  # the sniffer gave up (an unclosed quote): the header's columns, all text
            return f"read_csv($path, {opts}, auto_detect=false, columns=$columns)"
        return f"read_csv($path, {opts}, types=$types)" if typed else f"read_csv($path, {opts})"
    return "read_json($path, format='auto')"


def is_glob(path: str) -> bool:
    return any(ch in path for ch in "*?[")


def glob_files(path: str) -> list[str]:
    """The files a glob names, sorted (``**`` recursive); a plain path as itself."""
    return sorted(globmod.glob(path, recursive=True)) if is_glob(path) else [path]


def _check_files(path: str, tel: Telemetry | None = None) -> None:
    if is_glob(path):
        matches = globmod.glob(path, recursive=True)
        if not matches:
            raise InputError(f"{path}: no files match this pattern")
        # DuckDB passes over a match it cannot read as a file without a word: each is named here
        skipped = [(m, _not_a_file(m)) for m in sorted(matches) if not os.path.isfile(m)]
        if len(skipped) == len(matches):
            raise InputError(f"{path}: no match is a regular file ({skipped[0][0]}: {skipped[0][1]})")
        for m, why in skipped:
            if tel is not None:
                tel.warnings.append(f"{m}: matched by {path} but {why}; skipped")
        return
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such file")
    if p.stat().st_size == 0:
        raise InputError(f"{path}: empty file (expected a header and rows)")


def _not_a_file(path: str) -> str:
    """Why a glob match is no file to read: a dangling link, a link loop, a folder, a FIFO or a device."""
    if os.path.islink(path) and not os.path.exists(path):
        try:
            os.stat(path)
        except OSError as exc:
            return "a link loop" if exc.errno == errno.ELOOP else "a dangling link"
    if os.path.isdir(path):
        return "a folder"
    return "not a regular file (a FIFO, socket or device)"


def _head(path: str, size: int = 1 << 16) -> bytes:
    files = glob_files(path)
    if not files:
        return b""
    opener = gzip.open if files[0].lower().endswith(".gz") else open
    try:
        with opener(files[0], "rb") as f:
            return f.read(size)
    except (OSError, EOFError, zlib.error):
        return b""


def guess_encoding(head: bytes) -> str:
    """'utf-8', 'utf-16' (a byte-order mark) or 'latin-1' (bytes that are not UTF-8)."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    if head.startswith(b"\xef\xbb\xbf"):
        return "utf-8"
    cut = head.rfind(b"\n")
    try:
        (head[:cut] if cut > 0 else head).decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        return "latin-1"


def read_table(path: str, column_map: dict[str, str], progress: bool = False,
               tel: Telemetry | None = None, *, coded: bool = False) -> Iterator[pa.Table]:
    """Yield canonical-named batches (times still raw) from one file or glob.

    CSV cells are all read as text (the validator parses each cell, so one bad cell costs
    at most that cell); CSV rows that do not parse are counted in ``tel.rejected``.
    ``coded``: a Parquet file's text columns that map to CODED_COLUMNS are read as dictionaries.
    """
    kind = table_kind(path)
    if kind is None:
        raise InputError(f"{path}: unknown table type (expected .parquet, .csv or .jsonl)")
    _check_files(path, tel)
    if kind == "parquet" and not any(ch in path for ch in "*?["):
        yield from _read_parquet_file(Path(path), column_map, progress, coded)
        return
    encoding = guess_encoding(_head(path))
    if kind == "json" and encoding != "utf-8":
        raise InputError(f"{path}: not UTF-8 (looks like {encoding}); JSON must be UTF-8, re-encode the file")
    if kind == "json":
        _check_array_ends(path)
    import duckdb  # CSV and JSON only: canonical Parquet is read without it (~0.2 s of import)

    con = duckdb.connect()
    params: dict[str, object] = {"path": path}
    if kind == "csv":
        params["delim"] = "\t" if path.lower().removesuffix(".gz").endswith(".tsv") else ","
        params["encoding"] = encoding
        try:
            header = _describe(con, _source_sql(kind), params, path, kind, encoding=encoding)
        except InputError:
            header = _header_line(path, encoding, str(params["delim"]))
            if not header:
                raise
            params["columns"] = dict.fromkeys(header, "VARCHAR")
        else:
            wanted = {column_map.get(c, c) for c in ROLLOUT_COLUMNS}
            params["types"] = {c: "VARCHAR" for c in header if c in wanted} or {header[0]: "VARCHAR"}
    source = _source_sql(kind, typed="types" in params, fixed="columns" in params)
    schema = _describe(con, source, params, path, kind, with_types=True, encoding=encoding)
    select = []
    try:
        pairs = _column_pairs(path, list(schema), column_map)
    except InputError:
        fault = _json_fault(path) if kind == "json" else None
        if fault is None:
            raise
        raise InputError(f"{path}: cannot read as JSON lines ({fault})") from None
    for src, canonical in pairs:
        expr = _quote(src)
        if schema[src] == "JSON":
            # Mixed-type JSON fields come back as JSON text; unwrap to plain strings.
            expr = f"json_extract_string({expr}, '$')"
        select.append(f"{expr} AS {_quote(canonical)}")
    sql = f"SELECT {', '.join(select)} FROM {source}"
    seen = 0
    try:
        reader = con.sql(sql, params=params).to_arrow_reader(BATCH_ROWS)
        for batch in reader:
            seen += batch.num_rows
            yield pa.Table.from_batches([batch])
    except duckdb.Error as exc:
        if kind == "json":
            raise InputError(f"{path}: cannot read as JSON lines ({_json_fault(path) or _first_line(exc)})") from exc
        raise InputError(f"{path}: cannot read as {kind} ({_first_line(exc)})") from exc
    if kind == "csv" and tel is not None:
        _count_rejects(con, path, tel, seen)


#: The reason CSV rows that do not parse (wrong number of fields, broken quotes) are counted under.
MALFORMED = "malformed CSV row"


def _count_rejects(con, path: str, tel: Telemetry, seen: int) -> None:
    import duckdb

    try:
        rows = con.sql("SELECT line, error_type FROM reject_errors ORDER BY line").fetchall()
    except duckdb.Error:
        return
    lines = sorted({int(r[0]) for r in rows})
    if not lines:
        return
    tel.reject(MALFORMED, len(lines))
    shown = ", ".join(str(n) for n in lines[:10]) + (" ..." if len(lines) > 10 else "")
    kinds = sorted({str(r[1]).lower() for r in rows})
    tel.warnings.append(f"{path}: {len(lines)} CSV row(s) do not parse ({', '.join(kinds)}) and were rejected; line(s) {shown}")
    quoted = [int(r[0]) for r in rows if "quote" in str(r[1]).lower()]
    if quoted and not any(ch in path for ch in "*?["):
        # A broken quote swallows the lines after it into one bad value: count them too.
        swallowed = _data_lines(path) - seen - len(lines)
        if swallowed > 0:
            tel.reject(MALFORMED, swallowed)
            tel.warnings.append(f"{path}: {swallowed} more line(s) after the broken quote at line {min(quoted)} "
                                "were swallowed into it and rejected")


def _header_line(path: str, encoding: str, delim: str) -> list[str] | None:
    """The column names on a CSV file's first line (None when there is none to read)."""
    import csv

    if any(ch in path for ch in "*?["):
        return None
    first = _head(path).decode(encoding, "replace").splitlines()[:1]
    names = next(csv.reader(first, delimiter=delim), None) if first else None
    return names if names and len(set(names)) == len(names) and all(names) else None


def _data_lines(path: str) -> int:
    """Non-empty lines after the header (gz aware), read in blocks."""
    opener = gzip.open if path.lower().endswith(".gz") else open
    n, blank, last = 0, 0, b"\n"
    with opener(path, "rb") as f:
        while block := f.read(1 << 20):
            n += block.count(b"\n")
            blank += block.count(b"\n\n")
            last = block[-1:]
    return n + (last != b"\n") - blank - 1


def _check_array_ends(path: str) -> None:
    """A file that opens a JSON array must close it: DuckDB reads a truncated one as the rows
    before the cut, silently. Only the two ends are read (plain files; globs and .gz skip this)."""
    if any(ch in path for ch in "*?[") or path.lower().endswith(".gz"):
        return
    with open(path, "rb") as f:
        head = f.read(4096).lstrip()
        if not head.startswith(b"["):
            return
        f.seek(max(f.seek(0, os.SEEK_END) - 4096, 0))
        tail = f.read().rstrip()
    if not tail.endswith(b"]"):
        raise InputError(f"{path}: a JSON array that does not end in ']' (the file is cut short); "
                         "expected a complete JSON array of objects or JSON lines")


def _json_fault(path: str) -> str | None:
    """The first JSON-lines line that is not a JSON object, by its real line number.

    A file that is one JSON document (``[...]`` or ``{...}`` over many lines) is judged whole:
    its fault is where that document stops parsing (a truncated array, say).
    """
    files = glob_files(path)
    limit = int(inflate_limit_bytes())  # this scan holds one line, or one document, at a time: bounded
    for file in files:
        opener = gzip.open if file.lower().endswith(".gz") else open
        name = Path(file).name
        try:
            with opener(file, "rt", encoding="utf-8") as f:
                first = f.readline(limit + 1)
                check_inflated_size(len(first), f"{file} line 1", limit)
                if first.strip() in ("[", "{") or (first.lstrip().startswith("[") and not _parses(first)):
                    f.seek(0)
                    whole = f.read(limit + 1)
                    check_inflated_size(len(whole), file, limit)
                    json_loads(whole, name, "JSON lines (one object a line) or one JSON array of objects")
                    continue
                f.seek(0)
                for number, line in enumerate(iter(lambda: f.readline(limit + 1), ""), 1):
                    check_inflated_size(len(line), f"{file} line {number}", limit)
                    if not line.strip():
                        continue
                    value = json_loads(line, f"{name} line {number}")
                    # a list is a row only as a one-line file's whole document (line 1); on any other
                    # line it is the first bad line, not one to pass over for a later fault
                    if not isinstance(value, dict) and not (number == 1 and isinstance(value, list)):
                        return f"{name} line {number}: not a JSON object (a {type(value).__name__})"
        except InputError as exc:
            return str(exc)
        except (OSError, UnicodeDecodeError, EOFError, zlib.error) as exc:
            return f"{name}: {exc.__class__.__name__}"
    return None


def _parses(line: str) -> bool:
    try:
        json_loads(line, "")
    except InputError:
        return False
    return True


def _column_pairs(path: str | Path, names: list[str], column_map: dict[str, str]) -> list[tuple[str, str]]:
    """(source column, canonical name) for every canonical column the file has, mapped or by name."""
    pairs = []
    for canonical in ROLLOUT_COLUMNS:
        src = column_map.get(canonical)
        if src is not None:
            if src not in names:
                raise InputError(f"{path}: column '{src}' (mapped to {canonical}) not found; columns are: {', '.join(names)}")
        elif canonical in names:
            src = canonical
        else:
            continue
        pairs.append((src, canonical))
    found = {canonical for _, canonical in pairs}
    missing = [c for c in REQUIRED_ROLLOUT_COLUMNS if c not in found]
    if missing:  # refused here, with the map the columns' names and values suggest
        from sandbox_fleet.telemetry.suggest_map import missing_columns

        raise missing_columns(str(path), names, column_map, missing)
    return pairs


def sample_table(path: str, rows: int) -> pa.Table | None:
    """The first ``rows`` rows of the table ``path`` (a file or glob), every column as the reader
    types it; None when they cannot be read (the caller then goes by the names alone)."""
    kind = table_kind(path)
    files = glob_files(path)
    if kind is None or not files:
        return None
    try:
        if kind == "parquet":
            batch = next(pq.ParquetFile(files[0]).iter_batches(batch_size=rows), None)
            return pa.Table.from_batches([batch]) if batch is not None else None
        import duckdb

        params: dict[str, object] = {"path": files[0]}
        if kind == "csv":
            params["delim"] = "\t" if files[0].lower().removesuffix(".gz").endswith(".tsv") else ","
            params["encoding"] = guess_encoding(_head(files[0]))
        return duckdb.connect().sql(f"SELECT * FROM {_source_sql(kind)} LIMIT {int(rows)}", params=params).to_arrow_table()
    except Exception:  # any failure to sample leaves the proposal to the names
        return None


def _read_parquet_file(path: Path, column_map: dict[str, str], progress: bool,
                       coded: bool = False, *, mapped_only: bool = False) -> Iterator[pa.Table]:
    """One Parquet file, a row group at a time, straight from pyarrow.

    Memory: at 10M rows DuckDB's scan buffered ~600 MB more than the batches it handed
    over; pyarrow decodes one row group (at most BATCH_ROWS rows at a time) and no more.
    A column chunk whose statistics say every value is null is not decoded at all (the
    eight phase columns most sources leave empty cost ~0.7 s at 10M rows).
    ``mapped_only``: read the columns ``column_map`` names and no others (a release layout's
    reader maps every column it knows; a canonical name it does not map is not its column).
    """
    try:
        if path.name.lower().endswith(".gz"):
            # Parquet cannot be read compressed: the whole file is inflated into memory once.
            source = pa.BufferReader(_inflate_bounded(path))
        else:
            source = str(path)
        # Not memory-mapped: the mapped pages count in the peak RSS until the file is closed
        # (30M rows: 4.2 -> 5.7 GiB) for ~2% less time at 10M rows and none at 30M.
        pf = pq.ParquetFile(source)
        pairs = _column_pairs(path, pf.schema_arrow.names, column_map)
        if mapped_only:
            pairs = [(src, canonical) for src, canonical in pairs if canonical in column_map]
        text = _text_columns(pf.schema_arrow, pairs) if coded else []
        if text:
            pf = pq.ParquetFile(source, read_dictionary=text)
    except (pa.ArrowInvalid, OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{path}: cannot read as parquet ({_first_line(exc)})") from exc
    sources = list(dict.fromkeys(src for src, _ in pairs))  # read each source column once
    huge = [pf.metadata.row_group(i).num_rows > 2 * BATCH_ROWS for i in range(pf.num_row_groups)]
    try:
        # The next row group is decoded on a thread while the caller cleans this one (decoding
        # releases the GIL; one decoded group ahead at most). One thread uses ``pf`` at a time:
        # a huge group is streamed here, in batches, with nothing ahead in flight.
        with ThreadPoolExecutor(max_workers=1) as pool:
            ahead = None
            for i in track(range(len(huge)), f"reading {path.name}", progress, min_items=4):
                if huge[i]:
                    for part in _group_parts(pf, i, sources, streamed=True):
                        yield _select(part, pairs)
                    continue
                parts = ahead.result() if ahead is not None else _decoded_group(pf, i, sources)
                ahead = None
                if i + 1 < len(huge) and not huge[i + 1]:
                    ahead = pool.submit(_decoded_group, pf, i + 1, sources)
                while parts:
                    yield _select(parts.pop(0), pairs)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{path}: cannot read as parquet ({_first_line(exc)})") from exc


def read_parquet_columns(path: Path, column_map: dict[str, str], progress: bool = False,
                         coded: bool = False) -> Iterator[pa.Table]:
    """One Parquet file's columns that ``column_map`` (canonical -> source) names, and only
    those, as canonical-named batches: a release layout's reader maps every column it knows."""
    yield from _read_parquet_file(path, column_map, progress, coded, mapped_only=True)


def _inflate_bounded(path: Path) -> bytes:
    """A gzip file's content, refused (one line) before it inflates past ``inflate_limit_bytes``:
    by its declared size (the trailer's, mod 4 GiB) up front, then by the bytes actually inflated."""
    limit = inflate_limit_bytes()
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() >= 18:  # header + trailer: the last 4 bytes are the size mod 2**32
            f.seek(-4, os.SEEK_END)
            check_inflated_size(int.from_bytes(f.read(4), "little"), str(path), limit)
    parts, total = [], 0
    with gzip.open(path, "rb") as f:
        while block := f.read(1 << 24):
            total += len(block)
            check_inflated_size(total, str(path), limit)
            parts.append(block)
    return b"".join(parts)


def _decoded_group(pf: pq.ParquetFile, group: int, sources: list[str]) -> list[pa.Table]:
    return list(_group_parts(pf, group, sources, streamed=False))


def _group_parts(pf: pq.ParquetFile, group: int, sources: list[str], *, streamed: bool) -> Iterator[pa.Table]:
    """Row group ``group``'s columns ``sources``, whole or ``streamed`` in batches of BATCH_ROWS;
    all-null columns as shared null chunks, never decoded."""
    empty = _all_null(pf, group, sources)
    read = [s for s in sources if s not in empty] if len(empty) < len(sources) else sources
    parts: Iterable[pa.Table]
    if not streamed:
        parts = [pf.read_row_group(group, columns=read)]
    else:
        parts = (pa.Table.from_batches([b]) for b in
                 pf.iter_batches(batch_size=BATCH_ROWS, row_groups=[group], columns=read))
    for part in parts:
        for name in (empty if read is not sources else ()):
            field = pf.schema_arrow.field(name)
            part = part.append_column(field, null_column(field.type, part.num_rows))
        yield part


def _text_columns(schema: pa.Schema, pairs: list[tuple[str, str]]) -> list[str]:
    """Source columns of CODED_COLUMNS stored as text: read as dictionaries, never decoded."""
    return [src for src, canonical in pairs if canonical in CODED_COLUMNS
            and is_text(schema.field(src).type)]


def _all_null(pf: pq.ParquetFile, group: int, sources: list[str]) -> set[str]:
    """The flat columns of row group ``group`` whose statistics count every value as null."""
    meta = pf.metadata.row_group(group)
    if meta.num_columns != len(pf.schema_arrow) or meta.num_rows == 0:
        return set()  # nested columns: leaves do not map one to one to the columns read
    out = set()
    for j in range(meta.num_columns):
        chunk = meta.column(j)
        stats = chunk.statistics
        if (chunk.path_in_schema in sources and stats is not None and stats.has_null_count
                and stats.null_count == meta.num_rows and not pa.types.is_nested(pf.schema_arrow.field(chunk.path_in_schema).type)):
            out.add(chunk.path_in_schema)
    return out


def _select(part: pa.Table, pairs: list[tuple[str, str]]) -> pa.Table:
    # A source column mapped to two canonical names was read once and is used twice.
    return pa.table({canonical: part.column(src) for src, canonical in pairs})


def _describe(con, source: str, params: dict, path: str, kind: str, with_types: bool = False,
              encoding: str = "utf-8"):
    import duckdb

    try:
        rows = con.sql(f"DESCRIBE SELECT * FROM {source}", params=params).fetchall()
    except duckdb.Error as exc:
        if kind == "json":
            raise InputError(f"{path}: cannot read as JSON lines ({_json_fault(path) or _first_line(exc)})") from exc
        raise InputError(f"{path}: cannot read as {kind}, encoding taken as {encoding} ({_first_line(exc)})") from exc
    if with_types:
        return {r[0]: r[1] for r in rows}
    return [r[0] for r in rows]


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
