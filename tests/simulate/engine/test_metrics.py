"""The summary's quantile helpers against NumPy's own figures on copies, and a replayed run's
arrays never shared with its input."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.simulate import Fleet, Replay, run_workloads
from sandbox_fleet.simulate.engine.metrics import _hold_summary, _quantiles

floats = st.floats(min_value=0, max_value=1e6, allow_nan=False, width=64)


@settings(max_examples=200, deadline=None)
@given(st.lists(floats, min_size=1, max_size=40), st.integers(0, 5))
def test_quantiles_on_a_scratch_buffer_equal_numpys(vals, extra):
    v = np.array(vals)
    kept = v.copy()
    scratch = np.full(v.size + extra, -1.0)
    p50, p99 = np.percentile(kept, [50, 99]).tolist()
    expected = {"mean": float(kept.mean()), "p50": p50, "p99": p99}
    assert _quantiles(v, scratch) == expected
    assert _quantiles(v, None) == expected
    assert _quantiles(v, np.zeros(max(v.size - 1, 0))) == expected  # too small: not used
    assert np.array_equal(v, kept)  # the input itself is never reordered


@settings(max_examples=200, deadline=None)
@given(st.lists(floats, min_size=1, max_size=40))
def test_hold_summary_equals_the_figures_of_a_sorted_copy(vals):
    v = np.array(vals)
    s = np.sort(v)
    p50, p90, p99 = np.percentile(s, [50, 90, 99]).tolist()
    figures, spare = _hold_summary(v)
    assert figures == {"rows": v.size, "min": float(s[0]), "median": p50, "mean": float(s.mean()),
                       "p90": p90, "p99": p99, "max": float(s[-1])}
    assert spare.size == v.size and not np.shares_memory(spare, v)


def test_replay_result_does_not_share_its_input_arrivals():
    arrivals = np.array([0.0, 0.5, 1.0, 1.5])
    wl = Replay(arrivals_s=arrivals, holds=np.array([1.0, 1.0, 1.0, 1.0]))
    res = run_workloads(Fleet(cap=1), [wl], seed=1)
    assert res.arrival_s.tolist() == [0.0, 0.5, 1.0, 1.5]
    assert res.start_s.tolist() == [0.0, 1.0, 2.0, 3.0]  # one slot: back to back (hand-computed)
    assert not np.shares_memory(res.arrival_s, wl.arrivals_s)
    res.arrival_s[0] = 9.0
    assert wl.arrivals_s[0] == 0.0
