"""The plan's node line as Kubernetes objects a cluster accepts unchanged.

API versions are pinned to what the CRDs in ``shared/crds`` (see its SOURCES) serve without a
deprecation warning: ``karpenter.sh/v1`` NodePool, ``karpenter.k8s.aws/v1`` EC2NodeClass,
``karpenter.azure.com/v1beta1`` AKSNodeClass, ``extensions.agents.x-k8s.io/v1beta1`` SandboxTemplate,
SandboxWarmPool and SandboxClaim, ``scheduling.k8s.io/v1`` PriorityClass and ``v1`` Namespace.
Each object is a plain dict built from the plan's model (``PlanSummary``, read by attribute) and the
node catalog entry of its type; tests validate every one against the real CRDs (strict fields,
defaults, CEL rules).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.catalog import NodeType, SameShape
from sandbox_fleet.plan.k8s.pools import PoolLimit, budgets, pool_limits
from sandbox_fleet.plan.k8s.runtime import DEFAULT_AMI_ALIAS, GVISOR, RUNC, USER_DATA, check_runtime
from sandbox_fleet.plan.model import PlanSummary, Request

KARPENTER_API = "karpenter.sh/v1"
SANDBOX_API = "extensions.agents.x-k8s.io/v1beta1"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
POOL_LABEL = "sandbox-fleet/pool"
TAINT_KEY = "sandbox-fleet/sandbox"
MANAGED_BY = {"app.kubernetes.io/managed-by": "sandbox-fleet"}

#: The Karpenter provider's node class for each supported cloud.
NODE_CLASS = {
    "aws": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "api": "karpenter.k8s.aws/v1"},
    "azure": {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "api": "karpenter.azure.com/v1beta1"},
}
#: Karpenter capacity type of each pricing tier: reserved is a billing choice, launched on-demand.
CAPACITY_TYPE = {"reserved": "on-demand", "on_demand": "on-demand", "spot": "spot"}
#: Root volume kept for the OS, kubelet and images besides the sandboxes' scratch (Karpenter's default size).
OS_DISK_GB = 20
#: Pods a node runs besides sandboxes (daemonsets: CNI, kube-proxy, CSI, log and metrics agents), stated.
SYSTEM_PODS = 20
#: Kubernetes' default pods per node, and AKS's most.
DEFAULT_MAX_PODS, AKS_MAX_PODS = 110, 250
AKS_MAX_OS_DISK_GB = 2048
#: Sandboxes outrank ordinary pods for the nodes bought for them, and never preempt anything.
SANDBOX_PRIORITY = 100000

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]*")
_CLUSTER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


@dataclass(frozen=True)
class K8sOptions:
    """What ``plan --emit-k8s`` is told besides the plan; None: derived from the plan (``resolve``)."""

    name: Optional[str] = None  # NodePools, PriorityClass, templates' prefix
    namespace: Optional[str] = None  # of the SandboxTemplates, warm pools and claim
    node_class: Optional[str] = None  # the EC2NodeClass / AKSNodeClass written and referenced
    provision_s: float = 60.0  # seconds from "create sandbox" to a running pod on a warm node
    image: str = "REPLACE-ME/sandbox:latest"
    runtime_class: str = RUNC  # runc (no runtimeClassName), gvisor (installed by the node class), or a cluster's class
    cluster: Optional[str] = None  # the cluster name in the node class's discovery tags and role: required
    consolidate_after: str = "5m"  # plan/mixed_replay.py's SCALE_DOWN_S, unless a node replay priced another
    nodes_file: Optional[str] = None  # the node catalog the plan was made with
    ami_alias: str = DEFAULT_AMI_ALIAS  # the EC2NodeClass's amiSelectorTerms alias (pin it: family@vVERSION)


def dns_label(text: str) -> str:
    """``text`` as a DNS-1123 label: lower case, runs of other characters as one '-', at most 63."""
    out = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:63].rstrip("-")
    return out or "sandbox-fleet"


def default_name(plan: PlanSummary) -> str:
    """``sf-<instance type>-<target>``: two plans of other types or targets never collide."""
    return dns_label(f"sf-{plan.nodes.instance_type or plan.nodes.type}-{int(plan.target.concurrency)}")


def _check_name(flag: str, value: str, limit: int = 63) -> None:
    if not value:
        raise InputError(f"{flag}: empty; expected a DNS-1123 name (lower-case letters, digits and '-')")
    if len(value) > limit or not _DNS_LABEL.fullmatch(value):
        raise InputError(f"{flag} {value!r}: expected a DNS-1123 name of at most {limit} characters: lower-case "
                         "letters, digits and '-', starting and ending with a letter or digit")


#: A pod that takes longer than this to start is no warm-pool input (1e308 printed a 300-digit pool).
MAX_PROVISION_S = 86_400
#: Namespaces Kubernetes itself runs in: sandbox objects (untrusted code) never go there.
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")


def check_options(opts: K8sOptions, provider: Optional[str] = None) -> None:
    """What needs no plan, checked before any work: the cluster (required), the runtime, the AMI alias."""
    if not opts.cluster:
        raise InputError("`k8s_cluster`: required with `emit_k8s`: the cluster name the node class's discovery tags "
                         "and node role use (e.g. my-cluster)")
    if not _CLUSTER.fullmatch(opts.cluster):
        raise InputError(f"`k8s_cluster` {opts.cluster!r}: expected a cluster name (letters, digits, '-' and '_', "
                         "starting with a letter or digit, at most 100 characters)")
    _check_name("`k8s_runtime_class`", opts.runtime_class)
    check_runtime(opts.runtime_class, opts.ami_alias, provider)


def resolve(plan: PlanSummary, opts: K8sOptions) -> K8sOptions:
    """The options with plan-derived defaults filled in, every name checked (InputError, one line)."""
    name = opts.name if opts.name is not None else default_name(plan)
    # leave room for the longest suffix written onto it ("-on-demand", a request kind)
    _check_name("`k8s_name`", name, limit=40)
    namespace = opts.namespace if opts.namespace is not None else name
    node_class = opts.node_class if opts.node_class is not None else name
    _check_name("`k8s_namespace`", namespace)
    _check_name("`k8s_node_class`", node_class)
    check_options(opts, plan.nodes.provider)
    if not _IMAGE.fullmatch(opts.image or "") or len(opts.image) > 1024:
        raise InputError(f"`k8s_image` {opts.image!r}: expected an image reference (registry/name:tag or "
                         "name@sha256:...): no spaces, quotes or control characters")
    if not 0 < opts.provision_s <= MAX_PROVISION_S:
        raise InputError(f"`k8s_provision_s` must be a positive number of seconds up to {MAX_PROVISION_S:,} (a day), "
                         f"got {opts.provision_s!r}")
    if namespace in SYSTEM_NAMESPACES:
        raise InputError(f"`k8s_namespace` {namespace!r}: a namespace the cluster's own components use; "
                         "give the sandboxes a namespace of their own")
    return K8sOptions(name=name, namespace=namespace, node_class=node_class, provision_s=opts.provision_s,
                      image=opts.image, runtime_class=opts.runtime_class, cluster=opts.cluster,
                      consolidate_after=_consolidate_after(plan, opts), nodes_file=opts.nodes_file,
                      ami_alias=opts.ami_alias)


def _consolidate_after(plan: PlanSummary, opts: K8sOptions) -> str:
    """The scale-down delay the mixed purchase's node replay priced, when it ran; else the option's."""
    rp = plan.cost.mixed.replay if plan.cost is not None and plan.cost.mixed is not None else None
    if rp is None or rp.scale_down_s is None:
        return opts.consolidate_after
    return f"{round(rp.scale_down_s)}s"


def _cpu(cores: float) -> str:
    milli = round(cores * 1000)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def _mib(mb: float) -> str:
    return f"{math.ceil(mb)}Mi"


def request_name(req: Request) -> str:
    """A DNS-1123 name for a request kind: ``1cpu-2048mi`` (``-1gpu`` when it asks for GPUs)."""
    cores = _cpu(req.cpu or 0.0)
    cpu = cores.replace("m", "mcpu") if not cores.isdigit() else f"{cores}cpu"
    name = f"{cpu}-{math.ceil(req.memory or 0.0)}mi"
    return name + (f"-{int(req.gpu)}gpu" if req.gpu else "")


def resources(req: Request) -> dict:
    """Container requests = limits (a sandbox gets what the plan packed it by)."""
    q = {"cpu": _cpu(req.cpu or 0.0), "memory": _mib(req.memory or 0.0)}
    if req.disk:
        q["ephemeral-storage"] = _mib(req.disk)
    if req.gpu:
        q["nvidia.com/gpu"] = str(math.ceil(req.gpu))
    return {"requests": dict(q), "limits": dict(q)}


def kinds(plan: PlanSummary) -> list[tuple[Request, int]]:
    """(request, concurrent count at the target) per request kind, largest share first."""
    n = int(plan.target.concurrency)
    if not plan.nodes.mix:
        if plan.nodes.request is None:
            raise InputError("`emit_k8s`: the plan has no sandbox request (nodes.request)")
        return [(plan.nodes.request, n)]
    return sorted(((m, int(m.concurrent or 0)) for m in plan.nodes.mix), key=lambda x: (-x[1], request_name(x[0])))


def warm_replicas(plan: PlanSummary, provision_s: float) -> tuple[int, str]:
    """The plan's sized warm pool (``warm_pool``: the least keeping a released batch's step within its
    stated lengthening, plan/warm_pool.py), at most the target; else ceil(peak start rate x provisioning
    delay), at most the target; and how it was found."""
    n = int(plan.target.concurrency)
    wp = plan.warm_pool
    if wp is not None and wp.needed is not None:  # sized (size null: the refill is short, the pool still sized so)
        return min(int(wp.needed), n), f"{wp.basis}; at most the target {n:,}"
    starts = plan.starts
    if starts is None:
        return 0, "no start rate measured: no warm pool"
    rate, batch, spread = starts.peak_per_s, starts.batch, starts.release_spread_s
    if rate is None and batch is not None and not spread:
        return min(int(batch), n), f"a batch of {batch:,.0f} released at once: the whole batch, at most the target {n:,}"
    if rate is None:
        return 0, "no start rate measured: no warm pool"
    exact = rate * provision_s
    return min(math.ceil(exact - 1e-9), n), (
        f"ceil({rate:.4g} starts/s x {provision_s:g} s provisioning) = {math.ceil(exact - 1e-9):,}, at most the target {n:,}"
        f" [{starts.basis}]")


def split_warm(total: int, parts: Sequence[tuple[object, int]]) -> list[int]:
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


@dataclass(frozen=True)
class Pinned:
    """What a NodePool pins, read once from the plan: cloud, instance type, whole capacity, tier."""

    provider: str
    instance_type: str
    cpu: float
    memory_gb: float
    tier: str


def check_supported(plan: PlanSummary) -> Pinned:
    """What the plan pins, or InputError when a NodePool cannot be written for it."""
    nodes = plan.nodes
    provider, itype, cap = nodes.provider, nodes.instance_type, nodes.node_capacity
    if provider is None or itype is None or cap is None or cap.cpu is None or cap.memory_gb is None:
        raise InputError(f"`emit_k8s`: node type {nodes.type!r} has no provider/instance_type in the node catalog; "
                         f"expected one of: {', '.join(sorted(NODE_CLASS))}")
    if provider not in NODE_CLASS:
        raise InputError(f"`emit_k8s`: provider {provider!r} of node type {nodes.type!r} is not supported; "
                         f"expected one of: {', '.join(sorted(NODE_CLASS))}")
    tier = plan.cost.tier if plan.cost is not None else None
    if tier not in CAPACITY_TYPE:
        raise InputError(f"`emit_k8s`: the plan's price tier {tier!r} is not one of {', '.join(CAPACITY_TYPE)}")
    return Pinned(provider, itype, float(cap.cpu), float(cap.memory_gb), str(tier))


def scratch_per_node_gb(plan: PlanSummary) -> float:
    """The sandboxes' scratch disk on one full node, GiB (slots x disk; the plan's storage line)."""
    if plan.storage is not None and plan.storage.per_node_gb is not None:
        return float(plan.storage.per_node_gb)
    req = plan.nodes.request
    return float((plan.nodes.per_node or 0) * ((req.disk if req else 0) or 0)) / 1024.0


def same_shape(node: NodeType, scratch_gb: float) -> list[SameShape]:
    """The catalog's other instance types of ``node``'s shape whose local disk holds the scratch, in
    catalog order; the same storage kind, since one node class serves them all."""
    return [s for s in node.same_shape if s.vcpus == node.vcpus and s.memory_gb == node.memory_gb
            and s.gpus == node.gpus and s.instance_store == node.instance_store and s.disk_gb >= scratch_gb]


def _max_pods(plan: PlanSummary) -> Optional[int]:
    """kubelet maxPods when the sandboxes plus system pods exceed Kubernetes' default 110, else None."""
    need = int(plan.nodes.per_node or 0) + SYSTEM_PODS
    return need if need > DEFAULT_MAX_PODS else None


