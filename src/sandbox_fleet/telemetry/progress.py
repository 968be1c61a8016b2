"""Progress bars on stderr for reads that may take more than a second.

Every bar in telemetry and measure draws on ``console()`` and only when its caller's
``progress`` flag is true and stderr is a terminal: ``progress=False`` draws nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sized
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from rich.console import Console

T = TypeVar("T")

#: Below this many items a read is quick; a bar would only flicker.
MIN_ITEMS = 200

#: Built on first use: a run without bars (``--json`` into a pipe) never imports rich's progress.
_console: Console | None = None


def console() -> Console:
    """The stderr console every bar draws on (one place to redirect it, e.g. in tests)."""
    global _console
    if _console is None:
        from rich.console import Console

        _console = Console(stderr=True)
    return _console


def active(enabled: bool) -> bool:
    """Whether a bar may be drawn: asked for, and stderr is a terminal."""
    return enabled and console().is_terminal


def track(items: Iterable[T], description: str, enabled: bool = True, min_items: int = MIN_ITEMS) -> Iterator[T]:
    """Iterate ``items``, drawing a transient bar on stderr when it is a terminal and the job is big."""
    total = len(items) if isinstance(items, Sized) else None
    if not active(enabled) or (total is not None and total < min_items):
        yield from items
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console(),
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=total)
        for item in items:
            yield item
            bar.advance(task)


@contextmanager
def steps(enabled: bool, description: str, total: int) -> Iterator[Callable[..., None]]:
    """A transient bar of ``total`` steps on stderr (when ``active``); yields ``advance(label=None, n=1)``:
    ``n`` more steps done, the bar then reading ``"{description}: {label}"`` when a label is given."""
    if not active(enabled):
        yield lambda label=None, n=1: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console(), transient=True) as bar:
        task = bar.add_task(description, total=total)

        def advance(label: str | None = None, n: int = 1) -> None:
            bar.update(task, advance=n, description=f"{description}: {label}" if label else None)

        yield advance
