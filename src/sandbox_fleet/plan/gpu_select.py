"""``--gpu NAME``: fill the per-GPU figures from the GPU catalog; explicit flags override each one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sandbox_fleet.errors import InputError
from sandbox_fleet.gpus import get_gpu, load_gpus


@dataclass(frozen=True)
class GpuFigures:
    """Per-GPU figures after the catalog and the flags: None where neither gives one."""

    name: Optional[str]
    tflops: Optional[float]
    hbm_tbs: Optional[float]
    memory_gb: Optional[float]
    usd_h: Optional[float]
    note: Optional[str] = None
    from_catalog: frozenset[str] = frozenset()  # which of tflops/hbm_tbs/memory_gb/usd_h the catalog gave


def gpu_figures(
    name: Optional[str],
    catalog_file: Optional[str],
    *,
    tflops: Optional[float],
    hbm_tbs: Optional[float],
    memory_gb: Optional[float],
    usd_h: Optional[float],
    model_given: bool,
) -> GpuFigures:
    """Merge ``--gpu`` with the per-figure flags. Without a model (parameters and KV bytes per token)
    a named GPU cannot be sized or priced: its figures are left out and the note says why."""
    if name is None:
        if catalog_file is not None:  # a catalog given is read (a missing or garbled one refused), --gpu or not
            load_gpus(catalog_file)
        return GpuFigures(None, tflops, hbm_tbs, memory_gb, usd_h)
    try:
        gpu = get_gpu(name, load_gpus(catalog_file))
    except InputError as exc:
        raise InputError(f"`gpu` {name!r}: {exc}") from None
    if not model_given:
        note = f"--gpu {name}: no model given (--model-params-b, --kv-bytes-per-token), so no inference GPUs are sized or priced"
        return GpuFigures(name, tflops, hbm_tbs, memory_gb, usd_h, note)
    given = {"tflops": tflops, "hbm_tbs": hbm_tbs, "memory_gb": memory_gb, "usd_h": usd_h}
    return GpuFigures(
        name,
        tflops if tflops is not None else gpu.bf16_tflops,
        hbm_tbs if hbm_tbs is not None else gpu.hbm_tb_s,
        memory_gb if memory_gb is not None else gpu.memory_gib,
        usd_h if usd_h is not None else gpu.usd_per_gpu_h,
        from_catalog=frozenset(k for k, v in given.items() if v is None),
    )
