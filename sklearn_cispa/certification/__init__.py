"""Certified robustness to training-data perturbations."""

__all__ = []
