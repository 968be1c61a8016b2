"""The optional C speed-ups; everything else is in pyproject.toml.

``optional=True``: without a C compiler or Python headers the install still succeeds
and the pure-Python references run instead (``simulate.fifo.place_stream``; Arrow's own
dictionary reading for the task-name column), with the same results.
"""

from setuptools import Extension, setup

# Same bytes as the Python loop: no fused multiply-add, no fast-math reassociation.
_FLAGS = ["-O3", "-ffp-contract=off", "-fno-fast-math"]

setup(
    ext_modules=[
        Extension(
            "sandbox_fleet.simulate.engine._fifo_speedups",
            ["src/sandbox_fleet/simulate/engine/_fifo_speedups.c"],
            extra_compile_args=["-ffp-contract=off", "-fno-fast-math"],
            optional=True,
        ),
        Extension(
            "sandbox_fleet.telemetry._strings",
            ["src/sandbox_fleet/telemetry/_strings.c"],
            extra_compile_args=_FLAGS,
            optional=True,
        ),
    ]
)
