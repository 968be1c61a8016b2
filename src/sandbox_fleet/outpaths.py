"""Output paths checked before any work starts.

A run that would fail to write its result should fail in the first millisecond, not after an
hour of simulation: the destination must not be (or resolve to) one of the inputs, nor lie
inside an input folder (links and ``..`` resolved: reading user files never writes into them),
must not be a folder or a device, must carry a suffix the writer understands, and its folder
must exist or be creatable and be writable. Each refusal is one line naming the path (exit 2).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from pathlib import Path

from sandbox_fleet.atomic import OutputError, reason, temp_name


def _same(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def _inside(dest: Path, folder: Path) -> bool:
    """Whether ``dest`` (resolved: links followed, ``..`` applied, existing or not) lies under the folder ``folder``."""
    try:
        return folder.is_dir() and dest.resolve().is_relative_to(folder.resolve())
    except OSError:
        return False


def _expand(inputs: Iterable[str | Path | None]) -> list[Path]:
    out: list[Path] = []
    for p in inputs:
        if p is None:
            continue
        text = str(p)
        hits = glob.glob(text) if glob.has_magic(text) else []
        out.extend(Path(h) for h in hits) if hits else out.append(Path(text))
    return out


def _probe_folder(dest: Path) -> None:
    """The nearest existing ancestor must be a writable folder: create and remove a probe file there."""
    folder = dest.parent
    while not folder.exists():
        if folder == folder.parent:
            break
        folder = folder.parent
    if not folder.is_dir():
        raise OutputError(f"{dest}: cannot write ({folder} is not a folder)")
    probe = temp_name(folder / dest.name)
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError as exc:
        raise OutputError(f"{dest}: cannot write in {folder} ({reason(exc)})") from None
    try:
        os.unlink(probe)
    except OSError:
        pass


def check_output(
    path: str | Path | None,
    *,
    inputs: Iterable[str | Path | None] = (),
    suffixes: tuple[str, ...] | None = None,
    option: str = "-o",
) -> Path | None:
    """Refuse an output ``path`` that cannot or must not be written; returns it as a Path.

    ``inputs`` are every file or folder the command reads (globs expanded); ``suffixes``
    (lower case, with the dot) the endings the writer accepts; ``option`` names the flag
    in the message.
    """
    if path is None:
        return None
    dest = Path(path)
    if str(path).endswith(("/", os.sep)) or dest.is_dir():
        raise OutputError(f"{option} {dest}: is a folder; give a file name")
    if dest.exists() and not dest.is_file():
        raise OutputError(f"{option} {dest}: exists and is not a regular file; refusing to replace it")
    for src in _expand(inputs):
        if _same(dest, src):
            raise OutputError(f"{option} {dest}: is also an input ({src}); refusing to overwrite it")
        if _inside(dest, src):
            # a folder's readers open files found inside it (a trial's result.json, a run's
            # metadata, any *.jsonl a glob finds): a new file there is read by the next run, and an
            # existing one may be read by this one. Links and `..` are resolved first.
            raise OutputError(f"{option} {dest}: is inside the input folder {src}, which this run reads; "
                              "refusing to write into an input (write the output elsewhere)")
    if suffixes is not None and dest.suffix.lower() not in suffixes:
        raise OutputError(f"{option} {dest}: expected a file ending in {', '.join(suffixes)}")
    _probe_folder(dest)
    return dest


def check_outputs(outputs: dict[str, str | Path | None], *, inputs: Iterable[str | Path | None] = (),
                  suffixes: dict[str, tuple[str, ...]] | None = None) -> None:
    """Check several outputs of one command; two of them may not name the same file either."""
    ins = list(inputs)
    seen: dict[Path, str] = {}
    for option, path in outputs.items():
        if path is None:
            continue
        check_output(path, inputs=ins, suffixes=(suffixes or {}).get(option), option=option)
        key = Path(path).resolve()
        if key in seen:
            raise OutputError(f"{option} {path}: is also the {seen[key]} output; give each output its own file")
        seen[key] = option
