"""Warnings where they are seen: a measure summary's warnings on stderr, without Rich."""

from __future__ import annotations

import sys

from sandbox_fleet.measure.model import MeasureSummary


def warn_on_stderr(summary: MeasureSummary) -> None:
    """Every warning of a measure summary (one per rejected-row reason among them) as one line on
    stderr, where it is seen even when stdout is JSON, piped or a long table."""
    for w in summary.warnings or []:
        sys.stderr.write(f"warning: {w}\n")
    sys.stderr.flush()
