"""Issue 35: right or refused on every input (privacy field)."""

import numpy as np
import pytest
from scipy.stats import binom

from sklearn_cispa.privacy import _flip, flip_rate_cutoff, lira_scores


def _cutoff_oracle(b, alpha):
    # the two-sided exact test of 1/2 has p-value min(1, 2 P[K <= k]) for k < b / 2 (and
    # 1 at k = b / 2); the cut is the flip rate at the smallest k it does not reject
    for k in range(b // 2 + 1):
        p = 1.0 if 2 * k == b else min(1.0, 2.0 * binom.cdf(k, b, 0.5))
        if p > alpha:
            return 2.0 * k * (b - k) / (b * (b - 1.0))
    raise AssertionError("unreachable")


@pytest.mark.parametrize("alpha", [1e-6, 0.01, 0.05, 0.5, 0.999])
def test_flip_rate_cutoff_matches_the_scan(alpha):
    for b in list(range(2, 80)) + [127, 255, 1000, 1001]:
        assert flip_rate_cutoff(b, alpha) == pytest.approx(_cutoff_oracle(b, alpha), abs=1e-15)


@pytest.mark.parametrize("n_models", [10**6, 10**9])
def test_flip_rate_cutoff_is_bounded(monkeypatch, n_models):
    # was a scan over k = 0 .. B/2 (minutes at 10**6); now about log2(B) binomial tests
    calls = []
    real = _flip.binomtest

    def counted(k, n, p):
        calls.append(k)
        if len(calls) > 2 * int(np.log2(n_models)) + 4:
            raise AssertionError(f"{len(calls)} binomial tests for n_models={n_models}")
        return real(k, n, p)

    monkeypatch.setattr(_flip, "binomtest", counted)
    cut = flip_rate_cutoff(n_models)
    # normal approximation of the cut: k* ~ B/2 - 1.96 sqrt(B)/2, flip = 1/2 - O(1/B)
    k = n_models / 2 - 1.959964 * np.sqrt(n_models) / 2
    assert cut == pytest.approx(2 * k * (n_models - k) / (n_models * (n_models - 1.0)), abs=1e-9)
    assert 0.0 < cut < 0.5


def test_lira_scores_without_any_out_reference_is_refused():
    rng = np.random.default_rng(0)
    keep = np.ones((4, 5), dtype=bool)  # every reference trained on every example
    with pytest.raises(ValueError, match="No reference model left any pool example out"):
        lira_scores(keep, rng.normal(size=(4, 5)), rng.normal(size=5))
    with pytest.raises(ValueError, match="No reference model left any pool example out"):
        lira_scores(keep, rng.normal(size=(4, 5)), rng.normal(size=5), online=False)
