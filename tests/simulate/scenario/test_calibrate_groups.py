"""``empirical_by_model_outcome`` groups in one sort (issue 42 mechanism 7: 200k distinct models scanned
every row per model). The oracle is the per-group scan it replaced, kept here."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from sandbox_fleet.simulate.scenario.calibrate import NO_MODEL, empirical_by_model_outcome, holds_s


def _scan(rollouts: pa.Table):
    hold = holds_s(rollouts)
    model = np.array([NO_MODEL if m is None else m for m in rollouts.column("model").to_pylist()], dtype=str)
    exc = np.array([bool(e) for e in rollouts.column("has_exception").to_pylist()])
    out = []
    for m in sorted(set(model.tolist())):
        for e in (False, True):
            sel = (model == m) & (exc == e)
            if sel.any():
                out.append((m, e, float(sel.sum()), np.sort(hold[sel]).tolist()))
    return out


def test_one_sort_matches_the_per_group_scan():
    rng = np.random.default_rng(7)
    n = 3000
    models = [None if i % 17 == 0 else f"m{rng.integers(0, 40)}" for i in range(n)]
    start = rng.integers(0, 10**9, n)
    ts = pa.timestamp("us", tz="UTC")
    t = pa.table({"started_at": pa.array(start, pa.int64()).cast(ts),
                  "finished_at": pa.array(start + rng.integers(0, 10**8, n), pa.int64()).cast(ts),
                  "model": models,
                  "has_exception": [None if i % 11 == 0 else bool(rng.integers(0, 2)) for i in range(n)]})
    mix = empirical_by_model_outcome(t)
    got = [(lab, flag, w, c.values.tolist()) for lab, flag, w, c in zip(mix.labels, mix.exceptions, mix.weights,
                                                                          mix.components)]
    assert got == _scan(t)
