"""plan --emit-k8s: manifests parsed back with PyYAML, every field checked against the plan, and
validated against the committed JSON Schemas of the upstream CRDs (k8s_schemas/README.md)."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import jsonschema
import pytest
import yaml

from sandbox_fleet.jsonio import to_jsonable
from sandbox_fleet.plan import PlanOptions, make_plan
from sandbox_fleet.plan.k8s import FILES, K8sOptions, build_manifests, emit_k8s

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "examples" / "rst-published.json"
MIXED = Path(__file__).parent / "data" / "mixed.json"
SCHEMAS = Path(__file__).parent / "k8s_schemas"
SCHEMA_OF = {
    "NodePool": "karpenter.sh_v1_nodepool.json",
    "SandboxTemplate": "extensions.agents.x-k8s.io_v1alpha1_sandboxtemplate.json",
    "SandboxWarmPool": "extensions.agents.x-k8s.io_v1alpha1_sandboxwarmpool.json",
}


def _summary(path: Path) -> dict:
    return json.loads(path.read_text())


def _plan(path: Path, **kw) -> dict:
    return to_jsonable(make_plan(_summary(path), PlanOptions(**kw)))


def _docs(plan: dict, opts: K8sOptions | None = None) -> dict[str, list[dict]]:
    return {name: [d for d in yaml.safe_load_all(text) if d is not None]
            for name, text in build_manifests(plan, opts).items()}


def _validate(doc: dict) -> None:
    schema = json.loads((SCHEMAS / SCHEMA_OF[doc["kind"]]).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(doc)


def _quantity_cpu(q: str) -> float:
    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)


def _quantity_mib(q: str) -> float:
    assert q.endswith("Mi"), q
    return float(q[:-2])


# --- the document's campaign on AWS: one request, open workload, on-demand and spot -------------------


@pytest.mark.parametrize("tier,capacity", [("on_demand", "on-demand"), ("reserved", "on-demand"), ("spot", "spot")])
def test_nodepool_pins_type_and_capacity_type_of_the_tier(tier, capacity):
    plan = _plan(PUBLISHED, node_type="aws-m6id.24xlarge", price_tier=tier)
    docs = _docs(plan)
    (pool,) = docs["nodepool.yaml"]
    _validate(pool)
    req = {r["key"]: r for r in pool["spec"]["template"]["spec"]["requirements"]}
    assert req["node.kubernetes.io/instance-type"] == {"key": "node.kubernetes.io/instance-type", "operator": "In",
                                                         "values": ["m6id.24xlarge"]}
    assert req["karpenter.sh/capacity-type"]["values"] == [capacity]
    assert pool["spec"]["template"]["spec"]["nodeClassRef"] == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                                "name": "default"}
    assert pool["spec"]["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m"}


def test_published_campaign_warm_pool_and_limits_by_hand():
    plan = _plan(PUBLISHED, node_type="aws-m6id.24xlarge")
    assert plan["nodes"]["count"] == 32  # 3,000 sandboxes at 96 per node (the document's table)
    docs = _docs(plan, K8sOptions(provision_s=60.0))
    # open workload: mean concurrency 467.59 / mean hold 2,102.63 s = 0.2224 starts/s; x 60 s = 13.3 -> 14
    (warm,) = docs["sandboxwarmpool.yaml"]
    assert warm["spec"]["replicas"] == 14
    # 14 warm 1-cpu sandboxes need a 33rd node: limits = 33 x 96 cpu, 33 x 384 GiB
    (pool,) = docs["nodepool.yaml"]
    assert pool["spec"]["limits"] == {"cpu": "3168", "memory": "12672Gi"}
    (tmpl,) = docs["sandboxtemplate.yaml"]
    pod = tmpl["spec"]["podTemplate"]
    assert pod["metadata"]["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}
    assert pod["spec"]["nodeSelector"] == {"karpenter.sh/nodepool": pool["metadata"]["name"]}
    res = pod["spec"]["containers"][0]["resources"]
    assert res["requests"] == res["limits"] == {"cpu": "1", "memory": "2048Mi", "ephemeral-storage": "6144Mi"}
    assert warm["spec"]["sandboxTemplateRef"]["name"] == tmpl["metadata"]["name"]
    for doc in docs["sandboxtemplate.yaml"] + docs["sandboxwarmpool.yaml"]:
        _validate(doc)


def test_rl_step_start_rate_is_batch_over_release_spread():
    summary = _summary(PUBLISHED)
    summary["steps"] = {"detected": True, "batch_size": 512, "release_spread_s": 64.0}
    plan = to_jsonable(make_plan(summary, PlanOptions(node_type="aws-m6id.24xlarge", price_tier="spot")))
    assert plan["starts"]["peak_per_s"] == 8.0
    # 8 starts/s x 30 s = 240; x 600 s = 4,800 capped at the target 3,000
    assert _docs(plan, K8sOptions(provision_s=30.0))["sandboxwarmpool.yaml"][0]["spec"]["replicas"] == 240
    assert _docs(plan, K8sOptions(provision_s=600.0))["sandboxwarmpool.yaml"][0]["spec"]["replicas"] == 3000
    summary["steps"]["release_spread_s"] = 0.0  # released at once: the whole batch
    plan = to_jsonable(make_plan(summary, PlanOptions(node_type="aws-m6id.24xlarge")))
    assert _docs(plan)["sandboxwarmpool.yaml"][0]["spec"]["replicas"] == 512


# --- a mixed-request plan on Azure --------------------------------------------------------------------


def test_mixed_request_plan_gets_one_template_and_warm_pool_per_kind():
    plan = _plan(MIXED, node_type="azure-D96ds_v5", price_tier="spot")
    docs = _docs(plan, K8sOptions(node_class="sandboxes", provision_s=60.0))
    for name in FILES:
        for doc in docs[name]:
            _validate(doc)
    (pool,) = docs["nodepool.yaml"]
    spec = pool["spec"]["template"]["spec"]
    assert spec["nodeClassRef"] == {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "sandboxes"}
    assert spec["requirements"][0]["values"] == ["Standard_D96ds_v5"]
    assert spec["requirements"][1]["values"] == ["spot"]
    mix = {(m["cpu"], m["memory"]): m for m in plan["nodes"]["mix"]}
    templates, pools = docs["sandboxtemplate.yaml"], docs["sandboxwarmpool.yaml"]
    assert len(templates) == len(pools) == len(mix) == 4
    seen = set()
    for tmpl, warm in zip(templates, pools):
        res = tmpl["spec"]["podTemplate"]["spec"]["containers"][0]["resources"]["requests"]
        key = (_quantity_cpu(res["cpu"]), _quantity_mib(res["memory"]))
        kind = mix[key]
        assert _quantity_mib(res["ephemeral-storage"]) == kind["disk"]
        assert warm["spec"]["sandboxTemplateRef"]["name"] == tmpl["metadata"]["name"]
        assert 0 <= warm["spec"]["replicas"] <= kind["concurrent"]
        seen.add(key)
    assert seen == set(mix)
    # the warm pool, ceil(peak start rate x 60 s), is shared by largest remainder: it sums exactly
    total = math.ceil(plan["starts"]["peak_per_s"] * 60.0 - 1e-9)
    assert sum(w["spec"]["replicas"] for w in pools) == total
    # limits cover the planned nodes plus the warm pool's cpu and memory
    warm_cpu = sum(_quantity_cpu(t["spec"]["podTemplate"]["spec"]["containers"][0]["resources"]["requests"]["cpu"])
                   * w["spec"]["replicas"] for t, w in zip(templates, pools))
    limits = pool["spec"]["limits"]
    assert _quantity_cpu(limits["cpu"]) >= plan["nodes"]["count"] * 96 + warm_cpu
    assert _quantity_cpu(limits["cpu"]) % 96 == 0 and int(limits["memory"][:-2]) % 384 == 0


def test_every_file_opens_with_the_plans_basis():
    plan = _plan(MIXED, node_type="aws-m6id.8xlarge", price_tier="on_demand")
    for text in build_manifests(plan).values():
        head = text.split("---", 1)[0]
        assert "source summary:" in head and "target: 400 concurrent sandboxes (measured-peak" in head
        assert "tier on_demand -> capacity type on-demand" in head and "aws-m6id.8xlarge" in head


def test_schemas_reject_what_the_cluster_would():
    """The committed schemas are not vacuous: a wrong policy, a bad quantity, a missing ref fail."""
    plan = _plan(PUBLISHED, node_type="aws-m6id.24xlarge")
    docs = _docs(plan)
    bad = copy.deepcopy(docs["nodepool.yaml"][0])
    bad["spec"]["disruption"]["consolidationPolicy"] = "WhenUnderutilized"  # a v1beta1 value
    with pytest.raises(jsonschema.ValidationError):
        _validate(bad)
    bad = copy.deepcopy(docs["nodepool.yaml"][0])
    bad["spec"]["limits"]["memory"] = "12 GiB"
    with pytest.raises(jsonschema.ValidationError):
        _validate(bad)
    bad = copy.deepcopy(docs["sandboxwarmpool.yaml"][0])
    del bad["spec"]["sandboxTemplateRef"]
    with pytest.raises(jsonschema.ValidationError):
        _validate(bad)


def test_split_warm_by_largest_remainder():
    from sandbox_fleet.plan.k8s.manifests import split_warm

    parts = [({}, 240), ({}, 120), ({}, 32), ({}, 8)]  # the mixed corpus at 400
    # 5 x (0.6, 0.3, 0.08, 0.02) = 3.0, 1.5, 0.4, 0.1 -> floors 3, 1, 0, 0, one left for the 0.5 remainder
    assert split_warm(5, parts) == [3, 2, 0, 0]
    assert split_warm(0, parts) == [0, 0, 0, 0]
    assert split_warm(400, parts) == [240, 120, 32, 8]


# --- writing, and bad input ------------------------------------------------------------------------


def test_emit_writes_three_files_and_refuses_a_non_empty_folder(tmp_path):
    plan = _plan(PUBLISHED, node_type="aws-m6id.24xlarge")
    written = emit_k8s(plan, tmp_path / "k8s")
    assert sorted(p.name for p in written) == sorted(FILES) == sorted(p.name for p in (tmp_path / "k8s").iterdir())
    from sandbox_fleet.errors import InputError

    with pytest.raises(InputError, match="not empty"):
        emit_k8s(plan, tmp_path / "k8s")
    assert len(emit_k8s(plan, tmp_path / "k8s", force=True)) == 3


def test_cli_bad_inputs_one_line_exit_2(run_cli, tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("x")
    cases = [
        (["--node-type", "aws-m6id.24xlarge", "--emit-k8s", full], "not empty"),
        (["--node-type", "gcp-n2d-standard-96-lssd", "--emit-k8s", tmp_path / "g"], "provider 'gcp'"),
        (["--node-type", "seed-96c", "--emit-k8s", tmp_path / "s"], "no provider/instance_type"),
        (["--node-type", "aws-m6id.24xlarge", "--emit-k8s", tmp_path / "p", "--k8s-provision-s", "0"], "--k8s-provision-s"),
    ]
    for args, needle in cases:
        res = run_cli("plan", PUBLISHED, *args)
        assert res.code == 2, (args, res.err)
        assert len(res.err.strip().splitlines()) == 1 and needle in res.err, res.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]  # nothing written on refusal
    assert [p.name for p in full.iterdir()] == ["keep.txt"]


def test_cli_force_overwrites_and_output_is_deterministic(run_cli, tmp_path):
    out = tmp_path / "k8s"
    res = run_cli("plan", PUBLISHED, "--node-type", "azure-D96ds_v5", "--emit-k8s", out, "--json")
    assert res.code == 0, res.err
    first = {p.name: p.read_text() for p in out.iterdir()}
    res = run_cli("plan", PUBLISHED, "--node-type", "azure-D96ds_v5", "--emit-k8s", out, "--force", "--json")
    assert res.code == 0, res.err
    assert {p.name: p.read_text() for p in out.iterdir()} == first
    assert math.isfinite(json.loads(res.out)["starts"]["peak_per_s"])
