"""The optional C speed-ups (the FIFO recursion, measure's grouped passes); everything else
is in pyproject.toml.

``optional=True``: without a C compiler or Python headers the install still succeeds
and the pure-Python / NumPy references run instead (same results; ``speedups.compiled``).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "sandbox_fleet.simulate.engine._fifo_speedups",
            ["src/sandbox_fleet/simulate/engine/_fifo_speedups.c"],
            # Same bytes as the Python loop: no fused multiply-add, no fast-math reassociation.
            extra_compile_args=["-ffp-contract=off", "-fno-fast-math"],
            optional=True,
        ),
        Extension(
            "sandbox_fleet.measure._groups",
            ["src/sandbox_fleet/measure/_groups.c"],
            # Buffers only (no NumPy headers); integer arithmetic, the flags as for every twin.
            extra_compile_args=["-O3", "-ffp-contract=off", "-fno-fast-math"],
            optional=True,
        ),
    ]
)
