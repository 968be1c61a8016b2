"""A cloud price list turned into a node catalog (``sandbox-fleet catalog import FILE``).

Two inputs, told apart by their suffix:

- ``.json``: the AWS Price List for EC2, either a service price list ("offer") file (``products`` keyed
  by SKU with ``productFamily`` and ``attributes``; ``terms.OnDemand`` / ``terms.Reserved`` keyed by SKU,
  then by offer term, each with ``priceDimensions`` whose ``pricePerUnit.USD`` is per ``unit``; AWS
  Billing guide, "Reading the service price list file for an AWS service") or the output of
  ``aws pricing get-products`` (``PriceList``: one such product with its terms per string). A type is
  taken from plain Linux listings only (``operatingSystem`` Linux, ``tenancy`` Shared,
  ``preInstalledSw`` NA, ``capacitystatus`` Used where given); its ``vcpu``, ``memory`` ("384 GiB"),
  ``storage`` ("4 x 1425 NVMe SSD": GB, stored as GiB; "EBS only": no local disk) and ``gpu``. On-demand
  is the ``Hrs`` dimension of the OnDemand term; reserved is the ``lease`` (1yr) ``standard`` term of the
  ``purchase`` option (No Upfront), its upfront fee spread over the lease's hours. The file has no
  spot prices: spot stays unpriced.
- ``.csv``: one row per type with the columns ``COLUMNS`` names (a few spellings each).

A type whose disk is an attached volume (EBS only, or ``disk_gb`` 0) takes ``volume_gb`` and
``volume_usd_per_gb_h`` (per row in the CSV, else the arguments); without them it is skipped. Every
listing not taken is counted by reason; a value that cannot be read is one line naming the file, the
row (CSV line, JSON SKU) and the key.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from pydantic import ValidationError

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.catalog import NodeType
from sandbox_fleet.safeparse import json_loads, read_bytes, read_text

GB_PER_GIB = 1024**3 / 1e9  # EC2 lists instance storage in GB (10^9 bytes); the catalog is GiB
LEASE_HOURS = {"1yr": 365 * 24, "3yr": 3 * 365 * 24}
_PLAIN_LINUX = {"operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used"}

#: CSV columns: catalog key -> the header spellings accepted for it (case and spaces ignored).
COLUMNS: dict[str, tuple[str, ...]] = {
    "instance_type": ("instance", "instance_type", "instancetype", "type", "name"),
    "vcpus": ("vcpus", "vcpu", "cpus", "cpu", "cores"),
    "memory_gb": ("memory_gb", "memory", "memory_gib", "mem_gb", "ram_gb", "ram"),
    "disk_gb": ("disk_gb", "disk", "storage_gb", "local_disk_gb"),
    "gpus": ("gpus", "gpu"),
    "provider": ("provider", "cloud"),
    "on_demand_usd_h": ("on_demand_usd_h", "on_demand", "ondemand", "on-demand", "on_demand_price"),
    "reserved_usd_h": ("reserved_usd_h", "reserved", "reserved_price"),
    "spot_usd_h": ("spot_usd_h", "spot", "spot_price"),
    "volume_gb": ("volume_gb", "volume"),
    "volume_usd_per_gb_h": ("volume_usd_per_gb_h", "volume_usd_gb_h"),
}
_PRICES = ("on_demand_usd_h", "reserved_usd_h", "spot_usd_h")


@dataclass
class Imported:
    """The node types a price list gave, and the listings it did not, counted by reason."""

    source: str
    kind: str  # "aws-price-list" or "csv"
    #: the ``[[node]]`` entries, each validated as a NodeType
    nodes: list[dict]
    skipped: Counter = field(default_factory=Counter)
    #: what the prices are (the file's publication date and location, the reserved term)
    basis: str = ""


@dataclass(frozen=True)
class Volume:
    """The attached volume given to EBS-only types that state none of their own."""

    gb: Optional[float] = None
    usd_per_gb_h: Optional[float] = None


def import_prices(path: str | Path, *, volume: Volume = Volume(), location: Optional[str] = None,
                  lease: str = "1yr", purchase: str = "No Upfront") -> Imported:
    """The node types of the price list ``path`` (``.json``: AWS, ``.csv``: a table; see the module)."""
    p = Path(path)
    if volume.usd_per_gb_h is not None and volume.gb is None:
        raise InputError("`volume_usd_per_gb_h` needs `volume_gb` (the attached volume's GiB)")
    suffix = p.suffix.lower()
    if suffix == ".json":
        if lease not in LEASE_HOURS:
            raise InputError(f"`lease` {lease!r}: expected one of {', '.join(LEASE_HOURS)}")
        out = _aws(p, volume, location, lease, purchase)
    elif suffix == ".csv":
        out = _csv(p, volume)
    else:
        raise InputError(f"{p}: unknown price list type {suffix or '(no suffix)'!r}; expected .json (AWS price list) or .csv")
    if not out.nodes:
        reasons = "; ".join(f"{why}: {n}" for why, n in sorted(out.skipped.items())) or "no rows"
        hint = "; a type without local disk needs `volume_gb` and `volume_usd_per_gb_h`" if any("volume_gb" in r for r in out.skipped) else ""
        raise InputError(f"{p}: no node type taken ({reasons}){hint}")
    return out


# --- AWS ------------------------------------------------------------------------------------
def _offer(doc: Any, source: str) -> tuple[dict, dict, str]:
    """(products, terms, publication) of an offer file or of ``aws pricing get-products`` output."""
    if isinstance(doc, dict) and isinstance(doc.get("PriceList"), list):
        products: dict[str, Any] = {}
        terms: dict[str, dict[str, Any]] = {"OnDemand": {}, "Reserved": {}}
        for i, item in enumerate(doc["PriceList"]):
            entry = json_loads(item, f"{source}: PriceList[{i}]") if isinstance(item, str) else item
            product = entry.get("product") if isinstance(entry, dict) else None
            if not isinstance(product, dict) or not isinstance(product.get("sku"), str):
                raise InputError(f"{source}: PriceList[{i}]: expected an object with product.sku")
            products[product["sku"]] = product
            for kind in terms:
                terms[kind][product["sku"]] = (entry.get("terms") or {}).get(kind) or {}
        return products, terms, ""
    if not isinstance(doc, dict) or not isinstance(doc.get("products"), dict) or not isinstance(doc.get("terms"), dict):
        raise InputError(f"{source}: not an AWS price list (expected an offer file with 'products' and 'terms', "
                         "or `aws pricing get-products` output with 'PriceList')")
    if doc.get("offerCode") not in (None, "AmazonEC2"):
        raise InputError(f"{source}: offerCode {doc.get('offerCode')!r}; expected 'AmazonEC2' (the EC2 price list)")
    return doc["products"], doc["terms"], str(doc.get("publicationDate") or "")


def _number(text: Any, source: str, sku: str, key: str, unit: str = "") -> float:
    m = re.fullmatch(rf"\s*([0-9][0-9,]*(?:\.[0-9]+)?)\s*{unit}\s*", str(text)) if text is not None else None
    if m is None:
        raise InputError(f"{source}: product {sku}, attribute {key!r}: expected a number{f' in {unit}' if unit else ''}, got {text!r}")
    return float(m[1].replace(",", ""))


def _storage(text: Any, source: str, sku: str) -> tuple[float, bool]:
    """(local disk GiB, is NVMe instance store) of an EC2 ``storage`` attribute."""
    if isinstance(text, str) and text.strip().lower() == "ebs only":
        return 0.0, False
    m = re.fullmatch(r"\s*(\d+)\s*x\s*([0-9,]+(?:\.\d+)?)\s*(?:GB)?\s*(.*)", str(text))
    if m is None:
        raise InputError(f"{source}: product {sku}, attribute 'storage': expected 'EBS only' or 'N x SIZE [NVMe] SSD', got {text!r}")
    gb = int(m[1]) * float(m[2].replace(",", ""))
    return float(math.floor(gb / GB_PER_GIB)), "nvme" in m[3].lower()


def _hourly(term: dict, source: str, sku: str, lease_hours: Optional[float]) -> Optional[float]:
    """A term's $/h: its ``Hrs`` dimension plus, over ``lease_hours``, its upfront ``Quantity`` fee."""
    total, hourly = 0.0, False
    for code, dim in (term.get("priceDimensions") or {}).items():
        usd = (dim.get("pricePerUnit") or {}).get("USD") if isinstance(dim, dict) else None
        if usd is None:
            continue
        price = _number(usd, source, sku, f"priceDimensions.{code}.pricePerUnit.USD")
        unit = dim.get("unit")
        if unit == "Hrs":
            total, hourly = total + price, True
        elif unit == "Quantity" and lease_hours:
            total += price / lease_hours
    return total if hourly or total > 0 else None


