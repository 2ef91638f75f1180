"""Pruning at initialisation and the analysis of pruning masks."""

__all__ = []
