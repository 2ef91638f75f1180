"""Metrics shared across fields (membership inference, watermark detection, ...)."""

from sklearn_cispa.metrics._ranking import tpr_at_fpr

__all__ = ["tpr_at_fpr"]
