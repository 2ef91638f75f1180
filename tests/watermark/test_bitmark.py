"""Tests of BitMark (issue 20, spec /shared/specs/bitmark.md): generator, watermark,
detector and attacks, with the spec's experiments 1, 2, 3 and 5 at CI size."""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit
from scipy.stats import norm
from sklearn.datasets import load_digits
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_cispa.metrics import tpr_at_fpr
from sklearn_cispa.watermark import (
    BitMarkDetector,
    BitMarkWatermark,
    BitwiseARGenerator,
    bit_flip_attack,
    bit_flipper_attack,
    gaussian_noise_attack,
)

N = 500  # images per arm, as in the spec
DELTAS = (0.5, 1.0, 2.0, 4.0)


# --------------------------------------------------------------------------------------
# fixtures: the spec's setting (toy generator on digits, random_state=0)
# --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def digits():
    return np.minimum(load_digits().data, 15)  # 4-bit grey levels (16 -> 15)


@pytest.fixture(scope="module")
def gen(digits):
    return BitwiseARGenerator(image_shape=(8, 8), random_state=0).fit(digits)


@pytest.fixture(scope="module")
def samples(gen):
    """Clean test and calibration sets, and one watermarked set per delta (bits)."""
    out = {"clean": gen.sample(N, random_state=1)[1], "cal": gen.sample(N, random_state=2)[1]}
    for i, delta in enumerate(DELTAS):
        wm = BitMarkWatermark(delta=delta)
        out[delta] = gen.sample(N, logits_processor=wm, random_state=10 + i)[1]
    return out


@pytest.fixture(scope="module")
def detector(samples):
    return BitMarkDetector().fit(samples["cal"])


def _roc(det, clean, marked):
    y = np.r_[np.zeros(len(clean)), np.ones(len(marked))]
    s = np.r_[det.score_samples(clean), det.score_samples(marked)]
    return roc_auc_score(y, s), tpr_at_fpr(y, s, fpr=0.01)


def _fair_coin_bits(n_images, n_tokens, d, processor, seed):
    """Bits drawn from equal logits through the processor (pure arithmetic source)."""
    rng = np.random.default_rng(seed)
    bits = np.zeros((n_images * n_tokens, d), dtype=np.uint8)
    for k in range(d):
        logits = processor(bits[:, :k], np.zeros((len(bits), 2)))
        bits[:, k] = rng.random(len(bits)) < expit(logits[:, 1] - logits[:, 0])
    return bits.reshape(n_images, n_tokens, d)


def _brute_force_z(bits, green, gamma, windows):
    """Independent oracle: count the windows with Python strings."""
    n = len(next(iter(green)))
    out = []
    for sample in bits:
        if windows == "flat":
            seqs = ["".join(map(str, sample.ravel()))]
        else:
            seqs = ["".join(map(str, token)) for token in sample]
        wins = [s[i : i + n] for s in seqs for i in range(len(s) - n + 1)]
        c = sum(w in green for w in wins)
        t = len(wins)
        out.append((c - gamma * t) / np.sqrt(t * gamma * (1 - gamma)))
    return np.array(out)


# --------------------------------------------------------------------------------------
# 5. unit tests (exact)
# --------------------------------------------------------------------------------------
def test_bias_table_prefers_the_opposite_bit():
    wm = BitMarkWatermark(delta=2.0)
    np.testing.assert_array_equal(wm.bias_table_, [[0.0, 2.0], [2.0, 0.0]])
    assert wm.n_gram_ == 2 and wm.gamma_ == 0.5 and wm.green_set_ == {"01", "10"}
    # a tie (both continuations green, or none) biases both values: no net effect
    tie = BitMarkWatermark(green=("00", "01", "110"[:2]), delta=1.5)
    np.testing.assert_array_equal(tie.bias_table_, [[1.5, 1.5], [0.0, 1.5]])


