"""`plan`'s default text is the decision on one screen; `--detail` the whole order; `--csv` rows.

The figures the short text prints are checked against the plan's JSON (the same run's ``--json``),
recomputed here from its parts (the all-in $/h is the sum of the tier's fleet price, the GPU node
pools, the inference GPUs and the trainer), never read back from the text's own renderer.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import MIXED, PUBLISHED

ROOT = Path(__file__).resolve().parents[2]


def _plan(*args: str, columns: int = 80, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": str(columns)}
    env.pop("NO_COLOR", None)
    return subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", "plan", *map(str, args)], env=env,
                          capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def demo_measure(tmp_path_factory) -> Path:
    """The demo's measure output: the bundled synthetic corpus (demo.py's scale and seed) measured
    with its tasks, as ``./dev demo`` writes ``out/measure.json``."""
    from sandbox_fleet import jsonio
    from sandbox_fleet.measure import measure_paths
    from sandbox_fleet.synth.cache import default_corpus

    out = tmp_path_factory.mktemp("demo")
    corpus = default_corpus(out / "cache", progress=False)
    measured = measure_paths([str(corpus / "trajectories")], tasks=str(corpus / "tasks"), progress=False,
                             cache_dir=str(out / "cache" / "tasks-cache"))
    path = out / "measure.json"
    jsonio.write(measured.to_json(), path)
    return path


def _money(text: str) -> float:
    return float(text.replace("$", "").replace(",", ""))


def _all_in(cost: dict) -> float:
    """The all-in $/h from the JSON's parts: the headline tier's fleet price + GPU node pools +
    inference GPUs + trainer (per pass x passes per hour)."""
    total = cost[f"{cost['tier']}_per_h"]
    total += cost.get("node_pools_per_h") or 0.0
    total += cost.get("inference_per_h") or 0.0
    parts = cost.get("per_passing_trajectory_parts") or {}
    if parts.get("trainer") is not None and cost.get("passing_per_h"):
        total += parts["trainer"] * cost["passing_per_h"]
    return total


def _check_figures(text: str, p: dict) -> None:
    """Every decision figure of the short ``text`` equals the plan JSON ``p``'s, rounded as printed."""
    flat = " ".join(line.strip() for line in text.splitlines())  # a folded line read whole
    nd, co = p["nodes"], p["cost"]
    m = re.search(r"BUY ([\d,]+) x (\S+) at peak \(lower bound ([\d,]+)\)", flat)
    assert m, text
    assert (int(m[1].replace(",", "")), m[2], int(m[3].replace(",", ""))) == (nd["count"], nd["type"], nd["lower_bound"])
    m = re.search(r"binds: (\w+), ([\d,]+) sandboxes per node", flat)
    assert m and (m[1], int(m[2].replace(",", ""))) == (nd["binding"], nd["per_node"])
    total = _all_in(co)
    m = re.search(r"(\$[\d,.]+)/h (?:all in )?on ([\w-]+)", flat)
    assert m and _money(m[1]) == round(total, 2) and m[2] == co["tier"].replace("_", "-")
    m = re.search(r"(\$[\d,.]+) per 30 days", flat)
    assert m and _money(m[1]) == round(total * 720, 2)
    m = re.search(r"(\$[\d,.]+) per passing trajectory", flat)
    assert m and _money(m[1]) == round(co["per_passing_trajectory_all_in"], 2)
    mx = co.get("mixed")
    if mx and mx.get("usd_per_h") is not None:
        m = re.search(r"or BUY mixed: ([\d,]+) x \S+ reserved \+ up to ([\d,]+) x \S+ [\w-]+ as the load needs "
                      r"them: (\$[\d,.]+)/h", flat)
        assert m and (int(m[1]), int(m[2]), _money(m[3])) == (mx["reserved_nodes"], mx["burst_nodes"],
                                                                round(mx["usd_per_h"], 2))
    inf = p.get("inference") or {}
    if inf.get("gpus") is not None:
        m = re.search(r"BUY ([\d,]+) inference GPUs", flat)
        assert m and int(m[1].replace(",", "")) == inf["gpus"]
    c = p["target"].get("censored")
    if c:
        chosen = [x for x in text.splitlines() if x.endswith("<- chosen")]
        assert len(chosen) == 1 and ("buy the cap" if c["chosen"] == "cap" else "the demand") in chosen[0]
        assert f"buy the cap:    {c['cap']:,} slots" in text


