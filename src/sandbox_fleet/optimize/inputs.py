"""INPUT to a base loop: a scenario TOML (its episode and model), or a measure summary with tokens.

The search rewrites only the fleet's cap, the workload's size and the ``[inference]`` pool; every
other table of the input (turn and command draws, build, verifier, run) is kept as given. A measure
summary is turned into turn draws the way ``simulate --from --inference`` calibrates them: the turn
curve ``c`` (context growth per turn), ``d`` = output tokens per turn, prefill ``c - d``, command
time = hold less decoding at 50 tok/s per sequence, over the turns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.turns import lognormal_sigma
from sandbox_fleet.sweep.variants import read_scenario

if TYPE_CHECKING:
    from sandbox_fleet.measure.model import MeasureSummary

REFERENCE_DECODE_TOK_S = 50.0  # per-sequence decode rate assumed of the measured fleet
_WORKLOAD_SIZE = ("rate_per_s", "count", "start_s", "batch", "steps", "train_s", "staleness", "telemetry",
                  "arrivals_s", "population", "kind")
_POOL_SIZE = ("replicas", "gpus", "gpus_per_replica", "prefill_tok_s", "decode_tok_s", "iteration_base_ms",
              "kv_cache_gb", "kv_offload_gb", "gpu")


@dataclass
class Base:
    """The loop the search resizes: scenario data without fleet size, workload size or pool size."""

    name: str
    data: dict  # scenario TOML data; fleet/workload/inference are templates
    base_dir: Path
    pass_rate: float
    count: int  # rollouts per simulation (closed workload), before --scale
    kv_offload_gb: float
    cap: int | None  # the input's own cap, if any
    basis: list[str] = field(default_factory=list)
    #: the sandbox requests and their weights, as plan reads them (``plan.build``); None: plan's default request
    requests: list | None = None
    weights: list[float] | None = None
    fingerprint: str | None = None  # of the measure summary read; None for a scenario


#: what a measure summary handed over as a model is called in the output when no ``name`` is given
UNNAMED_MEASURE = "measure summary"


def base_of(source: MeasureSummary | str | Path, name: str | None, *, pass_rate: float | None,
            model_params_b: float | None, kv_bytes_per_token: float | None) -> Base:
    """The base loop of ``source``: a ``MeasureSummary`` (called ``name`` in the output and in
    messages), or a path read by ``load_input``."""
    from sandbox_fleet.measure.model import MeasureSummary

    if isinstance(source, MeasureSummary):
        return from_measure(source, Path(name or UNNAMED_MEASURE), pass_rate, model_params_b, kv_bytes_per_token)
    return load_input(Path(source), pass_rate=pass_rate, model_params_b=model_params_b,
                      kv_bytes_per_token=kv_bytes_per_token)


def load_input(path: Path, *, pass_rate: float | None, model_params_b: float | None,
               kv_bytes_per_token: float | None) -> Base:
    """Read INPUT (``.toml`` scenario or ``.json`` measure summary) into a ``Base``."""
    if not path.exists():  # a FIFO or a device: refused by the one reader, by kind
        raise InputError(f"{path}: not found; expected a scenario (.toml) or a measure summary (.json)")
    if path.suffix == ".toml":
        return _from_scenario(path, pass_rate)
    if path.suffix == ".json":
        from sandbox_fleet.measure.load import load_measure

        return from_measure(load_measure(path), path, pass_rate, model_params_b, kv_bytes_per_token)
    raise InputError(f"{path}: expected a scenario (.toml) or a measure summary (.json)")


def _from_scenario(path: Path, pass_rate: float | None) -> Base:
    data = read_scenario(path)
    if "fleets" in data or "workloads" in data:
        raise InputError(f"{path}: optimize searches one [fleet] and one [workload]; this file has several")
    turns = data.get("turns") or (data.get("workload") or {}).get("turns")
    inf = data.get("inference")
    if not isinstance(turns, dict) or "prefill_tokens" not in turns or "decode_tokens" not in turns or inf is None:
        raise InputError(f"{path}: no token draws ([turns] prefill_tokens and decode_tokens with an [inference] "
                         "table); the closed loop needs them")
    if "model_params_b" not in inf:
        raise InputError(f"{path}: key 'inference.model_params_b' missing; optimize prices GPUs by the roofline "
                         "and needs the model's size")
    wl = dict(data.get("workload") or {})
    count = wl.get("count")
    if not isinstance(count, int):
        raise InputError(f"{path}: key 'workload.count' missing; optimize needs rollouts per simulation "
                         "(a closed workload's count)")
    fleet = data.get("fleet") or {}
    out = {k: v for k, v in data.items() if k not in ("fleet", "workload", "inference")}
    given = (out.get("run") or {}).get("pass_rate")
    if pass_rate is None and isinstance(given, (int, float)) and 0 < given <= 1:
        return _scenario_base(path, out, fleet, wl, inf, count, float(given), f"pass rate {given:g} (run.pass_rate)")
    return _scenario_base(path, out, fleet, wl, inf, count, 1.0 if pass_rate is None else pass_rate,
                          f"pass rate {pass_rate:g} (--pass-rate)" if pass_rate is not None
                          else "pass rate 1 (a scenario has no rewards; give --pass-rate or run.pass_rate)")


def _scenario_base(path: Path, out: dict, fleet: dict, wl: dict, inf: dict, count: int, pass_rate: float,
                   pass_basis: str) -> Base:
    return Base(
        name=path.name, data={**out, "fleet": {k: v for k, v in fleet.items() if k not in ("cap", "unbounded")},
                              "workload": {k: v for k, v in wl.items() if k not in _WORKLOAD_SIZE},
                              "inference": {k: v for k, v in inf.items() if k not in _POOL_SIZE}},
        base_dir=path.parent, pass_rate=pass_rate, count=count,
        kv_offload_gb=float(inf.get("kv_offload_gb", 0.0)), cap=fleet.get("cap"),
        basis=[f"episode, turn and token draws from {path.name}", pass_basis],
    )


def _num(v, key: str, path: Path) -> float:
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise InputError(f"{path}: no token telemetry ({key} is {v!r}); the closed loop needs per-turn tokens: "
                         "measure telemetry with input_tokens, output_tokens and turns")
    return float(v)


def from_measure(m: MeasureSummary, path: Path, pass_rate: float | None, params_b: float | None,
                 kv_bytes: float | None) -> Base:
    """The base loop of a measure summary ``m`` (``path`` names it: read from there, or only its name
    when the model was handed over): turn draws from its tokens."""
    from sandbox_fleet.contract import fingerprint

    t = m.tokens
    if t is None:
        raise InputError(f"{path}: no token telemetry (tokens is null); the closed loop needs per-turn tokens: "
                         "measure telemetry with input_tokens, output_tokens and turns")
    c = _num(t.turn_tokens, "tokens.turn_tokens", path)
    rows = _num(t.rows, "tokens.rows", path)
    out_tok = _num(t.output, "tokens.output", path)
    med = _num(t.turns_median, "tokens.turns_median", path)
    hold = _num(t.hold_mean_s, "tokens.hold_mean_s", path)
    sigma, _ = lognormal_sigma(med, t.turns_p90)  # the plan's context and caching use the same fit
    mean_turns = med * math.exp(sigma**2 / 2)
    d = out_tok / rows / mean_turns
    command_s = max(1.0, (hold - out_tok / rows / REFERENCE_DECODE_TOK_S) / mean_turns)
    pr = pass_rate if pass_rate is not None else (m.outcomes.pass_rate if m.outcomes and m.outcomes.pass_rate else 1.0)
    params = params_b if params_b is not None else 27.0
    kvb = kv_bytes if kv_bytes is not None else 65536.0
    data = {
        "fleet": {},
        "workload": {},
        "turns": {"turns": {"dist": "lognormal", "median_s": med, "sigma": round(sigma, 6)},
                  "command": {"dist": "exponential", "mean_s": round(command_s, 6)},
                  "prefill_tokens": {"dist": "exponential", "mean_s": round(max(c - d, 1.0), 6)},
                  "decode_tokens": {"dist": "exponential", "mean_s": round(d, 6)}},
        "inference": {"model_params_b": params, "kv_bytes_per_token": kvb},
        "run": {"seed": 1},
    }
    reqs, weights = _measured_requests(m)
    return Base(
        name=path.name, data=data, base_dir=path.parent, pass_rate=pr, count=int(rows), kv_offload_gb=0.0,
        requests=reqs, weights=weights, fingerprint=fingerprint(m),
        cap=m.concurrency.peak if m.concurrency and m.concurrency.peak else None,
        basis=[f"turns lognormal(median {med:g}, sigma {sigma:.3f}) from tokens.turns_median/p90",
               f"context growth {c:g} tokens/turn (tokens.turn_tokens); decode {d:.1f} tokens/turn",
               f"command {command_s:.1f} s/turn: hold less decoding at {REFERENCE_DECODE_TOK_S:g} tok/s (assumed)",
               f"pass rate {pr:.4f}" + (" (--pass-rate)" if pass_rate is not None else " (outcomes.pass_rate)"),
               f"model {params:g}B parameters" + (" (--model-params-b)" if params_b is not None else " (assumed: --model-params-b)"),
               f"{kvb:g} KV bytes per token" + (" (--kv-bytes-per-token)" if kv_bytes is not None else " (assumed)")],
    )


#: plan's request when an input lists none (``plan.build.DEFAULT_REQUEST``, the source document's sandbox)
DEFAULT_REQUEST_CPU, DEFAULT_REQUEST_MEMORY_MB, DEFAULT_REQUEST_DISK_MB = 1.0, 2048.0, 6144.0


def _measured_requests(m) -> tuple[list | None, list[float] | None]:
    """The summary's sandbox requests, each weighted by its share of concurrent sandboxes, as plan
    weighs them (``plan.build._requests``): by Little's law a kind's share of the sandboxes held at
    once is its share of sandbox-time, so the kinds' sandbox-hours when every kind has them, else their
    rollouts (tasks where a kind names none), else tasks. Kinds of zero weight are left out."""
    from sandbox_fleet.plan.slots import ResourceRequest

    given = (m.tasks.requests if m.tasks is not None else None) or []
    if not given:
        return None, None
    by_rollouts = any(r.rollouts is not None and r.rollouts > 0 for r in given)
    by_hours = all(r.sandbox_hours is not None for r in given) and any((r.sandbox_hours or 0) > 0 for r in given)
    reqs, weights = [], []
    for r in given:
        w = r.sandbox_hours if by_hours else (r.rollouts if by_rollouts and r.rollouts is not None else r.tasks)
        w = 1.0 if w is None else float(w)
        if w > 0 and ((r.cpus or 0) > 0 or (r.memory_mb or 0) > 0):
            reqs.append(ResourceRequest(cpu=float(r.cpus or 0.0), memory=float(r.memory_mb or 0.0),
                                disk=float(r.storage_mb or 0.0), gpu=float(r.gpus or 0.0)))
            weights.append(w)
    return (reqs, weights) if reqs else (None, None)


def sandbox_requests(base: Base, cpu: float | None, memory_gb: float | None, disk_gb: float | None
                     ) -> tuple[list, list[float], str]:
    """The requests to pack (measured, else plan's default), flags overriding; and the basis line."""
    from sandbox_fleet.plan.slots import ResourceRequest

    default = ResourceRequest(cpu=DEFAULT_REQUEST_CPU, memory=DEFAULT_REQUEST_MEMORY_MB, disk=DEFAULT_REQUEST_DISK_MB)
    reqs: list = base.requests or [default]
    weights: list[float] = base.weights if base.requests and base.weights else [1.0]
    src = "measured (tasks.requests)" if base.requests else "plan's default request (the input lists none; assumed)"
    if cpu is not None or memory_gb is not None or disk_gb is not None:
        top = reqs[max(range(len(reqs)), key=lambda i: (weights[i], -i))]
        q = ResourceRequest(cpu=top.cpu if cpu is None else cpu, memory=top.memory if memory_gb is None else memory_gb * 1024.0,
                    disk=top.disk if disk_gb is None else disk_gb * 1024.0, gpu=top.gpu)
        reqs, weights, src = [q], [1.0], "--request over " + src
    shown = "; ".join(f"{q.cpu:g} CPU, {q.memory / 1024:g} GiB, {q.disk / 1024:g} GiB disk" for q in reqs)
    return reqs, weights, f"sandbox {shown}: {src}; packed as plan packs (node reserve, first-fit-decreasing)"