def test_bias_table_for_trigrams_uses_the_full_prefix():
    wm = BitMarkWatermark(green=("110", "001"), delta=3.0)
    table = wm.bias_table_
    assert table.shape == (4, 2)
    # prefix 11 -> "110" green, "111" red: bias 0; prefix 00 -> bias 1
    np.testing.assert_array_equal(table[3], [3.0, 0.0])
    np.testing.assert_array_equal(table[0], [0.0, 3.0])
    # prefixes 01 and 10 have no green continuation: a tie, both biased
    np.testing.assert_array_equal(table[1], [3.0, 3.0])
    prefix = np.array([[1, 1, 1], [0, 0, 1], [1, 0, 0]])  # last two bits: 11, 01, 00
    out = wm(prefix, np.zeros((3, 2)))
    np.testing.assert_array_equal(out, [[3.0, 0.0], [3.0, 3.0], [0.0, 3.0]])


def test_first_biased_bit_two_leaves_bit_one_untouched():
    logits = np.array([[0.3, -0.2], [1.0, 0.5]])
    before = logits.copy()
    reference = BitMarkWatermark(delta=2.0, first_biased_bit=2)
    np.testing.assert_array_equal(reference(np.array([[0], [1]]), logits), logits)
    np.testing.assert_array_equal(
        reference(np.array([[0, 0], [1, 1]]), logits), logits + [[0, 2], [2, 0]]
    )
    default = BitMarkWatermark(delta=2.0)  # biases bit 1 already
    np.testing.assert_array_equal(default(np.array([[0], [1]]), logits), logits + [[0, 2], [2, 0]])
    # bit 0 has no prefix: never biased
    np.testing.assert_array_equal(default(np.zeros((2, 0)), logits), logits)
    np.testing.assert_array_equal(logits, before)  # the caller's logits are not modified


def test_keyed_green_list_is_reproducible():
    a = BitMarkWatermark(green=4, gamma=0.25, random_state=7)
    b = BitMarkWatermark(green=4, gamma=0.25, random_state=7)
    c = BitMarkWatermark(green=4, gamma=0.25, random_state=8)
    assert a.green_set_ == b.green_set_ and len(a.green_set_) == 4
    assert a.gamma_ == 0.25 and a.n_gram_ == 4
    assert all(len(s) == 4 for s in a.green_set_)
    assert a.green_set_ != c.green_set_
    np.testing.assert_array_equal(a.bias_table_, b.bias_table_)
    # the detector takes the drawn list
    det = BitMarkDetector(green=tuple(a.green_set_), null="fixed").fit(np.zeros((3, 2, 4)))
    assert det.gamma0_ == 0.25


def test_encode_decode_round_trip(gen):
    X = np.tile(np.arange(16), 4)[None, :]  # 64 pixels, every level
    bits = gen.encode(X)
    assert bits.shape == (1, 64, 4) and bits.dtype == np.uint8
    np.testing.assert_array_equal(bits[0, 5], [0, 1, 0, 1])  # 5, MSB first
    np.testing.assert_array_equal(gen.decode(bits), X)
    np.testing.assert_array_equal(gen.decode(bits.reshape(1, -1)), X)
    # digits' 16 is clipped to 15, non-integers rounded
    np.testing.assert_array_equal(gen.decode(gen.encode(np.full((1, 64), 16.4))), 15)


def test_number_of_windows(samples):
    assert BitMarkDetector().fit(samples["cal"]).n_windows_ == 192
    assert BitMarkDetector(windows="flat").fit(samples["cal"]).n_windows_ == 255


def test_bit_flipper_reference_is_a_no_op_below_one_half():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2, size=(50, 64, 4)).astype(np.uint8)
    bits[:, :, 1] = bits[:, :, 0]  # one pair in three always red: g <= 2/3 ...
    bits[:, :, 2] = bits[:, :, 1]  # ... and two in three: g <= 1/3
    g = BitMarkDetector(null="fixed").fit(bits).green_fraction(bits)
    assert g.max() <= 0.5
    np.testing.assert_array_equal(bit_flipper_attack(bits, random_state=0), bits)
    # the null-aware variant does flip
    assert (bit_flipper_attack(bits, gamma0=0.1, random_state=0) != bits).any()