def _tier_prices(sku: str, terms: dict, source: str, lease: str, purchase: str) -> tuple[Optional[float], Optional[float]]:
    on_demand = reserved = None
    for term in (terms.get("OnDemand", {}).get(sku) or {}).values():
        on_demand = _hourly(term, source, sku, None)
    for term in (terms.get("Reserved", {}).get(sku) or {}).values():
        attrs = term.get("termAttributes") or {}
        if (attrs.get("LeaseContractLength"), attrs.get("OfferingClass", "standard"), attrs.get("PurchaseOption")) == (lease, "standard", purchase):
            reserved = _hourly(term, source, sku, LEASE_HOURS[lease])
    return on_demand, reserved


def _aws(path: Path, volume: Volume, location: Optional[str], lease: str, purchase: str) -> Imported:
    source = str(path)
    products, terms, published = _offer(json_loads(read_bytes(path, "AWS price list"), source), source)
    skipped: Counter = Counter()
    plain = []
    for sku, product in products.items():
        product = product if isinstance(product, dict) else {}
        attrs = product.get("attributes") or {}
        if product.get("productFamily") != "Compute Instance" or "instanceType" not in attrs:
            skipped["not a compute instance"] += 1
        elif any(attrs.get(k, v if k == "capacitystatus" else None) != v for k, v in _PLAIN_LINUX.items()):
            skipped["not a plain Linux shared-tenancy listing"] += 1
        elif location is not None and attrs.get("location") != location and attrs.get("regionCode") != location:
            skipped[f"not in {location}"] += 1
        else:
            plain.append((sku, attrs))
    places = sorted({str(a.get("location")) for _, a in plain})
    if len(places) > 1:
        raise InputError(f"{source}: prices for {len(places)} locations ({', '.join(places[:4])}{', ...' if len(places) > 4 else ''}); "
                         "choose one with `location` (a location or region code)")
    nodes: list[dict] = []
    seen: set[str] = set()
    for sku, attrs in sorted(plain, key=lambda sa: str(sa[1]["instanceType"])):
        itype = str(attrs["instanceType"])
        if itype in seen:
            skipped["a second listing of the same instance type"] += 1
            continue
        on_demand, reserved = _tier_prices(sku, terms, source, lease, purchase)
        if on_demand is None and reserved is None:
            skipped["no on-demand or reserved price"] += 1
            continue
        disk_gb, nvme = _storage(attrs.get("storage"), source, sku)
        gpus = attrs.get("gpu")
        raw = {
            "name": f"aws-{itype}", "provider": "aws", "instance_type": itype,
            "description": f"{attrs.get('vcpu')} vCPU, {attrs.get('memory')}, {attrs.get('storage')}"
                           + (f", {gpus} GPU" if gpus not in (None, "0", "NA") else ""),
            "vcpus": _number(attrs.get("vcpu"), source, sku, "vcpu"),
            "memory_gb": _number(attrs.get("memory"), source, sku, "memory", "GiB"),
            "disk_gb": disk_gb, "instance_store": nvme,
            "gpus": int(_number(gpus, source, sku, "gpu")) if gpus not in (None, "NA", "") else 0,
            "on_demand_usd_h": on_demand, "reserved_usd_h": reserved,
        }
        node = _with_volume(raw, volume, skipped)
        if node is not None:
            nodes.append(_validated(node, f"{source}: product {sku}"))
            seen.add(itype)
    where = places[0] if places else (location or "?")
    basis = (f"AWS EC2 price list{f' published {published}' if published else ''}, {where}: on-demand Linux shared tenancy; "
             f"reserved {lease} standard {purchase}{' (upfront fee spread over the lease)' if purchase != 'No Upfront' else ''}; "
             "spot not in the file (unpriced)")
    return Imported(source, "aws-price-list", nodes, skipped, basis)


