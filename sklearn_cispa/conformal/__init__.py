"""Conformal prediction robust to adversarial test-time perturbations."""

__all__ = []
