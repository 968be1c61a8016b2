"""The base image of a task bundle: ``[environment] docker_image`` of its task.toml (Harbor's prebuilt
image), else the ``FROM`` of its Dockerfile (``environment/Dockerfile`` in Harbor's layout, ``Dockerfile``
in Terminal-Bench's).

A multi-stage Dockerfile's image is the base of its last stage, a stage named by an earlier
``FROM ... AS name`` resolved to that stage's own base. ``ARG`` references are left as written.
"""

from __future__ import annotations

from pathlib import Path

#: a Dockerfile larger than this is not one (never read whole)
MAX_DOCKERFILE_BYTES = 1 << 20
DOCKERFILES = ("environment/Dockerfile", "Dockerfile")


def _instructions(text: str):
    """Dockerfile instructions as (KEYWORD, arguments), continuation lines joined, comments dropped."""
    buf = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        parts = buf.split(None, 1)
        buf = ""
        if parts:
            yield parts[0].upper(), parts[1] if len(parts) > 1 else ""


def from_image(text: str) -> str | None:
    """The base image of the last stage of a Dockerfile's text (None: no FROM)."""
    stages: dict[str, str] = {}
    last = None
    for word, args in _instructions(text):
        if word != "FROM":
            continue
        tokens = [t for t in args.split() if not t.startswith("--")]  # --platform=...
        if not tokens:
            continue
        image = stages.get(tokens[0].lower(), tokens[0])
        if len(tokens) >= 3 and tokens[1].lower() == "as":
            stages[tokens[2].lower()] = image
        last = image
    return last


def dockerfile_task(name: str) -> str | None:
    """The task folder a member path ``<task>/Dockerfile`` or ``<task>/environment/Dockerfile`` belongs
    to (``""`` for the root), or None when it is no task Dockerfile."""
    for tail in DOCKERFILES:
        if name == tail:
            return ""
        if name.endswith("/" + tail):
            return name[: -len(tail) - 1]
    return None


def dockerfile_image(data: bytes) -> str | None:
    """The base image of Dockerfile bytes (None: too large to be one, or no FROM)."""
    if len(data) > MAX_DOCKERFILE_BYTES:
        return None
    return from_image(data.decode("utf-8", errors="replace"))


def task_image(folder: Path, docker_image: str | None) -> str | None:
    """The image of the task in ``folder``: ``docker_image`` (task.toml's, already parsed) when set,
    else its Dockerfile's (``environment/Dockerfile`` before ``Dockerfile``); None when it names none."""
    if docker_image:
        return docker_image
    for name in DOCKERFILES:
        path = folder / name
        if path.is_file() and path.stat().st_size <= MAX_DOCKERFILE_BYTES:
            image = from_image(path.read_text(encoding="utf-8", errors="replace"))
            if image:
                return image
    return None
