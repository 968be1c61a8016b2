"""What ``synth`` returns and prints with ``--json``: the release it wrote and how it was built.

Not a stage output (``measure`` reads the release, not this), so no kind; ``schema_version`` is the
release manifest's (``synth.json``), whose fields this repeats first.
"""

from __future__ import annotations

from typing import Any

from sandbox_fleet.contract import Block


class SynthRun(Block):
    """One simulated RL run: its model, batch size, steps, rollouts, trainer time and start."""

    model: str
    batch: int
    steps: int
    rollouts: int
    train_s: float
    start_s: float


class SynthTiming(Block):
    """Wall seconds of each build stage (they vary run to run; the release bytes do not)."""

    draw_s: float
    simulate_s: float
    write_trajectories_s: float
    write_tasks_s: float
    total_s: float


#: the fields ``synth.json`` (the release manifest) records: the inputs, not where or how long
MANIFEST_FIELDS = frozenset({"schema_version", "generator", "preset", "scale", "seed", "epoch", "rollouts", "tasks",
                             "cap", "provision_delay_s", "runs"})


class SynthSummary(Block):
    # the manifest's fields (``synth.json``), in its order
    schema_version: int
    generator: str
    preset: str
    scale: float
    seed: int
    epoch: str
    rollouts: int
    tasks: int
    cap: int
    provision_delay_s: float
    runs: list[SynthRun]
    # where the release went and what building it took
    out: str
    trajectories: str
    tasks_root: str
    shards: int
    simulated_span_s: float
    events: int
    timing: SynthTiming

    def to_json(self) -> dict[str, Any]:
        """JSON-native values, in the field order."""
        return self.model_dump(mode="json")
