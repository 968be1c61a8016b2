"""The external-oracle helper: skip without the tool on a developer machine, fail under CI=true."""

from __future__ import annotations

import shutil

import pytest

from conftest import require_tool  # noqa: E402  (the root conftest is on sys.path for top-level tests)


def test_missing_tool_skips_with_the_reason(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="promtool is not installed .*apt-get install prometheus"):
        require_tool("promtool")


def test_missing_tool_fails_under_ci(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true but chromium is not installed"):
        require_tool("chromium")


def test_present_tool_is_returned(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    assert require_tool("promtool") == "/usr/bin/promtool"
