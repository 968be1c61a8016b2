"""``plan --emit-k8s DIR``: the purchase order as manifests a cluster can apply.

Three files: ``nodepool.yaml`` (Karpenter ``NodePool``), ``sandboxtemplate.yaml`` (one agent-sandbox
``SandboxTemplate`` per request kind) and ``sandboxwarmpool.yaml`` (one ``SandboxWarmPool`` per
template), each opening with a comment header that gives the plan's basis. AWS and Azure node
types only; DIR must be empty or new unless ``force``. Every check runs before anything is written.
"""

from __future__ import annotations

from pathlib import Path

from sandbox_fleet import atomic, contract, outpaths
from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.model import PlanSummary
from sandbox_fleet.plan.k8s.manifests import (
    CAPACITY_TYPE,
    KARPENTER_API,
    SANDBOX_API,
    K8sOptions,
    check_supported,
    kinds,
    nodepool,
    sandbox_template,
    split_warm,
    warm_pool,
    warm_replicas,
)
from sandbox_fleet.plan.k8s.yamltext import dump

__all__ = ["FILES", "K8sOptions", "build_manifests", "check_out_dir", "emit_k8s"]

FILES = ("nodepool.yaml", "sandboxtemplate.yaml", "sandboxwarmpool.yaml")


def _header(plan: PlanSummary, opts: K8sOptions, api: str, warm_basis: str) -> str:
    target, nodes, tier = plan.target, plan.nodes, plan.cost.tier
    source = (plan.input.path or plan.input.source) if plan.input else None
    lines = [
        f"# Written by `sandbox-fleet plan --emit-k8s` ({api}). Basis of this plan:",
        f"#   source summary: {source}",
        f"#   target: {target.concurrency:,} concurrent sandboxes ({target.source}: {target.detail or ''})",
        f"#   nodes: {nodes.count:,} x {nodes.type} ({nodes.provider} {nodes.instance_type}), "
        f"tier {tier} -> capacity type {CAPACITY_TYPE[tier]}",
        f"#   warm pool: {warm_basis}",
        f"#   node class: {opts.node_class}; sandbox image: {opts.image}",
    ]
    return "\n".join(lines) + "\n"


def build_manifests(plan: PlanSummary | dict, opts: K8sOptions | None = None) -> dict[str, str]:
    """File name -> YAML text for a plan (a ``PlanSummary`` or its JSON); InputError if unsupported."""
    opts = opts or K8sOptions()
    plan = contract.parse(PlanSummary, plan, "plan")
    check_supported(plan)
    if not (opts.provision_s > 0):
        raise InputError(f"--k8s-provision-s must be a positive number of seconds, got {opts.provision_s!r}")
    parts = kinds(plan)
    total, basis = warm_replicas(plan, opts.provision_s)
    replicas = split_warm(total, parts)
    warm = [(req, k) for (req, _), k in zip(parts, replicas)]
    templates = [sandbox_template(req, opts) for req, _ in parts]
    pools = [warm_pool(t, k) for t, k in zip(templates, replicas)]
    docs = {
        "nodepool.yaml": (KARPENTER_API, [nodepool(plan, opts, warm)]),
        "sandboxtemplate.yaml": (SANDBOX_API, templates),
        "sandboxwarmpool.yaml": (SANDBOX_API, pools),
    }
    return {name: _header(plan, opts, api, basis) + "".join("---\n" + dump(d) for d in objs)
            for name, (api, objs) in docs.items()}


def check_out_dir(out_dir: str | Path, inputs: list | tuple = (), force: bool = False) -> Path:
    """The output folder, checked before any work: InputError (one line, exit 2) when it is a file,
    non-empty without ``force``, or a manifest path in it is an input, a folder or unwritable."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(f"--emit-k8s {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise InputError(f"--emit-k8s {out}: folder is not empty; pass --force to overwrite the manifests in it")
    for name in FILES:
        outpaths.check_output(out / name, inputs=inputs, suffixes=(".yaml",), option="--emit-k8s")
    return out


def emit_k8s(plan: PlanSummary | dict, out_dir: str | Path, opts: K8sOptions | None = None, *,
             force: bool = False, inputs: list | tuple = ()) -> list[Path]:
    """Write the manifests into ``out_dir`` (created if missing); returns the paths written.

    Refuses (InputError) a non-empty ``out_dir`` unless ``force``, a path that is a file, and a
    node type whose provider has no Karpenter mapping, before writing anything. Each file is
    written atomically (``sandbox_fleet.atomic``).
    """
    out = check_out_dir(out_dir, inputs, force)
    texts = build_manifests(plan, opts)
    return [atomic.write_text(out / name, text) for name, text in texts.items()]
