"""Every default and carried-over figure a purchase order rests on, named with its source.

``source`` is one of: ``default`` (the tool chose it), ``measured`` (from the input's telemetry),
``published`` (the input is the source document's published figures), ``flag`` (the user passed
it), ``catalog`` (the node or GPU catalog).
"""

from __future__ import annotations

from typing import Optional

from sandbox_fleet.plan.catalog import price_basis
from sandbox_fleet.plan.model import Assumption, Caching, PerGpu, PlanInference, Source, Target


class Assumptions:
    """An ordered list being built; ``add`` skips figures that are None unless told otherwise."""

    def __init__(self, input_source: str):
        self.measured: Source = "published" if input_source == "published" else "measured"
        self.items: list[Assumption] = []

    def add(self, name: str, value, unit: str, source: Source, detail: str = "", *, keep_none: bool = False) -> None:
        if value is None and not keep_none:
            return
        self.items.append(Assumption(name=name, value=value, unit=unit, source=source, detail=detail))

    def from_input(self, name: str, value: Optional[float], unit: str, detail: str = "") -> None:
        self.add(name, value, unit, self.measured, detail)



def _src(value, default, flagged: bool = True) -> Source:
    """``default`` when a setting still has its default value, else ``flag``."""
    return "default" if value == default or not flagged else "flag"


def collect_assumptions(
    fig, opts, input_source: str, *, target: Target, tier_source: Source, node, reserve, reserve_source: Source,
    inference: PlanInference, caching: Caching, request_source: str,
) -> list[Assumption]:
    """The plan's ``assumptions`` list (see the module docstring for ``source``)."""
    a = Assumptions(input_source)
    n = target.concurrency
    measured = target.source in ("measured-peak", "censored-demand")
    a.add("target_concurrency", n, "sandboxes", "measured" if measured else "flag", target.detail or "")
    if target.censored is not None and target.duty is not None:
        a.add("duty", target.duty, "fraction", "measured", "measured mean concurrency / target (the measured work on the target's slots)")
    elif target.duty is not None:
        a.add("duty", target.duty, "fraction", "default", f"the {target.source} target's own duty (busy / cap)")
    else:
        a.from_input("duty", fig.duty, "fraction", "mean / peak concurrency, carried over")
    a.add("price_tier", opts.price_tier, "tier", tier_source, target.tier_basis if target.tier_basis is not None else "--price-tier")
    a.add("node_prices", node.name, "node type", "catalog", price_basis(node, opts.nodes_file))
    a.add("system_reserve_cpu", reserve.cpu, "cores per node", reserve_source, "kubelet + OS reserve (plan/reserve.py)")
    a.add("system_reserve_memory_gb", reserve.memory / 1024.0, "GiB per node", reserve_source, "kubelet + OS reserve + eviction threshold")
    named: dict[str, Source] = {"flag": "flag", "default": "default"}
    src = named.get(request_source, a.measured)
    a.add("sandbox_request", "from --request" if src == "flag" else ("1 cpu / 2048 MB / 6144 MB" if src == "default" else "measured task requests"),
          "request", src, "per-sandbox cpu / memory / disk")
    a.from_input("sandbox_hours_per_pass", fig.sandbox_hours_per_pass, "sandbox-h", "sandbox-hours per passing rollout")
    a.from_input("exception_rate", fig.exception_rate, "fraction", "share of rollouts ending in an exception")
    a.from_input("prefill_per_sandbox_s", fig.prefill_per_s, "tokens/sandbox-s")
    a.from_input("decode_per_sandbox_s", fig.decode_per_s, "tokens/sandbox-s")
    a.from_input("turn_tokens", fig.turn_tokens, "tokens/turn", "the quadratic context model's c")
    a.add("caching_saving", caching.saving_applied, "x", "flag" if opts.turns else a.measured, caching.saving_basis or "")
    a.from_input("cached_fraction", caching.cached_fraction_measured, "fraction", "measured prefix-cache hits")
    a.add("prefix_break", opts.prefix_break, "fraction", _src(opts.prefix_break, 0.0), "turns that break the cached prefix")
    measured_ctx = (inference.context_basis or "").startswith("measured")
    a.add("context_tokens_mean", inference.context_tokens_mean, "tokens", a.measured if measured_ctx else "default",
          "turn-weighted mean context" + ("" if measured_ctx else " from the turn curve") + ": " + (inference.context_basis or ""))
    if opts.gpu_name:
        a.add("gpu", opts.gpu_name, "GPU type", "catalog", "memory, TFLOP/s, TB/s and $/h from the GPU catalog unless a flag overrides")
    cat = opts.gpu_from_catalog
    a.add("gpu_memory_gb", opts.gpu_memory_gb, "GiB", "catalog" if "memory_gb" in cat else "flag")
    a.add("gpu_usd_h", opts.gpu_usd_h, "USD per GPU-h", "catalog" if "usd_h" in cat else "flag", "illustrative" if "usd_h" in cat else "")
    pg = inference.per_gpu or PerGpu()
    a.add("gpu_prefill_tok_s", pg.prefill_tok_s, "tokens/s", "flag" if opts.gpu_prefill_tok_s else "default", pg.source or "")
    a.add("gpu_decode_tok_s", pg.decode_tok_s, "tokens/s", "flag" if opts.gpu_decode_tok_s else "default", pg.source or "")
    if opts.roofline is not None:
        rl = opts.roofline
        a.add("roofline_utilisation", rl.utilisation, "fraction of peak", _src(rl.utilisation, 0.4))
        a.add("bytes_per_param", rl.bytes_per_param, "bytes", _src(rl.bytes_per_param, 2.0))
        a.add("decode_batch", rl.decode_batch, "sequences per replica", _src(rl.decode_batch, 64))
    if pg.prefill_tok_s:
        a.add("gpu_utilisation", opts.gpu_utilisation, "fraction", _src(opts.gpu_utilisation, 0.7), "headroom on top of the per-GPU rates")
    if inference.memory is not None:
        a.add("gpu_memory_fraction", opts.gpu_memory_fraction, "fraction", _src(opts.gpu_memory_fraction, 0.9))
        a.add("max_tp", opts.max_tp, "GPUs per replica", _src(opts.max_tp, 8))
        a.add("kv_offload_gb", opts.kv_offload_gb, "GiB per GPU", _src(opts.kv_offload_gb, 0.0))
    a.add("spot_interruptions_per_node_h", node.spot_interruptions_per_node_h, "per node-hour", "catalog", node.spot_interruptions_source)
    a.from_input("trajectory_bytes_median", fig.trajectory_bytes_median, "bytes", "median trajectory record")
    a.add("substrate_overheads", opts.substrates_file or "bundled substrates.toml", "catalog",
          "flag" if opts.substrates_file else "catalog",
          "cold start and per-action overhead per substrate (illustrative, each with its source): the rented holds "
          "and the substrates' worker-hours; replace with your measurements")
    return a.items