def ec2_node_class(plan: PlanSummary, node: NodeType, opts: K8sOptions) -> dict:
    """EC2NodeClass: instance store as one RAID0 array where the type has it (Karpenter ignores it
    otherwise), else a root volume of slots x disk + the reserve + ``OS_DISK_GB``."""
    cluster = opts.cluster
    spec: dict = {
        "role": f"KarpenterNodeRole-{cluster}",
        "amiSelectorTerms": [{"alias": opts.ami_alias}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": cluster}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": cluster}}],
    }
    if node.instance_store:
        spec["instanceStorePolicy"] = "RAID0"
    else:
        spec["blockDeviceMappings"] = [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {
            "volumeSize": f"{root_disk_gb(plan)}Gi", "volumeType": "gp3", "encrypted": True,
            "deleteOnTermination": True}}]
    pods = _max_pods(plan)
    if pods is not None:
        spec["kubelet"] = {"maxPods": pods}
    if opts.runtime_class == GVISOR:  # installs runsc before the node joins (plan/k8s/runtime.py)
        spec["userData"] = USER_DATA
    kind = NODE_CLASS["aws"]
    return {"apiVersion": kind["api"], "kind": kind["kind"], "metadata": {"name": opts.node_class, "labels": MANAGED_BY},
            "spec": spec}


