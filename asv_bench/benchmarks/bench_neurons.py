"""CriticalNeuronLocator (issue 21): statistics time, localisation time per canary, and
the quality of the located units beside the in-library baselines at the same budget.

One character model is trained on the planted-canary corpus in ``setup_cache`` (the CI
setting of the report row's quick mode). No package localises memorisation neurons, so
the peers are in-library baselines after Chang et al. (activation ranking) and a matched
random zero-out; ``track_*`` record, per method, the fraction of canaries whose greedy
extraction stops, the held-out perplexity change and the retention of the other canaries,
and the exact smallest zeroing set (``report.minimal_zero_set``) as the floor of the unit
count.
"""

import numpy as np

from ._common import SEED, SMOKE, limit_torch_threads

SETTING = dict(n_chars=10000, n_canaries=5, n_copies=20, heldout_chars=4000, max_epochs=5,
               alpha=1e-4, hidden=128)
if SMOKE:  # the CI smoke run: 2 canaries in a smaller model, both still memorised
    SETTING = dict(SETTING, n_chars=4000, n_canaries=2, heldout_chars=1000, hidden=64)


def _trained():
    from sklearn_cispa.report import canary_benchmark, train_canary_model

    limit_torch_threads()
    lm, heldout, canaries = train_canary_model(SEED, **SETTING)
    out = canary_benchmark(lm, heldout, canaries, random_state=SEED)
    out.pop("locator")  # rebuilt (and timed) in setup
    return lm, heldout, canaries, out


class CanaryLocalisation:
    timeout = 300

    def setup_cache(self):
        return _trained()

    def setup(self, cache):
        from sklearn_cispa.memorization import CriticalNeuronLocator
        from sklearn_cispa.report import reference_ids

        limit_torch_threads()
        self.lm, self.heldout, self.canaries, self.out = cache
        self.X_ref = reference_ids(self.lm, self.heldout)
        self.loc = CriticalNeuronLocator(self.lm.module_).fit(self.X_ref)
        self.prefix = [self.lm.encode(self.canaries[0][0])]
        self.target = [self.lm.encode(self.canaries[0][1])]

    def time_fit_statistics(self, cache):
        self.loc.fit(self.X_ref)

    def time_localize_one_canary(self, cache):
        self.loc.localize(self.prefix, self.target)

    def peakmem_fit_statistics(self, cache):
        self.loc.fit(self.X_ref)

    def _rows(self):
        return [r for r in self.out["rows"] if r["localized"]]

    def track_units_per_canary(self, cache):
        return float(np.mean([r["units"] for r in self._rows()]))

    track_units_per_canary.unit = "units"

    def track_exact_minimum_units_per_canary(self, cache):
        # the smallest zeroing set that stops extraction (report.minimal_zero_set)
        return float(np.mean([r["min_units"] for r in self._rows()]))

    track_exact_minimum_units_per_canary.unit = "units"

    def track_units_over_exact_minimum(self, cache):
        return float(np.mean([r["units"] / r["min_units"] for r in self._rows()]))

    track_units_over_exact_minimum.unit = "ratio"

    def track_stopped_locator(self, cache):
        return float(np.mean([not r["extracted_after"] for r in self._rows()]))

    track_stopped_locator.unit = "fraction"

    def track_stopped_activation_ranking(self, cache):
        return float(np.mean([not r["act_rank_extracted_after"] for r in self._rows()]))

    track_stopped_activation_ranking.unit = "fraction"

    def track_stopped_random_zero_out(self, cache):
        return float(np.mean([1.0 - r["control_extracted"] for r in self._rows()]))

    track_stopped_random_zero_out.unit = "fraction"

    def track_ppl_change_locator(self, cache):
        return float(100 * np.mean([r["ppl_change"] for r in self._rows()]))

    track_ppl_change_locator.unit = "%"

    def track_ppl_change_activation_ranking(self, cache):
        return float(100 * np.mean([r["act_rank_ppl_change"] for r in self._rows()]))

    track_ppl_change_activation_ranking.unit = "%"

    def track_ppl_change_random_zero_out(self, cache):
        return float(100 * np.mean([r["control_ppl_change"] for r in self._rows()]))

    track_ppl_change_random_zero_out.unit = "%"

    def track_ppl_change_exact_minimum(self, cache):
        return float(100 * np.mean([r["min_set_ppl_change"] for r in self._rows()]))

    track_ppl_change_exact_minimum.unit = "%"

    def track_others_kept_locator(self, cache):
        return float(np.nanmean([r["others_kept"] for r in self._rows()]))

    track_others_kept_locator.unit = "fraction"

    def track_others_kept_activation_ranking(self, cache):
        return float(np.nanmean([r["act_rank_others_kept"] for r in self._rows()]))

    track_others_kept_activation_ranking.unit = "fraction"
