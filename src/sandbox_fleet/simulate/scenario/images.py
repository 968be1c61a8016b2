"""``[images]`` and ``[substrate]`` of a scenario turned into engine objects (``scenario.builder`` calls these).

Each refusal is one line naming the file and the key (through ``fail``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import numpy as np

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine.entities import SubstrateCost
from sandbox_fleet.simulate.engine.images import SHARE_TOLERANCE, ImageCache, ImageCatalog, zipf_shares
from sandbox_fleet.simulate.scenario.spec import ImagesSpec, SubstrateSpec

#: ``fail(key, what)``: raise the scenario's one-line error naming the key
Fail = Callable[[str, str], NoReturn]


def image_cache(spec: ImagesSpec, base: Path, fail: Fail) -> ImageCache:
    """The scenario's image cache; ``fail(key, what)`` raises the one-line error."""
    cat = _task_catalog(spec, base, fail) if spec.tasks is not None else _drawn_catalog(spec, fail)
    try:
        return ImageCache(cat, spec.cache_mb, spec.pull_mb_per_s, spec.prepull, tuple(spec.whatif_prepull))
    except InputError as exc:
        key = "cache_mb" if "cache_mb" in str(exc) else "whatif_prepull" if "whatif" in str(exc) else "prepull"
        fail(f"images.{key}", str(exc).removeprefix("images "))


def _drawn_catalog(spec: ImagesSpec, fail: Fail) -> ImageCatalog:
    if spec.count is None and spec.shares is None:
        fail("images", "give tasks (task bundles), count (a Zipf catalog) or shares")
    if spec.shares is not None:
        if spec.zipf_s is not None:
            fail("images.zipf_s", "give zipf_s or shares, not both")
        if spec.count is not None and spec.count != len(spec.shares):
            fail("images.count", f"count = {spec.count} but shares lists {len(spec.shares)} images")
        total = float(sum(spec.shares))
        if abs(total - 1.0) > SHARE_TOLERANCE:
            fail("images.shares", f"the shares sum to {total:.6g}, expected 1")
        shares = np.asarray(spec.shares, dtype=float)
        basis = f"{shares.size} images, explicit shares"
    else:
        assert spec.count is not None  # refused above when both are missing
        from sandbox_fleet.limits import check_memory
        from sandbox_fleet.simulate.scenario.bounds import BYTES_PER_IMAGE

        try:  # before a name or a share is made: 1e8 images was an out-of-memory line
            check_memory(spec.count * BYTES_PER_IMAGE, None, f"{spec.count:,} images",
                         "lower it (to the images the tasks really build)")
        except InputError as exc:
            fail("images.count", str(exc))
        s = 1.0 if spec.zipf_s is None else spec.zipf_s
        shares = zipf_shares(spec.count, s)
        basis = f"{spec.count} images, Zipf shares (exponent {s:g}: share of image i ~ 1/i^{s:g})"
    k = shares.size
    names = spec.names or [f"image-{i + 1}" for i in range(k)]
    if len(names) != k or len(set(names)) != k:
        fail("images.names", f"give {k} distinct names (one per image), got {len(names)}")
    if isinstance(spec.size_mb, dict):
        fail("images.size_mb", "a table of sizes by image name needs tasks; give one size or a list")
    sizes = [spec.size_mb] * k if isinstance(spec.size_mb, float) else spec.size_mb
    if len(sizes) != k:
        fail("images.size_mb", f"{len(sizes)} sizes for {k} images")
    return ImageCatalog(tuple(names), shares, np.asarray(sizes, dtype=float), basis)


def _task_catalog(spec: ImagesSpec, base: Path, fail: Fail) -> ImageCatalog:
    from sandbox_fleet.telemetry.tasks import read_tasks

    for key in ("count", "zipf_s", "shares", "names"):
        if getattr(spec, key) is not None:
            fail(f"images.{key}", "tasks gives the images and their shares; drop this key")
    roots = [spec.tasks] if isinstance(spec.tasks, str) else list(spec.tasks or [])
    task_image: dict[str, str] = {}
    n_tasks = 0
    for root in roots:
        path = Path(root) if Path(root).is_absolute() else base / root
        try:
            table = read_tasks(str(path), progress=False)
        except InputError as exc:
            fail("images.tasks", str(exc))
        n_tasks += table.num_rows
        for task, image in zip(table.column("task_id").to_pylist(), table.column("image").to_pylist()):
            if image is not None:
                task_image[task] = image
    if not task_image:
        fail("images.tasks", f"none of the {n_tasks} task(s) names an image (a Dockerfile FROM, or "
                             "[environment] docker_image in task.toml)")
    counts = Counter(task_image.values())
    names = sorted(counts, key=lambda name: (-counts[name], name))
    shares = np.array([counts[name] / len(task_image) for name in names])
    if isinstance(spec.size_mb, dict):
        missing = [name for name in names if name not in spec.size_mb]
        if missing:
            fail("images.size_mb", f"no size for image {missing[0]!r} ({len(missing)} image(s) without one)")
        sizes = [spec.size_mb[name] for name in names]
    elif isinstance(spec.size_mb, list):
        fail("images.size_mb", "with tasks, give one size or a table of sizes by image name")
    else:
        sizes = [spec.size_mb] * len(names)
    index = {name: i for i, name in enumerate(names)}
    left = n_tasks - len(task_image)
    basis = (f"{len(names)} images from {len(task_image)} task bundle(s), shares as counted"
             + (f" ({left} task(s) name no image and are left out)" if left else ""))
    return ImageCatalog(tuple(names), shares, np.asarray(sizes, dtype=float), basis,
                        {task: index[image] for task, image in task_image.items()})


def substrate_cost(spec: SubstrateSpec, base: Path, fail: Fail) -> SubstrateCost:
    """The named substrate of the catalog (the bundled ``data/substrates.toml`` or ``catalog``)."""
    from sandbox_fleet.substrates import load_substrates

    path = None if spec.catalog is None else (Path(spec.catalog) if Path(spec.catalog).is_absolute()
                                               else base / spec.catalog)
    try:
        catalog = load_substrates(path)
    except InputError as exc:
        fail("substrate.catalog", str(exc))
    found = {s.name: s for s in catalog}
    s = found.get(spec.name)
    if s is None:
        fail("substrate.name", f"unknown substrate {spec.name!r}; expected one of {', '.join(sorted(found))}")
    return SubstrateCost(s.name, s.cold_start_s, s.per_action_s, s.source, s.as_of, s.kind, spec.turns_per_rollout)
