"""plan --emit-k8s: manifests parsed back with PyYAML, every field checked against the plan by hand,
and every custom resource validated against the real CRDs (tests/k8s_crd.py: strict fields,
defaults, CEL rules, no deprecation warning) of the cluster set it is for."""

from __future__ import annotations

import copy
import json
import math
import os
from pathlib import Path

import pytest
import yaml

from k8s_crd import Invalid, crd_root, validate
from sandbox_fleet.errors import InputError
from sandbox_fleet.jsonio import to_jsonable
from sandbox_fleet.plan import PlanOptions
from sandbox_fleet.plan.k8s import FILES, K8sOptions, build_manifests, emit_k8s
from summaries import as_plan, plan_json

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "examples" / "rst-published.json"
MIXED = Path(__file__).parent / "data" / "mixed.json"
SET_OF = {"aws": "set-aws", "azure": "set-azure"}
CORE = ("Namespace", "PriorityClass", "RuntimeClass")  # built-in kinds: no CRD to validate against


def _require_crds() -> None:
    """The real CRDs: skip without them, fail under CI=true (.ci/run has shared/ beside the clone)."""
    if crd_root() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but ../shared/crds is missing beside the repository")
        pytest.skip("no ../shared/crds beside the repository (set SANDBOX_FLEET_CRDS)")


@pytest.fixture
def crds() -> None:
    _require_crds()


def _summary(path: Path) -> dict:
    return json.loads(path.read_text())


def _plan(path: Path, **kw) -> dict:
    return to_jsonable(plan_json(_summary(path), PlanOptions(**kw)))


#: the cluster every test names (--k8s-cluster is required)
CLUSTER = "c1"


def _opts(**kw) -> K8sOptions:
    return K8sOptions(cluster=CLUSTER, **kw)


def _docs(plan: dict, opts: K8sOptions | None = None) -> dict[str, list[dict]]:
    return {name: [d for d in yaml.safe_load_all(text) if d is not None]
            for name, text in build_manifests(as_plan(plan), opts or _opts()).items()}


def _validate_all(docs: dict[str, list[dict]], provider: str) -> dict[str, list]:
    """Each custom resource through its CRD; returns kind -> [(stored object, report)]."""
    _require_crds()
    out: dict[str, list] = {}
    for objs in docs.values():
        for obj in objs:
            if obj["kind"] in CORE:
                continue
            out.setdefault(obj["kind"], []).append(validate(obj, SET_OF[provider]))
    return out


def _cpu(q: str) -> float:
    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)


def _mib(q: str) -> float:
    assert q.endswith("Mi"), q
    return float(q[:-2])


# --- the document's campaign on AWS ---------------------------------------------------------------


@pytest.mark.parametrize("tier", ["on_demand", "reserved", "spot"])
def test_every_object_passes_the_real_crds_with_rules_evaluated(tier):
    plan = _plan(PUBLISHED, node_type="aws-m6id.24xlarge", price_tier=tier)
    checked = _validate_all(_docs(plan), "aws")
    assert set(checked) == {"EC2NodeClass", "NodePool", "SandboxTemplate", "SandboxWarmPool", "SandboxClaim"}
    # the CEL rules ran (not skipped): the NodePool's and the EC2NodeClass's own
    assert all(len(rep.evaluated) >= 20 for _, rep in checked["NodePool"])
    assert len(checked["EC2NodeClass"][0][1].evaluated) >= 20
    # schema defaults the API server would store, applied
    (pool, _), *_ = checked["NodePool"]
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "720h"
    # the budgets the node replay assumed, emitted (not the API server's default of 10%)
    assert pool["spec"]["disruption"]["budgets"] in ([{"nodes": "0"}], [
        {"nodes": "100%", "reasons": ["Empty"]}, {"nodes": "0", "reasons": ["Drifted", "Underutilized"]}])
    tmpl = checked["SandboxTemplate"][0][0]["spec"]
    assert (tmpl["envVarsInjectionPolicy"], tmpl["networkPolicyManagement"]) == ("Disallowed", "Managed")
    assert "updateStrategy" not in checked["SandboxWarmPool"][0][0]["spec"]  # its default is inside it only


