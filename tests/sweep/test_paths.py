"""Dotted keys into scenario TOML: which exist, how `*` and `unbounded` resolve, the unknown-key error."""

from __future__ import annotations

import tomllib

import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.sweep.paths import apply, resolve, valid_keys

TWO = """
[[fleets]]
name = "a"
cap = 4
[[fleets]]
name = "b"
unbounded = true
[[workloads]]
kind = "sync-rl"
batch = 8
pool = "a"
hold = { dist = "lognormal", median_s = 10, sigma = 0.5 }
[[workloads]]
kind = "poisson"
rate_per_s = 1.0
count = 10
pool = "b"
hold = { dist = "deterministic", value_s = 2 }
exceptions = { p = { build = 0.1 } }
"""


def data(text: str = TWO) -> dict:
    return tomllib.loads(text)


def test_valid_keys_follow_tables_present_and_dist_tag():
    keys = set(valid_keys(data()))
    # every FleetSpec field, per fleet entry
    for i in (0, 1):
        assert {f"fleets.{i}.cap", f"fleets.{i}.unbounded", f"fleets.{i}.provision_delay_s"} <= keys
    # the hold table's fields follow its dist: lognormal has sigma, deterministic has value_s
    assert {"workloads.0.hold.median_s", "workloads.0.hold.sigma"} <= keys
    assert "workloads.0.hold.value_s" not in keys
    assert "workloads.1.hold.value_s" in keys and "workloads.1.hold.sigma" not in keys
    # a Literal-keyed dict exposes every allowed key, set or not
    assert {"workloads.1.exceptions.p.build", "workloads.1.exceptions.p.agent"} <= keys
    # tables the file does not have are not invented
    assert not any(k.startswith(("fleet.", "workload.", "build.", "workloads.0.build")) for k in keys)
    assert "run.seed" in keys  # run has a default table


def test_wildcard_expands_to_every_entry():
    assert resolve(data(), "workloads.*.kind") == ["workloads.0.kind", "workloads.1.kind"]
    assert resolve(data(), "workloads.*.hold.sigma") == ["workloads.0.hold.sigma"]


def test_unknown_key_names_it_and_lists_valid_keys():
    with pytest.raises(InputError) as exc:
        resolve(data(), "fleets.0.capp", "s.toml")
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("`vary` fleets.0.capp: unknown key in s.toml; valid keys:")
    assert "fleets.0.{name, cap, unbounded," in msg
    assert "workloads.0.hold.{min_s, max_s, dist, median_s, sigma}" in msg


@pytest.mark.parametrize("key", ["fleets.2.cap", "fleet.cap", "workloads.0.hold.value_s", "build.hit_p", "run"])
def test_other_unknown_keys(key):
    with pytest.raises(InputError, match="unknown key"):
        resolve(data(), key)


def test_apply_sets_values_without_touching_the_base():
    base = data()
    out = apply(base, {"workloads.*.hold.value_s": 3.5, "fleets.0.cap": 9, "workloads.1.exceptions.p.agent": 0.2})
    assert out["fleets"][0]["cap"] == 9
    assert out["workloads"][1]["hold"]["value_s"] == 3.5
    assert out["workloads"][1]["exceptions"]["p"] == {"build": 0.1, "agent": 0.2}
    assert base["fleets"][0]["cap"] == 4 and "agent" not in base["workloads"][1]["exceptions"]["p"]


def test_unbounded_cap_swaps_cap_for_unbounded_and_back():
    out = apply(data(), {"fleets.0.cap": "unbounded"})
    assert "cap" not in out["fleets"][0] and out["fleets"][0]["unbounded"] is True
    out = apply(data(), {"fleets.1.cap": 16})  # capping an unbounded pool
    assert out["fleets"][1]["cap"] == 16 and out["fleets"][1]["unbounded"] is False


def test_absent_optional_tables_are_not_offered_but_run_is():
    keys = valid_keys(data())
    assert "workloads.0.exceptions.p.build" not in keys  # workload 0 has no exceptions table
    out = apply(data(), {"run.seed": 5})  # [run] has defaults, so it may be created
    assert out["run"] == {"seed": 5}
