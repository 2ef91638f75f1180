"""Issue 15: a mixed child whose parent already carries the latent split.

The child's mechanism switches with the parent's latent, but the parent's value already
separates the groups and the two group lines cross inside the data, so a mixture of
linear regressions of the child on the parent cannot assign its rows (before: child ARI
about 0, no shared mixing set). The local score now also tries the child's regression
split by each mixed parent's groups (``share_parent_groups=True``).
"""

import numpy as np
from sklearn.metrics import adjusted_rand_score

from sklearn_cispa.causal import CausalMixtureDiscoverer
from sklearn_cispa.causal._causal_mixture import _local_score_task, _shared_split_fit
from sklearn_cispa.causal._mixture_regression import with_intercept


def _crossing_child(seed, n=500):
    rng = np.random.default_rng(seed)
    z = (rng.random(n) < 0.3).astype(int)
    x0 = rng.normal(size=n) + 6.0 * z
    x1 = np.where(z == 1, -0.6 * x0 + 3.0, 0.6 * x0) + 0.5 * rng.normal(size=n)
    return np.column_stack([x0, x1]), z


def _standardise(X):
    return (X - X.mean(axis=0)) / X.std(axis=0)


def test_child_split_by_parent_groups_wins_the_local_score():
    for seed in range(3):
        X, z = _crossing_child(seed)
        Xs = _standardise(X)
        _, k0, l0 = _local_score_task(Xs, 0, (), 5, 3, 200, 0)
        assert k0 == 2 and adjusted_rand_score(z, l0) > 0.9
        own, k_own, l_own = _local_score_task(Xs, 1, (0,), 5, 3, 200, 0)
        assert adjusted_rand_score(z, l_own) < 0.2  # the blind spot
        bic, k, labels = _local_score_task(Xs, 1, (0,), 5, 3, 200, 0, parent_labels=(l0,))
        # measured: own mixture 1352-1360, split by the parent's groups 960-1039
        assert bic < own - 100
        assert k == 2 and adjusted_rand_score(z, labels) > 0.9


def test_shared_split_bic_closed_form():
    rng = np.random.default_rng(0)
    n = 200
    x = rng.normal(size=n)
    g = (np.arange(n) % 4 == 0).astype(int)
    y = np.where(g == 1, 2.0 - x, x) + 0.3 * rng.normal(size=n)
    Z = with_intercept(x[:, None])
    ll = 0.0
    for v in (0, 1):
        coef = np.polyfit(x[g == v], y[g == v], 1)
        r = y[g == v] - np.polyval(coef, x[g == v])
        ll += -0.5 * r.size * (np.log(2 * np.pi * np.mean(r**2)) + 1)
    expected = -2 * ll + 2 * 3 * np.log(n)  # K (p + 2) parameters, no mixing weights
    assert np.isclose(_shared_split_fit(Z, y, g), expected, rtol=1e-10)


def test_discoverer_finds_the_shared_mixing_set():
    # a third node downstream gives the search its order (the pair alone is ambiguous)
    X, z = _crossing_child(2)
    rng = np.random.default_rng(12)
    x2 = 0.8 * X[:, 1] + 0.5 * rng.normal(size=len(z))
    est = CausalMixtureDiscoverer(max_components=3, share_parent_groups=True, random_state=0)
    est = est.fit(np.column_stack([X, x2]))
    assert frozenset({0, 1}) in est.mixing_sets_
    assert adjusted_rand_score(z, est.labels_[:, 0]) > 0.9
    assert adjusted_rand_score(z, est.labels_[:, 1]) > 0.9
    assert est.n_components_[2] == 1


def test_unmixed_children_of_a_mixed_root_stay_unmixed():
    # no false sharing: children whose mechanism does not switch keep one component
    rng = np.random.default_rng(3)
    n = 600
    z = (rng.random(n) < 0.3).astype(int)
    x0 = rng.normal(size=n) + 6.0 * z
    x1 = 0.7 * x0 + 0.5 * rng.normal(size=n)
    x2 = -0.5 * x0 + 0.5 * rng.normal(size=n)
    est = CausalMixtureDiscoverer(max_components=3, share_parent_groups=True, random_state=0)
    est = est.fit(np.column_stack([x0, x1, x2]))
    np.testing.assert_array_equal(est.n_components_, [2, 1, 1])
    assert est.mixing_sets_ == [frozenset({0})]


def test_sharing_is_off_by_default():
    X, z = _crossing_child(2)
    rng = np.random.default_rng(12)
    X3 = np.column_stack([X, 0.8 * X[:, 1] + 0.5 * rng.normal(size=len(z))])
    est = CausalMixtureDiscoverer(max_components=3, random_state=0).fit(X3)
    assert frozenset({0, 1}) not in est.mixing_sets_
