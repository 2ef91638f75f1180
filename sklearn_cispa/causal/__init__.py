"""Causal inference: augmentation-based IV regression and causal mixture discovery."""

__all__ = []
