"""A plain queue registered from outside the package (``policy_registry``: ``plain=True`` with a
``key`` hook): one queue per pool that the kernel keeps itself, as it keeps ``fifo`` and
``shortest-timeout-first``, here in last-come-first-served order.

Checked against a hand-worked schedule, against queueing theory (M/M/1: the mean wait of a
discipline that does not look at the hold is FIFO's, rho / (mu (1 - rho)); last-come-first-served's
second moment is FIFO's over 1 - rho, Conway, Maxwell and Miller's M/G/1 result), and compiled
against plain Python, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from tests.simulate.engine.builds import BOTH_BUILDS

from sandbox_fleet.simulate import Exponential, Fleet, Poisson
from sandbox_fleet.simulate.engine import fast, policy_registry
from sandbox_fleet.simulate.engine.fast import admit_loop
from sandbox_fleet.simulate.engine.fast._admit_kernel import R_QSEQ
from sandbox_fleet.simulate.engine.prepare import prepare
from sandbox_fleet.simulate.engine.workloads import Replay

LCFS = "last-come-first-served"


def lcfs_key(ri, r_timeout, r):
    """The latest queue entry first."""
    return -float(ri[r, R_QSEQ])


@pytest.fixture
def lcfs():
    policy_registry.register_policy(LCFS, plain=True, key=lcfs_key)
    try:
        yield LCFS
    finally:
        policy_registry.unregister(LCFS)


def test_a_plain_queue_registers_as_one(lcfs):
    pol = policy_registry.get(lcfs)
    assert pol.plain and pol.keyed and lcfs not in policy_registry.CHOOSING
    assert policy_registry.get("fifo").plain and not policy_registry.get("fifo").keyed
    assert policy_registry.get("shortest-timeout-first").keyed
    with pytest.raises(ValueError, match="a plain queue takes only a 'key' hook"):
        policy_registry.register_policy("x", plain=True, rank=lcfs_key)
    with pytest.raises(ValueError, match="'key' orders a plain queue: register it with plain=True"):
        policy_registry.register_policy("x", key=lcfs_key)


# Worked by hand. One slot, one queue for both workloads: a arrives at 0 and 1 holding 10 s, b at 2
# and 3 holding 1 s. a0 [0, 10]; at 10, a1, b0 and b1 wait and the latest entry goes first: b1
# [10, 11], b0 [11, 12], a1 [12, 22]. First come first served: a1 [10, 20], b0 [20, 21], b1 [21, 22].
LCFS_START_S = [0.0, 12.0, 11.0, 10.0]
FIFO_START_S = [0.0, 10.0, 20.0, 21.0]


def _hand_case(admission: str, **fleet):
    a = Replay(arrivals_s=np.array([0.0, 1.0]), holds=np.array([10.0, 10.0]), name="a")
    b = Replay(arrivals_s=np.array([2.0, 3.0]), holds=np.array([1.0, 1.0]), name="b")
    return prepare(Fleet(cap=1, admission=admission, **fleet), [a, b], 1)


@BOTH_BUILDS
def test_an_outside_plain_queue_runs_its_hand_worked_schedule(lcfs, compiled):
    assert admit_loop.run(_hand_case(lcfs), compiled=compiled).first["start_s"].tolist() == LCFS_START_S
    assert admit_loop.run(_hand_case("fifo"), compiled=compiled).first["start_s"].tolist() == FIFO_START_S
    # a queue timeout of 7.5 s: a1 and b0 (entered at 1 and 2) are dropped at 8.5 and 9.5; at 10 b1
    # (entered at 3, due at 10.5) starts; the dropped two leave the queue at its front, the slot given back
    out = admit_loop.run(_hand_case(lcfs, queue_timeout_s=7.5), compiled=compiled).first
    assert out["start_s"][[0, 3]].tolist() == [0.0, 10.0] and np.isnan(out["start_s"][[1, 2]]).all()


def _mm1(admission: str, n: int, seed: int):
    """M/M/1 at rho = 0.5 (arrivals 0.5/s, holds of mean 1 s)."""
    return prepare(Fleet(cap=1, admission=admission), [Poisson(rate_per_s=0.5, n=n, holds=Exponential(1.0))], seed)


def test_last_come_first_served_waits_as_queueing_theory_says(lcfs):
    """M/M/1, rho = 0.5, mu = 1: E[W] = rho / (mu (1 - rho)) = 1 for both orders; E[W^2] is
    2 rho / (mu (1 - rho))^2 = 4 first come first served and 4 / (1 - rho) = 8 last come first served."""
    waits = {}
    for adm in (lcfs, "fifo"):
        w = []
        for seed in range(4):
            out = admit_loop.run(_mm1(adm, 20_000, seed), compiled=False).first
            w.append((out["start_s"] - out["arrival_s"])[2_000:])  # the first 2,000: warm-up
        waits[adm] = np.concatenate(w)
    assert np.mean(waits[lcfs]) == pytest.approx(1.0, rel=0.08)
    assert np.mean(waits["fifo"]) == pytest.approx(1.0, rel=0.08)
    assert np.mean(waits[lcfs] ** 2) == pytest.approx(8.0, rel=0.2)
    assert np.mean(waits["fifo"] ** 2) == pytest.approx(4.0, rel=0.2)


def test_an_outside_plain_queue_gives_the_same_bits_compiled_and_plain(lcfs):
    """Three workloads on three slots with queue timeouts (dropped entries at the front) and a
    preemptible pool (tracked slots: the free stack follows the queue's slot give-backs)."""
    if not fast.available():
        pytest.skip("numba may not run here")

    def prep():
        wls = [Poisson(rate_per_s=r, n=n, holds=Exponential(m), name=f"w{i}")
               for i, (r, n, m) in enumerate([(2.0, 600, 1.0), (1.0, 300, 3.0), (0.5, 200, 0.5)])]
        return prepare(Fleet(cap=3, admission=lcfs, queue_timeout_s=5.0, preempt_rate_per_node_s=0.01,
                             slots_per_node=1), wls, 5)

    one, two = admit_loop.run(prep(), compiled=True), admit_loop.run(prep(), compiled=False)
    for k in one.first:
        assert one.first[k].tobytes() == two.first[k].tobytes(), k
    assert one.extra == two.extra
    assert (one.area_busy, one.area_wait, one.preemptions) == (two.area_busy, two.area_wait, two.preemptions)
    assert one.preemptions > 0 and np.isnan(one.first["start_s"]).any()  # both paths were taken
