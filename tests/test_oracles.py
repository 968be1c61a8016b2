"""The external-oracle helper (the root conftest's ``tool`` fixture is ``require_tool``):
skip without the tool on a developer machine, fail under CI=true."""

from __future__ import annotations

import shutil

import pytest


def test_missing_tool_skips_with_the_reason(monkeypatch, tool):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="promtool is not installed .*apt-get install prometheus"):
        tool("promtool")


def test_missing_tool_fails_under_ci(monkeypatch, tool):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true but chromium is not installed"):
        tool("chromium")


def test_present_tool_is_returned(monkeypatch, tool):
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    assert tool("promtool") == "/usr/bin/promtool"
