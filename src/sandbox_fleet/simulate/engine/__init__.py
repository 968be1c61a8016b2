"""The simulation engine: everything that runs a scenario once it is built into engine objects.

Entities (what is simulated): ``distributions`` (durations), ``entities`` (fleet, episode, retry
policy, state codes), ``workloads`` (arrivals and the RL trainers' batches), ``images`` (the
per-node layer cache), ``inference/`` (the model-serving pool). Rules: ``policies`` (priority, quotas, preemption, the timeout ceiling), ``trainer`` (an RL
workload's batch layout and the steps a run leaves; the rule itself is the admission kernel's), ``events`` (event kinds, the tie rule). The engine: ``fast/`` (the
admission kernel, ``admit_loop`` + ``_admit_kernel`` with the inference replica's rules, numba's
build or the same source as plain Python; it runs every scenario), ``fifo`` (the FIFO step
``place_stream`` and ``claim``, which the kernel calls, and the kernel's closed form for a run where
nothing feeds back, one pass of ``place_stream``, compiled by ``fast/fifo_compiled``). Around it:
``prepare`` (every random draw, before anything is placed), ``run`` (``run_workloads``: prepare, ``place``
(the one dispatch: the one pass or the kernel), check), ``result``
(``SimResult``, ``ExecutorOutput``), ``metrics`` and ``steady`` (the summary figures),
``invariants`` (checked on every run). After a run, ``nodes`` replays per-rollout intervals on node
pools (placement, launch, billing, release; a pass where nothing feeds back, which ``plan`` also
calls to price the mixed purchase on measured history).

The engine imports nothing from the scenario tooling (``simulate.scenario``) nor the package's
public face (``sandbox_fleet.simulate``); ``tests/test_imports.py`` enforces it. Its one
outward dependency inside the stage is the output model, ``simulate.model``.
"""
