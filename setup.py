"""The optional C speed-ups (the FIFO recursion, measure's per-group order statistics);
everything else is in pyproject.toml.

``optional=True``: without a C compiler or Python headers the install still succeeds
and the pure-Python references run instead (same results).
"""

import numpy
from setuptools import Extension, setup

# Same bytes as the Python references: no fused multiply-add, no fast-math reassociation.
_EXACT_FP = ["-ffp-contract=off", "-fno-fast-math"]

setup(
    ext_modules=[
        Extension(
            "sandbox_fleet.simulate.engine._fifo_speedups",
            ["src/sandbox_fleet/simulate/engine/_fifo_speedups.c"],
            extra_compile_args=_EXACT_FP,
            optional=True,
        ),
        Extension(
            "sandbox_fleet.measure._select",
            ["src/sandbox_fleet/measure/_select.c"],
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O3", *_EXACT_FP],
            optional=True,
        ),
    ]
)
