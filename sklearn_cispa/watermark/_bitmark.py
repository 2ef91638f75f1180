"""BitMark: a bit-level green-list watermark, its detector and removal attacks."""

import math
import numbers
import warnings

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.stats import binom, genpareto, norm
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils import check_array
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions, validate_params
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_cispa.utils import spawn_seeds

_GREEN_TYPES = [tuple, list, set, frozenset]
_LOWER_TAIL = 0.05  # the population check's lower tail
_LOWER_CUT = float(norm.ppf(_LOWER_TAIL))


def _parse_green(green):
    """Explicit green list -> (n, boolean lookup table of length 2**n)."""
    strings = [str(s) for s in green]
    if not strings:
        raise ValueError("green must hold at least one bit string.")
    n = len(strings[0])
    if n < 1 or any(len(s) != n or set(s) - {"0", "1"} for s in strings):
        raise ValueError(
            f"green must hold bit strings of one length made of '0' and '1'; got {green!r}."
        )
    if n > 16:
        raise ValueError(f"green strings longer than 16 bits are not supported; got {n}.")
    table = np.zeros(2**n, dtype=bool)
    table[[int(s, 2) for s in strings]] = True
    if table.all():
        raise ValueError("green holds every bit string of its length: nothing is red.")
    return n, table


def _is_integer_array(X):
    return isinstance(X, np.ndarray) and X.dtype.kind in "biu"


def _as_bits(X):
    """Bits as (n_samples, n_tokens, token_bits) uint8; 2-D input is one token per row.

    Integer and boolean arrays of 0/1 are used as they are (no float copy: one pass over
    the data checks their range), which keeps detection at the cost of counting.
    """
    X = np.asarray(X)
    if X.ndim == 2:
        X = X[:, None, :]
    if X.dtype.kind == "b":
        return X.view(np.uint8)
    if X.dtype.kind in "iu":
        low = X.min() if X.size and X.dtype.kind == "i" else 0
        high = X.max() if X.size else 0
        if low >= 0 and high <= 1:
            return X if X.dtype == np.uint8 else X.astype(np.uint8)
        bits = np.clip(X, 0, 1).astype(np.uint8)
    else:
        bits = np.clip(np.rint(X), 0, 1).astype(np.uint8)
        if np.array_equal(bits, X):
            return bits
    warnings.warn(
        "X holds values other than 0 and 1; they were rounded and clipped to bits. "
        "For images, set encoder= (for example a fitted generator's encode).",
        UserWarning,
        stacklevel=4,
    )
    return bits


def _window_codes(bits, n, windows):
    """Integer code of every length-n window: (n_samples, n_windows)."""
    dtype = np.uint8 if n <= 8 else np.uint16
    if windows == "flat":
        seq = bits.reshape(bits.shape[0], -1)
        length = seq.shape[1] - n + 1
        codes = np.zeros((seq.shape[0], max(length, 0)), dtype=dtype)
        for j in range(n):
            codes = (codes << 1) | seq[:, j : j + length]
        return codes
    d = bits.shape[2]
    length = d - n + 1
    codes = np.zeros((*bits.shape[:2], max(length, 0)), dtype=dtype)
    for j in range(n):
        codes = (codes << 1) | bits[:, :, j : j + length]
    return codes.reshape(bits.shape[0], -1)


def _token_codes(bits):
    """Tokens of 8, 16, 32 or 64 bits as unsigned integers (most significant bit first).

    One ``packbits`` pass over the flattened bits (token boundaries fall on bytes), or
    None for other widths, dtypes or numpy without ``bitwise_count``.
    """
    d = bits.shape[2]
    if d not in (8, 16, 32, 64) or bits.dtype != np.uint8 or not hasattr(np, "bitwise_count"):
        return None
    packed = np.packbits(np.ascontiguousarray(bits).reshape(-1))
    width = d // 8
    codes = packed.view(f">u{width}").reshape(bits.shape[:2])
    return codes.astype(f"u{width}") if width > 1 else codes


def _xor_counts(bits, windows, codes=None):
    """Per sample, the number of length-2 windows whose two bits differ."""
    d = bits.shape[2]
    if codes is not None:
        # bit i of c ^ (c >> 1) says whether bits i and i + 1 of the token differ; the
        # top bit (the first bit against nothing) is masked out
        mask = codes.dtype.type((1 << (d - 1)) - 1)
        differ = np.bitwise_count((codes ^ (codes >> 1)) & mask).sum(axis=1, dtype=np.int64)
        total = bits.shape[1] * (d - 1)
        if windows == "flat" and bits.shape[1] > 1:
            # the pairs across tokens: last bit of a token against the next one's first
            across = (codes[:, :-1] & 1) ^ (codes[:, 1:] >> (d - 1))
            differ = differ + across.sum(axis=1, dtype=np.int64)
            total += bits.shape[1] - 1
        return differ.astype(np.float64), total
    if windows == "flat":
        seq = bits.reshape(bits.shape[0], -1)
        diff = seq[:, 1:] ^ seq[:, :-1]
    else:
        diff = (bits[:, :, 1:] ^ bits[:, :, :-1]).reshape(bits.shape[0], -1)
    return diff.sum(axis=1, dtype=np.int64).astype(np.float64), diff.shape[1]


def _green_counts(bits, n, table, windows, count_repeats, codes=None):
    """(green count C, window count T) per sample; ``codes``: ``_token_codes(bits)``."""
    if n == 2 and count_repeats and bits.dtype == np.uint8:
        # the green lists {01, 10} and {00, 11} are "the bits differ" / "agree": one XOR
        # pass and a count, without window codes (the Infinity-size detection path)
        if table.tolist() in ([False, True, True, False], [True, False, False, True]):
            differ, total = _xor_counts(bits, windows, codes)
            count = differ if table[1] else total - differ
            return count, np.full(bits.shape[0], float(total))
    codes = _window_codes(bits, n, windows)
    if count_repeats:
        green = table[codes].sum(axis=1).astype(np.float64)
        return green, np.full(codes.shape[0], float(codes.shape[1]))
    present = np.zeros((codes.shape[0], table.size), dtype=bool)
    np.put_along_axis(present, codes.astype(np.intp), True, axis=1)
    return (present & table).sum(axis=1).astype(np.float64), present.sum(axis=1).astype(
        np.float64
    )


def _distinct_tokens(bits, codes=None):
    """Number of distinct tokens of each sample: (n_samples,)."""
    n, t, d = bits.shape
    if t == 0:
        return np.zeros(n, dtype=np.int64)
    if codes is None:
        if d <= 62:
            dtype = next(v for w, v in ((8, np.uint8), (16, np.uint16), (32, np.uint32),
                                        (62, np.int64)) if d <= w)
            codes = np.zeros((n, t), dtype=dtype)
            for j in range(d):
                codes = (codes << 1) | bits[:, :, j].astype(dtype)
        else:
            packed = np.ascontiguousarray(np.packbits(bits, axis=2))
            codes = packed.view(np.dtype((np.void, packed.shape[2])))[..., 0]
    codes = np.sort(codes, axis=1)
    return 1 + (codes[:, 1:] != codes[:, :-1]).sum(axis=1)


def _fit_variance_model(r2, x):
    """Gaussian maximum likelihood of ``var_i = tau2 + s2 x_i`` (``tau2, s2 >= 0``) from
    squared deviations ``r2``: returns ``(s2, tau2)``.

    With ``var_i = c (a + (1 - a) x_i / mean(x))`` the scale ``c`` has the closed form
    ``mean(r2 / w_i)`` at each mix ``a`` in [0, 1], which is found by a bounded scalar
    search of the profile likelihood. At the optimum the calibration samples'
    standardised deviations have mean square 1.
    """
    u = x / x.mean()

    def profile(a):
        w = a + (1.0 - a) * u
        c = float(np.mean(r2 / w))
        return (np.sum(np.log(c * w)) if c > 0 else np.inf), c

    found = minimize_scalar(lambda a: profile(a)[0], bounds=(0.0, 1.0), method="bounded",
                            options={"xatol": 1e-6})
    a = min((0.0, 1.0, float(found.x)), key=lambda v: profile(v)[0])
    c = profile(a)[1]
    return c * (1.0 - a) / float(x.mean()), c * a


def _z(count, total, gamma):
    return (count - gamma * total) / np.sqrt(total * gamma * (1.0 - gamma))


