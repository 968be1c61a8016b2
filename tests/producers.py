"""Summaries made by the real producers, for the consumer tests (plan, report, check).

Each corpus is canonical telemetry built here and measured by ``measure_telemetry``; the plan
is ``make_plan`` of that measurement and the simulation ``run_scenario`` of a bundled example.
No consumer test writes a summary by hand: a key the producer stops writing breaks them.
"""

from __future__ import annotations

import pyarrow as pa

from sandbox_fleet.telemetry import Telemetry, conform_rollouts
from sandbox_fleet.telemetry.record import TASK_SCHEMA

T0_US = 1_750_000_000_000_000
TS = pa.timestamp("us", tz="UTC")


def measure_doc(**figures) -> dict:
    """A measure summary carrying only ``figures``: every other figure null (not measured), as an
    older or sparser summary reads. For threshold tests of one check; validated like any other."""
    from sandbox_fleet.measure.model import MeasureSummary

    return {"schema_version": MeasureSummary.VERSION, "kind": "measure", **figures}


def _ts(seconds: list[float]) -> pa.Array:
    return pa.array([T0_US + round(s * 1_000_000) for s in seconds], type=pa.int64()).cast(TS)


def _tasks(rows: list[tuple]) -> pa.Table:
    """``(task_id, cpus, memory_mb, storage_mb, bundle_bytes[, gpus])`` rows as a canonical task table."""
    n = len(rows)
    return pa.table({
        "task_id": [r[0] for r in rows], "task_group_id": [None] * n,
        "cpus": [float(r[1]) for r in rows], "memory_mb": [r[2] for r in rows], "storage_mb": [r[3] for r in rows],
        "gpus": [r[5] if len(r) > 5 else 0 for r in rows], "build_timeout_s": [600.0] * n, "agent_timeout_s": [7200.0] * n,
        "verifier_timeout_s": [900.0] * n, "bundle_bytes": [r[4] for r in rows], "image": [None] * n,
    }, schema=TASK_SCHEMA)


