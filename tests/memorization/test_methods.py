"""CriticalNeuronLocator's two methods (issue 38): the threshold procedure with its
margin-ranked refinement, and the greedy margin search baseline; bad input of issue 35."""

import numpy as np
import pytest
import torch

from sklearn_cispa.memorization import (
    CharMLPLanguageModel,
    CriticalNeuronLocator,
    extraction_rate,
    greedy_extraction_oracle,
    minimal_deactivation_set,
)

DOCS = ["la lu. code 1234. lu la. pin 9080."] * 20


@pytest.fixture(scope="module")
def lm():
    return CharMLPLanguageModel(context=8, hidden=32, max_epochs=30, lr=1e-2,
                                random_state=0).fit(DOCS)


@pytest.fixture(scope="module")
def ref(lm):
    return np.stack([lm.encode("la lu la la lu. lu la.")] * 4)


PAIRS = [("code ", "1234"), ("pin ", "9080")]


@pytest.mark.parametrize("method", ["threshold", "greedy"])
def test_located_sets_stop_extraction_and_respect_the_exact_minimum(lm, ref, method):
    loc = CriticalNeuronLocator(lm, method=method).fit(ref)
    results = loc.localize([lm.encode(p) for p, _ in PAIRS], [lm.encode(s) for _, s in PAIRS])
    for (p, s), res in zip(PAIRS, results, strict=True):
        assert lm.complete(p, len(s)) == s and res["memorized_before"]
        assert res["localized"]
        size, _ = minimal_deactivation_set(lm, p, s)
        # no set can beat the exact minimum (an independent computation)
        assert size <= len(res["neurons"]) <= res["n_initial"]
        with loc.deactivate(res["neurons"]):
            assert lm.complete(p, len(s)) != s
        # minimal for single removals (both methods end with a unit pass)
        for drop in res["neurons"]:
            rest = [nu for nu in res["neurons"] if nu != drop]
            if rest:
                with loc.deactivate(rest):
                    assert lm.complete(p, len(s)) == s


def test_greedy_counts_one_call_per_added_unit(lm, ref):
    calls = []

    def oracle(model, prefix, target):
        calls.append(1)
        return greedy_extraction_oracle(model, prefix, target)

    loc = CriticalNeuronLocator(lm, method="greedy", oracle=oracle, refine=False).fit(ref)
    [res] = loc.localize([lm.encode("code ")], [lm.encode("1234")])
    assert res["localized"] and res["theta"] is None
    # the memorisation check, then one call per unit added
    assert len(calls) == res["n_oracle_calls"] == 1 + len(res["neurons"])
    assert res["n_initial"] == len(res["neurons"])


def test_removal_effect_is_exact_on_a_window_model(lm, ref):
    # the window model's logits are linear in the hidden units: the first-order drop
    # of the margin when zeroing one unit is the exact drop (a closed form)
    loc = CriticalNeuronLocator(lm).fit(ref)
    prefix, target = lm.encode("code "), lm.encode("1234")
    drop, margins, pos, rival = loc._removal_effect(prefix, target, [], 0.0)
    module = lm.module_
    for unit in (0, 7, 31):
        with loc.deactivate([("act", unit)]):
            ids = torch.as_tensor(np.concatenate([prefix, target[:pos]])[None, :])
            with torch.no_grad():
                logits = module(ids)[0].double()
        after = float(logits[int(target[pos])] - logits[rival])
        before = margins[pos]
        assert after == pytest.approx(before - drop["act"][unit], abs=1e-5)


def test_bad_schedule_and_inputs(lm, ref):
    with pytest.raises(ValueError, match="theta_min=100 is above theta_start=8"):
        CriticalNeuronLocator(lm, theta_min=100).fit(ref)
    loc = CriticalNeuronLocator(lm).fit(ref)
    loc.set_params(theta_min=100)  # set after fit: refused at localize
    with pytest.raises(ValueError, match="theta_min"):
        loc.localize([lm.encode("code ")], [lm.encode("1234")])
    with pytest.raises(ValueError, match="method"):
        CriticalNeuronLocator(lm, method="best").fit(ref)
    text = np.array([["a", "b"], ["c", "d"]], dtype=object)
    with pytest.raises(ValueError, match="X must hold token ids"):
        CriticalNeuronLocator(lm).fit(text)
    with pytest.raises(ValueError, match="X must hold token ids"):
        CriticalNeuronLocator(lm).fit([[1, None], [2, 3]])
    # integer ids in an object array are still ids
    CriticalNeuronLocator(lm).fit(ref.astype(object))


@pytest.mark.parametrize("canaries", [["abc"], [("code ", 1234)], [("code ",)], [None]])
def test_extraction_rate_refuses_what_is_not_a_pair_of_strings(lm, canaries):
    with pytest.raises(ValueError, match=r"\(prefix, secret\) pairs"):
        extraction_rate(lm, canaries)
    assert extraction_rate(lm, [("code ", "1234")]) == 1.0
