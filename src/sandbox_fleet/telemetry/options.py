"""Reader options shared by every reader, checked once up front."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sandbox_fleet.errors import InputError
from sandbox_fleet.safeparse import option_instant

if TYPE_CHECKING:  # PyArrow: the CLI builds ReadOptions for inputs that may be summaries, never read as rows
    from sandbox_fleet.telemetry.record import Telemetry

FORMATS = ("rst", "harbor", "terminal-bench", "inspect", "table")
#: Telemetry of agentic RL cannot predate this; earlier times are durations or defaults.
EARLIEST_TIME = "2000-01-01"
DEFAULT_LATEST_TIME = "2100-01-01"
#: 10000-01-01T00:00:00Z in microseconds: the hard limit even with --allow-any-time.
YEAR_10000_US = 253_402_300_800_000_000
TIME_UNITS = ("s", "ms", "us", "ns")


@dataclass
class ReadOptions:
    """What the user told us about the input; ``column_map`` is canonical -> source."""

    fmt: str | None = None
    column_map: dict[str, str] = field(default_factory=dict)
    time_unit: str | None = None
    assume_tz: str = "UTC"
    reward_key: str = "reward"
    progress: bool = True
    #: Rows with a time before ``earliest_us`` or at/after ``latest_us`` are "implausible time".
    earliest_us: int | None = None
    latest_us: int = YEAR_10000_US
    #: Inspect AI: the scorer whose value is the reward, or SCORER/KEY for one entry of a dict
    #: score (None: the first scorer).
    score: str | None = None
    #: Hand the CODED_COLUMNS over dictionary-encoded (``record.CODED``), as ``measure`` reads them.
    coded: bool = False


def parse_column_map(spec: str | dict[str, str] | None) -> dict[str, str]:
    """Parse ``"canonical=source,..."`` (or a dict) and check every canonical name."""
    if spec is None or spec == "":
        return {}
    from sandbox_fleet.telemetry.record import ROLLOUT_COLUMNS

    if isinstance(spec, dict):
        pairs = list(spec.items())
    else:
        pairs = []
        for item in spec.split(","):
            item = item.strip()
            if not item:
                continue
            if "=" not in item:
                raise InputError(f"`column_map`: '{item}' is not canonical=source")
            canonical, source = item.split("=", 1)
            pairs.append((canonical.strip(), source.strip()))
    out: dict[str, str] = {}
    for canonical, source in pairs:
        if canonical not in ROLLOUT_COLUMNS:
            raise InputError(
                f"`column_map`: unknown canonical name '{canonical}' (valid: {', '.join(ROLLOUT_COLUMNS)})"
            )
        if not source:
            raise InputError(f"`column_map`: empty source column for '{canonical}'")
        if canonical in out:  # the later one would win without a word
            raise InputError(f"`column_map`: '{canonical}' is mapped twice ('{out[canonical]}' and '{source}'); "
                             "give each canonical name one source")
        out[canonical] = source
    return out


def make_options(
    *,
    fmt: str | None = None,
    column_map: str | dict[str, str] | None = None,
    time_unit: str | None = None,
    assume_tz: str = "UTC",
    reward_key: str = "reward",
    progress: bool = True,
    latest_time: str | None = DEFAULT_LATEST_TIME,
    allow_any_time: bool = False,
    score: str | None = None,
    coded: bool = False,
) -> ReadOptions:
    """Validate user options, failing with one line on the first bad one.

    The reader flags' one typed form: ``sandbox-fleet`` builds it once per command and it travels
    to ``load_telemetry`` through ``measure_paths``, ``backtest_paths`` and ``scenario_from_telemetry``.
    """
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"`fmt`: unknown format '{fmt}' (valid: {', '.join(FORMATS)})")
    if time_unit is not None and time_unit not in TIME_UNITS:
        raise InputError(f"`time_unit`: unknown unit '{time_unit}' (valid: {', '.join(TIME_UNITS)})")
    try:
        ZoneInfo(assume_tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InputError(f"`assume_tz`: unknown time zone '{assume_tz}' (expected an IANA name such as UTC or Europe/Paris)") from exc
    return ReadOptions(
        fmt=fmt,
        column_map=parse_column_map(column_map),
        time_unit=time_unit,
        assume_tz=assume_tz,
        reward_key=reward_key,
        progress=progress,
        earliest_us=None if allow_any_time else _instant_us(EARLIEST_TIME, "earliest_time"),
        latest_us=YEAR_10000_US if allow_any_time or latest_time is None
        else min(_instant_us(latest_time, "latest_time"), YEAR_10000_US),
        score=score,
        coded=coded,
    )


def _instant_us(text: str, option: str) -> int:
    """An ISO-8601 date or time (naive = UTC) as epoch microseconds."""
    delta = option_instant(text, option, "2100-01-01") - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def warn_once(tel: Telemetry, message: str) -> None:
    """Add a warning unless the same text is already there (readers call this per row batch)."""
    if message not in tel.warnings:
        tel.warnings.append(message)
