"""The check results as a typed model: what ``check --json`` writes (and ``demo`` saves as checks.json).

``{schema_version, kind: "checks", results: [...]}``, one result per check in report order. Before
schema version 1 of this kind, ``check --json`` printed the bare list. To add a figure, add a field
here, fill it in ``checks_summary`` and regenerate ``docs/schemas/checks.schema.json``.
"""

from typing import ClassVar, Literal, Optional

from sandbox_fleet.contract import Block, Summary


class Result(Block):
    """One check: the value it read, the bound that decided it, and what to do about it."""

    name: str
    status: Literal["pass", "warn", "fail", "skip"]
    value: Optional[float] = None
    threshold: Optional[float] = None
    message: str


class ChecksSummary(Summary):
    """``sandbox-fleet check --json``."""

    KIND: ClassVar[str] = "checks"
    VERSION: ClassVar[int] = 1

    results: list[Result]


def checks_summary(results) -> dict:
    """The ``ChecksSummary`` JSON dict of a list of ``CheckResult``."""
    return ChecksSummary.build(results=[r.to_dict() for r in results]).to_json()
