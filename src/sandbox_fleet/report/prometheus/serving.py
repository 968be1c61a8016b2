"""Rules over the serving pool's own metrics (vLLM and SGLang), with the plan's assumptions as thresholds.

The document's "silent prefix-cache misses" failure mode: the sandboxes look healthy while the
inference pool recomputes every transcript. These rules watch the engines' own series, by the
names the engines export (vLLM's V1 engine and SGLang's ``--enable-metrics``):

- prefix-cache hits: vLLM ``vllm:prefix_cache_hits_total`` / ``vllm:prefix_cache_queries_total``
  (tokens; the ratio of their rates), SGLang ``sglang:cache_hit_rate`` (a gauge, averaged);
- KV-cache usage: vLLM ``vllm:kv_cache_usage_perc`` (``vllm:gpu_cache_usage_perc`` before it was
  renamed), SGLang ``sglang:token_usage``; both 0..1;
- queue time: the ``_sum`` of vLLM ``vllm:request_queue_time_seconds`` / SGLang
  ``sglang:queue_time_seconds`` over the ``_sum`` of their ``e2e_request_latency_seconds``.

Thresholds (``ServingBasis``), all from the plan:

- hit ratio, warning below the ratio the plan's cached GPU line assumes,
  ``h = 1 - prefill_tok_s_cached / prefill_tok_s``; critical below ``1 - (1 - h) / u``, where the
  extra prefill alone would take the pool past 100% of the compute it was bought to run at the
  utilisation target ``u`` (computed prefill grows as ``(1 - hit) / (1 - h)``, the headroom is ``1 / u``);
- KV usage, warning above ``u``; critical above ``SATURATED`` (0.95, stated: near full, the
  engines preempt or queue new sequences);
- queue share of request latency, warning above ``u`` and critical above ``SATURATED``: in an
  M/M/1 queue at utilisation ``rho`` the wait is ``rho / (1 - rho)`` service times, so the waiting
  share of the latency is ``rho`` itself (a stated model of one replica).

Every expression is aggregated ``by (model_name)``, the label both engines put on every series.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.model import PlanSummary
from sandbox_fleet.report.prometheus.rules import Rule, _n

GROUP = "sandbox-fleet-serving"
WINDOW = "15m"
FOR_S = 900.0
SATURATED = 0.95
BY = "model_name"


@dataclass(frozen=True)
class ServingBasis:
    """The plan's figures the serving rules compare with, and where they came from."""

    hit_ratio: float
    hit_ratio_floor: float
    utilisation: float
    basis: str


def serving_basis(plan: PlanSummary) -> ServingBasis:
    """Thresholds from a plan's inference block; InputError when the plan has no prefill figures."""
    inf = plan.inference
    prefill = inf.prefill_tok_s if inf else None
    cached = inf.prefill_tok_s_cached if inf else None
    u = inf.utilisation_target if inf else None
    if not prefill or cached is None or not u:
        raise InputError("`serving_rules`: the plan has no inference figures (prefill_tok_s, prefill_tok_s_cached, "
                         "utilisation_target); plan from a summary with token telemetry")
    h = 1.0 - cached / prefill
    floor = max(1.0 - (1.0 - h) / u, 0.0)
    basis = (f"planned hit ratio 1 - {cached:,.0f} / {prefill:,.0f} prefill tok/s = {h:.4f}; "
             f"utilisation target {u:g}; critical floor 1 - (1 - {h:.4f}) / {u:g} = {floor:.4f}")
    return ServingBasis(h, floor, u, basis)


def _rate_ratio(num: str, den: str) -> str:
    return (f"sum by ({BY}) (rate({num}[{WINDOW}])) / "
            f"(sum by ({BY}) (rate({den}[{WINDOW}])) > 0)")


