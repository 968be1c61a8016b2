"""The sandboxes' container runtime and the node image: runc by default, gVisor opt-in and installed.

``--k8s-runtime-class``: ``runc`` (the default) writes no ``runtimeClassName``, so pods run on the
node's default runtime and start on any node the NodePools launch. ``gvisor`` writes a RuntimeClass
(handler ``runsc``, scheduled onto the sandbox NodePools) and an EC2NodeClass whose user data
installs gVisor on each node before it joins (gVisor's documented release download, checked against
its sha512, and a containerd runtime ``runsc`` in the drop-in folder the EKS AL2023 containerd
configuration imports). Nothing else can install it: an AKSNodeClass carries no user data (AKS
offers Kata through Pod Sandboxing instead) and Bottlerocket has no writable ``/usr/local/bin`` for
user data to install into, so both are refused with gVisor. Any other name (``kata``, a class the
cluster already has) is written as the pods' ``runtimeClassName`` and must exist in the cluster.

``--k8s-ami-alias``: the EC2NodeClass's ``amiSelectorTerms`` alias, ``family@version``. Karpenter
recommends against ``@latest`` in production (a faulty AMI rolls onto every new node) and shows a
pinned ``al2023@v20240807``; the default stays ``al2023@latest`` and the header says it is unpinned.
"""

from __future__ import annotations

import re
from typing import Optional

from sandbox_fleet.errors import InputError

RUNC, GVISOR = "runc", "gvisor"
#: gVisor's containerd runtime (handler) name and shim type (gvisor.dev, containerd quick start)
GVISOR_HANDLER = "runsc"
#: gVisor's release channel the nodes download (gvisor.dev install guide); a dated release pins it
GVISOR_RELEASE = "latest"
DEFAULT_AMI_ALIAS = "al2023@latest"
#: the families a Linux sandbox node may run (the EC2NodeClass CRD also lists al2 and Windows)
_ALIAS = re.compile(r"(al2023)@(latest|v\d{8})|(bottlerocket)@(latest|v\d+\.\d+\.\d+)")

_SCRIPT = f"""#!/bin/bash
# sandbox-fleet: install gVisor (runsc) and register it with containerd before the node joins
set -euo pipefail
ARCH=$(uname -m)
URL=https://storage.googleapis.com/gvisor/releases/release/{GVISOR_RELEASE}/${{ARCH}}
cd "$(mktemp -d)"
for f in runsc containerd-shim-runsc-v1; do
  curl -fsSL --retry 5 -o "$f" "$URL/$f"
  curl -fsSL --retry 5 -o "$f.sha512" "$URL/$f.sha512"
done
sha512sum -c runsc.sha512 -c containerd-shim-runsc-v1.sha512
install -m 0755 runsc containerd-shim-runsc-v1 /usr/local/bin/
mkdir -p /etc/containerd/config.d
if containerd --version | grep -q ' v1\\.'; then
  printf 'version = 2\\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.{GVISOR_HANDLER}]\\n  runtime_type = "io.containerd.runsc.v1"\\n' > /etc/containerd/config.d/gvisor.toml
else
  printf 'version = 3\\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.{GVISOR_HANDLER}]\\n  runtime_type = "io.containerd.runsc.v1"\\n' > /etc/containerd/config.d/gvisor.toml
fi
"""

#: AL2023 user data is MIME multi-part; Karpenter merges its own nodeadm NodeConfig part into it
USER_DATA = ('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n--//\n'
             'Content-Type: text/x-shellscript; charset="us-ascii"\n\n' + _SCRIPT + "--//--\n")


def check_runtime(runtime_class: str, ami_alias: str, provider: Optional[str]) -> None:
    """InputError (one line) for an alias Karpenter refuses or a runtime the node class cannot install."""
    m = _ALIAS.fullmatch(ami_alias or "")
    if m is None:
        raise InputError(f"`k8s_ami_alias` {ami_alias!r}: expected family@version: al2023@vYYYYMMDD (or @latest), "
                         "or bottlerocket@vX.Y.Z (or @latest), e.g. al2023@v20240807")
    if runtime_class != GVISOR:
        return
    if provider == "azure":
        raise InputError("`k8s_runtime_class` gvisor: an AKSNodeClass carries no user data, so nothing would install "
                         "gVisor on the nodes; use runc, or a runtime class the cluster has (AKS: Kata, Pod Sandboxing)")
    if m.group(3) == "bottlerocket":
        raise InputError("`k8s_runtime_class` gvisor: Bottlerocket nodes cannot install gVisor from user data; "
                         "use an al2023 `k8s_ami_alias`, or runc")


def pinned(ami_alias: str) -> bool:
    return not ami_alias.endswith("@latest")


def runtime_class(name: str, pool: str, taint: dict) -> dict:
    """gVisor's RuntimeClass: handler runsc, its pods scheduled onto the sandbox nodes (which install it)."""
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "sandbox-fleet"}},
            "handler": GVISOR_HANDLER,
            "scheduling": {"nodeSelector": {"sandbox-fleet/pool": pool},
                           "tolerations": [{"key": taint["key"], "operator": "Equal", "value": taint["value"],
                                            "effect": taint["effect"]}]}}