def test_bit_flipper_scans_upward_on_edited_bits():
    # 0101 with p = 1: bit 1 flips (pair 01 green) -> 0001; pair (0, 0) red; pair (0, 1)
    # green -> 0000. Reading the original bits would give 0000 too, so use 0110:
    # bit1: (0,1) green -> 0; bit2: (0,1) green -> 0; bit3: (0,0) red -> 0010 -> 0000
    bits = np.array([[[0, 1, 1, 0]]], dtype=np.uint8)
    out = bit_flipper_attack(bits, gamma0=0.0, factor=10.0, random_state=0)
    np.testing.assert_array_equal(out[0, 0], [0, 0, 0, 0])
    # forging flips red pairs: 0000 -> 0101 at rate 1
    forged = bit_flipper_attack(np.zeros((1, 1, 4)), mode="forge", forge_rate=1.0)
    np.testing.assert_array_equal(forged[0, 0], [0, 1, 0, 1])


def test_bit_flipper_needs_pairs():
    with pytest.raises(ValueError, match="length 2"):
        bit_flipper_attack(np.zeros((2, 3, 4)), green=("011",))


# --------------------------------------------------------------------------------------
# detector arithmetic against an independent oracle
# --------------------------------------------------------------------------------------
@settings(deadline=None, max_examples=30)
@given(
    seed=st.integers(0, 2**31 - 1),
    d=st.integers(2, 6),
    tokens=st.integers(1, 5),
    green=st.sampled_from([("01", "10"), ("11",), ("000", "101", "110")]),
    windows=st.sampled_from(["within_token", "flat"]),
)
def test_z_matches_brute_force_count(seed, d, tokens, green, windows):
    n = len(green[0])
    d = max(d, n)
    bits = np.random.default_rng(seed).integers(0, 2, size=(6, tokens, d))
    det = BitMarkDetector(green=green, null="fixed", windows=windows).fit(bits)
    gamma = len(green) / 2**n
    np.testing.assert_allclose(det.score_samples(bits), _brute_force_z(bits, set(green), gamma,
                                                                         windows), atol=1e-12)
    np.testing.assert_allclose(det.p_value(bits), norm.sf(det.score_samples(bits)))
    if gamma == 0.5:  # z = 2 (g - 1/2) sqrt(T)
        g = det.green_fraction(bits)
        np.testing.assert_allclose(det.score_samples(bits),
                                   2 * (g - 0.5) * np.sqrt(det.n_windows_), atol=1e-12)


def test_count_repeats_false_counts_distinct_ngrams():
    bits = np.array([[0, 1, 0, 1, 1]])  # windows 01 10 01 11: distinct {01, 10, 11}
    det = BitMarkDetector(count_repeats=False, null="fixed").fit(bits)
    np.testing.assert_allclose(det.green_fraction(bits), [2 / 3])
    det = BitMarkDetector(null="fixed").fit(bits)
    np.testing.assert_allclose(det.green_fraction(bits), [3 / 4])


def test_empirical_threshold_is_the_upper_order_statistic():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2, size=(250, 16, 4))
    det = BitMarkDetector(fpr=0.02, tail="empirical").fit(bits)
    # ceil(0.98 * 250) = 245th smallest
    assert det.threshold_ == np.sort(det.z_clean_)[244]
    assert np.mean(det.z_clean_ > det.threshold_) <= 0.02
    assert det.gamma0_ == pytest.approx(det.green_fraction(bits).mean())


# --------------------------------------------------------------------------------------
# 1. null calibration
# --------------------------------------------------------------------------------------
def test_calibrated_null_holds_its_fpr_on_fresh_clean_samples(gen):
    fprs = []
    for seed in range(3):
        det = BitMarkDetector(fpr=0.01).fit(gen.sample(N, random_state=100 + seed)[1])
        fresh = gen.sample(2000, random_state=200 + seed)[1]
        fprs.append(det.predict(fresh).mean())
    assert 0.005 <= np.mean(fprs) <= 0.02, fprs


def test_fixed_null_is_exact_on_fair_coins():
    bits = np.random.default_rng(0).integers(0, 2, size=(4000, 64, 4))
    z = BitMarkDetector(null="fixed").fit(bits[:10]).score_samples(bits)
    assert abs(z.mean()) < 0.15 and abs(z.std() - 1) < 0.1
    assert np.mean(z > 4) < 0.001