@pytest.mark.parametrize("extra", [(), ("--gpu", "h100-80gb", "--model-params-b", "27", "--kv-bytes-per-token", "65536")])
def test_short_plan_of_the_mixed_corpus_fits_a_screen_and_carries_the_decision(extra, tmp_path):
    r = _plan(MIXED, *extra)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) <= 25 and all(len(x) <= 80 for x in lines), r.stdout
    assert lines[0].startswith("PURCHASE ORDER") and lines[-1].startswith("more: plan --detail")
    assert "Assumptions" not in r.stdout and "Line 2: storage" not in r.stdout  # the rest is --detail's
    doc = _plan(MIXED, *extra, "--json")
    assert doc.returncode == 0, doc.stderr
    _check_figures(r.stdout, json.loads(doc.stdout))
    if extra:
        assert "inference GPUs" in r.stdout and "BUY" in r.stdout


def test_short_plan_of_the_demo_measure_fits_a_screen(demo_measure):
    r = _plan(demo_measure)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) <= 25 and all(len(x) <= 80 for x in lines), r.stdout
    assert "  top risks (failing check gates):" in lines  # the demo fails prefix_cache_off (test_demo)
    _check_figures(r.stdout, json.loads(_plan(demo_measure, "--json").stdout))
    # --detail is the whole order: every line of the short text's decision is in it, whole
    full = _plan(demo_measure, "--detail", columns=400).stdout
    assert len(full.splitlines()) > 100 and "Assumptions (source:" in full
    for buy in (x.strip() for x in _plan(demo_measure, columns=400).stdout.splitlines() if "BUY " in x):
        assert buy in full


def test_short_plan_with_a_previous_plan_still_fits(tmp_path):
    old = "old.json"  # in tmp_path, the commands' folder
    assert _plan(PUBLISHED, "--price-tier", "on-demand", "-o", old, "--json", cwd=tmp_path).returncode == 0
    r = _plan(PUBLISHED, "--previous", old, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) <= 25 and all(len(x) <= 80 for x in lines), r.stdout
    assert any(x.startswith(f"  changed since {old}") for x in lines)
    assert any("$/h all in:" in x for x in lines)  # the tier moved the price


def test_lists_cut_to_the_screen_say_how_many_more():
    from tests.summaries import as_plan

    from sandbox_fleet.plan.render_short import SCREEN_LINES, short_lines

    p = as_plan(json.loads(_plan(MIXED, "--json").stdout))
    risks = [f"gate_{i}: failed" for i in range(10)]
    lines = short_lines(p, risks=risks, width=80)
    assert len(lines) <= SCREEN_LINES
    shown = [x for x in lines if x.startswith("    - gate_")]
    more = [x for x in lines if re.fullmatch(r"    \+\d+ more lines: plan --detail", x)]
    assert len(shown) == 3 and int(more[0].split("+")[1].split()[0]) == 10 - 3  # 4 lines: 3 gates and the count


def test_fit_cuts_at_a_space_with_an_ellipsis():
    from sandbox_fleet.plan.render_short import fit

    assert fit("  aaaa bbbb cccc dddd", 12, 1) == ["  aaaa ..."]
    assert fit("  aaaa bbbb", 12, 1) == ["  aaaa bbbb"]
    assert fit("  aaaa bbbb cccc dddd eeee ffff gggg", 16, 2) == ["  aaaa bbbb cccc", "      dddd ..."]


