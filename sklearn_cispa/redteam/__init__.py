"""Search machinery for authorised red-teaming evaluations (GASP's latent Bayesian optimisation).

Only the generic search over a user's candidate suffixes, a random baseline, ORPO
preference data and loss, the generate-search-ORPO loop over a user's generator, and a
benign toy harness; no prompts, models or judges.
"""

from sklearn_cispa.redteam._gasp import GASPSuffixGenerator
from sklearn_cispa.redteam._refine import (
    attack_success_at_k,
    iterative_refinement,
    make_preference_pairs,
    orpo_loss,
)
from sklearn_cispa.redteam._search import LatentBOSuffixSearch, RandomSubsetSearch
from sklearn_cispa.redteam._toy import ToyKeywordTarget, ToyRubricJudge, make_toy_landscape

__all__ = [
    "GASPSuffixGenerator",
    "LatentBOSuffixSearch",
    "RandomSubsetSearch",
    "ToyKeywordTarget",
    "ToyRubricJudge",
    "attack_success_at_k",
    "iterative_refinement",
    "make_preference_pairs",
    "make_toy_landscape",
    "orpo_loss",
]
