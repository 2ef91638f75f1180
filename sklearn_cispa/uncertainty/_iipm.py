"""Integral imprecise probability metrics (IIPM) on the credal set of an ensemble.

The credal set at one input is the finite set of the members' probability vectors
``{p_1, ..., p_m}`` over ``K`` labels. Its lower probability is the lower envelope
``P_(A) = min_j p_j(A)``, its upper probability ``P^(A) = max_j p_j(A)``. Every function
here takes such sets as a tensor ``probas`` of shape ``(n_samples, n_members, n_classes)``
(one credal set per row), or ``(n_members, n_classes)`` for a single credal set.

References: S. L. Chau, M. Caprio, K. Muandet, "Integral Imprecise Probability Metrics",
NeurIPS 2025 (arXiv:2505.16156).
"""

import numbers

import numpy as np
from scipy import sparse
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

__all__ = [
    "accuracy_rejection_curve",
    "choquet_integral",
    "entropy_difference",
    "generalized_hartley",
    "lower_probability",
    "lower_total_variation",
    "maximum_mean_imprecision",
]

# Work arrays are cut into row chunks of at most this many float64 entries (32 MB).
_CHUNK_FLOATS = 4_000_000
_MAX_K_BRUTEFORCE = 12
_MAX_K_HARTLEY = 15
_MAX_K_LTV = 16
_METHODS = ("exact", "linear", "bruteforce")
# tolerance on the sums to one and on tiny negative entries
_ATOL = 1e-6


# --------------------------------------------------------------------------------------
# validation and shared building blocks
# --------------------------------------------------------------------------------------
def _as_real_array(value, name):
    """``np.asarray(value, float64)`` with clear errors for sparse, ragged or non-numbers."""
    if sparse.issparse(value):
        raise TypeError(
            f"{name} is a sparse {type(value).__name__}; the credal-set functions need a "
            f"dense array (use {name}.toarray())."
        )
    try:
        if not isinstance(value, np.ndarray):
            value = np.asarray(value)
        if value.dtype.kind == "c":  # the float cast would drop the imaginary part
            raise TypeError(
                f"{name} must hold real numbers; got a complex array ({value.dtype})."
            )
        return np.asarray(value, dtype=np.float64)
    except ValueError as exc:
        if "inhomogeneous" in str(exc) or "sequence" in str(exc):
            raise ValueError(
                f"{name} must be a rectangular array; the nested sequences have different "
                "lengths (a ragged list)."
            ) from None
        raise TypeError(f"{name} must hold real numbers: {exc}") from None
    except TypeError as exc:
        if str(exc).startswith(f"{name} must hold real numbers"):
            raise
        raise TypeError(f"{name} must hold real numbers: {exc}") from None


