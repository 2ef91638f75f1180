"""Issue 35: right or refused on every input (redteam field)."""

import numpy as np
import pytest

from sklearn_cispa.redteam import LatentBOSuffixSearch, attack_success_at_k, orpo_loss

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("which", [1, 2, 3])
def test_orpo_loss_refuses_pairs_of_different_lengths(which):
    args = [[-2.0, -1.0], [-6.0, -3.0], [4.0, 2.0], [4.0, 2.0], [0.5, 0.1]]
    args[which] = args[which][:1]  # length 1 against length 2: no broadcasting
    with pytest.raises(ValueError, match="shape"):
        orpo_loss(*args)


def test_orpo_loss_scalar_nll_and_equal_lengths():
    # per pair: margin = log odds(-0.5) - log odds(-1.5); loss = nll + beta * L_OR
    def log_odds(mean):
        return mean - np.log(-np.expm1(mean))

    c, r = np.array([-2.0, -1.0]), np.array([-6.0, -3.0])
    margin = log_odds(c / 4.0) - log_odds(r / 4.0)
    expected = np.mean(0.5 + 0.25 * np.log1p(np.exp(-margin)))
    got = float(orpo_loss(c, r, [4.0, 4.0], [4.0, 4.0], 0.5))
    assert got == pytest.approx(expected, rel=1e-12)


def test_attack_success_at_k_refuses_nan_threshold():
    with pytest.raises(ValueError, match="threshold"):
        attack_success_at_k([[0.5, 2.0]], k=2, threshold=float("nan"))
    assert attack_success_at_k([[0.5, 2.0]], k=2, threshold=np.inf) == 1.0


def test_latent_bo_refuses_nan_success_threshold():
    search = LatentBOSuffixSearch(lambda s: 1.0, success_threshold=float("nan"))
    with pytest.raises(ValueError, match="success_threshold"):
        search.fit(["a", "b", "c"])
