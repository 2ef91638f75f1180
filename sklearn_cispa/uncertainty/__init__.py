"""Uncertainty quantification with imprecise probabilities."""

from sklearn_cispa.uncertainty._iipm import (
    accuracy_rejection_curve,
    choquet_integral,
    entropy_difference,
    generalized_hartley,
    lower_probability,
    lower_total_variation,
    maximum_mean_imprecision,
)
from sklearn_cispa.uncertainty._mmi import MMIUncertainty

__all__ = [
    "MMIUncertainty",
    "accuracy_rejection_curve",
    "choquet_integral",
    "entropy_difference",
    "generalized_hartley",
    "lower_probability",
    "lower_total_variation",
    "maximum_mean_imprecision",
]
