"""sweep: what-if sweeps over scenario files, kept outside the simulation engine.

It only builds scenario variants (dotted ``--vary`` keys into the TOML, validated by
the simulator's own scenario model) and runs them through the simulator's public
functions, locally or on Ray, then tabulates and finds knees::

    from sandbox_fleet.sweep import run_sweep, write
    res = run_sweep("scenario.toml", ["fleet.cap=64:1024:64", "workload.batch=256,512"],
                    seeds=3, target="step_s.mean", within=0.01)
    res["rows"]        # one dict per variant: settings, METRIC and METRIC:sd
    res["knee"]        # smallest cap within 1% of the best (or uncapped) step time
    write(res, "results.parquet")

Modules: ``values`` (parse --vary), ``paths`` (dotted keys), ``variants`` (product,
validation), ``task`` (one simulation), ``backends`` (serial, process pool, Ray),
``aggregate`` (mean and spread), ``knee``, ``output`` (CSV/Parquet/JSON), ``render``.
"""

from __future__ import annotations

from sandbox_fleet.lazy import lazy_exports

#: public name -> the module defining it, imported on first use (start-up stays cheap)
_EXPORTS = {
    "DEFAULT_METRICS": "sandbox_fleet.sweep.aggregate",
    "run_tasks": "sandbox_fleet.sweep.backends",
    "find_knee": "sandbox_fleet.sweep.knee",
    "write": "sandbox_fleet.sweep.output",
    "valid_keys": "sandbox_fleet.sweep.paths",
    "run_sweep": "sandbox_fleet.sweep.run",
    "parse_vary": "sandbox_fleet.sweep.values",
    "Variant": "sandbox_fleet.sweep.variants",
    "expand": "sandbox_fleet.sweep.variants",
}

__all__ = ["DEFAULT_METRICS", "Variant", "expand", "find_knee", "parse_vary", "run_sweep", "run_tasks",
           "valid_keys", "write"]


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
