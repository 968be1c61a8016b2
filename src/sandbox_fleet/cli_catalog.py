"""``sandbox-fleet catalog``: own prices in one step (check a node catalog, import a price list).

Only parses arguments and calls ``plan.catalog_check`` and ``plan.catalog_import``; each prints the
next command to run, with the file it wrote or checked in it.
"""

import shlex
import sys
from pathlib import Path
from typing import Optional

import typer

from sandbox_fleet.errors import InputError

catalog_app = typer.Typer(no_args_is_help=True, help="Own prices: check a node catalog (plan --nodes FILE), or import a cloud price list into one.")


def _note(line: str) -> None:
    """One line on stderr, never folded (a command in it is copied whole), unless ``--quiet``."""
    from sandbox_fleet.cli import _STATE
    from sandbox_fleet.textout import printable

    if not _STATE["quiet"]:
        sys.stderr.write(printable(line) + "\n")


def _next_commands(catalog: Path, *, check: bool) -> list[str]:
    """The commands that use ``catalog``: check it (after an import), then plan with it."""
    quoted = shlex.quote(str(catalog))
    out = [f"check it: sandbox-fleet catalog check {quoted}"] if check else []
    return out + [f"plan with it: sandbox-fleet plan PATH --nodes {quoted} -o plan.json   (PATH: your telemetry, or a measure -o summary)"]


@catalog_app.command("check")
def check(
    path: Path = typer.Argument(..., help="A node catalog: TOML \\[\\[node]] tables (sandbox-fleet schema catalog)."),
) -> None:
    """Read a node catalog as plan --nodes reads it and size each type as plan does; one line per type."""
    from sandbox_fleet.plan.catalog_check import check_catalog, check_lines
    from sandbox_fleet.textout import printable

    checked = check_catalog(path)
    for line in check_lines(path, checked):
        sys.stdout.write(printable(line) + "\n")
    for line in _next_commands(path, check=False):
        _note(line)


@catalog_app.command("import")
def import_(
    path: Path = typer.Argument(..., help="A price list: an AWS EC2 price list JSON (offer file or `aws pricing get-products` output), or a CSV of instance, vcpus, memory_gb and a price per tier."),
    output: Path = typer.Option(..., "-o", "--output", help="The node catalog to write (TOML)."),
    volume_gb: Optional[float] = typer.Option(None, "--volume-gb", help="GiB of attached volume (EBS) for types without local disk; without it they are skipped."),
    volume_usd_per_gb_h: Optional[float] = typer.Option(None, "--volume-usd-per-gb-h", help="The volume's USD per GiB-hour (gp3 at $0.08 per GB-month: 0.08/730 = 0.0001096)."),
    location: Optional[str] = typer.Option(None, "--location", help="AWS: keep this location or region code (needed when the file holds several)."),
    lease: str = typer.Option("1yr", "--lease", help="AWS: the reserved term's lease, 1yr or 3yr."),
    purchase: str = typer.Option("No Upfront", "--purchase", help="AWS: the reserved term's purchase option (No Upfront, Partial Upfront, All Upfront)."),
) -> None:
    """Turn a cloud price list into a node catalog plan --nodes reads; prints what it took and skipped."""
    from sandbox_fleet.atomic import write_text
    from sandbox_fleet.cli import _check_outputs
    from sandbox_fleet.plan.catalog import parse_catalog
    from sandbox_fleet.plan.catalog_import import Volume, catalog_toml, import_prices

    _check_outputs([path], o=(output, (".toml",)))
    imported = import_prices(path, volume=Volume(volume_gb, volume_usd_per_gb_h), location=location, lease=lease,
                             purchase=purchase)
    text = catalog_toml(imported)
    if len(parse_catalog(text, str(output))) != len(imported.nodes):  # what plan will read back
        raise InputError(f"{output}: the catalog written does not read back")
    write_text(output, text)
    skipped = "; ".join(f"{why}: {n}" for why, n in sorted(imported.skipped.items()))
    _note(f"wrote {output}: {len(imported.nodes)} node type(s) from {path}" + (f" (not taken: {skipped})" if skipped else ""))
    for line in _next_commands(output, check=True):
        _note(line)
