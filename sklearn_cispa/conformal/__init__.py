"""Conformal prediction robust to adversarial test-time perturbations."""

from sklearn_cispa.conformal._attacks import eot_pgd_l2_attack
from sklearn_cispa.conformal._base import corrected_alpha
from sklearn_cispa.conformal._rcp1 import RCP1Conformal
from sklearn_cispa.conformal._risk_control import robust_risk_control
from sklearn_cispa.conformal._smoothed import SmoothedConformal

__all__ = [
    "RCP1Conformal",
    "SmoothedConformal",
    "corrected_alpha",
    "eot_pgd_l2_attack",
    "robust_risk_control",
]
