"""The plan's node line as Kubernetes objects: a Karpenter NodePool, agent-sandbox templates and warm pools.

API versions are pinned: ``karpenter.sh/v1`` (NodePool) and ``extensions.agents.x-k8s.io/v1alpha1``
(SandboxTemplate, SandboxWarmPool). Each object is a plain dict built from the plan's model
(``PlanSummary``, read by attribute); the
field subsets used are documented (with their upstream sources) in docs/operate.md and checked in
tests against committed JSON Schemas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.model import PlanSummary, Request

KARPENTER_API = "karpenter.sh/v1"
SANDBOX_API = "extensions.agents.x-k8s.io/v1alpha1"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
NODEPOOL_LABEL = "karpenter.sh/nodepool"

#: The Karpenter provider's node class for each supported cloud.
NODE_CLASS = {
    "aws": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass"},
    "azure": {"group": "karpenter.azure.com", "kind": "AKSNodeClass"},
}
#: Karpenter capacity type of each pricing tier: reserved is a billing choice, launched on-demand.
CAPACITY_TYPE = {"reserved": "on-demand", "on_demand": "on-demand", "spot": "spot"}


@dataclass(frozen=True)
class K8sOptions:
    """What ``plan --emit-k8s`` is told besides the plan."""

    node_class: str = "default"
    provision_s: float = 60.0  # seconds from "create sandbox" to a running pod on a warm node
    image: str = "REPLACE-ME/sandbox:latest"
    pool_name: str = "sandbox-fleet"
    consolidate_after: str = "5m"


def _cpu(cores: float) -> str:
    milli = round(cores * 1000)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def _mib(mb: float) -> str:
    return f"{math.ceil(mb)}Mi"


def request_name(req: Request) -> str:
    """A DNS-1123 name for a request kind: ``1cpu-2048mi`` (``-1gpu`` when it asks for GPUs)."""
    cpu = _cpu(req.cpu).replace("m", "mcpu") if not _cpu(req.cpu).isdigit() else f"{_cpu(req.cpu)}cpu"
    name = f"{cpu}-{math.ceil(req.memory)}mi"
    return name + (f"-{int(req.gpu)}gpu" if req.gpu else "")


def resources(req: Request) -> dict:
    """Container requests = limits (a sandbox gets what the plan packed it by)."""
    q = {"cpu": _cpu(req.cpu), "memory": _mib(req.memory)}
    if req.disk:
        q["ephemeral-storage"] = _mib(req.disk)
    if req.gpu:
        q["nvidia.com/gpu"] = str(int(math.ceil(req.gpu)))
    return {"requests": dict(q), "limits": dict(q)}


def kinds(plan: PlanSummary) -> list[tuple[Request, int]]:
    """(request, concurrent count at the target) per request kind, largest share first."""
    n = int(plan.target.concurrency)
    if not plan.nodes.mix:
        return [(plan.nodes.request, n)]
    return sorted(((m, int(m.concurrent)) for m in plan.nodes.mix), key=lambda x: (-x[1], request_name(x[0])))


def warm_replicas(plan: PlanSummary, provision_s: float) -> tuple[int, str]:
    """ceil(peak start rate x provisioning delay), at most the target; and how it was found."""
    n = int(plan.target.concurrency)
    starts = plan.starts
    rate, batch, spread = (starts.peak_per_s, starts.batch, starts.release_spread_s) if starts else (None, None, None)
    if rate is None and batch is not None and not spread:
        return min(int(batch), n), f"a batch of {batch:,.0f} released at once: the whole batch, at most the target {n:,}"
    if rate is None:
        return 0, "no start rate measured: no warm pool"
    exact = rate * provision_s
    return min(math.ceil(exact - 1e-9), n), (
        f"ceil({rate:.4g} starts/s x {provision_s:g} s provisioning) = {math.ceil(exact - 1e-9):,}, at most the target {n:,}"
        f" [{starts.basis}]")


def split_warm(total: int, parts: list[tuple[object, int]]) -> list[int]:
    """The warm pool shared across request kinds in proportion to their concurrent counts.

    Largest remainder: the shares sum to ``total`` exactly, ties to the earlier (larger) kind.
    """
    n = sum(c for _, c in parts)
    if n <= 0:
        return [0 for _ in parts]
    exact = [total * c / n for _, c in parts]
    out = [math.floor(x) for x in exact]
    order = sorted(range(len(parts)), key=lambda i: (-(exact[i] - out[i]), i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


def node_class_ref(provider: str, name: str) -> dict:
    return {**NODE_CLASS[provider], "name": name}


def check_supported(plan: PlanSummary) -> str:
    """The plan's provider, or InputError when a NodePool cannot be written for it."""
    nodes = plan.nodes
    provider, itype = nodes.provider, nodes.instance_type
    if provider is None or itype is None or nodes.node_capacity is None:
        raise InputError(f"--emit-k8s: node type {nodes.type!r} has no provider/instance_type in the node catalog; "
                         f"expected one of: {', '.join(sorted(NODE_CLASS))}")
    if provider not in NODE_CLASS:
        raise InputError(f"--emit-k8s: provider {provider!r} of node type {nodes.type!r} is not supported; "
                         f"expected one of: {', '.join(sorted(NODE_CLASS))}")
    return provider


