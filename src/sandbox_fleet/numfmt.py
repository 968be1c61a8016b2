"""The figures a buyer reads, formatted once for every surface: the plan's text, its CSV, the report.

A fraction prints as a percentage everywhere (0.2937 is "29.4%" in the terminal and in the HTML),
money as dollars with cents (significant digits below a cent), any other figure with four
significant digits and whole numbers with thousands separators. ``textout.number`` is the one
null-aware formatter underneath; this module decides which format a figure gets.
"""

from __future__ import annotations

from typing import Optional, Union

Value = Union[float, int, str, None]


def percent(x: float) -> str:
    """A fraction as a percentage: one decimal, three for a non-zero share below 0.1%."""
    return f"{x:.1%}" if abs(x) >= 0.001 or x == 0 else f"{x:.3%}"


def money(v: Optional[float]) -> str:
    """US dollars with cents; a non-zero amount below a cent keeps two significant digits."""
    from sandbox_fleet.textout import number

    return "not costed" if v is None else "$" + number(v, ",.2f", small=".2g", below=0.01)


def plain(x: float) -> str:
    """A figure with no unit to format by: four significant digits, whole numbers as integers."""
    from sandbox_fleet.textout import number

    return number(x, ",.4g", whole=",.0f")


def is_fraction(unit: str) -> bool:
    """Whether a figure in ``unit`` is a share of 1 (``fraction``, ``fraction of peak``)."""
    return unit == "fraction" or unit.startswith("fraction ")


def with_unit(value: Value, unit: str, none: str = "n/a") -> tuple[str, str]:
    """``value`` in ``unit`` as (value text, unit text), the way every surface shows an assumption:
    a fraction as a percentage with the word "fraction" dropped (``0.4`` "fraction of peak" ->
    ``("40.0%", "of peak")``), a number by ``plain``, text as it is."""
    if value is None:
        return none, unit
    if isinstance(value, bool) or isinstance(value, str):
        return str(value), unit
    if is_fraction(unit):
        return percent(float(value)), unit[len("fraction"):].strip()
    return plain(float(value)), unit


def figure(x: float, kind: str = "num") -> str:
    """``x`` as its kind reads, the same in the terminal and the HTML: ``pct`` a share as a percentage,
    ``usd`` money, ``int`` a whole count, ``s`` seconds, ``h`` seconds shown in hours, ``f1``..``f4`` that
    many decimals, anything else (``num``) by ``plain``."""
    if kind == "pct":
        return percent(x)
    if kind == "usd":
        return money(x)
    if kind == "int":
        return f"{x:,.0f}"
    if kind == "s":
        return f"{x:,.1f} s"
    if kind == "h":
        return f"{x / 3600:,.1f} h"
    if kind in ("f1", "f2", "f3", "f4"):
        return f"{x:,.{kind[1]}f}"
    return plain(x)
