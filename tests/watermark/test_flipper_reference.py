"""bit_flipper_attack(mode="reference") against an independent transcription of the
reference loop (sprintml/BitMark, Infinity/flipper.py, removal), issue 37."""

import numpy as np
import pytest

from sklearn_cispa.utils import spawn_seeds
from sklearn_cispa.watermark import BitMarkWatermark, bit_flipper_attack


def transcribed_reference(bits, patterns, factor, rng):
    """The reference's removal loop, one scale (here: one sample) at a time.

    Per scale: green fraction over the flattened sequence, p = (g - 0.5) * factor (not
    clipped, the scale skipped when p <= 0); for every bit position j >= 1 and every
    pattern in turn, OR the positions where (b[j-1], b[j]) equals the pattern into the
    mask, draw one uniform per token and flip b[j] where the draw is below p *inside the
    whole accumulated mask*.
    """
    out = np.array(bits, dtype=np.uint8, copy=True)
    for scale in out:                                  # (tokens, d), edited in place
        flat = scale.reshape(-1).tolist()
        pairs = [f"{flat[t]}{flat[t + 1]}" for t in range(len(flat) - 1)]
        green_fraction = sum(pair in patterns for pair in pairs) / len(pairs)
        flip_prob = (green_fraction - 0.5) * factor
        if flip_prob <= 0:
            continue
        for j in range(1, scale.shape[-1]):
            mask = np.zeros(scale.shape[0], dtype=bool)
            for pattern in patterns:
                mask_a = scale[:, j - 1] == int(pattern[0])
                mask_b = scale[:, j] == int(pattern[1])
                mask = mask | (mask_a & mask_b & mask_b)
                probs = np.where(mask, flip_prob, 0.0)
                sampled = rng.random(probs.shape) < probs
                scale[sampled, j] = 1 - scale[sampled, j]
    return out


def _marked_bits(n, tokens, d, delta, seed):
    """Fair-coin bits with the watermark: sequential sampling inside each token."""
    rng = np.random.default_rng(seed)
    wm = BitMarkWatermark(delta=delta)
    bits = np.zeros((n * tokens, d), dtype=np.uint8)
    for k in range(d):
        logits = wm(bits[:, :k], np.zeros((n * tokens, 2)))
        p1 = 1 / (1 + np.exp(logits[:, 0] - logits[:, 1]))
        bits[:, k] = rng.random(n * tokens) < p1
    return bits.reshape(n, tokens, d)


@pytest.mark.parametrize("factor, delta, d", [(2.2, 2.0, 4), (2.2, 4.0, 8), (5.0, 4.0, 6),
                                              (0.7, 1.0, 32)])
def test_reference_mode_equals_the_transcribed_loop(factor, delta, d):
    bits = _marked_bits(40, 16, d, delta, seed=d)
    for seed in (0, 1):
        rng = np.random.default_rng(spawn_seeds(seed, 1)[0])  # the documented stream
        expected = transcribed_reference(bits, sorted({"01", "10"}), factor, rng)
        got = bit_flipper_attack(bits, factor=factor, mode="reference", random_state=seed)
        np.testing.assert_array_equal(got, expected)


def test_reference_mode_flip_rates_closed_form():
    # tokens 01 and 10 of 2 bits, g = 1 everywhere: p = 0.5 * factor. A 01 pair is drawn
    # twice (for 01, then again inside the accumulated mask) -> flipped 2 p (1 - p); a 10
    # pair once -> p. Clean pairs 00/11 are never touched.
    n = 20000
    # sample 0: tokens 01 01 ... (flat 0101...), sample 1: tokens 10 10 ...: g = 1
    bits = np.stack([np.tile([0, 1], (n, 1)), np.tile([1, 0], (n, 1))]).astype(np.uint8)
    factor = 0.6
    p = 0.5 * factor
    out = bit_flipper_attack(bits, factor=factor, mode="reference", random_state=0)
    flipped = out[..., 1] != bits[..., 1]
    assert flipped[0].mean() == pytest.approx(2 * p * (1 - p), abs=0.015)   # 01 pairs
    assert flipped[1].mean() == pytest.approx(p, abs=0.015)                 # 10 pairs
    np.testing.assert_array_equal(out[..., 0], bits[..., 0])


def test_reference_mode_is_not_clipped_and_skips_low_scales():
    # flat pairs 01 11 10 00 01 11 10: g = 4/7, p = (4/7 - 1/2) * 20 = 1.43 > 1 (not
    # clipped): every 01 pair is flipped twice (unchanged), every 10 pair once
    bits = np.array([[[0, 1], [1, 0], [0, 1], [1, 0]]], dtype=np.uint8)
    for seed in range(5):
        out = bit_flipper_attack(bits, factor=20.0, mode="reference", random_state=seed)
        np.testing.assert_array_equal(out[0], [[0, 1], [1, 1], [0, 1], [1, 1]])
    low = np.zeros((3, 8, 4), dtype=np.uint8)     # g = 0: p < 0, nothing drawn or flipped
    np.testing.assert_array_equal(bit_flipper_attack(low, mode="reference"), low)


def test_reference_and_remove_modes_differ():
    bits = _marked_bits(50, 16, 4, 4.0, seed=3)
    ref = bit_flipper_attack(bits, mode="reference", random_state=0)
    rem = bit_flipper_attack(bits, mode="remove", random_state=0)
    assert not np.array_equal(ref, rem)
    pairs = lambda b: np.mean(b[..., 1:] != b[..., :-1])  # noqa: E731
    # the single-pass attack (p clipped to 1 at g = 0.88) removes more green pairs than
    # the reference, whose 01 pairs are drawn twice
    assert pairs(rem) < pairs(ref) < pairs(bits)
