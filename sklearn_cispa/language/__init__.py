"""Language models: the one place that tokenises, batches, trains and scores them.

The memorisation, privacy and red-teaming fields build on these models; this subpackage
knows none of them.
"""

from sklearn_cispa.language._charlm import CharMLPLanguageModel
from sklearn_cispa.language._tokenizer import CharTokenizer
from sklearn_cispa.language._transformer import TransformerLanguageModel
from sklearn_cispa.language._unlearning import gradient_ascent_unlearning

__all__ = [
    "CharMLPLanguageModel",
    "CharTokenizer",
    "TransformerLanguageModel",
    "gradient_ascent_unlearning",
]
