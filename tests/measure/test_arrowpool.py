"""The Arrow pool choice for big reads: jemalloc when built in, the user's choice otherwise."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest

CODE = ("from sandbox_fleet.measure.arrowpool import prefer_returning_pool; import pyarrow as pa; "
        "print(prefer_returning_pool(), pa.default_memory_pool().backend_name)")


def _run(env_pool: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if env_pool:
        env["ARROW_DEFAULT_MEMORY_POOL"] = env_pool
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env, check=True)
    return out.stdout.split()


def _has_jemalloc() -> bool:
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        return False
    return True


@pytest.mark.skipif(not _has_jemalloc(), reason="pyarrow built without jemalloc")
def test_switches_to_jemalloc_by_default():
    assert _run(None) == ["jemalloc", "jemalloc"]


def test_the_users_pool_wins():
    assert _run("system") == ["system", "system"]
