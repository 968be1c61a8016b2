"""The FIFO recursion's one rule (``fifo.place_stream``), run as plain Python and as numba's build
(``fast/fifo_compiled.py``), against an oracle written here: the heapq loop the simulator ran before
(one ``heapreplace`` per attempt). Same start times and the same final heap, bit for bit, on hand
cases (hand-computed starts), random streams including NaN, infinities and signed zeros, and whole
``simulate`` runs (summary JSON and telemetry Parquet bytes) interpreted and compiled.
"""

from __future__ import annotations

import json
import math
import struct
import textwrap
from heapq import heapreplace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.simulate import Exponential, Fleet, Poisson
from sandbox_fleet.simulate.engine import fifo
from sandbox_fleet.simulate.engine.fast import fifo_compiled
from sandbox_fleet.simulate.engine.fifo import place_stream
from sandbox_fleet.simulate.engine.prepare import prepare

ROOT = Path(__file__).resolve().parents[3]


def oracle(free: list[float], arr: list[float], hold: list[float], prov: float) -> list[float]:
    """The recursion as the simulator wrote it before: CPython's heapq on a list."""
    starts = []
    for t, h in zip(arr, hold):
        f0 = free[0]
        s = f0 if f0 > t else t
        heapreplace(free, s + h + prov if prov else s + h)
        starts.append(s)
    return starts


@pytest.fixture(scope="module")
def compiled():
    return fifo_compiled.load()


#: Every NaN compares as this one: IEEE 754 leaves it to the implementation which NaN (sign and
#: payload) an operation on NaNs returns, and the compiled addition is not CPython's. Where a NaN
#: is must match; every other bit pattern, signed zeros and infinities included, too.
NAN_BITS = 0x7FF8000000000000


def bits(values) -> list[int]:
    """Each float's 64 bits (tells -0.0 from 0.0), any NaN as ``NAN_BITS``."""
    return [NAN_BITS if v != v else struct.unpack("<Q", struct.pack("<d", float(v)))[0] for v in values]


def three(compiled, cap: int, arr: list[float], hold: list[float], prov: float, order: list[int] | None = None,
          free0: list[float] | None = None):
    """(starts, final heap) as bit patterns from the oracle, the rule interpreted on lists and the
    rule compiled on arrays. ``order``: rollout ids in arrival order (holds and starts by id)."""
    n = len(arr)
    free_o = list(free0) if free0 is not None else [0.0] * cap
    free_i, free_c = list(free_o), np.array(free_o, dtype=float)
    if order is None:
        want = oracle(free_o, arr, hold, prov)
    else:
        want = [math.nan] * len(hold)
        for r, s in zip(order, oracle(free_o, arr, [hold[r] for r in order], prov)):
            want[r] = s
    got_i = [math.nan] * len(hold)
    assert place_stream(free_i, arr, order, 0, n, hold, prov, got_i, None) == n
    got_c = np.full(len(hold), np.nan)
    ids = None if order is None else np.array(order, dtype=np.int64)
    assert compiled(free_c, np.array(arr, dtype=float), ids, 0, n, np.array(hold, dtype=float), prov, got_c, None) == n
    return [(bits(want), bits(free_o)), (bits(got_i), bits(free_i)), (bits(got_c), bits(free_c))]


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
def test_hand_cases(compiled, cap, arr, hold, prov, want):
    (o, o_heap), (i, i_heap), (c, c_heap) = three(compiled, cap, arr, hold, prov)
    assert o == i == c == bits(want)
    assert o_heap == i_heap == c_heap


def test_out_of_order_arrivals_by_hand(compiled):
    # rollouts 2, 0, 1 arrive at 0, 1, 1.5 on one slot, holds by rollout id 1, 2, 4
    (o, o_heap), (i, i_heap), (c, c_heap) = three(compiled, 1, [0.0, 1.0, 1.5], [1.0, 2.0, 4.0], 0.0, order=[2, 0, 1])
    assert o == i == c == bits([4.0, 5.0, 0.0])  # 2: 0..4; 0: 4..5; 1: 5..
    assert o_heap == i_heap == c_heap == bits([7.0])


