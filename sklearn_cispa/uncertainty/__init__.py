"""Uncertainty quantification with imprecise probabilities."""

__all__ = []
