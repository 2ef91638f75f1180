"""Report row of BitMark: detection on the toy bitwise generator, calibrated vs fixed null
(issue 20); on real photos, false positives on clean and processed clean patches, and
robustness at the clean threshold beside invisible-watermark's DWT-DCT (issue 37)."""

import numpy as np

from sklearn_cispa.metrics import tpr_at_fpr
from sklearn_cispa.report import ExperimentResult, get_pyplot, register_experiment, save_figure
from sklearn_cispa.report._stats import fmt_pm, mean_sd
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

PATCH = 8  # 8 x 8 grey patches of sklearn's sample photos: 64 tokens of 8 bits
MESSAGE = [1, 0, 1, 1, 0, 0, 1, 0] * 4  # DWT-DCT's 32-bit message


def grey_bits(X):
    """8-bit grey levels -> (n, n_pixels, 8) bits, most significant first."""
    X = np.asarray(X).astype(np.int64).reshape(len(X), -1)
    return ((X[..., None] >> np.arange(7, -1, -1)) & 1).astype(np.uint8)


def _grey_photos():
    from sklearn.datasets import load_sample_images

    return [np.rint(im @ [0.299, 0.587, 0.114]).astype(np.int64)
            for im in load_sample_images().images]


def photo_patches(seed, size=PATCH):
    """The non-overlapping size x size grey patches of both photos, in two random halves."""
    out = []
    for g in _grey_photos():
        h, w = (g.shape[0] // size) * size, (g.shape[1] // size) * size
        out.append(g[:h, :w].reshape(h // size, size, w // size, size).swapaxes(1, 2)
                   .reshape(-1, size, size))
    out = np.concatenate(out)
    perm = np.random.default_rng(seed).permutation(len(out))
    half = len(out) // 2
    return out[perm[:half]], out[perm[half:]]


def image_attacks(quick):
    """(family, strength, attack(images 0..255, seed)) at the issue's strengths."""
    jpeg = (50, 75, 95) if quick else (50, 60, 75, 85, 95)
    crop = (0.75, 0.85) if quick else (0.75, 0.85, 0.95)
    blur = (0.5, 1.5) if quick else (0.5, 1.0, 1.5)
    noise = (1.0, 4.0) if quick else (1.0, 2.0, 4.0)
    out = [("JPEG", q, lambda X, s, q=q: jpeg_attack(X, q, n_levels=256)) for q in jpeg]
    out += [("crop + resize", f, lambda X, s, f=f: crop_resize_attack(X, f, n_levels=256))
            for f in crop]
    out += [("blur", b, lambda X, s, b=b: blur_attack(X, b, n_levels=256)) for b in blur]
    out += [("noise", n, lambda X, s, n=n: gaussian_noise_attack(
        X.reshape(len(X), -1), n, n_levels=256, random_state=s).reshape(np.shape(X)))
        for n in noise]
    return out


def psnr(reference, attacked, peak=255.0):
    """Mean-squared-error PSNR in dB over a whole set (inf for identical sets)."""
    mse = float(np.mean((np.asarray(attacked, float) - np.asarray(reference, float)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(peak**2 / mse)


def _quiet(f, *args):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return f(*args)


def real_photo_fpr(seed, quick):
    """Flagged rate of clean held-out patches, raw and processed, at 1% and 0.1% FPR."""
    cal, held = photo_patches(seed)
    dets = {f: BitMarkDetector(fpr=f, encoder=grey_bits).fit(cal) for f in (0.01, 0.001)}
    sub = held[:1000] if quick else held
    out = {("held-out", ""): [_quiet(d.predict, held).mean() for d in dets.values()]}
    for family, strength, attack in image_attacks(quick):
        X = attack(sub, seed)
        out[(family, strength)] = [_quiet(d.predict, X).mean() for d in dets.values()]
    return out


def eight_bit_generator(quick, random_state):
    """The toy generator with 8-bit tokens, fitted on real patches (the marked source)."""
    cal, _ = photo_patches(random_state)
    n = 600 if quick else 2000
    return BitwiseARGenerator(n_bits=8, image_shape=(PATCH, PATCH),
                              max_iter=30 if quick else 100).fit(cal[:n].reshape(n, -1))


def robustness_at_clean_threshold(gen, seed, quick, flipper_factors=(0.1, 0.2, 0.5, 1.0, 1.5, 2.2)):
    """delta = 2 on 8-bit samples, threshold from clean samples only: rows of
    (family, strength, PSNR against the marked images, TPR, clean flagged)."""
    n = 300 if quick else 500
    det = BitMarkDetector(encoder=grey_bits).fit(gen.sample(n, random_state=seed)[0])
    clean = gen.sample(n, random_state=seed + 1)[0].reshape(n, PATCH, PATCH)
    marked = gen.sample(n, logits_processor=BitMarkWatermark(delta=2.0),
                        random_state=seed + 2)[0].reshape(n, PATCH, PATCH)
    rows = [("none", "", float("inf"), _quiet(det.predict, marked).mean(),
             _quiet(det.predict, clean).mean())]
    for family, strength, attack in image_attacks(quick):
        out = attack(marked, seed + 3)
        rows.append((family, strength, psnr(marked, out), _quiet(det.predict, out).mean(),
                     _quiet(det.predict, attack(clean, seed + 4)).mean()))
    bits = grey_bits(marked)
    for mode in ("remove", "reference"):
        for factor in flipper_factors:
            flipped = bit_flipper_attack(bits, factor=factor, mode=mode,
                                         random_state=seed + 5)
            levels = (flipped.astype(np.int64) << np.arange(7, -1, -1)).sum(-1)
            rows.append((f"Bit-Flipper ({mode})", factor, psnr(marked.reshape(n, -1), levels),
                         _quiet(det.predict, levels).mean(), float("nan")))
    return rows


def dwtdct_at_clean_threshold(seed, quick, size=256):
    """invisible-watermark's DWT-DCT on random size x size colour crops of the photos:
    rows of (family, strength, PSNR, TPR at 1% FPR of the bit accuracy, clean flagged).

    DWT-DCT embeds in the chroma channels, so it runs on the colour photos (grey
    images cannot carry it); each attack is applied to each colour channel as a grey
    image. The threshold is the bit accuracy that at most 1% of the clean crops exceed.
    """
    from imwatermark import WatermarkDecoder, WatermarkEncoder
    from sklearn.datasets import load_sample_images

    n = 20 if quick else 100
    rng = np.random.default_rng(seed)
    photos = load_sample_images().images
    crops = []
    for i in range(n):
        g = photos[i % 2]
        top, left = rng.integers(0, g.shape[0] - size), rng.integers(0, g.shape[1] - size)
        crops.append(g[top : top + size, left : left + size])
    clean = np.array(crops, dtype=np.uint8)
    encoder = WatermarkEncoder()
    encoder.set_watermark("bits", MESSAGE)
    decoder = WatermarkDecoder("bits", len(MESSAGE))
    marked = np.array([encoder.encode(x, "dwtDct") for x in clean]).astype(np.int64)

    def accuracy(X):
        return np.array([np.mean(np.asarray(decoder.decode(x.astype(np.uint8), "dwtDct"),
                                            int) == MESSAGE) for x in X])

    def per_channel(attack, X, s):
        planes = np.moveaxis(X, 3, 1).reshape(-1, size, size)
        out = attack(planes, s).reshape(len(X), 3, size, size)
        return np.moveaxis(out, 1, 3)

    def tpr(acc_clean, acc_marked):
        k = max(1, int(np.ceil(0.99 * len(acc_clean))))
        thr = np.sort(acc_clean)[k - 1]
        return float(np.mean(acc_marked > thr)), float(np.mean(acc_clean > thr))

    base = accuracy(clean)
    t, c = tpr(base, accuracy(marked))
    rows = [("none", "", psnr(clean, marked), t, c)]
    for family, strength, attack in image_attacks(quick):
        out = per_channel(attack, marked, seed + 3)
        t, _ = tpr(base, accuracy(out))
        rows.append((family, strength, psnr(marked, out), t, float("nan")))
    return rows


def _tpr_auc(clean_scores, marked_scores):
    from sklearn.metrics import roc_auc_score

    y = np.r_[np.zeros(len(clean_scores)), np.ones(len(marked_scores))]
    s = np.r_[clean_scores, marked_scores]
    return tpr_at_fpr(y, s, fpr=0.01), roc_auc_score(y, s)


def _attacked_tpr(attack, cal, clean, marked, seed):
    det = BitMarkDetector().fit(attack(cal, seed))
    return _tpr_auc(det.score_samples(attack(clean, seed + 1)),
                    det.score_samples(attack(marked, seed + 2)))[0]


@register_experiment(
    "bitmark",
    title="BitMark",
    description=(
        "TPR at 1% FPR at delta = 2 on a bitwise generator fitted on digits, calibrated "
        "null beside the paper's fixed z > 4 rule; noise, bit-flip and Bit-Flipper attacks; "
        "on sklearn's sample photos, false positives of clean and processed clean patches "
        "and TPR against PSNR at the clean threshold beside DWT-DCT"
    ),
    claim=(
        "BitMark (n = 2, G = {01, 10}, delta = 2) is detected with TPR at 1% FPR near 1 and "
        "survives noise (reference code defaults, authors' blog); the Bit-Flipper cannot "
        "erase it without severe degradation. Spec checks on the toy: AUC >= 0.99 and TPR "
        ">= 0.95 at delta = 2 with the calibrated null; the fixed null's clean z below -5."
    ),
    cost=(7, 120),  # seconds alone on 2 cores: quick measured (6.8 s CPU), full measured
    # (113 s CPU)
)
def run(*, quick, out_dir, random_state):
    """Toy generator on digits; 500 (quick) or 1000 images per arm; 3 or 10 seeds."""
    from sklearn.datasets import load_digits

    n_seeds, n = (3, 500) if quick else (10, 1000)
    gen = BitwiseARGenerator(image_shape=(8, 8)).fit(np.minimum(load_digits().data, 15))
    wm = BitMarkWatermark(delta=2.0)
    rows = {k: [] for k in ("tpr", "auc", "tpr_fixed", "z_clean_fixed", "noise2", "flip23",
                            "flipper", "flipper_aware", "overlap")}
    example = None
    for i in range(n_seeds):
        seed = random_state + 100 * i
        cal = gen.sample(n, random_state=seed)[1]
        clean = gen.sample(n, random_state=seed + 1)[1]
        marked = gen.sample(n, logits_processor=wm, random_state=seed + 2)[1]
        det = BitMarkDetector().fit(cal)
        fixed = BitMarkDetector(null="fixed").fit(cal)
        tpr, auc = _tpr_auc(det.score_samples(clean), det.score_samples(marked))
        rows["tpr"].append(tpr)
        rows["auc"].append(auc)
        # the fixed rule: z > 4 under gamma = 1/2 (its FPR on clean images is ~0)
        rows["tpr_fixed"].append(float(fixed.predict(marked).mean()))
        rows["z_clean_fixed"].append(float(fixed.score_samples(clean).mean()))

        def noise(bits, s):
            return gen.encode(gaussian_noise_attack(gen.decode(bits), 2.0, random_state=s))

        rows["noise2"].append(_attacked_tpr(noise, cal, clean, marked, seed))
        rows["flip23"].append(_attacked_tpr(
            lambda b, s: bit_flip_attack(b, 0.23, random_state=s), cal, clean, marked, seed))
        rows["flipper"].append(_attacked_tpr(
            lambda b, s: bit_flipper_attack(b, random_state=s), cal, clean, marked, seed))
        rows["flipper_aware"].append(_attacked_tpr(
            lambda b, s: bit_flipper_attack(b, gamma0=det.gamma0_, random_state=s),
            cal, clean, marked, seed))
        # bit overlap after a pixel-noise round trip (the blog's 77% is for Infinity's VAE)
        rows["overlap"].append(float(np.mean(noise(marked, seed + 3) == marked)))
        if example is None:
            example = (det.score_samples(clean), det.score_samples(marked),
                       fixed.score_samples(clean), fixed.score_samples(marked), det.threshold_)
    stats = {k: mean_sd(v) for k, v in rows.items()}

    # real photos (issue 37): false positives of a detector calibrated on clean real
    # patches, raw and processed, and robustness at the clean threshold
    real_seeds = [random_state + 100 * i for i in range(3)]
    fpr_runs = [real_photo_fpr(s, quick) for s in real_seeds]
    fpr_keys = list(fpr_runs[0])
    fpr_table = {k: np.mean([r[k] for r in fpr_runs], axis=0) for k in fpr_keys}
    gen8 = eight_bit_generator(quick, random_state)
    rob_runs = [robustness_at_clean_threshold(gen8, s, quick) for s in real_seeds]
    rob = _mean_rows(rob_runs)
    dwt = None
    if not quick:
        try:
            import imwatermark  # noqa: F401
        except ImportError:
            pass
        else:
            dwt = _mean_rows([dwtdct_at_clean_threshold(s, quick) for s in real_seeds])
    processed = {k: v for k, v in fpr_table.items() if k[0] != "held-out"}
    worst1 = max(processed, key=lambda k: processed[k][0])
    worst01 = max(processed, key=lambda k: processed[k][1])
    over = [f"{k[0]} {k[1]}" for k, v in processed.items() if v[1] > 0.002]
    at30 = [r for r in rob if r[0] not in ("none",) and not r[0].startswith("Bit")
            and r[2] >= 30]
    min30 = min(r[3] for r in at30) if at30 else float("nan")

    def gone(mode):
        """PSNR of the weakest Bit-Flipper factor whose TPR falls below 0.5."""
        hits = [r for r in rob if r[0] == f"Bit-Flipper ({mode})" and r[3] < 0.5]
        return max(r[2] for r in hits) if hits else 0.0   # 0: not reached

    real_details = (
        f"; real photos (8 x 8 grey patches of load_sample_images, detector fitted on "
        f"clean real patches, 3 random halves): held-out flagged "
        f"{100 * fpr_table[fpr_keys[0]][0]:.2f}% at 1% and "
        f"{100 * fpr_table[fpr_keys[0]][1]:.2f}% at 0.1%; processed clean (JPEG, crop + "
        f"resize, blur, noise) at most {100 * processed[worst1][0]:.2f}% at 1% "
        f"({worst1[0]} {worst1[1]}) and {100 * processed[worst01][1]:.2f}% at 0.1% "
        f"({worst01[0]} {worst01[1]}; over 2x nominal at 0.1%: {', '.join(over) or 'none'})"
        f"; delta = 2 on an 8-bit generator fitted on real patches, clean threshold: "
        f"lowest TPR where PSNR >= 30 dB {min30:.2f}; the Bit-Flipper takes TPR below "
        f"0.5 at {gone('remove'):.1f} dB (single pass) and {gone('reference'):.1f} dB "
        f"(reference loop)"
    )
    figures = _real_figures(out_dir, fpr_table, rob, dwt)

    plt = get_pyplot()
    if plt is not None:
        zc, zm, fc, fm, thr = example
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
        for ax, (c, m, line, name) in zip(
            axes, [(fc, fm, 4.0, "fixed null (gamma = 0.5), z > 4"),
                   (zc, zm, thr, "calibrated null (gamma0), 1% FPR")], strict=True
        ):
            bins = np.linspace(min(c.min(), m.min()), max(c.max(), m.max()), 40)
            ax.hist(c, bins=bins, alpha=0.6, label="clean")
            ax.hist(m, bins=bins, alpha=0.6, label="delta = 2")
            ax.axvline(line, color="k", ls="--", label=f"threshold {line:.2f}")
            ax.set_title(name, fontsize=9)
            ax.set_xlabel("z")
        axes[0].set_ylabel("images")
        axes[0].legend(fontsize=8)
        figures = save_figure(fig, out_dir, "bitmark_z_histograms.png") + figures

    tpr, auc = stats["tpr"][0], stats["auc"][0]
    reproduced = bool(auc >= 0.99 and tpr >= 0.95 and stats["z_clean_fixed"][0] < -5
                      and min30 >= 0.9)
    held1, held01 = fpr_table[fpr_keys[0]]
    fpr_ok = bool(max(held1, processed[worst1][0]) <= 0.02
                  and max(held01, processed[worst01][1]) <= 0.002)
    verdict = (
        f"{'Reproduces' if reproduced else 'Does not reproduce'} on the toy: with the "
        f"calibrated null, TPR at 1% FPR {fmt_pm(*stats['tpr'])} and AUC "
        f"{fmt_pm(*stats['auc'], 4)} at delta = 2, while the paper's fixed z > 4 rule "
        f"catches {fmt_pm(*stats['tpr_fixed'])} (clean z under gamma = 0.5 is "
        f"{fmt_pm(*stats['z_clean_fixed'], 1)}: digits' bits are not fair coins). "
        f"Noise sigma = 2 keeps TPR {fmt_pm(*stats['noise2'], 2)}; the reference "
        f"Bit-Flipper leaves {fmt_pm(*stats['flipper'], 2)}, but the null-aware Bit-Flipper "
        f"(gamma0 = detector.gamma0_) removes the mark ({fmt_pm(*stats['flipper_aware'], 2)})"
        f" on this toy, whose 4-bit tokens carry only 3 biased pairs. On 8-bit tokens "
        f"(a generator fitted on real photo patches) both Bit-Flipper modes erase the mark "
        f"only at {_span(gone('remove'), gone('reference'))} dB PSNR, the paper's 'severe "
        f"degradation'; at the clean threshold the lowest TPR of an attack that keeps "
        f"PSNR >= 30 dB is {min30:.2f}. Not in the paper, but the library's "
        f"requirement: the default detector, fitted on clean real photo patches, "
        f"{'keeps' if fpr_ok else 'does not keep'} clean held-out and processed clean "
        f"patches within 2x nominal (worst {100 * processed[worst1][0]:.2f}% at 1%, "
        f"{worst1[0]} {worst1[1]}; {100 * processed[worst01][1]:.2f}% at 0.1%, "
        f"{worst01[0]} {worst01[1]})."
    )
    details = (
        f"AUC {fmt_pm(*stats['auc'], 4)}; attacked TPR@1% (re-calibrated on equally attacked "
        f"clean): noise sigma=2 {fmt_pm(*stats['noise2'], 2)}, 23% flips "
        f"{fmt_pm(*stats['flip23'], 2)}, Bit-Flipper {fmt_pm(*stats['flipper'], 2)}, "
        f"null-aware Bit-Flipper {fmt_pm(*stats['flipper_aware'], 2)}; bit overlap after "
        f"noise sigma=2 {fmt_pm(*stats['overlap'], 3)}" + real_details
    )
    return ExperimentResult(
        metric="TPR at 1% FPR, delta = 2 (calibrated null)",
        value=tpr,
        value_sd=stats["tpr"][1],
        peer="fixed null, z > 4 (paper's detector)",
        peer_value=stats["tpr_fixed"][0],
        peer_sd=stats["tpr_fixed"][1],
        n_runs=n_seeds,
        settings=(
            "BitwiseARGenerator(image_shape=(8, 8)) on load_digits (0..15, 4-bit tokens), "
            f"G = {{01, 10}}, delta = 2, bits k >= 1 biased, within-token pairs (T = 192); "
            f"{n} clean calibration, {n} clean test and {n} watermarked images per seed; "
            f"{n_seeds} seeds. Real photos: the 8480 8 x 8 grey patches of "
            f"load_sample_images (8 bits per pixel), 3 random halves (calibration / "
            f"held out{', 1000 processed' if quick else ''}); an 8-bit BitwiseARGenerator "
            f"fitted on {600 if quick else 2000} real patches for the marked images"
            f"{'' if quick else '; DWT-DCT on 100 colour 256 x 256 crops per seed'}"
        ),
        details=details,
        target=(
            "toy (spec): AUC >= 0.99 and TPR at 1% FPR >= 0.95 at "
            "delta = 2 with the calibrated null, the fixed null's clean z < -5; 8-bit "
            "generator on real patches (issue 37): TPR >= 0.9 at the clean threshold "
            "wherever an attack keeps PSNR >= 30 dB; real photo patches (issue 37): clean "
            "held-out and processed clean patches (JPEG 50-95, crop + resize, blur <= 1.5, "
            "noise <= 4) flagged <= 2x nominal at 1% and at 0.1%"
        ),
        verdict=verdict,
        reproduced=reproduced,
        figures=figures,
    )


def _span(a, b):
    """'15-17' for two values, '15' when they round alike."""
    lo, hi = f"{min(a, b):.0f}", f"{max(a, b):.0f}"
    return lo if lo == hi else f"{lo}-{hi}"


def _mean_rows(runs):
    """Rows (family, strength, psnr, tpr, clean) averaged over runs of equal layout."""
    out = []
    for parts in zip(*runs, strict=True):
        vals = np.array([p[2:] for p in parts], dtype=float)
        # nan marks a value not measured (the same in every run); inf a lossless attack
        mean = [np.mean(col[~np.isnan(col)]) if (~np.isnan(col)).any() else np.nan
                for col in vals.T]
        out.append((parts[0][0], parts[0][1], *[float(v) for v in mean]))
    return out


def _real_figures(out_dir, fpr_table, rob, dwt):
    plt = get_pyplot()
    if plt is None:
        return ()
    fig, ax = plt.subplots(figsize=(9, 3.3))
    labels = [f"{k[0]} {k[1]}".strip() for k in fpr_table]
    x = np.arange(len(labels))
    v = np.array(list(fpr_table.values())) * 100
    ax.bar(x - 0.2, v[:, 0], 0.4, label="nominal 1%")
    ax.bar(x + 0.2, v[:, 1], 0.4, label="nominal 0.1%")
    ax.axhline(2.0, color="C0", ls="--", lw=1, label="2 x 1%")
    ax.axhline(0.2, color="C1", ls="--", lw=1, label="2 x 0.1%")
    ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("clean patches flagged (%)")
    ax.set_title("detector fitted on clean real patches: clean held-out and processed", fontsize=9)
    ax.legend(fontsize=7)
    figures = save_figure(fig, out_dir, "bitmark_real_fpr.png")

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, rows, name in [(axes[0], rob, "BitMark delta = 2 (8-bit generator)"),
                           (axes[1], dwt, "DWT-DCT (colour photo crops)")]:
        if rows is None:
            ax.set_title(f"{name}: not run (quick mode or not installed)", fontsize=8)
            continue
        families = dict.fromkeys(r[0] for r in rows if r[0] != "none")
        for fam in families:
            pts = sorted((r[2], r[3]) for r in rows if r[0] == fam)
            ax.plot(*zip(*pts, strict=True), "o-", label=fam, ms=4)
        ax.axvline(30, color="k", ls=":", lw=1)
        ax.axhline(0.9, color="k", ls=":", lw=1)
        ax.set_xlabel("PSNR against the marked image (dB)")
        ax.set_title(name, fontsize=9)
    axes[0].set_ylabel("TPR at the clean 1% threshold")
    axes[0].legend(fontsize=7)
    return figures + save_figure(fig, out_dir, "bitmark_tpr_vs_psnr.png")
