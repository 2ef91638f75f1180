"""Interpretable rule-based models."""

from sklearn_cispa.rules._neurules import NeurulesClassifier, Rule

__all__ = ["NeurulesClassifier", "Rule"]
