"""Print the environment that makes NumPy and OpenBLAS run other SIMD kernels than they pick here.

CI runs the suite a second time under it (``.ci/run``), so a figure promised identical across
machines is shown to be: a result that depends on the kernel fails there. Both libraries choose by
CPU at start-up, and both can be told to choose lower:

- NumPy: ``NPY_DISABLE_CPU_FEATURES`` names the dispatch targets to skip. The highest group this CPU
  has (``X86_V4``, the AVX-512 kernels, and its extensions; else ``X86_V3``, AVX2 + FMA) is turned
  off, so NumPy runs the kernels of the next lower machine.
- OpenBLAS: ``OPENBLAS_CORETYPE`` forces a kernel family. An AVX-512 family (SkylakeX, Cooperlake,
  SapphireRapids) is replaced by Haswell (AVX2); any other by Sandybridge (AVX, no FMA).

Output: one ``NAME=value`` a line, for ``env $(python tests/other_kernels.py) ./dev test``.
"""

from __future__ import annotations

import sys

AVX512_BLAS = {"skylakex", "cooperlake", "sapphirerapids"}
#: NumPy's x86 dispatch groups, highest first, each with the AVX-512 extras that build on it
NUMPY_GROUPS = (("X86_V4", ("X86_V4", "AVX512_ICL", "AVX512_SPR")), ("X86_V3", ("X86_V3", "X86_V4", "AVX512_ICL", "AVX512_SPR")))


def blas_core_type() -> str | None:
    from threadpoolctl import threadpool_info

    for lib in threadpool_info():
        if lib.get("internal_api") == "openblas":
            return str(lib.get("architecture") or "") or None
    return None


def numpy_features() -> set[str]:
    from numpy._core._multiarray_umath import __cpu_features__

    return {name for name, present in __cpu_features__.items() if present}


def other_environment(core_type: str | None, features: set[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    if core_type is not None:
        env["OPENBLAS_CORETYPE"] = "Haswell" if core_type.lower() in AVX512_BLAS else "Sandybridge"
    for group, disable in NUMPY_GROUPS:
        if group in features:
            env["NPY_DISABLE_CPU_FEATURES"] = ",".join(disable)
            break
    return env


def main() -> int:
    import numpy  # noqa: F401  (loads OpenBLAS, so threadpoolctl can see which kernel it chose)

    env = other_environment(blas_core_type(), numpy_features())
    if not env:
        print("other_kernels: neither NumPy nor OpenBLAS has another kernel to fall back to here", file=sys.stderr)
        return 1
    for name, value in env.items():
        print(f"{name}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
