"""The two builds of the admission kernel a test runs: numba's (skipped where numba may not run) and its
source as plain Python; each must give the same bits, so tests parametrize over both."""

import pytest

from sandbox_fleet.simulate.engine import fast

BOTH_BUILDS = pytest.mark.parametrize("compiled", [
    pytest.param(True, marks=pytest.mark.skipif(not fast.available(), reason="numba may not run here")), False],
    ids=["compiled", "plain_twin"])
