"""The plan against provider limits: the catalog, accounts per quota, the creation ramp, the lifetime lint.

Truth: the ramp against a brute-force token bucket and a Monte Carlo of the step's lengthening;
accounts hand-counted; the lint from the three failure shapes of issue 39, each built from its
story; the catalog's reconciled figures against the providers' documentation as quoted in
docs/providers.md.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.model import Histogram, Holds, MeasureSummary, Phase
from sandbox_fleet.plan.lifetime import Budgets, holds_above, lint, load_budgets
from sandbox_fleet.plan.model import Starts
from sandbox_fleet.plan.quotas import provider_fit, ramp_delays
from sandbox_fleet.plan.rent import Provider, load_providers, select

REQ = {"cpu": 2.0, "memory": 4096.0, "disk": 10240.0}


def _bucket_starts(batch: int, rate: float, burst: int) -> np.ndarray:
    """Each of a batch released at 0 takes a token; tokens refill at ``rate`` up to ``burst``: brute force in time."""
    tokens, t, out, dt = float(burst), 0.0, [], 1e-3 / rate
    while len(out) < batch:
        while tokens >= 1.0 and len(out) < batch:
            tokens -= 1.0
            out.append(t)
        t += dt
        tokens = min(float(burst), tokens + rate * dt)
    return np.array(out)


@pytest.mark.parametrize("batch,rate,burst", [(700, 5.0, 1), (700, 5.0, 5), (50, 1.0, 20), (10, 10.0, 600)])
def test_ramp_matches_a_brute_force_bucket(batch, rate, burst):
    starts = _bucket_starts(batch, rate, burst)
    bound, mean = ramp_delays(batch, rate, burst)
    assert bound == pytest.approx(starts.max(), abs=2e-3 / rate)
    assert mean == pytest.approx(starts.mean(), abs=2e-3 / rate)


def test_the_mean_delay_is_the_expected_lengthening_of_a_step():
    # Issue 38's example: a batch of 700 at 5/s; holds spread wide next to the 140-s ramp.
    rng = np.random.default_rng(0)
    batch, rate = 700, 5.0
    delay = np.maximum(0.0, (np.arange(1, batch + 1) - 1) / rate)
    bound, mean = ramp_delays(batch, rate, 1)
    lengthening = []
    for _ in range(400):
        h = rng.lognormal(np.log(3000.0), 0.8, batch)
        lengthening.append((h + rng.permutation(delay)).max() - h.max())
    got = float(np.mean(lengthening))
    assert got == pytest.approx(mean, rel=0.15)
    assert got < bound and mean == pytest.approx(bound / 2, rel=0.01)


def _provider(**kw) -> Provider:
    base = {"name": "p", "source": "test", "as_of": "2026", "vcpu_usd_s": 0.0, "memory_gib_usd_s": 0.0}
    return Provider.model_validate(base | kw)


def test_accounts_by_each_quota_hand_counted():
    p = _provider(max_concurrent=100, account_vcpus=400, account_memory_gib=1000, account_disk_gib=5000)
    fit = provider_fit(p, [(REQ, 1.0)], 250, Starts())
    # 250 / 100 -> 3; 250 x 2 vCPU / 400 -> 2; 250 x 4 GiB / 1000 -> 1; 250 x 10 GiB / 5000 -> 1
    assert fit.accounts_by_quota == {"max_concurrent": 3, "account_vcpus": 2, "account_memory_gib": 1, "account_disk_gib": 1}
    assert fit.accounts == 3 and fit.binding == "max_concurrent"


def test_a_pool_binds_on_a_mixed_request():
    small, big = {"cpu": 1.0, "memory": 2048.0}, {"cpu": 8.0, "memory": 32768.0}
    p = _provider(account_vcpus=1000, account_memory_gib=2000)
    fit = provider_fit(p, [(small, 0.75), (big, 0.25)], 400, Starts())
    # mean draw: 0.75 x 1 + 0.25 x 8 = 2.75 vCPU -> 1,100 / 1,000 -> 2; 0.75 x 2 + 0.25 x 32 = 9.5 GiB -> 3,800 / 2,000 -> 2
    assert fit.accounts_by_quota == {"account_vcpus": 2, "account_memory_gib": 2}
    assert fit.accounts == 2


def test_a_per_sandbox_maximum_is_no_matter_of_accounts():
    fit = provider_fit(_provider(max_vcpus=1, max_concurrent=10), [(REQ, 1.0)], 5, Starts())
    assert fit.accounts is None and fit.per_sandbox_hit == ["request 2 vCPU > 1 per sandbox"]


def test_the_ramp_spreads_over_the_accounts():
    p = _provider(max_concurrent=100, max_creates_per_s=5)
    fit = provider_fit(p, [(REQ, 1.0)], 300, Starts(batch=300, step_s=1000.0))
    assert fit.accounts == 3
    assert fit.ramp.creates_per_s == 15 and fit.ramp.burst == 3
    assert fit.ramp.bound_s == pytest.approx(297 / 15)
    assert fit.ramp.mean_step_share == pytest.approx(297 * 298 / (2 * 15 * 300) / 1000)


# ------------------------------------------------------------ the catalog


def test_catalog_figures_reconciled_with_the_documentation():
    cat = {p.name: p for p in load_providers()}
    # https://e2b.dev/docs/sandbox/rate-limits and /docs/sandbox: Hobby 20, 1/s, 1 h; Pro 100, 5/s, 24 h
    assert (cat["e2b-hobby"].max_concurrent, cat["e2b-hobby"].max_creates_per_s, cat["e2b-hobby"].max_lifetime_s) == (20, 1, 3600)
    assert (cat["e2b"].max_concurrent, cat["e2b"].max_creates_per_s, cat["e2b"].max_lifetime_s) == (100, 5, 86400)
    # https://www.daytona.io/docs/en/rate-limits: 600 creations per 60 s
    assert cat["daytona"].max_creates_per_s * 60 == 600 and cat["daytona"].max_creates_burst == 600
    assert cat["modal"].max_lifetime_s == 24 * 3600
    assert cat["agent-sandbox"].rented is False and cat["agent-sandbox"].claim_p99_s == pytest.approx(0.376)


def test_every_catalog_limit_names_its_source_and_vendor_claims_are_flagged():
    limits = ("max_concurrent", "max_creates_per_s", "max_creates_burst", "max_starting", "max_lifetime_s",
              "account_vcpus", "account_memory_gib", "account_disk_gib", "cold_start_p50_s", "cold_start_p99_s",
              "claim_p50_s", "claim_p99_s", "warm_pool_refill_per_s")
    for p in load_providers():
        for f in limits:
            if getattr(p, f) is not None and p.as_of < "2026":  # an entry older than the reconciliation
                assert f in p.figure_sources, f"{p.name}.{f} has no source of its own"
        for f in p.vendor_claimed:
            assert f in p.figure_sources, f"{p.name}.{f} is vendor-claimed but names no source"
    assert {"cold_start_p50_s", "cold_start_p99_s"} <= set(next(p for p in load_providers() if p.name == "e2b").vendor_claimed)


def test_the_default_rent_set_leaves_out_other_plans_and_self_hosted():
    cat = load_providers()
    assert [p.name for p in select(cat, None)] == ["e2b", "daytona", "modal"]
    assert [p.name for p in select(cat, ["e2b-hobby"])] == ["e2b-hobby"]
    with pytest.raises(InputError, match="self-hosted"):
        select(cat, ["agent-sandbox"])


def test_the_users_file_overrides_the_catalog(tmp_path: Path):
    f = tmp_path / "mine.toml"
    f.write_text('[[provider]]\nname = "e2b"\nplan = "pro+addon"\nsource = "my contract"\nas_of = "2026-12"\n'
                 'vcpu_usd_s = 0.00001\nmemory_gib_usd_s = 0.000004\nmax_concurrent = 1100\n', encoding="utf-8")
    [p] = load_providers(f)
    assert provider_fit(p, [(REQ, 1.0)], 1000, Starts()).accounts == 1
    f.write_text(f.read_text(encoding="utf-8") + 'vendor_claimed = ["nonsense"]\n', encoding="utf-8")
    with pytest.raises(InputError, match="mine.toml: provider 'e2b'"):
        load_providers(f)


# ------------------------------------------------------------ the lifetime and timeout lint


def _measured(**phases) -> MeasureSummary:
    return MeasureSummary.build(rows=1000, phases={k: Phase(rows=1000, median_s=m, p99_s=p) for k, (m, p) in phases.items()})


def _shapes(b: Budgets, m: MeasureSummary | None = None) -> set[str]:
    return {f.shape for f in lint(b, m or _measured()).findings or []}


def test_clean_budgets_have_no_finding():
    b = Budgets(lifetime_s=3600, rollout_timeout_s=3000,
                phases={"create": 5, "start": 30, "build": 120, "agent": 1800, "verifier": 300})
    got = lint(b, _measured())
    assert got.findings == [] and got.lifetime_ok is True
    assert got.in_lifetime_s == 30 + 120 + 1800 + 300


def test_shape_timeout_equals_lifetime():
    # The agent timeout set to the sandbox lifetime: long rollouts die with exit 137.
    b = Budgets(lifetime_s=1800, phases={"start": 30, "agent": 1800, "verifier": 120})
    assert "timeout_equals_lifetime" in _shapes(b)


def test_shape_boot_outside_the_rollout_timeout():
    # The rollout timeout equal to the agent's, but its clock starts before the sandbox boots.
    b = Budgets(lifetime_s=7200, rollout_timeout_s=1800, phases={"create": 10, "start": 299, "agent": 1800})
    assert _shapes(b) == {"boot_outside_rollout_timeout"}
    covered = Budgets(lifetime_s=7200, rollout_timeout_s=2200, phases={"create": 10, "start": 299, "agent": 1800})
    assert _shapes(covered) == set()


def test_shape_verifier_past_the_lifetime():
    # Boot and agent fit, the verifier does not: it runs against a dying container.
    b = Budgets(lifetime_s=2000, phases={"start": 30, "build": 100, "agent": 1800, "verifier": 300})
    assert {"verifier_past_lifetime", "lifetime_below_budget"} <= _shapes(b)
    assert "timeout_equals_lifetime" not in _shapes(b)


def test_headroom_alone_warns():
    b = Budgets(lifetime_s=2000, headroom=0.1, phases={"agent": 1900})
    [f] = lint(b, _measured()).findings
    assert (f.shape, f.severity) == ("lifetime_below_budget", "warn")


def test_budgets_fall_back_to_the_measured_p99_and_cut_shares_are_lognormal():
    m = _measured(agent_execution=(600.0, 3000.0), verifier=(30.0, 90.0))
    got = lint(Budgets(lifetime_s=7200, phases={"agent": 3000.0}), m)
    by = {p.phase: p for p in got.phases}
    assert by["agent"].source == "budgets file"
    assert by["agent"].cut_share == pytest.approx(0.01, abs=1e-9)  # the budget is the measured p99
    assert by["verifier"].source.startswith("measured verifier p99") and by["verifier"].budget_s == 90.0
    sigma = (math.log(3000) - math.log(600)) / 2.3263478740408408
    half = lint(Budgets(phases={"agent": 600.0 * math.exp(sigma)}), m)
    assert {p.phase: p for p in half.phases}["agent"].cut_share == pytest.approx(1 - 0.8413447460685429, rel=1e-6)


def test_the_lifetime_cut_from_the_hold_histogram():
    m = MeasureSummary.build(rows=100, hold_s=Holds(histogram=Histogram(edges_s=[10.0, 100.0, 1000.0], counts=[60, 40], zero=0)))
    assert holds_above(m, 100.0) == pytest.approx(0.40)
    assert holds_above(m, 1000.0) == pytest.approx(0.0)
    assert holds_above(m, math.sqrt(100 * 1000)) == pytest.approx(0.20)  # half the top bin, log-linear


def test_billing_by_requested_lifetime_prices_the_unused_part():
    p = _provider(billing="requested_lifetime", max_lifetime_s=3600)
    m = MeasureSummary.build(rows=10, hold_s=Holds(mean=1000.0))
    got = lint(Budgets(phases={"agent": 900}), m, p, usd_per_sandbox_s=0.0001)
    assert got.lifetime_s == 3600 and got.unused_lifetime_s_per_rollout == 2600
    assert got.unused_lifetime_usd_per_rollout == pytest.approx(0.26)


def test_a_bad_budgets_file_is_one_line(tmp_path: Path):
    f = tmp_path / "b.toml"
    f.write_text("[phases]\nagnet = 10\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"b.toml: key 'phases': .*unknown phase 'agnet'"):
        load_budgets(f)
