"""The manifest YAML writer, read back by PyYAML: any nested mapping/sequence/scalar round-trips."""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.plan.k8s.yamltext import dump

scalars = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["on", "off", "yes", "no", "null", "1e3", "0x10", "- a", "a: b", "#x", "true", "", " ", "'q'", '"']),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.booleans(),
)
keys = st.one_of(st.text(min_size=1, max_size=10), st.sampled_from(["karpenter.sh/do-not-disrupt", "on", "a b", "x:y"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(keys, inner, max_size=4)), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(keys, values, max_size=5))
def test_round_trips_through_pyyaml(doc):
    assert yaml.safe_load(dump(doc)) == (doc or {})


def test_strings_that_look_like_other_types_stay_strings():
    doc = {"a": "on", "b": "1e3", "c": "true", "d": "null", "on": ["no", "0x10"]}
    assert yaml.safe_load(dump(doc)) == doc


def test_a_key_ending_in_a_newline_is_quoted():
    # found by the round-trip property: "$" in a regex also matches before a final newline
    doc = {"A\n": 1, "b": {"c\n": "d"}}
    assert yaml.safe_load(dump(doc)) == doc
