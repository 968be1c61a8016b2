"""Terminal summary of a ``synth`` run (the JSON summary, made readable)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

from sandbox_fleet.termtable import grid, show

if TYPE_CHECKING:
    from sandbox_fleet.synth.model import SynthSummary


def render_synth(summary: SynthSummary, console: Console) -> None:
    console.print(
        f"[bold]synthetic {summary.preset.upper()} release[/bold] at scale {summary.scale:g}, "
        f"seed {summary.seed}: {summary.rollouts:,} rollouts, {summary.tasks:,} tasks "
        f"in {summary.shards} shard(s)"
    )
    console.print(
        f"pool cap {summary.cap:,}, refill delay {summary.provision_delay_s:g} s; "
        f"simulated span {summary.simulated_span_s / 86400:.2f} days ({summary.events:,} events)"
    )
    table = grid(None, ("run (model)", "batch", "steps", "rollouts", "train s", "starts at day"))
    for r in summary.runs:
        table.add_row(r.model, f"{r.batch:,}", str(r.steps), f"{r.rollouts:,}", f"{r.train_s:,.0f}", f"{r.start_s / 86400:.1f}")
    show(console, table)
    console.print(f"trajectories: {summary.trajectories}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"tasks root:   {summary.tasks_root}", markup=False, highlight=False, soft_wrap=True)
    console.print("measure it:")
    # a command to copy: on its own line, whole (soft_wrap: the terminal folds it, Rich never breaks it)
    console.print(f"sandbox-fleet measure {summary.out}/trajectories --tasks {summary.tasks_root}",
                  markup=False, highlight=False, soft_wrap=True)
    console.print(f"[dim]built in {summary.timing.total_s:.1f} s[/dim]")
