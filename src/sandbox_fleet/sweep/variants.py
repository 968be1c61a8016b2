"""The cartesian product of ``--vary`` settings, each turned into a checked scenario.

Variant order is the product order with the first ``--vary`` key outermost (like
nested loops written in the order given); every variant is validated by the
simulator's own scenario model and builder before anything runs, so a bad value
fails fast with the variant named.
"""

from __future__ import annotations

import itertools
import math
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox_fleet.errors import InputError
from sandbox_fleet.safeparse import load_toml
from sandbox_fleet.simulate.scenario.bounds import check_run
from sandbox_fleet.simulate.scenario.builder import build
from sandbox_fleet.simulate.scenario.spec import validate_scenario
from sandbox_fleet.sweep import paths
from sandbox_fleet.sweep.values import Scalar


@dataclass(frozen=True)
class Variant:
    """One point of the sweep: its settings (key -> value, in --vary order) and scenario data."""

    index: int
    settings: dict[str, Scalar]
    data: dict[str, Any]
    seed: int  # the variant's base seed (its run.seed); replicate r uses seed + r


def read_scenario(path: str | Path) -> dict:
    """The scenario file's raw TOML data (validated later, per variant)."""
    p = Path(path)
    return load_toml(p, "scenario file")


def describe(settings: dict[str, Scalar]) -> str:
    return " ".join(f"{k}={v}" for k, v in settings.items()) or "(base scenario)"


def check(data: dict, base_dir: Path, source: str):
    """Validate scenario data exactly as the simulator would; returns ``(spec, built)``."""
    spec = validate_scenario(data, source)
    built = build(spec, base_dir, source)
    check_run(built, source, None)  # memory and preemption bounds, before any variant runs
    return spec, built


def expand(scenario: str | Path, vary: list[tuple[str, list[Scalar]]], progress: bool = False) -> list[Variant]:
    """All variants of ``scenario`` over the ``vary`` axes, validated, in product order.

    ``progress`` shows a bar on a terminal while they are checked (a large grid takes seconds).
    """
    p = Path(scenario)
    base = read_scenario(p)
    keys = [k for k, _ in vary]
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        raise InputError(f"`vary` {sorted(dup)[0]}: key given twice; put all its values in one `vary`")
    for k in keys:
        paths.resolve(base, k, str(p))  # unknown key -> error naming it, before any product
    out = []
    total = math.prod(len(vals) for _, vals in vary)
    with _bar(progress, total) as advance:
        for i, combo in enumerate(itertools.product(*(vals for _, vals in vary))):
            settings = dict(zip(keys, combo))
            data = paths.apply(base, settings, str(p))
            spec, _ = check(data, p.parent, f"{p} with {describe(settings)}")
            out.append(Variant(i, settings, data, spec.run.seed))
            advance()
    return out


@contextmanager
def _bar(enabled: bool, total: int):
    """A transient Rich bar on a terminal; yields a no-argument ``advance``."""
    from rich.console import Console
    from rich.progress import Progress

    console = Console(stderr=True)
    if not enabled or not console.is_terminal:
        yield lambda: None
        return
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("checking variants", total=total)
        yield lambda: bar.advance(task)
