"""GPU memory model: weights, KV, tensor-parallel replicas, compute vs memory bound (hand-computed)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.gpu_memory import MemoryModel, replica_gpus, size_memory, weights_gb
from sandbox_fleet.plan.inference import Roofline

GIB = 2**30


def test_the_issue_example_needs_six_gpus_with_caching_not_one():
    # 27e9 params x 2 B = 54e9 B = 50.291 GiB; in-flight KV 64 x 4,944 tok x 64 KiB = 19.3125 GiB;
    # 72 GiB usable (80 x 0.9) holds 69.60 GiB on one GPU -> replica of 1, 21.709 GiB free.
    # 374 live prefixes x 4,944 tok x 64 KiB = 112.857 GiB: one-GPU replicas need ceil(112.857 / 21.709)
    # = 6; two-GPU replicas have 2 x 72 - 50.291 = 93.709 GiB each -> 2 replicas = 4 GPUs; four-GPU
    # replicas 237.7 GiB -> 1 replica = 4 GPUs (a tie: the smaller replica is kept).
    mm = MemoryModel(memory_gb=80, params=27e9, kv_bytes_per_token=65536)
    out = size_memory(mm, context_tokens=4944, live_rollouts=374, load_gpus=3.01, load_gpus_cached=0.97, utilisation_target=0.7)
    mem = out.memory
    assert mem.weights_gb == pytest.approx(54e9 / GIB)
    assert mem.kv_gb_inflight == pytest.approx(19.3125)
    assert mem.kv_gb_live == pytest.approx(374 * 4944 / 16384)
    assert mem.free_gb_per_gpu == pytest.approx(72 - 54e9 / GIB)
    assert out.replica_gpus == 1 and mem.gpus_memory_bound == 1
    # compute: ceil(3.01 / 0.7 = 4.3) = 5 GPUs; cached: 2 x ceil(0.97 / 0.7 / 2) = 2, memory 4
    assert (out.gpus_compute_bound, out.gpus, out.bound_by) == (5, 5, "compute")
    assert (out.gpus_compute_bound_cached, mem.gpus_memory_bound_cached, out.gpus_cached) == (2, 4, 4)
    assert out.bound_by_cached == "memory" and out.replica_gpus_cached == 2


def test_host_offload_adds_room_per_gpu():
    # one-GPU replicas: 21.709 + 20 GiB per GPU -> ceil(112.857 / 41.709) = 3 GPUs; two-GPU replicas:
    # 93.709 + 2 x 20 = 133.709 GiB holds all 112.857 -> one replica, 2 GPUs
    mm = MemoryModel(memory_gb=80, params=27e9, kv_bytes_per_token=65536, kv_offload_gb=20)
    out = size_memory(mm, context_tokens=4944, live_rollouts=374, load_gpus=None, load_gpus_cached=0.5, utilisation_target=0.7)
    assert out.memory.gpus_memory_bound_cached == 2 and out.gpus_cached == 2 and out.replica_gpus_cached == 2


def test_a_70b_model_needs_a_four_gpu_replica_on_80gb():
    # 140e9 B = 130.385 GiB + 19.3125 GiB in flight = 149.70 GiB: 2 x 72 = 144 too small, 4 x 72 = 288 holds it
    assert weights_gb(70e9, 2) == pytest.approx(130.385, abs=1e-3)
    assert replica_gpus(130.385, 19.3125, 72.0, 8) == 4
    mm = MemoryModel(memory_gb=80, params=70e9, kv_bytes_per_token=65536)
    out = size_memory(mm, context_tokens=4944, live_rollouts=10, load_gpus=1.0, load_gpus_cached=None, utilisation_target=0.7)
    # compute: ceil(1 / 0.7) = 2 GPU-equivalents -> one replica of 4
    assert out.replica_gpus == 4 and out.gpus == 4 and out.memory.free_gb_per_gpu == pytest.approx(72 - 130.385 / 4, abs=1e-3)


def test_a_larger_replica_is_chosen_when_it_needs_fewer_gpus_with_caching():
    # weights 50.29 GiB, 72 usable. Live KV 100 GiB: TP1 -> ceil(100 / 21.71) = 5 GPUs;
    # TP2 -> 2 x ceil(100 / (2 x 46.85)) = 4 GPUs; TP4 -> 4 x ceil(100 / (4 x 59.43)) = 4 (tie: smaller kept)
    mm = MemoryModel(memory_gb=80, params=27e9, kv_bytes_per_token=65536, decode_batch=1)
    live = 100 * GIB / 65536 / 1000  # rollouts at 1,000 tokens each holding 100 GiB in all
    out = size_memory(mm, context_tokens=1000, live_rollouts=live, load_gpus=None, load_gpus_cached=0.1, utilisation_target=0.7)
    assert out.memory.kv_gb_live == pytest.approx(100)
    assert out.replica_gpus_cached == 2 and out.gpus_cached == 4


def test_a_model_that_fits_no_replica_is_an_input_error():
    with pytest.raises(InputError, match="`max_tp` 8"):
        size_memory(MemoryModel(memory_gb=80, params=405e9, kv_bytes_per_token=65536), context_tokens=4944,
                    live_rollouts=1, load_gpus=1, load_gpus_cached=1, utilisation_target=0.7)


@pytest.mark.parametrize("kw", [{"memory_fraction": 0.0}, {"memory_fraction": 1.2}, {"max_tp": 6}, {"kv_offload_gb": -1}])
def test_bad_memory_settings_are_input_errors(kw):
    with pytest.raises(InputError):
        size_memory(MemoryModel(memory_gb=80, params=1e9, kv_bytes_per_token=1000, **kw), context_tokens=100,
                    live_rollouts=1, load_gpus=1, load_gpus_cached=1, utilisation_target=0.7)


@pytest.mark.parametrize("u", [0.0, -0.1, 1.5])
def test_utilisation_outside_zero_one_is_an_input_error(u):
    with pytest.raises(InputError, match="`gpu_utilisation`"):
        size_memory(MemoryModel(memory_gb=80, params=1e9, kv_bytes_per_token=1000), context_tokens=100,
                    live_rollouts=1, load_gpus=1, load_gpus_cached=1, utilisation_target=u)


def _counts(ctx: float, kv: float, live: float) -> tuple[int, int]:
    """GPUs for ``live`` rollouts at 48 prefill / 1.7 decode tok per sandbox-second on an H100 roofline."""
    rl = Roofline(flops=989e12, hbm_bytes_s=3.35e12, params=27e9, kv_bytes_per_token=kv, context_tokens=ctx)
    p, d = rl.prefill_tok_s(), rl.decode_tok_s()
    load = 48 * live / p + 1.7 * live / d
    out = size_memory(MemoryModel(memory_gb=80, params=27e9, kv_bytes_per_token=kv, decode_batch=16), context_tokens=ctx,
                      live_rollouts=live, load_gpus=load, load_gpus_cached=load / 6, utilisation_target=0.7)
    return out.gpus, out.gpus_cached


@settings(max_examples=200, deadline=None)
@given(
    ctx=st.floats(100, 60_000), kv=st.floats(1_000, 200_000), live=st.floats(1, 5_000),
    grow=st.floats(1.0, 4.0), which=st.sampled_from(["ctx", "kv", "live"]),
)
def test_gpu_counts_never_fall_as_context_kv_or_concurrency_rise(ctx, kv, live, grow, which):
    args = {"ctx": ctx, "kv": kv, "live": live}
    try:
        before = _counts(**args)
        args[which] *= grow
        after = _counts(**args)
    except InputError:
        return  # the larger figure fits no replica: refused, not fewer GPUs
    assert after[0] >= before[0] and after[1] >= before[1]