def test_nodepool_limit_is_buy_and_the_warm_pool_lives_in_it():
    plan = _plan(PUBLISHED, node_type="aws-m6id.24xlarge", price_tier="on_demand")
    assert plan["nodes"]["count"] == 32 and plan["nodes"]["per_node"] == 95
    docs = _docs(plan, _opts(provision_s=60.0))
    # open workload: mean concurrency 467.59 / mean hold 2,102.63 s = 0.2224 starts/s; x 60 s = 13.3 -> 14
    (warm,) = docs["sandboxwarmpool.yaml"]
    assert warm["spec"]["replicas"] == 14
    # BUY 32: the limit is exactly 32 x 96 cpu and 32 x 384 GiB; 32 x 95 - 3,000 = 40 spare slots hold the 14
    (pool,) = docs["nodepool.yaml"]
    assert pool["spec"]["limits"] == {"cpu": str(32 * 96), "memory": f"{32 * 384}Gi"}
    assert "held in the 40 slots the 32 nodes have beyond the target" in build_manifests(as_plan(plan), _opts())["nodepool.yaml"]
    req = {r["key"]: r["values"] for r in pool["spec"]["template"]["spec"]["requirements"]}
    assert req == {"node.kubernetes.io/instance-type": ["m6id.24xlarge"], "karpenter.sh/capacity-type": ["on-demand"]}
    assert "weight" not in pool["spec"]


def test_instance_store_is_raid0():
    plan = _plan(PUBLISHED, node_type="aws-m6id.24xlarge")
    (nc,) = _docs(plan)["nodeclass.yaml"]
    assert nc["kind"] == "EC2NodeClass" and nc["spec"]["instanceStorePolicy"] == "RAID0"
    assert "blockDeviceMappings" not in nc["spec"]
    # 95 sandboxes + 20 system pods = 115 > 110 (the default): kubelet maxPods says so
    assert nc["spec"]["kubelet"] == {"maxPods": 115}


