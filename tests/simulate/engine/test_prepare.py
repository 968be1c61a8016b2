"""``prepare``'s hold, bit for bit the sum of the phases however it skips the all-zero ones."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.simulate.engine.prepare import hold_of

any_float = st.floats(allow_nan=True, allow_infinity=True, width=64)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(any_float, any_float, any_float), min_size=1, max_size=12),
       st.booleans(), st.booleans())
def test_hold_of_equals_the_plain_sum_bitwise(rows, zero_build, zero_verify):
    b, a, v = (np.array(col) for col in zip(*rows))
    if zero_build:
        b = np.zeros(b.size)
    if zero_verify:
        v = np.zeros(v.size)
    expected = (b + a) + v
    got = hold_of(b, a, v, zero_build, zero_verify)
    assert got.view(np.uint64).tolist() == expected.view(np.uint64).tolist()
    assert got is not a  # a new array: the agent durations stay as drawn


def test_negative_zero_agent_becomes_positive_zero_as_the_sum_does():
    a = np.array([-0.0, 1.5])
    got = hold_of(np.zeros(2), a, np.zeros(2), True, True)
    assert np.signbit(got).tolist() == [False, False]
    assert np.signbit(a).tolist() == [True, False]
