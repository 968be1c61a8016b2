"""Readable terminal rendering of a simulate summary (``--json`` prints the dict instead)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table


def _f(v, nd: int = 1) -> str:
    if v is None:
        return "-"
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:,.{nd}f}"


def render_summary(s: dict, console: Console) -> None:
    if "scenario" in s and "rollouts" in s and "concurrency" not in s:
        render_calibration(s, console)
        return
    t = Table(title=f"simulate: {s.get('scenario', '')} (seed {s.get('seed', '-')})", show_header=False)
    t.add_column("figure")
    t.add_column("value", justify="right")
    c, h, q, o = s["concurrency"], s["hold_s"], s["queue_wait_s"], s["outcomes"]
    rows = [
        ("rollouts / completed / dropped", f"{_f(s['rollouts'])} / {_f(s['completed'])} / {_f(s['dropped'])}"),
        ("simulated time", f"{_f(s['sim_time_s'] / 3600, 2)} h"),
        ("concurrency mean / peak", f"{_f(c['mean'])} / {_f(c['peak'])}"),
        ("at peak", f"{_f(c['touches'])} touches, {_f(c['time_at_peak_s'])} s"),
        ("utilisation", "-" if s["utilisation"] is None else f"{s['utilisation']:.1%}"),
        ("hold median / p99 / mean (s)", f"{_f(h['median'])} / {_f(h['p99'])} / {_f(h['mean'])}"),
        ("queue wait mean / p50 / p99 (s)", f"{_f(q['mean'])} / {_f(q['p50'])} / {_f(q['p99'])}"),
        ("exceptions / timeouts", f"{_f(o['exceptions'])} / {_f(o['timeouts'])} (+{_f(o['retried_attempts'])} retried attempts)"),
        ("sandbox-hours (lost: exception / preemption)",
         f"{_f(s['sandbox_hours'])} ({_f(s['lost_sandbox_hours']['exception'])} / {_f(s['lost_sandbox_hours']['preemption'])})"),
    ]
    if s.get("step_s") is not None:
        st = s["step_s"]
        rows.append(("RL step mean / p50 / p99 (s)", f"{_f(st['mean'])} / {_f(st['p50'])} / {_f(st['p99'])}"))
        rows.append(("trainer idle", f"{s['trainer_idle_fraction']:.1%}"))
    if s.get("inference") is not None:
        i = s["inference"]
        pct = (lambda v: "-" if v is None else f"{v:.1%}")
        rows.append(("inference: replicas / GPUs / calls", f"{_f(i['replicas'])} / {_f(i['gpus'])} / {_f(i['calls'])}"))
        rows.append(("inference: utilisation / mean batch", f"{pct(i['utilisation'])} / {_f(i['mean_batch'])}"))
        rows.append(("inference: seat wait mean / TTFT p50 / p99 (s)",
                     f"{_f(i['queue_wait_s']['mean'], 2)} / {_f(i['ttft_s']['p50'], 2)} / {_f(i['ttft_s']['p99'], 2)}"))
        rows.append(("inference: cache hit rate / evicted GiB", f"{pct(i['cache_hit_rate'])} / {_f(i['evicted_gb'])}"))
        rows.append(("hold stretch (vs unloaded)", _f(s["hold_stretch"], 3)))
    rows.append(("events", _f(s["events"])))
    if s.get("events_per_s") is not None:
        rows.append(("events/s (wall)", _f(s["events_per_s"], 0)))
    for k, v in rows:
        t.add_row(k, v)
    console.print(t)
    for name, w in (s.get("workloads") or {}).items():
        console.print(f"  {name} (pool {w['pool']}): {_f(w['completed'])}/{_f(w['rollouts'])} completed, "
                      f"mean wait {_f(w['queue_wait_s']['mean'])} s, {_f(w['sandbox_hours'])} sandbox-h")
    if s.get("telemetry") is not None:
        console.print(f"telemetry: {s['telemetry']}")


def render_calibration(s: dict, console: Console) -> None:
    console.print(f"wrote {s['scenario']}: cap {s['peak']:,} (measured peak, {s['touches']:,} touches), "
                  f"{s['rollouts']:,} rollouts, exception rate "
                  f"{'not recorded' if s['exception_rate'] is None else format(s['exception_rate'], '.1%')}, "
                  f"mean concurrency {s['mean_concurrency']:.1f}")
    # markup=False: "[fleet]" is text here, not a Rich style tag (which would swallow it)
    if "inference" in s:
        i = s["inference"]
        console.print(f"--inference: {i['turn_tokens']:.1f} tokens/turn, {i['decode_per_turn']:.1f} decoded per turn, "
                      f"{i['command_s']:.2f} s command per turn (assumed {i['reference_decode_tok_s']:g} tok/s per "
                      f"sequence), {i['replicas']} replicas")
    console.print(f"next: edit [fleet] cap or the workload, then `sandbox-fleet simulate {s['scenario']}`", markup=False)
