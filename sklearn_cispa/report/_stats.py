"""Seed-to-seed spread and paired comparisons for the report rows."""

import math

import numpy as np


def mean_sd(values):
    """Mean and sample standard deviation (ddof=1; nan for fewer than two values).

    Parameters
    ----------
    values : array-like of float
        One value per seed, split or fold.

    Returns
    -------
    mean, sd : float

    Examples
    --------
    >>> from sklearn_cispa.report import mean_sd
    >>> mean_sd([1.0, 2.0, 3.0])
    (2.0, 1.0)
    """
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return float("nan"), float("nan")
    sd = float(np.std(values, ddof=1)) if values.size > 1 else float("nan")
    return float(np.mean(values)), sd


def paired_difference(a, b):
    """Paired difference ``a - b`` over seeds: its mean, sd and whether it is resolved.

    The difference counts as resolved when its mean is more than two standard errors
    from zero (a paired t-like rule; with n runs the standard error is ``sd / sqrt(n)``).

    Parameters
    ----------
    a, b : array-like of float
        The two methods' values on the same seeds.

    Returns
    -------
    result : dict
        ``mean``, ``sd``, ``se``, ``n`` and ``resolved`` (bool).

    Examples
    --------
    >>> from sklearn_cispa.report import paired_difference
    >>> paired_difference([0.9, 0.8, 0.85], [0.7, 0.65, 0.6])["resolved"]
    True
    >>> paired_difference([0.9, 0.6, 0.85], [0.7, 0.85, 0.6])["resolved"]
    False
    """
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    n = int(d.size)
    mean, sd = mean_sd(d)
    if n < 2:
        return {"mean": mean, "sd": sd, "se": float("nan"), "n": n, "resolved": False}
    se = sd / math.sqrt(n)
    resolved = bool(abs(mean) > 2 * se) if se > 0 else bool(mean != 0)
    return {"mean": mean, "sd": sd, "se": se, "n": n, "resolved": resolved}


def fmt_pm(mean, sd, digits=3):
    """``"0.123 ± 0.004"`` (the sd left out when it is nan)."""
    if sd is None or math.isnan(sd):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def seed_bars(ax, series, colors=None):
    """One bar per method at the mean of its per-seed values, the values as dots.

    ``series`` is a list of ``(label, values)``; ``colors`` one colour per bar (default:
    the first bar blue, the peers grey).
    """
    for i, (_, values) in enumerate(series):
        color = colors[i % len(colors)] if colors else ("tab:blue" if i == 0 else "tab:gray")
        ax.bar(i, np.mean(values), color=color, alpha=0.8)
        ax.plot(np.full(len(values), i), values, "k.", ms=6)
    ax.set_xticks(range(len(series)), [label for label, _ in series])
