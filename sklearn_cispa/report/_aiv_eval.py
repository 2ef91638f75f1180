"""Evaluation pieces shared by AugmentedIVRegressor's report row and its benchmark."""

import numpy as np


def ncer(coef, f_true):
    """Normalised causal excess risk ``||h - f||^2 / (||h - f||^2 + ||f||^2)``.

    0 is the causal solution, 0.5 what ``h = 0`` scores.
    """
    err = float(np.sum((np.asarray(coef) - f_true) ** 2))
    return err / (err + float(np.sum(np.asarray(f_true) ** 2)))


class FixedAugmentation:
    """Hand every method the same pre-drawn augmentation (picklable, no closure)."""

    def __init__(self, X_aug, G):
        self.X_aug, self.G = X_aug, G

    def augment(self, X, random_state=None):
        return self.X_aug, self.G
