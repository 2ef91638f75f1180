"""MIBPCertifier: the exact step program (SCIP) beside its LP relaxation and intervals.

The three ``bound`` options share one nominal run (same data, seed, learning rate and
epochs), so ``params_`` is identical and only the boxes differ. Tracked: wall time per
training step and per certified test row, total box width after the last step and
certified accuracy against epsilon, on two moons and on breast cancer (three features).
There is no certification peer on PyPI; the interval bound is FullCert's baseline.
Under ``SKLEARN_CISPA_BENCH_SMOKE=1`` (the CI smoke run) every run trains one or two
epochs: the run checks that the benchmarks work, not the figures.
"""

import time

import numpy as np

from ._common import SEED, SMOKE

BOUNDS = ["interval", "lp", "mibp"]
EPSILONS = [0.01, 0.05]
N_EPOCHS = {"moons": 2, "breast_cancer": 1, "mlp": 1} if SMOKE else {
    "moons": 6, "breast_cancer": 3, "mlp": 2}


def _moons():
    from sklearn.datasets import make_moons

    X, y = make_moons(n_samples=130, noise=0.1, random_state=SEED)
    return X[:30], y[:30], X[30:], y[30:]


def _breast_cancer():
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    X = X[:, [0, 1, 27]]  # mean radius, mean texture, worst concave points
    rng = np.random.default_rng(SEED)
    idx = rng.permutation(len(y))
    train, test = idx[:30], idx[30:230]
    scaler = StandardScaler().fit(X[train])
    return scaler.transform(X[train]), y[train], scaler.transform(X[test]), y[test]


def _run(data, bound, epsilon, n_epochs, hidden_layer_sizes=()):
    from sklearn_cispa.certification import MIBPCertifier

    X, y, X_test, y_test = data
    est = MIBPCertifier(
        hidden_layer_sizes=hidden_layer_sizes,
        epsilon=epsilon,
        max_epochs=n_epochs,
        lr=0.5,
        bound=bound,
        time_limit=10.0,
        random_state=SEED,
    )
    start = time.perf_counter()
    est.fit(X, y)
    fit_time = time.perf_counter() - start
    start = time.perf_counter()
    acc = est.certified_accuracy(X_test, y_test)
    cert_time = time.perf_counter() - start
    return {
        "epoch_s": fit_time / n_epochs,
        "cert_ms": 1e3 * cert_time / len(y_test),
        "acc": acc,
        "width": float(np.sum(est.param_bounds_[1] - est.param_bounds_[0])),
    }


class EpsilonSweep:
    """Certified accuracy and box width against epsilon, per bound and dataset."""

    params = [["moons", "breast_cancer"], BOUNDS, EPSILONS]
    param_names = ["dataset", "bound", "epsilon"]
    timeout = 300

    def setup_cache(self):
        out = {}
        for name, loader in (("moons", _moons), ("breast_cancer", _breast_cancer)):
            data = loader()
            for bound in BOUNDS:
                for eps in EPSILONS:
                    out[(name, bound, eps)] = _run(data, bound, eps, N_EPOCHS[name])
        return out

    def track_certified_accuracy(self, results, dataset, bound, epsilon):
        return results[(dataset, bound, epsilon)]["acc"]

    track_certified_accuracy.unit = "accuracy"

    def track_box_width(self, results, dataset, bound, epsilon):
        return results[(dataset, bound, epsilon)]["width"]

    track_box_width.unit = "sum of widths"

    def track_seconds_per_epoch(self, results, dataset, bound, epsilon):
        return results[(dataset, bound, epsilon)]["epoch_s"]

    track_seconds_per_epoch.unit = "seconds"


class MLPCertificate:
    """One-hidden-layer ReLU net (4 units): time per epoch and per certified row."""

    params = [BOUNDS]
    param_names = ["bound"]
    timeout = 300

    def setup_cache(self):
        X, y, X_test, y_test = _moons()
        data = (X[:12], y[:12], X_test[:20], y_test[:20])
        return {b: _run(data, b, 0.02, N_EPOCHS["mlp"], hidden_layer_sizes=(4,)) for b in BOUNDS}

    def track_seconds_per_epoch(self, results, bound):
        return results[bound]["epoch_s"]

    track_seconds_per_epoch.unit = "seconds"

    def track_ms_per_certified_row(self, results, bound):
        return results[bound]["cert_ms"]

    track_ms_per_certified_row.unit = "milliseconds"


class FitTime:
    """Wall time of a 6-step fit on 30 two-moons rows at epsilon = 0.01."""

    params = [BOUNDS]
    param_names = ["bound"]
    timeout = 120

    def setup(self, bound):
        from sklearn_cispa.certification import MIBPCertifier

        self.X, self.y, self.X_test, _ = _moons()
        self.est = MIBPCertifier(
            epsilon=0.01,
            max_epochs=N_EPOCHS["moons"],
            lr=0.5,
            bound=bound,
            random_state=SEED,
        )

    def time_fit(self, bound):
        self.est.fit(self.X, self.y)
