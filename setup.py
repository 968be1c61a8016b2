"""The optional C speed-up of the FIFO recursion; everything else is in pyproject.toml.

``optional=True``: without a C compiler or Python headers the install still succeeds
and the pure-Python ``simulate.fifo.place_stream`` runs instead (same results).
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
        )
    ]
)
