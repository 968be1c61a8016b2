"""Readable sweep output: one table row per variant (mean ±relative sd), then the knee.

Only the headline figures are shown; ``--json`` / ``-o`` carry every metric.
"""

from __future__ import annotations

from rich.console import Console

from sandbox_fleet.sweep.aggregate import DEFAULT_METRICS, SD
from sandbox_fleet.termtable import grid
from sandbox_fleet.textout import number

SHOWN = ("step_s.mean", "queue_wait_s.mean", "utilisation", "concurrency.mean", "completed", "dropped")
ONLY_IF_VARYING = ("completed", "dropped")  # a constant count says nothing about the variants


def _num(v) -> str:
    # below 100, .3g prints a whole number as ,.0f would
    return number(v, ",.0f", small=".3g", below=100)


def _cell(r: dict, m: str) -> str:
    sd = r.get(m + SD)
    return _num(r[m]) + (f" ±{sd / abs(r[m]):.0%}" if sd and r[m] else "")


def _head(key: str) -> str:
    head, dot, tail = key.rpartition(".")
    return f"{head}\n.{tail}" if dot else key  # two short lines keep the table within 80 columns


def render_sweep(result: dict, console: Console) -> None:
    rows = result["rows"]
    keys = list(result["vary"])
    k = result.get("knee")
    extra = [m for m in result["metrics"] if m not in DEFAULT_METRICS]
    wanted = ([k["target"]] if k else []) + [m for m in (*SHOWN, *extra) if not k or m != k["target"]]
    shown = [m for m in wanted if any(r.get(m) is not None for r in rows)
             and (m not in ONLY_IF_VARYING or len({r[m] for r in rows}) > 1)]
    t = grid(f"{result['scenario']}: {result['variants']} variants x {result['seeds']} seeds (mean ±sd as % of it)", ())
    flag = any(r.get("unstable") for r in rows)  # then a column saying which variants have no steady state
    body = [[str(r[key]) for key in keys] + (["UNSTABLE" if r.get("unstable") else ""] if flag else [])
            + [_cell(r, m) for m in shown] for r in rows]
    names = [*keys, *(["steady"] if flag else []), *shown]
    widths = [max(*(len(c[j]) for c in body), *(len(x) for x in _head(n).split("\n"))) + 2
              for j, n in enumerate(names)]
    n_cols = len(names)
    while n_cols > len(keys) + 1 and sum(widths[:n_cols]) > console.width:
        n_cols -= 1  # drop the least important figures rather than truncate numbers
    if n_cols < len(names):
        t.caption = f"{len(names) - n_cols} more columns with a wider terminal, --json or -o"
    for j, name in enumerate(names[:n_cols]):
        t.add_column(_head(name), justify="right", style="cyan" if j < len(keys) else None, no_wrap=True)
    for cells in body:
        t.add_row(*cells[:n_cols])
    console.print(t)
    if k:
        for g in k["groups"]:
            where = " ".join(f"{a}={b}" for a, b in g["fixed"].items())
            head = f"knee of {k['target']} over {k['over']}" + (f" ({where})" if where else "")
            if g["knee"] is None:
                console.print(f"{head}: none ({g.get('note', '')})", highlight=False)
            else:
                console.print(f"{head}: [bold]{g['knee']}[/bold] ({k['target']} {_num(g['target_at_knee'])}, "
                              f"within {_num(k['within_abs']) if k.get('within_abs') is not None else format(k['within'], '.2%')} "
                              f"of the {g['reference_from']} run's {_num(g['reference'])})",
                              highlight=False)
