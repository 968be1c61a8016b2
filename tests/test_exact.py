"""sandbox_fleet.exact against exact rational arithmetic, and the same bits under other SIMD kernels."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet import exact

HERE = Path(__file__).resolve().parent
finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)


@given(st.lists(finite, min_size=1, max_size=200))
@settings(max_examples=200, deadline=None)
def test_fsum_is_the_correctly_rounded_rational_sum(values):
    assert exact.fsum(np.array(values)) == float(sum(Fraction(v) for v in values))


def test_linear_fit_hand_case():
    # y = 1 + 2x exactly, and a case with a residual: points (0,0), (1,1), (2,1): slope 1/2, intercept 1/6
    assert exact.linear_fit([1.0, 2.0, 3.0], [3.0, 5.0, 7.0]) == (2.0, 1.0)
    slope, intercept = exact.linear_fit([0.0, 1.0, 2.0], [0.0, 1.0, 1.0])
    assert slope == 0.5 and intercept == pytest.approx(1 / 6, rel=1e-15)


@given(st.lists(st.tuples(st.integers(1, 200), st.floats(1.0, 1e7)), min_size=2, max_size=60))
@settings(max_examples=100, deadline=None)
def test_linear_fit_matches_exact_least_squares(points):
    xs = [float(x) for x, _ in points]
    if len(set(xs)) < 2:
        return
    ys = [y for _, y in points]
    n = len(xs)
    fx, fy = [Fraction(x) for x in xs], [Fraction(y) for y in ys]
    mx, my = sum(fx) / n, sum(fy) / n
    slope_true = sum((x - mx) * (y - my) for x, y in zip(fx, fy)) / sum((x - mx) ** 2 for x in fx)
    intercept_true = my - slope_true * mx
    slope, intercept = exact.linear_fit(xs, ys)
    scale = max(abs(y) for y in ys)
    assert slope == pytest.approx(float(slope_true), rel=1e-9, abs=1e-9 * scale)
    assert intercept == pytest.approx(float(intercept_true), rel=1e-9, abs=1e-9 * scale)


def test_linear_fit_refuses_one_distinct_x():
    with pytest.raises(ValueError, match="two distinct"):
        exact.linear_fit([3.0, 3.0], [1.0, 2.0])


def test_elementwise_functions_are_the_c_library_ones():
    x = np.linspace(-30.0, 30.0, 1001)
    p = np.abs(x) + 0.5
    assert exact.exp(x).tolist() == [math.exp(v) for v in x.tolist()]
    assert exact.log(p).tolist() == [math.log(v) for v in p.tolist()]
    assert exact.expm1(x).tolist() == [math.expm1(v) for v in x.tolist()]
    assert exact.power(p, 2.5).tolist() == [math.pow(v, 2.5) for v in p.tolist()]
    grid = exact.logspace(-2.0, 3.0, 11)
    assert grid[0] == 0.01 and grid[-1] == 1000.0 and grid[4] == pytest.approx(1.0)
    assert exact.exp(np.zeros((2, 3))).shape == (2, 3)


_PROBE = r"""
import hashlib, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from sandbox_fleet import exact
from sandbox_fleet.measure.tokens import fit_quadratic
rng = np.random.default_rng(7)
x = rng.normal(0.0, 4.0, 20_000)
p = np.abs(x) + 0.1
turns = np.arange(1, 41, dtype=float)
med = 480.0 * turns * (turns + 1) / 2 * (1 + 0.05 * rng.normal(size=turns.size))
parts = {
    "exp": exact.exp(x).tobytes(), "log": exact.log(p).tobytes(), "pow": exact.power(p, 1.7).tobytes(),
    "fit": repr(sorted(fit_quadratic(turns, med).items())).encode(),
    "np.exp": np.exp(x).tobytes(), "np.dot": np.array([np.dot(x, p)]).tobytes(),
}
for k, v in parts.items():
    print(k, hashlib.sha256(v).hexdigest())
"""


def _probe(env: dict[str, str]) -> dict[str, str]:
    out = subprocess.run([sys.executable, "-c", _PROBE, str(HERE.parent / "src")], env={**os.environ, **env},
                         capture_output=True, text=True, check=True).stdout
    return dict(line.split() for line in out.splitlines())


def test_same_bits_under_other_simd_kernels():
    """The whole point of the module: NumPy's and OpenBLAS's other kernels give the same bits."""
    sys.path.insert(0, str(HERE))
    from other_kernels import blas_core_type, numpy_features, other_environment

    other = other_environment(blas_core_type(), numpy_features())
    if not other:
        pytest.skip("this CPU runs NumPy's and OpenBLAS's lowest kernels already")
    mine, theirs = _probe({}), _probe(other)
    for key in ("exp", "log", "pow", "fit"):
        assert mine[key] == theirs[key], f"{key} differs under {other}"


def test_other_kernels_environment():
    sys.path.insert(0, str(HERE))
    from other_kernels import other_environment

    assert other_environment("SkylakeX", {"X86_V3", "X86_V4"}) == {
        "OPENBLAS_CORETYPE": "Haswell", "NPY_DISABLE_CPU_FEATURES": "X86_V4,AVX512_ICL,AVX512_SPR"}
    assert other_environment("Zen", {"X86_V3"}) == {
        "OPENBLAS_CORETYPE": "Sandybridge", "NPY_DISABLE_CPU_FEATURES": "X86_V3,X86_V4,AVX512_ICL,AVX512_SPR"}
    assert other_environment(None, set()) == {}