def test_one_attempt_at_a_time_is_the_step_by_hand(compiled):
    # cap 2, provision 0.5: arrivals at 0, 0, 0.2, 5 holding 1, 2, 3, 1, placed one call each.
    # Slots free at 0, 0. #0 starts 0 (slot next free 1.5); #1 starts 0 (2.5);
    # #2 at 0.2 waits for the 1.5 slot: starts 1.5 (5.0); #3 at 5 finds the 2.5 slot: starts 5.
    for rule, heap, seq in ((place_stream, [0.0, 0.0], list), (compiled, np.zeros(2), np.array)):
        got = []
        for t, h in ((0.0, 1.0), (0.0, 2.0), (0.2, 3.0), (5.0, 1.0)):
            out = seq([0.0])
            rule(heap, seq([t]), None, 0, 1, seq([h]), 0.5, out, None)
            got.append(float(out[0]))
        assert got == [0.0, 0.0, 1.5, 5.0]
        assert sorted(heap) == [5.0, 6.5]


def test_stop_ends_the_call_right_after_an_attempt_that_may_retry(compiled):
    # one slot, five arrivals 1 s apart holding 0.5; rollout 2 may retry: the call places 0, 1, 2
    # and returns 3; the next call places 3 and 4 and returns 5 (j).
    arr, hold, stop = [0.0, 1.0, 2.0, 3.0, 4.0], [0.5] * 5, [False, False, True, False, False]
    for rule, seq in ((place_stream, list), (compiled, np.array)):
        heap, out = seq([0.0]), seq([math.nan] * 5)
        ids = seq(list(range(5)))
        args = (seq(arr), ids)
        assert rule(heap, *args, 0, 5, seq(hold), 0.0, out, seq(stop)) == 3
        assert [float(v) for v in out[:3]] == [0.0, 1.0, 2.0] and all(v != v for v in out[3:])
        assert rule(heap, *args, 3, 5, seq(hold), 0.0, out, seq(stop)) == 5
        assert [float(v) for v in out] == arr


def test_signed_zero_follows_python(compiled):
    # arrival -0.0 against a heap at +0.0: 0.0 > -0.0 is false, so the start is -0.0,
    # and -0.0 + -0.0 stays -0.0 in the heap (provision 0.0 is not added, as in Python).
    for prov in (0.0, -0.0, 1.0):
        (o, o_heap), (i, i_heap), (c, c_heap) = three(compiled, 2, [-0.0, -0.0, 0.0], [-0.0, 0.0, -0.0], prov)
        assert o == i == c and o_heap == i_heap == c_heap
    (o, _), _, _ = three(compiled, 1, [-0.0], [-0.0], 0.0)
    assert o == bits([-0.0])


@pytest.mark.parametrize("special", [float("nan"), float("inf"), -float("inf")])
def test_nan_and_infinities_follow_python(compiled, special):
    arr = [0.0, special, 1.0, 2.0, special, 3.0]
    hold = [1.0, 2.0, special, 0.5, 1.0, special]
    for prov in (0.0, 0.5, special):
        for cap in (1, 2, 3):
            (o, o_heap), (i, i_heap), (c, c_heap) = three(compiled, cap, arr, hold, prov)
            assert o == i == c and o_heap == i_heap == c_heap
    (o, o_heap), (i, i_heap), (c, c_heap) = three(compiled, 3, [0.0, 1.0], [1.0, 1.0], 0.0,
                                                  free0=[special, 0.5, special])
    assert o == i == c and o_heap == i_heap == c_heap


# --- random streams --------------------------------------------------------------------
any_float = st.floats(allow_nan=True, allow_infinity=True, width=64)
small = st.one_of(st.floats(min_value=0.0, max_value=10.0), st.sampled_from([0.0, -0.0, 1.0]), any_float)


@settings(max_examples=300, deadline=None)
@given(cap=st.integers(1, 9), prov=st.one_of(st.sampled_from([0.0, -0.0, 0.25]), any_float),
       rows=st.lists(st.tuples(small, small), min_size=0, max_size=60), sort=st.booleans())
def test_random_streams_match_bit_for_bit(cap, prov, rows, sort):
    arr, hold = [a for a, _ in rows], [h for _, h in rows]
    if sort:
        arr = sorted(a for a in arr if a == a) + [a for a in arr if a != a]
    (o, o_heap), (i, i_heap), (c, c_heap) = three(fifo_compiled.load(), cap, arr, hold, prov)
    assert o == i == c and o_heap == i_heap == c_heap


