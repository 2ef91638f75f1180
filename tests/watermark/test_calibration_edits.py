"""BitMarkDetector's calibration on edited clean images and its Pareto tail (issue 37):
closed-form checks of the tail quantile, the edits' bookkeeping, and the false-positive
rate of a detector fitted on one photo (china) alone, held-out and processed, at 1% and
0.1%."""

import warnings

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.datasets import load_sample_images

from sklearn_cispa.watermark import (
    BitMarkDetector,
    blur_attack,
    crop_resize_attack,
    gaussian_noise_attack,
    jpeg_attack,
)
from sklearn_cispa.watermark._bitmark import _empirical_quantile, _pareto_quantile

P = 8


def grey_bits(X):
    X = np.asarray(X).astype(np.int64).reshape(len(X), -1)
    return ((X[..., None] >> np.arange(7, -1, -1)) & 1).astype(np.uint8)


def _tiles(g):
    h, w = (g.shape[0] // P) * P, (g.shape[1] // P) * P
    return g[:h, :w].reshape(h // P, P, w // P, P).swapaxes(1, 2).reshape(-1, P, P)


def test_pareto_quantile_of_an_exponential_tail_is_closed_form():
    # exponential scores: the tail over any u is exponential (Pareto shape 0), so the
    # 1 - fpr quantile is -log(fpr); the empirical one rests on the largest few
    z = np.sort(np.random.default_rng(0).exponential(size=20000))
    for fpr in (0.01, 0.001, 1e-4):
        assert _pareto_quantile(z, fpr) == pytest.approx(-np.log(fpr), rel=0.05)


def test_pareto_quantile_of_a_uniform_tail_is_closed_form():
    # uniform on [0, 1]: Pareto shape -1, exact quantile 1 - fpr
    z = (np.arange(10000) + 0.5) / 10000
    assert _pareto_quantile(z, 0.001) == pytest.approx(0.999, abs=2e-4)


def test_pareto_quantile_falls_back_to_the_empirical_one():
    z = np.random.default_rng(1).normal(size=100)
    # fewer than 2 x 30 tail scores ... and a quantile inside the bulk
    assert _pareto_quantile(z[:50], 0.01) == _empirical_quantile(z[:50], 0.01)
    assert _pareto_quantile(z, 0.5) == _empirical_quantile(z, 0.5)
    assert _empirical_quantile(z, 0.01) == np.sort(z)[98]


@pytest.mark.filterwarnings("ignore:.*lower 5% tail:UserWarning")
def test_threshold_covers_every_edit_and_edits_need_an_encoder():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 256, size=(300, P, P))
    det = BitMarkDetector(encoder=grey_bits).fit(X)
    assert det.calibration_edits_ == ("JPEG 50", "JPEG 80", "crop 0.8 + resize",
                                      "blur 1.0", "blur 2.0", "noise 2")
    assert det.threshold_ >= max(det.edit_thresholds_.max(), norm.isf(0.01))
    # the thresholds are the tail quantiles of the edited calibration images' z-scores
    z_blur = det.score_samples(blur_attack(X, 2.0, n_levels=256))
    assert det.edit_thresholds_[4] == pytest.approx(_pareto_quantile(z_blur, 0.01))
    # the null itself is fitted on the unedited images
    plain = BitMarkDetector(encoder=grey_bits, calibration_edits=None).fit(X)
    assert plain.gamma0_ == det.gamma0_ and plain.calibration_edits_ == ()
    np.testing.assert_array_equal(plain.z_clean_, det.z_clean_)
    # a custom list; bits (no encoder) cannot be edited
    custom = BitMarkDetector(encoder=grey_bits, calibration_edits=[lambda A: A]).fit(X)
    assert custom.edit_thresholds_[0] == pytest.approx(_pareto_quantile(custom.z_clean_, 0.01))
    assert BitMarkDetector().fit(grey_bits(X)).calibration_edits_ == ()
    with pytest.raises(ValueError, match="calibration edit"):
        BitMarkDetector(encoder=grey_bits).fit(X.reshape(300, 8, 8, 1))
    with pytest.raises(ValueError, match="callables"):
        BitMarkDetector(encoder=grey_bits, calibration_edits=[3]).fit(X)


@pytest.fixture(scope="module")
def china():
    g = np.rint(load_sample_images().images[0] @ [0.299, 0.587, 0.114]).astype(np.int64)
    X = _tiles(g)
    perm = np.random.default_rng(0).permutation(len(X))
    return X[perm[: len(X) // 2]], X[perm[len(X) // 2 :]]


PROCESSING = {
    "held-out": lambda X: X,
    "jpeg50": lambda X: jpeg_attack(X, 50, n_levels=256),
    "jpeg75": lambda X: jpeg_attack(X, 75, n_levels=256),
    "jpeg95": lambda X: jpeg_attack(X, 95, n_levels=256),
    "crop0.75": lambda X: crop_resize_attack(X, 0.75, n_levels=256),
    "crop0.85": lambda X: crop_resize_attack(X, 0.85, n_levels=256),
    "blur0.5": lambda X: blur_attack(X, 0.5, n_levels=256),
    "blur1.0": lambda X: blur_attack(X, 1.0, n_levels=256),
    "blur1.5": lambda X: blur_attack(X, 1.5, n_levels=256),
    "noise1": lambda X: gaussian_noise_attack(X.reshape(len(X), -1), 1.0, n_levels=256,
                                              random_state=7).reshape(X.shape),
    "noise4": lambda X: gaussian_noise_attack(X.reshape(len(X), -1), 4.0, n_levels=256,
                                              random_state=7).reshape(X.shape),
}


@pytest.fixture(scope="module")
def china_detectors(china):
    return {f: BitMarkDetector(fpr=f, encoder=grey_bits).fit(china[0]) for f in (0.01, 0.001)}


@pytest.mark.parametrize("fpr", [0.01, 0.001])
@pytest.mark.parametrize("name", list(PROCESSING))
def test_china_alone_within_twice_nominal(china, china_detectors, name, fpr):
    """Fitted on 2120 china patches, the other 2120 raw and processed (noise seed 7, not
    the calibration's 0) are flagged at most twice the nominal rate (measured over 3
    halves: at most 0.57% at 1% and 0.19% at 0.1%, blur 1.5). Without edits
    (calibration_edits=None, tail="empirical") blur 1.5 was 2.36% at 1% and 0.24% at
    0.1%, noise 1 2.03% at 1% (max over 3 halves)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        rate = china_detectors[fpr].predict(PROCESSING[name](china[1])).mean()
    assert rate <= 2 * fpr


@pytest.fixture(scope="module")
def hopper():
    """Grey 8 x 8 patches of matplotlib's bundled Grace Hopper photo (4800), in halves:
    a source the detector's defaults were not chosen on."""
    cbook = pytest.importorskip("matplotlib.cbook")
    from PIL import Image

    with Image.open(cbook.get_sample_data("grace_hopper.jpg")) as im:
        rgb = np.asarray(im.convert("RGB"), dtype=np.float64)
    X = _tiles(np.rint(rgb @ [0.299, 0.587, 0.114]).astype(np.int64))
    perm = np.random.default_rng(0).permutation(len(X))
    return X[perm[: len(X) // 2]], X[perm[len(X) // 2 :]]


def _pil_edit(X, edit):
    from PIL import Image

    out = np.empty_like(X)
    for i, x in enumerate(X):
        out[i] = np.asarray(edit(Image.fromarray(x.astype(np.uint8), "L")))
    return out


def _unseen_edits():
    from PIL import ImageEnhance, ImageFilter

    return {
        "median3": lambda X: _pil_edit(X, lambda p: p.filter(ImageFilter.MedianFilter(3))),
        "contrast0.8": lambda X: _pil_edit(X, lambda p: ImageEnhance.Contrast(p).enhance(0.8)),
        "sharpen": lambda X: _pil_edit(X, lambda p: p.filter(ImageFilter.SHARPEN)),
        "brightness1.06": lambda X: _pil_edit(
            X, lambda p: ImageEnhance.Brightness(p).enhance(1.06)),
    }


@pytest.mark.parametrize("fpr", [0.01, 0.001])
def test_unseen_source_within_twice_nominal(hopper, fpr):
    """Grace Hopper, calibrated on 2400 patches: the other 2400, raw, after the issue's
    processings and after four edits outside the calibration list (median, contrast,
    sharpen, brightness). Measured over 3 halves with the default: at most 1.00% at 1%
    and 0.17% at 0.1% (contrast x0.8); with calibration_edits=None and tail="empirical"
    blur 1.0 / 1.5 reached 0.38% at 0.1%, median 0.29%, contrast 0.29%."""
    det = BitMarkDetector(fpr=fpr, encoder=grey_bits).fit(hopper[0])
    rates = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for name, f in {**PROCESSING, **_unseen_edits()}.items():
            rates[name] = det.predict(f(hopper[1])).mean()
    assert max(rates.values()) <= 2 * fpr, rates