def root_disk_gb(plan: PlanSummary) -> int:
    """Disk a node without instance store needs: the scratch of a full node, the system reserve, the OS."""
    reserve = plan.nodes.reserve
    reserve_gb = ((reserve.disk_mb if reserve else None) or 0.0) / 1024.0
    return math.ceil(scratch_per_node_gb(plan) + reserve_gb - 1e-9) + OS_DISK_GB


def aks_node_class(plan: PlanSummary, opts: K8sOptions) -> dict:
    """AKSNodeClass with an OS disk sized to slots x disk + reserve + OS (the kubelet's ephemeral storage)."""
    size = root_disk_gb(plan)
    if size > AKS_MAX_OS_DISK_GB:
        raise InputError(f"`emit_k8s`: a full node needs a {size:,} GiB OS disk for its sandboxes' scratch, over "
                         f"AKSNodeClass's most ({AKS_MAX_OS_DISK_GB:,} GiB): plan a smaller disk request or node type")
    spec: dict = {"imageFamily": "AzureLinux", "osDiskSizeGB": size}
    pods = _max_pods(plan)
    if pods is not None:
        if pods > AKS_MAX_PODS:
            raise InputError(f"`emit_k8s`: {pods} pods per node ({plan.nodes.per_node} sandboxes + {SYSTEM_PODS} system "
                             f"pods) is over AKS's most ({AKS_MAX_PODS}): plan a smaller node type")
        spec["maxPods"] = pods
    kind = NODE_CLASS["azure"]
    return {"apiVersion": kind["api"], "kind": kind["kind"], "metadata": {"name": opts.node_class, "labels": MANAGED_BY},
            "spec": spec}