@settings(max_examples=150, deadline=None)
@given(cap=st.integers(1, 6), data=st.data(), n=st.integers(1, 40))
def test_random_permutations_match_bit_for_bit(cap, data, n):
    order = data.draw(st.permutations(list(range(n))))
    arr = sorted(data.draw(st.lists(st.floats(0.0, 100.0), min_size=n, max_size=n)))
    hold = data.draw(st.lists(small, min_size=n, max_size=n))
    (o, o_heap), (i, i_heap), (c, c_heap) = three(fifo_compiled.load(), cap, arr, hold, 0.5, order=order)
    assert o == i == c and o_heap == i_heap == c_heap


def test_a_large_stream_matches(compiled):
    rng = np.random.default_rng(7)
    for c in (10, 3000):
        n = 100_000
        arr = np.cumsum(rng.exponential(1.0 / (0.9 * c), n))
        hold = rng.exponential(1.0, n)
        free_o = [0.0] * c
        want = oracle(free_o, arr.tolist(), hold.tolist(), 0.0)
        free_c, out = np.zeros(c), np.empty(n)
        compiled(free_c, arr, None, 0, n, hold, 0.0, out, None)
        assert np.array_equal(np.asarray(want).view(np.uint64), out.view(np.uint64))
        assert np.array_equal(np.asarray(free_o).view(np.uint64), free_c.view(np.uint64))


# --- which form runs ----------------------------------------------------------------------
def _prep(n: int, cap: int | None):
    return prepare(Fleet(cap=cap), [Poisson(rate_per_s=2.0, n=n, holds=Exponential(1.0))], 1)


def _sized(n: int, *caps: int | None) -> SimpleNamespace:
    """What ``worth_it`` reads of a prepared run: its rollouts and pools."""
    return SimpleNamespace(n=n, pools=[Fleet(cap=c) for c in caps])


def test_worth_it_counts_heap_levels(monkeypatch):
    monkeypatch.setattr(fifo_compiled, "_compiled", None)  # as in a fresh process
    monkeypatch.setattr(fifo_compiled, "_spent", 0)
    assert (fifo_compiled.MIN_WORK, fifo_compiled.ATTEMPT_LEVELS) == (18_000_000, 4)
    # cap 10: 4 + ceil(log2 11) = 8 units an attempt; 18,000,000 from 2,250,000 attempts.
    assert not fifo_compiled.worth_it(_sized(2_249_999, 10))
    assert fifo_compiled.worth_it(_sized(2_250_000, 10))
    # cap 3,000: 4 + ceil(log2 3001) = 16 units; from 1,125,000 attempts (the largest pool counts).
    assert not fifo_compiled.worth_it(_sized(1_124_999, 3000, 5))
    assert fifo_compiled.worth_it(_sized(1_125_000, None, 3000))
    # cap 1: 4 + 1 = 5 units an attempt: from 3,600,000.
    assert fifo_compiled.worth_it(_sized(3_600_000, 1)) and not fifo_compiled.worth_it(_sized(3_599_999, 1))
    assert not fifo_compiled.worth_it(_sized(10**9, None))  # unbounded pools only: nothing on a heap


def test_interpreted_runs_add_up_to_the_load(monkeypatch):
    # rent or buy: 2,250,000 attempts at cap 10 are the load's worth; runs of 800,000 run
    # interpreted, interpreted (1.6M so far), then compiled (1.6M + 0.8M >= 2.25M).
    monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
    monkeypatch.delenv("NUMBA_DISABLE_JIT", raising=False)
    monkeypatch.setattr(fifo_compiled, "_compiled", None)
    monkeypatch.setattr(fifo_compiled, "_spent", 0)
    monkeypatch.setattr(fifo_compiled, "load", lambda: "loaded")
    run = _sized(800_000, 10)
    assert [fifo_compiled.compiled(run) for _ in range(3)] == [None, None, "loaded"]
    assert fifo_compiled._spent == 2 * 800_000 * 8


