"""The optional C speed-ups; everything else is in pyproject.toml.

Each is a twin of a Python / NumPy / Arrow function that stays the reference (``speedups``):
the task-name column's encoding (Arrow's
own dictionary reading) and the id hashes (``validate``'s NumPy passes), measure's grouped
passes, masked sums, hold-sort packing and its per-group order statistics; and one that is no
twin, measure's NumPy allocator hook (``measure.numpypool``: without it NumPy allocates as usual).
``optional=True``: without a C compiler or Python headers the install still succeeds and the
references run instead, with the same results.
"""

from setuptools import Extension, setup

try:  # pyproject's build requirements bring NumPy; without its headers the _select twin is left out
    import numpy
except ImportError:
    numpy = None

# Same bytes as the references: no fused multiply-add, no fast-math reassociation.
_EXACT_FP = ["-ffp-contract=off", "-fno-fast-math"]


def _twin(module: str, source: str, **options) -> Extension:
    return Extension(module, [source], extra_compile_args=["-O3", *_EXACT_FP], optional=True, **options)


extensions = [
]
if numpy is not None:
    # NumPy's allocator hook (no twin: without it arrays come from NumPy's own allocator).
    extensions.append(_twin("sandbox_fleet.measure._blocks", "src/sandbox_fleet/measure/_blocks.c",
                            include_dirs=[numpy.get_include()]))

setup(ext_modules=extensions)
