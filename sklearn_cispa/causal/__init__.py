"""Causal inference: augmentation-based IV regression and causal mixture discovery."""

from sklearn_cispa.causal._augmentations import (
    ComposeAugmentations,
    GaussianNoiseAugmentation,
    NullSpaceTranslation,
)
from sklearn_cispa.causal._augmented_iv import AugmentedIVRegressor
from sklearn_cispa.causal._causal_mixture import CausalMixtureDiscoverer
from sklearn_cispa.causal._mixture_regression import MixtureOfLinearRegressions

__all__ = [
    "AugmentedIVRegressor",
    "CausalMixtureDiscoverer",
    "ComposeAugmentations",
    "GaussianNoiseAugmentation",
    "MixtureOfLinearRegressions",
    "NullSpaceTranslation",
]
