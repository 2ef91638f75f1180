"""Synthetic data generators used by the methods' papers, and small bundled data sets."""

from sklearn_cispa.datasets._causal_mixture import load_cmm_demo, load_sachs, make_causal_mixture
from sklearn_cispa.datasets._confounded_linear import make_confounded_linear
from sklearn_cispa.datasets._heterogeneous_quadratics import make_heterogeneous_quadratics
from sklearn_cispa.datasets._text import load_python_docs

__all__ = [
    "load_cmm_demo",
    "load_python_docs",
    "load_sachs",
    "make_causal_mixture",
    "make_confounded_linear",
    "make_heterogeneous_quadratics",
]
