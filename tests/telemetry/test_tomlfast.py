"""The flat fast path must equal tomllib wherever it answers (and decline otherwise)."""

import tomllib

from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.telemetry.tomlfast import loads_flat

_keys = st.from_regex(r"[A-Za-z0-9_-]{1,8}", fullmatch=True)
_scalars = st.one_of(
    st.integers(-10**12, 10**12).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr).filter(lambda s: "e" in s or "." in s),
    st.sampled_from(["true", "false", '""', "''", '"a b"', "'c:\\\\x'", "1_000", "1e3", "-0", "+7", "2.5E-3"]),
    st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters='"\\'), max_size=8).map(lambda s: f'"{s}"'),
    st.just('["x", 1, 2.5]'),
)
_tricky = st.sampled_from([
    'a = """x"""', "a = '''x'''", 'a = "\\u0041"', "a.b = 1", '"q" = 1', "[[arr]]", "[a.b]", "a = {x = 1}",
    "a = 1979-05-27", "a = inf", "a = 0x1F", "a = [\n", "a = 01", "a = 1.", "a = \"x\" # c", "a = 1 # note",
    "[t] # header comment", "  indented = 2", "a=1", "a = [1, [2]]", "a = 1\r", "= 1", "a = ",
])


@st.composite
def documents(draw):
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        lines.append(f"{draw(_keys)} = {draw(_scalars)}")
    for _ in range(draw(st.integers(0, 3))):
        lines.append(f"[{draw(_keys)}]")
        for _ in range(draw(st.integers(0, 5))):
            lines.append(f"{draw(_keys)} = {draw(_scalars)}")
        if draw(st.booleans()):
            lines.append("# comment " + draw(st.text(max_size=5).filter(lambda s: "\n" not in s and "\r" not in s)))
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(_tricky))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\r\n"]))


def _strip_arrays(obj):
    # The fast path keeps only a placeholder for arrays (we never read them).
    if isinstance(obj, dict):
        return {k: _strip_arrays(v) for k, v in obj.items()}
    return ... if isinstance(obj, list) else obj


@settings(max_examples=400, deadline=None)
@given(documents())
def test_fast_path_equals_tomllib_or_declines(text):
    fast = loads_flat(text)
    try:
        ref = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        assert fast is None  # invalid TOML must reach tomllib so its error is reported
        return
    if fast is not None:
        assert fast == _strip_arrays(ref)


def test_typical_task_file_takes_the_fast_path():
    text = 'version = "1.0"\n\n[environment]\ncpus = 1\nmemory_mb = 2048 # MB\n[agent]\ntimeout_sec = 1800.0\n'
    assert loads_flat(text) == tomllib.loads(text)