def test_small_runs_compile_once_loaded_and_the_switches_keep_python(monkeypatch):
    monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
    monkeypatch.delenv("NUMBA_DISABLE_JIT", raising=False)
    small_run = _prep(100, 3)
    monkeypatch.setattr(fifo_compiled, "_compiled", None)
    monkeypatch.setattr(fifo_compiled, "_spent", 0)
    assert fifo_compiled.compiled(small_run) is None
    loaded = fifo_compiled.load()
    assert fifo_compiled.compiled(small_run) is loaded
    for switch in ("SANDBOX_FLEET_PURE_PYTHON", "NUMBA_DISABLE_JIT"):
        monkeypatch.setenv(switch, "1")
        assert fifo_compiled.compiled(small_run) is None
        monkeypatch.delenv(switch)


# --- whole runs --------------------------------------------------------------------------
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


def _forms(monkeypatch):
    """Count the calls of each form: the interpreted rule (the module's function) and the compiled one."""
    calls = {"interpreted": 0, "compiled": 0}
    real, built = fifo.place_stream, fifo_compiled.load()

    def interpreted(*a):
        calls["interpreted"] += 1
        return real(*a)

    def compiled(*a):
        calls["compiled"] += 1
        return built(*a)

    monkeypatch.setattr(fifo, "place_stream", interpreted)
    monkeypatch.setattr(fifo_compiled, "_compiled", compiled)
    return calls


@pytest.mark.parametrize("scenario", ["mmc.toml", "replay.toml", "substrate.toml", "two_open", "cap_one"])  # RL: the kernel's
def test_simulate_json_and_telemetry_bytes_equal_interpreted_and_compiled(scenario, tmp_path, monkeypatch):
    from sandbox_fleet.simulate.scenario.run import run_scenario

    if scenario.endswith(".toml"):
        path = ROOT / "examples" / "scenarios" / scenario
    else:
        path = tmp_path / f"{scenario}.toml"
        path.write_text(textwrap.dedent({"two_open": TWO_OPEN, "cap_one": CAP_ONE}[scenario]))
    calls = _forms(monkeypatch)
    out = {}
    for label in ("interpreted", "compiled"):
        if label == "interpreted":
            monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
        else:
            monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON")
        before = dict(calls)
        tel = tmp_path / "telemetry.parquet"  # one path: the summary names it
        summary = run_scenario(path, timing=False, telemetry_out=tel)
        out[label] = (json.dumps(summary, sort_keys=True).encode(), tel.read_bytes())
        tel.unlink()
        other = "compiled" if label == "interpreted" else "interpreted"
        assert calls[label] > before[label] and calls[other] == before[other], label  # the form asked for ran
    assert out["interpreted"] == out["compiled"]


def test_batch_makespans_by_hand_and_against_a_linear_scan(monkeypatch):
    # holds 5, 3, 4, 1 on 2 slots: 5 | 3 -> 3+4 = 7 | 5+1 = 6: makespan 7; on 1 slot 13; on 4 slots 5
    rng = np.random.default_rng(11)
    holds = rng.lognormal(2.0, 0.7, (6, 50))
    want = {}
    for cap in (1, 3, 17, 64):  # brute force: each rollout takes the slot free first (a linear scan)
        ends = []
        for row in holds.tolist():
            free = [0.0] * cap
            for h in row:
                k = min(range(cap), key=free.__getitem__)
                free[k] += h
            ends.append(max(free))
        want[cap] = ends
    monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
    monkeypatch.setattr(fifo_compiled, "_spent", 0)  # restored after the test (interpreted calls add to it)
    for form in ("interpreted", "compiled"):
        monkeypatch.setattr(fifo_compiled, "_compiled", None if form == "interpreted" else fifo_compiled.load())
        monkeypatch.setattr(fifo_compiled, "MIN_WORK", 10**18)  # never loads by itself: the form set above runs
        assert fifo.batch_makespans(np.array([[5.0, 3.0, 4.0, 1.0]]), 2).tolist() == [7.0]
        assert [fifo.batch_makespans(np.array([[5.0, 3.0, 4.0, 1.0]]), c)[0] for c in (1, 4)] == [13.0, 5.0]
        for cap, ends in want.items():
            assert fifo.batch_makespans(holds, cap).tolist() == ends, (form, cap)
