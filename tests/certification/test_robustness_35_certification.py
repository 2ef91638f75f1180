"""Issue 35: right or refused on every input (certification field)."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_cispa.certification import MIBPCertifier
from sklearn_cispa.certification import _mibp as mibp_module


def _moons(n=40):
    return make_moons(n_samples=n, noise=0.2, random_state=0)


# units and offsets: the fit is gradient descent in the units of X (not invariant), so a
# collapse of the training must be reported, and standardising in a Pipeline must undo it
@pytest.mark.parametrize(
    "sizes, scale, offset",
    [((), 1.0, 1000.0), ((), 1e-6, 0.0), ((2,), 1e6, 0.0), ((2,), 1.0, 1000.0)],
)
def test_training_collapse_in_other_units_warns(sizes, scale, offset):
    X, y = _moons()
    params = dict(hidden_layer_sizes=sizes, bound="interval", random_state=0)
    base = MIBPCertifier(**params).fit(X, y)
    Xs = (X + offset) * scale
    with pytest.warns(UserWarning, match="training failed.*far from unit scale.*StandardScaler"):
        moved = MIBPCertifier(**params).fit(Xs, y)
    assert moved.score(Xs, y) < base.score(X, y)  # the collapse the warning is about
    # standardised, the fit no longer depends on the units and does not warn
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        a = make_pipeline(StandardScaler(), MIBPCertifier(**params)).fit(X, y)
        b = make_pipeline(StandardScaler(), MIBPCertifier(**params)).fit(Xs, y)
        base_std = MIBPCertifier(**params).fit(X, y)  # moons are near unit scale
    assert base_std.score(X, y) == base.score(X, y)
    np.testing.assert_allclose(b[-1].params_, a[-1].params_, rtol=1e-6, atol=1e-9)


def _reference_linear_path(X, y01, theta0, lr, n_epochs):
    """Hinge-loss full-batch gradient descent of ``z = w x + b``, written out directly."""
    s = np.where(y01 == 1, 1.0, -1.0)
    w, b = theta0[:-1].astype(np.float64), float(theta0[-1])
    path = [np.r_[w, b]]
    for _ in range(n_epochs):
        active = s * (X @ w + b) < 1.0
        g = -(s * active)
        w = w - lr * (g @ X) / len(X)
        b = b - lr * g.sum() / len(X)
        path.append(np.r_[w, b])
    return np.array(path)


@pytest.mark.parametrize("bound", ["interval", "lp"])
@pytest.mark.parametrize("scale, offset", [(1.0, 1000.0), (1e-6, 0.0), (1e6, 0.0)])
def test_sound_at_the_scales_of_the_collapse(bound, scale, offset):
    # the boxes hold every perturbed re-training at the scales where the model collapses
    X, y = _moons(12)
    X = (X + offset) * scale
    eps = 0.02 * scale
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cert = MIBPCertifier(
            epsilon=eps, max_epochs=3, bound=bound, random_state=0, time_limit=20.0
        ).fit(X, y)
    lo, hi = cert.bounds_history_[:, 0], cert.bounds_history_[:, 1]
    tol = 1e-9 * (np.abs(lo) + np.abs(hi)) + 1e-12
    rng = np.random.default_rng(0)
    for d in range(20):
        u = rng.choice([-1.0, 1.0], size=X.shape) if d < 10 else rng.uniform(-1, 1, X.shape)
        path = _reference_linear_path(X + eps * u, y, cert.init_params_, cert.lr, 3)
        assert np.all(path >= lo - tol) and np.all(path <= hi + tol), d


class _FakeClock:
    """A clock that the solves advance by the whole limit they were given."""

    def __init__(self):
        self.now = 0.0
        self.limits = []

    def __call__(self):
        return self.now


@pytest.mark.parametrize("overrun", [1.0, 3.0])
@pytest.mark.parametrize("bound", ["mibp", "lp"])
def test_time_limit_bounds_the_whole_fit(monkeypatch, bound, overrun):
    # before: every program got time_limit, so 40 epochs of 6 programs could take
    # 240 x time_limit (60-75 s measured); now the fit's solves share time_limit. Each
    # fake solve takes ``overrun`` times the limit it was given (3: a solver that
    # overshoots, or model building that eats the budget)
    clock = _FakeClock()
    monkeypatch.setattr(mibp_module, "_clock", clock)

    def solve_using_the_whole_limit(data, objectives, time_limit, seed):
        assert 0.0 < time_limit <= 5.0
        clock.limits.append(time_limit)
        clock.now += overrun * time_limit * len(objectives)
        return [
            {"bound": np.nan, "status": "timelimit", "time": time_limit, "gap": np.nan}
            for _ in objectives
        ]

    name = "_scip_solve" if bound == "mibp" else "_lp_task"
    monkeypatch.setattr(mibp_module, name, solve_using_the_whole_limit)
    X, y = _moons(20)
    cert = MIBPCertifier(bound=bound, max_epochs=40, time_limit=5.0, random_state=0).fit(X, y)
    statuses = [s["status"] for s in cert.solver_stats_]
    assert len(statuses) == 40 * 2 * 3
    if overrun == 1.0:  # the shares add up to the budget, every epoch gets its share
        assert clock.now <= 5.0 * (1 + 1e-12)
        assert "time_limit" not in statuses
    else:  # solving stops once the budget is spent: at most one epoch beyond it
        assert clock.now <= 5.0 + overrun * 5.0 / 40 * (1 + 1e-12)
        assert statuses[-1] == "time_limit"
    # the budget never costs soundness: here every solve failed, so the boxes are the
    # interval ones
    np.testing.assert_array_equal(
        cert.param_bounds_,
        MIBPCertifier(bound="interval", max_epochs=40, random_state=0).fit(X, y).param_bounds_,
    )


def test_time_limit_bounds_certify(monkeypatch):
    clock = _FakeClock()
    monkeypatch.setattr(mibp_module, "_clock", clock)
    X, y = _moons(20)
    cert = MIBPCertifier(
        hidden_layer_sizes=(2,), bound="lp", max_epochs=2, lr=0.5, time_limit=3.0, random_state=0
    ).fit(X, y)

    def certify_using_the_whole_limit(
        tl, tu, x, n_hidden, n_out, pred, nominal, backend, time_limit, seed
    ):
        clock.limits.append(time_limit)
        clock.now += time_limit * len(nominal)
        return False

    monkeypatch.setattr(mibp_module, "_certify_row", certify_using_the_whole_limit)
    start = clock.now
    X_test = np.random.default_rng(0).normal(size=(50, 2))
    cert.certify(X_test)
    assert clock.now - start <= 3.0 * (1 + 1e-12)
    assert len(clock.limits) > 0


def test_certified_accuracy_on_1d_x_says_reshape():
    X, y = _moons(20)
    cert = MIBPCertifier(bound="interval", max_epochs=2, random_state=0).fit(X, y)
    # was: "inconsistent numbers of samples" (the length of the row against y's)
    with pytest.raises(ValueError, match="(?s)Expected 2D array.*Reshape"):
        cert.certified_accuracy(X[0], y[:1])
    with pytest.raises(ValueError, match="Expected 2D array"):
        cert.certified_accuracy(X[:, 0], y)
