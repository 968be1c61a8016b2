"""The C speed-up of the FIFO recursion (``simulate/engine/_fifo_speedups.c``) against the pure
``fifo.place_stream``: the same start times and the same final heap, bit for bit, on hand
cases (with hand-computed starts), random streams including NaN, infinities and signed
zeros, and whole ``simulate`` runs (summary JSON and telemetry Parquet bytes) with and
without ``SANDBOX_FLEET_PURE_PYTHON=1``.

Skips when the module was not built (no C compiler at install); under ``CI=true``
(``.ci/run`` installs with a compiler) a missing module fails instead.
"""

from __future__ import annotations

import json
import struct
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from built import require_built
from sandbox_fleet.simulate import Exponential, Fleet, Poisson
from sandbox_fleet.simulate.engine import executors, fifo
from sandbox_fleet.simulate.engine.fifo import place_stream

ROOT = Path(__file__).resolve().parents[3]


def require_speedups():
    return require_built("simulate.engine._fifo_speedups")


@pytest.fixture
def C():
    return require_speedups()


#: Every NaN compares as this one: IEEE 754 (and C) leave it to the implementation which NaN,
#: sign and payload, an operation on NaNs returns, and the two loops' additions are compiled
#: separately (Hypothesis found -nan + nan giving +nan in one and -nan in the other). Where a
#: NaN is must match; every other bit pattern, signed zeros and infinities included, too.
NAN_BITS = 0x7FF8000000000000


def bits(values) -> list[int]:
    """Each float's 64 bits (tells -0.0 from 0.0), any NaN as ``NAN_BITS``."""
    return [NAN_BITS if v != v else struct.unpack("<Q", struct.pack("<d", float(v)))[0] for v in values]


def both(C, cap: int, arr: list[float], hold: list[float], prov: float, order: list[int] | None = None,
         free0: list[float] | None = None):
    """(starts, final heap) from the pure loop and from the C one, as bit patterns."""
    free_py = list(free0) if free0 is not None else [0.0] * cap
    free_c = np.array(free_py, dtype=float)
    if order is None:
        py = place_stream(free_py, arr, hold, prov)
        out = np.empty(len(arr))
        C.place_stream(free_c, np.array(arr, dtype=float), np.array(hold, dtype=float), prov, out)
    else:  # hold is per rollout id; starts go to their rollout (as run_fifo does out of order)
        py_in_order = place_stream(free_py, arr, [hold[r] for r in order], prov)
        py = [float("nan")] * len(hold)
        for r, s in zip(order, py_in_order):
            py[r] = s
        out = np.full(len(hold), np.nan)
        C.place_stream(free_c, np.array(arr, dtype=float), np.array(hold, dtype=float), prov, out,
                       np.array(order, dtype=np.int64))
    return (bits(py), bits(free_py)), (bits(out), bits(free_c))


# --- hand cases ----------------------------------------------------------------------
@pytest.mark.parametrize("cap,arr,hold,prov,want", [
    # ties: four at t=0 on two slots; the second pair waits for the first to end at 1
    (2, [0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], 0.0, [0.0, 0.0, 1.0, 1.0]),
    # zero holds on one slot: nobody waits
    (1, [0.0, 0.0, 2.0], [0.0, 0.0, 0.0], 0.0, [0.0, 0.0, 2.0]),
    # provisioning delay: the slot is free again 0.25 s after each finish
    (1, [0.0, 0.5, 5.0], [1.0, 1.0, 1.0], 0.25, [0.0, 1.25, 5.0]),
    # cap 1 queue builds up: 0, then 0+3, then 3+2
    (1, [0.0, 1.0, 2.0], [3.0, 2.0, 1.0], 0.0, [0.0, 3.0, 5.0]),
    # cap larger than the stream: every start is its arrival
    (5, [0.0, 1.0, 1.0], [9.0, 9.0, 9.0], 0.5, [0.0, 1.0, 1.0]),
    # three slots, the shortest hold frees first: 4th waits until 0.5, 5th until 1.0
    (3, [0.0, 0.0, 0.0, 0.1, 0.2], [2.0, 0.5, 1.0, 1.0, 1.0], 0.0, [0.0, 0.0, 0.0, 0.5, 1.0]),
])
def test_hand_cases(C, cap, arr, hold, prov, want):
    (py, py_heap), (c, c_heap) = both(C, cap, arr, hold, prov)
    assert c == py == bits(want)
    assert c_heap == py_heap