@pytest.mark.parametrize("effective_tokens", ["both", "all", "distinct"])
def test_fixed_null_is_the_papers_binomial_z(effective_tokens):
    # closed form: z = (C - T / 2) / sqrt(T / 4), whatever the repeated tokens
    bits = np.random.default_rng(0).integers(0, 2, size=(50, 16, 8)).astype(np.uint8)
    bits[:10, 1:] = bits[:10, :1]                      # ten flat samples
    det = BitMarkDetector(null="fixed", effective_tokens=effective_tokens).fit(bits)
    count, total = (bits[:, :, 1:] != bits[:, :, :-1]).sum(axis=(1, 2)), 16 * 7
    np.testing.assert_allclose(det.score_samples(bits),
                               (count - total / 2) / np.sqrt(total / 4), atol=1e-12)


def test_fixed_null_fails_on_natural_bits(samples):
    """Regression test of the failure mode: clean digits are far from fair coins."""
    det = BitMarkDetector(null="fixed").fit(samples["cal"])
    z = det.score_samples(samples["clean"])
    assert z.mean() < -5  # measured -8.0
    assert det.gamma0_ == 0.5 and det.threshold_ == 4.0
    # nothing below delta = 4 is detected by the fixed z > 4 rule
    assert det.predict(samples[1.0]).mean() < 0.05
    # the calibrated null detects delta = 1 (TPR at 1% FPR measured 0.998)
    cal = BitMarkDetector().fit(samples["cal"])
    assert cal.predict(samples[1.0]).mean() > 0.9


# --------------------------------------------------------------------------------------
# 2. strength curve
# --------------------------------------------------------------------------------------
def test_strength_curve(detector, samples):
    aucs, greens = [], [detector.green_fraction(samples["clean"]).mean()]
    for delta in DELTAS:
        auc, tpr = _roc(detector, samples["clean"], samples[delta])
        aucs.append(auc)
        greens.append(detector.green_fraction(samples[delta]).mean())
        if delta == 2.0:
            assert auc >= 0.99 and tpr >= 0.95, (auc, tpr)
        if delta == 0.5:
            assert 0.90 <= auc <= 0.98, auc  # measured 0.966
    assert np.all(np.diff(aucs) >= 0), aucs
    assert np.all(np.diff(greens) > 0), greens
    assert greens[0] == pytest.approx(0.215, abs=0.01)  # spec: clean green fraction 0.215


@pytest.mark.parametrize("delta", [0.5, 2.0, 4.0])
def test_fair_coin_green_fraction_is_sigmoid_delta(delta):
    wm = BitMarkWatermark(delta=delta)
    bits = _fair_coin_bits(1000, 64, 4, wm, seed=int(delta * 10))
    det = BitMarkDetector(null="fixed").fit(bits[:5])
    g = det.green_fraction(bits)
    assert g.mean() == pytest.approx(expit(delta), abs=0.01)
    expected_z = (expit(delta) - 0.5) * 2 * np.sqrt(192)
    assert det.score_samples(bits).mean() == pytest.approx(expected_z, rel=0.03)


def test_reference_off_by_one_biases_fewer_pairs():
    g_lib = BitMarkDetector(null="fixed").fit(np.zeros((2, 64, 4)))
    wm_ref = BitMarkWatermark(delta=2.0, first_biased_bit=2)
    bits = _fair_coin_bits(1000, 64, 4, wm_ref, seed=3)
    # pair (b0, b1) is unbiased (1/2), the other two sigmoid(2)
    expected = (0.5 + 2 * expit(2.0)) / 3
    assert g_lib.green_fraction(bits).mean() == pytest.approx(expected, abs=0.01)


# --------------------------------------------------------------------------------------
# 3. attacks (threshold re-calibrated on equally attacked clean images)
# --------------------------------------------------------------------------------------
def _attacked_tpr(attack, samples, delta, n_seeds=3):
    """TPR at 1% FPR averaged over attack seeds (a TPR at 1% of 500 is a noisy read)."""
    tprs = []
    for seed in range(0, 3 * n_seeds, 3):
        det = BitMarkDetector().fit(attack(samples["cal"], seed))
        clean, marked = attack(samples["clean"], seed + 1), attack(samples[delta], seed + 2)
        tprs.append(_roc(det, clean, marked)[1])
    return float(np.mean(tprs))


def test_pixel_noise_robustness(gen, samples):
    def noise(sigma):
        return lambda bits, seed: gen.encode(
            gaussian_noise_attack(gen.decode(bits), sigma, random_state=seed)
        )

    assert _attacked_tpr(noise(2.0), samples, 2.0) >= 0.9  # measured 0.94
    assert _attacked_tpr(noise(1.0), samples, 2.0) >= 0.95  # regression guard (1.00)


