"""Progress bars on stderr for reads that may take more than a second."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

T = TypeVar("T")

#: Below this many items a read is quick; a bar would only flicker.
MIN_ITEMS = 200

_console = Console(stderr=True)


def track(items: Iterable[T], description: str, enabled: bool = True, min_items: int = MIN_ITEMS) -> Iterator[T]:
    """Iterate ``items``, drawing a transient bar on stderr when it is a terminal and the job is big."""
    total = len(items) if isinstance(items, Sized) else None
    if not enabled or not _console.is_terminal or (total is not None and total < min_items):
        yield from items
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=_console,
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=total)
        for item in items:
            yield item
            bar.advance(task)