def _split_green_fractions(bits, n, table, windows):
    """Green fractions of the windows starting in even and in odd tokens, or None.

    The two halves interleave tokens, so in a raster-ordered image they cover the same
    content; their difference measures the within-image (window-level) variance, and
    what remains of the variance of the green fraction is between images.
    """
    if bits.shape[1] < 2:
        return None
    green = table[_window_codes(bits, n, windows)]
    per_token = bits.shape[2] - n + 1 if windows == "within_token" else bits.shape[2]
    token = np.arange(green.shape[1]) // per_token
    even = (token % 2) == 0
    if even.all() or not even.any():
        return None
    return green[:, even].mean(axis=1), green[:, ~even].mean(axis=1), even.sum(), (~even).sum()


_TAIL_FRACTION = 0.1   # the Pareto tail is fitted to the top 10% of the scores ...
_TAIL_MIN = 30         # ... and to at least 30 of them


def _empirical_quantile(z, fpr):
    """The ``ceil((1 - fpr) N)``-th smallest of ``z`` (calibration FPR at most ``fpr``)."""
    k = max(1, math.ceil((1.0 - fpr) * len(z) - 1e-9))
    return float(np.sort(z)[k - 1])


def _pareto_quantile(z, fpr):
    """The ``1 - fpr`` quantile of ``z`` from a generalised Pareto tail.

    The ``k = max(30, round(0.1 N))`` largest of the ``N`` scores are taken as
    exceedances over the next one, ``u``; a generalised Pareto distribution (shape ``c``,
    scale ``s``, location 0) is fitted to them by maximum likelihood and the quantile is
    ``u + s ((N fpr / k)**(-c) - 1) / c`` (``u + s log(k / (N fpr))`` at ``c = 0``), the
    peaks-over-threshold estimate. Where ``fpr >= k / N`` (the quantile lies in the
    bulk), where fewer than ``2 k`` scores are given, or where the fit fails, the
    empirical quantile is returned.
    """
    z = np.sort(np.asarray(z, dtype=np.float64))
    n = len(z)
    k = max(_TAIL_MIN, int(round(_TAIL_FRACTION * n)))
    if fpr * n >= k or n < 2 * k:
        return _empirical_quantile(z, fpr)
    u = z[n - k - 1]
    excess = z[n - k:] - u
    if not np.ptp(excess) > 0:
        return _empirical_quantile(z, fpr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        c, _, scale = genpareto.fit(excess, floc=0)
    q = float(u + genpareto.ppf(1.0 - fpr * n / k, c, loc=0, scale=scale))
    return q if np.isfinite(q) else _empirical_quantile(z, fpr)


def _ordinary_edits(n_levels):
    """(name, edit) pairs of the default calibration edits, the library's attacks."""
    def noise(X, sigma):
        X = np.asarray(X)
        flat = X.reshape(len(X), -1)
        return gaussian_noise_attack(flat, sigma, n_levels=n_levels,
                                     random_state=0).reshape(X.shape)

    return [
        ("JPEG 50", lambda X: jpeg_attack(X, 50, n_levels=n_levels)),
        ("JPEG 80", lambda X: jpeg_attack(X, 80, n_levels=n_levels)),
        ("crop 0.8 + resize", lambda X: crop_resize_attack(X, 0.8, n_levels=n_levels)),
        ("blur 1.0", lambda X: blur_attack(X, 1.0, n_levels=n_levels)),
        ("blur 2.0", lambda X: blur_attack(X, 2.0, n_levels=n_levels)),
        ("noise 2", lambda X: noise(X, 2.0)),
    ]


class BitMarkWatermark(BaseEstimator):
    """The BitMark logits processor: bias each bit towards a green list of bit n-grams.

    Inside every token, bit ``k >= first_biased_bit`` looks at the ``n - 1`` bits before
    it in the same token (the prefix ``u``, packed most significant first) and its logit
    for value ``v`` is raised by ``delta`` when ``u.v`` is green and ``u.(1-v)`` is not
    green, or when both are (a tie, which has no net effect). With the default green list
    ``{"01", "10"}`` the rule is "prefer the opposite of the previous bit", and on a fair
    coin ``P(b_k != b_{k-1}) = sigmoid(delta)``.

    The object is a parameter container (no ``fit``): the green list, its rate and the
    bias table are derived from the parameters on first use.

    Parameters
    ----------
    green : tuple of str or int, default=("01", "10")
        The green list: bit strings of one length ``n`` (the reference's ``--set``), or an
        int ``n``, in which case ``round(gamma * 2**n)`` strings of length ``n`` are drawn
        at random with ``random_state`` as the key.
    gamma : float, default=0.5
        Fraction of green strings when ``green`` is an int; ignored otherwise.
    delta : float, default=2.0
        The logit bias, ``>= 0``.
    first_biased_bit : int or None, default=None
        Index of the first biased bit of a token. None means ``n - 1``, the first bit with
        a full prefix inside its token; ``n`` reproduces the reference code.
    random_state : int, RandomState instance or None, default=None
        The key of a random green list (``green`` an int); unused otherwise. Use an int
        for a reproducible key.

    Attributes
    ----------
    n_gram_ : int
        Length ``n`` of the green strings.
    gamma_ : float
        ``|G| / 2**n``.
    green_set_ : frozenset of str
        The green strings.
    bias_table_ : ndarray of shape (2**(n-1), 2)
        Logit bias per prefix (row, packed most significant first) and bit value.

    See Also
    --------
    BitMarkDetector : Detect the watermark.
    BitwiseARGenerator : A toy generator that takes this processor in ``sample``.

    Notes
    -----
    ``__call__(prefix_bits, logits)`` takes the bits already drawn in each token,
    ``prefix_bits`` of shape ``(n_tokens, k)`` where ``k`` is the index of the bit being
    drawn, and uses its last ``n - 1`` columns; the bit index is what lets the processor
    apply ``first_biased_bit``. A keyed random list can be useless: when every prefix has
    both or neither continuation green (for example ``{010, 011}``), no bit is biased and
    a warning says so. The reference sampling loop leaves bits below the green
    string length unbiased (an off-by-one: bit 1 has a predecessor in its token); this
    library biases from ``n - 1`` by default.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.watermark import BitMarkWatermark
    >>> wm = BitMarkWatermark(delta=2.0)
    >>> wm.bias_table_
    array([[0., 2.],
           [2., 0.]])
    >>> wm(np.array([[0], [1]]), np.zeros((2, 2)))
    array([[0., 2.],
           [2., 0.]])
    """

    _parameter_constraints: dict = {
        "green": [*_GREEN_TYPES, Interval(numbers.Integral, 1, 16, closed="both")],
        "gamma": [Interval(numbers.Real, 0, 1, closed="neither")],
        "delta": [Interval(numbers.Real, 0, None, closed="left")],
        "first_biased_bit": [Interval(numbers.Integral, 0, None, closed="left"), None],
        "random_state": ["random_state"],
    }

    def __init__(self, green=("01", "10"), gamma=0.5, delta=2.0, first_biased_bit=None,
                 random_state=None):
        self.green = green
        self.gamma = gamma
        self.delta = delta
        self.first_biased_bit = first_biased_bit
        self.random_state = random_state

    def _resolve(self):
        """Derive (n, green table, first biased bit, bias table), cached per parameters."""
        rs = self.random_state
        key = (
            repr(self.green), self.gamma, self.delta, self.first_biased_bit,
            rs if rs is None or isinstance(rs, numbers.Integral) else id(rs),
        )
        cache = self.__dict__.get("_resolved")
        if cache is not None and cache[0] == key:
            return cache[1]
        self._validate_params()
        if isinstance(self.green, numbers.Integral):
            n = int(self.green)
            size = int(round(self.gamma * 2**n))
            if size < 1 or size >= 2**n:
                raise ValueError(
                    f"gamma={self.gamma} with green={n} gives {size} green strings of "
                    f"{2**n}; choose gamma so that 1 <= round(gamma * 2**n) < 2**n."
                )
            rng = np.random.default_rng(spawn_seeds(rs, 1)[0])
            table = np.zeros(2**n, dtype=bool)
            table[rng.choice(2**n, size=size, replace=False)] = True
        else:
            n, table = _parse_green(self.green)
        first = n - 1 if self.first_biased_bit is None else int(self.first_biased_bit)
        if first < n - 1:
            raise ValueError(
                f"first_biased_bit={first} is below n - 1 = {n - 1}: bit {first} has no "
                f"full {n - 1}-bit prefix inside its token."
            )
        codes = (np.arange(2 ** (n - 1))[:, None] << 1) | np.array([0, 1])
        bias = np.where(table[codes] >= table[codes ^ 1], float(self.delta), 0.0)
        if self.delta > 0 and np.all(bias[:, 0] == bias[:, 1]):
            warnings.warn(
                f"Every prefix of the green list {sorted(table.nonzero()[0].tolist())} "
                "(as integers) has both or neither continuation green: the watermark "
                "changes no bit probability.",
                UserWarning,
                stacklevel=3,
            )
        resolved = (n, table, first, bias)
        self.__dict__["_resolved"] = (key, resolved)
        return resolved

    @property
    def n_gram_(self):
        return self._resolve()[0]

    @property
    def gamma_(self):
        table = self._resolve()[1]
        return float(table.mean())

    @property
    def green_set_(self):
        n, table = self._resolve()[:2]
        return frozenset(format(int(c), f"0{n}b") for c in np.flatnonzero(table))

    @property
    def bias_table_(self):
        return self._resolve()[3].copy()

    def _bit_bias(self, n_bits):
        """Per bit index, the logit-difference bias by the last n-1 prefix bits (or None).

        Used by :class:`BitwiseARGenerator` to apply the watermark without a Python call
        per bit: entry ``k`` maps ``prefix & mask`` (the token's prefix integer, whose low
        ``n - 1`` bits are the last ``n - 1`` bits drawn) to ``bias[., 1] - bias[., 0]``;
        the last entry is ``mask``.
        """
        n, _, first, bias = self._resolve()
        diff = bias[:, 1] - bias[:, 0]
        per_bit = [None if k < first else diff for k in range(n_bits)]
        return [*per_bit, (1 << (n - 1)) - 1]

    def __call__(self, prefix_bits, logits):
        """Add the watermark bias to the logits of the next bit of every token.

        Parameters
        ----------
        prefix_bits : array-like of shape (n_tokens, k)
            Bits already drawn in each token; ``k`` is the index of the bit being drawn.
        logits : array-like of shape (n_tokens, 2)
            Logits of bit values 0 and 1 (not modified).

        Returns
        -------
        logits : ndarray of shape (n_tokens, 2)
            The biased logits.
        """
        n, _, first, bias = self._resolve()
        prefix_bits = np.asarray(prefix_bits)
        logits = np.asarray(logits, dtype=np.float64)
        k = prefix_bits.shape[1] if prefix_bits.ndim == 2 else -1
        if k < 0 or logits.ndim != 2 or logits.shape[1] != 2 or (
            logits.shape[0] != prefix_bits.shape[0]
        ):
            raise ValueError(
                "prefix_bits must have shape (n_tokens, k) and logits (n_tokens, 2); got "
                f"{prefix_bits.shape} and {logits.shape}."
            )
        if k < first:
            return logits.copy()
        if n == 1:
            return logits + bias[0]
        if n == 2:
            idx = prefix_bits[:, k - 1].astype(np.intp)
        else:
            idx = prefix_bits[:, k - n + 1 :].astype(np.intp) @ (
                1 << np.arange(n - 2, -1, -1)
            )
        return logits + bias[idx]


class BitMarkDetector(BaseEstimator):
    """Detect BitMark: count green bit n-grams and test against a calibrated null.

    The detector counts the windows of length ``n`` whose bit string is green, ``C`` out
    of ``T``, and computes the one-sided z-score ``(C - gamma0 T) / sqrt(T gamma0 (1 -
    gamma0))``. ``fit`` calibrates the null on clean (unwatermarked) samples: natural bits
    are not fair coins (on digits the clean green fraction is about 0.21, not 0.5), so the
    paper's fixed null ``gamma0 = gamma`` gives clean z-scores far below zero and misses
    weak watermarks. Calibrate on clean images of the population the detector protects
    (the same source and processing as the images it will score), through ``encoder``.

    With a calibrated null (``"gamma0"``, ``"empirical"``) the z-score is standardised by
    the over-dispersion of the clean population: real photos have correlated bits, and
    their green fraction varies between images far more than the binomial model says
    (20 times its variance on 8 x 8 patches of sklearn's sample photos). The null
    variance of the green fraction of a sample with ``T`` windows is modelled as
    ``between_image_var_ + window_var_ / T`` (never below the binomial
    ``gamma0 (1 - gamma0) / T``), so samples with any number of tokens are scored
    against the null at their own size. By default (``effective_tokens="both"``) a
    second model counts only the windows of a sample's *distinct* tokens, since a
    repeated token brings no new evidence, and the null variance is the larger of the
    two: an image that processing flattened to a few grey levels (JPEG of a
    near-uniform 8 x 8 block) is then tested against the wide null it has.

    Parameters
    ----------
    green : tuple of str, default=("01", "10")
        The green list; must equal the watermark's (``tuple(watermark.green_set_)`` for a
        keyed random list).
    null : {"empirical", "gamma0", "fixed"}, default="empirical"
        ``"fixed"``: the green rate ``gamma`` of the list, the binomial variance and the
        rule ``z > z_threshold`` (the paper's detector). ``"gamma0"``: ``gamma0``
        estimated as the mean clean green fraction and the variance as the clean
        over-dispersion, same rule. ``"empirical"``: the same standardised z-scores
        thresholded at the ``ceil((1 - fpr) N)``-th smallest of the ``N`` clean
        calibration z-scores, so the calibration false-positive rate is at most ``fpr``,
        or at ``norm.isf(fpr)`` where that is higher (a quantile resting on a handful of
        calibration samples is noisy).
    fpr : float, default=0.01
        Target false-positive rate of ``null="empirical"``.
    z_threshold : float, default=4.0
        The threshold of ``null="fixed"`` and ``"gamma0"``.
    windows : {"within_token", "flat"}, default="within_token"
        ``"within_token"``: windows that lie inside one token, the only ones the
        watermark biases. ``"flat"``: windows over the token-major flattened sequence, as
        in the reference detector.
    count_repeats : bool, default=True
        Count every window (the reference default). False counts each distinct n-gram of
        a sample once (``T`` is then the number of distinct n-grams present).
    encoder : callable or None, default=None
        Maps images to bits, for example a fitted ``BitwiseARGenerator.encode`` or the
        8-bit grey-level bits of a photo. When set, every method takes images.
    effective_tokens : {"both", "all", "distinct"}, default="both"
        The windows behind the window term of the null variance. ``"all"``: every
        window of the sample, ``between_image_var_ + window_var_ / T``.
        ``"distinct"``: only the windows of its ``D`` distinct tokens,
        ``distinct_between_image_var_ + distinct_window_var_ / (T D / n_tokens)``,
        the two variances fitted by Gaussian maximum likelihood on the calibration
        samples' distinct-token counts. ``"both"``: the larger of the two variances,
        times one scale fitted so that the calibration z-scores have mean square 1.
        ``"all"`` accuses clean photos that JPEG flattened to one grey level at low
        ``fpr``; ``"distinct"`` accuses blurred ones; ``"both"`` holds both (measured
        in the user guide). Ignored by ``null="fixed"`` (the paper's binomial z). The
        distinct tokens cost a sort of the token codes per sample.
    scales : tuple of int or None, default=None
        Multi-scale token maps (Infinity's scales, coarse to fine): the number of tokens
        of each scale, in the order they lie along the token axis (for example ``(1, 4,
        16, 64)``). Each scale gets its own null, calibrated on that scale of the clean
        samples, :meth:`score_scales` gives the z-score of every scale, and
        ``score_samples`` combines them: the per-scale deviations weighted by the
        inverse null standard deviation of their scale, standardised by the mean and
        standard deviation of that sum over the calibration samples (which takes the
        correlation between the scales of one image into account). Samples must then
        have ``sum(scales)`` tokens. None: one null for all tokens, and any number of
        tokens per sample.
    calibration_edits : "ordinary", list of callables or None, default="ordinary"
        Edits of the clean calibration images that ``null="empirical"``'s threshold
        must cover: the threshold is the largest of the ``1 - fpr`` quantiles of the
        z-scores of the calibration images as given and after each edit, so that a
        clean image after one of them is not called watermarked. ``"ordinary"``: JPEG
        quality 50 and 80, crop 0.8 + resize, Gaussian blur sigma 1 and 2, Gaussian
        noise sigma 2 grey levels (seed 0), by the library's :func:`jpeg_attack`,
        :func:`crop_resize_attack`, :func:`blur_attack` and
        :func:`gaussian_noise_attack` on grey images in levels ``0 .. n_levels - 1``
        (``(n_images, height, width)`` or flat square). A list: callables from images to
        images of the same shape. None: the calibration images only (the paper's
        protocol). Used only with ``encoder`` set (bits cannot be edited as images) and
        ``null="empirical"``; the null itself (``gamma0_``, the variances) is fitted on
        the unedited images.
    n_levels : int, default=256
        Grey levels of the images the ordinary edits see (256 for 8-bit images, 16 for
        the 4-bit toy generator).
    tail : {"pareto", "empirical"}, default="pareto"
        How ``null="empirical"`` takes the ``1 - fpr`` quantile of calibration
        z-scores. ``"empirical"``: the ``ceil((1 - fpr) N)``-th smallest of ``N``.
        ``"pareto"``: a generalised Pareto distribution fitted by maximum likelihood to
        the largest ``max(30, 0.1 N)`` scores over the next one (peaks over
        threshold), whose quantile uses the whole tail rather than the two or three
        largest scores at ``fpr=0.001``; the empirical quantile where ``fpr`` is at
        least that tail's share of ``N`` or fewer than twice its size are given.

    Attributes
    ----------
    gamma0_ : float
        Green rate of the null.
    threshold_ : float
        z-score above which a sample is called watermarked.
    z_clean_ : ndarray of shape (n_clean,)
        z-scores of the calibration samples.
    n_windows_ : int
        Windows per calibration sample ``T`` (with ``count_repeats=True``).
    window_var_ : float
        Window-level variance ``s2`` of the null: the green fraction of ``T`` windows
        of one image varies by ``s2 / T``; estimated from the difference between the
        windows of the even and of the odd tokens of each clean image (the binomial
        ``gamma0 (1 - gamma0)`` with ``null="fixed"``, at least that otherwise).
    between_image_var_ : float
        Variance of the clean green fraction between images that ``window_var_`` does
        not explain (0 with ``null="fixed"``).
    distinct_window_var_, distinct_between_image_var_ : float
        With ``effective_tokens`` ``"distinct"`` or ``"both"``: the two variances of the
        model over distinct tokens (those over all windows where every calibration
        sample has the same number of distinct tokens).
    dispersion_ : float
        Null variance of the green fraction at the calibration size over the binomial
        variance (1 for fair i.i.d. bits).
    n_features_in_ : int
        Second dimension of the calibration bits (tokens for 3-D bits, bits for 2-D);
        other samples may have any number of tokens.
    scale_detectors_ : list of BitMarkDetector
        With ``scales``: one detector per scale (``null="gamma0"`` unless ``null`` is
        ``"fixed"``), fitted on that scale of the calibration samples.
    scale_weights_ : ndarray of shape (n_scales,)
        With ``scales``: the weight of each scale's z-score in the combined score.
    calibration_edits_ : tuple of str
        With ``null="empirical"``: names of the calibration edits applied (empty
        without ``encoder`` or with ``calibration_edits=None``).
    edit_thresholds_ : ndarray of shape (n_edits,)
        With ``null="empirical"``: the ``1 - fpr`` quantile of the calibration
        z-scores after each edit; ``threshold_`` is at least each of them.

    See Also
    --------
    BitMarkWatermark : The logits processor that embeds the watermark.
    sklearn_cispa.metrics.tpr_at_fpr : TPR at a low FPR, the evaluation metric.

    Notes
    -----
    Bits come as ``(n_samples, n_tokens, token_bits)``; a 2-D array ``(n_samples, L)`` is
    read as one token of ``L`` bits per sample, for which both window modes coincide.
    Other values are rounded and clipped to ``{0, 1}`` with a warning (images need
    ``encoder``). With ``green={"01", "10"}`` and fair
    i.i.d. bits the window indicators are independent, so the fixed null is exact;
    otherwise overlapping windows are dependent and the calibrated null is the one to
    trust. A calibration set whose green fraction is 0 or 1 gives a degenerate null:
    ``gamma0_`` is then moved half a count inside ``(0, 1)`` with a warning. The
    empirical null warns when ``fpr * (n_clean + 1) < 1``: the threshold is then the
    largest clean z-score, whose false-positive rate is about ``1 / (n_clean + 1)``,
    and the threshold ``norm.isf(fpr)`` where that is higher.

    The split into even and odd tokens interleaves neighbouring tokens, which are
    correlated in images: ``window_var_`` is then under-estimated and
    ``between_image_var_`` over-estimated, which is exact at the calibration size,
    conservative for larger images and anti-conservative for much smaller ones;
    calibrate on images of the size you score where you can. ``score_samples`` warns
    when a batch of at least 20 samples has significantly more z-scores below the
    normal 5% point than the calibration set (the two counts compared as two samples,
    so that a small calibration set's own noise does not warn): the watermark only
    raises z, so such a batch comes from a population with another null (another
    source, other processing, or an over-removal attack). Clean images shifted
    *upwards* cannot be told from watermarked ones by their statistics.

    The default null (``effective_tokens="both"``), the calibration on edited images
    (``calibration_edits="ordinary"``) and the Pareto tail are this library's, not the
    paper's (the paper thresholds ``z > 4`` under a fixed null; its robustness script
    re-calibrates on equally attacked clean images, which a deployed detector cannot
    do). Calibrated on the clean images only, the detector fitted on the china photo
    alone flagged its other half after blur sigma 1.5 at 1.93-2.36% at ``fpr=0.01``
    (blur smooths textured mid-tone patches towards the green-rich levels 85 and 170),
    and on matplotlib's Grace Hopper photo (2400 calibration patches) blur, median,
    contrast and rotation reached 0.25-0.38% at ``fpr=0.001``, where the empirical
    quantile rests on the 2-3 largest calibration scores. With the ordinary edits in
    the calibration and the Pareto tail, both stay within twice the nominal rate
    (tests/watermark/test_calibration_edits.py). The cost is a higher threshold (2.94
    against 2.33 on one 8-bit generator's clean samples at ``fpr=0.01``) and so a lower
    TPR under strong processing (``delta=2``, JPEG 75 at 29 dB: 0.86 against 0.96);
    above 30 dB it stays at least 0.93 (user guide). Contrast changes at 30 dB remove
    the mark on grey-level bits (TPR about 0.5; user guide). On a source where any
    smoothing raises the green fraction (the 4-bit digits) the edited calibration
    makes the threshold as high as processing pushes clean images: pass
    ``calibration_edits=None`` and calibrate on equally processed images.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.watermark import BitMarkDetector
    >>> rng = np.random.default_rng(0)
    >>> clean = rng.integers(0, 2, size=(200, 64, 4))
    >>> marked = np.tile([0, 1, 0, 1], (3, 64, 1))        # every pair green
    >>> det = BitMarkDetector().fit(clean)
    >>> det.n_windows_, round(det.gamma0_, 2)
    (192, 0.5)
    >>> det.predict(marked)
    array([1, 1, 1])
    """

    _parameter_constraints: dict = {
        "green": _GREEN_TYPES,
        "null": [StrOptions({"empirical", "gamma0", "fixed"})],
        "fpr": [Interval(numbers.Real, 0, 1, closed="neither")],
        "z_threshold": [Interval(numbers.Real, None, None, closed="neither")],
        "windows": [StrOptions({"within_token", "flat"})],
        "count_repeats": ["boolean"],
        "encoder": [callable, None],
        "effective_tokens": [StrOptions({"both", "all", "distinct"})],
        "scales": [tuple, list, None],
        "calibration_edits": [StrOptions({"ordinary"}), list, tuple, None],
        "n_levels": [Interval(numbers.Integral, 2, 256, closed="both")],
        "tail": [StrOptions({"pareto", "empirical"})],
    }

    def __init__(self, green=("01", "10"), null="empirical", fpr=0.01, z_threshold=4.0,
                 windows="within_token", count_repeats=True, encoder=None,
                 effective_tokens="both", scales=None, calibration_edits="ordinary",
                 n_levels=256, tail="pareto"):
        self.green = green
        self.null = null
        self.fpr = fpr
        self.z_threshold = z_threshold
        self.windows = windows
        self.count_repeats = count_repeats
        self.encoder = encoder
        self.effective_tokens = effective_tokens
        self.scales = scales
        self.calibration_edits = calibration_edits
        self.n_levels = n_levels
        self.tail = tail

    def _bits(self, X, reset):
        if self.encoder is not None:
            X = self.encoder(X)
        # integer and boolean bits are kept as they are (no float copy)
        dtype = None if _is_integer_array(X) else np.float64
        if reset:
            X = validate_data(self, X, reset=True, allow_nd=True, dtype=dtype)
        else:
            # any number of tokens: the z-test needs none fixed (only the token width)
            X = check_array(X, allow_nd=True, dtype=dtype)
        if X.ndim not in (2, 3):
            raise ValueError(
                f"bits must be 2-D (n_samples, n_bits) or 3-D (n_samples, n_tokens, "
                f"token_bits); got {X.ndim} dimensions."
            )
        bits = _as_bits(X)
        n = self._n
        if reset:
            self._token_bits = bits.shape[2]
        elif bits.shape[2] != self._token_bits:
            raise ValueError(
                f"X has tokens of {bits.shape[2]} bits; the detector was fitted on "
                f"{self._token_bits}."
            )
        length = bits.shape[2] if self.windows == "within_token" else bits[0].size
        if length < n:
            where = "token" if self.windows == "within_token" else "sample"
            raise ValueError(
                f"Found {length} feature(s) (bits per {where}) while windows of the green "
                f"strings' length n={n} need at least {n}."
            )
        return bits

    def _counts(self, X):
        bits = self._bits(X, reset=False)
        return _green_counts(bits, self._n, self._table, self.windows, self.count_repeats,
                             _token_codes(bits))

    def _stats(self, bits):
        """(green count C, windows T, effective windows) per sample; one packing pass."""
        codes = _token_codes(bits)
        count, total = _green_counts(bits, self._n, self._table, self.windows,
                                     self.count_repeats, codes)
        if self.effective_tokens == "all":
            return count, total, total
        return count, total, total * _distinct_tokens(bits, codes) / bits.shape[1]

    def _z_of(self, bits):
        """Standardised z-score of each sample of ``bits`` under the fitted null."""
        count, total, teff = self._stats(bits)
        return (count / total - self.gamma0_) / self._null_sd(teff, total)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Calibrate the null distribution on clean (unwatermarked) samples.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_bits) or (n_samples, n_bits)
            Bits of clean samples, or images when ``encoder`` is set.
        y : None
            Ignored.

        Returns
        -------
        self : BitMarkDetector
            The calibrated detector.
        """
        self._n, self._table = _parse_green(self.green)
        images = X
        bits = self._bits(X, reset=True)
        count, total, teff = self._stats(bits)
        self.n_windows_ = int(_window_codes(bits[:1], self._n, self.windows).shape[1])
        if self.null == "fixed":
            gamma0 = float(self._table.mean())
        else:
            gamma0 = float(count.sum() / total.sum())
            half = 0.5 / total.sum()
            if not half <= gamma0 <= 1 - half:
                warnings.warn(
                    f"The clean green fraction is {gamma0:g}: the null is degenerate; "
                    f"gamma0_ is moved to half a count inside (0, 1).",
                    UserWarning,
                    stacklevel=2,
                )
                gamma0 = min(max(gamma0, half), 1 - half)
        self.gamma0_ = gamma0
        binomial = gamma0 * (1.0 - gamma0)
        if self.null == "fixed":
            self.window_var_, self.between_image_var_ = binomial, 0.0
        else:
            self.window_var_, self.between_image_var_ = self._dispersion(
                bits, count / total, total, binomial)
        if self.effective_tokens != "all":
            if self.null == "fixed":
                distinct = (binomial, 0.0)
            else:
                distinct = self._distinct_dispersion(count / total, teff)
            self.distinct_window_var_, self.distinct_between_image_var_ = (
                distinct or (self.window_var_, self.between_image_var_))
        self._both_scale = 1.0
        if self.effective_tokens == "both" and self.null != "fixed" and len(count) > 1:
            # the larger of the two variances over-states the calibration spread: one
            # scale, fitted so that the clean z-scores have mean square 1
            dev = count / total - gamma0
            scale = float(np.mean(dev**2 / self._null_sd(teff, total) ** 2))
            self._both_scale = scale if scale > 0 else 1.0
        sd = self._null_sd(teff, total)
        self.dispersion_ = float(np.mean(sd**2 * total) / binomial)
        self.z_clean_ = (count / total - gamma0) / sd
        if self.scales is not None:
            self._fit_scales(bits)
        if self.null == "empirical":
            quantile = self._tail_quantile(self.z_clean_)
            self.calibration_edits_, self.edit_thresholds_ = self._edit_thresholds(images)
            if self.fpr * (len(count) + 1) < 1:
                warnings.warn(
                    f"fpr={self.fpr:g} needs at least {math.ceil(1 / self.fpr) - 1} clean "
                    f"calibration samples; with {len(count)} the empirical quantile is the "
                    f"largest clean z-score, whose false-positive rate on new clean samples "
                    f"is about 1/{len(count) + 1} (tail='pareto' extrapolates past it "
                    f"from the top scores); the threshold is the normal tail of "
                    f"the standardised null, norm.isf(fpr), where that is higher.",
                    UserWarning,
                    stacklevel=2,
                )
            # a quantile resting on a handful of clean samples is noisy: never go below
            # the normal tail of the standardised null; the edited calibration images
            # must be covered too
            self.threshold_ = max(quantile, float(norm.isf(self.fpr)),
                                  *self.edit_thresholds_)
        else:
            self.threshold_ = float(self.z_threshold)
        return self

    def _tail_quantile(self, z):
        if self.tail == "pareto":
            return _pareto_quantile(z, self.fpr)
        return _empirical_quantile(z, self.fpr)

    def _resolve_edits(self):
        """(name, callable) pairs of ``calibration_edits`` (empty without an encoder)."""
        edits = self.calibration_edits
        if edits is None or self.encoder is None:
            return []
        if isinstance(edits, str):
            return _ordinary_edits(int(self.n_levels))
        out = []
        for i, edit in enumerate(edits):
            if not callable(edit):
                raise ValueError(
                    f"calibration_edits must be 'ordinary', None or a list of callables "
                    f"(images -> images); item {i} is {edit!r}."
                )
            out.append((getattr(edit, "__name__", f"edit {i}"), edit))
        return out

    def _score_bits(self, bits):
        if self.scales is not None:
            raw = self._scale_z(bits) @ self.scale_weights_
            return (raw - self._combined_center) / self._combined_scale
        return self._z_of(bits)

    def _edit_thresholds(self, images):
        """Names of the calibration edits and the ``1 - fpr`` quantile of the z-scores of
        the clean calibration images after each."""
        names, thresholds = [], []
        for name, edit in self._resolve_edits():
            try:
                edited = edit(images)
            except (ValueError, TypeError) as exc:
                raise ValueError(
                    f"The calibration edit {name!r} failed on the calibration images "
                    f"({exc}). calibration_edits='ordinary' edits grey images of shape "
                    f"(n_images, height, width) or flat square ones, in grey levels 0 .. "
                    f"n_levels - 1 = {self.n_levels - 1}; pass calibration_edits=None or "
                    f"a list of callables for other images."
                ) from exc
            bits = self._bits(edited, reset=False)
            names.append(name)
            thresholds.append(self._tail_quantile(self._score_bits(bits)))
        return tuple(names), np.array(thresholds, dtype=np.float64)

    def _scale_edges(self, n_tokens):
        sizes = [int(v) for v in self.scales]
        if not sizes or min(sizes) < 1 or any(
            not isinstance(v, numbers.Integral) for v in self.scales
        ):
            raise ValueError(f"scales must be positive token counts; got {self.scales!r}.")
        if sum(sizes) != n_tokens:
            raise ValueError(
                f"scales={tuple(sizes)} hold {sum(sizes)} tokens; the samples have "
                f"{n_tokens}."
            )
        return np.cumsum([0, *sizes])

    def _fit_scales(self, bits):
        """One null per scale; the combined score standardised on the calibration set."""
        edges = self._scale_edges(bits.shape[1])
        params = {k: getattr(self, k) for k in ("green", "windows", "count_repeats",
                                                 "z_threshold", "effective_tokens")}
        null = "fixed" if self.null == "fixed" else "gamma0"
        self.scale_detectors_ = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for a, b in zip(edges[:-1], edges[1:], strict=True):
                sub = BitMarkDetector(null=null, **params).fit(bits[:, a:b])
                self.scale_detectors_.append(sub)
        weights = np.array([1.0 / sub._null_sd(np.array([float(sub.n_windows_)]))[0]
                            for sub in self.scale_detectors_])
        self.scale_weights_ = weights / np.sqrt(np.sum(weights**2))
        raw = self._scale_z(bits) @ self.scale_weights_
        self._combined_center = float(raw.mean())
        sd = float(raw.std(ddof=1)) if len(raw) > 1 else 1.0
        self._combined_scale = sd if sd > 0 else 1.0
        self.z_clean_ = (raw - self._combined_center) / self._combined_scale

    def _scale_z(self, bits):
        edges = self._scale_edges(bits.shape[1])
        out = np.empty((bits.shape[0], len(self.scale_detectors_)))
        for i, (sub, a, b) in enumerate(
            zip(self.scale_detectors_, edges[:-1], edges[1:], strict=True)
        ):
            out[:, i] = sub._z_of(bits[:, a:b])
        return out

    def score_scales(self, X):
        """z-score of each sample at each scale (``scales`` set).

        Parameters
        ----------
        X : array-like of shape (n_samples, sum(scales), token_bits)
            Bits of the multi-scale token maps, scale after scale, or images when
            ``encoder`` is set.

        Returns
        -------
        z : ndarray of shape (n_samples, n_scales)
            Each scale's z-score under its own calibrated null.
        """
        check_is_fitted(self)
        if self.scales is None:
            raise ValueError("score_scales needs scales= (tokens per scale) at fit.")
        return self._scale_z(self._bits(X, reset=False))

    def _dispersion(self, bits, g, total, binomial):
        """(window variance s2, between-image variance tau2) of the clean green fraction.

        The null variance of the green fraction of an image with ``T`` windows is modelled
        as ``tau2 + s2 / T``: ``s2`` from the difference of the green fractions of the
        even and the odd tokens of each image, ``tau2`` what remains of the variance of
        ``g`` across the calibration images.
        """
        if len(g) < 2:
            return binomial, 0.0
        split = None
        if self.count_repeats:
            split = _split_green_fractions(bits, self._n, self._table, self.windows)
        if split is None:
            s2 = binomial
        else:
            g1, g2, t1, t2 = split
            s2 = float(np.var(g1 - g2, ddof=1) / (1.0 / t1 + 1.0 / t2))
        s2 = max(s2, binomial)
        tau2 = max(float(np.var(g, ddof=1) - s2 * np.mean(1.0 / total)), 0.0)
        return s2, tau2

    @staticmethod
    def _distinct_dispersion(g, effective):
        """(s2, tau2) of ``var(g) = tau2 + s2 / T_distinct`` by Gaussian maximum
        likelihood over the calibration samples, or None where every sample has the
        same number of distinct-token windows (the model is then the one over all)."""
        x = 1.0 / effective
        if len(g) < 3 or np.ptp(x) <= 1e-12 * np.max(x):
            return None
        return _fit_variance_model((g - g.mean()) ** 2 * len(g) / (len(g) - 1), x)

    def _null_sd(self, effective, total=None):
        """Null standard deviation of the green fraction of a sample of ``total`` windows,
        ``effective`` of them those of distinct tokens; never below the binomial
        standard deviation at ``total`` windows."""
        total = effective if total is None else total
        binomial = self.gamma0_ * (1.0 - self.gamma0_)
        var = self.between_image_var_ + self.window_var_ / total
        if self.effective_tokens != "all" and self.null != "fixed":
            distinct = (self.distinct_between_image_var_
                        + self.distinct_window_var_ / effective)
            var = distinct if self.effective_tokens == "distinct" else np.maximum(
                var, distinct) * self.__dict__.get("_both_scale", 1.0)
        return np.sqrt(np.maximum(var, binomial / total))

    def _check_population(self, z):
        """Warn when more scored samples fall in the clean lower tail than chance allows.

        The watermark raises z; it never lowers it. A batch with significantly more
        z-scores below the normal 5% point than the calibration set holds comes from a
        population with another null (another image source, processing, an over-removal
        attack), on which the false-positive rate is not controlled. The two counts are
        compared as two samples (given their sum, the batch's count is binomial under one
        population), the calibration count floored at the 5% it has by construction.
        """
        n = z.size
        if n < 20 or self.null == "fixed":
            return
        n_cal = self.z_clean_.size
        k_cal = max(int(np.sum(self.z_clean_ < _LOWER_CUT)), math.ceil(_LOWER_TAIL * n_cal))
        k = int(np.sum(z < _LOWER_CUT))
        if k and binom.sf(k - 1, k + k_cal, n / (n + n_cal)) < 1e-3:
            warnings.warn(
                f"{k} of {n} samples score below the lower 5% tail of the clean "
                f"calibration population (expected about {k_cal / n_cal * n:.1f}): these "
                "samples look unlike the images the null was calibrated on, and the "
                "detector's false-positive rate on them is not controlled. Fit the "
                "detector on clean images of the same source and processing.",
                UserWarning,
                stacklevel=3,
            )

    def green_fraction(self, X):
        """Fraction of green windows of each sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_bits) or (n_samples, n_bits)
            Bits, or images when ``encoder`` is set.

        Returns
        -------
        g : ndarray of shape (n_samples,)
            ``C / T``.
        """
        check_is_fitted(self)
        count, total = self._counts(X)
        return count / total

    def score_samples(self, X):
        """z-score of each sample under the calibrated null (larger: more watermarked).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_bits) or (n_samples, n_bits)
            Bits, or images when ``encoder`` is set.

        Returns
        -------
        z : ndarray of shape (n_samples,)
            ``(C / T - gamma0_) / sd``, where ``sd`` is the null standard deviation of
            the green fraction at the sample's size (binomial with ``null="fixed"``:
            ``(C - gamma T) / sqrt(T gamma (1 - gamma))``; otherwise the calibrated
            model of ``effective_tokens``); with ``scales``, the combined score.
        """
        check_is_fitted(self)
        z = self._score_bits(self._bits(X, reset=False))
        self._check_population(z)
        return z

    def decision_function(self, X):
        """z-score minus the threshold: positive means watermarked.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_bits) or (n_samples, n_bits)
            Bits, or images when ``encoder`` is set.

        Returns
        -------
        score : ndarray of shape (n_samples,)
            ``score_samples(X) - threshold_``.
        """
        return self.score_samples(X) - self.threshold_

    def predict(self, X):
        """Call each sample watermarked (1) or not (0).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_bits) or (n_samples, n_bits)
            Bits, or images when ``encoder`` is set.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            1 where ``score_samples(X) > threshold_``.
        """
        return (self.decision_function(X) > 0).astype(np.int64)

    def p_value(self, X):
        """One-sided p-value ``1 - Phi(z)`` of each sample under the null.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_tokens, token_bits) or (n_samples, n_bits)
            Bits, or images when ``encoder`` is set.

        Returns
        -------
        p : ndarray of shape (n_samples,)
            Normal-approximation p-values.
        """
        return norm.sf(self.score_samples(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        return tags


# --------------------------------------------------------------------------------------
# Attacks
# --------------------------------------------------------------------------------------
@validate_params(
    {
        "X": ["array-like"],
        "sigma": [Interval(numbers.Real, 0, None, closed="left")],
        "n_levels": [Interval(numbers.Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def gaussian_noise_attack(X, sigma, n_levels=16, random_state=None):
    """Add Gaussian noise in grey levels, then round and clip back to the levels.

    Parameters
    ----------
    X : array-like of shape (n_images, n_pixels)
        Grey levels (not modified).
    sigma : float
        Noise standard deviation, in grey levels.
    n_levels : int, default=16
        Grey levels ``0 .. n_levels - 1`` (``2**n_bits``).
    random_state : int, RandomState instance or None, default=None
        Source of the noise.

    Returns
    -------
    X_attacked : ndarray of shape (n_images, n_pixels), dtype int64
        Noisy grey levels.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.watermark import gaussian_noise_attack
    >>> X = np.full((2, 4), 8)
    >>> out = gaussian_noise_attack(X, sigma=1.0, random_state=0)
    >>> out.shape, bool(out.min() >= 0 and out.max() <= 15)
    ((2, 4), True)
    """
    X = np.asarray(X, dtype=np.float64)
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values.")
    rng = np.random.default_rng(spawn_seeds(random_state, 1)[0])
    noisy = X + float(sigma) * rng.standard_normal(X.shape)
    return np.clip(np.rint(noisy), 0, n_levels - 1).astype(np.int64)


def _check_bit_array(bits):
    bits = np.asarray(bits)
    if bits.size and not np.isin(bits, (0, 1)).all():
        raise ValueError("bits must contain only 0 and 1.")
    return bits.astype(np.uint8)


@validate_params(
    {
        "bits": ["array-like"],
        "rate": [Interval(numbers.Real, 0, 1, closed="both")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def bit_flip_attack(bits, rate, random_state=None):
    """Flip every bit independently with probability ``rate``.

    Parameters
    ----------
    bits : array-like of 0/1
        Bits of any shape (not modified).
    rate : float in [0, 1]
        Flip probability.
    random_state : int, RandomState instance or None, default=None
        Source of the flips.

    Returns
    -------
    bits_attacked : ndarray of the same shape, dtype uint8
        The flipped bits.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.watermark import bit_flip_attack
    >>> bit_flip_attack(np.zeros((2, 3), dtype=np.uint8), rate=1.0)
    array([[1, 1, 1],
           [1, 1, 1]], dtype=uint8)
    """
    bits = _check_bit_array(bits)
    rng = np.random.default_rng(spawn_seeds(random_state, 1)[0])
    return bits ^ (rng.random(bits.shape) < rate).astype(np.uint8)


@validate_params(
    {
        "bits": ["array-like"],
        "green": _GREEN_TYPES,
        "factor": [Interval(numbers.Real, 0, None, closed="left")],
        "gamma0": [Interval(numbers.Real, 0, 1, closed="both")],
        "mode": [StrOptions({"remove", "forge", "reference"})],
        "forge_rate": [Interval(numbers.Real, 0, 1, closed="both")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def bit_flipper_attack(bits, green=("01", "10"), factor=2.2, gamma0=0.5, mode="remove",
                       forge_rate=0.08, random_state=None):
    """The Bit-Flipper attack: flip the last bit of green (or red) pairs in each token.

    ``mode="remove"`` (the library's single-pass attack): per sample, the green fraction
    ``g`` of the within-token pairs sets the flip probability ``p = clip((g - gamma0) *
    factor, 0, 1)``; then for ``j = 1 .. d - 1`` in order, each bit ``b_j`` whose pair
    ``(b_{j-1}, b_j)`` is green (reading the already edited ``b_{j-1}``) is flipped with
    probability ``p``, once. ``mode="forge"`` flips the last bit of red pairs with
    probability ``forge_rate`` to implant a mark.

    ``mode="reference"`` is the loop of the reference code (sprintml/BitMark,
    ``Infinity/flipper.py``, removal): per sample (a scale in Infinity), ``g`` is the
    green fraction of the token-major *flattened* pairs and ``p = (g - gamma0) *
    factor``, not clipped; a sample with ``p <= 0`` is left alone. For ``j = 1 .. d -
    1``, the green patterns are visited in turn; each adds the tokens whose pair
    ``(b_{j-1}, b_j)`` equals it (on the bits as edited so far) to a mask accumulated
    over the patterns of this ``j``, and fresh uniform numbers are drawn over the whole
    accumulated mask, so a bit flipped for an earlier pattern is drawn again (and flipped
    back with probability ``p``). With ``{"01", "10"}`` a ``01`` pair (the first pattern)
    ends flipped with probability ``2 p (1 - p)``, a ``10`` pair with ``p``; with ``p >=
    1`` every ``01`` pair is flipped twice, that is left unchanged.

    Parameters
    ----------
    bits : array-like of shape (n_samples, n_tokens, token_bits) or (n_samples, n_bits)
        Bits of the images (re-encoded); 2-D is one token per row. Not modified.
    green : tuple of str, default=("01", "10")
        The green list; strings of length 2 only, as in the reference.
    factor : float, default=2.2
        Removal strength; 2.2 is the reference's recommendation.
    gamma0 : float, default=0.5
        The green rate the attack subtracts: 0.5 is the reference attack; the detector's
        ``gamma0_`` gives the null-aware variant.
    mode : {"remove", "forge", "reference"}, default="remove"
        Remove the mark (single pass), implant one, or remove it with the reference's
        re-sampling loop.
    forge_rate : float, default=0.08
        Flip probability of red pairs in ``mode="forge"`` (the reference's 0.08).
    random_state : int, RandomState instance or None, default=None
        Source of the flips. ``mode="reference"`` draws, per sample, per ``j`` and per
        pattern, one uniform number per token from
        ``numpy.random.default_rng(spawn_seeds(random_state, 1)[0])``, in that order.

    Returns
    -------
    bits_attacked : ndarray of the same shape, dtype uint8
        The edited bits.

    Notes
    -----
    The reference iterates over a Python ``set`` of patterns, whose order depends on
    the string hash seed (``PYTHONHASHSEED``); ``mode="reference"`` visits them in
    sorted order (``"01"`` before ``"10"``), one of the two orders the reference runs
    with. The reference's other two modes (implanting, which flips ``{"00", "11"}`` at
    ``0.08`` in the same loop, and ``patterns=None``, which flips 1-bits) are not
    offered; ``mode="forge"`` is the library's single-pass implant.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.watermark import bit_flipper_attack
    >>> marked = np.array([[[0, 1, 0, 1]]] * 2, dtype=np.uint8)     # g = 1
    >>> bit_flipper_attack(marked, factor=2.2, random_state=0)[0, 0]
    array([0, 0, 0, 0], dtype=uint8)
    """
    n, table = _parse_green(green)
    if n != 2:
        raise ValueError(f"bit_flipper_attack needs green strings of length 2; got {n}.")
    raw = _check_bit_array(bits)
    if raw.ndim not in (2, 3):
        raise ValueError(f"bits must be 2-D or 3-D; got {raw.ndim} dimensions.")
    out = raw[:, None, :].copy() if raw.ndim == 2 else raw.copy()
    if out.shape[2] < 2:
        raise ValueError("tokens need at least 2 bits for pairs.")
    rng = np.random.default_rng(spawn_seeds(random_state, 1)[0])
    if mode == "reference":
        _reference_flipper(out, table, factor, gamma0, rng)
        return out[:, 0, :] if raw.ndim == 2 else out
    if mode == "remove":
        count, total = _green_counts(out, 2, table, "within_token", True)
        p = np.clip((count / total - gamma0) * factor, 0.0, 1.0)[:, None]
        target = table
    else:
        p = np.full((out.shape[0], 1), float(forge_rate))
        target = ~table
    for j in range(1, out.shape[2]):
        pair = 2 * out[:, :, j - 1].astype(np.intp) + out[:, :, j]
        flip = target[pair] & (rng.random(pair.shape) < p)
        out[:, :, j] ^= flip.astype(np.uint8)
    return out[:, 0, :] if raw.ndim == 2 else out


def _reference_flipper(out, table, factor, gamma0, rng):
    """The reference's removal loop, in place on ``out`` (n_samples, n_tokens, d)."""
    patterns = [(c >> 1, c & 1) for c in np.flatnonzero(table)]   # sorted order
    count, total = _green_counts(out, 2, table, "flat", True)
    probs = (count / total - gamma0) * factor
    for i in np.flatnonzero(probs > 0):
        sample, p = out[i], probs[i]
        for j in range(1, sample.shape[1]):
            mask = np.zeros(sample.shape[0], dtype=bool)
            for first, last in patterns:
                mask |= (sample[:, j - 1] == first) & (sample[:, j] == last)
                flip = mask & (rng.random(sample.shape[0]) < p)
                sample[flip, j] ^= 1


# --------------------------------------------------------------------------------------
# Image-processing attacks (Pillow)
# --------------------------------------------------------------------------------------
def _as_images(images, image_shape, n_levels):
    """Images as a float (n, h, w) array in grey levels, and a function restoring shape."""
    X = np.asarray(images, dtype=np.float64)
    if not np.all(np.isfinite(X)):
        raise ValueError("images contain NaN or infinite values.")
    if X.ndim == 2:
        if image_shape is None:
            side = math.isqrt(X.shape[1])
            if side * side != X.shape[1]:
                raise ValueError(
                    f"images of shape {X.shape} are flat with {X.shape[1]} pixels, which is "
                    "not a square: pass image_shape=(height, width)."
                )
            image_shape = (side, side)
        h, w = (int(v) for v in image_shape)
        if h * w != X.shape[1]:
            raise ValueError(
                f"image_shape={tuple(image_shape)} holds {h * w} pixels; images have "
                f"{X.shape[1]}."
            )
        shaped = X.reshape(X.shape[0], h, w)
    elif X.ndim == 3:
        shaped = X
    else:
        raise ValueError(
            f"images must be (n_images, n_pixels) or (n_images, height, width); got "
            f"{X.ndim} dimensions."
        )
    if shaped.size and (shaped.min() < 0 or shaped.max() > n_levels - 1):
        raise ValueError(
            f"images span [{shaped.min():g}, {shaped.max():g}], outside the grey levels "
            f"0 .. {n_levels - 1} of n_levels={n_levels} (8-bit images need n_levels=256)."
        )
    return shaped, X.shape


def _pillow_map(images, image_shape, n_levels, edit):
    """Apply ``edit`` (PIL image -> PIL image of the same size) to every grey image."""
    from PIL import Image

    shaped, shape = _as_images(images, image_shape, n_levels)
    scale = 255.0 / (n_levels - 1)
    out = np.empty(shaped.shape, dtype=np.int64)
    for i, img in enumerate(shaped):
        pil = Image.fromarray(np.clip(np.rint(img * scale), 0, 255).astype(np.uint8), "L")
        edited = np.asarray(edit(pil), dtype=np.float64)
        out[i] = np.clip(np.rint(edited / scale), 0, n_levels - 1)
    return out.reshape(shape)


_IMAGE_PARAMS = {
    "images": ["array-like"],
    "image_shape": [tuple, list, None],
    "n_levels": [Interval(numbers.Integral, 2, 256, closed="both")],
}


@validate_params(
    {**_IMAGE_PARAMS, "quality": [Interval(numbers.Integral, 1, 100, closed="both")]},
    prefer_skip_nested_validation=True,
)
def jpeg_attack(images, quality, image_shape=None, n_levels=16):
    """JPEG-compress every grey image with Pillow and decode it back to grey levels.

    Parameters
    ----------
    images : array-like of shape (n_images, n_pixels) or (n_images, height, width)
        Grey levels ``0 .. n_levels - 1`` (not modified).
    quality : int in [1, 100]
        Pillow's JPEG quality.
    image_shape : tuple of (int, int) or None, default=None
        ``(height, width)`` of flat images; None means square.
    n_levels : int, default=16
        Grey levels ``0 .. n_levels - 1`` (256 for 8-bit images); they are scaled to
        0..255 for Pillow and back.

    Returns
    -------
    images_attacked : ndarray of the input's shape, dtype int64
        The decoded grey levels.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.watermark import jpeg_attack
    >>> X = np.arange(64).reshape(1, 64) * 4
    >>> out = jpeg_attack(X, quality=75, n_levels=256)
    >>> out.shape, bool(np.abs(out - X).mean() < 10)
    ((1, 64), True)
    """
    import io

    from PIL import Image

    def edit(pil):
        buf = io.BytesIO()
        pil.save(buf, format="JPEG", quality=int(quality))
        buf.seek(0)
        return Image.open(buf).convert("L")

    return _pillow_map(images, image_shape, n_levels, edit)


@validate_params(
    {**_IMAGE_PARAMS, "fraction": [Interval(numbers.Real, 0, 1, closed="right")]},
    prefer_skip_nested_validation=True,
)
def crop_resize_attack(images, fraction, image_shape=None, n_levels=16):
    """Crop the centre ``fraction`` of each side and resize back (Pillow, bicubic).

    Parameters
    ----------
    images : array-like of shape (n_images, n_pixels) or (n_images, height, width)
        Grey levels ``0 .. n_levels - 1`` (not modified).
    fraction : float in (0, 1]
        Kept fraction of the height and of the width (1 keeps the image).
    image_shape : tuple of (int, int) or None, default=None
        ``(height, width)`` of flat images; None means square.
    n_levels : int, default=16
        Grey levels ``0 .. n_levels - 1`` (256 for 8-bit images).

    Returns
    -------
    images_attacked : ndarray of the input's shape, dtype int64
        The cropped and resized grey levels.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.watermark import crop_resize_attack
    >>> X = np.full((2, 8, 8), 200)
    >>> crop_resize_attack(X, fraction=0.75, n_levels=256)[0, 0, :3]
    array([200, 200, 200])
    """
    from PIL import Image

    def edit(pil):
        w, h = pil.size
        cw, ch = max(1, round(w * fraction)), max(1, round(h * fraction))
        left, top = (w - cw) // 2, (h - ch) // 2
        return pil.crop((left, top, left + cw, top + ch)).resize((w, h), Image.BICUBIC)

    return _pillow_map(images, image_shape, n_levels, edit)


@validate_params(
    {**_IMAGE_PARAMS, "sigma": [Interval(numbers.Real, 0, None, closed="left")]},
    prefer_skip_nested_validation=True,
)
def blur_attack(images, sigma, image_shape=None, n_levels=16):
    """Gaussian blur with standard deviation ``sigma`` pixels (Pillow's GaussianBlur).

    Parameters
    ----------
    images : array-like of shape (n_images, n_pixels) or (n_images, height, width)
        Grey levels ``0 .. n_levels - 1`` (not modified).
    sigma : float >= 0
        Standard deviation of the kernel in pixels (Pillow's ``radius``); 0 keeps the
        image.
    image_shape : tuple of (int, int) or None, default=None
        ``(height, width)`` of flat images; None means square.
    n_levels : int, default=16
        Grey levels ``0 .. n_levels - 1`` (256 for 8-bit images).

    Returns
    -------
    images_attacked : ndarray of the input's shape, dtype int64
        The blurred grey levels.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.watermark import blur_attack
    >>> X = np.zeros((1, 5, 5)); X[0, 2, 2] = 255
    >>> out = blur_attack(X, sigma=1.0, n_levels=256)
    >>> bool(out[0, 2, 2] < 255 and out[0, 2, 1] > 0)
    True
    """
    from PIL import ImageFilter

    def edit(pil):
        return pil.filter(ImageFilter.GaussianBlur(radius=float(sigma)))

    return _pillow_map(images, image_shape, n_levels, edit)


# --------------------------------------------------------------------------------------
# Radioactivity
# --------------------------------------------------------------------------------------
@validate_params(
    {
        "detector": [HasMethods(["score_samples"])],
        "images_of_suspect_model": ["array-like"],
        "images_of_clean_model": ["array-like"],
    },
    prefer_skip_nested_validation=True,
)
def radioactivity_test(detector, images_of_suspect_model, images_of_clean_model):
    """Test whether a suspect model learned from watermarked images (radioactivity).

    A model trained or fine-tuned on BitMark images carries the bias into its own
    outputs. The test compares the detector's z-scores of the suspect model's images
    with those of a model known to be clean, by a one-sided Mann-Whitney U test
    (alternative: the suspect's scores are stochastically greater), as the paper does.

    Parameters
    ----------
    detector : fitted BitMarkDetector (or any object with ``score_samples``)
        The detector of the watermark; with ``encoder`` set it takes images.
    images_of_suspect_model : array-like
        Images (or bits) generated by the suspect model.
    images_of_clean_model : array-like
        Images (or bits) generated by a reference model trained without watermarked data.

    Returns
    -------
    statistic : float
        The Mann-Whitney U statistic of the suspect's scores.
    p_value : float
        One-sided p-value; small values mean the suspect model is radioactive.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.watermark import BitMarkDetector, radioactivity_test
    >>> rng = np.random.default_rng(0)
    >>> clean = rng.integers(0, 2, size=(100, 16, 4))
    >>> suspect = clean.copy(); suspect[:, :, 1] = 1 - suspect[:, :, 0]   # more green pairs
    >>> det = BitMarkDetector().fit(rng.integers(0, 2, size=(100, 16, 4)))
    >>> statistic, p_value = radioactivity_test(det, suspect, clean)
    >>> bool(p_value < 1e-6)
    True
    """
    from scipy.stats import mannwhitneyu

    check_is_fitted(detector)
    if len(images_of_suspect_model) < 1 or len(images_of_clean_model) < 1:
        raise ValueError("radioactivity_test needs at least one image from each model.")
    suspect = np.asarray(detector.score_samples(images_of_suspect_model), dtype=np.float64)
    clean = np.asarray(detector.score_samples(images_of_clean_model), dtype=np.float64)
    result = mannwhitneyu(suspect, clean, alternative="greater")
    return float(result.statistic), float(result.pvalue)
