"""Language models: the one place that tokenises, batches, trains and scores them.

The memorisation, privacy and red-teaming fields build on these models; this subpackage
knows none of them.
"""

from sklearn_cispa.language._charlm import CharMLPLanguageModel
from sklearn_cispa.language._embeddings import hidden_state_embeddings
from sklearn_cispa.language._generation import (
    continuation_log_likelihoods,
    log_odds,
    orpo_update,
    sample_continuations,
)
from sklearn_cispa.language._tokenizer import CharTokenizer
from sklearn_cispa.language._transformer import TransformerLanguageModel
from sklearn_cispa.language._unlearning import gradient_ascent_unlearning

__all__ = [
    "CharMLPLanguageModel",
    "CharTokenizer",
    "TransformerLanguageModel",
    "continuation_log_likelihoods",
    "gradient_ascent_unlearning",
    "hidden_state_embeddings",
    "log_odds",
    "orpo_update",
    "sample_continuations",
]
