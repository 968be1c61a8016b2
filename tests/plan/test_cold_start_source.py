"""A cold start is written once: a hosted provider's is its substrate's (data/substrates.toml), filled into
the provider catalog where it gives none; the user's own provider file wins; --substrates feeds it."""

from __future__ import annotations

import tomllib
from importlib import resources

import pytest

from sandbox_fleet.plan.rent import load_providers
from sandbox_fleet.substrates import load_substrates


def _raw(name: str, table: str) -> list[dict]:
    return tomllib.loads(resources.files("sandbox_fleet.data").joinpath(name).read_text())[table]


def test_no_cold_start_is_written_in_both_catalogs():
    named = {s["provider"] for s in _raw("substrates.toml", "substrate") if "provider" in s}
    assert named == {"e2b", "daytona", "modal"}
    for p in _raw("providers.toml", "provider"):
        if p["name"] in named:
            assert not {"cold_start_p50_s", "cold_start_p99_s"} & set(p), p["name"]
            assert not {"cold_start_p50_s", "cold_start_p99_s"} & set(p.get("figure_sources", {})), p["name"]


def test_providers_take_their_substrates_cold_start():
    subs = {s.name: s for s in load_substrates()}
    cat = {p.name: p for p in load_providers()}
    for name in ("e2b", "daytona", "modal"):
        assert cat[name].cold_start_p50_s == subs[name].cold_start_s
        assert "substrates.toml" in cat[name].figure_sources["cold_start_p50_s"]
        assert "cold_start_p50_s" in cat[name].vendor_claimed  # each is the vendor's own start-time claim
    assert (cat["e2b"].cold_start_p50_s, cat["e2b"].cold_start_p99_s) == (0.15, 3.15)
    assert cat["e2b-hobby"].cold_start_p50_s is None  # no substrate names the Hobby plan
    assert cat["agent-sandbox"].cold_start_p50_s == pytest.approx(3.7)  # no substrate names it: its own


def test_the_users_files_win(tmp_path):
    own = tmp_path / "p.toml"
    own.write_text('[[provider]]\nname = "e2b"\nsource = "mine"\nas_of = "2026"\nvcpu_usd_s = 0\n'
                   'memory_gib_usd_s = 0\ncold_start_p50_s = 2.5\n')
    (p,) = load_providers(own)
    assert p.cold_start_p50_s == 2.5 and p.cold_start_p99_s is None and "cold_start_p50_s" not in p.figure_sources
    subs = tmp_path / "s.toml"
    subs.write_text('[[substrate]]\nname = "fast"\nkind = "hosted"\nprovider = "modal"\ncold_start_s = 0.3\n'
                    'per_action_s = 0\nsource = "my benchmark"\nas_of = "2026-08"\n')
    modal = next(p for p in load_providers(None, subs) if p.name == "modal")
    assert modal.cold_start_p50_s == 0.3 and "my benchmark" in modal.figure_sources["cold_start_p50_s"]
    assert "cold_start_p50_s" not in modal.vendor_claimed