def test_ebs_root_volume_is_sized_to_slots_times_disk(tmp_path):
    text = (ROOT / "src" / "sandbox_fleet" / "data" / "nodes.toml").read_text()
    head, rest = text.split('name = "aws-m6id.24xlarge"', 1)
    entry, tail = rest.split("[[node]]", 1)
    entry = entry.replace("instance_store = true\n", "").split("same_shape")[0]
    nodes = tmp_path / "nodes.toml"
    nodes.write_text(head + 'name = "aws-m6id.24xlarge"' + entry + "\n[[node]]" + tail)
    plan = _plan(PUBLISHED, node_type="aws-m6id.24xlarge", nodes_file=str(nodes), price_tier="spot")
    docs = _docs(plan, _opts(nodes_file=str(nodes)))
    (nc,) = docs["nodeclass.yaml"]
    assert "instanceStorePolicy" not in nc["spec"]
    # 95 slots x 6,144 MiB = 570 GiB of scratch, no disk reserve, + 20 GiB for the OS = 590 GiB
    assert nc["spec"]["blockDeviceMappings"] == [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {
        "volumeSize": "590Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}}]
    # no same-shape list in this catalog: spot pins the one type
    assert docs["nodepool.yaml"][0]["spec"]["template"]["spec"]["requirements"][0]["values"] == ["m6id.24xlarge"]
    _validate_all(docs, "aws")


def test_spot_is_one_pool_of_the_order_with_same_shape_types_and_an_on_demand_fallback_inside_it():
    plan = _plan(PUBLISHED, node_type="aws-m6id.24xlarge", price_tier="spot")
    assert plan["nodes"]["count"] == 32
    (spot,) = _docs(plan)["nodepool.yaml"]
    types = spot["spec"]["template"]["spec"]["requirements"][0]["values"]
    # every 96 vCPU / 384 GiB NVMe type in the catalog whose disk holds 570 GiB of scratch
    assert types == ["m6id.24xlarge", "m6idn.24xlarge", "m5d.24xlarge", "m5dn.24xlarge"]
    # Karpenter prioritizes spot when a pool allows both, on-demand only when spot is short: one limit
    assert spot["spec"]["template"]["spec"]["requirements"][1]["values"] == ["spot", "on-demand"]
    # BUY 32: 32 x 96 = 3,072 cpu and 32 x 384 = 12,288 GiB in all (before: 2 pools of 3,072 each, 6,144)
    assert spot["spec"]["limits"] == {"cpu": "3072", "memory": "12288Gi"}
    assert "weight" not in spot["spec"]


def _limit_nodes(pools: list[dict], cpu: float) -> list[float]:
    return [_cpu(p["spec"]["limits"]["cpu"]) / cpu for p in pools]


@pytest.mark.parametrize("tier", ["on_demand", "reserved", "spot"])
def test_the_nodepools_limits_never_sum_past_the_order(tier):
    """Every tier of both corpora: the limits (cpu and memory) add up to BUY x one node, no more."""
    for path, ntype, cpu, mem_gb in ((PUBLISHED, "aws-m6id.24xlarge", 96, 384), (MIXED, "azure-D96ds_v5", 96, 384)):
        plan = _plan(path, node_type=ntype, price_tier=tier)
        pools = _docs(plan)["nodepool.yaml"]
        assert sum(_limit_nodes(pools, cpu)) == plan["nodes"]["count"]
        assert sum(float(p["spec"]["limits"]["memory"][:-2]) for p in pools) == plan["nodes"]["count"] * mem_gb


def test_a_same_shape_type_whose_disk_cannot_hold_the_scratch_is_left_out():
    from sandbox_fleet.plan.catalog import find_type, load_catalog
    from sandbox_fleet.plan.k8s.manifests import same_shape

    node = find_type(load_catalog(), "aws-m6id.8xlarge")
    # m5d.8xlarge has 1,117 GiB of NVMe: in at 1,000 GiB of scratch per node, out at 1,200
    assert [s.instance_type for s in same_shape(node, 1000.0)] == ["m5d.8xlarge", "m5dn.8xlarge"]
    assert same_shape(node, 1200.0) == []


def test_taints_tolerations_runtime_class_and_priority_match():
    plan = _plan(PUBLISHED, node_type="aws-m6id.24xlarge", price_tier="on_demand")
    docs = _docs(plan, _opts(name="rl-a", runtime_class="kata"))
    (pool,) = docs["nodepool.yaml"]
    (tmpl,) = docs["sandboxtemplate.yaml"]
    (prio,) = docs["priorityclass.yaml"]
    (ns,) = docs["namespace.yaml"]
    taint = pool["spec"]["template"]["spec"]["taints"][0]
    pod = tmpl["spec"]["podTemplate"]["spec"]
    tol = pod["tolerations"][0]
    assert (tol["key"], tol["value"], tol["effect"], tol["operator"]) == (taint["key"], taint["value"], taint["effect"], "Equal")
    assert pod["nodeSelector"] == pool["spec"]["template"]["metadata"]["labels"] == {"sandbox-fleet/pool": "rl-a"}
    assert pod["runtimeClassName"] == "kata" and pod["priorityClassName"] == prio["metadata"]["name"] == "rl-a-sandbox"
    assert prio["value"] == 100000 and prio["preemptionPolicy"] == "Never" and prio["globalDefault"] is False
    assert ns["metadata"]["name"] == tmpl["metadata"]["namespace"] == "rl-a"
    assert pool["metadata"]["name"] == "rl-a"
    assert pod["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "2048Mi", "ephemeral-storage": "6144Mi"}
    (claim,) = docs["sandboxclaim-example.yaml"]
    (warm,) = docs["sandboxwarmpool.yaml"]
    assert claim["spec"]["warmPoolRef"]["name"] == warm["metadata"]["name"] == tmpl["metadata"]["name"]


def test_default_names_come_from_the_plan_so_two_plans_do_not_collide():
    a = _docs(_plan(PUBLISHED, node_type="aws-m6id.24xlarge", price_tier="on_demand"))
    b = _docs(_plan(PUBLISHED, node_type="aws-m6id.24xlarge", price_tier="on_demand", concurrency=100))
    assert a["nodepool.yaml"][0]["metadata"]["name"] == "sf-m6id-24xlarge-3000"
    assert b["nodepool.yaml"][0]["metadata"]["name"] == "sf-m6id-24xlarge-100"
    assert a["nodeclass.yaml"][0]["metadata"]["name"] == "sf-m6id-24xlarge-3000"


# --- a mixed-request plan on Azure -------------------------------------------------------------------


def test_mixed_request_plan_on_azure():
    plan = _plan(MIXED, node_type="azure-D96ds_v5", price_tier="spot")
    docs = _docs(plan, _opts(node_class="sandboxes", provision_s=60.0))
    checked = _validate_all(docs, "azure")
    assert set(checked) == {"AKSNodeClass", "NodePool", "SandboxTemplate", "SandboxWarmPool", "SandboxClaim"}
    (spot,) = docs["nodepool.yaml"]
    spec = spot["spec"]["template"]["spec"]
    assert spec["nodeClassRef"] == {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "sandboxes"}
    assert spec["requirements"][0]["values"] == ["Standard_D96ds_v5", "Standard_D96ads_v5"]
    (nc,) = docs["nodeclass.yaml"]
    # the OS disk holds a full node's scratch (the plan's storage line) + reserve + 20 GiB OS
    reserve_gb = (plan["nodes"]["reserve"]["disk_mb"] or 0) / 1024
    assert nc["spec"]["osDiskSizeGB"] == math.ceil(plan["storage"]["per_node_gb"] + reserve_gb - 1e-9) + 20
    mix = {(m["cpu"], m["memory"]): m for m in plan["nodes"]["mix"]}
    templates, pools = docs["sandboxtemplate.yaml"], docs["sandboxwarmpool.yaml"]
    assert len(templates) == len(pools) == len(mix) == 4
    for tmpl, warm in zip(templates, pools):
        res = tmpl["spec"]["podTemplate"]["spec"]["containers"][0]["resources"]["requests"]
        kind = mix[(_cpu(res["cpu"]), _mib(res["memory"]))]
        assert _mib(res["ephemeral-storage"]) == kind["disk"]
        assert warm["spec"]["sandboxTemplateRef"]["name"] == tmpl["metadata"]["name"]
    assert sum(w["spec"]["replicas"] for w in pools) == math.ceil(plan["starts"]["peak_per_s"] * 60.0 - 1e-9)
    assert spot["spec"]["limits"]["cpu"] == str(plan["nodes"]["count"] * 96)


def test_every_file_opens_with_the_plans_basis():
    plan = _plan(MIXED, node_type="aws-m6id.8xlarge", price_tier="on_demand")
    texts = build_manifests(as_plan(plan), _opts())
    assert tuple(texts) == FILES
    for text in texts.values():
        head = text.split("---", 1)[0]
        assert "source summary:" in head and "target: 400 concurrent sandboxes (measured-peak" in head
        assert f"BUY {plan['nodes']['count']} x aws-m6id.8xlarge" in head and "isolation: runc" in head


def test_split_warm_by_largest_remainder():
    from sandbox_fleet.plan.k8s.manifests import split_warm

    parts = [({}, 240), ({}, 120), ({}, 32), ({}, 8)]  # the mixed corpus at 400
    # 5 x (0.6, 0.3, 0.08, 0.02) = 3.0, 1.5, 0.4, 0.1 -> floors 3, 1, 0, 0, one left for the 0.5 remainder
    assert split_warm(5, parts) == [3, 2, 0, 0]
    assert split_warm(0, parts) == [0, 0, 0, 0]
    assert split_warm(400, parts) == [240, 120, 32, 8]


# --- the validator is not vacuous -----------------------------------------------------------------------


def _one(kind: str, tier: str = "spot") -> dict:
    plan = _plan(PUBLISHED, node_type="aws-m6id.24xlarge", price_tier=tier)
    return next(d for objs in _docs(plan).values() for d in objs if d["kind"] == kind)


@pytest.mark.parametrize("mutate,needle", [
    (lambda d: d["spec"]["disruption"].update(consolidationPolicy="WhenUnderutilized"), "not one of"),
    (lambda d: d["spec"]["limits"].update(memory="12 GiB"), "does not match"),
    (lambda d: d["spec"].update(replicas=3), "rule failed"),  # CEL: replicas excludes weight
    (lambda d: d["spec"]["template"]["spec"].update(nodeclass="x"), "unknown field"),
    (lambda d: d["spec"]["template"]["spec"]["requirements"].append(
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["x"]}), "rule failed"),
    (lambda d: d["spec"]["template"]["spec"]["requirements"][0].update(values=[]), "rule failed"),
])
def test_the_validator_rejects_what_the_api_server_would(crds, mutate, needle):
    bad = copy.deepcopy(_one("NodePool"))
    mutate(bad)
    with pytest.raises(Invalid, match=needle):
        validate(bad, "set-aws")


def test_the_validator_refuses_deprecated_versions_and_bad_node_classes(crds):
    tmpl = copy.deepcopy(_one("SandboxTemplate"))
    tmpl["apiVersion"] = "extensions.agents.x-k8s.io/v1alpha1"
    with pytest.raises(Invalid, match="deprecat"):
        validate(tmpl, "set-aws")
    nc = copy.deepcopy(_one("EC2NodeClass"))
    nc["spec"]["instanceProfile"] = "x"  # CEL: role and instanceProfile are exclusive
    with pytest.raises(Invalid, match="rule failed"):
        validate(nc, "set-aws")
    nc = copy.deepcopy(_one("EC2NodeClass"))
    nc["spec"]["amiSelectorTerms"] = [{"alias": "ubuntu@latest"}]  # CEL with split(): not a known family
    with pytest.raises(Invalid, match="rule failed"):
        validate(nc, "set-aws")
    claim = copy.deepcopy(_one("SandboxClaim"))
    del claim["spec"]["warmPoolRef"]
    with pytest.raises(Invalid, match="required"):
        validate(claim, "set-aws")


# --- writing, and bad input ------------------------------------------------------------------------


def test_emit_writes_every_file_and_refuses_a_non_empty_folder(tmp_path):
    plan = _plan(PUBLISHED, node_type="aws-m6id.24xlarge")
    written = emit_k8s(as_plan(plan), tmp_path / "k8s", _opts())
    assert sorted(p.name for p in written) == sorted(FILES) == sorted(p.name for p in (tmp_path / "k8s").iterdir())
    with pytest.raises(InputError, match="not empty"):
        emit_k8s(as_plan(plan), tmp_path / "k8s", _opts())
    assert len(emit_k8s(as_plan(plan), tmp_path / "k8s", _opts(), force=True)) == len(FILES)


@pytest.mark.parametrize("flag,value,needle", [
    ("--k8s-node-class", "", "--k8s-node-class: empty"),
    ("--k8s-node-class", "Sandboxes", "DNS-1123"),
    ("--k8s-node-class", "a\nb: c", "DNS-1123"),
    ("--k8s-name", "x" * 41, "at most 40"),
    ("--k8s-namespace", "a_b", "DNS-1123"),
    ("--k8s-image", 'img"\nkind: Secret', "--k8s-image"),
    ("--k8s-image", "", "--k8s-image"),
    ("--k8s-runtime-class", "", "--k8s-runtime-class"),
    ("--k8s-cluster", "a b", "--k8s-cluster"),
    ("--k8s-provision-s", "0", "--k8s-provision-s"),
])
def test_cli_bad_names_one_line_exit_2_nothing_written(run_cli, tmp_path, flag, value, needle):
    out = tmp_path / "k8s"
    res = run_cli("plan", PUBLISHED, "--node-type", "aws-m6id.24xlarge", "--emit-k8s", out, "--k8s-cluster", CLUSTER,
                  flag, value)
    assert res.code == 2, res.err
    assert len(res.err.strip().splitlines()) == 1 and needle in res.err, res.err
    assert not out.exists() or not any(out.iterdir())


def test_cli_unsupported_types_one_line_exit_2(run_cli, tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("x")
    cases = [
        (["--node-type", "aws-m6id.24xlarge", "--emit-k8s", full], "not empty"),
        (["--node-type", "gcp-n2d-standard-96-lssd", "--emit-k8s", tmp_path / "g"], "provider 'gcp'"),
        (["--node-type", "seed-96c", "--emit-k8s", tmp_path / "s"], "no provider/instance_type"),
    ]
    for args, needle in cases:
        res = run_cli("plan", PUBLISHED, *args, "--k8s-cluster", CLUSTER)
        assert res.code == 2, (args, res.err)
        assert len(res.err.strip().splitlines()) == 1 and needle in res.err, res.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]
    assert [p.name for p in full.iterdir()] == ["keep.txt"]


def test_without_node_type_emit_k8s_picks_the_cheapest_supported_type(run_cli, tmp_path):
    """Spot, no --node-type: GCP's $0.85/h is the cheapest overall; with --emit-k8s the plan keeps to
    AWS and Azure and picks Azure's D96ds_v5 ($0.95/h), the cheapest of those for 32 nodes."""
    res = run_cli("plan", PUBLISHED, "--price-tier", "spot", "--json")
    assert json.loads(res.out)["nodes"]["type"] == "gcp-n2d-standard-96-lssd"
    res = run_cli("plan", PUBLISHED, "--price-tier", "spot", "--emit-k8s", tmp_path / "k8s", "--k8s-cluster", CLUSTER, "--json")
    assert res.code == 0, res.err
    plan = json.loads(res.out)
    assert plan["nodes"]["type"] == "azure-D96ds_v5"
    assert any("limited to aws, azure" in n for n in plan["notes"])
    _validate_all({"x": [d for f in FILES for d in yaml.safe_load_all((tmp_path / "k8s" / f).read_text())]}, "azure")


def test_a_summary_path_with_a_newline_stays_in_the_comment(tmp_path):
    odd = tmp_path / "we\nird: yes\n---\nkind: Secret.json"
    odd.write_text(PUBLISHED.read_text())
    from sandbox_fleet.measure import load_measure
    from sandbox_fleet.plan import make_plan

    plan = make_plan(load_measure(odd), PlanOptions(node_type="aws-m6id.24xlarge"), input_path=odd)
    for text in build_manifests(as_plan(plan), _opts()).values():
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
        assert all(d["kind"] != "Secret" for d in docs) and "we\\x0aird" in text


def test_cli_force_overwrites_and_output_is_deterministic(run_cli, tmp_path):
    out = tmp_path / "k8s"
    res = run_cli("plan", PUBLISHED, "--node-type", "azure-D96ds_v5", "--emit-k8s", out, "--k8s-cluster", CLUSTER, "--json")
    assert res.code == 0, res.err
    first = {p.name: p.read_text() for p in out.iterdir()}
    res = run_cli("plan", PUBLISHED, "--node-type", "azure-D96ds_v5", "--emit-k8s", out, "--k8s-cluster", CLUSTER, "--force", "--json")
    assert res.code == 0, res.err
    assert {p.name: p.read_text() for p in out.iterdir()} == first


# --- runtime, node image and cluster (issue 41, Day 2) ----------------------------------------------


def test_runc_by_default_no_runtime_class_and_no_user_data(crds):
    plan = _plan(PUBLISHED, node_type="aws-m6id.24xlarge", price_tier="on_demand")
    docs = _docs(plan)
    assert "runtimeclass.yaml" not in docs
    (tmpl,) = docs["sandboxtemplate.yaml"]
    assert "runtimeClassName" not in tmpl["spec"]["podTemplate"]["spec"]  # the node's default runtime: runc
    (nc,) = docs["nodeclass.yaml"]
    assert "userData" not in nc["spec"]
    _validate_all(docs, "aws")


def test_gvisor_opt_in_writes_its_runtime_class_and_a_node_class_that_installs_it(crds):
    plan = _plan(PUBLISHED, node_type="aws-m6id.24xlarge", price_tier="spot")
    docs = _docs(plan, _opts(name="rl", runtime_class="gvisor", ami_alias="al2023@v20240807"))
    (rc,) = docs["runtimeclass.yaml"]
    (tmpl,) = docs["sandboxtemplate.yaml"]
    (pool,) = docs["nodepool.yaml"]
    (nc,) = docs["nodeclass.yaml"]
    pod = tmpl["spec"]["podTemplate"]["spec"]
    assert rc["apiVersion"] == "node.k8s.io/v1" and rc["kind"] == "RuntimeClass"
    assert pod["runtimeClassName"] == rc["metadata"]["name"] == "gvisor"
    # containerd's runtime name the user data registers is the RuntimeClass's handler
    assert rc["handler"] == "runsc" and ".containerd.runtimes.runsc]" in nc["spec"]["userData"]
    assert 'runtime_type = "io.containerd.runsc.v1"' in nc["spec"]["userData"]
    # scheduled onto the nodes that install it: the pool's label and a toleration of its taint
    assert rc["scheduling"]["nodeSelector"] == pool["spec"]["template"]["metadata"]["labels"]
    taint = pool["spec"]["template"]["spec"]["taints"][0]
    (tol,) = rc["scheduling"]["tolerations"]
    assert (tol["key"], tol["value"], tol["effect"]) == (taint["key"], taint["value"], taint["effect"])
    # AL2023 user data is MIME multi-part (Karpenter merges its NodeConfig); binaries checked by sha512
    ud = nc["spec"]["userData"]
    assert ud.startswith("MIME-Version: 1.0\nContent-Type: multipart/mixed;") and ud.endswith("--//--\n")
    assert "sha512sum -c runsc.sha512 -c containerd-shim-runsc-v1.sha512" in ud
    script = ud.split('charset="us-ascii"\n\n', 1)[1].rsplit("--//--", 1)[0]
    import subprocess

    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0  # the script parses
    assert nc["spec"]["amiSelectorTerms"] == [{"alias": "al2023@v20240807"}]
    checked = _validate_all(docs, "aws")  # RuntimeClass is core (v1), not a CRD
    assert checked["EC2NodeClass"][0][0]["spec"]["userData"] == ud
    head = build_manifests(as_plan(plan), _opts(runtime_class="gvisor"))["nodeclass.yaml"].split("---", 1)[0]
    assert "runtimeclass.yaml (handler runsc" in head and "NOT pinned" in head


def test_the_ami_alias_is_pinned_by_flag_and_checked_against_the_real_crd(crds):
    plan = _plan(PUBLISHED, node_type="aws-m6id.24xlarge")
    for alias in ("al2023@v20240807", "bottlerocket@v1.20.3", "al2023@latest"):
        docs = _docs(plan, _opts(ami_alias=alias))
        (nc,) = docs["nodeclass.yaml"]
        assert nc["spec"]["amiSelectorTerms"] == [{"alias": alias}]
        _validate_all({"nodeclass.yaml": [nc]}, "aws")
        head = build_manifests(as_plan(plan), _opts(ami_alias=alias))["nodeclass.yaml"].split("---", 1)[0]
        assert ("(pinned)" in head) == (not alias.endswith("@latest"))


@pytest.mark.parametrize("args,needle", [
    ([], "--k8s-cluster: required"),
    (["--k8s-cluster", "c1", "--k8s-ami-alias", "al2023"], "family@version"),
    (["--k8s-cluster", "c1", "--k8s-ami-alias", "ubuntu@latest"], "family@version"),
    (["--k8s-cluster", "c1", "--k8s-runtime-class", "gvisor", "--k8s-ami-alias", "bottlerocket@latest"], "Bottlerocket"),
])
def test_cli_cluster_required_and_bad_runtime_or_alias_one_line_exit_2(run_cli, tmp_path, args, needle):
    out = tmp_path / "k8s"
    res = run_cli("plan", PUBLISHED, "--node-type", "aws-m6id.24xlarge", "--emit-k8s", out, *args)
    assert res.code == 2, res.err
    assert len(res.err.strip().splitlines()) == 1 and needle in res.err, res.err
    assert not out.exists() or not any(out.iterdir())


def test_gvisor_on_azure_is_refused_saying_why(run_cli, tmp_path):
    res = run_cli("plan", PUBLISHED, "--node-type", "azure-D96ds_v5", "--emit-k8s", tmp_path / "k8s",
                  "--k8s-cluster", "c1", "--k8s-runtime-class", "gvisor")
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1 and "no user data" in res.err, res.err


def test_warm_pool_is_the_plans_sized_pool_with_its_basis():
    """A released batch: the SandboxWarmPool replicas are plan/warm_pool.py's size (here 346 of a batch of
    512 with a 1,500-s cold start; tests/plan/test_warm_pool.py checks the sizing against the simulator),
    not the start-rate heuristic, its basis is in the header, and the objects pass the real CRDs."""
    plan = _plan(PUBLISHED, node_type="aws-m6id.24xlarge", price_tier="on_demand", batch=512, train_s=60.0,
                 warm_cold_start_s=1500.0)
    wp = plan["warm_pool"]
    assert wp["size"] == wp["needed"] and 0 < wp["size"] < 512 and wp["cold_start_source"] == "--k8s-provision-s"
    assert wp["lengthening_share"] <= 0.05 < wp["lengthening_without_s"] / wp["step_s"]
    docs = _docs(plan, _opts(provision_s=1500.0))
    assert sum(w["spec"]["replicas"] for w in docs["sandboxwarmpool.yaml"]) == min(wp["size"], plan["target"]["concurrency"])
    head = build_manifests(as_plan(plan), _opts(provision_s=1500.0))["sandboxwarmpool.yaml"]
    assert f"warm pool: {wp['size']:,} warm keep the step within 5%" in head
    _validate_all(docs, "aws")