def test_out_of_order_arrivals_by_hand(C):
    # rollouts 2, 0, 1 arrive at 0, 1, 1.5 on one slot, holds by rollout id 1, 2, 4
    (py, py_heap), (c, c_heap) = both(C, 1, [0.0, 1.0, 1.5], [1.0, 2.0, 4.0], 0.0, order=[2, 0, 1])
    assert c == py == bits([4.0, 5.0, 0.0])  # 2: 0..4; 0: 4..5; 1: 5..
    assert c_heap == py_heap == bits([7.0])


def test_signed_zero_follows_python(C):
    # arrival -0.0 against a heap at +0.0: 0.0 > -0.0 is false, so the start is -0.0,
    # and -0.0 + -0.0 stays -0.0 in the heap (provision 0.0 is not added, as in Python).
    for prov in (0.0, -0.0, 1.0):
        (py, py_heap), (c, c_heap) = both(C, 2, [-0.0, -0.0, 0.0], [-0.0, 0.0, -0.0], prov)
        assert c == py and c_heap == py_heap
    (py, _), _ = both(C, 1, [-0.0], [-0.0], 0.0)
    assert py == bits([-0.0])


@pytest.mark.parametrize("special", [float("nan"), float("inf"), -float("inf")])
def test_nan_and_infinities_follow_python(C, special):
    arr = [0.0, special, 1.0, 2.0, special, 3.0]
    hold = [1.0, 2.0, special, 0.5, 1.0, special]
    for prov in (0.0, 0.5, special):
        for cap in (1, 2, 3):
            (py, py_heap), (c, c_heap) = both(C, cap, arr, hold, prov)
            assert c == py and c_heap == py_heap
    (py, py_heap), (c, c_heap) = both(C, 3, [0.0, 1.0], [1.0, 1.0], 0.0, free0=[special, 0.5, special])
    assert c == py and c_heap == py_heap


def test_bad_arguments_are_refused(C):
    f, a = np.zeros(2), np.zeros(3)
    with pytest.raises(TypeError, match="float64"):
        C.place_stream(f, a.astype(np.float32), a, 0.0, np.empty(3))
    with pytest.raises(TypeError, match="int64"):
        C.place_stream(f, a, a, 0.0, np.empty(3), np.zeros(3, dtype=np.int32))
    with pytest.raises(ValueError, match="length"):
        C.place_stream(f, a, np.zeros(2), 0.0, np.empty(3))
    with pytest.raises(IndexError, match="order"):
        C.place_stream(f, a, a, 0.0, np.empty(3), np.array([0, 3, 1]))
    with pytest.raises(IndexError, match="empty"):
        C.place_stream(np.zeros(0), a, a, 0.0, np.empty(3))
    with pytest.raises(ValueError, match="read-only"):  # NumPy refuses a writable view
        out = np.empty(3)
        out.flags.writeable = False
        C.place_stream(f, a, a, 0.0, out)


# --- random streams --------------------------------------------------------------------
any_float = st.floats(allow_nan=True, allow_infinity=True, width=64)
small = st.one_of(st.floats(min_value=0.0, max_value=10.0), st.sampled_from([0.0, -0.0, 1.0]), any_float)


@settings(max_examples=300, deadline=None)
@given(cap=st.integers(1, 9), prov=st.one_of(st.sampled_from([0.0, -0.0, 0.25]), any_float),
       rows=st.lists(st.tuples(small, small), min_size=0, max_size=60), sort=st.booleans())
def test_random_streams_match_bit_for_bit(cap, prov, rows, sort):
    C = require_speedups()
    arr, hold = [a for a, _ in rows], [h for _, h in rows]
    if sort:
        arr = sorted(a for a in arr if a == a) + [a for a in arr if a != a]
    (py, py_heap), (c, c_heap) = both(C, cap, arr, hold, prov)
    assert c == py and c_heap == py_heap


