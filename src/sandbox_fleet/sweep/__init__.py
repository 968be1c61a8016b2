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

from sandbox_fleet.sweep.aggregate import DEFAULT_METRICS
from sandbox_fleet.sweep.backends import run_tasks
from sandbox_fleet.sweep.knee import find_knee
from sandbox_fleet.sweep.output import write
from sandbox_fleet.sweep.paths import valid_keys
from sandbox_fleet.sweep.run import run_sweep
from sandbox_fleet.sweep.values import parse_vary
from sandbox_fleet.sweep.variants import Variant, expand

__all__ = ["DEFAULT_METRICS", "Variant", "expand", "find_knee", "parse_vary", "run_sweep", "run_tasks",
           "valid_keys", "write"]
