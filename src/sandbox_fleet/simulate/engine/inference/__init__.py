"""The inference pool: model calls served by simulated GPU replicas, inside the fleet's event loop.

Modules: ``config`` (the pool's parameters, ``Inference``), ``cache`` (per-replica LRU
prefix cache by bytes with a host-memory tier), ``routing`` (sticky, least-loaded),
``pool`` (continuous batching as processor sharing on a virtual-time clock),
``driver`` (turn-by-turn glue between a rollout's hold and the pool), ``figures``
(the ``inference`` summary block and ``hold_stretch``).
"""

from sandbox_fleet.simulate.engine.inference.config import Inference

__all__ = ["Inference"]
