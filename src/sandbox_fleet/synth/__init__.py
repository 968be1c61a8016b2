"""A calibrated synthetic corpus: the published RST campaign, simulated and released.

``synth(out, preset="rst", scale=1.0, seed=1)`` draws per-rollout attributes from
distributions fitted to the document's figures (``calibration``, ``population``),
places them in time with the simulation engine as synchronous RL runs sharing one
capped pool (``campaign``), and writes the RST layout that ``measure`` reads
(``release``). ``default_corpus(cache_dir)`` builds the small corpus the README's
demo measures, once per (scale, seed, package version).
"""

from sandbox_fleet.synth.build import synth
from sandbox_fleet.synth.cache import DEFAULT_SCALE, DEFAULT_SEED, default_corpus

__all__ = ["DEFAULT_SCALE", "DEFAULT_SEED", "default_corpus", "synth"]
