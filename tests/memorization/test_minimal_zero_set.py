"""The exact smallest zeroing set of the window model (report helper), against brute force.

``minimal_zero_set`` is the independent oracle the planted-canary tests compare the
locator's set sizes with; here it is itself checked by enumerating every subset of the
hidden units of small trained models (whose smallest sets have 2-3 units).
"""

import itertools

import pytest

from sklearn_cispa.memorization import CharMLPLanguageModel, NeuronMask, make_canary_corpus
from sklearn_cispa.report import minimal_zero_set


def _extracted(lm, prefix, secret, units):
    with NeuronMask(lm.module_, units):
        return lm.complete(prefix, len(secret)) == secret


def _brute_force_minimum(lm, prefix, secret, k_max):
    """Smallest k <= k_max such that zeroing some k units stops extraction (else inf)."""
    for k in range(1, k_max + 1):
        for subset in itertools.combinations(range(lm.hidden), k):
            if not _extracted(lm, prefix, secret, [("act", u) for u in subset]):
                return k
    return float("inf")


@pytest.fixture(scope="module")
def corpus():
    return make_canary_corpus(n_chars=3000, n_canaries=2, n_copies=20, heldout_chars=1000,
                              random_state=0)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_minimal_zero_set_equals_brute_force(corpus, seed):
    train, _, canaries = corpus
    lm = CharMLPLanguageModel(hidden=32, max_epochs=10, lr=3e-3, random_state=seed).fit(train)
    sizes = []
    for prefix, secret in canaries:
        assert lm.complete(prefix, len(secret)) == secret
        size, units = minimal_zero_set(lm, prefix, secret)
        # no smaller subset stops extraction, and one of this size does
        assert _brute_force_minimum(lm, prefix, secret, size) == size
        assert len(units) == size and not _extracted(lm, prefix, secret, units)
        sizes.append(size)
    assert max(sizes) >= 2  # the check is not only about single units