def _tokens(turns: list[int]) -> dict[str, list[int]]:
    """Every turn re-sends the transcript: input = 800 t (t + 1) / 2; 80% of it served from cache."""
    inp = [800 * t * (t + 1) // 2 for t in turns]
    return {"turns": turns, "input_tokens": inp, "output_tokens": [40 * t for t in turns],
            "cached_tokens": [x * 4 // 5 for x in inp]}


def healthy_intervals(n: int = 1200, slots: int = 100) -> tuple[list[float], list[float]]:
    """Start and finish seconds of the healthy corpus: slot ``s`` opens at 7 s and runs its
    rollouts back to back, rollout ``i`` holding 1,200 + (37 i mod 1,000) s."""
    start, finish = [0.0] * n, [0.0] * n
    for s in range(slots):
        t = s * 7.0
        for k in range(n // slots):
            i = s * (n // slots) + k
            hold = 1200.0 + (i * 37) % 1000
            start[i], finish[i] = t, t + hold
            t += hold
    return start, finish


def healthy_exception_type(i: int) -> str | None:
    """5% of rollouts raise: 15 DaytonaError, 45 AgentTimeoutError, over both models and jobs."""
    if i % 40 not in (0, 23):
        return None
    return "DaytonaError" if i % 80 == 0 else "AgentTimeoutError"


def healthy_telemetry() -> Telemetry:
    """1,200 rollouts on 100 always-busy slots: every check of ``checks.toml`` passes on it but
    ``cap_below_configured`` (the plateau at 100 under the configured 150 warns).

    Holds 1,200..2,199 s back to back per slot (duty near 0.85, tail ratio under 2), 5% exceptions
    spread over two models, two jobs, 50 tasks and 6 nodes (200 rollouts, 10 exceptions each), 60%
    pass, build 10% of each hold, turns 1/2/5/10/20 with input tokens exactly 800 n (n + 1) / 2. The
    configured caps (150 a job; the two run side by side, so the fleet's is their sum) are never reached.
    """
    n = 1200
    start, finish = healthy_intervals(n)
    types = [healthy_exception_type(i) for i in range(n)]
    exc = [t is not None for t in types]
    turns = [(1, 2, 5, 10, 20)[i % 5] for i in range(n)]
    cols = {
        "id": [f"r{i}" for i in range(n)],
        # each task takes 5 consecutive rollouts at a time (3 pass, 2 fail): its groups carry signal (issue 40)
        "task_id": [f"task-{(i // 5) % 50:02d}" for i in range(n)],
        "model": [("model-a", "model-b")[i % 2] for i in range(n)],
        "job": [("job-1", "job-2")[(i // 2) % 2] for i in range(n)],
        # 6 nodes, each 40 consecutive rollouts at a time: 2 of every 40 raise, so every node sits at 5%
        "node": [f"node-{(i // 40) % 6}" for i in range(n)],
        "started_at": _ts(start), "finished_at": _ts(finish),
        "environment_setup_started_at": _ts(start),
        "environment_setup_finished_at": _ts([a + 0.1 * (b - a) for a, b in zip(start, finish)]),
        **_tokens(turns),
        "reward": [0.0 if exc[i] or i % 5 >= 3 else 1.0 for i in range(n)],
        "has_exception": exc,
        "exception_type": types,
        "has_trajectory": [True] * n,
    }
    tasks = _tasks([(f"task-{k:02d}", 1, 2048, 6144, 40_000 + 1_000 * k) for k in range(50)])
    return Telemetry(conform_rollouts(pa.table(cols)), tasks=tasks, caps={"job-1": 150, "job-2": 150},
                     sources=["<healthy fleet>"])


#: the mixed corpus's task requests: (cpus, memory MB, storage MB, tasks)
MIXED_REQUESTS = ((1, 2048, 6144, 600), (2, 8192, 20480, 300), (4, 16384, 51200, 80), (8, 65536, 102400, 20))
#: its turn histogram: turns -> rollouts
MIXED_TURNS = {1: 100, 5: 300, 11: 400, 21: 150, 50: 50}


def mixed_telemetry() -> Telemetry:
    """1,000 tasks with four request kinds, one rollout each; 400 run together at the peak.

    Bundles are 50,000 bytes each except 5,000,000 for the last task (total 54,950,000 bytes).
    """
    reqs = [r for cpus, mem, disk, k in MIXED_REQUESTS for r in [(cpus, mem, disk)] * k]
    tasks = _tasks([(f"t{j:04d}", c, m, d, 5_000_000 if j == len(reqs) - 1 else 50_000)
                    for j, (c, m, d) in enumerate(reqs)])
    n = len(reqs)
    # 400 start together and hold 3,000 s; the other 600 follow one every 30 s, each for 1,500 s.
    start = [0.0 if i < 400 else 4_000.0 + 30.0 * (i - 400) for i in range(n)]
    finish = [s + (3_000.0 if i < 400 else 1_500.0) for i, s in enumerate(start)]
    turns = [t for t, k in MIXED_TURNS.items() for _ in range(k)]
    cols = {
        "id": [f"m{i}" for i in range(n)], "task_id": [f"t{i:04d}" for i in range(n)],
        "model": ["policy"] * n, "job": ["mixed"] * n,
        "started_at": _ts(start), "finished_at": _ts(finish), **_tokens(turns),
        "reward": [1.0 if i % 4 == 0 else 0.0 for i in range(n)], "has_exception": [False] * n,
        "has_trajectory": [True] * n,
    }
    return Telemetry(conform_rollouts(pa.table(cols)), tasks=tasks, caps={"mixed": 400}, sources=["<mixed corpus>"])


#: the pools corpus: (cpus, memory MB, storage MB, gpus, tasks, rollouts per task, hold s)
POOL_KINDS = ((1, 2048, 6144, 0, 90, 100, 360.0), (4, 16384, 20480, 1, 6, 100, 1800.0), (200, 4096, 6144, 0, 4, 100, 900.0))


def pools_telemetry() -> Telemetry:
    """100 tasks of three kinds, 100 rollouts each: a CPU kind (9,000 rollouts, 900 sandbox-h), a
    one-GPU kind (600, 300 h) and a 200-core kind no bundled node type holds (400, 100 h)."""
    rows, holds, task_of = [], [], []
    for cpus, mem, disk, gpus, k, per_task, hold in POOL_KINDS:
        for _ in range(k):
            tid = f"p{len(rows):03d}"
            rows.append((tid, cpus, mem, disk, 50_000, gpus))
            task_of += [tid] * per_task
            holds += [hold] * per_task
    n = len(task_of)
    start = [float(i) for i in range(n)]
    cols = {
        "id": [f"r{i}" for i in range(n)], "task_id": task_of, "model": ["policy"] * n, "job": ["pools"] * n,
        "started_at": _ts(start), "finished_at": _ts([s + h for s, h in zip(start, holds)]), **_tokens([5] * n),
        "reward": [1.0 if i % 4 == 0 else 0.0 for i in range(n)], "has_exception": [False] * n,
        "has_trajectory": [True] * n,
    }
    return Telemetry(conform_rollouts(pa.table(cols)), tasks=_tasks(rows), sources=["<pools corpus>"])
