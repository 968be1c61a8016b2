"""Own prices (issue 41): attached-volume types, line-numbered catalog errors, ``catalog check``,
``catalog import`` from an AWS price list and a CSV, ``schema catalog``. Expected figures are worked
by hand from the fixture's and the test's own numbers."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.catalog import load_catalog, parse_catalog
from sandbox_fleet.plan.catalog_check import check_catalog
from sandbox_fleet.plan.catalog_import import Volume, catalog_toml, import_prices
from sandbox_fleet.plan.catalog_lines import key_line
from sandbox_fleet.schemas import schema_text

AWS = Path(__file__).resolve().parents[1] / "fixtures" / "prices" / "aws_ec2_offer.json"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "schemas" / "catalog.schema.json"
EBS = '[[node]]\nname = "ebs"\nvcpus = 16\nmemory_gb = 64\ndisk_gb = 0\non_demand_usd_h = 0.80\nspot_usd_h = 0.30\n'


def test_an_attached_volume_is_disk_and_is_priced_into_every_tier():
    (node,) = parse_catalog(EBS + "volume_gb = 200\nvolume_usd_per_gb_h = 0.0001\n", "v.toml")
    assert node.capacity["disk"] == 200 * 1024
    assert node.price("on_demand") == pytest.approx(0.80 + 200 * 0.0001)
    assert node.price("spot") == pytest.approx(0.30 + 0.02)
    assert node.price("reserved") is None  # no listed price: the volume alone prices nothing


def test_ebs_only_without_a_volume_is_refused_at_its_disk_line(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text(EBS)
    with pytest.raises(InputError) as exc:
        check_catalog(f)
    msg = str(exc.value)
    assert f"{f} line 5:" in msg and "leaves no disk" in msg and "volume_gb" in msg  # disk_gb = 0 is line 5


def test_a_priced_volume_needs_its_price_and_names_its_line():
    with pytest.raises(InputError, match=r"v\.toml line 8: node entry 'ebs', key 'volume_gb': .*volume_usd_per_gb_h"):
        parse_catalog(EBS + "volume_gb = 200\n", "v.toml")


def test_a_bad_value_and_an_unknown_key_name_their_line():
    text = '[[node]]\nname = "a"\nvcpus = 1\nmemory_gb = 1\ndisk_gb = 1\n\n[[node]]\nname = "b"\nvcpus = 4\nmemory_gb = 8\ndisk_gb = 1\nspot_usd_h = -1\n'
    with pytest.raises(InputError, match=r"^c\.toml line 12: node entry 'b', key 'spot_usd_h'"):
        parse_catalog(text, "c.toml")
    typo = text.replace("spot_usd_h = -1", "on_demand_usd = 2")
    with pytest.raises(InputError, match=r"line 12: .*'on_demand_usd': unknown key \(did you mean 'on_demand_usd_h'\?"):
        parse_catalog(typo, "c.toml")


def test_key_line_scans_the_right_table():
    text = '# c\n[[node]]\nname = "a"\n\n[[node]]\n"name" = "b"\nvcpus = 2\n[[gpu]]\nvcpus = 9\n'
    assert key_line(text, "node", 0, "name") == 3
    assert key_line(text, "node", 1, "name") == 6
    assert key_line(text, "node", 1, "vcpus") == 7
    assert key_line(text, "node", 0, "vcpus") == 2  # absent: the entry's header
    assert key_line(text, "node", 2, "vcpus") is None


def test_aws_price_list_import_by_hand():
    got = import_prices(AWS, volume=Volume(500, 0.0001096))
    by = {e["instance_type"]: e for e in got.nodes}
    assert sorted(by) == ["g6.12xlarge", "m6i.24xlarge", "m6id.24xlarge"]
    # 4 x 1425 GB = 5.7e12 B = 5308.5 GiB, floored as the bundled catalog lists m6id.24xlarge
    assert by["m6id.24xlarge"]["disk_gb"] == 5308 and by["m6id.24xlarge"]["instance_store"]
    assert by["g6.12xlarge"]["disk_gb"] == 3501 and by["g6.12xlarge"]["gpus"] == 4
    assert by["m6i.24xlarge"]["on_demand_usd_h"] == 4.608 and by["m6i.24xlarge"]["reserved_usd_h"] == 2.903
    assert by["m6i.24xlarge"]["disk_gb"] == 0 and by["m6i.24xlarge"]["volume_gb"] == 500
    assert by["g6.12xlarge"].get("reserved_usd_h") is None  # no reserved term in the file
    # the Windows listing, the unused capacity reservation, the gp3 volume product
    assert got.skipped == {"not a plain Linux shared-tenancy listing": 2, "not a compute instance": 1}
    assert "spot not in the file" in got.basis


def test_aws_partial_upfront_spreads_the_fee_over_the_lease_and_3yr_is_its_own_term():
    got = import_prices(AWS, volume=Volume(500, 0.0001), purchase="Partial Upfront")
    m6i = next(e for e in got.nodes if e["instance_type"] == "m6i.24xlarge")
    assert m6i["reserved_usd_h"] == pytest.approx(1.207 + 12424 / 8760)
    three = next(e for e in import_prices(AWS, volume=Volume(500, 0.0001), lease="3yr").nodes if e["instance_type"] == "m6i.24xlarge")
    assert three["reserved_usd_h"] == 1.995


def test_aws_ebs_only_types_are_skipped_and_counted_without_a_volume():
    got = import_prices(AWS)
    assert "m6i.24xlarge" not in {e["instance_type"] for e in got.nodes}
    assert got.skipped["no local disk (EBS only) and no volume_gb"] == 1


def test_get_products_output_and_location(tmp_path):
    doc = json.loads(AWS.read_text())
    # get-products: one product per string, its terms keyed by SKU.offerTermCode (no SKU level)
    items = [json.dumps({"product": doc["products"][sku], "terms": {k: doc["terms"][k].get(sku, {}) for k in ("OnDemand", "Reserved")}})
             for sku in doc["products"]]
    f = tmp_path / "get-products.json"
    f.write_text(json.dumps({"FormatVersion": "aws_v1", "PriceList": items}))
    assert {e["name"] for e in import_prices(f).nodes} == {"aws-m6id.24xlarge", "aws-g6.12xlarge"}
    with pytest.raises(InputError, match="no node type taken"):
        import_prices(f, location="eu-west-1")


def test_imported_catalog_reads_back_and_plan_accepts_it(tmp_path):
    got = import_prices(AWS, volume=Volume(500, 0.0001096))
    out = tmp_path / "aws.toml"
    out.write_text(catalog_toml(got))
    checked = {c.node.name: c for c in check_catalog(out)}
    m6i = checked["aws-m6i.24xlarge"]
    assert m6i.usable_disk_gb == 500 and m6i.usd_h["on_demand"] == pytest.approx(4.608 + 500 * 0.0001096)


def test_csv_import_aliases_rows_and_errors(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("Instance,vCPU,Memory,On-Demand,spot\nbig,96,384 GiB,5.5,1.9\nfree,8,16,,\n")
    got = import_prices(f, volume=Volume(100, 0.0001))
    (entry,) = got.nodes
    assert entry == {"name": "big", "disk_gb": 0.0, "vcpus": 96.0, "memory_gb": 384.0, "on_demand_usd_h": 5.5, "spot_usd_h": 1.9,
                     "volume_gb": 100, "volume_usd_per_gb_h": 0.0001}
    assert got.skipped == {"no price": 1}
    f.write_text("instance,vcpu,memory,on_demand\na,4,16,0.2\nb,four,16,0.2\n")
    with pytest.raises(InputError, match=r"p\.csv line 3, column 'vcpus': expected a number, got 'four'"):
        import_prices(f)
    f.write_text("instance,vcpu,memory,price_per_hour\na,4,16,0.2\n")
    with pytest.raises(InputError, match=r"p\.csv line 1: unknown column 'price_per_hour'"):
        import_prices(f)


def test_schema_catalog_is_committed_and_validates_the_bundled_catalog():
    import tomllib
    from importlib import resources

    assert DOCS.read_text(encoding="utf-8") == schema_text("catalog")
    schema = json.loads(schema_text("catalog"))
    jsonschema.Draft202012Validator.check_schema(schema)
    bundled = tomllib.loads(resources.files("sandbox_fleet").joinpath("data/nodes.toml").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(bundled)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate({"node": [{"name": "x", "vcpus": 1, "memory_gb": 1, "disk_gb": 1, "price": 2}]})
    assert len(load_catalog()) == len(bundled["node"])


def test_cli_catalog_errors_are_one_line_exit_2(tmp_path, run_cli):
    f = tmp_path / "c.toml"
    f.write_text(EBS)
    r = run_cli("catalog", "check", f)
    assert r.code == 2 and r.err.count("\n") == 1 and "line 5" in r.err
    r = run_cli("catalog", "import", AWS, "-o", tmp_path / "x.toml", "--volume-usd-per-gb-h", "0.1")
    assert r.code == 2 and "--volume-gb" in r.err and r.err.count("\n") == 1
    assert not (tmp_path / "x.toml").exists()
