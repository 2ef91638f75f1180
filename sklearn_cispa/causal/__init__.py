"""Causal inference: augmentation-based IV regression and causal mixture discovery."""

from sklearn_cispa.causal._causal_mixture import CausalMixtureDiscoverer
from sklearn_cispa.causal._mixture_regression import MixtureOfLinearRegressions

__all__ = [
    "CausalMixtureDiscoverer",
    "MixtureOfLinearRegressions",
]
