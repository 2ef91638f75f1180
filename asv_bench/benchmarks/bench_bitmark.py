"""BitMark (issue 20): sampling with and without the watermark, detection per 1000 images,
and detection quality at delta = 2 beside invisible-watermark's DWT-DCT.

The toy generator is fitted on digits once (``setup_cache``). The quality benchmarks use
500 clean calibration, 500 clean test and 500 watermarked images (seed fixed) and record
the AUC and the TPR at 1% FPR, with the threshold calibrated on clean images. The peer,
invisible-watermark's DWT-DCT post-hoc mark (32 bits), embeds into the same clean
images upsampled to 256 x 256 (nearest neighbour) and downsampled back to 8 x 8 grey
levels, because 8 x 8 is below its minimum size; its score is the bit accuracy of the
decoded message. Distortion is the mean absolute grey-level change against the
unwatermarked image with the same seed. Under ``SKLEARN_CISPA_BENCH_SMOKE=1`` (the CI
smoke run) the quality benchmarks use 100 images of each kind, and the peer 20 (its
encoder and decoder take 10 ms an image).
"""

import numpy as np

from ._common import SEED, SMOKE, require

N = 100 if SMOKE else 500
N_PEER = 20 if SMOKE else N  # images of each kind for invisible-watermark's DWT-DCT
UPSAMPLE = 32  # 8 x 8 -> 256 x 256
MESSAGE = [1, 0, 1, 1, 0, 0, 1, 0] * 4


def _fit_generator():
    from sklearn.datasets import load_digits

    from sklearn_cispa.watermark import BitwiseARGenerator

    # digits hold the grey level 16 in 9% of pixels; 4-bit tokens stop at 15, so clip
    # explicitly (as the report row and the example do) instead of the generator warning
    X = np.minimum(load_digits().data, 15)
    return BitwiseARGenerator(image_shape=(8, 8), random_state=SEED).fit(X)


def _roc(clean_scores, marked_scores):
    from sklearn.metrics import roc_auc_score

    from sklearn_cispa.metrics import tpr_at_fpr

    y = np.r_[np.zeros(len(clean_scores)), np.ones(len(marked_scores))]
    s = np.r_[clean_scores, marked_scores]
    return roc_auc_score(y, s), tpr_at_fpr(y, s, fpr=0.01)


def _to_rgb256(levels):
    """8 x 8 grey levels 0..15 -> 256 x 256 x 3 uint8 (nearest neighbour)."""
    img = (levels.reshape(8, 8) * 17).astype(np.uint8)
    img = np.kron(img, np.ones((UPSAMPLE, UPSAMPLE), dtype=np.uint8))
    return np.repeat(img[:, :, None], 3, axis=2)


def _to_levels(rgb):
    """256 x 256 x 3 -> 8 x 8 grey levels 0..15 (block means)."""
    grey = rgb.astype(np.float64).mean(axis=2)
    blocks = grey.reshape(8, UPSAMPLE, 8, UPSAMPLE).mean(axis=(1, 3))
    return np.clip(np.rint(blocks / 17), 0, 15).astype(np.int64).ravel()


class _Wrapped:
    """A plain callable around the watermark: the generator's generic processor path."""

    def __init__(self, watermark):
        self.watermark = watermark

    def __call__(self, prefix_bits, logits):
        return self.watermark(prefix_bits, logits)


class BitMarkSampling:
    """Sampling time of 100 images: no processor, the BitMark processor (applied inline
    by the generator), and the same processor behind a plain callable (one Python call
    per bit index)."""

    params = (["none", "bitmark", "callable"],)
    param_names = ["processor"]
    timeout = 300

    def setup_cache(self):
        return _fit_generator()

    def setup(self, gen, processor):
        from sklearn_cispa.watermark import BitMarkWatermark

        wm = BitMarkWatermark(delta=2.0)
        self.processor = {"none": None, "bitmark": wm, "callable": _Wrapped(wm)}[processor]

    def time_sample_100(self, gen, processor):
        gen.sample(100, logits_processor=self.processor, random_state=SEED)

    def peakmem_sample_100(self, gen, processor):
        gen.sample(100, logits_processor=self.processor, random_state=SEED)


class BitMarkOverhead:
    """Sampling time with the watermark over time without it, in one process (target
    <= 1.2 on the toy)."""

    timeout = 300
    unit = "ratio"

    def setup_cache(self):
        return _fit_generator()

    def track_overhead_ratio_100_images(self, gen):
        import timeit

        from sklearn_cispa.watermark import BitMarkWatermark

        wm = BitMarkWatermark(delta=2.0)
        plain = min(timeit.repeat(lambda: gen.sample(100, random_state=SEED), number=5,
                                  repeat=5))
        marked = min(timeit.repeat(
            lambda: gen.sample(100, logits_processor=wm, random_state=SEED), number=5,
            repeat=5))
        return marked / plain