def test_bit_flip_robustness(samples):
    def flips(rate):
        return lambda bits, seed: bit_flip_attack(bits, rate, random_state=seed)

    assert 0.5 <= _attacked_tpr(flips(0.23), samples, 2.0) <= 0.8  # measured 0.74
    assert _attacked_tpr(flips(0.10), samples, 2.0) >= 0.95  # regression guard (1.00)


def test_bit_flipper_breaks_delta_4_and_the_null_aware_one_breaks_delta_2(detector, samples):
    def flipper(gamma0):
        return lambda bits, seed: bit_flipper_attack(bits, gamma0=gamma0, random_state=seed)

    assert _attacked_tpr(flipper(0.5), samples, 4.0) <= 0.05  # measured 0.00
    reference = _attacked_tpr(flipper(0.5), samples, 2.0)  # measured 0.99
    aware = _attacked_tpr(flipper(detector.gamma0_), samples, 2.0)  # measured 0.00
    assert aware < 0.99 and aware < reference, (aware, reference)
    assert aware <= 0.05  # regression guard of the first measurement


# --------------------------------------------------------------------------------------
# generator
# --------------------------------------------------------------------------------------
def test_generator_fits_digits_and_samples_realistic_levels(gen, digits):
    assert len(gen.estimators_) == 4 and gen.image_shape_ == (8, 8)
    X, bits = gen.sample(200, random_state=0)
    assert X.shape == (200, 64) and X.min() >= 0 and X.max() <= 15
    np.testing.assert_array_equal(gen.decode(bits), X)
    # the mean image of the samples resembles that of digits (clipped to 15)
    ref = np.clip(digits, 0, 15).mean(axis=0)
    assert np.corrcoef(X.mean(axis=0), ref)[0, 1] > 0.9
    # the model prefers real digits to noise of the same grey-level histogram
    noise = np.random.default_rng(0).permuted(np.clip(digits[:200], 0, 15), axis=1)
    assert gen.score(digits[:200]) > gen.score(noise) + 20


def test_score_samples_is_the_sum_of_bit_log_probabilities():
    # one pixel, one bit, no neighbours: the model is a constant Bernoulli
    X = np.array([[0.0], [1.0], [1.0], [1.0]])
    gen = BitwiseARGenerator(n_bits=1, C=1e6).fit(X)
    np.testing.assert_allclose(gen.score_samples([[0], [1]]), np.log([0.25, 0.75]), atol=1e-3)
    # a bit that never varies gets a smoothed constant, not -inf
    const = BitwiseARGenerator(n_bits=2).fit(np.full((5, 3), 2.0))
    assert np.all(np.isfinite(const.score_samples([[0, 1, 2]])))
    assert isinstance(const.estimators_[0], float)


