"""The main job on the bundled default data: telemetry -> measure -> plan -> simulate -> report.

``./dev demo`` runs :func:`run_demo`. The default data is a small synthetic RST-style
release (the published campaign at scale 0.05, built once by ``synth`` and cached
under the output folder), so a fresh clone needs no download. Everything is written
below ``out_dir``; nothing else on disk is touched.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from sandbox_fleet import jsonio


def run_demo(out_dir: str | Path = "out", scale: float = 0.05, seed: int = 1, progress: bool = True) -> dict:
    """Build (or reuse) the default corpus and run every stage on it; returns the written paths.

    Files: ``measure.json``, ``plan.json``, ``scenario.toml`` (calibrated from the
    corpus), ``simulate.json`` and ``simulated.parquet`` (its telemetry),
    ``checks.json`` and ``report.html``.
    """
    from sandbox_fleet.measure import measure_paths
    from sandbox_fleet.plan import PlanOptions, make_plan
    from sandbox_fleet.report import run_checks, write_report
    from sandbox_fleet.report.checks.model import checks_summary
    from sandbox_fleet.simulate.scenario.calibrate import scenario_from_telemetry
    from sandbox_fleet.simulate.scenario.run import simulate_scenario
    from sandbox_fleet.synth.cache import default_corpus

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    corpus = default_corpus(out / "cache", scale=scale, seed=seed, progress=progress)
    trajectories, tasks = corpus / "trajectories", corpus / "tasks"

    measured = measure_paths([str(trajectories)], tasks=str(tasks), progress=progress,
                             cache_dir=str(out / "cache" / "tasks-cache"))
    jsonio.write(measured.to_json(), out / "measure.json")

    from sandbox_fleet.measure.intervals import load_intervals

    # the mixed purchase priced by replaying the corpus's rollouts on nodes
    history = load_intervals([str(trajectories)], tasks=str(tasks), cache_dir=str(out / "cache" / "tasks-cache"))
    plan = make_plan(measured, PlanOptions(), history=history)
    jsonio.write(plan.to_json(), out / "plan.json")

    scenario = out / "scenario.toml"
    scenario_from_telemetry([str(trajectories)], scenario, seed=seed)
    simulated = simulate_scenario(scenario, telemetry_out=out / "simulated.parquet", progress=progress)
    jsonio.write(simulated.to_json(), out / "simulate.json")

    checks = run_checks(measured, plan)
    jsonio.write(checks_summary(checks), out / "checks.json")

    report = write_report(out / "report.html", measured, plan, simulated, command="sandbox-fleet demo")
    return {
        "corpus": str(corpus),
        "measure": str(out / "measure.json"),
        "plan": str(out / "plan.json"),
        "scenario": str(scenario),
        "simulate": str(out / "simulate.json"),
        "simulated": str(out / "simulated.parquet"),
        "checks": str(out / "checks.json"),
        "report": str(report),
        "_summaries": (measured, plan, simulated, checks),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the demo and print each stage's terminal summary."""
    from sandbox_fleet.measure.render import render_summary as render_measure
    from sandbox_fleet.plan.render import render_plan
    from sandbox_fleet.report.commands import render_checks
    from sandbox_fleet.simulate.render import render_summary as render_sim

    args = list(sys.argv[1:] if argv is None else argv)
    out_dir = args[0] if args else "out"
    console = Console()
    written = run_demo(out_dir)
    measured, plan, simulated, checks = written.pop("_summaries")
    for title, render, data in (
        ("measure", render_measure, measured),
        ("plan", render_plan, plan),
        ("simulate (calibrated replay of the corpus)", render_sim, simulated),
        ("check", render_checks, checks),
    ):
        console.rule(f"[bold]{title}")
        render(data, console)
    console.rule("[bold]written")
    for name, path in written.items():
        console.print(f"  {name:9} {path}")
    console.print(f"\nOpen {written['report']} in a browser for the charts.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
