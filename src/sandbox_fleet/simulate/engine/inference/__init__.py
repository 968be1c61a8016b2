"""The inference pool: model calls served by simulated GPU replicas, inside the fleet's event loop.

Modules: ``config`` (the pool's parameters, ``Inference``), ``routing`` (sticky, least-loaded),
``turn_draws`` (each rollout's per-turn draws, ``TurnDraws``), ``figures`` (the ``inference``
summary block and ``hold_stretch``). The replica's rules (continuous batching as processor sharing
on a virtual-time clock, the LRU prefix cache by bytes with a host-memory tier) run in the admission
kernel, ``fast/_inference_rules.py``; their object copy, the oracle, is in ``tests/simulate/engine/oracle/``.
"""

from sandbox_fleet.simulate.engine.inference.config import Inference

__all__ = ["Inference"]
