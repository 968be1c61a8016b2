"""``plan --emit-k8s DIR``: the purchase order as manifests a cluster accepts unchanged.

Seven files (eight with gVisor), each opening with a comment header that gives the plan's basis:

- ``namespace.yaml``: the Namespace of the sandbox objects;
- ``priorityclass.yaml``: the sandboxes' PriorityClass;
- ``nodeclass.yaml``: the EC2NodeClass (instance store as RAID0, or a root volume sized to the
  scratch) or AKSNodeClass (OS disk sized to the scratch);
- ``nodepool.yaml``: the Karpenter NodePool(s), tainted, their limits summing to the nodes the order
  buys (``pools.py``: one pool per tier, spot with the same-shape types and on-demand inside the same
  limit; a replayed mixed purchase as a reserved and a burst pool);
- ``sandboxtemplate.yaml`` / ``sandboxwarmpool.yaml``: one agent-sandbox SandboxTemplate (with the
  toleration, runtime class and priority class) and SandboxWarmPool per request kind;
- ``sandboxclaim-example.yaml``: a SandboxClaim on the largest warm pool, what a trainer creates;
- ``runtimeclass.yaml``: with ``runtime_class`` gvisor only, gVisor's RuntimeClass (``runtime.py``).

YAML is written by PyYAML's ``safe_dump``; every name is checked as DNS-1123 first and every value
in a header comment is kept on its line. AWS and Azure node types only; DIR must be empty or new
unless ``force``. Every check runs before anything is written.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from sandbox_fleet import atomic, outpaths
from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.catalog import find_type, load_catalog
from sandbox_fleet.plan.k8s.manifests import (
    NODE_CLASS,
    K8sOptions,
    check_options,
    check_supported,
    kinds,
    namespace,
    node_class,
    nodepools,
    priority_class,
    resolve,
    root_disk_gb,
    sandbox_claim,
    sandbox_template,
    scratch_per_node_gb,
    split_warm,
    warm_pool,
    warm_replicas,
)
from sandbox_fleet.plan.k8s.pools import pool_limits
from sandbox_fleet.plan.k8s.runtime import GVISOR, GVISOR_HANDLER, RUNC, pinned, runtime_class
from sandbox_fleet.plan.model import PlanSummary
from sandbox_fleet.textout import one_line

__all__ = ["FILES", "NODE_CLASS", "K8sOptions", "build_manifests", "check_options", "check_out_dir", "emit_k8s"]

FILES = ("namespace.yaml", "priorityclass.yaml", "nodeclass.yaml", "nodepool.yaml", "sandboxtemplate.yaml",
         "sandboxwarmpool.yaml", "sandboxclaim-example.yaml")
#: written only with --k8s-runtime-class gvisor
OPTIONAL_FILES = ("runtimeclass.yaml",)


def _storage_line(plan: PlanSummary, node, provider: str) -> str:
    scratch = scratch_per_node_gb(plan)
    if provider == "aws" and node.instance_store:
        return (f"scratch {scratch:,.0f} GiB per full node on {node.disk_gb:,.0f} GiB of NVMe instance store "
                "(instanceStorePolicy RAID0: kubelet and containerd use the array)")
    where = "EBS root volume" if provider == "aws" else "OS disk (osDiskSizeGB)"
    return f"{where} {root_disk_gb(plan):,} GiB = scratch {scratch:,.0f} GiB per full node + system reserve + OS"


def _warm_slots(plan: PlanSummary, warm_total: int) -> str:
    """Where the warm sandboxes live: inside the nodes bought, never on extra ones."""
    if plan.nodes.mix:
        return "held in the nodes bought (packed with the mix; the NodePool limit allows no extra nodes)"
    spare = int(plan.nodes.count) * int(plan.nodes.per_node or 0) - int(plan.target.concurrency)
    if warm_total <= spare:
        return f"held in the {spare:,} slots the {plan.nodes.count:,} nodes have beyond the target (no extra nodes)"
    return (f"no extra nodes: at the target only {max(spare, 0):,} spare slots hold warm sandboxes, the rest "
            "refill as sandboxes finish")


def _pool_words(pool: dict) -> str:
    spec = pool["spec"]
    req = {r["key"]: r["values"] for r in spec["template"]["spec"]["requirements"]}
    caps = req["karpenter.sh/capacity-type"]
    cap = caps[0] if len(caps) == 1 else " then ".join(caps) + " when spot is short"
    weight = f", weight {spec['weight']}" if "weight" in spec else ""
    return (f"{pool['metadata']['name']} ({cap}{weight}: {', '.join(req['node.kubernetes.io/instance-type'])}; "
            f"limit {spec['limits']['cpu']} cpu; consolidateAfter {spec['disruption']['consolidateAfter']}; "
            f"{_budget_words(spec['disruption']['budgets'])})")


def _budget_words(budgets: list[dict]) -> str:
    """The disruption budgets the node replay assumed, in words (plan/k8s/pools.budgets)."""
    if budgets == [{"nodes": "0"}]:
        return "never disrupted (budget 0 nodes)"
    return ("budgets: empty nodes released at once (Empty 100%), busy ones never (Drifted, Underutilized 0); "
            "spot reclaims are involuntary, outside any budget")


def _mixed_words(plan: PlanSummary) -> str:
    mx = plan.cost.mixed if plan.cost is not None else None
    if mx is None or mx.replay is None:
        return ""
    return (f" (the mixed purchase priced by the node replay: {mx.reserved_nodes:,} reserved + up to "
            f"{mx.burst_nodes:,} burst, its replayed peak)")


def _isolation(opts: K8sOptions) -> str:
    if opts.runtime_class == RUNC:
        return "runc, the node's default runtime (no runtimeClassName; --k8s-runtime-class gvisor opts in to gVisor)"
    if opts.runtime_class == GVISOR:
        return (f"runtimeClassName {GVISOR}: runtimeclass.yaml (handler {GVISOR_HANDLER}, on the sandbox nodes), "
                "installed on each node by the EC2NodeClass's user data")
    return f"runtimeClassName {opts.runtime_class} (not written here: the RuntimeClass must exist in the cluster)"


def _ami_words(opts: K8sOptions) -> str:
    if pinned(opts.ami_alias):
        return f"amiSelectorTerms alias {opts.ami_alias} (pinned)"
    return (f"amiSelectorTerms alias {opts.ami_alias}: NOT pinned, every new node takes the newest AMI; Karpenter "
            "recommends pinning in production (--k8s-ami-alias al2023@vYYYYMMDD)")


def _header(plan: PlanSummary, opts: K8sOptions, node, warm_basis: str, warm_total: int, pools: list[dict]) -> str:
    pin = check_supported(plan)
    target, nodes, tier = plan.target, plan.nodes, pin.tier
    source = (plan.input.path or plan.input.source) if plan.input else None
    pool_line = "; ".join(_pool_words(p) for p in pools)
    limited = sum(p.nodes for p in pool_limits(plan, tier))
    lines = [
        "Written by `sandbox-fleet plan --emit-k8s`. Basis of this plan:",
        f"  source summary: {source}",
        f"  target: {target.concurrency:,} concurrent sandboxes ({target.source}: {target.detail or ''})",
        f"  nodes: BUY {nodes.count:,} x {nodes.type} ({nodes.provider} {nodes.instance_type}), tier {tier}; "
        f"the NodePools' limits sum to {limited:,} nodes, what the order pays for{_mixed_words(plan)}",
        f"  node pools: {pool_line}",
        f"  warm pool: {warm_basis}; {_warm_slots(plan, warm_total)}",
        f"  storage: {_storage_line(plan, node, pin.provider)}",
        f"  isolation: {_isolation(opts)}; "
        f"taint {pools[0]['spec']['template']['spec']['taints'][0]['key']}={opts.name}:NoSchedule with a matching toleration",
        f"  names: {opts.name}, namespace {opts.namespace}, node class {opts.node_class}, cluster {opts.cluster}; "
        f"image {opts.image}",
        *([f"  node image: {_ami_words(opts)}"] if pin.provider == "aws" else []),
    ]
    return "".join(f"# {one_line(line)}\n" for line in lines)


def _dump(objs: list[dict]) -> str:
    return yaml.safe_dump_all(objs, explicit_start=True, sort_keys=False, default_flow_style=False,
                              allow_unicode=True, width=1 << 16)


def build_manifests(plan: PlanSummary, opts: K8sOptions | None = None) -> dict[str, str]:
    """File name -> YAML text for a plan; InputError if unsupported."""
    check_supported(plan)
    opts = resolve(plan, opts or K8sOptions())
    catalog = load_catalog(opts.nodes_file)
    try:
        node = find_type(catalog, plan.nodes.type, opts.nodes_file or "bundled node catalog")
    except InputError:
        raise InputError(f"`emit_k8s`: node type {plan.nodes.type!r} is not in the node catalog; pass the `nodes` "
                         "file the plan was made with") from None
    parts = kinds(plan)
    total, basis = warm_replicas(plan, opts.provision_s)
    templates = [sandbox_template(req, opts) for req, _ in parts]
    pools = [warm_pool(t, k) for t, k in zip(templates, split_warm(total, parts))]
    node_pools = nodepools(plan, node, opts)
    docs = {
        "namespace.yaml": [namespace(opts)],
        "priorityclass.yaml": [priority_class(opts)],
        "nodeclass.yaml": [node_class(plan, node, opts)],
        "nodepool.yaml": node_pools,
        "sandboxtemplate.yaml": templates,
        "sandboxwarmpool.yaml": pools,
        "sandboxclaim-example.yaml": [sandbox_claim(pools[0])],
    }
    if opts.runtime_class == GVISOR:
        taint = node_pools[0]["spec"]["template"]["spec"]["taints"][0]
        docs["runtimeclass.yaml"] = [runtime_class(GVISOR, str(opts.name), taint)]
    head = _header(plan, opts, node, basis, total, node_pools)
    return {name: head + _dump(objs) for name, objs in docs.items()}


def check_out_dir(out_dir: str | Path, inputs: list | tuple = (), force: bool = False) -> Path:
    """The output folder, checked before any work: InputError (one line, exit 2) when it is a file,
    non-empty without ``force``, or a manifest path in it is an input, a folder or unwritable."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(f"`emit_k8s` {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise InputError(f"`emit_k8s` {out}: folder is not empty; pass `force` to overwrite the manifests in it")
    for name in FILES + OPTIONAL_FILES:
        outpaths.check_output(out / name, inputs=inputs, suffixes=(".yaml",), option="`emit_k8s`")
    return out


def emit_k8s(plan: PlanSummary, out_dir: str | Path, opts: K8sOptions | None = None, *,
             force: bool = False, inputs: list | tuple = ()) -> list[Path]:
    """Write the manifests into ``out_dir`` (created if missing); returns the paths written.

    Refuses (InputError) a non-empty ``out_dir`` unless ``force``, a path that is a file, a name
    that is not DNS-1123, and a node type whose provider has no Karpenter mapping, before writing
    anything. Each file is written atomically (``sandbox_fleet.atomic``).
    """
    out = check_out_dir(out_dir, inputs, force)
    texts = build_manifests(plan, opts)
    return [atomic.write_text(out / name, text) for name, text in texts.items()]