def test_sampling_matches_score_samples():
    """Monte-Carlo oracle: sampled frequencies match exp(score_samples) on a 2-pixel model."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(400, 2))
    X[:, 1] = np.where(rng.random(400) < 0.8, X[:, 0], X[:, 1])  # right copies left
    gen = BitwiseARGenerator(n_bits=2).fit(X)
    grid = np.array([[a, b] for a in range(4) for b in range(4)])
    p = np.exp(gen.score_samples(grid))
    assert p.sum() == pytest.approx(1.0, abs=1e-9)
    S, _ = gen.sample(20000, random_state=1)
    freq = np.array([np.mean((S[:, 0] == a) & (S[:, 1] == b)) for a, b in grid])
    np.testing.assert_allclose(freq, p, atol=0.015)


def test_generator_row_order_and_reproducibility(digits):
    X = digits[:300]
    a = BitwiseARGenerator(image_shape=(8, 8), random_state=0).fit(X)
    b = BitwiseARGenerator(image_shape=(8, 8), random_state=0).fit(X[::-1])
    np.testing.assert_allclose(a.score_samples(X), b.score_samples(X), rtol=1e-4)
    s1, s2 = a.sample(5)[0], a.sample(5)[0]
    np.testing.assert_array_equal(s1, s2)  # random_state=0 fixes the draws
    restored = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(restored.sample(5)[0], s1)
    np.testing.assert_array_equal(a.sample(5, random_state=3)[0], a.sample(5, random_state=3)[0])


def test_generator_input_validation(gen):
    with pytest.raises(ValueError, match="image_shape"):
        BitwiseARGenerator(image_shape=(3, 3)).fit(np.zeros((4, 8)))
    with pytest.raises(ValueError, match="NaN|infinity"):
        gen.fit(np.full((3, 64), np.nan))
    with pytest.raises(ValueError, match="shape"):
        gen.decode(np.zeros((2, 10, 4)))
    with pytest.raises(ValueError, match="0 and 1"):
        gen.decode(np.full((1, 64, 4), 2))
    with pytest.raises(ValueError, match="shape"):
        gen.sample(2, logits_processor=lambda prefix, logits: logits[:1])
    with pytest.raises(ValueError, match="NaN"):
        gen.sample(2, logits_processor=lambda prefix, logits: logits * np.nan)
    with pytest.raises(ValueError, match="n_samples"):
        gen.sample(0)


def test_generator_units_are_grey_levels():
    """Values outside the levels are clipped (documented), never NaN."""
    rng = np.random.default_rng(0)
    for scale in (1e-6, 1.0, 1e6):
        X = rng.standard_cauchy((50, 4)) * scale
        gen = BitwiseARGenerator(n_bits=3).fit(X)
        assert np.all(np.isfinite(gen.score_samples(X)))


def test_generator_grid_search_default_scoring(digits):
    search = GridSearchCV(BitwiseARGenerator(image_shape=(8, 8), max_iter=200),
                          {"C": [0.01, 1.0]}, cv=2)
    search.fit(digits[:300])
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


# --------------------------------------------------------------------------------------
# detector on images, pipeline, extreme settings
# --------------------------------------------------------------------------------------
def test_pipeline_and_encoder_on_images(gen, samples, detector):
    clean_images = gen.decode(samples["cal"])
    marked_images = gen.decode(samples[2.0])
    pipe = make_pipeline(FunctionTransformer(gen.encode), BitMarkDetector()).fit(clean_images)
    z = pipe.score_samples(marked_images)
    np.testing.assert_allclose(z, detector.score_samples(samples[2.0]))
    assert pipe.predict(marked_images).mean() > 0.95
    # (no calibration edits: the bits-only pipeline cannot edit images)
    enc = BitMarkDetector(encoder=gen.encode, calibration_edits=None).fit(clean_images)
    np.testing.assert_allclose(enc.decision_function(marked_images),
                               detector.decision_function(samples[2.0]))
    before = clean_images.copy()
    enc.predict(clean_images)
    np.testing.assert_array_equal(clean_images, before)


def test_detector_validation():
    bits = np.zeros((4, 8, 4))
    det = BitMarkDetector().fit(np.random.default_rng(0).integers(0, 2, (4, 8, 4)))
    with pytest.raises(ValueError, match="tokens of 3 bits"):
        det.predict(np.zeros((2, 8, 3)))
    with pytest.raises(ValueError, match="one length"):
        BitMarkDetector(green=("01", "1")).fit(bits)
    with pytest.raises(ValueError, match="nothing is red"):
        BitMarkDetector(green=("0", "1")).fit(bits)
    with pytest.raises(ValueError, match="first_biased_bit"):
        BitMarkWatermark(green=("011",), first_biased_bit=1).bias_table_
    with pytest.raises(ValueError, match="green strings"):
        BitMarkWatermark(green=2, gamma=0.05).green_set_
    with pytest.warns(UserWarning, match="degenerate"):
        det = BitMarkDetector().fit(bits)  # all-zero bits: green fraction 0
    assert np.all(np.isfinite(det.score_samples(np.ones((2, 8, 4)))))


def test_extreme_delta_is_finite(gen):
    X, bits = gen.sample(20, logits_processor=BitMarkWatermark(delta=1e6), random_state=0)
    # every within-token pair alternates
    assert np.all(bits[:, :, 1:] != bits[:, :, :-1])
    X, bits = gen.sample(5, logits_processor=BitMarkWatermark(delta=0.0), random_state=0)
    np.testing.assert_array_equal(X, gen.sample(5, random_state=0)[0])


def test_attacks_do_not_modify_inputs_and_reproduce(samples):
    bits = samples["clean"][:20]
    before = bits.copy()
    for attack in (
        lambda r: bit_flip_attack(bits, 0.2, random_state=r),
        lambda r: bit_flipper_attack(bits, gamma0=0.2, random_state=r),
        lambda r: bit_flipper_attack(bits, mode="forge", random_state=r),
    ):
        np.testing.assert_array_equal(attack(0), attack(0))
    np.testing.assert_array_equal(bits, before)
    X = np.full((3, 64), 15)
    out = gaussian_noise_attack(X, 100.0, random_state=0)
    assert out.min() >= 0 and out.max() <= 15
    np.testing.assert_array_equal(gaussian_noise_attack(X, 0.0), X)
    with pytest.raises(ValueError, match="0 and 1"):
        bit_flip_attack(np.full(3, 2), 0.1)


def test_forging_raises_the_green_fraction(detector, samples):
    clean = samples["clean"]
    forged = bit_flipper_attack(clean, mode="forge", random_state=0)
    assert detector.green_fraction(forged).mean() > detector.green_fraction(clean).mean() + 0.03


@pytest.mark.slow
def test_radioactivity_on_the_toy(gen, samples, digits):
    """Experiment 4 (optional in the spec): a model trained on watermarked images."""
    marked = BitwiseARGenerator(image_shape=(8, 8)).fit(gen.decode(samples[2.0]))
    clean = BitwiseARGenerator(image_shape=(8, 8)).fit(gen.decode(samples["clean"]))
    det = BitMarkDetector().fit(samples["cal"])
    y = np.r_[np.zeros(N), np.ones(N)]
    s = np.r_[det.score_samples(clean.sample(N, random_state=5)[1]),
              det.score_samples(marked.sample(N, random_state=6)[1])]
    tpr = tpr_at_fpr(y, s, fpr=0.01)
    # no threshold from the spec; regression guard of the first measurement
    assert tpr >= 0.95, tpr  # measured 1.00 over 3 seeds (green fraction 0.615 vs 0.215)



@pytest.mark.parametrize(
    "params",
    [{"delta": 2.0}, {"delta": 1.0, "first_biased_bit": 2}, {"green": ("110", "001")},
     {"green": 3, "gamma": 0.25, "random_state": 1}, {"green": ("1",), "delta": 0.7}],
)
def test_fast_watermark_path_equals_the_processor_call(gen, params):
    """The generator applies a BitMarkWatermark inline; a wrapping callable takes the
    generic path through __call__; both draw the same bits."""
    wm = BitMarkWatermark(**params)
    fast = gen.sample(30, logits_processor=wm, random_state=4)[1]
    slow = gen.sample(30, logits_processor=lambda p, lg: wm(p, lg), random_state=4)[1]
    np.testing.assert_array_equal(fast, slow)


def test_green_list_without_effect_warns():
    with pytest.warns(UserWarning, match="changes no bit probability"):
        BitMarkWatermark(green=("00", "01")).bias_table_


def test_other_generators_and_green_lists(digits):
    """Beyond the spec's setting: 3-bit tokens in one row of pixels, trigram green list."""
    gen = BitwiseARGenerator(n_bits=3, max_iter=300).fit(digits[:600] / 2)
    wm = BitMarkWatermark(green=("110", "001"), delta=3.0)
    cal, clean = gen.sample(300, random_state=1)[1], gen.sample(300, random_state=2)[1]
    marked = gen.sample(300, logits_processor=wm, random_state=3)[1]
    aucs = {}
    for windows in ("within_token", "flat"):
        det = BitMarkDetector(green=tuple(wm.green_set_), windows=windows).fit(cal)
        assert det.n_windows_ == (64 if windows == "within_token" else 190)
        aucs[windows] = _roc(det, clean, marked)[0]
    assert aucs["within_token"] >= 0.99 and aucs["flat"] >= 0.95, aucs  # measured 1.000, 0.999


def test_images_without_encoder_warn(gen, samples):
    det = BitMarkDetector().fit(samples["cal"])
    with pytest.warns(UserWarning, match="encoder="):
        det.score_samples(gen.decode(samples["clean"])[:, :, None].repeat(4, axis=2))
