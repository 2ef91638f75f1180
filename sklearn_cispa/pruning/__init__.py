"""Pruning at initialisation and the analysis of pruning masks."""

from sklearn_cispa.pruning._prune_at_init import prune_at_init

__all__ = ["prune_at_init"]