def test_buy_lines_are_bold_on_a_colour_terminal_and_plain_elsewhere(monkeypatch):
    from rich.console import Console

    from sandbox_fleet import textout

    lines = ["PURCHASE ORDER: x", "  BUY 2 x n at peak (lower bound 2)", "  binds: cpu"]
    buf = io.StringIO()
    term = Console(file=buf, force_terminal=True, color_system="standard", width=80)
    monkeypatch.setattr(textout, "plain_stdout_width", lambda: None)
    textout.print_lines(lines, lambda: term, emphasis=lambda xs: ["BUY" in x for x in xs])
    out = buf.getvalue().splitlines()
    assert out[1] == "\x1b[1m  BUY 2 x n at peak (lower bound 2)\x1b[0m" and "\x1b[" not in out[0] + out[2]
    buf = io.StringIO()
    mono = Console(file=buf, force_terminal=True, no_color=True, width=80)
    textout.print_lines(lines, lambda: mono, emphasis=lambda xs: ["BUY" in x for x in xs])
    assert buf.getvalue() == "".join(f"{x}\n" for x in lines)


# --- --csv --------------------------------------------------------------------------------
def test_csv_rows_carry_the_order_and_every_assumption(tmp_path):
    out = tmp_path / "order.csv"
    r = _plan(MIXED, "--csv", out, "--json")
    assert r.returncode == 0, r.stderr
    p = json.loads(r.stdout)
    rows = list(csv.reader(out.read_text().splitlines()))
    assert rows[0] == ["section", "key", "value", "unit", "basis"] and all(len(x) == 5 for x in rows)
    by = {(s, k): (v, u, b) for s, k, v, u, b in rows[1:]}
    assert by["nodes", "count"][0] == str(p["nodes"]["count"]) and by["nodes", "type"][0] == p["nodes"]["type"]
    assert float(by["cost", "all_in_usd_per_h"][0]) == pytest.approx(_all_in(p["cost"]), rel=1e-12)
    assert float(by["cost", "all_in_usd_per_30_days"][0]) == pytest.approx(_all_in(p["cost"]) * 720, rel=1e-12)
    tier = p["cost"]["tier"]
    assert float(by["cost", f"fleet_{tier}_usd_per_h"][0]) == p["cost"][f"{tier}_per_h"]
    # a fraction stays a raw fraction for the sheet, with its unit
    assert by["measured", "duty"][:2] == (repr(p["measured"]["duty"]), "fraction")
    asm = [x for x in rows[1:] if x[0] == "assumption"]
    assert [x[1] for x in asm] == [a["name"] for a in p["assumptions"]]
    assert all(x[4].startswith(a["source"]) for x, a in zip(asm, p["assumptions"]))
    # same input, same bytes
    again = tmp_path / "again.csv"
    assert _plan(MIXED, "--csv", again, "--json").returncode == 0
    assert again.read_bytes() == out.read_bytes()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["again.csv", "order.csv"]  # no temporary left


def test_csv_refuses_a_wrong_suffix_before_any_work(tmp_path):
    r = _plan(MIXED, "--csv", tmp_path / "order.txt")
    assert r.returncode == 2 and "--csv" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "order.txt").exists()


