"""The default demo corpus: a small synthetic release, built once and reused.

The cache key is (preset, scale, seed, package version): a new version may change
the calibration, so it builds afresh. A build goes to a temporary folder first and
is renamed into place when complete, so an interrupted build is never reused.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sandbox_fleet import __version__
from sandbox_fleet.synth.build import MANIFEST, synth

#: ~16k rollouts, ~1.9k tasks: builds in a couple of seconds, keeps every rate.
DEFAULT_SCALE = 0.05
DEFAULT_SEED = 1


def corpus_dir(cache_dir: str | Path, scale: float = DEFAULT_SCALE, seed: int = DEFAULT_SEED) -> Path:
    """Where the corpus for this key lives under ``cache_dir``."""
    return Path(cache_dir) / f"rst-scale{scale:g}-seed{seed}-v{__version__}"


def default_corpus(
    cache_dir: str | Path, scale: float = DEFAULT_SCALE, seed: int = DEFAULT_SEED, progress: bool = True
) -> Path:
    """The release folder (``trajectories/`` and ``tasks/``), built on first use."""
    final = corpus_dir(cache_dir, scale, seed)
    if (final / MANIFEST).is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f"{final.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    synth(tmp, preset="rst", scale=scale, seed=seed, progress=progress)
    try:
        os.replace(tmp, final)
    except OSError:
        # Another process finished the same build first: keep theirs.
        shutil.rmtree(tmp, ignore_errors=True)
        if not (final / MANIFEST).is_file():
            raise
    return final
