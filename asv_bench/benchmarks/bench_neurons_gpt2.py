"""CriticalNeuronLocator on a transformer (issue 38): a 2-block character GPT-2 built by
TransformerLanguageModel from its config and trained on the planted-canary corpus.

``track_*`` record, per seed-0 model, the issue's targets (share of memorised canaries
stopped by <= 8 located units, held-out perplexity change, matched random controls,
retention of the other canaries), the greedy margin search (``method="greedy"``) as the
in-library peer, and gradient ascent on the canary (the editing baseline) at the mask's
perplexity cost. The smoke run (``SKLEARN_CISPA_BENCH_SMOKE=1``) uses the report row's
quick setting; the full run the report's full setting.
"""

import numpy as np

from ._common import SEED, SMOKE, limit_torch_threads, require


def _trained():
    from sklearn_cispa.report import (
        canary_benchmark,
        canary_transformer_setting,
        train_canary_transformer,
    )

    limit_torch_threads()
    lm, heldout, canaries = train_canary_transformer(SEED, **canary_transformer_setting(SMOKE))
    out = canary_benchmark(lm, heldout, canaries, random_state=SEED, minimal=False,
                           greedy=True, editing=True, n_controls=1 if SMOKE else 5,
                           editing_steps=10 if SMOKE else 30)
    out.pop("locator")
    return lm, heldout, canaries, out


class CanaryLocalisationGPT2:
    timeout = 900

    def setup_cache(self):
        require("transformers")
        return _trained()

    def setup(self, cache):
        from sklearn_cispa.memorization import CriticalNeuronLocator
        from sklearn_cispa.report import reference_ids

        limit_torch_threads()
        self.lm, self.heldout, self.canaries, self.out = cache
        X_ref = reference_ids(self.lm, self.heldout)
        self.loc = CriticalNeuronLocator(self.lm).fit(X_ref)
        self.greedy = CriticalNeuronLocator(self.lm, method="greedy").fit(X_ref)
        # the prompt as complete() reads it: after the beginning token
        self.prefix = [self.lm.encode(self.canaries[0][0], add_special_tokens=True)]
        self.target = [self.lm.encode(self.canaries[0][1])]

    def time_localize_one_canary(self, cache):
        self.loc.localize(self.prefix, self.target)

    def time_localize_one_canary_greedy(self, cache):
        self.greedy.localize(self.prefix, self.target)

    def _mem(self):
        return [r for r in self.out["rows"] if r["memorized"]]

    def _loc(self):
        return [r for r in self._mem() if r["localized"]]

    def track_stopped_le_8_units(self, cache):
        mem = self._mem()
        ok = [r for r in self._loc() if not r["extracted_after"] and r["units"] <= 8]
        return len(ok) / max(len(mem), 1)

    track_stopped_le_8_units.unit = "fraction"

    def track_stopped_le_8_units_greedy(self, cache):
        mem = self._mem()
        ok = [r for r in mem if r.get("greedy_localized") and not r["greedy_extracted_after"]
              and r["greedy_units"] <= 8]
        return len(ok) / max(len(mem), 1)

    track_stopped_le_8_units_greedy.unit = "fraction"

    def track_median_oracle_calls(self, cache):
        return float(np.median([r["n_oracle_calls"] for r in self._loc()]))

    track_median_oracle_calls.unit = "calls"

    def track_perplexity_change_percent(self, cache):
        return 100 * float(np.mean([r["ppl_change"] for r in self._loc()]))

    track_perplexity_change_percent.unit = "%"

    def track_random_control_stopped(self, cache):
        return float(np.mean([1 - r["control_extracted"] for r in self._loc()]))

    track_random_control_stopped.unit = "fraction"

    def track_others_kept(self, cache):
        return float(np.nanmean([r["others_kept"] for r in self._loc()]))

    track_others_kept.unit = "fraction"

    def track_gradient_ascent_stopped_at_equal_cost(self, cache):
        return float(np.mean([not r["ga_extracted_after"] for r in self._loc()]))

    track_gradient_ascent_stopped_at_equal_cost.unit = "fraction"

    def track_gradient_ascent_others_kept_at_equal_cost(self, cache):
        return float(np.nanmean([r["ga_others_kept"] for r in self._loc()]))

    track_gradient_ascent_others_kept_at_equal_cost.unit = "fraction"
