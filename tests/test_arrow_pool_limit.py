"""``limits.arrow_pool_for_address_limit``: under RLIMIT_AS Arrow uses the system allocator.

The end-to-end case is the hostile battery's (every command under a 2 GiB address-space limit):
``backtest`` on a 12-row CSV aborted with ``std::bad_alloc`` (exit -6) in mimalloc's arena
reservation. Here, the rule itself, and a real child process under the limit.
"""

from __future__ import annotations

import resource
import subprocess
import sys

from sandbox_fleet import limits


def test_a_limit_selects_the_system_pool(monkeypatch):
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    monkeypatch.setattr(resource, "getrlimit", lambda _: (2 << 30, 2 << 30))
    limits.arrow_pool_for_address_limit()
    import os

    assert os.environ["ARROW_DEFAULT_MEMORY_POOL"] == "system"


def test_no_limit_and_a_users_choice_are_left_alone(monkeypatch):
    import os

    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    monkeypatch.setattr(resource, "getrlimit", lambda _: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    limits.arrow_pool_for_address_limit()
    assert "ARROW_DEFAULT_MEMORY_POOL" not in os.environ
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
    monkeypatch.setattr(resource, "getrlimit", lambda _: (2 << 30, 2 << 30))
    limits.arrow_pool_for_address_limit()
    assert os.environ["ARROW_DEFAULT_MEMORY_POOL"] == "jemalloc"


def test_the_entry_point_sets_it_before_pyarrow_loads(tmp_path):
    code = ("import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30));"
            "from sandbox_fleet.limits import arrow_pool_for_address_limit; arrow_pool_for_address_limit();"
            "import pyarrow as pa; print(pa.default_memory_pool().backend_name)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env={
        k: v for k, v in __import__("os").environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"})
    assert out.stdout.strip() == "system"
