"""radioactivity_test (issue 37): a one-sided Mann-Whitney U test of the detector's
scores of a suspect model's images against a clean model's, as the paper reports."""

import numpy as np
import pytest
from scipy.stats import mannwhitneyu
from sklearn.datasets import load_digits

from sklearn_cispa.watermark import (
    BitMarkDetector,
    BitMarkWatermark,
    BitwiseARGenerator,
    radioactivity_test,
)


@pytest.fixture(scope="module")
def toy():
    digits = np.minimum(load_digits().data, 15)
    gen = BitwiseARGenerator(image_shape=(8, 8), max_iter=200, random_state=0).fit(digits)
    clean = gen.sample(400, random_state=1)[0]
    marked = gen.sample(400, logits_processor=BitMarkWatermark(delta=2.0), random_state=2)[0]
    det = BitMarkDetector(encoder=gen.encode).fit(gen.sample(400, random_state=3)[0])
    return gen, clean, marked, det


def _student(images, seed):
    return BitwiseARGenerator(image_shape=(8, 8), max_iter=200).fit(images).sample(
        300, random_state=seed)[0]


def test_statistic_is_mannwhitneyu_greater(toy):
    _, clean, marked, det = toy
    u, p = radioactivity_test(det, marked[:50], clean[:60])
    ref = mannwhitneyu(det.score_samples(marked[:50]), det.score_samples(clean[:60]),
                       alternative="greater")
    assert (u, p) == (pytest.approx(ref.statistic), pytest.approx(ref.pvalue))


def test_a_model_trained_on_marked_images_is_radioactive(toy):
    _, clean, marked, det = toy
    clean_student = _student(clean, 10)
    _, p_full = radioactivity_test(det, _student(marked, 11), clean_student)
    assert p_full < 1e-10
    # the paper's hard case: only 10% of the student's data watermarked; measured p 9e-28
    # (full: 5e-100; two clean students: 0.07)
    mix = np.r_[marked[:40], clean[40:400]]
    _, p_mix = radioactivity_test(det, _student(mix, 12), clean_student)
    assert p_mix < 0.01, p_mix


def test_a_clean_student_is_not_accused(toy):
    gen, _, _, det = toy
    a = gen.sample(400, random_state=20)[0]
    b = gen.sample(400, random_state=21)[0]
    _, p = radioactivity_test(det, _student(a, 22), _student(b, 23))
    assert p > 0.001, p


def test_p_values_are_calibrated_under_the_null():
    rng = np.random.default_rng(0)
    det = BitMarkDetector().fit(rng.integers(0, 2, (200, 16, 4)))
    ps = [radioactivity_test(det, rng.integers(0, 2, (60, 16, 4)),
                             rng.integers(0, 2, (60, 16, 4)))[1] for _ in range(200)]
    assert 0.02 <= np.mean(np.array(ps) < 0.05) <= 0.09


def test_validation(toy):
    with pytest.raises(ValueError, match="detector"):
        radioactivity_test(object(), np.zeros((2, 4, 4)), np.zeros((2, 4, 4)))
    with pytest.raises(ValueError, match="at least one"):
        radioactivity_test(toy[3], np.zeros((0, 64)), toy[1][:5])
