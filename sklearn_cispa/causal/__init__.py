"""Causal inference: augmentation-based IV regression and causal mixture discovery."""

from sklearn_cispa.causal._augmentations import (
    ComposeAugmentations,
    GaussianNoiseAugmentation,
    NullSpaceTranslation,
)
from sklearn_cispa.causal._augmented_iv import AugmentedIVRegressor

__all__ = []
__all__ += [
    "AugmentedIVRegressor",
    "ComposeAugmentations",
    "GaussianNoiseAugmentation",
    "NullSpaceTranslation",
]
