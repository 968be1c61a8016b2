"""A kernel loaded from numba's cache without numba's implementation registries (``_jit.lean_cache_loads``):
the machine code runs and gives what its plain Python gives, and a cache miss still compiles (the
registries loaded first). Fresh processes: the registries are per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_fleet.simulate.engine import fast

pytestmark = pytest.mark.skipif(not fast.available(), reason="numba off or missing")

# a cached function using NumPy's reductions and an array (``numba.np``'s registries when compiled)
KERNEL = '''
import numpy as np
from sandbox_fleet.simulate.engine.fast._jit import njit

@njit(cache=True)
def weighted(x, w):
    out = np.empty(x.size)
    total = 0.0
    for i in range(x.size):
        total += x[i] * w[i]
        out[i] = total
    return out, np.sum(x), np.argmax(w)
'''

PROBE = '''
import json, sys
import numpy as np
import lean_kernel
out, s, k = lean_kernel.weighted(np.arange(7.0) / 3.0, np.linspace(0.5, 2.0, 7))
print(json.dumps({"out": out.tolist(), "sum": float(s), "argmax": int(k),
                  "hits": sum(lean_kernel.weighted.stats.cache_hits.values()) if hasattr(lean_kernel.weighted, "stats") else None,
                  # modules only numba's registries import (not the code's own environment: np.sum's ``arraymath``)
                  "registries": "numba.np.polynomial.polynomial_functions" in sys.modules or "numba.typed.typeddict" in sys.modules,
                  "scipy": "scipy" in sys.modules}))
'''


def _run(tmp_path: Path, **env: str) -> dict:
    environ = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path), **env}
    environ.pop("SANDBOX_FLEET_PURE_PYTHON", None)
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True,
                         env=environ, timeout=600, cwd=tmp_path).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_a_cache_miss_compiles_and_a_later_process_loads_it_without_the_registries(tmp_path):
    (tmp_path / "lean_kernel.py").write_text(KERNEL)
    plain = _run(tmp_path, NUMBA_DISABLE_JIT="1")  # the same source as plain Python: the truth
    first = _run(tmp_path)  # an empty cache: a miss, the registries loaded, a compile
    assert first["hits"] == 0 and first["registries"]
    second = _run(tmp_path)  # from the cache
    assert second["hits"] == 1
    assert not second["registries"] and not second["scipy"]  # neither numba's registries nor SciPy loaded
    for got in (first, second):
        assert got["out"] == plain["out"] and got["sum"] == plain["sum"] and got["argmax"] == plain["argmax"]
    # hand-computed: sum(i/3 for i in 0..6) = 7
    assert plain["sum"] == pytest.approx(7.0) and plain["argmax"] == 6
