"""Memorisation: locate and switch off the neurons that make a model reproduce memorised text."""

from sklearn_cispa.language import CharMLPLanguageModel  # re-exported: it moved to language
from sklearn_cispa.memorization._corpus import make_canary_corpus
from sklearn_cispa.memorization._exact import minimal_deactivation_set
from sklearn_cispa.memorization._extraction import extraction_rate
from sklearn_cispa.memorization._locator import (
    CriticalNeuronLocator,
    NeuronMask,
    greedy_extraction_oracle,
)

__all__ = [
    "CharMLPLanguageModel",
    "CriticalNeuronLocator",
    "NeuronMask",
    "extraction_rate",
    "greedy_extraction_oracle",
    "make_canary_corpus",
    "minimal_deactivation_set",
]
