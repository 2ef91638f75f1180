"""Certified robustness to training-data perturbations."""

from sklearn_cispa.certification._mibp import MIBPCertifier

__all__ = ["MIBPCertifier"]