def _with_volume(raw: dict, volume: Volume, skipped: Counter) -> Optional[dict]:
    """``raw`` with the attached volume an EBS-only type needs (its own, else ``volume``); None (counted)
    when it has none."""
    if raw.get("volume_gb") is not None or raw["disk_gb"] > 0:
        return raw
    if volume.gb is None:
        skipped["no local disk (EBS only) and no volume_gb"] += 1
        return None
    return raw | {"volume_gb": volume.gb, "volume_usd_per_gb_h": volume.usd_per_gb_h}


def _validated(raw: dict, where: str) -> dict:
    try:
        NodeType.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "?"
        raise InputError(f"{where}, key {key!r}: {err['msg'].removeprefix('Value error, ')}") from None
    return raw


# --- CSV ------------------------------------------------------------------------------------
def _header_keys(header: list[str], source: str) -> list[str]:
    spelled = {s.replace(" ", "_").replace("-", "_"): key for key, names in COLUMNS.items() for s in names}
    spelled |= {s: key for key, names in COLUMNS.items() for s in names}
    keys = []
    for col in header:
        norm = col.strip().lower()
        key = spelled.get(norm) or spelled.get(norm.replace(" ", "_").replace("-", "_"))
        if key is None:
            raise InputError(f"{source} line 1: unknown column {col!r}; expected {', '.join(COLUMNS)} (or a spelling docs/catalog.md lists)")
        if key in keys:
            raise InputError(f"{source} line 1: column {col!r} is a second {key}")
        keys.append(key)
    for need in ("instance_type", "vcpus", "memory_gb"):
        if need not in keys:
            raise InputError(f"{source} line 1: no {need} column (columns are: {', '.join(header)})")
    if not any(k in keys for k in _PRICES):
        raise InputError(f"{source} line 1: no price column; expected at least one of {', '.join(_PRICES)}")
    return keys