@settings(max_examples=150, deadline=None)
@given(cap=st.integers(1, 6), data=st.data(), n=st.integers(1, 40))
def test_random_permutations_match_bit_for_bit(cap, data, n):
    C = require_speedups()
    order = data.draw(st.permutations(list(range(n))))
    arr = sorted(data.draw(st.lists(st.floats(0.0, 100.0), min_size=n, max_size=n)))
    hold = data.draw(st.lists(small, min_size=n, max_size=n))
    (py, py_heap), (c, c_heap) = both(C, cap, arr, hold, 0.5, order=order)
    assert c == py and c_heap == py_heap


def test_a_large_stream_matches(C):
    rng = np.random.default_rng(7)
    for c in (10, 3000):
        n = 200_000
        arr = np.cumsum(rng.exponential(1.0 / (0.9 * c), n))
        hold = rng.exponential(1.0, n)
        free_py = [0.0] * c
        py = place_stream(free_py, arr.tolist(), hold.tolist(), 0.0)
        free_c, out = np.zeros(c), np.empty(n)
        C.place_stream(free_c, arr, hold, 0.0, out)
        assert np.array_equal(np.asarray(py).view(np.uint64), out.view(np.uint64))
        assert np.array_equal(np.asarray(free_py).view(np.uint64), free_c.view(np.uint64))


# --- whole runs --------------------------------------------------------------------------
def test_the_switch_and_a_missing_module_choose_the_pure_loop(C, monkeypatch):
    monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
    assert executors.compiled_place_stream() is C.place_stream
    monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
    assert executors.compiled_place_stream() is None
    monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON")
    monkeypatch.setitem(__import__("sys").modules, "sandbox_fleet.simulate.engine._fifo_speedups", None)  # not built
    assert executors.compiled_place_stream() is None


TWO_OPEN = """
    [fleet]
    cap = 7
    provision_delay_s = 0.5

    [[workloads]]
    name = "a"
    kind = "poisson"
    rate_per_s = 3.0
    count = 3000
    hold = { dist = "exponential", mean_s = 1.0 }

    [[workloads]]
    name = "b"
    kind = "poisson"
    rate_per_s = 2.0
    count = 2000
    hold = { dist = "lognormal", median_s = 0.8, sigma = 1.0 }

    [run]
    seed = 3
"""
CAP_ONE = """
    [fleet]
    cap = 1
    provision_delay_s = 0.25

    [workload]
    kind = "poisson"
    rate_per_s = 0.5
    count = 4000

    [hold]
    dist = "exponential"
    mean_s = 1.0

    [run]
    seed = 9
"""


@pytest.mark.parametrize("scenario", ["mmc.toml", "replay.toml", "two_open", "cap_one"])
def test_simulate_json_and_telemetry_bytes_equal_with_and_without(C, scenario, tmp_path, monkeypatch):
    from sandbox_fleet.simulate.scenario.run import run_scenario

    if scenario.endswith(".toml"):
        path = ROOT / "examples" / "scenarios" / scenario
    else:
        path = tmp_path / f"{scenario}.toml"
        path.write_text(textwrap.dedent({"two_open": TWO_OPEN, "cap_one": CAP_ONE}[scenario]))
    calls = {"pure": 0}
    real_pure = fifo.place_stream

    def counted(*a):
        calls["pure"] += 1
        return real_pure(*a)

    monkeypatch.setattr(fifo, "place_stream", counted)
    out = {}
    for label in ("pure", "c"):
        if label == "pure":
            monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
        else:
            monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON")
        tel = tmp_path / "telemetry.parquet"  # one path: the summary names it
        summary = run_scenario(path, telemetry_out=tel)
        out[label] = (json.dumps(summary, sort_keys=True).encode(), tel.read_bytes())
        tel.unlink()
    # both took one pass: the pure run through the pure recursion (once), the other never
    assert calls["pure"] == 1
    assert out["pure"] == out["c"]


def test_one_pass_runs_take_the_compiled_path(C, monkeypatch):
    from sandbox_fleet.simulate import run_workloads

    monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)

    def no_pure(*a):
        raise AssertionError("the pure recursion ran")

    monkeypatch.setattr(fifo, "place_stream", no_pure)
    res = run_workloads(Fleet(cap=4), [Poisson(rate_per_s=3.0, n=2000, holds=Exponential(1.0))], seed=1)
    assert res.engine == "fifo-c" and np.all(res.start_s >= res.arrival_s)