def nodepool(plan: PlanSummary, opts: K8sOptions, warm: list[tuple[Request, int]]) -> dict:
    """A NodePool pinned to the planned instance type and tier, limited to the plan plus the warm pool."""
    provider = check_supported(plan)
    nodes = plan.nodes
    cap, reserve = nodes.node_capacity, nodes.reserve
    usable_cpu = cap.cpu - ((reserve.cpu if reserve else None) or 0.0)
    usable_mem_mb = cap.memory_gb * 1024.0 - ((reserve.memory_mb if reserve else None) or 0.0)
    warm_cpu = sum(r.cpu * k for r, k in warm)
    warm_mem = sum(r.memory * k for r, k in warm)
    warm_nodes = math.ceil(max(warm_cpu / usable_cpu, warm_mem / usable_mem_mb) - 1e-9) if warm else 0
    total = int(nodes.count) + max(warm_nodes, 0)
    tier = plan.cost.tier
    return {
        "apiVersion": KARPENTER_API,
        "kind": "NodePool",
        "metadata": {"name": opts.pool_name, "labels": {"app.kubernetes.io/managed-by": "sandbox-fleet"}},
        "spec": {
            "template": {
                "metadata": {"labels": {"sandbox-fleet/pool": opts.pool_name}},
                "spec": {
                    "nodeClassRef": node_class_ref(provider, opts.node_class),
                    "requirements": [
                        {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": [nodes.instance_type]},
                        {"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": [CAPACITY_TYPE[tier]]},
                    ],
                },
            },
            "limits": {"cpu": _cpu(total * cap.cpu), "memory": f"{math.ceil(total * cap.memory_gb)}Gi"},
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": opts.consolidate_after},
        },
    }


def sandbox_template(req: Request, opts: K8sOptions) -> dict:
    name = f"{opts.pool_name}-{request_name(req)}"
    return {
        "apiVersion": SANDBOX_API,
        "kind": "SandboxTemplate",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "sandbox-fleet"}},
        "spec": {
            "podTemplate": {
                "metadata": {
                    "labels": {"app.kubernetes.io/name": "sandbox", "sandbox-fleet/request": request_name(req)},
                    # a node running a sandbox is never consolidated or drifted away under it
                    "annotations": {DO_NOT_DISRUPT: "true"},
                },
                "spec": {
                    "nodeSelector": {NODEPOOL_LABEL: opts.pool_name},
                    "containers": [{"name": "sandbox", "image": opts.image, "resources": resources(req)}],
                },
            },
        },
    }


def warm_pool(template: dict, replicas: int) -> dict:
    name = template["metadata"]["name"]
    return {
        "apiVersion": SANDBOX_API,
        "kind": "SandboxWarmPool",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "sandbox-fleet"}},
        "spec": {"replicas": int(replicas), "sandboxTemplateRef": {"name": name}},
    }
