"""GPU catalog and roofline arithmetic (a leaf module: ``simulate`` and ``plan`` both import it).

The bundled catalog is ``data/gpus.toml``: memory (GiB), dense BF16 TFLOP/s, memory
bandwidth (TB/s) and an illustrative $/GPU-hour with its source and date.

Roofline for a model of ``P`` billion parameters on ``g`` GPUs at utilisation ``u``:

- a token costs ``2 P`` FLOPs forward, so prefill (compute-bound) runs at
  ``u * g * FLOP/s / (2 P)`` tokens/s, and so does a large decode batch;
- one decode iteration reads the weights once whatever the batch: the memory-bound
  floor of an iteration is ``weights bytes / (g * HBM bytes/s)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from sandbox_fleet.errors import InputError
from sandbox_fleet.safeparse import read_text, toml_loads

GIB = 1024**3
_FIELDS = {"memory_gib": float, "bf16_tflops": float, "hbm_tb_s": float, "usd_per_gpu_h": float, "source": str, "date": str}


@dataclass(frozen=True)
class GPU:
    name: str
    memory_gib: float
    bf16_tflops: float
    hbm_tb_s: float
    usd_per_gpu_h: float
    source: str
    date: str

    @property
    def flops(self) -> float:
        return self.bf16_tflops * 1e12

    @property
    def hbm_bytes_s(self) -> float:
        return self.hbm_tb_s * 1e12


def parse_gpus(text: str, where: str) -> dict[str, GPU]:
    """Parse a catalog; a bad entry is one InputError naming the file and key."""
    data = toml_loads(text, where)
    out: dict[str, GPU] = {}
    for name, row in data.items():
        if not isinstance(row, dict):
            raise InputError(f"{where}: key '{name}': expected a table of GPU figures")
        extra = sorted(set(row) - set(_FIELDS))
        if extra:
            raise InputError(f"{where}: unknown key '{name}.{extra[0]}'")
        vals = {}
        for key, typ in _FIELDS.items():
            if key not in row:
                raise InputError(f"{where}: missing key '{name}.{key}'")
            v = row[key]
            if typ is float:
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                    raise InputError(f"{where}: key '{name}.{key}': expected a positive number, got {v!r}")
                v = float(v)
            elif not isinstance(v, str):
                raise InputError(f"{where}: key '{name}.{key}': expected a string, got {v!r}")
            vals[key] = v
        out[name] = GPU(name=name, **vals)
    if not out:
        raise InputError(f"{where}: the catalog lists no GPU")
    return out


def load_gpus(path: str | Path | None = None) -> dict[str, GPU]:
    """The bundled catalog, or the one at ``path`` (which replaces it)."""
    if path is None:
        text = resources.files("sandbox_fleet").joinpath("data/gpus.toml").read_text(encoding="utf-8")
        return parse_gpus(text, "bundled gpus.toml")
    return parse_gpus(read_text(path, "GPU catalog"), str(path))


def get_gpu(name: str, catalog: dict[str, GPU] | None = None) -> GPU:
    cat = load_gpus() if catalog is None else catalog
    if name not in cat:
        raise InputError(f"unknown GPU {name!r}; the catalog has {', '.join(sorted(cat))}")
    return cat[name]


def weights_bytes(params_b: float, bytes_per_param: float = 2.0) -> float:
    """Bytes of model weights for ``params_b`` billion parameters."""
    return params_b * 1e9 * bytes_per_param


def compute_tok_s(gpu: GPU, params_b: float, utilisation: float, gpus: int = 1) -> float:
    """Compute-bound tokens/s (prefill, or decode at a large batch): ``u g FLOP/s / (2 P)``."""
    return utilisation * gpus * gpu.flops / (2.0 * params_b * 1e9)


def weights_read_s(gpu: GPU, params_b: float, bytes_per_param: float = 2.0, gpus: int = 1) -> float:
    """Seconds to stream the weights once from memory: the floor of one decode iteration."""
    return weights_bytes(params_b, bytes_per_param) / (gpus * gpu.hbm_bytes_s)


def kv_free_bytes(gpu: GPU, params_b: float, gpus: int = 1, *, bytes_per_param: float = 2.0,
                  memory_fraction: float = 0.9) -> float:
    """Memory left for KV on a replica of ``gpus`` GPUs after the weights (may be <= 0: does not fit)."""
    return gpus * gpu.memory_gib * GIB * memory_fraction - weights_bytes(params_b, bytes_per_param)
