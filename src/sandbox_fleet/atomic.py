"""Atomic outputs: every file the tool writes appears whole or not at all.

A writer fills a temporary file in the destination folder, flushes and fsyncs it, then
``os.replace``-s it over the destination, so an interrupted or failed run leaves the previous
file (or nothing), never a partial one. A folder (a synth release) is built in a temporary
folder beside the target and renamed into place. SIGTERM and SIGINT remove the temporary
files of the process they interrupt. An ``OSError`` becomes an :class:`OutputError`: one line
naming the destination and the reason, exit status 2.

Use::

    atomic.write_text(path, text)            # or write_bytes(path, data)
    with atomic.atomic_path(path) as tmp:    # any writer that wants a path (pq.write_table)
        pq.write_table(table, tmp)
    with atomic.atomic_dir(folder, force=True) as tmp:   # a whole folder
        ...
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from types import FrameType

from sandbox_fleet.errors import InputError


class OutputError(InputError):
    """An output cannot be written (permission, a folder in the way, no space...): one line, exit 2."""


def reason(exc: OSError) -> str:
    """The human part of an OSError: 'Permission denied', 'No space left on device'."""
    if exc.errno is not None:
        return os.strerror(exc.errno)
    return str(exc) or exc.__class__.__name__


# --- temporary files: registered so a signal can remove them ---------------------------------
_live: dict[str, int] = {}  # temp path -> pid that made it (a forked worker must not remove its parent's)
_lock = threading.Lock()
_installed = False


def _remove(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def cleanup() -> None:
    """Remove every temporary file or folder this process still holds."""
    pid = os.getpid()
    with _lock:
        mine = [p for p, owner in _live.items() if owner == pid]
        for p in mine:
            _live.pop(p, None)
    for p in mine:
        _remove(p)


def _on_signal(signum: int, frame: FrameType | None, previous: object) -> None:
    cleanup()
    if callable(previous):
        previous(signum, frame)  # e.g. SIGINT's KeyboardInterrupt
        return
    if previous == signal.SIG_IGN:
        return
    signal.signal(signum, signal.SIG_DFL)  # die of the signal as before, temporaries gone
    os.kill(os.getpid(), signum)


def _install_handlers() -> None:
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(sig)
        if previous is None:  # installed from C; leave it alone
            continue
        signal.signal(sig, partial(_on_signal, previous=previous))
    _installed = True


def _register(path: Path) -> None:
    _install_handlers()
    with _lock:
        _live[str(path)] = os.getpid()


def _forget(path: Path) -> None:
    with _lock:
        _live.pop(str(path), None)


def temp_name(dest: Path) -> Path:
    """A hidden, unique sibling of ``dest`` (same folder, so the rename stays on one filesystem)."""
    return dest.with_name(f".{dest.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


def _fsync_path(path: Path, directory: bool = False) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    except OSError:
        if directory:
            return  # some filesystems cannot open a folder: the rename is still atomic
        raise
    try:
        os.fsync(fd)
    except OSError:
        if not directory:
            raise
    finally:
        os.close(fd)


def _discard(tmp: Path) -> None:
    """Remove ``tmp`` unless it was already renamed into place (it is then no longer live)."""
    if str(tmp) in _live:
        _forget(tmp)
        _remove(str(tmp))


def _check_target(dest: Path) -> None:
    if dest.is_dir():
        raise OutputError(f"{dest}: is a folder; give a file name")
    if dest.exists() and not dest.is_file():
        raise OutputError(f"{dest}: exists and is not a regular file; refusing to replace it")


@contextmanager
def atomic_path(path: str | Path, *, make_parents: bool = True) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` (fsynced), else it is removed.

    The temporary file is created empty (mode 0666 less the umask) before it is yielded,
    so a writer may open it or overwrite it by name.
    """
    dest = Path(path)
    _check_target(dest)
    tmp = temp_name(dest)
    try:
        if make_parents:
            dest.parent.mkdir(parents=True, exist_ok=True)
        _register(tmp)
        os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    except OSError as exc:
        _forget(tmp)
        raise OutputError(f"{dest}: cannot write ({reason(exc)})") from None
    try:
        yield tmp
        _fsync_path(tmp)
        os.replace(tmp, dest)
        _forget(tmp)
        _fsync_path(dest.parent, directory=True)
    except OSError as exc:
        raise OutputError(f"{dest}: cannot write ({reason(exc)})") from None
    finally:
        _discard(tmp)


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; returns the path."""
    dest = Path(path)
    with atomic_path(dest) as tmp, open(tmp, "wb") as f:
        f.write(data)
        f.flush()
    return dest


def write_text(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically; returns the path."""
    return write_bytes(path, text.encode(encoding))


@contextmanager
def atomic_dir(path: str | Path, *, force: bool = False, replaceable=None) -> Iterator[Path]:
    """Yield a fresh temporary folder beside ``path``; on success it becomes ``path``.

    An existing ``path`` that is an empty folder is replaced; a non-empty one only with
    ``force`` and only if ``replaceable(path)`` (default: always) says it is ours to replace.
    The check is made before anything is built, and again at the rename.
    """
    dest = Path(path)
    check_dir_target(dest, force=force, replaceable=replaceable)
    tmp = temp_name(dest)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        _register(tmp)
        tmp.mkdir()
    except OSError as exc:
        _forget(tmp)
        raise OutputError(f"{dest}: cannot write ({reason(exc)})") from None
    try:
        yield tmp
        check_dir_target(dest, force=force, replaceable=replaceable)
        _swap_in(tmp, dest)
        _fsync_path(dest.parent, directory=True)
    except OSError as exc:
        raise OutputError(f"{dest}: cannot write ({reason(exc)})") from None
    finally:
        _discard(tmp)


def check_dir_target(dest: Path, *, force: bool = False, replaceable=None) -> None:
    """Refuse a folder destination that exists and may not be replaced (one line, exit 2)."""
    if not dest.exists() and not dest.is_symlink():
        return
    if not dest.is_dir():
        raise OutputError(f"{dest}: exists and is not a folder (expected a folder)")
    if not any(dest.iterdir()):
        return
    if replaceable is not None and not replaceable(dest):
        raise OutputError(f"{dest}: folder is not empty and is not ours to replace; choose an empty or new folder")
    if not force:
        raise OutputError(f"{dest}: already exists; pass `force` to replace it")


def _swap_in(tmp: Path, dest: Path) -> None:
    """Rename ``tmp`` to ``dest``; an existing ``dest`` is moved aside first and removed after."""
    try:
        os.rename(tmp, dest)  # no dest, or an empty folder
        _forget(tmp)
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
    old = temp_name(dest)
    os.rename(dest, old)  # not registered: a signal here must never delete the previous release
    try:
        os.rename(tmp, dest)
    except OSError:
        os.rename(old, dest)  # put the previous release back
        raise
    _forget(tmp)
    shutil.rmtree(old, ignore_errors=True)
