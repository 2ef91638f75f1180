"""LiRAMembershipInference on language models (issue 39).

- ``LiRALMFit``: time to fit 8 character GPT-2 references (1 block, n_embd 32, 100 steps)
  on 64 paragraphs of the Python docs at ``n_jobs`` 1 and 2; their ratio is the parallel
  speed-up (each worker keeps to one torch thread);
- ``LiRALMQuality``: the report's LM setting (``sklearn_cispa.report.lm_lira_setting``,
  quick size: 128 paragraphs, 8 references, 2 targets), fitted once in ``setup_cache``:
  AUC and TPR at 1% FPR of online LiRA tracked beside the loss (global threshold)
  attack, and their TPR ratio.

Under ``SKLEARN_CISPA_BENCH_SMOKE=1`` the models train for a few steps on a smaller pool:
the run checks that the benchmarks work, not the figures.
"""

import warnings

from ._common import SEED, SMOKE, require


def _audit(n_pool, n_reference, n_targets, max_steps, n_jobs):
    from sklearn_cispa.privacy import LiRAMembershipInference
    from sklearn_cispa.report import lm_pool, lm_reference_model

    pool, tokenizer = lm_pool(SEED, n_pool)
    est = lm_reference_model(tokenizer, n_layer=1, max_steps=max_steps)
    return pool, LiRAMembershipInference(est, n_reference=n_reference, n_targets=n_targets,
                                         n_jobs=n_jobs, random_state=SEED)


class LiRALMFit:
    params = ([1, 2],)
    param_names = ["n_jobs"]
    timeout = 600

    def setup(self, n_jobs):
        require("transformers")
        import torch

        self._threads = torch.get_num_threads()
        torch.set_num_threads(1)
        self.pool, self.lira = _audit(32 if SMOKE else 64, 2 if SMOKE else 8, 0,
                                      3 if SMOKE else 100, n_jobs)

    def teardown(self, n_jobs):
        import torch

        torch.set_num_threads(self._threads)

    def time_fit_references(self, n_jobs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.lira.fit(self.pool)


class LiRALMQuality:
    timeout = 900
    unit = "rate"

    def setup_cache(self):
        require("transformers")
        import torch

        from sklearn_cispa.report import lm_lira_audit, lm_lira_setting

        torch.set_num_threads(1)
        cfg = lm_lira_setting(quick=True)
        cfg["n_order_targets"] = 0
        if SMOKE:
            cfg.update(n_pool=32, n_reference=2, n_targets=2, max_steps=3)
        lira, _, _ = lm_lira_audit(SEED, **cfg)
        res = lira.evaluate(fprs=(0.01,))
        return {"auc": res["auc"], "tpr1": res["tpr_at_fpr"][0.01],
                "loss_auc": res["baseline_auc"],
                "loss_tpr1": res["baseline_tpr_at_fpr"][0.01]}

    def track_auc_lira(self, cache):
        return cache["auc"]

    def track_tpr_at_1pct_fpr_lira(self, cache):
        return cache["tpr1"]

    def track_auc_loss_attack(self, cache):
        return cache["loss_auc"]

    def track_tpr_at_1pct_fpr_loss_attack(self, cache):
        return cache["loss_tpr1"]

    def track_tpr_ratio_lira_over_loss_attack(self, cache):
        return cache["tpr1"] / max(cache["loss_tpr1"], 1e-12)