class BitMarkDetection:
    """Detection time per 1000 images (4-bit tokens, 8 x 8)."""

    params = (["within_token", "flat"],)
    param_names = ["windows"]

    def setup(self, windows):
        from sklearn_cispa.watermark import BitMarkDetector

        rng = np.random.default_rng(SEED)
        self.bits = rng.integers(0, 2, size=(1000, 64, 4)).astype(np.uint8)
        self.detector = BitMarkDetector(windows=windows).fit(self.bits[:500])

    def time_detect_1000(self, windows):
        self.detector.score_samples(self.bits)


def _xor_count_z(bits):
    """The peer: a plain numpy XOR-and-count z-test of the pairs {01, 10} at gamma 1/2."""
    differ = (bits[:, :, 1:] ^ bits[:, :, :-1]).reshape(len(bits), -1)
    total = differ.shape[1]
    return (differ.sum(axis=1) - 0.5 * total) / np.sqrt(0.25 * total)


class BitMarkDetectionInfinitySize:
    """Detection at Infinity's size (200 images x 4096 tokens x 32 bits, uint8; issue 37):
    the time of ``score_samples``, and its ratio to a plain numpy XOR-and-count z-test on
    the same bits, timed alternately in one process (target <= 2). ``"both"`` is the
    default null (it also counts each image's distinct tokens: one sort of the packed
    token codes), ``"all"`` the null over all windows."""

    params = (["both", "all"],)
    param_names = ["effective_tokens"]
    timeout = 300

    def setup(self, effective_tokens):
        from sklearn_cispa.watermark import BitMarkDetector

        rng = np.random.default_rng(SEED)
        self.bits = rng.integers(0, 2, size=(200, 4096, 32), dtype=np.uint8)
        self.detector = BitMarkDetector(effective_tokens=effective_tokens).fit(
            self.bits[:100])

    def time_detect_200_infinity_images(self, effective_tokens):
        self.detector.score_samples(self.bits)

    def track_ratio_over_numpy_xor_count(self, effective_tokens):
        import timeit

        ours, peer = [], []
        for _ in range(5):
            ours.append(timeit.timeit(lambda: self.detector.score_samples(self.bits),
                                      number=1))
            peer.append(timeit.timeit(lambda: _xor_count_z(self.bits), number=1))
        return min(ours) / min(peer)

    track_ratio_over_numpy_xor_count.unit = "ratio"


class BitMarkQuality:
    """AUC and TPR at 1% FPR at delta = 2, and grey-level distortion, beside DWT-DCT."""

    timeout = 600

    def setup_cache(self):
        from sklearn_cispa.watermark import BitMarkDetector, BitMarkWatermark

        gen = _fit_generator()
        cal = gen.sample(N, random_state=SEED + 1)
        clean = gen.sample(N, random_state=SEED + 2)
        marked = gen.sample(N, logits_processor=BitMarkWatermark(delta=2.0),
                            random_state=SEED + 2)  # same draws as the clean set
        det = BitMarkDetector().fit(cal[1])
        auc, tpr = _roc(det.score_samples(clean[1]), det.score_samples(marked[1]))
        distortion = float(np.abs(marked[0] - clean[0]).mean())
        return {"auc": auc, "tpr": tpr, "distortion": distortion, "clean": clean[0]}

    def track_bitmark_auc_delta2(self, cache):
        return cache["auc"]

    def track_bitmark_tpr_at_1pct_delta2(self, cache):
        return cache["tpr"]

    def track_bitmark_distortion_grey_levels(self, cache):
        return cache["distortion"]


class DwtDctPeerQuality:
    """invisible-watermark's DWT-DCT on the same clean images (skipped when missing)."""

    timeout = 600

    def setup(self, cache):
        require("imwatermark")

    def setup_cache(self):
        try:
            from imwatermark import WatermarkDecoder, WatermarkEncoder
        except ImportError:
            return None
        gen = _fit_generator()
        clean = gen.sample(N_PEER, random_state=SEED + 2)[0]
        encoder = WatermarkEncoder()
        encoder.set_watermark("bits", MESSAGE)
        decoder = WatermarkDecoder("bits", len(MESSAGE))
        marked = np.array([_to_levels(encoder.encode(_to_rgb256(x), "dwtDct")) for x in clean])

        def accuracy(levels):
            bits = decoder.decode(_to_rgb256(levels), "dwtDct")
            return float(np.mean(np.asarray(bits, dtype=int) == MESSAGE))

        scores_clean = np.array([accuracy(x) for x in clean])
        scores_marked = np.array([accuracy(x) for x in marked])
        auc, tpr = _roc(scores_clean, scores_marked)
        return {"auc": auc, "tpr": tpr,
                "distortion": float(np.abs(marked - clean).mean())}

    def track_dwtdct_auc(self, cache):
        return cache["auc"]

    def track_dwtdct_tpr_at_1pct(self, cache):
        return cache["tpr"]

    def track_dwtdct_distortion_grey_levels(self, cache):
        return cache["distortion"]
