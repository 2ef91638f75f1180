"""Neural-network training parts (losses, optimizers, sparse weights) and skorch estimators."""

__all__ = []
