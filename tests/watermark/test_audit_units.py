"""Audit: the watermark field on data in other units and on settings that do nothing.

Each test failed on the code before the audit fix it names.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits

from sklearn_cispa.watermark import BitMarkDetector, BitMarkWatermark, BitwiseARGenerator

DIGITS = np.minimum(load_digits().data[:200], 15)   # 0 .. 15: 4-bit grey levels


@pytest.mark.parametrize("transform", [
    lambda X: X / 15.0,          # pixels in [0, 1]: all but 0 and 1 were rounded away
    lambda X: X * 1e6,           # other units: every nonzero pixel was clipped to 15
    lambda X: X - 100.0,         # an offset: every pixel was clipped to 0
    lambda X: X + 0.3,           # non-integer levels
])
def test_values_that_are_not_grey_levels_warn(transform):
    # fit, encode and score_samples rounded and clipped silently: a generator fitted on
    # digits / 15 modelled near-binary images without a word
    with pytest.warns(UserWarning, match="not grey levels"):
        gen = BitwiseARGenerator(image_shape=(8, 8), max_iter=50).fit(transform(DIGITS))
    with pytest.warns(UserWarning, match="not grey levels"):
        gen.score_samples(transform(DIGITS[:3]))


def test_grey_levels_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        gen = BitwiseARGenerator(image_shape=(8, 8), max_iter=50).fit(DIGITS)
        gen.encode(gen.sample(2, random_state=0)[0])


@pytest.mark.parametrize("params", [dict(green=5), dict(first_biased_bit=4),
                                    dict(green=("01010", "10101"))])
def test_a_watermark_that_biases_no_bit_raises(params):
    # green strings of 5 bits on 4-bit tokens: sample() returned unwatermarked images
    # as if they were marked
    gen = BitwiseARGenerator(max_iter=50).fit(DIGITS)
    wm = BitMarkWatermark(delta=2.0, random_state=0, **params)
    with pytest.raises(ValueError, match="biases no bit"):
        gen.sample(2, logits_processor=wm, random_state=0)


def test_empirical_null_with_too_few_clean_samples_warns():
    # fpr=1e-6 with 100 clean samples: the threshold is the largest clean z-score, whose
    # false-positive rate is about 1 %, and nothing said so
    bits = np.random.default_rng(0).integers(0, 2, size=(100, 16, 4))
    with pytest.warns(UserWarning, match="calibration samples"):
        BitMarkDetector(fpr=1e-6).fit(bits)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        BitMarkDetector(fpr=0.05).fit(bits)
