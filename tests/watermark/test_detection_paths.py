"""BitMarkDetector's counting paths and multi-scale detection (issue 37): the XOR fast
path and integer inputs against a brute-force count, and per-scale nulls."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_cispa.watermark import BitMarkDetector


def _brute_force_green(bits, green, windows):
    """Independent oracle: count green windows with Python strings."""
    out = []
    for sample in bits:
        seqs = (["".join(map(str, sample.ravel()))] if windows == "flat"
                else ["".join(map(str, token)) for token in sample])
        wins = [s[i : i + 2] for s in seqs for i in range(len(s) - 1)]
        out.append(sum(w in green for w in wins) / len(wins))
    return np.array(out)


@settings(deadline=None, max_examples=25)
@given(
    seed=st.integers(0, 2**31 - 1),
    d=st.sampled_from([2, 3, 4, 5, 6, 8, 16, 32, 64]),   # 8..64: packed-token path
    tokens=st.integers(1, 5),
    green=st.sampled_from([("01", "10"), ("00", "11"), ("01",), ("00", "01", "11")]),
    windows=st.sampled_from(["within_token", "flat"]),
    dtype=st.sampled_from([np.uint8, np.int64, np.int8, bool, np.float64]),
)
def test_every_input_dtype_and_green_list_counts_like_the_oracle(seed, d, tokens, green,
                                                                 windows, dtype):
    bits = np.random.default_rng(seed).integers(0, 2, size=(5, tokens, d))
    det = BitMarkDetector(green=green, null="fixed", windows=windows).fit(bits)
    expected = _brute_force_green(bits, set(green), windows)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)   # 0/1 of any dtype: no warning
        np.testing.assert_allclose(det.green_fraction(bits.astype(dtype)), expected,
                                   atol=1e-12)
        np.testing.assert_array_equal(det.score_samples(bits.astype(dtype)),
                                      det.score_samples(bits.astype(np.float64)))


@settings(deadline=None, max_examples=25)
@given(seed=st.integers(0, 2**31 - 1), d=st.sampled_from([2, 4, 7, 8, 16, 32, 64, 70]),
       tokens=st.integers(1, 12), repeats=st.integers(1, 4))
def test_distinct_tokens_count_like_a_python_set(seed, d, tokens, repeats):
    from sklearn_cispa.watermark._bitmark import _distinct_tokens, _token_codes

    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2, size=(4, tokens, d)).astype(np.uint8)
    bits = np.concatenate([base] * repeats, axis=1)       # every token repeated
    expected = [len({tuple(t) for t in sample}) for sample in bits]
    np.testing.assert_array_equal(_distinct_tokens(bits), expected)
    np.testing.assert_array_equal(_distinct_tokens(bits, _token_codes(bits)), expected)


def test_integer_values_other_than_bits_are_clipped_with_a_warning():
    bits = np.array([[[0, 2, 0, -1]]], dtype=np.int64)
    det = BitMarkDetector(null="fixed").fit(np.array([[[0, 1, 0, 1]]]))
    with pytest.warns(UserWarning, match="rounded and clipped"):
        g = det.green_fraction(bits)                      # -> 0 1 0 0
    np.testing.assert_allclose(g, [2 / 3])
    before = bits.copy()
    np.testing.assert_array_equal(bits, before)           # input not modified


SCALES = (1, 4, 16, 64)


def _multiscale(rng, n, marked_scale=None, q=0.7):
    """Fair bits on 85 tokens of 8 bits; on one scale bit j repeats NOT b_{j-1} w.p. q."""
    bits = rng.integers(0, 2, size=(n, sum(SCALES), 8)).astype(np.uint8)
    if marked_scale is not None:
        edges = np.cumsum([0, *SCALES])
        a, b = edges[marked_scale], edges[marked_scale + 1]
        for j in range(1, 8):
            flip = rng.random((n, b - a)) < q
            bits[:, a:b, j] = np.where(flip, 1 - bits[:, a:b, j - 1], bits[:, a:b, j])
    return bits


def test_per_scale_detection_on_a_multiscale_token_map():
    rng = np.random.default_rng(0)
    det = BitMarkDetector(scales=SCALES).fit(_multiscale(rng, 600))
    assert len(det.scale_detectors_) == 4
    # larger scales have a smaller null sd and so a larger weight
    assert np.all(np.diff(det.scale_weights_) > 0)
    np.testing.assert_allclose(np.sum(det.scale_weights_**2), 1.0)
    assert det.predict(_multiscale(rng, 2000)).mean() <= 0.02          # nominal 1%
    z = det.score_scales(_multiscale(rng, 100, marked_scale=2))        # 16 tokens marked
    # P(green) = 0.5 + 0.5 q = 0.85 on scale 2: z about 0.35 / sqrt(.25 / 112) = 7.4
    assert z.shape == (100, 4)
    assert z[:, 2].mean() > 5 and np.all(np.abs(z[:, [0, 1, 3]].mean(axis=0)) < 0.5)
    assert det.predict(_multiscale(rng, 100, marked_scale=3)).mean() == 1.0


def test_scales_are_validated():
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError, match="hold 21 tokens"):
        BitMarkDetector(scales=(1, 4, 16)).fit(_multiscale(rng, 120))
    det = BitMarkDetector(scales=SCALES).fit(_multiscale(rng, 120))
    with pytest.raises(ValueError, match="the samples have 84"):
        det.score_samples(_multiscale(rng, 5)[:, 1:])
    with pytest.raises(ValueError, match="positive token counts"):
        BitMarkDetector(scales=(0, 85)).fit(_multiscale(rng, 120))
    with pytest.raises(ValueError, match="needs scales"):
        BitMarkDetector().fit(_multiscale(rng, 120)).score_scales(_multiscale(rng, 5))
