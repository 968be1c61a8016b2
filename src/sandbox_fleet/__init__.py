"""sandbox-fleet: size the container fleet behind agentic reinforcement learning.

The import graph (enforced by tests/test_imports.py):

- telemetry <- measure <- plan and report: ``telemetry/`` reads every format into the canonical
  record; ``measure/`` turns it into a ``MeasureSummary``; ``plan/`` and ``report/`` read that.
- plan -> simulate only for target searches (``plan/target.py``: the RL-schedule cap search;
  ``plan/shape.py``: the smooth-shape throughput search).
- simulate reads and writes the canonical telemetry record (calibration, simulated telemetry) and
  uses measure's one sweep line and rate definitions (``measure.concurrency``, ``measure.stats``).
- sweep -> simulate, from outside the engine (and any other search over scenarios: optimize, and
  backtest, which replays a history with the ``simulate --from`` calibration).
- inside simulate, ``simulate/engine/`` (entities, rules, the engine) never imports the scenario
  tooling beside it (``simulate/scenario/``) nor the stage's public face; synth -> simulate (the
  bundled synthetic corpus, ``synth/``, drives the public API; only cli and demo import synth).
- report reads the plan, simulate, optimize and backtest models, nothing else of them; plan reads
  the backtest model (``plan --backtest``).
- errors, jsonio, contract, atomic (every output write), outpaths (output checks), textout (plain
  lines; one-line escaping of values in comments; the one null-aware figure format), limits (seeds,
  memory budget), gpus (the GPU catalog) and lazy (lazy package exports) are leaves any stage may use.
- cli -> everything: it only parses arguments and calls these documented functions.

Every stage output is a Pydantic model next to its producer, sharing the envelope of
``contract`` (``schema_version``, ``kind``); ``sandbox-fleet schema KIND`` prints its JSON Schema.
"""

__version__ = "0.1.0"
