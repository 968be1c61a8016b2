"""GPU catalog and roofline: hand-computed values against the bundled catalog."""

import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.gpus import (
    GIB,
    compute_tok_s,
    get_gpu,
    kv_free_bytes,
    load_gpus,
    parse_gpus,
    weights_bytes,
    weights_read_s,
)


def test_bundled_catalog_has_the_five_types_with_sources():
    cat = load_gpus()
    assert {"a100-80gb", "h100-80gb", "h200-141gb", "b200-192gb", "l40s-48gb"} <= set(cat)
    for g in cat.values():
        assert g.source and g.date and g.usd_per_gpu_h > 0
    h = cat["h100-80gb"]
    assert (h.memory_gib, h.bf16_tflops, h.hbm_tb_s) == (80, 989, 3.35)


def test_roofline_by_hand():
    h = get_gpu("h100-80gb")
    # 27B params at 2 bytes: 54e9 bytes; 0.5 x 989e12 / (2 x 27e9) = 9157.4 tok/s per GPU
    assert weights_bytes(27) == 54e9
    assert compute_tok_s(h, 27, 0.5) == pytest.approx(0.5 * 989e12 / 54e9)
    assert compute_tok_s(h, 27, 0.5, gpus=2) == pytest.approx(2 * 0.5 * 989e12 / 54e9)
    assert weights_read_s(h, 27) == pytest.approx(54e9 / 3.35e12)
    # 80 GiB x 0.9 - 54e9 bytes
    assert kv_free_bytes(h, 27) == pytest.approx(80 * GIB * 0.9 - 54e9)
    assert kv_free_bytes(h, 70) < 0  # 140 GB of weights do not fit one 80 GiB GPU


def test_bad_catalog_names_the_key(tmp_path):
    with pytest.raises(InputError, match="'x.hbm_tb_s'"):
        parse_gpus('[x]\nmemory_gib = 1\nbf16_tflops = 1\nhbm_tb_s = -1\nusd_per_gpu_h = 1\nsource = "s"\ndate = "d"\n', "f")
    with pytest.raises(InputError, match="missing key 'x.date'"):
        parse_gpus('[x]\nmemory_gib = 1\nbf16_tflops = 1\nhbm_tb_s = 1\nusd_per_gpu_h = 1\nsource = "s"\n', "f")
    with pytest.raises(InputError, match="unknown GPU 'nope'"):
        get_gpu("nope")
    with pytest.raises(InputError, match="not found"):
        load_gpus(tmp_path / "missing.toml")
