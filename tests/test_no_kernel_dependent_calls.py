"""No figure may go through a NumPy or BLAS routine whose bits depend on the CPU's SIMD kernel.

NumPy's transcendental ufuncs (exp, log, power, ...) have AVX-512 kernels that round differently
from the AVX2 ones, and OpenBLAS chooses its float dot / least-squares kernels by CPU. The outputs
are promised byte-identical across x86-64 machines (docs/validation.md), so the source calls
``sandbox_fleet.exact`` instead. This guard reads every module's syntax tree; the CI run under
other kernels (tests/other_kernels.py) is the behavioural check.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "sandbox_fleet"

#: NumPy functions whose result depends on the SIMD kernel NumPy or OpenBLAS dispatched to
KERNEL_DEPENDENT = {
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "power", "float_power", "logspace", "geomspace",
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
    "arctanh", "cbrt", "dot", "vdot", "inner", "matmul", "einsum", "polyfit", "lstsq", "tensordot",
}
#: (module, function) pairs checked by hand: an integer dot product (no BLAS: int64 has no BLAS kernel)
ALLOWED = {("measure/concurrency.py", "dot")}


def _numpy_aliases(tree: ast.AST) -> set[str]:
    names = {"np", "numpy"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.asname or a.name for a in node.names if a.name == "numpy")
    return names


def _offences(path: Path, base: Path = SRC) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases = _numpy_aliases(tree)
    rel = path.relative_to(base).as_posix()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            found.append(f"{rel}:{node.lineno} uses @ (BLAS matmul)")
        if not isinstance(node, ast.Attribute):
            continue
        base = node.value
        # np.exp, np.linalg.lstsq, numpy.polyfit
        root = base.value if isinstance(base, ast.Attribute) else base
        if isinstance(root, ast.Name) and root.id in aliases and node.attr in KERNEL_DEPENDENT:
            if (rel, node.attr) not in ALLOWED:
                found.append(f"{rel}:{node.lineno} calls numpy {node.attr}")
    return sorted(found, key=lambda o: int(o.split(":")[1].split()[0]))


def test_no_kernel_dependent_numpy_calls_in_the_source():
    offences = [o for p in sorted(SRC.rglob("*.py")) for o in _offences(p)]
    assert offences == [], "use sandbox_fleet.exact instead:\n" + "\n".join(offences)


def test_the_guard_sees_what_it_forbids(tmp_path):
    (tmp_path / "bad.py").write_text("import numpy as xp\nxp.exp(1)\nxp.linalg.lstsq(a, b)\nc = a @ b\nmath.exp(1)\n")
    assert _offences(tmp_path / "bad.py", base=tmp_path) == [
        "bad.py:2 calls numpy exp", "bad.py:3 calls numpy lstsq", "bad.py:4 uses @ (BLAS matmul)"]
