"""``plan --emit-k8s DIR``: the purchase order as manifests a cluster can apply.

Three files: ``nodepool.yaml`` (Karpenter ``NodePool``), ``sandboxtemplate.yaml`` (one agent-sandbox
``SandboxTemplate`` per request kind) and ``sandboxwarmpool.yaml`` (one ``SandboxWarmPool`` per
template), each opening with a comment header that gives the plan's basis. AWS and Azure node
types only; DIR must be empty or new unless ``force``. Every check runs before anything is written.
"""

from __future__ import annotations

from pathlib import Path

from sandbox_fleet.errors import InputError
from sandbox_fleet.outfile import write_text_atomic
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


def _header(plan: dict, opts: K8sOptions, api: str, warm_basis: str) -> str:
    target, nodes, cost = plan["target"], plan["nodes"], plan["cost"]
    source = plan["input"].get("path") or plan["input"].get("source")
    lines = [
        f"# Written by `sandbox-fleet plan --emit-k8s` ({api}). Basis of this plan:",
        f"#   source summary: {source}",
        f"#   target: {target['concurrency']:,} concurrent sandboxes ({target['source']}: {target.get('detail', '')})",
        f"#   nodes: {nodes['count']:,} x {nodes['type']} ({nodes['provider']} {nodes['instance_type']}), "
        f"tier {cost['tier']} -> capacity type {CAPACITY_TYPE[cost['tier']]}",
        f"#   warm pool: {warm_basis}",
        f"#   node class: {opts.node_class}; sandbox image: {opts.image}",
    ]
    return "\n".join(lines) + "\n"


def build_manifests(plan: dict, opts: K8sOptions | None = None) -> dict[str, str]:
    """File name -> YAML text for a plan (``plan --json`` output); InputError if unsupported."""
    opts = opts or K8sOptions()
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


def check_out_dir(out_dir: str | Path, force: bool = False) -> Path:
    """The output folder, or InputError when it is a file or non-empty without ``force``."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(f"--emit-k8s {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise InputError(f"--emit-k8s {out}: folder is not empty; pass --force to overwrite the manifests in it")
    return out


def emit_k8s(plan: dict, out_dir: str | Path, opts: K8sOptions | None = None, *, force: bool = False) -> list[Path]:
    """Write the manifests into ``out_dir`` (created if missing); returns the paths written.

    Refuses (InputError) a non-empty ``out_dir`` unless ``force``, a path that is a file, and a
    node type whose provider has no Karpenter mapping, before writing anything.
    """
    out = check_out_dir(out_dir, force)
    texts = build_manifests(plan, opts)
    return [write_text_atomic(out / name, text) for name, text in texts.items()]
