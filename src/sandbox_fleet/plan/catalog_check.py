"""``sandbox-fleet catalog check FILE``: a node catalog read as ``plan --nodes`` reads it, and each
type sized by the same rule plan sizes it with (``slots.usable`` after ``reserve.node_reserve``),
so a file that passes here is one plan accepts. Every refusal is one line naming the file, the
line of the key (``catalog_lines``), the entry and the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.catalog import TIERS, NodeType, load_catalog
from sandbox_fleet.plan.catalog_lines import key_line
from sandbox_fleet.plan.reserve import node_reserve
from sandbox_fleet.plan.slots import usable
from sandbox_fleet.safeparse import read_text


@dataclass(frozen=True)
class CheckedType:
    """One type as plan will see it: usable capacity after the reserve, and $/h per tier (volume in)."""

    node: NodeType
    usable_cpu: float
    usable_memory_gb: float
    usable_disk_gb: float
    usd_h: dict[str, Optional[float]]


def check_catalog(path: str | Path) -> list[CheckedType]:
    """The types of the catalog ``path``, each sized as plan sizes it; an InputError on the first
    one plan would refuse."""
    nodes = load_catalog(path)
    text = read_text(path, "node catalog")
    out = []
    for i, node in enumerate(nodes):
        reserve, _ = node_reserve(node)
        try:
            left = usable(node, reserve)
        except InputError as exc:
            line = key_line(text, "node", i, "disk_gb" if "no disk" in str(exc) else "vcpus")
            raise InputError(f"{path}{f' line {line}' if line else ''}: {exc}") from None
        out.append(CheckedType(node, left["cpu"], left["memory"] / 1024.0, left["disk"] / 1024.0,
                               {t: node.price(t) for t in TIERS}))
    return out


def check_lines(path: str | Path, checked: list[CheckedType]) -> list[str]:
    """What ``catalog check`` prints: the types, then the command that plans with them."""
    def usd(v: Optional[float]) -> str:
        return f"${v:,.4g}/h" if v is not None else "-"

    lines = [f"{path}: {len(checked)} node type{'s' if len(checked) != 1 else ''}, each one plan accepts "
             "(usable after the per-node system reserve; $/h on-demand / reserved / spot)"]
    for c in checked:
        n = c.node
        disk = f"{n.disk_gb:g} GiB local + {n.volume_gb:g} GiB volume disk" if n.volume_gb else f"{n.disk_gb:g} GiB disk"
        lines.append(f"  {n.name}: {n.vcpus:g} vCPU, {n.memory_gb:g} GiB, {disk}{f', {n.gpus} GPU' if n.gpus else ''}; "
                     f"usable {c.usable_cpu:.4g} cpu / {c.usable_memory_gb:.4g} GiB / {c.usable_disk_gb:.4g} GiB; "
                     f"{usd(c.usd_h['on_demand'])} / {usd(c.usd_h['reserved'])} / {usd(c.usd_h['spot'])}"
                     + (f" (volume ${n.volume_usd_h:.4g}/h in each)" if n.volume_gb else "")
                     + ("" if n.priced else " (no prices: sized, not costed)"))
    return lines
