"""Federated and distributed training: local SGD under data heterogeneity."""

from sklearn_cispa.federated._heterogeneity import heterogeneity
from sklearn_cispa.federated._local_sgd import LocalSGDClassifier, LocalSGDRegressor

__all__ = [
    "LocalSGDClassifier",
    "LocalSGDRegressor",
    "heterogeneity",
]
