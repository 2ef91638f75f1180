"""Audit: extreme but legal settings and user errors of the memorization field.

Each test failed on the code before the audit fix it names.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_cispa.memorization import CharMLPLanguageModel, CriticalNeuronLocator

DOCS = ["la la lu. code 1234. la lu la."] * 20


@pytest.fixture(scope="module")
def lm():
    return CharMLPLanguageModel(context=8, hidden=32, max_epochs=30, lr=1e-2,
                                random_state=0).fit(DOCS)


@pytest.fixture(scope="module")
def ref(lm):
    return np.stack([lm.encode("la lu la la lu. lu la.")] * 4)


def _localize(lm, ref, **params):
    loc = CriticalNeuronLocator(lm.module_, **params).fit(ref)
    return loc.localize([lm.encode("code ")], [lm.encode("1234")])[0]


@pytest.mark.parametrize("params, same_as", [
    (dict(theta_start=1e12), {}),                       # was ~2e12 loop passes
    (dict(theta_step=1e-9), dict(theta_step=1e-3)),     # was ~7e9 oracle calls
    # steps lost in float rounding at this magnitude
    (dict(theta_start=1e12, theta_step=1e-12, theta_min=-1e12), dict(theta_step=1e-3)),
])
def test_threshold_schedule_finishes_in_bounded_time(lm, ref, params, same_as):
    # the old loop lowered theta one step at a time and re-called the oracle on an
    # unchanged set: these legal settings ran for hours. The guard is the oracle-call
    # count (a hang shows as a test that never ends), not the elapsed time.
    res = _localize(lm, ref, **params)
    assert res["localized"]
    # bounded by the number of distinct threshold sets (units + 1), the bisection
    # (log2 units) and the unit pass (units), plus the first call: 32 units here
    assert res["n_oracle_calls"] <= 1 + 33 + 5 + 32
    # the same units as a schedule on the same grid (a half-step grid, or a fine one)
    assert res["neurons"] == _localize(lm, ref, **same_as)["neurons"]


def test_unchanged_sets_are_not_requeried(lm, ref):
    # the set of outliers changes ~10 times between theta 8 and 1: a fine step must not
    # multiply the oracle calls (it took 4050 calls at theta_step=1e-3 before the fix)
    coarse = _localize(lm, ref)
    fine = _localize(lm, ref, theta_step=1e-3)
    assert fine["n_oracle_calls"] <= coarse["n_oracle_calls"] + 40
    assert coarse["neurons"] == _localize(lm, ref, theta_step=0.5)["neurons"]


@pytest.mark.parametrize("shift", [100, -100])
def test_token_ids_outside_the_vocabulary_raise_a_clear_error(lm, ref, shift):
    # was torch's "Class values must be smaller than num_classes" / "non-negative"
    with pytest.raises(ValueError, match="token ids must lie in"):
        CriticalNeuronLocator(lm.module_).fit(ref + shift)
    loc = CriticalNeuronLocator(lm.module_).fit(ref)
    with pytest.raises(ValueError, match="token ids must lie in"):
        loc.localize([np.array([999])], [np.array([1])])


@pytest.mark.parametrize("n_chars", [-1, 1.5, "3"])
def test_complete_rejects_a_bad_length(lm, n_chars):
    # -1 returned "" and 1.5 returned one character, silently
    with pytest.raises(ValueError, match="n_chars"):
        lm.complete("code ", n_chars)


def test_diverged_training_warns(lm):
    # lr=1e3 ended with a finite loss of ~700 nats per character (perplexity 1e293) and
    # no warning
    with pytest.warns(ConvergenceWarning, match="uniform guess"):
        CharMLPLanguageModel(context=4, hidden=16, max_epochs=20, lr=1e3,
                             random_state=0).fit(DOCS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        CharMLPLanguageModel(context=8, hidden=32, max_epochs=30, lr=1e-2,
                             random_state=0).fit(DOCS)


def test_overflowing_logits_raise_instead_of_decoding_garbage(lm, ref):
    # scale=1e300 turned the logits into inf/NaN; argmax then picked the first NaN and
    # complete() returned " ..." while the oracle called the string "not memorised"
    from sklearn_cispa.memorization import NeuronMask, greedy_extraction_oracle

    units = [("act", u) for u in range(32)]
    with NeuronMask(lm.module_, units, scale=1e300):
        with pytest.raises(ValueError, match="not finite"):
            lm.complete("code ", 4)
        with pytest.raises(ValueError, match="not finite"):
            greedy_extraction_oracle(lm.module_, lm.encode("code "), lm.encode("1234"))
    assert lm.complete("code ", 4) == "1234"
