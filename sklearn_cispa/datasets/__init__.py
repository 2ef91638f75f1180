"""Synthetic data generators used by the methods' papers, and small bundled data sets."""

__all__ = []
