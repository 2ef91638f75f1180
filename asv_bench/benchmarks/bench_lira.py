"""LiRAMembershipInference (issue 19): reference-model training, scoring, attack quality.

- ``LiRAFit``: time to fit 32 MLP(64) references on a 500-row digits pool at
  ``n_jobs`` 1 and 2 (their ratio is the parallel speed-up; it includes starting the
  loky workers);
- ``LiRAScoring``: time of ``lira_scores`` (medians, sigmas, ratios) against the pool
  size, 64 references;
- ``LiRAQuality``: the spec's M = 32 row (500 digits, MLP(256) without weight decay,
  4 targets), fitted once in ``setup_cache``: AUC and TPR at 1% FPR of online LiRA
  (fixed sigma), tracked beside the loss (global threshold) attack and privacy-meter's
  reference attack (its per-example quantile threshold on the OUT references' losses,
  run through ``privacy_meter.hypothesis_test`` on the same statistics) when installed.

Under ``SKLEARN_CISPA_BENCH_SMOKE=1`` (the CI smoke run) the MLPs train for a few
iterations, ``n_jobs=2`` runs on threads (``_common`` makes threading joblib's default
backend there: no loky workers to start) and the quality row uses 8 smaller references:
the run checks that the benchmarks work, not the figures.
"""

import numpy as np

from ._common import SEED, SMOKE, require


def _digits(n_pool, seed=SEED):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    rows = np.random.default_rng(seed).permutation(len(y))[:n_pool]
    return X[rows] / 16.0, y[rows]


class LiRAFit:
    params = ([1, 2],)
    param_names = ["n_jobs"]
    timeout = 300

    def setup(self, n_jobs):
        from sklearn.neural_network import MLPClassifier

        from sklearn_cispa.privacy import LiRAMembershipInference

        self.X, self.y = _digits(500)
        # tasks of about 0.1 s each, so that the parallel speed-up is not all overhead
        self.lira = LiRAMembershipInference(
            MLPClassifier((64,), max_iter=10 if SMOKE else 100), n_reference=32, n_jobs=n_jobs,
            random_state=SEED,
        )

        # one BLAS thread in the calling process too (the parallel workers limit theirs)
        from threadpoolctl import threadpool_limits

        self._limits = threadpool_limits(1)

    def teardown(self, n_jobs):
        self._limits.restore_original_limits()

    def time_fit_32_references(self, n_jobs):
        self.lira.fit(self.X, self.y)

    def peakmem_fit_32_references(self, n_jobs):
        self.lira.fit(self.X, self.y)


class LiRAScoring:
    params = ([1_000, 10_000, 100_000],)
    param_names = ["n_pool"]

    def setup(self, n_pool):
        rng = np.random.default_rng(SEED)
        m = 64
        self.keep = np.argsort(rng.random((m, n_pool)), axis=0) < m // 2
        self.ref = (rng.normal(size=(m, n_pool)) + self.keep).astype(np.float32)
        self.target = rng.normal(size=n_pool)

    def time_lira_scores_64_references(self, n_pool):
        from sklearn_cispa.privacy import lira_scores

        lira_scores(self.keep, self.ref, self.target)


def _privacy_meter_reference_scores(lira):
    """privacy-meter's reference attack on LiRA's own statistics, as a score per row.

    Its ReferenceMetric flags a row as a member when the target's loss is below the
    alpha-quantile of the OUT references' losses on that row (``linear_itp_threshold_func``,
    the audit's default; the plain ``threshold_func`` of 1.0.1 calls ``np.quantile`` with
    the ``interpolation`` keyword that numpy 2 removed). The loss here is minus
    the statistic. Scanning alpha on a grid gives, per row, the largest alpha at which
    it is flagged; ranking rows by that gives the attack's ROC.
    """
    ht = require("privacy_meter.hypothesis_test")
    alphas = np.linspace(0.0, 1.0, 101)
    m = lira.n_reference
    scores = []
    for t in range(lira.n_targets):
        target_loss = -lira.target_stats_[t, :, 0].astype(np.float64)
        per_row = np.zeros(target_loss.shape[0])
        for i in range(target_loss.shape[0]):
            out_losses = -lira.ref_stats_[~lira.keep_[:m, i], i, 0].astype(np.float64)
            thresholds = np.asarray(ht.linear_itp_threshold_func(out_losses, alphas))
            flagged = target_loss[i] < thresholds
            per_row[i] = 1.0 - alphas[np.argmax(flagged)] if flagged.any() else 0.0
        scores.append(per_row)
    return np.concatenate(scores)


class LiRAQuality:
    timeout = 600
    unit = "rate"

    def setup_cache(self):
        from sklearn.metrics import roc_auc_score
        from threadpoolctl import threadpool_limits

        from sklearn_cispa.metrics import tpr_at_fpr
        from sklearn_cispa.report import lira_digits_audit

        # one BLAS thread, whatever numpy was started with (as in the tests)
        with threadpool_limits(1):
            size = dict(hidden=(32,), max_iter=40, n_reference=8) if SMOKE else dict(
                hidden=(256,), max_iter=400, n_reference=32)
            lira = lira_digits_audit(SEED, n_pool=500, n_targets=4, **size)
        res = lira.evaluate(fprs=(0.01,))
        out = {
            "auc": res["auc"], "tpr1": res["tpr_at_fpr"][0.01],
            "loss_auc": res["baseline_auc"], "loss_tpr1": res["baseline_tpr_at_fpr"][0.01],
        }
        try:
            pm = _privacy_meter_reference_scores(lira)
        except NotImplementedError:
            pass
        else:
            labels = lira.target_keep_.ravel()
            out["pm_auc"] = roc_auc_score(labels, pm)
            out["pm_tpr1"] = tpr_at_fpr(labels, pm, fpr=0.01)
        return out

    def track_auc_lira(self, cache):
        return cache["auc"]

    def track_tpr_at_1pct_fpr_lira(self, cache):
        return cache["tpr1"]

    def track_auc_loss_attack(self, cache):
        return cache["loss_auc"]

    def track_tpr_at_1pct_fpr_loss_attack(self, cache):
        return cache["loss_tpr1"]

    def track_auc_privacy_meter_reference(self, cache):
        if "pm_auc" not in cache:
            raise NotImplementedError("privacy_meter is not installed")
        return cache["pm_auc"]

    def track_tpr_at_1pct_fpr_privacy_meter_reference(self, cache):
        if "pm_tpr1" not in cache:
            raise NotImplementedError("privacy_meter is not installed")
        return cache["pm_tpr1"]
