"""Synthetic data generators used by the methods' papers, and small bundled data sets."""

from sklearn_cispa.datasets._confounded_linear import make_confounded_linear

__all__ = []
__all__ += ["make_confounded_linear"]
