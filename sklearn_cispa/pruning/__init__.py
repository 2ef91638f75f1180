"""Pruning at initialisation and the analysis of pruning masks."""

from sklearn_cispa.pruning._graphon import GraphonEstimator, network_graphons, sas_histogram
from sklearn_cispa.pruning._ntk import (
    empirical_ntk,
    graphon_ntk,
    make_graphon_mlp,
    ntk_spectrum_stats,
)
from sklearn_cispa.pruning._prune_at_init import prune_at_init

__all__ = [
    "GraphonEstimator",
    "empirical_ntk",
    "graphon_ntk",
    "make_graphon_mlp",
    "network_graphons",
    "ntk_spectrum_stats",
    "prune_at_init",
    "sas_histogram",
]
