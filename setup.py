"""The one optional C module; everything else is in pyproject.toml.

measure's NumPy allocator hook (``measure/_blocks.c``, used by ``measure.numpypool``): big freed
arrays are reused instead of faulted in afresh (BENCHMARKS.md states its gain). It is no second
implementation of any figure: without it NumPy allocates as usual and every value is the same.
``optional=True``: without a C compiler or Python headers the install still succeeds.
"""

from setuptools import Extension, setup

try:  # pyproject's build requirements bring NumPy; without its headers the hook is left out
    import numpy
except ImportError:
    numpy = None

extensions = []
if numpy is not None:
    extensions.append(Extension("sandbox_fleet.measure._blocks", ["src/sandbox_fleet/measure/_blocks.c"],
                                extra_compile_args=["-O3"], include_dirs=[numpy.get_include()], optional=True))

setup(ext_modules=extensions)
