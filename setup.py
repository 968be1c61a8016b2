"""The optional C speed-ups; everything else is in pyproject.toml.

Each is a twin of a Python / NumPy / Arrow function that stays the reference (``speedups``):
the FIFO recursion (``simulate.fifo.place_stream``), the task-name column's encoding (Arrow's
own dictionary reading) and measure's grouped passes and order statistics. ``optional=True``:
without a C compiler or Python headers the install still succeeds and the references run
instead, with the same results.
"""

from setuptools import Extension, setup

# Same bytes as the reference: no fused multiply-add, no fast-math reassociation.
_FLAGS = ["-O3", "-ffp-contract=off", "-fno-fast-math"]


def _twin(module: str, source: str) -> Extension:
    return Extension(module, [source], extra_compile_args=_FLAGS, optional=True)


setup(
    ext_modules=[
        Extension(
            "sandbox_fleet.simulate.engine._fifo_speedups",
            ["src/sandbox_fleet/simulate/engine/_fifo_speedups.c"],
            extra_compile_args=["-ffp-contract=off", "-fno-fast-math"],
            optional=True,
        ),
        _twin("sandbox_fleet.telemetry._strings", "src/sandbox_fleet/telemetry/_strings.c"),
        # Buffers only (no NumPy headers); integer arithmetic.
        _twin("sandbox_fleet.measure._groups", "src/sandbox_fleet/measure/_groups.c"),
    ]
)
