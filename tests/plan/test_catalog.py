"""The node catalog: the bundled file, a replacement file, and each kind of malformed entry."""

from __future__ import annotations

import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.catalog import find_type, load_catalog, parse_catalog


def test_bundled_catalog_has_seed_96c_unpriced_and_priced_types():
    nodes = load_catalog()
    seed = find_type(nodes, "seed-96c")
    assert (seed.vcpus, seed.memory_gb, seed.disk_gb, seed.gpus) == (96, 384, 4096, 0)
    assert not seed.priced
    assert sum(n.priced for n in nodes) >= 4


def test_replacement_file(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text('[[node]]\nname = "box"\nvcpus = 16\nmemory_gb = 64\ndisk_gb = 500\nspot_usd_h = 0.2\n')
    (node,) = load_catalog(f)
    assert node.name == "box" and node.spot_usd_h == 0.2 and node.on_demand_usd_h is None


@pytest.mark.parametrize(
    "body, key",
    [
        ('vcpus = -4\nmemory_gb = 1\ndisk_gb = 1', "vcpus"),
        ('vcpus = 4\nmemory_gb = "lots"\ndisk_gb = 1', "memory_gb"),
        ('vcpus = 4\nmemory_gb = 8\ndisk_gb = -1', "disk_gb"),
        ('vcpus = 4\nmemory_gb = 8\ndisk_gb = 1\nspot_usd_h = -0.5', "spot_usd_h"),
        ('vcpus = 4\nmemory_gb = 8\ndisk_gb = 1\ngpus = 1.5', "gpus"),
        ('vcpus = 4\nmemory_gb = 8\ndisk_gb = 1\ncolour = "red"', "colour"),
        ('vcpus = 4\ndisk_gb = 1', "memory_gb"),
        ('vcpus = nan\nmemory_gb = 8\ndisk_gb = 1', "vcpus"),
    ],
)
def test_malformed_entry_names_entry_and_key(body, key):
    text = f'[[node]]\nname = "ok"\nvcpus = 1\nmemory_gb = 1\ndisk_gb = 1\n\n[[node]]\nname = "bad"\n{body}\n'
    with pytest.raises(InputError) as exc:
        parse_catalog(text, "cat.toml")
    msg = str(exc.value)
    assert "cat.toml" in msg and "'bad'" in msg and repr(key) in msg and "\n" not in msg


def test_not_toml_and_empty_and_duplicate():
    with pytest.raises(InputError, match="not valid TOML"):
        parse_catalog("[[node]\n", "x.toml")
    with pytest.raises(InputError, match="at least one"):
        parse_catalog("", "x.toml")
    with pytest.raises(InputError, match="appears twice"):
        parse_catalog('[[node]]\nname="a"\nvcpus=1\nmemory_gb=1\ndisk_gb=1\n' * 2, "x.toml")


def test_unknown_node_type_lists_choices():
    with pytest.raises(InputError, match="not in the node catalog.*seed-96c"):
        find_type(load_catalog(), "nope")
