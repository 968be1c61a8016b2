"""An admission policy added from outside the package (docs/engine.md, "How to add an admission
policy"): registered once here, validated by the fleet model, run by the admission kernel compiled
and as plain Python with the same bits, and its schedule checked against a hand-worked case.

The policy, ``longest-queue-first``: a free slot goes to the head of the workload with the most
rollouts waiting (ties: the earlier queue entry), a rule no built-in policy has.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
from tests.simulate.engine.builds import BOTH_BUILDS

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate import Fleet
from sandbox_fleet.simulate.engine import fast, policy_registry
from sandbox_fleet.simulate.engine.fast import _cache_prune, admit_loop
from sandbox_fleet.simulate.engine.fast._admit_kernel import R_QN, R_QUEUED
from sandbox_fleet.simulate.engine.prepare import prepare
from sandbox_fleet.simulate.engine.workloads import Replay

LQF = "longest-queue-first"


def lqf_rank(bf, bi, ceil, pi, pw, r_timeout, ri, wf, wi, p, w, r, used, now):
    """The most rollouts waiting first: count workload ``w``'s list from its live head ``r``."""
    n = 0
    while r >= 0:
        if ri[r, R_QUEUED]:
            n += 1
        r = ri[r, R_QN]
    return -n, 0


@pytest.fixture
def lqf():
    """The policy registered for one test (other tests' kernels keep the built-ins' cache key)."""
    policy_registry.register_policy(LQF, rank=lqf_rank)
    try:
        yield LQF
    finally:
        policy_registry.unregister(LQF)


def test_the_built_ins_register_with_the_kernels_codes():
    from sandbox_fleet.simulate.engine.fast import _admit_kernel as K

    codes = {n: policy_registry.get(n).code for n in policy_registry.names()}
    assert codes == {"fifo": K.FIFO, "priority": K.PRIORITY, "timeout-ceiling": K.CEILING,
                     "shortest-timeout-first": K.SHORTEST}
    assert sorted(policy_registry.CHOOSING) == ["priority", "timeout-ceiling"]


def _hand_case(admission: str):
    """One slot. ``a``: arrivals at 0 and 1, holds 10; ``b``: arrivals at 2, 3, 4, holds 1."""
    a = Replay(arrivals_s=np.array([0.0, 1.0]), holds=np.array([10.0, 10.0]), name="a")
    b = Replay(arrivals_s=np.array([2.0, 3.0, 4.0]), holds=np.array([1.0, 1.0, 1.0]), name="b")
    return prepare(Fleet(cap=1, admission=admission), [a, b], 1)


# Worked by hand. a0 holds the slot over [0, 10]; at 10, a1 (queued at 1) and b0, b1, b2 wait:
# b's list is longer (3 > 1), so b0 runs [10, 11]; at 11, b (2) > a (1): b1 [11, 12]; at 12 the
# lists tie (1, 1) and a1 entered first: a1 [12, 22]; then b2 [22, 23]. First come first served
# runs a1 at 10 instead: a [0, 10], [10, 20]; b [20, 21], [21, 22], [22, 23].
LQF_START_S = [0.0, 12.0, 10.0, 11.0, 22.0]
FIFO_START_S = [0.0, 10.0, 20.0, 21.0, 22.0]


@BOTH_BUILDS
def test_an_outside_policy_runs_its_hand_worked_schedule(lqf, compiled):
    out = admit_loop.run(_hand_case(lqf), compiled=compiled)
    assert out.first["start_s"].tolist() == LQF_START_S
    assert out.first["finish_s"].tolist() == [10.0, 22.0, 11.0, 12.0, 23.0]
    fifo = admit_loop.run(_hand_case("fifo"), compiled=compiled)
    assert fifo.first["start_s"].tolist() == FIFO_START_S


def test_an_outside_policy_runs_through_the_public_path(lqf):
    """``run_workloads`` (executor choice, invariants, metrics) takes the registered name as it is."""
    from sandbox_fleet.simulate.engine.run import run_workloads

    prep = _hand_case(lqf)
    res = run_workloads(prep.pools, prep.workloads, 1)
    assert res.start_s.tolist() == LQF_START_S


def test_an_outside_policy_gives_the_same_bits_compiled_and_plain(lqf):
    """A run with many ties and long queues (Poisson arrivals, three workloads), both ways."""
    if not fast.available():
        pytest.skip("numba may not run here")
    from sandbox_fleet.simulate import Exponential, Poisson

    def prep():
        wls = [Poisson(rate_per_s=r, n=n, holds=Exponential(m), name=f"w{i}")
               for i, (r, n, m) in enumerate([(2.0, 600, 1.0), (1.0, 300, 3.0), (0.5, 200, 0.5)])]
        return prepare(Fleet(cap=3, admission=lqf, queue_timeout_s=30.0), wls, 5)

    one, two = admit_loop.run(prep(), compiled=True), admit_loop.run(prep(), compiled=False)
    for k in one.first:
        assert one.first[k].tobytes() == two.first[k].tobytes(), k
    assert one.extra == two.extra
    assert (one.area_busy, one.area_wait) == (two.area_busy, two.area_wait)


