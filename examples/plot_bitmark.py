"""
=====================================================================
BitMark: watermarking a bitwise autoregressive image generator
=====================================================================

:class:`~sklearn_cispa.watermark.BitwiseARGenerator` is a small bitwise autoregressive
model fitted on the 8 x 8 digits: each pixel is a token of 4 bits, drawn one bit after
the other. :class:`~sklearn_cispa.watermark.BitMarkWatermark` nudges the logit of every
bit towards the opposite of the previous bit of its token (green pairs ``01`` and
``10``) by ``delta``; :class:`~sklearn_cispa.watermark.BitMarkDetector` counts green
pairs and runs a z-test whose null is calibrated on clean images.

The first figure shows generated digits at several ``delta`` (same random draws in each
column). The second compares the z-scores of clean and watermarked images under the
paper's fixed null (``gamma = 0.5``, threshold ``z = 4``) and under the calibrated null
(threshold at 1% FPR). The third sweeps ``delta`` with ``ParameterGrid`` and plots AUC
against the grey-level distortion, and the fourth the TPR at 1% FPR against attack
strength, with the threshold re-calibrated on equally attacked clean images. The last
two use real photos (sklearn's two sample photos, as 8 x 8 grey patches with 8 bits per
pixel): which clean images a detector accuses depending on the population it was
calibrated on, and the TPR at the *clean* threshold against the PSNR of ordinary
processing and of both Bit-Flipper modes.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import ParameterGrid

from sklearn_cispa.metrics import tpr_at_fpr
from sklearn_cispa.watermark import (
    BitMarkDetector,
    BitMarkWatermark,
    BitwiseARGenerator,
    bit_flip_attack,
    bit_flipper_attack,
    blur_attack,
    crop_resize_attack,
    gaussian_noise_attack,
    jpeg_attack,
)

N = 300
gen = BitwiseARGenerator(image_shape=(8, 8), random_state=0).fit(
    np.minimum(load_digits().data, 15)  # 4-bit grey levels: 16 -> 15
)
cal = gen.sample(N, random_state=1)[1]
clean_X, clean = gen.sample(N, random_state=2)
detector = BitMarkDetector().fit(cal)


def roc(clean_scores, marked_scores):
    y = np.r_[np.zeros(len(clean_scores)), np.ones(len(marked_scores))]
    s = np.r_[clean_scores, marked_scores]
    return roc_auc_score(y, s), tpr_at_fpr(y, s, fpr=0.01)


# %%
# Clean and watermarked digits
# ----------------------------
deltas = (0.0, 1.0, 2.0, 4.0)
fig, axes = plt.subplots(3, len(deltas), figsize=(6, 4.8))
for j, delta in enumerate(deltas):
    images, _ = gen.sample(3, logits_processor=BitMarkWatermark(delta=delta), random_state=7)
    for i in range(3):
        axes[i, j].imshow(images[i].reshape(8, 8), cmap="gray_r", vmin=0, vmax=15)
        axes[i, j].set_axis_off()
    axes[0, j].set_title(f"delta = {delta:g}")
fig.tight_layout()

# %%
# z-scores under the fixed and the calibrated null
# ------------------------------------------------
# Digits' bits are far from fair coins: clean images have a green fraction of about
# 0.21, so their z-score under ``gamma = 0.5`` is about -8 and the fixed rule misses
# most watermarked images at ``delta = 2``.
marked = gen.sample(N, logits_processor=BitMarkWatermark(delta=2.0), random_state=3)[1]
fixed = BitMarkDetector(null="fixed").fit(cal)
fig, axes = plt.subplots(1, 2, figsize=(9, 3.3), sharey=True)
for ax, det, line, title in [
    (axes[0], fixed, fixed.threshold_, "fixed null, z > 4"),
    (axes[1], detector, detector.threshold_, "calibrated null, 1% FPR"),
]:
    zc, zm = det.score_samples(clean), det.score_samples(marked)
    bins = np.linspace(min(zc.min(), zm.min()), max(zc.max(), zm.max()), 40)
    ax.hist(zc, bins=bins, alpha=0.6, label="clean")
    ax.hist(zm, bins=bins, alpha=0.6, label="delta = 2")
    ax.axvline(4.0, color="k", ls=":", label="z = 4")
    ax.axvline(line, color="k", ls="--", label=f"threshold {line:.2f}")
    ax.set_title(f"{title}: TPR {det.predict(marked).mean():.2f}")
    ax.set_xlabel("z")
axes[0].legend(fontsize=8)
fig.tight_layout()

# %%
# Strength against distortion
# ---------------------------
# The same random draws with and without the watermark: the distortion is the mean
# absolute grey-level change it causes.
rows = []
for params in ParameterGrid({"delta": [0.25, 0.5, 1.0, 2.0, 4.0]}):
    X, bits = gen.sample(N, logits_processor=BitMarkWatermark(**params), random_state=2)
    auc, _ = roc(detector.score_samples(clean), detector.score_samples(bits))
    rows.append((params["delta"], np.abs(X - clean_X).mean(), auc))
fig, ax = plt.subplots(figsize=(5, 3.3))
d, dist, aucs = map(np.array, zip(*rows, strict=True))
ax.plot(dist, aucs, "o-")
for x, yv, label in zip(dist, aucs, d, strict=True):
    ax.annotate(f"delta={label:g}", (x, yv), fontsize=8, xytext=(3, -10),
                textcoords="offset points")
ax.set_xlabel("mean |grey-level change|")
ax.set_ylabel("AUC (clean vs watermarked)")
fig.tight_layout()

# %%
# Robustness: TPR at 1% FPR against attack strength (delta = 2)
# -------------------------------------------------------------
def attacked_tpr(attack):
    det = BitMarkDetector().fit(attack(cal, 0))
    return roc(det.score_samples(attack(clean, 1)), det.score_samples(attack(marked, 2)))[1]


curves = {
    "pixel noise (sigma, grey levels / 4)": (
        [0.0, 1.0, 2.0, 3.0, 4.0],
        lambda s: lambda b, r: gen.encode(gaussian_noise_attack(gen.decode(b), s,
                                                                random_state=r)),
        0.25,
    ),
    "bit flips (rate)": (
        [0.0, 0.1, 0.2, 0.3, 0.4],
        lambda s: lambda b, r: bit_flip_attack(b, s, random_state=r),
        1.0,
    ),
    "Bit-Flipper (factor / 10)": (
        [0.0, 1.0, 2.2, 3.0, 4.0],
        lambda s: lambda b, r: bit_flipper_attack(b, factor=s, random_state=r),
        0.1,
    ),
    "null-aware Bit-Flipper (factor / 10)": (
        [0.0, 1.0, 2.2, 3.0, 4.0],
        lambda s: lambda b, r: bit_flipper_attack(b, factor=s, gamma0=detector.gamma0_,
                                                  random_state=r),
        0.1,
    ),
}
fig, ax = plt.subplots(figsize=(6, 3.5))
for name, (strengths, make, unit) in curves.items():
    tprs = [attacked_tpr(make(s)) for s in strengths]
    ax.plot(np.array(strengths) * unit, tprs, "o-", label=name)
ax.set_xlabel("attack strength (scaled as in the legend)")
ax.set_ylabel("TPR at 1% FPR")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# Real photos: calibrate on the population you protect
# ----------------------------------------------------
# A detector flags clean images at its nominal rate only on the population its null was
# calibrated on. Here the bits of a photo are its 8-bit grey levels, most significant
# first. Calibrated on half of the patches, the detector flags about 1% of the other
# half, raw or after ordinary processing (threshold not re-calibrated); calibrated on
# a generator's own clean samples, it flags many more real photos and warns.
import warnings

from sklearn.datasets import load_sample_images
from sklearn.exceptions import ConvergenceWarning


def grey_bits(X):
    X = np.asarray(X).astype(np.int64).reshape(len(X), -1)
    return ((X[..., None] >> np.arange(7, -1, -1)) & 1).astype(np.uint8)


patches = []
for im in load_sample_images().images:
    g = np.rint(im @ [0.299, 0.587, 0.114]).astype(np.int64)
    h, w = (g.shape[0] // 8) * 8, (g.shape[1] // 8) * 8
    patches.append(g[:h, :w].reshape(h // 8, 8, w // 8, 8).swapaxes(1, 2).reshape(-1, 8, 8))
patches = np.concatenate(patches)[np.random.default_rng(0).permutation(8480)]
real_cal, held = patches[:4240], patches[4240:6240]
real_det = BitMarkDetector(encoder=grey_bits).fit(real_cal)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)  # 30 iterations suffice here
    gen8 = BitwiseARGenerator(n_bits=8, image_shape=(8, 8), max_iter=30, random_state=0)
    gen8.fit(real_cal[:600].reshape(600, -1))
gen_det = BitMarkDetector(encoder=grey_bits).fit(gen8.sample(500, random_state=1)[0])
processings = {
    "none": lambda X: X,
    "JPEG 50": lambda X: jpeg_attack(X, 50, n_levels=256),
    "JPEG 90": lambda X: jpeg_attack(X, 90, n_levels=256),
    "crop 0.75": lambda X: crop_resize_attack(X, 0.75, n_levels=256),
    "blur 1.5": lambda X: blur_attack(X, 1.5, n_levels=256),
    "noise 4": lambda X: gaussian_noise_attack(X.reshape(len(X), -1), 4.0, n_levels=256,
                                               random_state=0),
}
rates = {"calibrated on real patches": [], "calibrated on generator samples": []}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)   # gen_det warns: unlike its population
    for f in processings.values():
        X = f(held)
        rates["calibrated on real patches"].append(100 * real_det.predict(X).mean())
        rates["calibrated on generator samples"].append(100 * gen_det.predict(X).mean())
fig, ax = plt.subplots(figsize=(7, 3.3))
x = np.arange(len(processings))
for i, (name, r) in enumerate(rates.items()):
    ax.bar(x + (i - 0.5) * 0.4, r, 0.4, label=name)
ax.axhline(1.0, color="k", ls=":", label="nominal 1%")
ax.axhline(2.0, color="k", ls="--", lw=1, label="2 x nominal")
ax.set_xticks(x, list(processings))
ax.set_ylabel("clean held-out patches flagged (%)")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# Robustness at the clean threshold, against PSNR
# -----------------------------------------------
# BitMark marks images while they are generated, so the marked images come from the
# 8-bit generator fitted on real patches (``delta = 2``), and the threshold is fitted
# on clean samples and their ordinary edits (the default ``calibration_edits``): it never
# sees the attacked marked images. Ordinary processing keeps TPR >= 0.9 above 30 dB and
# removes the mark gradually below; both Bit-Flipper modes need far more distortion.
clean8 = gen8.sample(300, random_state=2)[0]
marked8 = gen8.sample(300, logits_processor=BitMarkWatermark(delta=2.0), random_state=3)[0]
det8 = BitMarkDetector(encoder=grey_bits).fit(clean8)
marked8 = marked8.reshape(-1, 8, 8)


def psnr(a, b):
    return 10 * np.log10(255.0**2 / np.mean((np.asarray(a, float) - b) ** 2))


weights = 1 << np.arange(7, -1, -1)
families = {
    "JPEG (95 .. 50)": [lambda X, q=q: jpeg_attack(X, q, n_levels=256)
                        for q in (95, 85, 75, 60, 50)],
    "blur (0.5 .. 1.5)": [lambda X, b=b: blur_attack(X, b, n_levels=256)
                          for b in (0.5, 1.0, 1.5)],
    "noise (1 .. 8)": [lambda X, n=n: gaussian_noise_attack(
        X.reshape(len(X), -1), n, n_levels=256, random_state=0).reshape(X.shape)
        for n in (1.0, 2.0, 4.0, 8.0)],
}
for mode in ("remove", "reference"):
    families[f"Bit-Flipper {mode} (factor 0.1 .. 2.2)"] = [
        lambda X, f=f, m=mode: (bit_flipper_attack(grey_bits(X), factor=f, mode=m,
                                                   random_state=0) * weights).sum(-1)
        for f in (0.1, 0.2, 0.5, 1.0, 2.2)]
fig, ax = plt.subplots(figsize=(6.5, 3.6))
with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    for name, attacks in families.items():
        pts = []
        for attack in attacks:
            out = attack(marked8).reshape(marked8.shape)
            pts.append((psnr(marked8, out), det8.predict(out).mean()))
        ax.plot(*zip(*sorted(pts), strict=True), "o-", label=name, ms=4)
ax.axvline(30, color="k", ls=":", lw=1)
ax.axhline(0.9, color="k", ls=":", lw=1)
ax.set_xlabel("PSNR against the marked image (dB)")
ax.set_ylabel("TPR at the clean 1% threshold")
ax.legend(fontsize=7)
fig.tight_layout()
plt.show()
