"""sandbox-fleet: size the container fleet behind agentic reinforcement learning.

Data flows one way: ``telemetry -> measure -> plan -> simulate -> report``.
"""

__version__ = "0.1.0"
