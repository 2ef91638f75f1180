"""A small bitwise autoregressive image generator (one logistic regression per bit)."""

import numbers
import warnings

import numpy as np
from scipy import sparse
from scipy.special import expit
from sklearn.base import BaseEstimator, _fit_context
from sklearn.linear_model import LogisticRegression
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_cispa.utils import spawn_seeds


def _levels(X, n_levels):
    """Round and clip grey levels to the integers ``0 .. n_levels - 1``."""
    return np.clip(np.rint(X), 0, n_levels - 1).astype(np.int64)


def _to_bits(levels, n_bits):
    """Integer levels (..., P) -> bits (..., P, n_bits), most significant bit first."""
    shifts = np.arange(n_bits - 1, -1, -1, dtype=np.int64)
    return ((levels[..., None] >> shifts) & 1).astype(np.uint8)


def _from_bits(bits):
    n_bits = bits.shape[-1]
    weights = 1 << np.arange(n_bits - 1, -1, -1, dtype=np.int64)
    return bits.astype(np.int64) @ weights


class BitwiseARGenerator(BaseEstimator):
    """Bitwise autoregressive image generator, small enough to fit on a CPU in seconds.

    Every pixel is one token of ``n_bits`` bits (most significant bit first), generated in
    raster order; inside a token the bits are generated one after the other. Bit ``k`` of
    a pixel follows its own logistic regression on four one-hot blocks: the grey level of
    the left neighbour, that of the upper neighbour (a "border" category outside the
    image), the pixel position, and the bits already drawn in the same token. It is the
    toy stand-in for a bitwise autoregressive model such as Infinity, on which the BitMark
    watermark (:class:`BitMarkWatermark`) acts as a logits processor during
    :meth:`sample`. The interface follows :class:`~sklearn.neighbors.KernelDensity`.

    Parameters
    ----------
    n_bits : int, default=4
        Bits per pixel; grey levels are ``0 .. 2**n_bits - 1``.
    image_shape : tuple or list of (int, int), or None, default=None
        ``(height, width)`` of the images, ``height * width`` must equal the number of
        features. None means one row of ``n_features`` pixels (no upper neighbour).
    C : float, default=1.0
        Inverse regularisation strength of each per-bit ``LogisticRegression``.
    max_iter : int, default=1000
        Iterations of each per-bit ``LogisticRegression`` (lbfgs).
    random_state : int, RandomState instance or None, default=None
        Source of the draws of :meth:`sample` when its own ``random_state`` is None.
        Fitting is deterministic.

    Attributes
    ----------
    estimators_ : list of length n_bits
        For each bit index ``k``, the fitted ``LogisticRegression``, or a float (the
        constant log-odds of bit ``k``, smoothed by half a count) when bit ``k`` took one
        value only in the training images.
    image_shape_ : tuple of (int, int)
        The image shape used.
    n_features_in_ : int
        Number of pixels per image.

    See Also
    --------
    BitMarkWatermark : The logits processor that embeds the watermark while sampling.
    BitMarkDetector : The detector.

    Notes
    -----
    Inputs are grey levels: ``fit``, ``encode`` and ``score_samples`` round them and clip
    them to ``0 .. 2**n_bits - 1`` (so features in other units are clipped, not scaled),
    with a ``UserWarning`` that gives the share of values changed. :meth:`sample` raises
    a ``ValueError`` for a :class:`BitMarkWatermark` that would bias no bit of the
    tokens (green strings longer than ``n_bits``, or ``first_biased_bit >= n_bits``).
    The exact feature encoding of the toy model is a design choice of this library: the
    paper's models are transformers over multi-scale bit maps (Infinity).

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn_cispa.watermark import BitwiseARGenerator, BitMarkWatermark
    >>> X = load_digits().data[:200].clip(0, 15)   # 4-bit grey levels
    >>> gen = BitwiseARGenerator(image_shape=(8, 8), max_iter=200).fit(X)
    >>> images, bits = gen.sample(3, logits_processor=BitMarkWatermark(delta=2.0),
    ...                           random_state=0)
    >>> images.shape, bits.shape, bits.dtype
    ((3, 64), (3, 64, 4), dtype('uint8'))
    """

    _parameter_constraints: dict = {
        "n_bits": [Interval(numbers.Integral, 1, 16, closed="both")],
        "image_shape": [tuple, list, None],
        "C": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, n_bits=4, image_shape=None, C=1.0, max_iter=1000, random_state=None):
        self.n_bits = n_bits
        self.image_shape = image_shape
        self.C = C
        self.max_iter = max_iter
        self.random_state = random_state

    # ----------------------------------------------------------------------------------
    @property
    def _n_levels(self):
        return 2 ** int(self.n_bits)

    def _neighbours(self, levels):
        """Left and upper grey-level categories (border = n_levels) of every pixel."""
        h, w = self.image_shape_
        n = levels.shape[0]
        grid = levels.reshape(n, h, w)
        border = self._n_levels
        left = np.full((n, h, w), border, dtype=np.int64)
        up = np.full((n, h, w), border, dtype=np.int64)
        left[:, :, 1:] = grid[:, :, :-1]
        up[:, 1:, :] = grid[:, :-1, :]
        return left.reshape(n, -1), up.reshape(n, -1)

    def _design(self, left, up, prefix, k):
        """Sparse one-hot design matrix of bit k: rows are (image, pixel) pairs."""
        n, p = left.shape
        v = self._n_levels + 1
        pos = np.broadcast_to(np.arange(p), (n, p))
        cols = np.stack(
            [left.ravel(), v + up.ravel(), 2 * v + pos.ravel(), 2 * v + p + prefix.ravel()],
            axis=1,
        )
        rows = np.repeat(np.arange(n * p), 4)
        data = np.ones(rows.size)
        return sparse.csr_matrix(
            (data, (rows, cols.ravel())), shape=(n * p, 2 * v + p + 2**k)
        )

    def _weights(self, k):
        """(intercept, w_left, w_up, w_position, w_prefix) of bit k."""
        v, p = self._n_levels + 1, self.n_features_in_
        est = self.estimators_[k]
        if not isinstance(est, LogisticRegression):
            zeros = np.zeros(v)
            return float(est), zeros, zeros, np.zeros(p), np.zeros(2**k)
        coef = est.coef_.ravel()
        return (
            float(est.intercept_[0]),
            coef[:v],
            coef[v : 2 * v],
            coef[2 * v : 2 * v + p],
            coef[2 * v + p :],
        )

    def _check_levels(self, X, reset):
        X = validate_data(self, X, reset=reset, dtype=np.float64)
        levels = _levels(X, self._n_levels)
        moved = np.abs(X - levels) > 1e-6
        if np.any(moved):
            # other units (pixels in [0, 1], 0..255, standardised features) are not
            # rescaled: say so, with the share of values the model will not see as given
            warnings.warn(
                f"{100 * moved.mean():.3g}% of the values of X are not grey levels "
                f"0 .. {self._n_levels - 1} of n_bits={self.n_bits} (X spans "
                f"[{X.min():.4g}, {X.max():.4g}]); they were rounded and clipped. Rescale "
                "X to integer levels (or choose n_bits) to model the images as given.",
                UserWarning,
                stacklevel=3,
            )
        return levels

    # ----------------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit one logistic regression per bit index on all (image, pixel) rows.

        Parameters
        ----------
        X : array-like of shape (n_images, n_pixels)
            Grey levels; rounded and clipped to ``0 .. 2**n_bits - 1``.
        y : None
            Ignored.

        Returns
        -------
        self : BitwiseARGenerator
            The fitted generator.
        """
        levels = self._check_levels(X, reset=True)
        n_pixels = levels.shape[1]
        if self.image_shape is None:
            shape = (1, n_pixels)
        else:
            shape = tuple(int(s) for s in self.image_shape)
            if len(shape) != 2 or min(shape) < 1 or shape[0] * shape[1] != n_pixels:
                raise ValueError(
                    f"image_shape={self.image_shape!r} must be (height, width) with "
                    f"height * width == n_features ({n_pixels})."
                )
        self.image_shape_ = shape
        bits = _to_bits(levels, self.n_bits)
        left, up = self._neighbours(levels)
        estimators = []
        prefix = np.zeros_like(levels)
        for k in range(self.n_bits):
            target = bits[:, :, k].ravel()
            n_ones = int(target.sum())
            if n_ones in (0, target.size):
                # one value only: a constant log-odds, smoothed by half a count
                estimators.append(float(np.log((n_ones + 0.5) / (target.size - n_ones + 0.5))))
            else:
                lr = LogisticRegression(C=self.C, max_iter=self.max_iter)
                lr.fit(self._design(left, up, prefix, k), target)
                estimators.append(lr)
            prefix = 2 * prefix + bits[:, :, k]
        self.estimators_ = estimators
        return self

    def encode(self, X):
        """Grey-level images to bits, most significant bit first.

        Parameters
        ----------
        X : array-like of shape (n_images, n_pixels)
            Grey levels; rounded and clipped to ``0 .. 2**n_bits - 1``.

        Returns
        -------
        bits : ndarray of shape (n_images, n_pixels, n_bits), dtype uint8
            The bits of every pixel.
        """
        check_is_fitted(self)
        return _to_bits(self._check_levels(X, reset=False), self.n_bits)

    def decode(self, bits):
        """Bits to integer grey-level images (the inverse of :meth:`encode`).

        Parameters
        ----------
        bits : array-like of shape (n_images, n_pixels, n_bits) or (n_images, n_pixels * n_bits)
            Bits of each pixel, most significant first (token-major when flattened).

        Returns
        -------
        X : ndarray of shape (n_images, n_pixels), dtype int64
            Grey levels.
        """
        check_is_fitted(self)
        bits = np.asarray(bits)
        if bits.ndim == 2 and bits.shape[1] == self.n_features_in_ * self.n_bits:
            bits = bits.reshape(bits.shape[0], self.n_features_in_, self.n_bits)
        if bits.ndim != 3 or bits.shape[1:] != (self.n_features_in_, self.n_bits):
            raise ValueError(
                f"bits must have shape (n_images, {self.n_features_in_}, {self.n_bits}); "
                f"got {bits.shape}."
            )
        if not np.isin(bits, (0, 1)).all():
            raise ValueError("bits must contain only 0 and 1.")
        return _from_bits(bits)

    def score_samples(self, X):
        """Log-likelihood of each image under the model, in nats.

        Parameters
        ----------
        X : array-like of shape (n_images, n_pixels)
            Grey levels; rounded and clipped to ``0 .. 2**n_bits - 1``.

        Returns
        -------
        log_likelihood : ndarray of shape (n_images,)
            Sum over pixels and bits of ``log p(bit | context)``.
        """
        check_is_fitted(self)
        levels = self._check_levels(X, reset=False)
        bits = _to_bits(levels, self.n_bits)
        left, up = self._neighbours(levels)
        pos = np.arange(self.n_features_in_)
        total = np.zeros(levels.shape[0])
        prefix = np.zeros_like(levels)
        for k in range(self.n_bits):
            b0, wl, wu, wp, wk = self._weights(k)
            s = b0 + wl[left] + wu[up] + wp[pos] + wk[prefix]
            sign = np.where(bits[:, :, k] == 1, 1.0, -1.0)
            total -= np.logaddexp(0.0, -sign * s).sum(axis=1)  # log sigmoid(sign * s)
            prefix = 2 * prefix + bits[:, :, k]
        return total

    def score(self, X, y=None):
        """Mean log-likelihood of the images (the default score for model selection).

        Parameters
        ----------
        X : array-like of shape (n_images, n_pixels)
            Grey levels.
        y : None
            Ignored.

        Returns
        -------
        score : float
            Mean of :meth:`score_samples`.
        """
        return float(np.mean(self.score_samples(X)))

    def sample(self, n_samples=1, logits_processor=None, random_state=None):
        """Generate images bit by bit, optionally through a logits processor.

        For every pixel in raster order and every bit ``k``, the model gives the logit
        pair ``(0, s_k)`` for the bit values ``(0, 1)`` of all images at once; the
        processor, when given, is called as ``logits_processor(prefix_bits, logits)``
        with ``prefix_bits`` of shape ``(n_samples, k)`` (the bits already drawn in the
        same token) and ``logits`` of shape ``(n_samples, 2)``, and the bit is drawn from
        the softmax of the logits it returns.

        Parameters
        ----------
        n_samples : int, default=1
            Number of images.
        logits_processor : callable or None, default=None
            For example a :class:`BitMarkWatermark`. None samples the model as fitted.
        random_state : int, RandomState instance or None, default=None
            Source of the draws; None uses the estimator's ``random_state``.

        Returns
        -------
        X : ndarray of shape (n_samples, n_pixels), dtype int64
            Grey levels.
        bits : ndarray of shape (n_samples, n_pixels, n_bits), dtype uint8
            Their bits.
        """
        check_is_fitted(self)
        if not isinstance(n_samples, numbers.Integral) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer; got {n_samples!r}.")
        if logits_processor is not None and not callable(logits_processor):
            raise TypeError("logits_processor must be callable or None.")
        seed = spawn_seeds(self.random_state if random_state is None else random_state, 1)[0]
        rng = np.random.default_rng(seed)
        n, p, d = int(n_samples), self.n_features_in_, int(self.n_bits)
        h, w = self.image_shape_
        border = self._n_levels
        weights = [self._weights(k) for k in range(d)]
        levels = np.zeros((n, p), dtype=np.int64)
        bits = np.zeros((n, p, d), dtype=np.uint8)
        uniforms = rng.random((p, d, n))
        zeros = np.zeros(n)
        fused = getattr(logits_processor, "_bit_bias", None)
        if fused is not None:
            # a BitMarkWatermark: its bias depends on the last n-1 bits of the token, which
            # are the low bits of the running prefix integer, so it is folded into the
            # prefix weights of every bit index (the arithmetic of __call__ on the logit
            # pair (0, s), without a Python call per bit)
            *per_bit, mask = fused(d)
            if all(b is None for b in per_bit):
                raise ValueError(
                    f"The watermark biases no bit of a {d}-bit token: its green strings "
                    "are longer than the token, or its first_biased_bit is past the "
                    f"token's last bit ({d - 1}). Use green strings of at most {d} bits "
                    f"and first_biased_bit < {d}, or a generator with more bits."
                )
            weights = [
                w if per_bit[k] is None
                else (*w[:4], w[4] + per_bit[k][np.arange(2**k) & mask])
                for k, w in enumerate(weights)
            ]
            logits_processor = None
        for i in range(p):
            r, c = divmod(i, w)
            left = levels[:, i - 1] if c > 0 else np.full(n, border)
            up = levels[:, i - w] if r > 0 else np.full(n, border)
            prefix = np.zeros(n, dtype=np.int64)
            for k in range(d):
                b0, wl, wu, wp, wk = weights[k]
                s = b0 + wp[i] + wl[left] + wu[up] + wk[prefix]
                if logits_processor is None:
                    p_one = expit(s)
                else:
                    logits = np.column_stack([zeros, s])
                    out = np.asarray(logits_processor(bits[:, i, :k].copy(), logits),
                                     dtype=np.float64)
                    if out.shape != (n, 2):
                        raise ValueError(
                            f"logits_processor returned shape {out.shape}; expected {(n, 2)}."
                        )
                    if np.isnan(out).any():
                        raise ValueError("logits_processor returned NaN logits.")
                    p_one = expit(out[:, 1] - out[:, 0])
                bit = uniforms[i, k] < p_one
                bits[:, i, k] = bit
                prefix = 2 * prefix + bit
            levels[:, i] = prefix
        return levels, bits

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        return tags