def test_one_number_format_in_the_plan_text_and_the_report():
    """0.2937 "fraction" is 29.4% in the terminal and in the HTML: the same function formats both."""
    from tests.summaries import as_plan

    from sandbox_fleet.numfmt import with_unit
    from sandbox_fleet.plan.render import plan_lines
    from sandbox_fleet.report.plan_sections import assumptions_table

    p = as_plan(json.loads(_plan(PUBLISHED, "--json").stdout))
    exc = next(a for a in p.assumptions if a.name == "exception_rate")
    assert exc.unit == "fraction" and round(exc.value, 4) == 0.2937
    assert with_unit(exc.value, exc.unit) == ("29.4%", "")
    text = "\n".join(plan_lines(p))
    assert re.search(r"exception_rate +29\.4% \[published\]", text) and "0.2937" not in text
    html = assumptions_table(p)
    assert re.search(r">29\.4%</td>", html) and "0.2937" not in html
    # money: the report's plan table prints $ per pass as the plan's text does ($0.18, not 0.176)
    from sandbox_fleet.report.tables import plan_table

    per_pass = p.cost.per_passing_trajectory
    shown = f"${per_pass:,.2f}"  # cents, as a buyer reads a price (not below a cent here)
    assert per_pass >= 0.01 and f"{shown} per passing trajectory" in text
    assert re.search(rf"<th>\$ per passing trajectory</th><td>\{shown}</td>", plan_table(p))
    assert with_unit(0.4, "fraction of peak") == ("40.0%", "of peak")
    assert with_unit(0.0004, "fraction") == ("0.040%", "")
    assert with_unit(27258761216.0, "bytes") == ("27,258,761,216", "bytes")
    assert with_unit(0.31, "cores per node") == ("0.31", "cores per node")


def test_render_plan_prints_the_decision_with_buy_in_bold():
    """The Rich path (``./dev demo`` prints each stage through it): the same short text, BUY bold."""
    from rich.console import Console
    from tests.summaries import as_plan

    from sandbox_fleet.plan.render import render_plan
    from sandbox_fleet.plan.render_short import short_lines

    p = as_plan(json.loads(_plan(MIXED, "--json").stdout))
    buf = io.StringIO()
    render_plan(p, Console(file=buf, force_terminal=True, color_system="standard", width=80))
    out = buf.getvalue().splitlines()
    assert len(out) <= 25
    assert [re.sub(r"\x1b\[[0-9;]*m", "", x) for x in out] == short_lines(p, width=80)
    text = short_lines(p, width=80)
    bold = [x.startswith("\x1b[1m") for x in out]
    # the node line, the mixed line and its continuation (the only folded BUY item here)
    assert [t for t, b in zip(text, bold) if b] == [x for x in text if "BUY " in x] + [text[text.index(
        next(x for x in text if "or BUY" in x)) + 1]]
    assert sum(bold) == 3


def test_buy_marks_follow_a_folded_buy_item():
    from sandbox_fleet.plan.render_short import buy_marks

    lines = ["PURCHASE ORDER: x", "  BUY 2 x n", "      folded rest", "  or BUY mixed: a", "  $1/h",
             "    - BUY in a risk? no", "  binds: cpu"]
    assert buy_marks(lines) == [False, True, True, True, False, False, False]


def test_many_buy_lines_still_fit_a_screen():
    """A plan with many GPU node pools (each its own BUY line): the decision folds to one line an
    item, then counts what it cannot show; never more than a screen."""
    from tests.summaries import as_plan

    from sandbox_fleet.plan.model import NodePool
    from sandbox_fleet.plan.render_short import SCREEN_LINES, short_lines

    p = as_plan(json.loads(_plan(MIXED, "--json").stdout))
    pools = [NodePool(type=f"gpu-node-type-with-a-long-name-{i}", count=i + 1, binding="gpu", per_node=8,
                      concurrent=8 * (i + 1)) for i in range(30)]
    lines = short_lines(p.model_copy(update={"node_pools": pools}), risks=["a: failed"], width=80)
    assert len(lines) <= SCREEN_LINES and all(len(x) <= 80 for x in lines)
    more = [x for x in lines if re.fullmatch(r"  \+\d+ more lines: plan --detail", x)]
    shown = [x for x in lines if "for the GPU requests" in x]
    assert len(more) == 1 and len(shown) + int(more[0].split("+")[1].split()[0]) > 30 - 1  # the rest counted
    assert lines[-1].startswith("more: plan --detail")
