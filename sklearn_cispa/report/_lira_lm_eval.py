"""LiRA on language models (issue 39): small character GPT-2 references on real English
text, and the figures of Hayes et al.'s claims (shared by the report row, the example
and the ASV benchmark)."""

import warnings

import numpy as np

# variants of the attack compared in the LM setting (the offline variant and the
# fixed-variance option included)
LM_VARIANTS = {
    "online, fixed sigma": {},
    "online, per-example sigma": {"fix_variance": False},
    "offline, fixed sigma": {"online": False},
    "offline, per-example sigma": {"online": False, "fix_variance": False},
}


def lm_lira_setting(quick=False):
    """Keyword arguments of :func:`lm_lira_audit` for the report (quick: CI size).

    Full: 256 paragraphs of :func:`~sklearn_cispa.datasets.load_python_docs`, 32
    references and 4 targets, 2-block character GPT-2s (n_embd 32) trained for 600
    AdamW steps of 16 windows of 64 characters (about 12 epochs of each model's 128
    paragraphs), 8 batch-order targets. Quick: 128 paragraphs, 8 references, 2 targets,
    1 block, 200 steps, 3 batch-order targets. Both train two models at a time
    (``n_jobs=2``: the scores do not depend on it).
    """
    if quick:
        return dict(n_pool=128, n_reference=8, n_targets=2, n_layer=1, max_steps=200,
                    n_order_targets=3, n_jobs=2)
    return dict(n_pool=256, n_reference=32, n_targets=4, n_layer=2, max_steps=600,
                n_order_targets=8, n_jobs=2)


def _gpt2_config(n_layer, n_embd):
    # no dropout: the batch-order targets then differ in the order of their batches only
    return dict(n_layer=n_layer, n_embd=n_embd, n_head=4, n_inner=4 * n_embd,
                resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)


def lm_pool(seed, n_pool):
    """``n_pool`` paragraphs of the Python docs drawn at random, and the shared tokenizer.

    The tokenizer is learnt from the whole corpus, so every reference, target and
    query shares one vocabulary.
    """
    from sklearn_cispa.datasets import load_python_docs
    from sklearn_cispa.language import CharTokenizer

    docs = load_python_docs()
    rows = np.random.default_rng(seed).choice(len(docs), size=n_pool, replace=False)
    return [docs[i] for i in rows], CharTokenizer.from_documents(docs)


def lm_reference_model(tokenizer, *, n_layer=2, n_embd=32, max_steps=600, batch_size=16,
                       block_size=64, lr=3e-3, warmup_steps=20, model="gpt2"):
    """The (unfitted) character GPT-2 of the LM setting: references and targets."""
    from sklearn_cispa.language import TransformerLanguageModel

    config = _gpt2_config(n_layer, n_embd) if isinstance(model, str) else None
    return TransformerLanguageModel(
        model=model, config=config, tokenizer=tokenizer, block_size=block_size,
        max_steps=max_steps, batch_size=batch_size, lr=lr, warmup_steps=warmup_steps,
    )


