"""The spec's planted-canary experiment at CI size (issue 21, spec section 7).

One character model is trained once per module (``random_state=0``, the CI setting of
``sklearn_cispa.report.canary_ci_setting()``) and shared by every test.
"""

import numpy as np
import pytest
import torch

from sklearn_cispa.memorization import extraction_rate
from sklearn_cispa.report import canary_benchmark, canary_ci_setting, train_canary_model

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bench():
    lm, heldout, canaries = train_canary_model(0, **canary_ci_setting())
    out = canary_benchmark(lm, heldout, canaries, random_state=0)
    return lm, heldout, canaries, out


def test_canaries_are_memorised(bench):
    _, _, _, out = bench
    # spec: at least 4 of the 5 canaries memorised before localisation
    assert sum(r["memorized"] for r in out["rows"]) >= 4


def test_localisation_stops_extraction(bench):
    _, _, _, out = bench
    rows = [r for r in out["rows"] if r["memorized"]]
    localized = [r for r in rows if r["localized"]]
    # spec: >= 80% of memorised canaries get a set whose deactivation stops extraction
    assert len(localized) >= 0.8 * len(rows)
    assert not any(r["extracted_after"] for r in localized)


def test_matched_random_controls_leave_extraction_intact(bench):
    _, _, _, out = bench
    rows = [r for r in out["rows"] if r["localized"]]
    # spec: >= 80% of matched controls (same count per layer, 5 draws) still extract
    assert np.mean([r["control_extracted"] for r in rows]) >= 0.8


def test_other_canaries_retained(bench):
    _, _, _, out = bench
    kept = [r["others_kept"] for r in out["rows"] if r["localized"]]
    # spec: >= 70% of the other canaries stay extractable (measured 85% in the spec)
    assert np.nanmean(kept) >= 0.7


def test_located_sets_against_the_exact_minimum(bench):
    _, _, _, out = bench
    rows = [r for r in out["rows"] if r["localized"]]
    for r in rows:
        # independent oracle (minimal_zero_set, checked against brute force): no zeroing
        # set smaller than min_units stops extraction, and the minimal set does stop it
        assert r["units"] >= r["min_units"]
        assert not r["min_set_extracted_after"]
    # regression guard from our own CI run (measured 1.2-1.9x the minimum): the
    # single-removal-minimal refinement stays within 2.5x of the smallest possible set
    assert all(r["units"] <= 2.5 * r["min_units"] for r in rows)


def test_located_sets_near_the_exact_minimum_at_its_cost(bench):
    _, _, _, out = bench
    rows = [r for r in out["rows"] if r["localized"]]
    # issue 38's target: for >= 80% of canaries the located set is within 1.5x of the
    # exact minimum AND costs at most 1.5x the exact set's held-out perplexity change
    # (measured on seeds 0-4: 25/25 within 1.5x in size, 21/25 both; seed 0: 4/5)
    ok = [r["units"] <= 1.5 * r["min_units"]
          and r["ppl_change"] <= 1.5 * max(r["min_set_ppl_change"], 0.0) for r in rows]
    assert np.mean(ok) >= 0.8
    assert all(r["units"] <= 1.5 * r["min_units"] for r in rows)


def test_set_sizes_and_perplexity_regression_guard(bench):
    _, _, _, out = bench
    rows = [r for r in out["rows"] if r["localized"]]
    # regression guard from our own CI run (measured 26-42 units, +3..+13% perplexity;
    # the same number of random units costs +3..+7%): the spec's <= 8 units and < 5%
    # are NOT met by this model (see the xfail and the next test)
    assert all(1 <= r["units"] <= 60 for r in rows)
    assert np.mean([r["ppl_change"] for r in rows]) < 0.30


def test_spec_unit_budget_is_below_the_exact_minimum(bench):
    _, _, _, out = bench
    rows = [r for r in out["rows"] if r["memorized"]]
    # documents why the xfail below holds: for this model no set of <= 8 hidden units
    # stops extraction of any canary (exact minimum measured 17-22 of 256 units), so
    # no localisation method that zeroes units can meet the spec's budget here
    assert min(r["min_units"] for r in rows) > 8


@pytest.mark.xfail(strict=True, reason=(
    "spec section 7 expects <= 8 units and < 5% perplexity change; for the character "
    "MLP trained on our generated corpus the exact smallest set of units whose zeroing "
    "stops extraction has 17-22 of 256 units (its dense hidden code spreads each canary "
    "over ~7-9% of the units), so no zeroing set can have <= 8 units"
))
def test_spec_small_sets_and_small_perplexity_cost(bench):
    _, _, _, out = bench
    rows = [r for r in out["rows"] if r["localized"]]
    assert np.mean([r["units"] <= 8 for r in rows]) >= 0.8
    assert max(r["ppl_change"] for r in rows) < 0.05


def test_removal_restores_extraction_and_logits_bitwise(bench):
    lm, heldout, canaries, out = bench
    loc = out["locator"]
    assert out["restored_rate"] == extraction_rate(lm, canaries)
    x = torch.as_tensor(np.asarray([lm.encode(p) for p, _ in canaries]))
    with torch.no_grad():
        before = lm.module_(x)
        mask = loc.deactivate()
        masked = lm.module_(x)
        mask.remove()
        after = lm.module_(x)
    assert torch.equal(before, after) and not torch.equal(before, masked)
    assert extraction_rate(lm, canaries) == np.mean([r["memorized"] for r in out["rows"]])


def test_scale_curve(bench):
    _, _, _, out = bench
    curve = out["scale_curve"]
    located = curve["located"]
    # scale 0 deactivates, scale 1 is the plain model; partial scales lie in between
    assert located[-1] == out["restored_rate"]
    assert located[0] <= min(located) + 1e-12 and max(located) <= located[-1] + 1e-12
    assert located[0] < located[-1]
    assert curve["random"][-1] == located[-1]
