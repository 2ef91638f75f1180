"""minimal_deactivation_set against an independent formulation: brute force over every
subset of the hidden units (through NeuronMask and greedy decoding) of random tiny
window models."""

import itertools

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_cispa.memorization import (
    CharMLPLanguageModel,
    NeuronMask,
    minimal_deactivation_set,
)
from sklearn_cispa.report import minimal_zero_set

HIDDEN = 8
DOCS = ["ab cab bca. abc cba! ca ba ac."] * 3


def _extracted(lm, prefix, secret, units, scale=0.0):
    with NeuronMask(lm.module_, units, scale=scale):
        return lm.complete(prefix, len(secret)) == secret


def _brute_force(lm, prefix, secret, scale=0.0):
    """Smallest k such that scaling some k units stops extraction, by enumeration."""
    if lm.complete(prefix, len(secret)) != secret:
        return 0
    for k in range(1, HIDDEN + 1):
        for subset in itertools.combinations(range(HIDDEN), k):
            if not _extracted(lm, prefix, secret, [("act", u) for u in subset], scale):
                return k
    return float("inf")


@pytest.fixture(scope="module")
def base():
    return CharMLPLanguageModel(context=3, hidden=HIDDEN, max_epochs=1,
                                random_state=0).fit(DOCS)


def _random_model(base, seed):
    """The fitted model with random weights: a random tiny window model.

    Every output row gets a random offset times the total activation, so some symbols
    are backed by many units at once and the smallest breaking sets vary (1-7 units).
    """
    rng = torch.Generator().manual_seed(seed)
    m = base.module_
    with torch.no_grad():
        m.hidden.weight.copy_(torch.randn(m.hidden.weight.shape, generator=rng))
        m.hidden.bias.copy_(torch.randn(m.hidden.bias.shape, generator=rng) + 1.0)
        offset = 2.0 * torch.randn((m.out.weight.shape[0], 1), generator=rng)
        m.out.weight.copy_(torch.randn(m.out.weight.shape, generator=rng) + offset)
        m.out.bias.copy_(0.3 * torch.randn(m.out.bias.shape, generator=rng))
    return base


def test_equals_brute_force_on_random_models(base):
    sizes = []
    for seed in range(10):
        sizes += _check_against_brute_force(_random_model(base, seed))
    # the check is not only about single units: larger minimal sets occur
    assert max(s for s in sizes if np.isfinite(s)) >= 4
    assert sum(s >= 2 for s in sizes) >= 5


def _check_against_brute_force(lm):
    sizes = []
    for prefix in ("ab", "c", "ba c"):
        secret = lm.complete(prefix, 3)  # memorised by construction
        size, units = minimal_deactivation_set(lm, prefix, secret)
        assert size == _brute_force(lm, prefix, secret)
        if np.isfinite(size):
            assert len(units) == size and not _extracted(lm, prefix, secret, units)
        sizes.append(size)
        # a continuation the model does not write: nothing to deactivate
        other = "".join("a" if ch != "a" else "b" for ch in secret)
        assert minimal_deactivation_set(lm, prefix, other) == (0, [])
    return sizes


@pytest.mark.parametrize("seed", range(3))
def test_partial_scale_equals_brute_force(base, seed):
    lm = _random_model(base, 100 + seed)
    for prefix in ("ab", "cab"):
        secret = lm.complete(prefix, 2)
        size, units = minimal_deactivation_set(lm, prefix, secret, scale=0.3)
        assert size == _brute_force(lm, prefix, secret, scale=0.3)
        if np.isfinite(size):
            assert not _extracted(lm, prefix, secret, units, scale=0.3)


def test_scale_one_is_never_breaking(base):
    lm = _random_model(base, 7)
    secret = lm.complete("ab", 3)
    assert minimal_deactivation_set(lm, "ab", secret, scale=1.0) == (float("inf"), [])


def test_report_alias(base):
    lm = _random_model(base, 3)
    secret = lm.complete("ab", 3)
    assert minimal_zero_set(lm, "ab", secret) == minimal_deactivation_set(lm, "ab", secret)


def test_bad_input(base):
    lm = _random_model(base, 1)
    with pytest.raises(ValueError, match="prefix is empty"):
        minimal_deactivation_set(lm, "", "ab")
    with pytest.raises(ValueError, match="secret is empty"):
        minimal_deactivation_set(lm, "ab", "")
    with pytest.raises(InvalidParameterError, match="model"):
        minimal_deactivation_set(lm.module_, "ab", "c")
    with pytest.raises(InvalidParameterError, match="prefix"):
        minimal_deactivation_set(lm, ["a"], "c")
    with pytest.raises(NotFittedError):
        minimal_deactivation_set(CharMLPLanguageModel(), "ab", "c")
