"""A scenario's ``[filter]`` dates checked where the file is read, named as the file spells them.

The filter itself is telemetry's (``telemetry.load.rollout_mask``); its record in an output is
``contract.TelemetryFilter``.
"""

from __future__ import annotations

from typing import Optional

from sandbox_fleet.errors import InputError
from sandbox_fleet.safeparse import iso_instant

#: an instant the error lines show as the expected form
EXAMPLE = "2026-11-29T08:00:00Z"


def check_scenario_filter(path: str, since: Optional[str], until: Optional[str]) -> None:
    """A scenario's [filter] dates read as ISO-8601, else one line naming the file and the [filter] key."""
    for key, text in (("since", since), ("until", until)):
        if text is not None and iso_instant(str(text).strip()) is None:
            raise InputError(f"{path}: [filter] {key}: '{text}' is not an ISO-8601 date or time (e.g. {EXAMPLE})")