VLLM_HITS = _rate_ratio("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total")
SGLANG_HITS = f"avg by ({BY}) (avg_over_time(sglang:cache_hit_rate[{WINDOW}]))"
VLLM_KV = f'max by ({BY}) (avg_over_time({{__name__=~"vllm:kv_cache_usage_perc|vllm:gpu_cache_usage_perc"}}[{WINDOW}]))'
SGLANG_KV = f"max by ({BY}) (avg_over_time(sglang:token_usage[{WINDOW}]))"
VLLM_QUEUE = _rate_ratio("vllm:request_queue_time_seconds_sum", "vllm:e2e_request_latency_seconds_sum")
SGLANG_QUEUE = _rate_ratio("sglang:queue_time_seconds_sum", "sglang:e2e_request_latency_seconds_sum")


def _either(vllm: str, sglang: str, cond: str) -> str:
    return f"({vllm}) {cond} or ({sglang}) {cond}"


def _band(alert: str, gate: str, exprs: tuple[str, str], warn: tuple[str, str], crit: str,
          texts: tuple[str, str], description: str) -> list[Rule]:
    """A warning rule (``warn`` = (condition, band guard)) and a critical one on the same two series."""
    vllm, sglang = exprs
    return [Rule(gate, alert, "warning", _either(vllm, sglang, f"{warn[0]} {warn[1]}"), FOR_S, texts[0], description),
            Rule(gate, alert, "critical", _either(vllm, sglang, crit), FOR_S, texts[1], description)]


def serving_rules(plan: PlanSummary) -> list[Rule]:
    """The serving-pool alerting rules for a plan, warning then critical per figure."""
    b = serving_basis(plan)
    h, floor, u = _n(round(b.hit_ratio, 6)), _n(round(b.hit_ratio_floor, 6)), _n(b.utilisation)
    sat = _n(SATURATED)
    who = "{{ $labels.model_name }}"
    out = _band("SandboxFleetServingPrefixCache", "serving_prefix_cache", (VLLM_HITS, SGLANG_HITS),
                (f"< {h}", f">= {floor}"), f"< {floor}",
                (f"{who}: prefix-cache hit ratio {{{{ $value | humanizePercentage }}}}, under the plan's {b.hit_ratio:.1%}",
                 f"{who}: prefix-cache hit ratio {{{{ $value | humanizePercentage }}}}: the extra prefill exceeds the "
                 f"pool's headroom (under {b.hit_ratio_floor:.1%})"),
                "The serving pool recomputes prefixes the plan counted as cached: the GPUs bought for the cached "
                "line queue. Look for a broken prefix (timestamps, reordered tools, front truncation) or a router "
                f"without session affinity. Basis: {b.basis}.")
    hot = ((f"> {u}", f"<= {sat}"), f"> {sat}")  # KV and queue: above the utilisation target, then saturated
    out += _band("SandboxFleetServingKvCache", "serving_kv_cache", (VLLM_KV, SGLANG_KV), *hot,
                 (f"{who}: KV cache {{{{ $value | humanizePercentage }}}} used, above the plan's utilisation target {b.utilisation:g}",
                  f"{who}: KV cache {{{{ $value | humanizePercentage }}}} used: near full, sequences are preempted or queued"),
                 "More live context than the pool was sized for: contexts grew or replicas were lost. "
                 f"Add replicas or offload KV before the queue grows. Basis: utilisation target {b.utilisation:g}; "
                 f"saturation {SATURATED:g} (stated).")
    out += _band("SandboxFleetServingQueue", "serving_queue", (VLLM_QUEUE, SGLANG_QUEUE), *hot,
                 (f"{who}: requests wait {{{{ $value | humanizePercentage }}}} of their latency in the queue",
                  f"{who}: requests wait {{{{ $value | humanizePercentage }}}} of their latency in the queue: saturated"),
                 "Every sandbox's turn waits for the model: the RL step stretches while the sandboxes idle. "
                 f"In M/M/1 the waiting share of latency equals the utilisation, so above {b.utilisation:g} the "
                 "replicas run hotter than planned: add replicas or re-plan the GPUs.")
    return out
