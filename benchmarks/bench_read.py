"""Benchmark: the read of a foreign (RST-layout) file, as telemetry does it and as DuckDB would (issue 43).

Where ``measure``'s read goes, in CPU seconds (process time, every thread): ``load_telemetry`` split into
the Parquet decode (``read_rst``: 14 columns, the text ones measure groups by as dictionaries), the row
checks (``clean_batch``), the concatenation and the id de-duplication; then the same 14 columns read by
DuckDB (``read_parquet`` -> Arrow) three ways: plain text, the text columns then dictionary-encoded as
measure needs them, and with the id hashed inside DuckDB instead of read; and the peer's own read (its two
time columns). Each variant once a round, rounds alternating; medians. No figure here is a target: it
says what a faster read could save of the whole process (``bench_foreign.py``).

    .venv/bin/python benchmarks/bench_read.py FILE.parquet [--rounds 5]
"""

from __future__ import annotations

import argparse
import resource
import statistics
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.measure.arrowpool import prefer_returning_pool
from sandbox_fleet.telemetry.options import make_options
from sandbox_fleet.telemetry.record import ROLLOUT_SCHEMA, Telemetry, coded_schema
from sandbox_fleet.telemetry.rst import RENAME, read_rst
from sandbox_fleet.telemetry.validate import clean_batch, drop_duplicates

CODED_SOURCES = ("task_group_id", "model_name", "job", "exception_type")


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def telemetry_read(path: str) -> dict[str, float]:
    """``load_telemetry``'s stages on one RST file (one pass each), CPU seconds."""
    opts = replace(make_options(), progress=False, coded=True)
    tel = Telemetry(rollouts=ROLLOUT_SCHEMA.empty_table())
    t0 = cpu_s()
    raws = list(read_rst(Path(path), False, True))
    t1 = cpu_s()
    cleaned = [clean_batch(raw, path, opts, tel, {}) for raw in raws]
    t2 = cpu_s()
    relaxed = coded_schema(pa.schema([f.with_nullable(True) for f in ROLLOUT_SCHEMA]))
    table = pa.concat_tables([t.cast(relaxed) for t in cleaned]).unify_dictionaries()
    t3 = cpu_s()
    drop_duplicates(table, tel)
    t4 = cpu_s()
    return {"decode (pyarrow, coded)": t1 - t0, "row checks": t2 - t1, "concatenate": t3 - t2,
            "de-duplicate ids": t4 - t3, "telemetry read, total": t4 - t0}


def duckdb_reads(con, path: str) -> dict[str, float]:
    cols = [c for c in RENAME if c != "task_id"]
    out = {}

    def timed(name: str, sql: str, encode: bool) -> None:
        t = cpu_s()
        table = con.sql(sql, params={"path": path}).to_arrow_table()
        for c in CODED_SOURCES if encode else ():
            table = table.set_column(table.column_names.index(c), c, pc.dictionary_encode(table.column(c)))
        out[name] = cpu_s() - t

    timed("duckdb, plain text", f"SELECT {', '.join(cols)} FROM read_parquet($path)", False)
    timed("duckdb, text encoded after", f"SELECT {', '.join(cols)} FROM read_parquet($path)", True)
    timed("duckdb, id hashed, encoded after",
          f"SELECT hash(trajectory_id) AS h, {', '.join(cols[1:])} FROM read_parquet($path)", True)
    timed("duckdb, the peer's 2 columns",
          "SELECT epoch_us(started_at), epoch_us(finished_at) FROM read_parquet($path)", False)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    prefer_returning_pool()  # measure's pool
    t = cpu_s()
    import duckdb

    con = duckdb.connect()
    print(f"duckdb import + connect: {cpu_s() - t:.3f} s CPU")
    got: dict[str, list[float]] = {}
    for _ in range(a.rounds):
        for name, s in {**telemetry_read(a.file), **duckdb_reads(con, a.file)}.items():
            got.setdefault(name, []).append(s)
    for name, v in got.items():
        print(f"{name:34s} median {statistics.median(v):.3f} s CPU (min {min(v):.3f}, max {max(v):.3f})")


if __name__ == "__main__":
    main()
