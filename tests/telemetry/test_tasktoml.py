import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry.tasktoml import parse_task_toml, size_to_mb


@pytest.mark.parametrize(
    "text,mb",
    [("2G", 2048), ("10G", 10240), ("512M", 512), ("1T", 1048576), ("1536K", 2), ("1024K", 1),
     ("2g", 2048), ("2GB", 2048), ("2Gi", 2048), ("0.5G", 512), ("1048576", 1)],
)
def test_legacy_sizes_are_binary_mb(text, mb):
    assert size_to_mb(text, "x", "memory") == mb


def test_bad_legacy_size_names_file_and_key():
    with pytest.raises(InputError, match=r"t\.toml: \[environment\] memory = 'lots'"):
        parse_task_toml(b'[environment]\nmemory = "lots"\n', "t.toml")


def test_memory_mb_wins_over_legacy_memory():
    got = parse_task_toml(b'[environment]\nmemory_mb = 1024\nmemory = "4G"\n', "t")
    assert got["memory_mb"] == 1024


def test_wrong_type_is_input_error():
    with pytest.raises(InputError, match=r"\[environment\] cpus = 'two', expected a number"):
        parse_task_toml(b'[environment]\ncpus = "two"\n', "t")
    with pytest.raises(InputError, match=r"\[environment\] gpus = 1.5, expected a whole number"):
        parse_task_toml(b"[environment]\ngpus = 1.5\n", "t")


def test_absent_sections_give_nulls():
    got = parse_task_toml(b'version = "1.0"\n', "t")
    assert got.pop("out_of_range") == 0
    assert set(got.values()) == {None}


def test_array_value_for_a_read_key_goes_through_tomllib():
    with pytest.raises(InputError, match=r"cpus = \[1, 2\], expected a number"):
        parse_task_toml(b"[environment]\ncpus = [1, 2]\n", "t")
