"""Data of NeurulesClassifier's experiments, shared by its tests and benchmarks."""

import numpy as np


def planted_rule_table(n_samples, random_state):
    """The spec's planted rule list (section 7.4): five U(0, 1) columns, no label noise.

    ``y = 1`` if ``x0 > 0.6 and x1 < 0.3``, else ``0`` if ``x2 > 0.7``, else ``1`` if
    ``x0 < 0.2``, else ``0``. ``random_state`` is an int seed or a numpy ``Generator``.
    Returns ``X`` of shape (n_samples, 5) and ``y``.
    """
    rng = np.random.default_rng(random_state)
    X = rng.uniform(0, 1, (n_samples, 5))
    y = np.where(
        (X[:, 0] > 0.6) & (X[:, 1] < 0.3),
        1,
        np.where(X[:, 2] > 0.7, 0, np.where(X[:, 0] < 0.2, 1, 0)),
    )
    return X, y


def survey_like_table(n_samples, random_state):
    """Survey-like table: 8 ordinal, count and binary columns, about 32% positives.

    The label is a noisy threshold of four of the columns (issue 24's seed-stability
    table). ``random_state`` is an int seed or a numpy ``Generator``.
    """
    rng = np.random.default_rng(random_state)
    n = n_samples
    X = np.column_stack(
        [
            rng.integers(1, 6, n),
            rng.integers(1, 6, n),
            rng.integers(0, 4, n),
            rng.poisson(2, n),
            rng.poisson(5, n),
            rng.integers(18, 80, n),
            rng.integers(0, 2, n),
            rng.integers(1, 11, n),
        ]
    ).astype(float)
    z = (
        0.8 * (X[:, 0] >= 4)
        + 0.6 * (X[:, 3] > 2)
        + 0.5 * (X[:, 5] > 50)
        - 0.4 * (X[:, 7] < 4)
        + rng.normal(0, 0.8, n)
    )
    return X, (z > np.quantile(z, 0.68)).astype(int)
