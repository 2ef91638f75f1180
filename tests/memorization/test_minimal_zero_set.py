"""The exact smallest zeroing set of the window model (report helper), against brute force.

``minimal_zero_set`` is the independent oracle the planted-canary tests compare the
locator's set sizes with; here it is itself checked by enumerating every subset of the
hidden units of small trained models.
"""

import itertools

import pytest

from sklearn_cispa.memorization import CharMLPLanguageModel, NeuronMask
from sklearn_cispa.report import minimal_zero_set


def _extracted(lm, prefix, secret, units):
    with NeuronMask(lm.module_, units):
        return lm.complete(prefix, len(secret)) == secret


def _brute_force_minimum(lm, prefix, secret):
    n = lm.hidden
    for k in range(1, n + 1):
        for subset in itertools.combinations(range(n), k):
            if not _extracted(lm, prefix, secret, [("act", u) for u in subset]):
                return k
    return float("inf")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_minimal_zero_set_equals_brute_force(seed):
    docs = ["so we say kobe pin: 4711. then", "and zara pin: 9032. is it", "we go home."] * 8
    lm = CharMLPLanguageModel(context=10, hidden=10, max_epochs=30, lr=1e-2,
                              random_state=seed).fit(docs)
    checked = 0
    for prefix, secret in (("kobe pin: ", "4711"), ("zara pin: ", "9032")):
        if lm.complete(prefix, len(secret)) != secret:
            continue
        size, units = minimal_zero_set(lm, prefix, secret)
        assert size == _brute_force_minimum(lm, prefix, secret)
        if units:
            assert len(units) == size
            assert not _extracted(lm, prefix, secret, units)
        checked += 1
    assert checked == 2