def _check_credal(probas, name="probas", *, min_over_members=False):
    """Validate a credal tensor; return it as an (n, m, K) float64 array.

    The input is never modified and is not copied when it already is a float64 array
    of valid probabilities (a view is returned). The checks cost two passes over the
    data: the smallest entry (NaN and -inf fail it) and the sums over the classes
    (+inf and NaN fail it; ``einsum`` rather than a BLAS product, whose threads were
    measured 20-200x slower on a loaded machine). Entries above one by
    more than the tolerance are then impossible. Tiny negative entries (within
    ``_ATOL``) are clipped to 0 on a copy.

    With ``min_over_members=True`` the lower envelope ``min_j p_j(k)`` (n, K) is returned
    as well and its minimum serves as the entry check, so MMI-Lin reads the data twice in
    all, validation included.
    """
    arr = _as_real_array(probas, name)
    if arr.ndim not in (2, 3):
        raise ValueError(
            f"{name} must be a 3-d array (n_samples, n_members, n_classes) or a 2-d array "
            f"(n_members, n_classes) for one credal set; got a {arr.ndim}-d array of shape "
            f"{arr.shape}."
        )
    if arr.ndim == 2:
        arr = arr[np.newaxis]
    if 0 in arr.shape:
        raise ValueError(f"{name} is empty (shape {arr.shape}).")
    envelope = arr.min(axis=1) if min_over_members else None
    lowest = float(envelope.min() if min_over_members else arr.min())
    sums = np.einsum("nmk->nm", arr)
    if not (lowest >= -_ATOL and np.all(np.abs(sums - 1.0) <= _ATOL)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinite values.")
        if lowest < -_ATOL or arr.max() > 1 + _ATOL:
            raise ValueError(
                f"{name} must lie in [0, 1]; found values in [{lowest:.3g}, {arr.max():.3g}]."
            )
        raise ValueError(
            f"{name} must sum to 1 over the classes (last axis); found sums in "
            f"[{sums.min():.3g}, {sums.max():.3g}]."
        )
    if lowest < 0.0:
        arr = np.clip(arr, 0.0, None)
        if min_over_members:
            envelope = np.clip(envelope, 0.0, None)
    return (arr, envelope) if min_over_members else arr


def _chunks(n_rows, floats_per_row):
    """Yield row slices so that a chunk holds at most ``_CHUNK_FLOATS`` work entries."""
    step = max(1, int(_CHUNK_FLOATS // max(1, floats_per_row)))
    for start in range(0, n_rows, step):
        yield slice(start, min(n_rows, start + step))


def _event_table(p):
    """Probabilities of all ``2**K`` events, last axis indexed by the event's bitmask.

    Bit ``k`` of the index set means label ``k`` is in the event. The table is built by
    doubling: the events containing label ``k`` as their highest label are the events on
    labels ``< k`` with ``p(k)`` added, which costs ``O(2**K)`` per probability vector.
    """
    n_classes = p.shape[-1]
    table = np.zeros(p.shape[:-1] + (1 << n_classes,), dtype=np.float64)
    for k in range(n_classes):
        half = 1 << k
        np.add(table[..., :half], p[..., k : k + 1], out=table[..., half : 2 * half])
    return table


def _popcounts(n_classes):
    """Cardinality of every event bitmask on ``n_classes`` labels."""
    sizes = np.zeros(1 << n_classes, dtype=np.int64)
    for k in range(n_classes):
        half = 1 << k
        sizes[half : 2 * half] = sizes[:half] + 1
    return sizes


def _mobius(lower):
    """Fast Möbius transform of set functions along the last axis (in place on a copy)."""
    masses = np.array(lower, dtype=np.float64, copy=True)
    n_events = masses.shape[-1]
    n_classes = n_events.bit_length() - 1
    lead = masses.shape[:-1]
    for b in range(n_classes):
        view = masses.reshape(lead + (n_events >> (b + 1), 2, 1 << b))
        view[..., 1, :] -= view[..., 0, :]
    return masses


def _check_max_classes(n_classes, limit, what):
    if n_classes > limit:
        raise ValueError(
            f"{what} enumerates all 2**K events and is limited to K <= {limit} classes; "
            f"got K = {n_classes}."
        )


def _entropy_bits(p):
    """Shannon entropy in bits along the last axis, with 0 log 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(p > 0, np.log2(np.where(p > 0, p, 1.0)), 0.0)
    return -(p * logs).sum(axis=-1)


# --------------------------------------------------------------------------------------
# maximum mean imprecision
# --------------------------------------------------------------------------------------
def _mmi_exact(P):
    """max_{i<j} TV(p_i, p_j) per row: member pairs on member-major contiguous blocks."""
    n, m, K = P.shape
    out = np.zeros(n, dtype=np.float64)
    if m == 1:
        return out
    for rows in _chunks(n, 2 * m * K):
        # (m, rows, K), contiguous per member, and one work buffer for all pairs
        block = np.ascontiguousarray(P[rows].transpose(1, 0, 2))
        r = block.shape[1]
        work = np.empty((m - 1, r, K))
        best = out[rows]
        for i in range(m - 1):
            diff = work[: m - 1 - i]
            np.subtract(block[i + 1 :], block[i], out=diff)
            np.abs(diff, out=diff)
            tv = np.einsum("jrk->jr", diff).max(axis=0)
            np.maximum(best, tv, out=best)
    out *= 0.5
    return np.clip(out, 0.0, 1.0, out=out)


def _mmi_linear_from_envelope(envelope):
    return np.clip(1.0 - np.einsum("nk->n", envelope), 0.0, 1.0)


def _mmi_linear(P):
    return _mmi_linear_from_envelope(P.min(axis=1))


def _mmi_bruteforce(P):
    n, m, K = P.shape
    _check_max_classes(K, _MAX_K_BRUTEFORCE, 'method="bruteforce"')
    out = np.empty(n, dtype=np.float64)
    for rows in _chunks(n, m << K):
        table = _event_table(P[rows])
        out[rows] = (table.max(axis=1) - table.min(axis=1)).max(axis=-1)
    return np.clip(out, 0.0, 1.0)


@validate_params(
    {"probas": ["array-like"], "method": [StrOptions(set(_METHODS))]},
    prefer_skip_nested_validation=True,
)
def maximum_mean_imprecision(probas, method="exact"):
    """Maximum mean imprecision (MMI) of the credal set spanned by ensemble members.

    For the lower probability ``P_(A) = min_j p_j(A)`` of the members' probability
    vectors, MMI with the total-variation function class is
    ``max_A [P^(A) - P_(A)]``, the largest gap between upper and lower probability over
    all events ``A``. It lies in ``[0, 1]``, is 0 exactly when all members agree, and
    never decreases when members are added.

    Parameters
    ----------
    probas : array-like of shape (n_samples, n_members, n_classes) or (n_members, n_classes)
        One credal set per row: the class-probability vectors of the members. Entries
        must be finite, non-negative and sum to 1 over the classes (within ``1e-6``).
        A 2-d array is one credal set.
    method : {"exact", "linear", "bruteforce"}, default="exact"
        - ``"exact"``: ``max_{i,j} TV(p_i, p_j)``, equal to MMI for an ensemble's lower
          envelope; ``O(m**2 K)`` per row, computed in row chunks of bounded memory,
          tractable at ``K = 1000``.
        - ``"linear"``: the MMI-Lin upper bound ``1 - sum_k min_j p_j(k)`` (Prop. 21 of
          the paper), ``O(m K)`` per row.
        - ``"bruteforce"``: the maximum over all ``2**K`` events, ``O(m 2**K)`` per row;
          a reference for ``K <= 12`` only.

    Returns
    -------
    mmi : ndarray of shape (n_samples,)
        MMI of each credal set, in ``[0, 1]``.

    Raises
    ------
    ValueError
        When ``probas`` is not a 2-d or 3-d array of probability vectors, when
        ``method`` is unknown, or when ``method="bruteforce"`` and ``K > 12``.

    See Also
    --------
    MMIUncertainty : Fits a credal ensemble and scores new inputs with MMI.
    generalized_hartley : Another credal uncertainty measure, exponential in ``K``.

    Notes
    -----
    The paper states an ``O(2**K)`` cost for exact MMI. For lower envelopes of finitely
    many members, ``max_A [max_i p_i(A) - min_j p_j(A)]`` swaps into
    ``max_{i,j} max_A [p_i(A) - p_j(A)] = max_{i,j} TV(p_i, p_j)``, because the difference
    of two additive measures is largest on ``A = {k : p_i(k) > p_j(k)}``. This identity is
    not stated in the paper; the test suite checks it against ``"bruteforce"``.

    References
    ----------
    .. [1] S. L. Chau, M. Caprio, K. Muandet. "Integral Imprecise Probability Metrics".
       NeurIPS 2025, arXiv:2505.16156, Def. 17 and Prop. 21.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.uncertainty import maximum_mean_imprecision
    >>> probas = np.array([[[0.7, 0.2, 0.1], [0.5, 0.3, 0.2]],
    ...                    [[0.4, 0.3, 0.3], [0.4, 0.3, 0.3]]])
    >>> maximum_mean_imprecision(probas)
    array([0.2, 0. ])
    >>> maximum_mean_imprecision(probas, method="linear")
    array([0.2, 0. ])
    """
    if method == "linear":
        _, envelope = _check_credal(probas, min_over_members=True)
        return _mmi_linear_from_envelope(envelope)
    P = _check_credal(probas)
    if method == "exact":
        return _mmi_exact(P)
    return _mmi_bruteforce(P)


# --------------------------------------------------------------------------------------
# lower probabilities, Choquet integral, lower total variation
# --------------------------------------------------------------------------------------
def _as_mask(events, n_classes):
    """The events as a boolean mask when they are one (see :func:`lower_probability`)."""
    try:
        arr = np.asarray(events)
    except ValueError:  # ragged: lists of label indices of different lengths
        return None
    if arr.ndim != 2 or arr.dtype.kind not in "biuf":
        return None
    if arr.dtype.kind == "b":
        if arr.shape[1] != n_classes:
            raise ValueError(
                f"events as a boolean mask must have shape (n_events, {n_classes}), got "
                f"{arr.shape}."
            )
        return arr
    if arr.size and np.all((arr == 0) | (arr == 1)) and arr.shape[1] == n_classes:
        return arr.astype(bool)
    if isinstance(events, np.ndarray) and arr.dtype.kind == "f":
        raise ValueError(
            f"events as a numeric mask must hold only 0 and 1 and have {n_classes} columns; "
            f"got shape {arr.shape}."
        )
    return None


def _check_events(events, n_classes):
    """Return a boolean (n_events, K) mask from a mask or from lists of label indices."""
    if sparse.issparse(events):
        raise TypeError("events is a sparse matrix; pass a dense boolean mask or index lists.")
    if isinstance(events, str) or not hasattr(events, "__iter__"):
        raise TypeError(
            "events must be a boolean or 0/1 mask of shape (n_events, n_classes) or a list "
            f"of sequences of label indices, got {type(events).__name__}."
        )
    mask = _as_mask(events, n_classes)
    if mask is None:
        events = list(events)
        mask = np.zeros((len(events), n_classes), dtype=bool)
        for row, event in enumerate(events):
            if isinstance(event, str) or not hasattr(event, "__iter__"):
                raise TypeError(
                    f"events[{row}] must be a sequence of label indices, got "
                    f"{type(event).__name__}."
                )
            idx = list(event)
            for v in idx:
                if isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Integral):
                    raise TypeError(f"events[{row}] must hold integer label indices, got {v!r}.")
                if not 0 <= v < n_classes:
                    raise ValueError(
                        f"events[{row}] holds label index {v}, outside [0, {n_classes})."
                    )
            mask[row, idx] = True
    if mask.shape[0] == 0:
        raise ValueError("events is empty: give at least one event.")
    return mask


@validate_params(
    {"probas": ["array-like"], "events": ["array-like"]}, prefer_skip_nested_validation=True
)
def lower_probability(probas, events):
    """Lower probability ``P_(A) = min_j p_j(A)`` of events under an ensemble credal set.

    Parameters
    ----------
    probas : array-like of shape (n_samples, n_members, n_classes) or (n_members, n_classes)
        One credal set per row (see :func:`maximum_mean_imprecision`).
    events : array-like of shape (n_events, n_classes) or list of sequences of int
        The events, in one of two forms:

        - a **mask**: a rectangular 2-d array (or nested list) with ``n_classes``
          columns whose entries are all bool, or all 0/1 numbers; entry ``[e, k]`` is
          true when label ``k`` is in event ``e``. So ``np.array([[1, 0, 1]])`` is the
          event ``{0, 2}``;
        - **label indices**: a list of sequences of integer label indices, for example
          ``[[0], [1, 2], []]`` (an empty sequence is the empty event).

        Anything that qualifies as a mask is read as a mask. Index lists can only be
        mistaken for one when every event lists ``n_classes`` indices from ``{0, 1}``
        (possible for ``K <= 2``, or with repeated indices): pass a boolean mask there.

    Returns
    -------
    lower : ndarray of shape (n_samples, n_events)
        ``P_(A)`` for each row and event. The empty event gets 0 and the full label set
        gets 1. The upper probability is ``1 - P_(complement of A)``.

    See Also
    --------
    choquet_integral : Integral of a function with respect to ``P_``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.uncertainty import lower_probability
    >>> probas = np.array([[0.7, 0.2, 0.1], [0.5, 0.3, 0.2]])
    >>> lower_probability(probas, [[0], [1, 2], [], [0, 1, 2]])
    array([[0.5, 0.3, 0. , 1. ]])
    """
    P = _check_credal(probas)
    mask = _check_events(events, P.shape[-1]).astype(np.float64)
    out = np.empty((P.shape[0], mask.shape[0]), dtype=np.float64)
    for rows in _chunks(P.shape[0], P.shape[1] * (mask.shape[0] + P.shape[2])):
        out[rows] = (P[rows] @ mask.T).min(axis=1)
    out[:, mask.sum(axis=1) == 0] = 0.0
    out[:, mask.sum(axis=1) == P.shape[-1]] = 1.0
    return np.clip(out, 0.0, 1.0)


@validate_params(
    {"f": ["array-like"], "probas": ["array-like"], "upper": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def choquet_integral(f, probas, upper=False):
    """Choquet integral of ``f`` with respect to the lower (or upper) probability.

    On a finite label set, sort the labels so that ``f(x_(1)) >= ... >= f(x_(K))`` and
    let ``A_i`` hold the first ``i`` labels; then
    ``c∫ f dν = sum_i f(x_(i)) [ν(A_i) - ν(A_{i-1})]``. For an ensemble's lower envelope,
    ``ν(A_i) = min_j`` of the cumulative sums of ``p_j`` in that order, so the integral
    costs ``O(m K + K log K)`` per row.

    Parameters
    ----------
    f : array-like of shape (n_classes,) or (n_samples, n_classes)
        Real function on the labels; a 1-d ``f`` is used for every row.
    probas : array-like of shape (n_samples, n_members, n_classes) or (n_members, n_classes)
        One credal set per row (see :func:`maximum_mean_imprecision`).
    upper : bool, default=False
        Integrate with respect to the upper probability ``P^(A) = max_j p_j(A)`` (the
        conjugate capacity) instead of the lower probability.

    Returns
    -------
    integral : ndarray of shape (n_samples,)
        The lower (or upper) Choquet integral of ``f`` for each row.

    See Also
    --------
    lower_probability : ``P_(A)``, the Choquet integral of the indicator of ``A``.

    Notes
    -----
    The lower integral is at most ``min_j E_{p_j}[f]`` (Lemma 5 of the paper), with
    equality when ``P_`` is 2-monotone, for example when ``K = 2``. An ensemble's lower
    envelope need not be 2-monotone, and the inequality is then often strict.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.uncertainty import choquet_integral
    >>> probas = np.array([[0.7, 0.3], [0.4, 0.6]])
    >>> choquet_integral([1.0, 0.0], probas)
    array([0.4])
    >>> choquet_integral([1.0, 0.0], probas, upper=True)
    array([0.7])
    """
    P = _check_credal(probas)
    n, _, K = P.shape
    F = _as_real_array(f, "f")
    if F.ndim == 1:
        if F.shape[0] != K:
            raise ValueError(f"f has {F.shape[0]} entries but probas has {K} classes.")
        F = np.broadcast_to(F, (n, K))
    elif F.ndim == 2:
        if F.shape != (n, K):
            raise ValueError(f"f must have shape ({K},) or ({n}, {K}), got {F.shape}.")
    else:
        raise ValueError(f"f must be a 1-d or 2-d array, got shape {F.shape}.")
    if not np.all(np.isfinite(F)):
        raise ValueError("f contains NaN or infinite values.")
    out = np.empty(n, dtype=np.float64)
    for rows in _chunks(n, 2 * P.shape[1] * K):
        Fr = F[rows]
        order = np.argsort(-Fr, axis=1, kind="stable")
        f_sorted = np.take_along_axis(Fr, order, axis=1)
        cum = np.cumsum(np.take_along_axis(P[rows], order[:, None, :], axis=2), axis=2)
        nu = cum.max(axis=1) if upper else cum.min(axis=1)
        nu[:, -1] = 1.0
        increments = np.diff(nu, axis=1, prepend=0.0)
        out[rows] = (f_sorted * increments).sum(axis=1)
    return out


@validate_params(
    {"probas_a": ["array-like"], "probas_b": ["array-like"]}, prefer_skip_nested_validation=True
)
def lower_total_variation(probas_a, probas_b):
    """Lower total variation distance, the IIPM of the indicator functions.

    ``LTV(P_, Q_) = max_A |P_(A) - Q_(A)|`` between the lower probabilities of two
    ensemble credal sets over the same labels.

    Parameters
    ----------
    probas_a : array-like of shape (n_samples, n_members_a, n_classes) or \
(n_members_a, n_classes)
        First credal set per row.
    probas_b : array-like of shape (n_samples, n_members_b, n_classes) or \
(n_members_b, n_classes)
        Second credal set per row; the number of members may differ from ``probas_a``.

    Returns
    -------
    ltv : ndarray of shape (n_samples,)
        The lower total variation of each pair of credal sets, in ``[0, 1]``.

    Raises
    ------
    ValueError
        When the shapes do not match, or when ``K > 16`` and a side has more than one
        member (the exact computation enumerates all ``2**K`` events).

    See Also
    --------
    maximum_mean_imprecision : The IIPM between a lower probability and its conjugate.

    Notes
    -----
    LTV is not half the L1 distance between the lower probabilities of the singletons
    (Remark 14 of the paper). When both sides have a single member it reduces to the
    total variation ``0.5 ||p - q||_1`` and is computed in ``O(K)``; otherwise all events
    are enumerated, ``O((m_a + m_b) 2**K)`` per row, in row chunks of bounded memory.

    References
    ----------
    .. [1] S. L. Chau, M. Caprio, K. Muandet. "Integral Imprecise Probability Metrics".
       NeurIPS 2025, arXiv:2505.16156, Sec. 4.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.uncertainty import lower_total_variation
    >>> a = np.array([[0.6, 0.4, 0.0], [0.2, 0.4, 0.4]])
    >>> b = np.array([[0.3, 0.3, 0.4]])
    >>> lower_total_variation(a, b)
    array([0.4])
    """
    A = _check_credal(probas_a, name="probas_a")
    B = _check_credal(probas_b, name="probas_b")
    if A.shape[0] != B.shape[0] or A.shape[2] != B.shape[2]:
        raise ValueError(
            "probas_a and probas_b must have the same number of rows and classes, got "
            f"shapes {A.shape} and {B.shape}."
        )
    n, m_a, K = A.shape
    m_b = B.shape[1]
    if m_a == 1 and m_b == 1:
        return np.clip(0.5 * np.abs(A[:, 0] - B[:, 0]).sum(axis=-1), 0.0, 1.0)
    _check_max_classes(K, _MAX_K_LTV, "lower_total_variation")
    out = np.empty(n, dtype=np.float64)
    for rows in _chunks(n, (m_a + m_b + 2) << K):
        low_a = _event_table(A[rows]).min(axis=1)
        low_b = _event_table(B[rows]).min(axis=1)
        out[rows] = np.abs(low_a - low_b).max(axis=-1)
    return np.clip(out, 0.0, 1.0)


# --------------------------------------------------------------------------------------
# baselines: generalized Hartley and entropy difference
# --------------------------------------------------------------------------------------
@validate_params({"probas": ["array-like"]}, prefer_skip_nested_validation=True)
def generalized_hartley(probas):
    """Generalized Hartley measure (GH) of the lower probability of an ensemble, in bits.

    ``GH = sum_{A != {}} m(A) log2 |A|`` with ``m`` the Möbius inverse of the lower
    envelope ``P_``. It is 0 for a precise credal set and ``log2 K`` for the vacuous one.

    Parameters
    ----------
    probas : array-like of shape (n_samples, n_members, n_classes) or (n_members, n_classes)
        One credal set per row (see :func:`maximum_mean_imprecision`), ``K <= 15``.

    Returns
    -------
    gh : ndarray of shape (n_samples,)
        Generalized Hartley measure of each credal set, in bits.

    Raises
    ------
    ValueError
        When ``K > 15``: the table of all ``2**K`` events is built for each member.

    See Also
    --------
    maximum_mean_imprecision : A measure with the same axioms that scales to large ``K``.

    Notes
    -----
    The event table of each member is built with the subset recursion, the lower
    envelope taken over members, and the Möbius inverse computed with the fast Möbius
    transform, ``O((m + K) 2**K)`` per row. The lower envelope of an ensemble is not
    2-monotone in general, so some Möbius masses can be negative; they are kept as
    computed (the masses still sum to 1).

    References
    ----------
    .. [1] G. J. Klir, M. J. Wierman. "Uncertainty-Based Information". Physica, 1999.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.uncertainty import generalized_hartley
    >>> vacuous = np.eye(4)
    >>> generalized_hartley(vacuous)
    array([2.])
    """
    P = _check_credal(probas)
    n, m, K = P.shape
    _check_max_classes(K, _MAX_K_HARTLEY, "generalized_hartley")
    weights = np.zeros(1 << K, dtype=np.float64)
    sizes = _popcounts(K)
    weights[1:] = np.log2(sizes[1:])
    out = np.empty(n, dtype=np.float64)
    for rows in _chunks(n, (m + 2) << K):
        lower = _event_table(P[rows]).min(axis=1)
        lower[:, -1] = 1.0
        out[rows] = _mobius(lower) @ weights
    return out


def _upper_entropy(P, tol_bits, max_iter):
    """Maximum entropy (bits) over the convex hull of the members, per row.

    Exponentiated-gradient ascent on the mixture weights with step 1, stopped by the
    Frank-Wolfe duality gap (an upper bound on the suboptimality).
    """
    n, m, K = P.shape
    lam = np.full((n, m), 1.0 / m)
    best = _entropy_bits(P).max(axis=1)
    if m == 1:
        return best
    active = np.arange(n)
    tol = tol_bits * np.log(2.0)
    value = np.empty(n, dtype=np.float64)
    tiny = np.finfo(np.float64).tiny
    for _ in range(max_iter):
        Pa = P[active]
        mix = np.einsum("nm,nmk->nk", lam[active], Pa)
        log_mix = np.log(np.maximum(mix, tiny))
        ce = -np.einsum("nmk,nk->nm", Pa, log_mix)  # CE(p_j, mix) in nats
        h = -(np.where(mix > 0, mix * log_mix, 0.0)).sum(axis=1)
        value[active] = h
        gap = ce.max(axis=1) - h
        done = gap <= tol
        if np.all(done):
            active = active[:0]
            break
        keep = ~done
        active = active[keep]
        step = ce[keep] - ce[keep].max(axis=1, keepdims=True)
        new = lam[active] * np.exp(step)
        lam[active] = new / new.sum(axis=1, keepdims=True)
    if active.size:
        mix = np.einsum("nm,nmk->nk", lam[active], P[active])
        value[active] = _entropy_bits(mix) * np.log(2.0)
    upper = value / np.log(2.0)
    return np.minimum(np.maximum(upper, best), np.log2(K))


@validate_params(
    {
        "probas": ["array-like"],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def entropy_difference(probas, *, tol=1e-4, max_iter=2000):
    """Entropy difference (E-Diff): upper minus lower Shannon entropy over the credal set.

    ``E-Diff = max_{p in conv C} H(p) - min_{p in conv C} H(p)`` in bits, where
    ``conv C`` is the convex hull of the members' probability vectors.

    Parameters
    ----------
    probas : array-like of shape (n_samples, n_members, n_classes) or (n_members, n_classes)
        One credal set per row (see :func:`maximum_mean_imprecision`).
    tol : float, default=1e-4
        Stop the upper-entropy ascent of a row when its Frank-Wolfe duality gap, a bound
        on the distance to the maximum, falls below ``tol`` bits.
    max_iter : int, default=2000
        Maximum number of ascent iterations.

    Returns
    -------
    ediff : ndarray of shape (n_samples,)
        Entropy difference of each credal set, in bits (non-negative).

    See Also
    --------
    generalized_hartley : The non-specificity part of the disaggregated total uncertainty.
    maximum_mean_imprecision : MMI, which satisfies monotonicity (E-Diff does not).

    Notes
    -----
    Entropy is concave, so the lower entropy over the hull is attained at a member:
    ``min_j H(p_j)``. The upper entropy maximises the concave ``H(sum_j λ_j p_j)`` over
    the simplex of weights ``λ`` with exponentiated-gradient ascent
    ``λ_j <- λ_j exp(CE(p_j, p_λ))`` (step 1), vectorised over rows. The paper does not
    say whether its credal set is the hull of the members or the core of the lower
    envelope; this implementation uses the hull.

    References
    ----------
    .. [1] E. Hüllermeier, S. Destercke, M. H. Shaker. "Quantification of Credal
       Uncertainty in Machine Learning: A Critical Analysis and Empirical Comparison".
       UAI 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.uncertainty import entropy_difference
    >>> probas = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> entropy_difference(probas).round(4)
    array([1.])
    """
    if not np.isfinite(tol):
        raise ValueError(f"tol must be finite, got {tol!r}.")
    P = _check_credal(probas)
    lower = _entropy_bits(P).min(axis=1)
    out = np.empty(P.shape[0], dtype=np.float64)
    for rows in _chunks(P.shape[0], 4 * P.shape[1] * P.shape[2]):
        out[rows] = _upper_entropy(P[rows], float(tol), int(max_iter)) - lower[rows]
    return np.maximum(out, 0.0)


# --------------------------------------------------------------------------------------
# accuracy-rejection curve
# --------------------------------------------------------------------------------------
@validate_params(
    {
        "y_true": ["array-like"],
        "y_pred": ["array-like"],
        "uncertainty": ["array-like"],
        "rejection_rates": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def accuracy_rejection_curve(y_true, y_pred, uncertainty, *, rejection_rates=None):
    """Accuracy of the retained predictions when the most uncertain ones are rejected.

    For each rejection rate ``ρ``, the ``n - floor(ρ n)`` least uncertain points are
    kept and the accuracy of ``y_pred`` on them is reported. Ties in ``uncertainty`` at
    the boundary are resolved in expectation over uniformly random tie-breaking, so the
    curve is deterministic and does not depend on the order of the rows.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_pred : array-like of shape (n_samples,)
        Predicted labels.
    uncertainty : array-like of shape (n_samples,) or (n_samples, 1)
        Uncertainty score per point (larger is rejected first), for example the output
        of :meth:`MMIUncertainty.transform`.
    rejection_rates : array-like of float, default=None
        Rejection rates in ``[0, 1)``; None uses ``0, 0.01, ..., 0.99``.

    Returns
    -------
    rejection_rates : ndarray of shape (n_rates,)
        The rejection rates.
    accuracies : ndarray of shape (n_rates,)
        Accuracy on the retained points at each rate.
    auc : float
        Area under the curve, the mean of ``accuracies`` over the grid. A random
        rejector has an expected AUC equal to the overall accuracy.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.uncertainty import accuracy_rejection_curve
    >>> y_true = np.array([0, 1, 1, 0])
    >>> y_pred = np.array([0, 1, 0, 1])
    >>> rates, acc, auc = accuracy_rejection_curve(
    ...     y_true, y_pred, [0.1, 0.2, 0.9, 0.8], rejection_rates=[0.0, 0.5])
    >>> acc
    array([0.5, 1. ])
    """
    for name, value in (("y_true", y_true), ("y_pred", y_pred)):
        if sparse.issparse(value):
            raise TypeError(f"{name} is sparse; pass a dense 1-d array of labels.")
    try:
        y_true = np.asarray(y_true)
        y_pred = np.asarray(y_pred)
    except ValueError:
        raise ValueError("y_true and y_pred must be 1-d arrays, not ragged lists.") from None
    u = _as_real_array(uncertainty, "uncertainty")
    if u.ndim == 2 and u.shape[1] == 1:
        u = u[:, 0]
    if y_true.ndim != 1 or y_pred.ndim != 1 or u.ndim != 1:
        raise ValueError(
            "y_true, y_pred and uncertainty must be 1-d arrays (uncertainty may be a single "
            f"column); got shapes {y_true.shape}, {y_pred.shape} and {np.shape(uncertainty)}."
        )
    for name, labels in (("y_true", y_true), ("y_pred", y_pred)):
        if labels.dtype.kind in "fc" and not np.all(np.isfinite(labels)):
            # NaN != NaN: a missing label would count as a wrong prediction, silently
            raise ValueError(
                f"{name} contains NaN or infinity; labels must be finite (drop or impute "
                "the rows without a label first)."
            )
    n = y_true.shape[0]
    if n == 0:
        raise ValueError("accuracy_rejection_curve needs at least one sample.")
    if y_pred.shape[0] != n or u.shape[0] != n:
        raise ValueError(
            f"y_true, y_pred and uncertainty must have the same length, got {n}, "
            f"{y_pred.shape[0]} and {u.shape[0]}."
        )
    if not np.all(np.isfinite(u)):
        raise ValueError("uncertainty contains NaN or infinite values.")
    if rejection_rates is None:
        rates = np.arange(100) / 100.0
    else:
        rates = _as_real_array(rejection_rates, "rejection_rates").reshape(-1)
        if rates.size == 0 or not np.all((rates >= 0) & (rates < 1)):
            raise ValueError("rejection_rates must be a non-empty array of values in [0, 1).")
    correct = (y_true == y_pred).astype(np.float64)
    order = np.argsort(u, kind="stable")
    u_sorted = u[order]
    cum = np.concatenate([[0.0], np.cumsum(correct[order])])
    raw = rates * n
    snapped = np.where(np.abs(raw - np.round(raw)) < 1e-9, np.round(raw), raw)
    n_keep = n - np.floor(snapped).astype(np.int64)
    boundary = u_sorted[n_keep - 1]
    lo = np.searchsorted(u_sorted, boundary, side="left")
    hi = np.searchsorted(u_sorted, boundary, side="right")
    group_mean = (cum[hi] - cum[lo]) / (hi - lo)
    accuracies = (cum[lo] + (n_keep - lo) * group_mean) / n_keep
    return rates, accuracies, float(accuracies.mean())
