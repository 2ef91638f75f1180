"""AugmentedIVRegressor (issue 3) beside least squares and classical IV on the same data.

Data: the paper's linear simulation (``make_confounded_linear``, d = 32, confounding 1,
gamma 1) with its oracle null-space translation, drawn once per ``setup`` with a fixed
seed; every method gets exactly the same augmented ``(Xa, G)`` through a callable.

- ``SideBySide``: fit time and nCER of ERM, DA+ERM (``LinearRegression``), DA+IVL
  (fixed alpha, ``alpha=0`` and ``alpha="cv"``) and ivmodels' k-class at n = 2048 and
  20000. 2SLS (linearmodels ``IV2SLS``) needs at least as many instruments as
  regressors, which an outcome-invariant augmentation of this simulation cannot give
  (G has d - 1 columns), so it runs on Gaussian jitter composed with the translation
  (p = 2d - 1), next to DA+IVL-CV on the same composed data.
- ``Scaling``: fit time and peak memory in n up to 10^6 rows (d = 8), next to
  ``LinearRegression`` on the same augmented data. The closed form works on a QR of G
  and of the augmented X, so it is O(n).
"""

import numpy as np

from ._common import SEED, require


def _ncer(h, f):
    err = float(np.sum((np.asarray(h) - f) ** 2))
    return err / (err + float(np.sum(f**2)))


class _Fixed:
    """Hand every method the same pre-drawn augmentation (picklable, no closure)."""

    def __init__(self, Xa, G):
        self.Xa, self.G = Xa, G

    def augment(self, X, random_state=None):
        return self.Xa, self.G


def _data(n, d, composed=False):
    from sklearn_cispa.causal import ComposeAugmentations, GaussianNoiseAugmentation
    from sklearn_cispa.datasets import make_confounded_linear

    X, y, f, aug = make_confounded_linear(n, d, 1.0, random_state=SEED)
    if composed:
        aug = ComposeAugmentations([GaussianNoiseAugmentation(0.1), aug])
    Xa, G = aug.augment(X, np.random.default_rng(SEED + 1))
    return X, y, f, Xa, G


class SideBySide:
    params = [2048, 20000]
    param_names = ["n_samples"]
    timeout = 120

    def setup(self, n):
        from sklearn.linear_model import LinearRegression

        from sklearn_cispa.causal import AugmentedIVRegressor

        self.LinearRegression = LinearRegression
        self.Est = AugmentedIVRegressor
        self.X, self.y, self.f, self.Xa, self.G = _data(n, 32)
        self.aug = _Fixed(self.Xa, self.G)

    def _ivl(self, alpha):
        return self.Est(self.aug, alpha=alpha, random_state=SEED).fit(self.X, self.y)

    # -- fit time -------------------------------------------------------------------
    def time_fit_ivl_alpha_0_1(self, n):
        self._ivl(0.1)

    def time_fit_ivl_cv(self, n):
        self._ivl("cv")

    def time_fit_linear_regression_da_erm(self, n):
        self.LinearRegression().fit(self.Xa, self.y)

    def time_fit_ivmodels_kclass(self, n):
        ivmodels = require("ivmodels")
        ivmodels.KClass(kappa=1 / 1.1).fit(self.Xa, self.y, Z=self.G)

    # -- quality (nCER, lower is better; 0.5 is the trivial h = 0) -------------------
    def track_ncer_erm(self, n):
        return _ncer(self.LinearRegression().fit(self.X, self.y).coef_, self.f)

    def track_ncer_da_erm(self, n):
        return _ncer(self.LinearRegression().fit(self.Xa, self.y).coef_, self.f)

    def track_ncer_ivl_cv(self, n):
        return _ncer(self._ivl("cv").coef_, self.f)

    def track_ncer_ivl_alpha_0(self, n):
        return _ncer(self._ivl(0.0).coef_, self.f)

    def track_ncer_ivmodels_kclass_alpha_0_1(self, n):
        ivmodels = require("ivmodels")
        return _ncer(ivmodels.KClass(kappa=1 / 1.1).fit(self.Xa, self.y, Z=self.G).coef_, self.f)

    for _name in (
        "track_ncer_erm",
        "track_ncer_da_erm",
        "track_ncer_ivl_cv",
        "track_ncer_ivl_alpha_0",
        "track_ncer_ivmodels_kclass_alpha_0_1",
    ):
        locals()[_name].unit = "nCER"
    del _name


class SideBySideComposed:
    """2SLS needs p >= d: Gaussian jitter then the translation (p = 2d - 1)."""

    params = [2048, 20000]
    param_names = ["n_samples"]
    timeout = 120

    def setup(self, n):
        from sklearn_cispa.causal import AugmentedIVRegressor

        self.Est = AugmentedIVRegressor
        self.X, self.y, self.f, self.Xa, self.G = _data(n, 32, composed=True)

    def time_fit_linearmodels_iv2sls(self, n):
        lm = require("linearmodels.iv")
        lm.IV2SLS(self.y, None, self.Xa, self.G).fit(cov_type="unadjusted")

    def track_ncer_linearmodels_iv2sls(self, n):
        lm = require("linearmodels.iv")
        res = lm.IV2SLS(self.y, None, self.Xa, self.G).fit(cov_type="unadjusted")
        return _ncer(np.asarray(res.params), self.f)

    track_ncer_linearmodels_iv2sls.unit = "nCER"

    def track_ncer_ivl_cv(self, n):
        est = self.Est(_Fixed(self.Xa, self.G), alpha="cv", random_state=SEED)
        return _ncer(est.fit(self.X, self.y).coef_, self.f)

    track_ncer_ivl_cv.unit = "nCER"


class Scaling:
    params = [10**3, 10**4, 10**5, 10**6]
    param_names = ["n_samples"]
    timeout = 120

    def setup(self, n):
        from sklearn.linear_model import LinearRegression

        from sklearn_cispa.causal import AugmentedIVRegressor

        self.LinearRegression = LinearRegression
        self.Est = AugmentedIVRegressor
        self.X, self.y, self.f, self.Xa, self.G = _data(n, 8)
        self.aug = _Fixed(self.Xa, self.G)

    def time_fit_ivl_alpha_0_1(self, n):
        self.Est(self.aug, alpha=0.1).fit(self.X, self.y)

    def time_fit_linear_regression_da_erm(self, n):
        self.LinearRegression().fit(self.Xa, self.y)

    def peakmem_fit_ivl_alpha_0_1(self, n):
        self.Est(self.aug, alpha=0.1).fit(self.X, self.y)
