"""BitMark as a logits processor for real (torch) bitwise autoregressive generators."""

import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval

from sklearn_cispa.watermark._bitmark import BitMarkWatermark


def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch"


class BitMarkLogitsProcessor(BaseEstimator):
    """BitMark's bias for the bit logits of a bitwise autoregressive generator.

    The rule of :class:`BitMarkWatermark` (the green list's bias table, applied from bit
    ``first_biased_bit`` on, on the last ``n - 1`` bits of the same token), for the
    tensors of a real generator such as Infinity: torch tensors in, torch tensors out on
    the input's device and with its dtype, with no copy to the host; numpy arrays in,
    numpy arrays out (a tensor for either argument gives a tensor, on that tensor's
    device). Any leading batch dimensions are allowed (images, tokens of a scale, ...).

    Parameters
    ----------
    green : tuple of str, default=("01", "10")
        The green list: bit strings of one length ``n`` (the reference's ``--set``). The
        detector must use the same list.
    delta : float, default=2.0
        The logit bias, ``>= 0``.
    first_biased_bit : int or None, default=None
        Index of the first biased bit of a token. None means ``n - 1``, the first bit with
        a full prefix inside its token; ``n`` reproduces the reference code.

    Attributes
    ----------
    n_gram_ : int
        Length ``n`` of the green strings.
    bias_table_ : ndarray of shape (2**(n-1), 2)
        Logit bias per prefix (row, packed most significant first) and bit value.

    See Also
    --------
    BitMarkWatermark : The same rule for the toy generator (numpy, float64).
    BitMarkDetector : Detect the watermark.

    Notes
    -----
    ``__call__(prefix_bits, bit_logits)``: ``prefix_bits`` of shape ``(..., k)`` holds the
    bits already drawn in each token, where ``k`` is the index of the bit being drawn;
    ``bit_logits`` of shape ``(..., 2)`` the logits of the values 0 and 1 of that bit.
    Inside a token the bits must be drawn one after the other (as Infinity's BitMark
    fork does); top-k / top-p sampling is applied to the returned logits unchanged.
    Floating inputs keep their dtype (half precision included: the bias is cast to
    it); integer logits are returned as float64 (numpy) or the default float dtype
    (torch).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.watermark import BitMarkLogitsProcessor
    >>> proc = BitMarkLogitsProcessor(delta=2.0)
    >>> proc(np.array([[0], [1]]), np.zeros((2, 2), dtype=np.float32))
    array([[0., 2.],
           [2., 0.]], dtype=float32)
    >>> import torch
    >>> out = proc(torch.tensor([[1, 0]]), torch.zeros(1, 2, dtype=torch.float16))
    >>> out, out.dtype
    (tensor([[0., 2.]], dtype=torch.float16), torch.float16)
    """

    _parameter_constraints: dict = {
        "green": [tuple, list, set, frozenset],
        "delta": [Interval(numbers.Real, 0, None, closed="left")],
        "first_biased_bit": [Interval(numbers.Integral, 0, None, closed="left"), None],
    }

    def __init__(self, green=("01", "10"), delta=2.0, first_biased_bit=None):
        self.green = green
        self.delta = delta
        self.first_biased_bit = first_biased_bit

    def _resolve(self):
        self._validate_params()
        wm = BitMarkWatermark(green=self.green, delta=self.delta,
                              first_biased_bit=self.first_biased_bit)
        n, _, first, bias = wm._resolve()
        return n, first, bias

    @property
    def n_gram_(self):
        return self._resolve()[0]

    @property
    def bias_table_(self):
        return self._resolve()[2].copy()

    def __call__(self, prefix_bits, bit_logits):
        """Add the watermark bias to the logits of the next bit of every token.

        Parameters
        ----------
        prefix_bits : ndarray or torch.Tensor of shape (..., k)
            Bits already drawn in each token; ``k`` is the index of the bit being drawn.
        bit_logits : ndarray or torch.Tensor of shape (..., 2)
            Logits of bit values 0 and 1 (not modified).

        Returns
        -------
        bit_logits : ndarray or torch.Tensor of shape (..., 2)
            The biased logits, of the input's kind, dtype and device.
        """
        n, first, bias = self._resolve()
        shape_p, shape_l = tuple(prefix_bits.shape), tuple(bit_logits.shape)
        if len(shape_p) < 1 or len(shape_l) < 1 or shape_l[-1] != 2 or (
            shape_p[:-1] != shape_l[:-1]
        ):
            raise ValueError(
                "prefix_bits must have shape (..., k) and bit_logits (..., 2) with the "
                f"same leading dimensions; got {shape_p} and {shape_l}."
            )
        k = shape_p[-1]
        if _is_torch(bit_logits) or _is_torch(prefix_bits):
            return self._torch(prefix_bits, bit_logits, n, first, bias, k)
        logits = np.asarray(bit_logits)
        if not np.issubdtype(logits.dtype, np.floating):
            logits = logits.astype(np.float64)
        if k < first:
            return logits.copy()
        prefix = np.asarray(prefix_bits)[..., k - n + 1 :].astype(np.intp)
        idx = prefix @ (1 << np.arange(n - 2, -1, -1, dtype=np.intp)) if n > 1 else 0
        return logits + bias.astype(logits.dtype)[idx]

    @staticmethod
    def _torch(prefix_bits, bit_logits, n, first, bias, k):
        import torch

        logits = bit_logits
        if not _is_torch(logits):
            # torch bits with array logits: the result is a tensor on the bits' device
            logits = torch.as_tensor(np.asarray(logits), device=prefix_bits.device)
        if not torch.is_floating_point(logits):
            logits = logits.to(torch.get_default_dtype())
        if k < first:
            return logits.clone()
        device = logits.device
        prefix = torch.as_tensor(prefix_bits, device=device)[..., k - n + 1 :].long()
        table = torch.as_tensor(bias, dtype=logits.dtype, device=device)
        if n == 1:
            return logits + table[0]
        weights = 1 << torch.arange(n - 2, -1, -1, device=device)
        return logits + table[(prefix * weights).sum(-1)]
