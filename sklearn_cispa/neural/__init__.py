"""Neural-network training parts (losses, optimizers, sparse weights) and skorch estimators."""

from sklearn_cispa.neural._losses import AlphaSchedule, LabelSmoothingLoss, MaxSupLoss
from sklearn_cispa.neural._mlp import MLPNetClassifier
from sklearn_cispa.neural._nanoadam import NanoAdam
from sklearn_cispa.neural._sign_in import (
    SignIn,
    SignInReset,
    apply_sign_in,
    merge_sign_in,
    reset_sign_in,
)

__all__ = [
    "AlphaSchedule",
    "LabelSmoothingLoss",
    "MLPNetClassifier",
    "MaxSupLoss",
    "NanoAdam",
    "SignIn",
    "SignInReset",
    "apply_sign_in",
    "merge_sign_in",
    "reset_sign_in",
]
