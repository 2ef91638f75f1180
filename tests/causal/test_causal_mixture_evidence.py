"""Per-node mixing evidence (``CausalMixtureDiscoverer.mixing_evidence_``, issue 23) and
the reference runner's F1 convention."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_cispa.causal import CausalMixtureDiscoverer
from sklearn_cispa.datasets import load_cmm_demo, make_causal_mixture
from sklearn_cispa.report import edge_f1, evidence_auc, reference_directed_f1

QUICK = {"max_components": 3, "n_init": 1}


def test_evidence_sign_matches_the_selected_components():
    X, _ = load_cmm_demo()
    est = CausalMixtureDiscoverer(random_state=0, **QUICK).fit(X)
    ev = est.mixing_evidence_
    assert ev.shape == (6,) and np.all(np.isfinite(ev))
    mixed = est.n_components_ > 1
    # a node is mixed exactly when the BIC prefers a (separated) mixture: evidence > 0
    assert np.all(ev[mixed] > 0) and np.all(ev[~mixed] <= 0)
    # unit-free: the same evidence after any per-column affine map
    scaled = CausalMixtureDiscoverer(random_state=0, **QUICK).fit(X * 1e5 - 3e4)
    np.testing.assert_allclose(scaled.mixing_evidence_, ev, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("noise", ["t3", "laplace"])
def test_no_evidence_on_heavy_tailed_single_mechanisms(noise):
    """Chains with one mechanism per node and heavy-tailed noise: no node has positive
    evidence (the Gaussian BIC alone calls every node mixed here)."""
    rng = np.random.default_rng(0)
    X = np.zeros((600, 4))
    for j in range(4):
        e = rng.standard_t(3, 600) if noise == "t3" else rng.laplace(size=600)
        X[:, j] = (0.8 * X[:, j - 1] if j else 0.0) + e
    est = CausalMixtureDiscoverer(random_state=0, **QUICK).fit(X)
    assert np.all(est.n_components_ == 1)
    assert np.all(est.mixing_evidence_ <= 0), est.mixing_evidence_


def test_evidence_without_affordable_mixture_is_zero():
    X, _ = load_cmm_demo()
    est = CausalMixtureDiscoverer(max_components=1, random_state=0).fit(X[:200])
    assert np.all(est.n_components_ == 1)
    np.testing.assert_array_equal(est.mixing_evidence_, 0.0)


@pytest.mark.slow
def test_evidence_ranks_the_truly_mixed_nodes_first():
    """On the spec's generator (N = 6, n = 500, 4 seeds) the truly mixed nodes have the
    largest evidence: AUC 1.0, 0.78, 1.0, 1.0 measured (chance 0.5; the exact
    permutation p-value of an AUC of 1 with 3 of 6 nodes is 1/20)."""
    aucs = []
    for seed in range(4):
        X, _, sets, _ = make_causal_mixture(n_samples=500, n_nodes=6, random_state=seed)
        est = CausalMixtureDiscoverer(random_state=0, **QUICK).fit(X)
        auc, p_value = evidence_auc(est.mixing_evidence_, sorted(set().union(*sets)))
        assert 0.0 < p_value <= 1.0
        aucs.append(auc)
    assert np.mean(aucs) >= 0.85, aucs
    assert min(aucs) >= 0.7, aucs


def test_evidence_auc_closed_form():
    ev = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0])
    auc, p = evidence_auc(ev, [0, 1])
    assert auc == 1.0 and p == pytest.approx(1 / 15)  # 1 of C(6, 2) node pairs
    auc, p = evidence_auc(ev, [4, 5])
    assert auc == 0.0 and p == 1.0
    auc, p = evidence_auc(ev, [0, 5])
    assert auc == 0.5
    # sampled null when the exact enumeration is too large
    auc, p = evidence_auc(np.arange(40.0), list(range(30, 40)), max_exact=10)
    assert auc == 1.0 and p < 0.01


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.integers(0, 4), min_size=3, max_size=9),  # small integers: ties
    data=st.data(),
)
def test_evidence_auc_matches_roc_auc_score_and_the_enumerated_null(values, data):
    # oracle: scikit-learn's roc_auc_score, set by set (how the null was scored before)
    import itertools

    from sklearn.metrics import roc_auc_score

    ev = np.array(values, dtype=float) * 1e-6 + 3e5  # the ranks, not the units, matter
    n = len(ev)
    m = data.draw(st.integers(1, n - 1))
    targets = data.draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m, unique=True))
    auc, p = evidence_auc(ev, targets)

    def roc(t):
        return roc_auc_score(np.isin(np.arange(n), list(t)), ev)

    assert auc == pytest.approx(roc(targets), abs=1e-12)
    null = np.array([roc(t) for t in itertools.combinations(range(n), m)])
    assert p == pytest.approx(np.mean(null >= roc(targets) - 1e-12), abs=1e-12)


def test_evidence_auc_rejects_a_single_class():
    with pytest.raises(ValueError, match="targets and non-targets"):
        evidence_auc(np.arange(4.0), [0, 1, 2, 3])


def test_reference_f1_keeps_only_forward_directed_edges():
    true = np.zeros((4, 4), dtype=int)
    true[0, 1] = true[1, 2] = true[3, 0] = 1  # 3 -> 0 runs from a higher index: ignored
    est = np.zeros((4, 4), dtype=int)
    est[0, 1] = 1  # found
    est[2, 3] = est[3, 2] = 1  # undirected (CPDAG): neither found nor wrong
    est[3, 0] = 1  # a true edge, but from a higher index: ignored
    assert reference_directed_f1(est, true) == pytest.approx(2 / 3)  # TP 1, FN 1
    # the library's F1 counts every directed edge, undirected ones both ways
    assert edge_f1(est, true) == pytest.approx(2 * 2 / (2 * 2 + 2 + 1))
