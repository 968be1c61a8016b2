"""The node catalog: TOML entries validated by Pydantic, GiB converted to MB (MiB).

The bundled catalog (``sandbox_fleet/data/nodes.toml``) holds a few common CPU types with
illustrative list prices and the source document's ``seed-96c``; ``--nodes FILE`` replaces it.
"""

from importlib import resources
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sandbox_fleet.errors import InputError
from sandbox_fleet.safeparse import read_text, toml_loads

MB_PER_GB = 1024  # catalog sizes are GiB; requests are MB (MiB)
TIERS = ("reserved", "on_demand", "spot")


class SameShape(BaseModel):
    """Another instance type of a node type's shape at the same cloud (spot diversification)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=False)

    instance_type: str = Field(min_length=1)
    vcpus: float = Field(gt=0)
    memory_gb: float = Field(gt=0)
    disk_gb: float = Field(ge=0)
    gpus: int = Field(default=0, ge=0)
    instance_store: bool = False


class NodeType(BaseModel):
    """One purchasable node type. Prices are USD per node-hour, optional."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=False)

    name: str = Field(min_length=1)
    description: str = ""
    vcpus: float = Field(gt=0)
    memory_gb: float = Field(gt=0)
    disk_gb: float = Field(ge=0)
    gpus: int = Field(default=0, ge=0)
    #: Cloud the type is bought from ("aws", "azure", "gcp", ...) and its name there
    #: (``m6id.24xlarge``, ``Standard_D96ds_v5``): what ``plan --emit-k8s`` pins in a NodePool.
    provider: Optional[str] = Field(default=None, min_length=1)
    instance_type: Optional[str] = Field(default=None, min_length=1)
    reserved_usd_h: Optional[float] = Field(default=None, ge=0)
    on_demand_usd_h: Optional[float] = Field(default=None, ge=0)
    spot_usd_h: Optional[float] = Field(default=None, ge=0)
    # per-node system reserve (plan/reserve.py); absent: the documented kube-reserved formula
    reserve_cpu: Optional[float] = Field(default=None, ge=0)
    reserve_memory_gb: Optional[float] = Field(default=None, ge=0)
    reserve_disk_gb: Optional[float] = Field(default=None, ge=0)
    # expected spot reclaims per node-hour (illustrative; plan/rework.py prices the re-run)
    spot_interruptions_per_node_h: Optional[float] = Field(default=None, ge=0)
    spot_interruptions_source: str = ""
    #: the scratch disk is local NVMe instance store (``plan --emit-k8s``: RAID0 in the EC2NodeClass)
    instance_store: bool = False
    #: other instance types of this shape, for spot NodePools that may launch any of them
    same_shape: tuple[SameShape, ...] = ()

    @property
    def capacity(self) -> dict[str, float]:
        """Capacity in request units: cpu cores, memory MB, disk MB, gpus."""
        return {
            "cpu": self.vcpus,
            "memory": self.memory_gb * MB_PER_GB,
            "disk": self.disk_gb * MB_PER_GB,
            "gpu": float(self.gpus),
        }

    def price(self, tier: str) -> Optional[float]:
        return getattr(self, f"{tier}_usd_h")

    @property
    def priced(self) -> bool:
        return any(self.price(t) is not None for t in TIERS)


def _entry_error(source: str, index: int, raw: dict, exc: ValidationError) -> InputError:
    err = exc.errors()[0]
    key = ".".join(str(p) for p in err["loc"]) or "?"
    name = raw.get("name", f"#{index + 1}") if isinstance(raw, dict) else f"#{index + 1}"
    got = raw.get(key) if isinstance(raw, dict) and key in raw else None
    shown = f" (got {got!r})" if got is not None else ""
    return InputError(f"{source}: node entry {name!r}, key {key!r}: {err['msg']}{shown}")


def parse_catalog(text: str, source: str) -> list[NodeType]:
    """Parse catalog TOML text (``[[node]]`` tables); any bad entry is an InputError naming it."""
    doc = toml_loads(text, source)
    unknown = set(doc) - {"node"}
    if unknown:
        raise InputError(f"{source}: unknown top-level key {sorted(unknown)[0]!r}; expected [[node]] tables")
    raw_nodes = doc.get("node")
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise InputError(f"{source}: expected at least one [[node]] table")
    nodes: list[NodeType] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_nodes):
        try:
            node = NodeType.model_validate(raw)
        except ValidationError as exc:
            raise _entry_error(source, i, raw, exc) from None
        if node.name in seen:
            raise InputError(f"{source}: node entry {node.name!r} appears twice")
        seen.add(node.name)
        nodes.append(node)
    return nodes


def load_catalog(path: str | Path | None = None) -> list[NodeType]:
    """Load ``path`` if given, else the bundled catalog."""
    if path is None:
        text = resources.files("sandbox_fleet").joinpath("data/nodes.toml").read_text(encoding="utf-8")
        return parse_catalog(text, "bundled nodes.toml")
    p = Path(path)
    if not p.exists():  # anything else that is no regular file: refused by read_text, by kind
        raise InputError(f"{p}: node catalog not found; expected a TOML file of [[node]] tables")
    return parse_catalog(read_text(p, "node catalog"), str(p))


def find_type(nodes: list[NodeType], name: str, source: str = "node catalog") -> NodeType:
    for node in nodes:
        if node.name == name:
            return node
    names = ", ".join(n.name for n in nodes)
    raise InputError(f"`node_type` {name!r} is not in the {source}; expected one of: {names}")