def _cell(value: str, key: str, where: str) -> Any:
    text = value.strip()
    if key in ("instance_type", "provider"):
        return text or None
    if not text:
        return None
    m = re.fullmatch(r"\$?\s*([0-9][0-9,]*(?:\.[0-9]*)?(?:[eE][-+]?\d+)?)\s*(?:GiB|GB)?", text)
    if m is None:
        raise InputError(f"{where}, column {key!r}: expected a number, got {value!r}")
    number = float(m[1].replace(",", ""))
    return int(number) if key == "gpus" and number.is_integer() else number


def _csv(path: Path, volume: Volume) -> Imported:
    source = str(path)
    rows = list(csv.reader(io.StringIO(read_text(path, "price CSV"))))
    if not rows:
        raise InputError(f"{source}: empty file (expected a header and one row per node type)")
    keys = _header_keys(rows[0], source)
    nodes: list[dict] = []
    skipped: Counter = Counter()
    seen: dict[str, int] = {}
    for number, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        where = f"{source} line {number}"
        if len(row) != len(keys):
            raise InputError(f"{where}: {len(row)} cells; the header has {len(keys)}")
        cells = {k: _cell(v, k, where) for k, v in zip(keys, row)}
        itype = cells["instance_type"]
        if itype is None:
            raise InputError(f"{where}, column 'instance_type': empty; expected the instance type's name")
        if itype in seen:
            raise InputError(f"{where}: instance {itype!r} again (first on line {seen[itype]})")
        seen[itype] = number
        if all(cells.get(k) is None for k in _PRICES):
            skipped["no price"] += 1
            continue
        raw = {k: v for k, v in cells.items() if v is not None and k != "instance_type"}
        raw = {"name": itype, **({"instance_type": itype} if cells.get("provider") else {}), "disk_gb": 0.0, **raw}
        with_volume = _with_volume(raw, volume, skipped)
        if with_volume is not None:
            nodes.append(_validated(with_volume, where))
    return Imported(source, "csv", nodes, skipped, f"prices from the table {path.name}")


# --- the catalog file -----------------------------------------------------------------------
_ORDER = ("name", "provider", "instance_type", "description", "vcpus", "memory_gb", "disk_gb", "gpus", "instance_store",
          "volume_gb", "volume_usd_per_gb_h", "on_demand_usd_h", "reserved_usd_h", "spot_usd_h")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def catalog_toml(imported: Imported) -> str:
    """The catalog file of ``imported``: a header saying where the prices come from, then one
    ``[[node]]`` table per type (``plan --nodes`` reads it back to the same types)."""
    lines = [f"# Node catalog imported from {Path(imported.source).name} by `sandbox-fleet catalog import`.",
             f"# {imported.basis}.",
             "# Prices are USD per node-hour; memory_gb, disk_gb and volume_gb are GiB. Schema: `sandbox-fleet schema catalog`."]
    if imported.skipped:
        lines.append("# Listings not taken: " + "; ".join(f"{why}: {n}" for why, n in sorted(imported.skipped.items())) + ".")
    for raw in imported.nodes:
        lines += ["", "[[node]]"]
        lines += [f"{key} = {_toml_value(raw[key])}" for key in _ORDER if raw.get(key) not in (None, "")]
    return "\n".join(lines) + "\n"
