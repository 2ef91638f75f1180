"""BitMark on real photos (issue 37): the detector calibrated on clean real patches, its
false-positive rate on held-out patches and on clean patches after ordinary processing,
the Pillow attacks, and the population warning."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_sample_images

from sklearn_cispa.watermark import (
    BitMarkDetector,
    BitMarkWatermark,
    BitwiseARGenerator,
    bit_flipper_attack,
    blur_attack,
    crop_resize_attack,
    gaussian_noise_attack,
    jpeg_attack,
)

P = 8  # 8 x 8 patches: 64 tokens of 8 bits, T = 448 within-token pairs


def grey_bits(X):
    """8-bit grey levels -> (n, n_pixels, 8) bits, most significant first."""
    X = np.asarray(X).astype(np.int64).reshape(len(X), -1)
    return ((X[..., None] >> np.arange(7, -1, -1)) & 1).astype(np.uint8)


@pytest.fixture(scope="module")
def patches():
    """Non-overlapping 8 x 8 grey patches of sklearn's two photos, split in two halves."""
    out = []
    for im in load_sample_images().images:
        g = np.rint(im @ [0.299, 0.587, 0.114]).astype(np.int64)
        h, w = (g.shape[0] // P) * P, (g.shape[1] // P) * P
        out.append(g[:h, :w].reshape(h // P, P, w // P, P).swapaxes(1, 2).reshape(-1, P, P))
    out = np.concatenate(out)
    perm = np.random.default_rng(0).permutation(len(out))
    half = len(out) // 2
    return out[perm[:half]], out[perm[half:]]


@pytest.fixture(scope="module")
def real_detector(patches):
    return BitMarkDetector(fpr=0.01, encoder=grey_bits).fit(patches[0])


def _flagged(det, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return det.predict(X).mean()


def test_real_photos_are_over_dispersed(real_detector):
    # the binomial null under-states the spread of real photos' green fraction 20-fold
    # (measured 19.6 with the default null); the detector estimates it on the clean calibration set
    assert real_detector.dispersion_ > 5
    assert real_detector.between_image_var_ > 0


@pytest.mark.parametrize("fpr", [0.01, 0.001])
def test_fpr_on_held_out_real_patches(patches, fpr):
    det = BitMarkDetector(fpr=fpr, encoder=grey_bits).fit(patches[0])
    # 4240 held-out patches; measured with the default (edited calibration, Pareto
    # tail) 0.26% at 1% and 0.00% at 0.1%; calibrated on the clean patches alone 0.71%
    # and 0.00% (effective_tokens="all": 0.85% and 0.00%)
    assert _flagged(det, patches[1]) <= 2 * fpr


ATTACKS = {
    "jpeg50": lambda X: jpeg_attack(X, 50, n_levels=256),
    "jpeg75": lambda X: jpeg_attack(X, 75, n_levels=256),
    "jpeg95": lambda X: jpeg_attack(X, 95, n_levels=256),
    "crop0.75": lambda X: crop_resize_attack(X, 0.75, n_levels=256),
    "crop0.95": lambda X: crop_resize_attack(X, 0.95, n_levels=256),
    "blur1.0": lambda X: blur_attack(X, 1.0, n_levels=256),
    "blur1.5": lambda X: blur_attack(X, 1.5, n_levels=256),
    "noise1": lambda X: gaussian_noise_attack(X.reshape(len(X), -1), 1.0, n_levels=256,
                                              random_state=0),
    "noise4": lambda X: gaussian_noise_attack(X.reshape(len(X), -1), 4.0, n_levels=256,
                                              random_state=0),
}


@pytest.fixture(scope="module")
def processed(patches):
    """The clean held-out patches after each ordinary processing (computed once)."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = ATTACKS[name](patches[1])
        return cache[name]

    return get


@pytest.fixture(scope="module")
def strict_detector(patches):
    return BitMarkDetector(fpr=0.001, encoder=grey_bits).fit(patches[0])


@pytest.mark.parametrize("name", list(ATTACKS))
def test_processed_clean_patches_are_not_accused(real_detector, processed, name):
    # at the fitted threshold (no re-calibration on the processed images); measured at
    # 1% with the default: JPEG 50/75/95 0.19/0.19/0.21%, crop 0.75 0.42%, blur 1.0/1.5
    # 0.54/0.85%, noise 1/4 0.24/0.02%; calibrated on the clean patches alone JPEG
    # 0.47-0.57%, crop 0.71-0.78%, blur 0.97/1.20%, noise 0.12-0.66%
    assert _flagged(real_detector, processed(name)) <= 0.02


@pytest.mark.parametrize("name", list(ATTACKS))
def test_processed_clean_patches_at_one_in_a_thousand(strict_detector, processed, name):
    # 4240 clean held-out patches; at most 2x nominal = 8 of them (measured 0.00-0.05%,
    # the most blur 1.5, 2 patches). The default null
    # (effective_tokens="both") holds JPEG 50-75 too, where an 8 x 8 patch is one JPEG
    # block and near-uniform patches are flattened to one grey level (the test below)
    assert _flagged(strict_detector, processed(name)) <= 0.002


@pytest.mark.parametrize("effective_tokens, fpr, name", [
    ("all", 0.001, "jpeg50"), ("all", 0.001, "jpeg75"), ("distinct", 0.01, "blur1.5")])
def test_either_model_alone_accuses_some_processing(patches, processed, effective_tokens,
                                                    fpr, name):
    """Why the default is effective_tokens="both". "all": JPEG turns near-uniform
    patches (sky, 3-6 grey levels) into one level; 42 = 00101010 and 213 = 11010101
    have 6 of 7 pairs green, and 64 identical tokens counted as 64 pieces of evidence
    give z = 3.37 against the 0.1% threshold 3.09 (measured on this half: 0.47% at JPEG
    50 and 0.28% at JPEG 75, over 2x nominal). "distinct" alone trusts textured patches
    too much and flags blurred ones more than the default (2.2% against 1.2% at 1%,
    blur 1.5, over 3 halves)."""
    # the variance models compared on the clean calibration images alone (with the
    # default calibration_edits the "all" model's threshold also covers JPEG 50, and
    # flags 0.00% there)
    plain = {"calibration_edits": None, "tail": "empirical"}
    default = BitMarkDetector(fpr=fpr, encoder=grey_bits, **plain).fit(patches[0])
    alone = BitMarkDetector(fpr=fpr, encoder=grey_bits, effective_tokens=effective_tokens,
                            **plain).fit(patches[0])
    X = processed(name)
    assert _flagged(alone, X) > _flagged(default, X)
    assert _flagged(default, X) <= 2 * fpr
    if effective_tokens == "all":
        assert _flagged(alone, X) > 2 * fpr


def test_distinct_tokens_widen_the_null_of_a_flat_image(patches):
    flat = np.full((1, P, P), 42)                       # 00101010: 6 of 7 pairs green
    det = BitMarkDetector(encoder=grey_bits, effective_tokens="distinct").fit(patches[0])
    g = det.green_fraction(flat)[0]
    assert g == 6 / 7
    # one distinct token: the window term of one token, T_distinct = 7
    var_one = det.distinct_between_image_var_ + det.distinct_window_var_ / 7
    np.testing.assert_allclose(det.score_samples(flat), (g - det.gamma0_) / np.sqrt(var_one))
    # the model over all windows counts its 64 identical tokens as 64 pieces of evidence
    every = BitMarkDetector(encoder=grey_bits, effective_tokens="all").fit(patches[0])
    var_all = every.between_image_var_ + every.window_var_ / 448
    np.testing.assert_allclose(every.score_samples(flat), (g - every.gamma0_) / np.sqrt(var_all))
    assert every.score_samples(flat)[0] > det.score_samples(flat)[0] + 0.5
    # the default: the larger variance (here the distinct one), times the fitted scale
    both = BitMarkDetector(encoder=grey_bits).fit(patches[0])
    assert both.effective_tokens == "both"
    expected = (g - both.gamma0_) / np.sqrt(max(var_one, var_all) * both._both_scale)
    np.testing.assert_allclose(both.score_samples(flat), expected)
    # the scale makes the calibration z-scores' mean square 1 (closed form)
    assert np.mean(both.z_clean_**2) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_generator_calibration_does_not_transfer_and_warns(patches):
    """Calibrated on another population (a 4-bit toy), the detector warns on photos."""
    rng = np.random.default_rng(1)
    toy = BitwiseARGenerator(n_bits=8, image_shape=(P, P), max_iter=30).fit(
        patches[0][:300].reshape(300, -1))
    det = BitMarkDetector(encoder=grey_bits).fit(toy.sample(300, random_state=rng.integers(1e6))[0])
    with pytest.warns(UserWarning, match="unlike the images"):
        det.score_samples(patches[1][:1000])


def test_no_population_warning_on_the_calibration_source(real_detector, patches):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        real_detector.score_samples(patches[1])


def test_no_population_warning_from_a_small_calibration_set():
    """The calibration set's own lower-tail count is a sample too: calibrated on a quarter
    of one photo's patches (1060) and scored on the other three quarters, the check must
    stay quiet. Measured: the rule before (the calibration's rate below the normal 1%
    point taken as exact, 15 of 1060, against 85 of the 3180) gave p = 5e-8 and warned;
    the two-sample rule at the 5% point compares 69 of 1060 with 286 of 3180, p = 0.008
    (warning below 1e-3).
    """
    g = np.rint(load_sample_images().images[0] @ [0.299, 0.587, 0.114]).astype(np.int64)
    h, w = (g.shape[0] // P) * P, (g.shape[1] // P) * P
    china = g[:h, :w].reshape(h // P, P, w // P, P).swapaxes(1, 2).reshape(-1, P, P)
    perm = np.random.default_rng(0).permutation(len(china))
    det = BitMarkDetector(encoder=grey_bits).fit(china[perm[:1060]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        det.score_samples(china[perm[1060:]])


def test_detector_scores_any_number_of_tokens(patches, real_detector):
    big = patches[1][:64].reshape(16, 4, P, P).swapaxes(1, 2).reshape(16, -1)  # 256 tokens
    z = real_detector.score_samples(big)
    assert z.shape == (16,) and np.all(np.isfinite(z))
    # a larger image carries the same between-image spread and less window noise
    assert real_detector._null_sd(np.array([448.0 * 4]))[0] < real_detector._null_sd(
        np.array([448.0]))[0]


@pytest.mark.parametrize("attack, param, bad", [
    (jpeg_attack, "quality", 0), (jpeg_attack, "quality", 101),
    (crop_resize_attack, "fraction", 0.0), (crop_resize_attack, "fraction", 1.5),
    (blur_attack, "sigma", -1.0),
])
def test_attack_parameters_are_validated(attack, param, bad):
    with pytest.raises(ValueError, match=param):
        attack(np.zeros((1, 8, 8)), bad)


def test_attacks_check_levels_and_shapes():
    with pytest.raises(ValueError, match="n_levels=256"):
        blur_attack(np.full((1, 8, 8), 200), 1.0)   # default n_levels=16
    with pytest.raises(ValueError, match="image_shape"):
        jpeg_attack(np.zeros((1, 10)), 75)
    X = np.random.default_rng(0).integers(0, 16, (3, 4, 6))
    before = X.copy()
    for attack, s in ((jpeg_attack, 90), (crop_resize_attack, 0.9), (blur_attack, 0.8)):
        out = attack(X, s)
        assert out.shape == X.shape and out.min() >= 0 and out.max() <= 15
        flat = attack(X.reshape(3, -1), s, image_shape=(4, 6))
        np.testing.assert_array_equal(flat.reshape(X.shape), out)
    np.testing.assert_array_equal(X, before)
    np.testing.assert_array_equal(crop_resize_attack(X, 1.0), X)
    np.testing.assert_array_equal(blur_attack(X, 0.0), X)


@pytest.fixture(scope="module")
def eight_bit(patches):
    """An 8-bit generator fitted on real patches, its clean-calibrated detector (the
    threshold never sees attacked images) and 300 delta = 2 samples."""
    flat = patches[0][:1000].reshape(1000, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gen = BitwiseARGenerator(n_bits=8, image_shape=(P, P), max_iter=50).fit(flat)
    det = BitMarkDetector(encoder=grey_bits).fit(gen.sample(300, random_state=2)[0])
    marked = gen.sample(300, logits_processor=BitMarkWatermark(delta=2.0), random_state=3)[0]
    return det, marked


def _psnr(a, b):
    return 10 * np.log10(255.0**2 / np.mean((np.asarray(a, float) - b) ** 2))


def test_robustness_at_the_clean_threshold_on_8_bit_images(eight_bit):
    """delta = 2 on an 8-bit generator fitted on real patches, the threshold calibrated on
    clean samples only (and their ordinary edits, the default): TPR >= 0.9 wherever the
    attack keeps PSNR >= 30 dB. Measured at the edited-calibrated threshold (2.94 against
    2.33 without edits): noise 2 / 4 1.000, JPEG 95 / 90 / 85 1.000 / 1.000 / 0.990
    (42 / 36 / 33 dB); JPEG 75 (29 dB) 0.857."""
    det, marked = eight_bit
    attacks = [lambda X: gaussian_noise_attack(X, 4.0, n_levels=256, random_state=0),
               lambda X: gaussian_noise_attack(X, 2.0, n_levels=256, random_state=0),
               lambda X: jpeg_attack(X, 95, n_levels=256),
               lambda X: jpeg_attack(X, 90, n_levels=256),
               lambda X: jpeg_attack(X, 85, n_levels=256),
               lambda X: jpeg_attack(X, 75, n_levels=256),
               lambda X: blur_attack(X, 0.5, n_levels=256)]
    checked = 0
    for attack in attacks:
        out = attack(marked)
        psnr = _psnr(marked, out)
        if psnr >= 30:
            checked += 1
            assert _flagged(det, out) >= 0.9, psnr
    assert checked >= 5   # noise 2 and 4, JPEG 95, 90, 85 (33-42 dB) at least


@pytest.mark.parametrize("mode", ["remove", "reference"])
def test_bit_flipper_removes_the_mark_only_with_severe_degradation(eight_bit, mode):
    """The paper: the Bit-Flipper cannot erase the mark without severe visual loss. On
    8-bit tokens, at the clean threshold: kept (TPR >= 0.9) at factor 0.2 (21-22 dB),
    gone (TPR <= 0.1) at the reference's 2.2, which costs PSNR < 15 dB (10.7 / 12.5 dB
    measured)."""
    det, marked = eight_bit
    bits = grey_bits(marked)
    weights = 1 << np.arange(7, -1, -1)
    for factor, keeps in ((0.2, True), (2.2, False)):
        flipped = bit_flipper_attack(bits, factor=factor, mode=mode, random_state=0)
        levels = (flipped.astype(np.int64) * weights).sum(-1)
        tpr, psnr = _flagged(det, levels), _psnr(marked, levels)
        if keeps:
            assert tpr >= 0.9 and psnr < 25, (tpr, psnr)
        else:
            assert tpr <= 0.1 and psnr < 15, (tpr, psnr)