def lm_lira_audit(seed, *, n_pool=256, n_reference=32, n_targets=4, n_layer=2, n_embd=32,
                  max_steps=600, n_order_targets=0, n_jobs=None):
    """Fit LiRA with character GPT-2 references on a pool of English paragraphs.

    Returns ``(lira, pool, order_targets)``: the fitted
    :class:`~sklearn_cispa.privacy.LiRAMembershipInference` (statistic "auto", that is
    the model's ``score_samples``: minus the per-document loss), the pool, and
    ``n_order_targets`` extra targets trained on the first target's training set from
    one and the same initial weights, in different batch orders only.
    """
    from sklearn.base import clone

    from sklearn_cispa.privacy import LiRAMembershipInference

    pool, tokenizer = lm_pool(seed, n_pool)
    est = lm_reference_model(tokenizer, n_layer=n_layer, n_embd=n_embd, max_steps=max_steps)
    lira = LiRAMembershipInference(est, n_reference=n_reference, n_targets=n_targets,
                                   n_jobs=n_jobs, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lira.fit(pool)
    order_targets = []
    if n_order_targets:
        initial = _initial_weights(est, seed)
        members = [d for d, k in zip(pool, lira.target_keep_[0], strict=True) if k]
        for b in range(n_order_targets):
            model = clone(est).set_params(model=initial, config=None,
                                          random_state=10_000 + 97 * seed + b)
            order_targets.append(model.fit(members))
    return lira, pool, order_targets


def _initial_weights(est, seed):
    """A randomly initialised model instance of ``est``'s architecture (seeded)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from sklearn_cispa.utils import torch_rng_context

    tok = est.tokenizer
    cfg = AutoConfig.for_model(est.model, vocab_size=len(tok.vocab),
                               bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                               pad_token_id=tok.pad_token_id, **est.config)
    with torch_rng_context(int(seed)):
        return AutoModelForCausalLM.from_config(cfg)


def _pooled(lira, n_reference=None, **kw):
    from sklearn_cispa.privacy import lira_scores

    m = lira.n_reference if n_reference is None else n_reference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # examples without IN references at small M
        return np.stack([lira_scores(lira.keep_[:m], lira.ref_stats_[:m], s, **kw)
                         for s in lira.target_stats_])


def bootstrap_tpr(membership, scores, fprs=(0.01, 0.001), n_boot=1000, random_state=0):
    """TPR at each FPR pooled over targets, with a 95% bootstrap interval over examples.

    ``membership`` and ``scores`` are (n_targets, n_pool); the bootstrap resamples pool
    examples (columns) with replacement. Returns ``{fpr: (tpr, low, high)}``.
    """
    from sklearn_cispa.metrics import tpr_at_fpr

    rng = np.random.default_rng(random_state)
    n = membership.shape[1]
    out = {}
    for f in fprs:
        point = tpr_at_fpr(membership.ravel(), scores.ravel(), fpr=f)
        boots = []
        for _ in range(n_boot):
            cols = rng.integers(0, n, size=n)
            boots.append(tpr_at_fpr(membership[:, cols].ravel(), scores[:, cols].ravel(),
                                    fpr=f))
        low, high = np.percentile(boots, [2.5, 97.5])
        out[f] = (float(point), float(low), float(high))
    return out


def _extractability(model, doc, prefix_chars=32, suffix_chars=32):
    """Share of the suffix that greedy completion of the prefix reproduces, from its
    start (the longest correct run, over the suffix length)."""
    prefix, suffix = doc[:prefix_chars], doc[prefix_chars:prefix_chars + suffix_chars]
    if not suffix:
        return 0.0
    text = model.complete(prefix, max_new_tokens=len(suffix))
    run = 0
    for a, b in zip(text, suffix, strict=False):
        if a != b:
            break
        run += 1
    return run / len(suffix)


def lm_lira_figures(lira, pool, order_targets=(), fprs=(0.01, 0.001), n_boot=1000,
                    random_state=0, extract_docs=None):
    """All the figures of the LM setting from a fitted audit.

    Returns a dict with the attack's and the loss attack's AUC and TPR (with bootstrap
    intervals), the variants, AUC against the number of references, the flip rate of
    the batch-order targets, and the rank correlations of exposure (the online score of
    a member) with the step it was last seen, its length and its extractability.
    """
    from scipy.stats import spearmanr
    from sklearn.metrics import roc_auc_score

    from sklearn_cispa.metrics import tpr_at_fpr
    from sklearn_cispa.privacy import flip_rate, flip_rate_cutoff

    membership = lira.target_keep_.astype(bool)
    scores = _pooled(lira, fix_variance=lira.fix_variance, online=lira.online)
    loss = lira.target_stats_.mean(axis=2).astype(np.float64)
    out = {
        "auc": float(roc_auc_score(membership.ravel(), scores.ravel())),
        "loss_auc": float(roc_auc_score(membership.ravel(), loss.ravel())),
        "tpr": bootstrap_tpr(membership, scores, fprs, n_boot, random_state),
        "loss_tpr": bootstrap_tpr(membership, loss, fprs, n_boot, random_state),
    }
    variants = {}
    for name, kw in LM_VARIANTS.items():
        s = _pooled(lira, **kw)
        variants[name] = {
            "auc": float(roc_auc_score(membership.ravel(), s.ravel())),
            **{f"tpr@{f:g}": tpr_at_fpr(membership.ravel(), s.ravel(), fpr=f) for f in fprs},
        }
    out["variants"] = variants
    refs = [m for m in (2, 4, 8, 16, 32, 64) if m <= lira.n_reference]
    out["auc_vs_refs"] = {
        m: float(roc_auc_score(membership.ravel(), _pooled(lira, m).ravel())) for m in refs
    }
    # exposure of members against when they were last seen and their length
    last, length, exposure = [], [], []
    for t, target in enumerate(lira.targets_):
        members = np.flatnonzero(membership[t])
        order = np.asarray(target.training_order_)
        last += order.tolist()
        length += [len(pool[i]) for i in members]
        exposure += scores[t, members].tolist()
    rho, p = spearmanr(exposure, last)
    out["exposure_vs_last_seen"] = (float(rho), float(p), len(exposure))
    rho, p = spearmanr(exposure, length)
    out["exposure_vs_length"] = (float(rho), float(p), len(exposure))
    # exposure against extractability, on the first target's members
    target = lira.targets_[0]
    members = np.flatnonzero(membership[0])
    if extract_docs is not None:
        members = members[:extract_docs]
    extract = np.array([_extractability(target, pool[i]) for i in members])
    member_scores = scores[0, members]
    rho, p = spearmanr(member_scores, extract) if np.ptp(extract) > 0 else (np.nan, np.nan)
    k = max(1, int(round(0.05 * len(members))))
    top_exposed = set(np.argsort(-member_scores, kind="stable")[:k].tolist())
    top_extract = set(np.argsort(-extract, kind="stable")[:k].tolist())
    out["exposure_vs_extraction"] = (float(rho), float(p), len(members))
    out["top5_overlap"] = len(top_exposed & top_extract) / k
    out["extractability_mean"] = float(extract.mean())
    # the batch-order targets: same data, same initial weights, other batch orders
    if len(order_targets) >= 2:
        member_rows = lira.target_keep_[0]
        fpr = fprs[0]
        decisions = []
        for model in order_targets:
            s = lira.score_samples(pool, target=model)
            non = np.sort(s[~member_rows])[::-1]
            k = int(np.floor(fpr * non.size + 1e-9))
            tau = non[k] if k < non.size else -np.inf
            decisions.append(s > tau)
        decisions = np.array(decisions)
        flips = flip_rate(decisions, mask=np.broadcast_to(member_rows, decisions.shape))
        positive = decisions[:, member_rows].any(axis=0)
        cut = flip_rate_cutoff(len(order_targets))
        member_flips = flips[member_rows]
        # with fewer than 6 targets the binomial test accepts a fair coin even at 0 of B
        # positives (cut = 0): no decision can be told apart from a coin flip then
        testable = cut > 0
        out["flip"] = {
            "fpr": fpr,
            "n_targets": len(order_targets),
            "mean_flip_members": float(np.mean(member_flips)),
            "share_flipping": float(np.mean(member_flips[positive] > 0)) if positive.any()
            else float("nan"),
            "coin_flip_share": float(np.mean(member_flips[positive] >= cut))
            if positive.any() and testable else float("nan"),
            "cutoff": float(cut),
            "n_positive": int(positive.sum()),
        }
    return out


def lm_epoch_sweep(seed, epochs=(1, 2, 4), n_pool=512, n_reference=16, n_targets=2,
                   n_jobs=None):
    """The attack when each model sees its paragraphs only a few times (the paper: once).

    For each number of epochs, references and targets (2-block character GPT-2, 16
    windows of 64 characters a step) are trained for that many passes over their half
    of the pool. Returns ``{epochs: {"steps", "auc", "loss_auc", "train_loss",
    "rho_last", "p_last"}}``; ``train_loss`` is the first target's mean loss per
    character on the pool (nats), ``rho_last`` the Spearman correlation of members'
    exposure with the step they were last seen.
    """
    from scipy.stats import spearmanr
    from sklearn.metrics import roc_auc_score

    pool, _ = lm_pool(seed, n_pool)
    half_chars = sum(len(d) + 1 for d in pool) / 2
    out = {}
    for ep in epochs:
        steps = max(1, round(ep * half_chars / (16 * 65)))
        lira, pool, _ = lm_lira_audit(seed, n_pool=n_pool, n_reference=n_reference,
                                      n_targets=n_targets, n_layer=2, max_steps=steps,
                                      n_jobs=n_jobs)
        membership = lira.target_keep_.astype(bool)
        scores = _pooled(lira, fix_variance=lira.fix_variance, online=lira.online)
        loss = lira.target_stats_.mean(axis=2).astype(np.float64)
        last, exposure = [], []
        for t, target in enumerate(lira.targets_):
            last += list(target.training_order_)
            exposure += scores[t, np.flatnonzero(membership[t])].tolist()
        rho, p = spearmanr(exposure, last)
        out[ep] = {
            "steps": int(steps),
            "auc": float(roc_auc_score(membership.ravel(), scores.ravel())),
            "loss_auc": float(roc_auc_score(membership.ravel(), loss.ravel())),
            "train_loss": float(-lira.targets_[0].score(pool)),
            "rho_last": float(rho),
            "p_last": float(p),
        }
    return out
