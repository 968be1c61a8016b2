"""The variant product: order, validation by the scenario model, seeds."""

from __future__ import annotations

import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.sweep.variants import expand


def test_product_order_first_key_outermost(sync_det):
    vs = expand(sync_det(), [("fleet.cap", [1, 2, 3]), ("workload.batch", [4, 8])])
    assert [v.index for v in vs] == list(range(6))
    assert [tuple(v.settings.values()) for v in vs] == [(1, 4), (1, 8), (2, 4), (2, 8), (3, 4), (3, 8)]
    assert [list(v.settings) for v in vs] == [["fleet.cap", "workload.batch"]] * 6
    assert [(v.data["fleet"]["cap"], v.data["workload"]["batch"]) for v in vs] == [
        (1, 4), (1, 8), (2, 4), (2, 8), (3, 4), (3, 8)]


def test_variant_seed_is_the_scenarios_unless_swept(sync_det):
    assert {v.seed for v in expand(sync_det(), [("fleet.cap", [1, 2])])} == {7}
    assert [v.seed for v in expand(sync_det(), [("run.seed", [3, 9])])] == [3, 9]


def test_values_validated_by_the_scenario_model(sync_det):
    with pytest.raises(InputError) as exc:
        expand(sync_det(), [("fleet.cap", [4, 0])])
    msg = str(exc.value)
    assert "with fleet.cap=0" in msg and "fleet.cap" in msg and "greater than or equal to 1" in msg
    assert "\n" not in msg


def test_wrong_type_is_rejected(sync_det):
    with pytest.raises(InputError, match="workload.batch"):
        expand(sync_det(), [("workload.batch", ["lots"])])


def test_builder_rules_apply_too(sync_det):
    # valid for the model, refused by the simulator's builder: sync-rl has staleness 0
    with pytest.raises(InputError, match="staleness"):
        expand(sync_det(), [("workload.staleness", [2])])


def test_unknown_key_fails_before_any_variant(sync_det):
    with pytest.raises(InputError, match=r"`vary` fleet\.size: unknown key"):
        expand(sync_det(), [("fleet.cap", [1]), ("fleet.size", [2])])


def test_same_key_twice_is_an_error(sync_det):
    with pytest.raises(InputError, match="given twice"):
        expand(sync_det(), [("fleet.cap", [1]), ("fleet.cap", [2])])


def test_missing_and_bad_files(tmp_path):
    with pytest.raises(InputError, match="not found"):
        expand(tmp_path / "nope.toml", [("fleet.cap", [1])])
    bad = tmp_path / "bad.toml"
    bad.write_text("[fleet\n")
    with pytest.raises(InputError, match="not valid TOML"):
        expand(bad, [("fleet.cap", [1])])
