"""Command-line front end: parse arguments, call library functions, print.

Each command's work lives in a documented library function; nothing here computes.
Bad input surfaces as ``InputError``: one line on stderr, exit status 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from sandbox_fleet import jsonio
from sandbox_fleet.errors import InputError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Size the container fleet behind agentic RL: measure, plan, simulate, report.",
)
err_console = Console(stderr=True)
out_console = Console()


@app.callback()
def _root() -> None:
    """Size the container fleet behind agentic RL: measure, plan, simulate, report."""


def _emit(summary: dict, as_json: bool, output: Optional[Path], render) -> None:
    """Write JSON to -o, print JSON alone on stdout with --json, else a readable summary."""
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        jsonio.write(summary, output)
    if as_json:
        sys.stdout.write(jsonio.dumps(summary))
    else:
        render(summary, out_console)


# --- measure ---------------------------------------------------------------------------
@app.command()
def measure(
    paths: list[Path] = typer.Argument(..., help="Telemetry: RST release, Harbor jobs, Terminal-Bench runs, or Parquet/CSV/JSONL files or globs."),
    tasks: Optional[Path] = typer.Option(None, "--tasks", help="Tasks root (metadata/tasks.parquet + data/*.tar)."),
    fmt: Optional[str] = typer.Option(None, "--format", help="Force a reader: rst, harbor, terminal-bench, table."),
    column_map: Optional[str] = typer.Option(None, "--map", help="canonical=source[,...] for generic tables."),
    time_unit: Optional[str] = typer.Option(None, "--time-unit", help="Epoch unit for numeric times: s, ms, us, ns (default: detect)."),
    assume_tz: str = typer.Option("UTC", "--assume-tz", help="Time zone for naive timestamps."),
    reward_key: str = typer.Option("reward", "--reward-key", help="Key in Harbor verifier_result.rewards."),
    model: Optional[list[str]] = typer.Option(None, "--model", help="Keep only these models (repeatable)."),
    since: Optional[str] = typer.Option(None, "--since", help="Keep rollouts started at or after this ISO time."),
    until: Optional[str] = typer.Option(None, "--until", help="Keep rollouts started before this ISO time."),
    pass_threshold: float = typer.Option(1.0, "--pass-threshold", help="A reward at or above this passes."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout and nothing else."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write the JSON summary to FILE."),
) -> None:
    """Measure a rollout fleet from its telemetry."""
    from sandbox_fleet.measure import measure_paths
    from sandbox_fleet.measure.render import render_summary

    summary = measure_paths(
        [str(p) for p in paths],
        tasks=str(tasks) if tasks else None,
        fmt=fmt,
        column_map=column_map,
        time_unit=time_unit,
        assume_tz=assume_tz,
        reward_key=reward_key,
        models=model,
        since=since,
        until=until,
        pass_threshold=pass_threshold,
    )
    _emit(summary, as_json, output, render_summary)


def main() -> None:
    """Console-script entry point: run the app, turning InputError into one line + exit 2."""
    try:
        app()
    except InputError as exc:
        err_console.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        raise SystemExit(exc.exit_code) from None


if __name__ == "__main__":
    main()
