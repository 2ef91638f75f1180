"""Interpretable rule-based models."""

__all__ = []
