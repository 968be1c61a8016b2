"""Slots per node along each resource, the binding resource, the reserve, and too-small nodes."""

from __future__ import annotations

import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.catalog import NodeType
from sandbox_fleet.plan.slots import Reserve, ResourceRequest, size_uniform, slots_per_node

SEED = NodeType(name="seed-96c", vcpus=96, memory_gb=384, disk_gb=4096)
DOC_REQUEST = ResourceRequest(cpu=1, memory=2048, disk=6144)


def test_gib_tib_are_binary():
    assert SEED.capacity["memory"] == 393_216 and SEED.capacity["disk"] == 4_194_304


def test_document_slots_and_binding():
    s = size_uniform(SEED, DOC_REQUEST, 3000)
    assert s.slots == {"cpu": 96, "memory": 192, "disk": 682, "gpu": None}  # 4194304 // 6144 = 682
    assert (s.binding, s.per_node, s.nodes) == ("cpu", 96, 32)


def test_reserve_moves_the_binding_resource():
    # keep 2 cores and 200 GiB: memory (184 GiB = 188,416 MB) now holds 92 slots, cpu 94.
    r = Reserve(cpu=2, memory=200 * 1024, disk=0)
    s = size_uniform(SEED, DOC_REQUEST, 3000, r)
    assert s.slots["cpu"] == 94 and s.slots["memory"] == 92
    assert (s.binding, s.nodes) == ("memory", 33)  # ceil(3000 / 92)


def test_gpu_request_binds_on_gpu_nodes():
    node = NodeType(name="g", vcpus=64, memory_gb=512, disk_gb=2000, gpus=8)
    s = size_uniform(node, ResourceRequest(cpu=4, memory=16_384, disk=10_240, gpu=1), 20)
    assert s.slots["gpu"] == 8 and s.binding == "gpu" and s.nodes == 3


def test_fractional_cpu_does_not_lose_a_slot_to_float_rounding():
    assert slots_per_node(SEED, ResourceRequest(cpu=0.1, memory=1, disk=0))["cpu"] == 960


def test_node_smaller_than_one_request_is_an_input_error():
    tiny = NodeType(name="tiny", vcpus=2, memory_gb=1, disk_gb=100)
    with pytest.raises(InputError, match="tiny.*smaller than one sandbox request along memory"):
        size_uniform(tiny, DOC_REQUEST, 10)


def test_reserve_larger_than_node_is_an_input_error():
    with pytest.raises(InputError, match="reserve leaves no cpu"):
        size_uniform(SEED, DOC_REQUEST, 10, Reserve(cpu=96))
