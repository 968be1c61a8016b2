"""Scan one tasks shard (a tar) in place: parse each task.toml, total each task's bytes.

Nothing is extracted to disk. A member whose path is absolute or climbs out with ``..``
(or a link pointing that way) is refused: such an archive is unsafe to trust.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import pyarrow as pa

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry import fasttar
from sandbox_fleet.telemetry.dockerfile import DOCKERFILES, MAX_DOCKERFILE_BYTES, dockerfile_image, dockerfile_task
from sandbox_fleet.telemetry.record import TASK_SCHEMA
from sandbox_fleet.telemetry.tasktoml import REQUEST_FIELDS, check_toml_size, parse_task_toml

#: A task's request fields as ``record.TASK_SCHEMA`` has them, keyed by the member prefix.
SCAN_SCHEMA = pa.schema(
    [
        pa.field("member_prefix", pa.string()),
        *(f for f in TASK_SCHEMA if f.name not in ("task_id", "task_group_id")),
        pa.field("out_of_range", pa.int64()),
        # why this task.toml could not be used (its request fields are then null), else null
        pa.field("problem", pa.string()),
    ]
)


def normalize_prefix(prefix: str) -> str:
    """'./a/b/' -> 'a/b' so tasks.parquet prefixes and tar names compare equal."""
    while prefix.startswith("./"):
        prefix = prefix[2:]
    return prefix.strip("/")


def _escapes(name: str) -> bool:
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return True
    return ".." in name.replace("\\", "/").split("/")


def _check_names(name: str, is_link: bool, linkname: str, tar_name: str) -> None:
    if _escapes(name):
        raise InputError(f"{tar_name}: member '{name}' escapes its folder (absolute path or '..'); refusing this archive")
    if is_link and _escapes(linkname):
        raise InputError(f"{tar_name}: link '{name}' -> '{linkname}' escapes its folder; refusing this archive")


def _members_fast(path: Path, shown: str, requests: dict, files: list, images: dict) -> None:
    buf = fasttar.open_map(path)
    try:
        for m in fasttar.iter_members(buf):
            _check_names(m.name, m.is_link, m.linkname, shown)
            if m.is_file:
                _take(m.name, m.size, lambda m=m: bytes(buf[m.offset : m.offset + m.size]), shown, requests, files,
                      images)
    finally:
        if not isinstance(buf, bytes):
            buf.close()


def _members_tarfile(path: Path, shown: str, requests: dict, files: list, images: dict) -> None:
    with tarfile.open(path, "r:*") as tf:
        for member in tf:
            _check_names(member.name, member.issym() or member.islnk(), member.linkname, shown)
            if member.isfile():
                _take(member.name, member.size, lambda m=member: _file_bytes(tf, m), shown, requests, files, images)


def _file_bytes(tf: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    data = tf.extractfile(member)
    assert data is not None  # only regular files are read, and those always have data
    return data.read()


def _take(raw_name: str, size: int, read, shown: str, requests: dict, files: list, images: dict) -> None:
    name = normalize_prefix(raw_name)
    files.append((name, size))
    if size <= MAX_DOCKERFILE_BYTES and dockerfile_task(name) is not None:
        images[name] = dockerfile_image(read())
    if name == "task.toml" or name.endswith("/task.toml"):
        prefix = name[: -len("task.toml")].rstrip("/")
        try:
            check_toml_size(size, f"{shown}:{raw_name}")  # before read(): tarfile inflates what it reads
            requests[prefix] = parse_task_toml(read(), f"{shown}:{raw_name}")
        except InputError as exc:  # one bad task.toml costs its task's request, not the read
            requests[prefix] = {**dict.fromkeys(REQUEST_FIELDS), "out_of_range": 0, "problem": str(exc)}


def scan_shard(path: Path, shown: str) -> pa.Table:
    """One row per task.toml found in the tar at ``path`` (``shown`` names it in errors)."""
    return rows_to_table(scan_rows(path, shown))


def rows_to_table(columns: dict[str, list]) -> pa.Table:
    return pa.table(columns, schema=SCAN_SCHEMA)


def scan_rows(path: Path, shown: str) -> dict[str, list]:
    """``scan_shard`` as plain Python lists: safe to run in a forked worker (no Arrow there)."""
    files: list[tuple[str, int]] = []
    requests: dict[str, dict] = {}
    images: dict[str, str | None] = {}  # Dockerfile member -> its base image
    try:
        try:
            _members_fast(path, shown, requests, files, images)
        except fasttar.Unsupported:
            files.clear()
            requests.clear()
            images.clear()
            _members_tarfile(path, shown, requests, files, images)
    except (fasttar.Corrupt, tarfile.TarError, EOFError, OSError) as exc:
        raise InputError(f"{shown}: not a readable tar archive ({_one_line(exc)})") from exc
    sizes = dict.fromkeys(requests, 0)
    for name, size in files:
        # Charge each file to the deepest task folder holding it.
        parts = name.split("/")
        for k in range(len(parts) - 1, -1, -1):
            owner = "/".join(parts[:k])
            if owner in sizes:
                sizes[owner] += size
                break
    prefixes = list(requests)
    columns: dict[str, list] = {"member_prefix": prefixes}
    for f in REQUEST_FIELDS:
        columns[f] = [requests[p][f] for p in prefixes]
    columns["bundle_bytes"] = [sizes[p] for p in prefixes]
    columns["image"] = [_image_of(p, requests[p].get("docker_image"), images) for p in prefixes]
    columns["out_of_range"] = [requests[p]["out_of_range"] for p in prefixes]
    columns["problem"] = [requests[p].get("problem") for p in prefixes]
    return columns


def _image_of(prefix: str, docker_image: str | None, images: dict[str, str | None]) -> str | None:
    """Task ``prefix``'s image: its task.toml's docker_image, else its Dockerfile's FROM (Harbor's
    ``environment/Dockerfile`` first, then Terminal-Bench's ``Dockerfile``)."""
    if docker_image:
        return docker_image
    base = f"{prefix}/" if prefix else ""
    for tail in DOCKERFILES:
        image = images.get(base + tail)
        if image:
            return image
    return None


def _one_line(exc: BaseException) -> str:
    """tarfile lists every method it tried on lines of their own: joined into one line."""
    return "; ".join(part.strip(" -") for part in str(exc).splitlines() if part.strip()) or type(exc).__name__
