"""LocalSGDRegressor (issue 18): time per round, Flower's FedAvg side by side, the bias cell.

Data: quadratic machines from ``make_heterogeneous_quadratics`` (d = 10, 100 rows per
machine, no intercept), drawn once per ``setup``.

- ``TimePerRound``: a fit of R = 20 rounds against M and K, for "local" and "minibatch",
  full batch and b = 32 (divide by 20 for the time per round). Full-batch deterministic
  local GD computes a round as one affine map, so its time does not grow with K.
- ``Ratios``: local/minibatch fit time in one process run (K = 10, b = 32), a ratio
  rather than an absolute time.
- ``FlowerFedAvg``: Flower's FedAvg aggregation (``flwr.server.strategy.aggregate``,
  sample-weighted) over numpy clients that each take K full-batch GD steps from the same
  zeros, beside ``LocalSGDRegressor(averaging="samples")``; tracks the largest
  coefficient difference (expected below 1e-10) and the time ratio. Skipped when
  ``flwr`` is not installed (it is not in any extra: its server stack is heavy).
- ``BiasCell``: the stationary bias ``F(x_R) - F*`` of local GD at tau = 0.09,
  zeta* = 1.13, K = 50 (eta = 0.5, R = 2000), the spec's table cell (3.1e-3 there).
"""

import time

import numpy as np

from ._common import SEED, require


def _data(M, d=10, n=100, tau=0.009, zeta=1.0):
    from sklearn_cispa.datasets import make_heterogeneous_quadratics

    return make_heterogeneous_quadratics(n_machines=M, n_features=d, tau=tau, zeta=zeta,
                                         mu=0.1, n_samples_per_machine=n, random_state=SEED)


class TimePerRound:
    """Fit time of 20 rounds against M, K, the algorithm and the batch size."""

    params = [[4, 16], [1, 10, 50], ["local", "minibatch"], ["full", "32"]]
    param_names = ["n_machines", "local_steps", "algorithm", "batch_size"]
    timeout = 120

    def setup(self, M, K, algorithm, batch):
        from sklearn_cispa.federated import LocalSGDRegressor

        self.X, self.y, self.g = _data(M)
        self.est = LocalSGDRegressor(
            algorithm=algorithm, local_steps=K, rounds=20, fit_intercept=False,
            batch_size=None if batch == "full" else int(batch), random_state=SEED,
        )

    def time_fit(self, M, K, algorithm, batch):
        self.est.fit(self.X, self.y, groups=self.g)

    def peakmem_fit(self, M, K, algorithm, batch):
        self.est.fit(self.X, self.y, groups=self.g)


class Ratios:
    """Local over minibatch fit time, measured in one process run."""

    unit = "ratio"

    def setup(self):
        from sklearn_cispa.federated import LocalSGDRegressor

        self.X, self.y, self.g = _data(8)
        self.make = lambda algorithm: LocalSGDRegressor(
            algorithm=algorithm, local_steps=10, rounds=20, batch_size=32,
            fit_intercept=False, random_state=SEED,
        )

    def track_local_over_minibatch_time(self):
        times = {}
        for algorithm in ("local", "minibatch", "local", "minibatch"):
            start = time.perf_counter()
            self.make(algorithm).fit(self.X, self.y, groups=self.g)
            times[algorithm] = min(times.get(algorithm, np.inf), time.perf_counter() - start)
        return times["local"] / times["minibatch"]


def _flower_fedavg(X, y, g, K, R, eta, aggregate):
    """FedAvg with Flower's aggregation over numpy clients taking K full-batch GD steps."""
    shards = [(X[g == m], y[g == m]) for m in np.unique(g)]
    w = np.zeros(X.shape[1])
    for _ in range(R):
        results = []
        for Xm, ym in shards:
            wm = w.copy()
            for _ in range(K):
                wm = wm - eta * Xm.T @ (Xm @ wm - ym) / len(ym)
            results.append(([wm], len(ym)))
        w = aggregate(results)[0]
    return w


class FlowerFedAvg:
    """Flower's FedAvg aggregation beside LocalSGDRegressor on the same shards."""

    params = [[10, 50]]
    param_names = ["local_steps"]
    timeout = 120

    def setup(self, K):
        self.aggregate = require("flwr.server.strategy.aggregate").aggregate
        from sklearn_cispa.federated import LocalSGDRegressor

        self.X, self.y, self.g = _data(8)
        self.est = LocalSGDRegressor(local_steps=K, rounds=20, step_size=0.5,
                                     averaging="samples", fit_intercept=False)

    def time_round_flower(self, K):
        _flower_fedavg(self.X, self.y, self.g, K, 1, 0.5, self.aggregate)

    def time_fit_cispa_20_rounds(self, K):
        self.est.fit(self.X, self.y, groups=self.g)

    def track_max_coef_difference(self, K):
        ours = self.est.fit(self.X, self.y, groups=self.g).coef_
        theirs = _flower_fedavg(self.X, self.y, self.g, K, 20, 0.5, self.aggregate)
        return float(np.max(np.abs(ours - theirs)))

    track_max_coef_difference.unit = "max |coef difference|"

    def track_flower_over_cispa_time(self, K):
        start = time.perf_counter()
        _flower_fedavg(self.X, self.y, self.g, K, 20, 0.5, self.aggregate)
        flower = time.perf_counter() - start
        start = time.perf_counter()
        self.est.fit(self.X, self.y, groups=self.g)
        return flower / (time.perf_counter() - start)

    track_flower_over_cispa_time.unit = "ratio"


class BiasCell:
    """The bias table's cell (tau 0.09, zeta* 1.13, K 50) of experiment 3."""

    unit = "F(x_R) - F*"
    timeout = 120

    def setup(self):
        from sklearn_cispa.report import local_gd_bias

        self.bias = local_gd_bias

    def track_bias_tau009_zeta113_K50(self):
        return self.bias(0.09, 1.13, 50)[0]

    def track_bias_over_tau_zeta_sq_K50(self):
        bias, tz = self.bias(0.09, 1.13, 50)
        return bias / tz**2

    track_bias_over_tau_zeta_sq_K50.unit = "c_K"