def test_the_fleet_model_checks_the_name_against_the_registry(lqf):
    assert Fleet(cap=2, admission=lqf).admission == lqf
    with pytest.raises(InputError) as info:
        Fleet(cap=2, admission="largest-first")
    assert str(info.value) == ("fleet: key 'admission': expected a registered admission policy ('fifo', 'priority', "
                               "'timeout-ceiling', 'shortest-timeout-first', 'longest-queue-first'), got 'largest-first'")


def test_a_name_registers_once():
    policy_registry.register_policy(LQF, rank=lqf_rank)
    try:
        assert policy_registry.register_policy(LQF, rank=lqf_rank).name == LQF  # the same hooks: the same policy
        with pytest.raises(ValueError, match="already registered"):
            policy_registry.register_policy(LQF, admits=lqf_rank)
        with pytest.raises(ValueError, match="unknown hook 'order'"):
            policy_registry.register_policy("x", order=lqf_rank)
        with pytest.raises(ValueError, match="built-in"):
            policy_registry.unregister("priority")
    finally:
        policy_registry.unregister(LQF)
    with pytest.raises(InputError, match="got 'longest-queue-first'"):
        Fleet(cap=1, admission=LQF)


def test_a_registered_policy_moves_the_kernels_cache_key(lqf):
    from sandbox_fleet.simulate.engine.fast import _jit

    with_it = _jit.source_key()
    policy_registry.unregister(lqf)
    without = _jit.source_key()
    policy_registry.register_policy(lqf, rank=lqf_rank)
    assert with_it != without and _jit.source_key() == with_it


# --- stale cache directories ----------------------------------------------------------------------
def _key_dir(root, i: int, used_s: float):
    d = root / f"src-{i:016x}"
    d.mkdir()
    f = d / "kernel.nbi"
    f.write_text("x")
    os.utime(f, (used_s, used_s))
    os.utime(d, (used_s, used_s))
    return d


def test_prune_keeps_the_current_and_the_most_recent_stale_dirs(tmp_path):
    now = time.time()
    day = 86400.0
    dirs = [_key_dir(tmp_path, i, now - (10 - i) * day) for i in range(6)]  # dirs[5] used most recently
    recent = _key_dir(tmp_path, 99, now - 60.0)  # in use a minute ago: never removed
    other = tmp_path / "not-a-key"
    other.mkdir()
    current = tmp_path / f"src-{7:016x}"
    current.mkdir()
    removed = _cache_prune.prune(current, keep=2, now=now)
    # stale by last use: recent, dirs[5] (the 2 kept), then dirs[4..0] (removed)
    assert sorted(removed) == sorted(dirs[:5])
    assert {p.name for p in tmp_path.iterdir()} == {current.name, recent.name, dirs[5].name, "not-a-key"}
    # keeping none: the one used a minute ago stays all the same (a process may be writing it)
    assert _cache_prune.prune(current, keep=0, now=now) == [dirs[5]]
    assert {p.name for p in tmp_path.iterdir()} == {current.name, recent.name, "not-a-key"}


def test_prune_leaves_a_parent_that_is_not_ours(tmp_path):
    (tmp_path / f"src-{1:016x}").mkdir()
    assert _cache_prune.prune(tmp_path / "numba", keep=0, min_age_s=0.0) == []
    assert (tmp_path / f"src-{1:016x}").is_dir()


# --- a policy's columns: the kernel's policy parameters, checked at registration -------------------
def test_columns_name_the_kernels_policy_columns():
    """``COLUMNS`` are workload (``wi``) columns of the kernel, none of them a column the kernel keeps
    for itself (the queue, the slots held, the kind...): those a policy may set."""
    from sandbox_fleet.simulate.engine.fast import _admit_kernel as K

    own = {"W_KIND", "W_POOL", "W_NEXT", "W_HI", "W_QH", "W_QT", "W_USED", "W_TOP", "W_NCEIL", "W_R0"}
    values = [getattr(K, c) for c in policy_registry.COLUMNS]
    assert all(0 <= v < K.N_WI for v in values) and len(set(values)) == len(values)
    assert not {getattr(K, c) for c in own} & set(values)


def test_a_bad_column_is_one_line_at_registration():
    with pytest.raises(ValueError) as info:
        policy_registry.register_policy("bad-columns", rank=lqf_rank, columns={"W_PRIORITY": lambda pool, wl: 1})
    assert str(info.value) == ("register_policy('bad-columns'): columns: unknown column 'W_PRIORITY'; "
                               "a policy's columns are W_PRIO, W_NOMINAL, W_LIMIT")
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="unknown column 'W_USED'"):  # the kernel's own state
        policy_registry.register_policy("bad-columns", rank=lqf_rank, columns={"W_USED": lambda pool, wl: 0})
    with pytest.raises(ValueError, match="'W_PRIO': expected a function of \\(pool, workload\\), got int"):
        policy_registry.register_policy("bad-columns", rank=lqf_rank, columns={"W_PRIO": 3})
    with pytest.raises(ValueError, match="expected \\{column: fn\\(pool, workload\\)\\}, got function"):
        policy_registry.register_policy("bad-columns", rank=lqf_rank, columns=lambda pool, wl: {"W_PRIO": 1})
    assert "bad-columns" not in policy_registry.names()  # nothing registered
