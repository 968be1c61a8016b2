"""The optional C speed-ups (the FIFO recursion, measure's per-group order statistics);
everything else is in pyproject.toml.

``optional=True``: without a C compiler or Python headers the install still succeeds
and the pure-Python references run instead (same results).
"""

from setuptools import Extension, setup

try:  # pyproject's build requirements bring NumPy; without its headers the measure twin is left out
    import numpy
except ImportError:
    numpy = None

# Same bytes as the Python references: no fused multiply-add, no fast-math reassociation.
_EXACT_FP = ["-ffp-contract=off", "-fno-fast-math"]

extensions = [
    Extension(
        "sandbox_fleet.simulate.engine._fifo_speedups",
        ["src/sandbox_fleet/simulate/engine/_fifo_speedups.c"],
        extra_compile_args=_EXACT_FP,
        optional=True,
    )
]
if numpy is not None:
    extensions.append(Extension(
        "sandbox_fleet.measure._select",
        ["src/sandbox_fleet/measure/_select.c"],
        include_dirs=[numpy.get_include()],
        extra_compile_args=["-O3", *_EXACT_FP],
        optional=True,
    ))

setup(ext_modules=extensions)
