"""Privacy auditing: membership inference with reference models (LiRA) and its metrics."""

from sklearn_cispa.privacy._flip import flip_rate, flip_rate_cutoff
from sklearn_cispa.privacy._lira import LiRAMembershipInference
from sklearn_cispa.privacy._scores import lira_scores, logit_confidence

__all__ = [
    "LiRAMembershipInference",
    "flip_rate",
    "flip_rate_cutoff",
    "lira_scores",
    "logit_confidence",
]
