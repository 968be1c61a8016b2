"""``[inference]`` of a scenario file -> ``Inference`` (every refusal names its key).

Rates: ``prefill_tok_s`` (per replica) and ``decode_tok_s`` (per replica, aggregate
over the batch), or ``gpu`` + ``model_params_b`` from the catalog's roofline
(``sandbox_fleet.gpus``): prefill and decode both at ``utilisation x FLOP/s / (2 P)``
per GPU, and ``iteration_base_ms`` the time to stream the weights once (the
memory-bound floor of one iteration). The prefix cache per replica is ``kv_cache_gb``,
else GPU memory x ``memory_fraction`` minus the weights when ``gpu`` is given, else
unlimited; ``kv_cache_gb = 0`` turns caching off.
"""

from __future__ import annotations

from pathlib import Path

from sandbox_fleet import gpus as G
from sandbox_fleet.simulate.engine.inference.config import Inference

GIB = 1024**3
_GPU_ONLY = ("gpu_catalog", "model_params_b", "bytes_per_param", "utilisation", "memory_fraction")


def build_inference(s, base_dir: Path, fail, guard) -> Inference:
    """``s``: the ``InferenceSpec``; ``fail(key, what)`` raises; ``guard(key, make)``
    prefixes an engine-level refusal with the file and key."""
    given = s.model_fields_set
    if s.replicas is not None and s.gpus is not None:
        fail("inference.gpus", "give replicas or gpus (with gpus_per_replica), not both")
    gpr = s.gpus_per_replica or 1
    if s.gpus is not None:
        if s.gpus % gpr:
            fail("inference.gpus", f"{s.gpus} GPUs do not split into replicas of gpus_per_replica = {gpr}")
        replicas = s.gpus // gpr
    elif s.replicas is not None:
        replicas = s.replicas
    else:
        fail("inference.replicas", "give replicas = N, or gpus = N (and gpus_per_replica)")
    prefill, decode = s.prefill_tok_s, s.decode_tok_s
    base_ms = s.iteration_base_ms
    kv = None if s.kv_cache_gb is None else s.kv_cache_gb * GIB
    if s.gpu is None:
        for k in _GPU_ONLY:
            if k in given:
                fail(f"inference.{k}", "applies only with gpu = \"...\"")
        for k, v in (("prefill_tok_s", prefill), ("decode_tok_s", decode)):
            if v is None:
                fail(f"inference.{k}", "give the replica's rate, or gpu = \"...\" and model_params_b")
    else:
        cat_path = None if s.gpu_catalog is None else (base_dir / s.gpu_catalog)
        gpu = guard("inference.gpu", lambda: G.get_gpu(s.gpu, G.load_gpus(cat_path)))
        if s.model_params_b is None:
            fail("inference.model_params_b", "gpu needs the model's parameters (billions)")
        p = s.model_params_b
        free = G.kv_free_bytes(gpu, p, gpr, bytes_per_param=s.bytes_per_param, memory_fraction=s.memory_fraction)
        if free <= 0:
            w = G.weights_bytes(p, s.bytes_per_param) / GIB
            fail("inference.model_params_b",
                 f"a {p:g}B model ({w:.1f} GiB of weights) does not fit {gpr} x {gpu.name} "
                 f"({gpu.memory_gib:g} GiB x memory_fraction {s.memory_fraction:g} each); raise gpus_per_replica")
        rate = G.compute_tok_s(gpu, p, s.utilisation, gpr)
        prefill = rate if prefill is None else prefill
        decode = rate if decode is None else decode
        if base_ms is None:
            base_ms = 1000.0 * G.weights_read_s(gpu, p, s.bytes_per_param, gpr)
        if kv is None:
            if s.kv_bytes_per_token is None:
                fail("inference.kv_bytes_per_token", "needed to size the prefix cache from the GPU's memory "
                                                     "(or give kv_cache_gb = 0 for no caching)")
            kv = free
    if kv and s.kv_bytes_per_token is None:
        fail("inference.kv_bytes_per_token", "kv_cache_gb needs the KV bytes per token")
    if s.kv_offload_gb and not kv:
        fail("inference.kv_offload_gb", "an offload tier needs a bounded prefix cache (kv_cache_gb > 0)")
    return guard("inference", lambda: Inference(
        replicas=replicas, prefill_tok_s=prefill, decode_tok_s=decode,
        iteration_base_s=(base_ms or 0.0) / 1000.0, max_num_seqs=s.max_num_seqs, routing=s.routing,
        kv_cache_bytes=kv, kv_bytes_per_token=s.kv_bytes_per_token or 0.0,
        kv_offload_bytes=s.kv_offload_gb * GIB, gpus_per_replica=gpr))
