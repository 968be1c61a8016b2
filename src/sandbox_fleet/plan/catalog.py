"""The node catalog: TOML entries validated by Pydantic, GiB converted to MB (MiB).

The bundled catalog (``sandbox_fleet/data/nodes.toml``) holds a few common CPU types with
illustrative list prices and the source document's ``seed-96c``; ``--nodes FILE`` replaces it.
The file's schema is ``CatalogFile`` (``sandbox-fleet schema catalog``, docs/catalog.md); a bad
entry is one line naming the file, the line of the key (``catalog_lines``), the entry and the key.
"""

from difflib import get_close_matches
from importlib import resources
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.catalog_lines import key_line
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

    name: str = Field(min_length=1, description="The type's name in the plan (--node-type NAME); unique in the file.")
    description: str = Field(default="", description="Free text shown with the type.")
    vcpus: float = Field(gt=0, description="Schedulable cores per node.")
    memory_gb: float = Field(gt=0, description="Memory per node, GiB (384 GiB = 393,216 MB).")
    disk_gb: float = Field(ge=0, description="Local scratch disk per node, GiB; 0 for a type whose disk is an attached volume (volume_gb).")
    gpus: int = Field(default=0, ge=0, description="GPUs per node.")
    #: Cloud the type is bought from ("aws", "azure", "gcp", ...) and its name there
    #: (``m6id.24xlarge``, ``Standard_D96ds_v5``): what ``plan --emit-k8s`` pins in a NodePool.
    provider: Optional[str] = Field(default=None, min_length=1, description="Cloud: aws, azure, gcp, ... (plan --emit-k8s).")
    instance_type: Optional[str] = Field(default=None, min_length=1, description="The type's name at its cloud (m6id.24xlarge).")
    reserved_usd_h: Optional[float] = Field(default=None, ge=0, description="Reserved (committed) price, USD per node-hour.")
    on_demand_usd_h: Optional[float] = Field(default=None, ge=0, description="On-demand price, USD per node-hour.")
    spot_usd_h: Optional[float] = Field(default=None, ge=0, description="Spot price, USD per node-hour.")
    # per-node system reserve (plan/reserve.py); absent: the documented kube-reserved formula
    reserve_cpu: Optional[float] = Field(default=None, ge=0, description="System reserve, cores (absent: the kube-reserved formula).")
    reserve_memory_gb: Optional[float] = Field(default=None, ge=0, description="System reserve, GiB memory.")
    reserve_disk_gb: Optional[float] = Field(default=None, ge=0, description="System reserve, GiB disk.")
    # expected spot reclaims per node-hour (illustrative; plan/rework.py prices the re-run)
    spot_interruptions_per_node_h: Optional[float] = Field(default=None, ge=0, description="Expected spot reclaims per node-hour.")
    spot_interruptions_source: str = Field(default="", description="Where the reclaim rate comes from.")
    #: the scratch disk is local NVMe instance store (``plan --emit-k8s``: RAID0 in the EC2NodeClass)
    instance_store: bool = Field(default=False, description="disk_gb is local NVMe instance store.")
    #: other instance types of this shape, for spot NodePools that may launch any of them
    same_shape: tuple[SameShape, ...] = Field(default=(), description="Other instance types of this shape (spot NodePools).")
    #: an attached volume (EBS, a persistent disk) that gives the node scratch beyond ``disk_gb``
    #: (0 on an EBS-only type): GiB, and its price in USD per GiB-hour, added to every tier's $/h
    volume_gb: Optional[float] = Field(default=None, gt=0, description="Attached volume (EBS) per node, GiB: scratch beyond disk_gb.")
    volume_usd_per_gb_h: Optional[float] = Field(default=None, ge=0, description="The volume's USD per GiB-hour, added to every tier's $/h.")

    @model_validator(mode="after")
    def _volume_priced(self) -> "NodeType":
        # a priced type whose volume had no price would be sold cheaper than it costs
        if self.volume_usd_per_gb_h is not None and self.volume_gb is None:
            raise ValueError("volume_usd_per_gb_h needs volume_gb (the attached volume's GiB)")
        if self.volume_gb is not None and self.volume_usd_per_gb_h is None and self.priced_listed:
            raise ValueError("volume_gb on a priced type needs volume_usd_per_gb_h (the volume's USD per GiB-hour)")
        return self

    @property
    def scratch_gb(self) -> float:
        """The disk a sandbox can use: local disk plus the attached volume, GiB."""
        return self.disk_gb + (self.volume_gb or 0.0)

    @property
    def capacity(self) -> dict[str, float]:
        """Capacity in request units: cpu cores, memory MB, disk MB, gpus."""
        return {
            "cpu": self.vcpus,
            "memory": self.memory_gb * MB_PER_GB,
            "disk": self.scratch_gb * MB_PER_GB,
            "gpu": float(self.gpus),
        }

    @property
    def volume_usd_h(self) -> float:
        """The attached volume's $/h per node (0 without one); the same on every tier: a reserved
        or spot instance does not discount its volume."""
        return (self.volume_gb or 0.0) * (self.volume_usd_per_gb_h or 0.0)

    def price(self, tier: str) -> Optional[float]:
        """The node's $/h on ``tier``: the instance's listed price plus its attached volume."""
        listed = getattr(self, f"{tier}_usd_h")
        return listed + self.volume_usd_h if listed is not None else None

    @property
    def priced_listed(self) -> bool:
        return any(getattr(self, f"{t}_usd_h") is not None for t in TIERS)

    @property
    def priced(self) -> bool:
        return any(self.price(t) is not None for t in TIERS)


class CatalogFile(BaseModel):
    """A node catalog file: one ``[[node]]`` table per purchasable type (``plan --nodes FILE``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="Node catalog")

    node: list[NodeType] = Field(min_length=1)


def price_basis(node: NodeType, source: Optional[str]) -> str:
    """Where ``node``'s $/h comes from, its attached volume's share stated: the plan's assumption."""
    where = f"list prices from {source}" if source else "illustrative list prices from the node catalog; replace with quotes"
    if node.volume_gb is None:
        return where
    return (f"{where}; each tier's $/h includes an attached {node.volume_gb:g} GiB volume at "
            f"${node.volume_usd_per_gb_h or 0.0:.6g}/GiB-h = ${node.volume_usd_h:.4g}/h per node")


def _entry_error(source: str, text: str, index: int, raw: dict, exc: ValidationError) -> InputError:
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    key = ".".join(loc) or "?"
    name = raw.get("name", f"#{index + 1}") if isinstance(raw, dict) else f"#{index + 1}"
    got = raw.get(key) if isinstance(raw, dict) and key in raw else None
    shown = f" (got {got!r})" if got is not None else ""
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        near = get_close_matches(key, list(NodeType.model_fields), n=1, cutoff=0.5)
        hint = f"did you mean {near[0]!r}? " if near else ""
        msg = f"unknown key ({hint}the keys are listed by `sandbox-fleet schema catalog` and docs/catalog.md)"
    elif not loc:  # a rule across keys (the volume's): its message starts with the key it is about
        msg = msg.removeprefix("Value error, ")
        key = msg.split()[0]
    line = key_line(text, "node", index, loc[0] if loc else key)
    at = f" line {line}" if line is not None else ""
    return InputError(f"{source}{at}: node entry {name!r}, key {key!r}: {msg}{shown}")


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
            raise _entry_error(source, text, i, raw, exc) from None
        if node.name in seen:
            line = key_line(text, "node", i, "name")
            raise InputError(f"{source}{f' line {line}' if line else ''}: node entry {node.name!r} appears twice")
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
