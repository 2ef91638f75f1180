"""Report rows' full-size and not-reproduced branches with their experiment stubbed.

The experiment behind a row is replaced by a stub returning results of the same shape on
tiny arrays, so that the row's own code (the full-size figure, the verdict's branches,
the row's schema through the runner) runs in milliseconds. What the stubs return is made
up: these tests check the row's bookkeeping, not the method.
"""

import numpy as np
import pytest


def _fake_compare(local_wins_at_high):
    """A stub of ``compare_algorithms``: excess losses chosen per setting."""
    from sklearn_cispa.report._local_sgd_eval import ALGORITHMS

    calls = []

    def compare(tau, zeta_star, *, seeds, random_state):
        calls.append((tau, zeta_star))
        high = tau * zeta_star > 0.5
        local = 2.0 if high else 0.5
        if local_wins_at_high:
            local = 0.5
        base = {"local": local, "minibatch": 1.0, "accelerated_minibatch": 0.8}
        out = {"tau_zeta": tau * zeta_star}
        for k, a in enumerate(ALGORITHMS):
            excess = base[a] * (1 + 0.1 * np.arange(len(seeds)))
            curves = [np.geomspace(10, base[a], 4) for _ in seeds]
            out[a] = {"eta": 0.1 * (k + 1), "excess": excess, "curves": curves, "interior": True}
        return out

    return compare, calls


def test_local_sgd_row_full_size_paths_with_a_stub(run_row, monkeypatch):
    from sklearn_cispa.report import _exp_local_sgd as row

    compare, calls = _fake_compare(local_wins_at_high=False)
    monkeypatch.setattr(row, "compare_algorithms", compare)
    result = run_row("local_sgd", quick=False)
    # the two settings and the four of the paper-style figure
    assert calls == [row.LOW, row.HIGH, *row.FIRST_ORDER, *row.SECOND_ORDER]
    assert result["runs"] == 5 and result["outcome"] == "reproduced"
    assert "Figure settings (mean F - F*): tau=0, zeta*=1.08: local" in result["verdict"]
    # local/accelerated at low: 0.5/0.8 = 0.625 for every seed (sd 0): beyond 1 sd of 1
    assert "ratio is beyond one seed standard deviation of 1" in result["verdict"]
    assert result["value"] == pytest.approx(np.mean(0.5 * (1 + 0.1 * np.arange(5))))
    assert [p.rsplit("/", 1)[-1] for p in result["figures"]] == ["local_sgd_vs_minibatch.png"]


def test_local_sgd_row_not_reproduced_when_local_wins_at_high(run_row, monkeypatch):
    from sklearn_cispa.report import _exp_local_sgd as row

    compare, _ = _fake_compare(local_wins_at_high=True)
    monkeypatch.setattr(row, "compare_algorithms", compare)
    result = run_row("local_sgd", quick=True)
    assert result["runs"] == 3 and result["outcome"] == "not reproduced"
    assert result["reproduced"] is False
    assert "Figure settings" not in result["verdict"]
