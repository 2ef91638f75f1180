"""Audit: the GASP outer loop and search on inputs users pass by mistake or in other units.

The first test failed on the code before the audit fix; the others pin behaviour that
was already right, measured in the audit.
"""

import numpy as np
import pytest

from sklearn_cispa.redteam import (
    LatentBOSuffixSearch,
    RandomSubsetSearch,
    ToyKeywordTarget,
    ToyRubricJudge,
    iterative_refinement,
    make_toy_landscape,
)


def test_a_generator_returning_raw_text_raises():
    # an LLM generator returns its raw " | c1 | c2 |" text: list() split it into single
    # characters, and the loop searched " ", "|", "c", "1", ... without a word
    judge, target = ToyRubricJudge(), ToyKeywordTarget()

    def objective(prompt):
        return judge(prompt, target(prompt))

    with pytest.raises(TypeError, match="single str"):
        iterative_refinement("paint the wall", lambda p: " | in grey | in amber |",
                             RandomSubsetSearch(objective, n_calls=3, random_state=0))


@pytest.mark.parametrize("scale, offset", [(1e-6, 0.0), (1e6, 0.0), (1e300, 0.0),
                                           (1.0, 1e6)])
def test_the_search_does_not_depend_on_the_embedding_units(scale, offset):
    # the embeddings are divided by their largest absolute value before the reduction;
    # an offset is removed by PCA's centring
    cands, emb, objective = make_toy_landscape(random_state=0)
    ref = LatentBOSuffixSearch(objective, embedder="precomputed", reducer="pca",
                               random_state=0).fit(cands, embeddings=emb)
    got = LatentBOSuffixSearch(objective, embedder="precomputed", reducer="pca",
                               random_state=0).fit(cands, embeddings=emb * scale + offset)
    assert [h["candidate"] for h in got.history_] == [h["candidate"] for h in ref.history_]


def test_non_finite_scores_raise():
    cands, _, _ = make_toy_landscape(random_state=0)
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="finite"):
            LatentBOSuffixSearch(lambda p, bad=bad: bad, n_calls=3,
                                 random_state=0).fit(cands)


@pytest.mark.parametrize("position", range(5))
def test_orpo_loss_rejects_nan(position):
    # NaN passed the "at most 0" and "positive" checks (comparisons with NaN are False)
    # and came out as a NaN loss
    from sklearn_cispa.redteam import orpo_loss

    args = [[-2.0], [-6.0], [4.0], [4.0], [0.5]]
    args[position] = [np.nan]
    with pytest.raises(ValueError, match="NaN"):
        orpo_loss(*args)