def node_class(plan: PlanSummary, node: NodeType, opts: K8sOptions) -> dict:
    return ec2_node_class(plan, node, opts) if check_supported(plan).provider == "aws" else aks_node_class(plan, opts)


def _pool(plan: PlanSummary, opts: K8sOptions, limit: PoolLimit, types: list[str]) -> dict:
    pin = check_supported(plan)
    provider, count = pin.provider, limit.nodes
    spec: dict = {
        "template": {
            "metadata": {"labels": {POOL_LABEL: opts.name}},
            "spec": {
                "nodeClassRef": {"group": NODE_CLASS[provider]["group"], "kind": NODE_CLASS[provider]["kind"],
                                 "name": opts.node_class},
                "requirements": [
                    {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": types},
                    {"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": list(limit.capacity_types)},
                ],
                "taints": [{"key": TAINT_KEY, "value": opts.name, "effect": "NoSchedule"}],
            },
        },
        # this pool's share of the nodes bought (plan/k8s/pools.py): the pools' limits sum to the order
        "limits": {"cpu": _cpu(count * pin.cpu), "memory": f"{math.ceil(count * pin.memory_gb)}Gi"},
        "disruption": {"consolidationPolicy": "WhenEmpty",
                       "consolidateAfter": limit.consolidate_after or opts.consolidate_after,
                       "budgets": budgets(limit)},
    }
    if limit.weight is not None:
        spec["weight"] = limit.weight
    return {"apiVersion": KARPENTER_API, "kind": "NodePool",
            "metadata": {"name": f"{opts.name}{limit.suffix}", "labels": MANAGED_BY}, "spec": spec}


def nodepools(plan: PlanSummary, node: NodeType, opts: K8sOptions) -> list[dict]:
    """One NodePool per share of the order (plan/k8s/pools.py), their limits summing to it; a pool
    that may launch spot lists every same-shape type of the catalog, the others the planned type."""
    pin = check_supported(plan)
    same = [s.instance_type for s in same_shape(node, scratch_per_node_gb(plan))]
    return [_pool(plan, opts, lim, [pin.instance_type] + (same if "spot" in lim.capacity_types else []))
            for lim in pool_limits(plan, pin.tier)]


def namespace(opts: K8sOptions) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": opts.namespace, "labels": MANAGED_BY}}


def priority_class(opts: K8sOptions) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": f"{opts.name}-sandbox", "labels": MANAGED_BY},
            "value": SANDBOX_PRIORITY, "globalDefault": False, "preemptionPolicy": "Never",
            "description": "sandbox-fleet sandboxes: scheduled before ordinary pods on the nodes bought for them; "
                           "they never preempt other pods"}


def sandbox_template(req: Request, opts: K8sOptions) -> dict:
    name = f"{opts.name}-{request_name(req)}"
    return {
        "apiVersion": SANDBOX_API,
        "kind": "SandboxTemplate",
        "metadata": {"name": name, "namespace": opts.namespace, "labels": MANAGED_BY},
        "spec": {
            "podTemplate": {
                "metadata": {
                    "labels": {"app.kubernetes.io/name": "sandbox", "sandbox-fleet/request": request_name(req)},
                    # a node running a sandbox is never consolidated or drifted away under it
                    "annotations": {DO_NOT_DISRUPT: "true"},
                },
                "spec": {
                    **({"runtimeClassName": opts.runtime_class} if opts.runtime_class != RUNC else {}),
                    "priorityClassName": f"{opts.name}-sandbox",
                    "nodeSelector": {POOL_LABEL: opts.name},
                    "tolerations": [{"key": TAINT_KEY, "operator": "Equal", "value": opts.name, "effect": "NoSchedule"}],
                    "containers": [{"name": "sandbox", "image": opts.image, "resources": resources(req)}],
                },
            },
        },
    }


def warm_pool(template: dict, replicas: int) -> dict:
    meta = template["metadata"]
    return {
        "apiVersion": SANDBOX_API,
        "kind": "SandboxWarmPool",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": MANAGED_BY},
        "spec": {"replicas": int(replicas), "sandboxTemplateRef": {"name": meta["name"]}},
    }


def sandbox_claim(pool: dict) -> dict:
    """An example claim on a warm pool: what a trainer creates per rollout (delete it when done)."""
    meta = pool["metadata"]
    return {
        "apiVersion": SANDBOX_API,
        "kind": "SandboxClaim",
        "metadata": {"name": f"{meta['name']}-example", "namespace": meta["namespace"], "labels": MANAGED_BY},
        "spec": {"warmPoolRef": {"name": meta["name"]}},
    }
