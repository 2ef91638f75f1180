"""The planted-canary benchmark of CriticalNeuronLocator, shared by its report row,
benchmark and tests (issue 21)."""

import time

import numpy as np

from sklearn_cispa.memorization import (
    CharMLPLanguageModel,
    CriticalNeuronLocator,
    make_canary_corpus,
    minimal_deactivation_set,
)


def canary_ci_setting():
    """The planted-canary setting at CI size (tests, full report row); see the user guide.

    Returns a dict of keyword arguments for :func:`train_canary_model`.
    """
    return dict(n_chars=20000, n_canaries=5, n_copies=40, heldout_chars=10000,
                max_epochs=8, alpha=1e-4)


def reference_ids(lm, docs, length=64, n_max=200):
    """Token ids of held-out documents cut into ``(n, length)`` reference sequences."""
    ids = np.concatenate([lm.encode(d + " ") for d in docs])
    n = min(len(ids) // length, n_max)
    if n < 1:
        raise ValueError("the reference documents are shorter than one sequence.")
    return ids[: n * length].reshape(n, length)


def train_canary_model(random_state, n_chars=20000, n_canaries=5, n_copies=40,
                       heldout_chars=10000, max_epochs=8, alpha=1e-4, hidden=256):
    """Corpus with planted canaries and the character model trained on it.

    Returns ``(lm, heldout_docs, canaries)``.
    """
    train, heldout, canaries = make_canary_corpus(
        n_chars=n_chars, n_canaries=n_canaries, n_copies=n_copies,
        heldout_chars=heldout_chars, random_state=random_state,
    )
    lm = CharMLPLanguageModel(hidden=hidden, max_epochs=max_epochs, alpha=alpha,
                              random_state=random_state).fit(train)
    return lm, heldout, canaries


def prefix_ids(lm, text):
    """Token ids of a prompt as the model's ``complete`` reads it (after the beginning
    token of a :class:`TransformerLanguageModel`; a window model has none)."""
    try:
        return lm.encode(text, add_special_tokens=True)
    except TypeError:  # CharMLPLanguageModel.encode(text)
        return lm.encode(text)


def canary_transformer_setting(quick=False):
    """The planted-canary setting of the transformer substrate (report row, ASV, tests).

    A 2-block character GPT-2 (n_embd 64, 4 heads, n_inner 256) built by
    :class:`TransformerLanguageModel` from its config with random initialisation, trained
    for 800 AdamW steps at lr 1e-3 (warm-up 50) on ``make_canary_corpus(20000 chars,
    5 canaries, 40 copies)``; quick: a 2000-character corpus, 90 steps at lr 6e-3 with
    shorter windows. Returns keyword arguments of :func:`train_canary_transformer`.
    """
    if quick:
        return dict(n_chars=2000, n_canaries=5, n_copies=25, heldout_chars=1000,
                    max_steps=90, block_size=40, batch_size=16, lr=6e-3, warmup_steps=10)
    return dict(n_chars=20000, n_canaries=5, n_copies=40, heldout_chars=10000,
                max_steps=800, lr=1e-3, warmup_steps=50)


def train_canary_transformer(random_state, n_chars=20000, n_canaries=5, n_copies=40,
                             heldout_chars=10000, max_steps=800, n_layer=2, n_embd=64,
                             n_head=4, n_inner=256, block_size=128, batch_size=32, lr=1e-3,
                             warmup_steps=50):
    """Corpus with planted canaries and a character GPT-2 trained on it.

    Returns ``(lm, heldout_docs, canaries)``; ``lm`` is a fitted
    :class:`~sklearn_cispa.language.TransformerLanguageModel`.
    """
    from sklearn_cispa.language import TransformerLanguageModel

    train, heldout, canaries = make_canary_corpus(
        n_chars=n_chars, n_canaries=n_canaries, n_copies=n_copies,
        heldout_chars=heldout_chars, random_state=random_state,
    )
    lm = TransformerLanguageModel(
        "gpt2", config=dict(n_layer=n_layer, n_embd=n_embd, n_head=n_head, n_inner=n_inner),
        block_size=block_size, max_steps=max_steps, batch_size=batch_size, lr=lr,
        warmup_steps=warmup_steps, random_state=random_state,
    ).fit(train)
    return lm, heldout, canaries


def locator_model(lm):
    """The torch module a locator hooks for a fitted language model."""
    return lm.module_ if hasattr(lm, "module_") else lm


def _extracted(lm, prefix, secret):
    return lm.complete(prefix, len(secret)) == secret


def _others_kept(lm, canaries, mine, before):
    """Fraction of the other canaries (memorised before) still extracted now."""
    others = [(p, s) for (p, s), b in zip(canaries, before, strict=True) if p != mine and b]
    if not others:
        return float("nan")
    return float(np.mean([_extracted(lm, p, s) for p, s in others]))


def activation_ranking(loc, result, budget):
    """Baseline (after Chang et al.): the ``budget`` units with the largest activation
    at the target positions, over all hooked layers, ranked by their raw activation."""
    z = result["z"]
    acts = []
    for layer in loc.layers_:
        # the raw activation is recovered from the score: a = mu + z * sigma
        strength = loc.mu_[layer] + z[layer] * loc.sigma_[layer]
        acts += [(float(v), layer, int(u)) for u, v in enumerate(strength)]
    acts.sort(key=lambda t: (-t[0], t[1], t[2]))
    return [(layer, unit) for _, layer, unit in acts[:budget]]


def minimal_zero_set(lm, prefix, secret):
    """The exact smallest zeroing set of a window model: an alias of
    :func:`sklearn_cispa.memorization.minimal_deactivation_set` (``scale=0``), kept for
    the report and its tests. Returns ``(size, units)``."""
    return minimal_deactivation_set(lm, prefix, secret)


def _editing_baseline(lm, heldout, canaries, prefix, secret, before, base_ppl, budget,
                      n_steps=30, lr=1e-4):
    """Gradient ascent on one canary (language.gradient_ascent_unlearning), step by step.

    Returns, at the largest step whose held-out perplexity change is within ``budget``
    (the cost of the neuron mask), whether the canary is still extracted and the share
    of the other canaries kept; and the first step at which the canary is no longer
    extracted, with its perplexity change (nan when it never is within ``n_steps``).
    """
    from sklearn_cispa.language import gradient_ascent_unlearning

    log = []

    def record(step, model):
        ppl = model.perplexity(heldout) / base_ppl - 1.0
        extracted = _extracted(model, prefix, secret)
        log.append(dict(step=step, ppl=ppl, extracted=extracted,
                        kept=_others_kept(model, canaries, prefix, before)))
        # stop once forgotten and past the budget (nothing more to learn)
        return (not extracted and ppl > budget) or ppl > max(10 * budget, 0.5)

    gradient_ascent_unlearning(lm, prefix, secret, n_steps=n_steps, lr=lr, callback=record)
    within = [e for e in log if e["ppl"] <= budget]
    at = within[-1] if within else None
    forgot = next((e for e in log if not e["extracted"]), None)
    return dict(
        ga_steps=at["step"] if at else 0,
        ga_extracted_after=at["extracted"] if at else True,
        ga_others_kept=at["kept"] if at else 1.0,
        ga_ppl_change=at["ppl"] if at else 0.0,
        ga_forget_steps=forgot["step"] if forgot else float("nan"),
        ga_forget_ppl_change=forgot["ppl"] if forgot else float("nan"),
        ga_forget_others_kept=forgot["kept"] if forgot else float("nan"),
    )


def canary_benchmark(lm, heldout, canaries, n_controls=5, random_state=0, locator=None,
                     minimal=True, greedy=False, editing=False, editing_lr=1e-4,
                     editing_steps=30):
    """Localise every canary and measure the intervention.

    Returns a dict with the fitted ``locator``, the per-canary ``rows`` (units kept, theta,
    extraction after deactivation, retention of the other canaries, held-out perplexity
    change, matched random controls and their perplexity change, the activation-ranking
    baseline at the same budget and, with ``minimal``, the exact smallest zeroing set of
    :func:`minimal_zero_set`: its size ``min_units`` and perplexity change; with
    ``greedy``, the greedy margin search ``method="greedy"`` as ``greedy_*``; with
    ``editing``, gradient ascent on the canary at the mask's perplexity cost as ``ga_*``)
    and the ``scale_curve`` (extraction rate of all canaries under the union of the
    located units, and under a matched random control, for scales 0..1).
    """
    X_ref = reference_ids(lm, heldout)
    t0 = time.perf_counter()
    loc = (locator or CriticalNeuronLocator(locator_model(lm), random_state=random_state)
           ).fit(X_ref)
    fit_s = time.perf_counter() - t0
    prefixes = [prefix_ids(lm, p) for p, _ in canaries]
    targets = [lm.encode(s) for _, s in canaries]
    t0 = time.perf_counter()
    results = loc.localize(prefixes, targets)
    localize_s = (time.perf_counter() - t0) / len(canaries)
    base_ppl = lm.perplexity(heldout)
    before = [r["memorized_before"] for r in results]
    rows = []
    for (prefix, secret), res in zip(canaries, results, strict=True):
        row = dict(canary=prefix.split(" ")[0], memorized=res["memorized_before"],
                   localized=res["localized"], units=len(res["neurons"]),
                   theta=res["theta"], n_oracle_calls=res["n_oracle_calls"])
        if minimal and res["memorized_before"]:
            row["min_units"], min_set = minimal_zero_set(lm, prefix, secret)
            if min_set:
                with loc.deactivate(min_set):
                    row["min_set_extracted_after"] = _extracted(lm, prefix, secret)
                    row["min_set_ppl_change"] = lm.perplexity(heldout) / base_ppl - 1.0
        if res["localized"]:
            with loc.deactivate(res["neurons"]):
                row["extracted_after"] = _extracted(lm, prefix, secret)
                row["others_kept"] = _others_kept(lm, canaries, prefix, before)
                row["ppl_change"] = lm.perplexity(heldout) / base_ppl - 1.0
            controls, control_ppl = [], []
            for k in range(n_controls):
                control = loc.random_control(res["neurons"], random_state=random_state + k)
                with loc.deactivate(control):
                    controls.append(_extracted(lm, prefix, secret))
                    control_ppl.append(lm.perplexity(heldout) / base_ppl - 1.0)
            row["control_extracted"] = float(np.mean(controls))
            row["control_ppl_change"] = float(np.mean(control_ppl))
            ranked = activation_ranking(loc, res, len(res["neurons"]))
            with loc.deactivate(ranked):
                row["act_rank_extracted_after"] = _extracted(lm, prefix, secret)
                row["act_rank_others_kept"] = _others_kept(lm, canaries, prefix, before)
                row["act_rank_ppl_change"] = lm.perplexity(heldout) / base_ppl - 1.0
            if editing:
                row.update(_editing_baseline(lm, heldout, canaries, prefix, secret, before,
                                             base_ppl, max(row["ppl_change"], 0.0),
                                             n_steps=editing_steps, lr=editing_lr))
        rows.append(row)
    if greedy:
        params = {**loc.get_params(deep=False), "method": "greedy"}
        gloc = type(loc)(**params).fit(X_ref)
        for row, (prefix, secret), res in zip(rows, canaries,
                                              gloc.localize(prefixes, targets), strict=True):
            if not res["localized"]:
                row["greedy_localized"] = False
                continue
            row.update(greedy_localized=True, greedy_units=len(res["neurons"]),
                       greedy_oracle_calls=res["n_oracle_calls"])
            with gloc.deactivate(res["neurons"]):
                row["greedy_extracted_after"] = _extracted(lm, prefix, secret)
                row["greedy_others_kept"] = _others_kept(lm, canaries, prefix, before)
                row["greedy_ppl_change"] = lm.perplexity(heldout) / base_ppl - 1.0
    union = loc.neurons_
    control_union = loc.random_control(union, random_state=random_state)
    scales = (0.0, 0.25, 0.5, 0.75, 1.0)
    curve = {"located": [], "random": []}
    for s in scales:
        for key, units in (("located", union), ("random", control_union)):
            with loc.deactivate(units, scale=s):
                curve[key].append(float(np.mean([_extracted(lm, p, t) for p, t in canaries])))
    restored = float(np.mean([_extracted(lm, p, t) for p, t in canaries]))
    return dict(locator=loc, rows=rows, scales=scales, scale_curve=curve,
                restored_rate=restored, base_ppl=base_ppl, fit_s=fit_s,
                localize_s=localize_s)


def nothing_memorised_result(metric, n_seeds, settings, target, figures):
    """The report row when no seed memorises a canary: value 0 (no stopped canary), no
    baseline, verdict "not reproduced" with the reason (shared by both neurons rows)."""
    from sklearn_cispa.report import ExperimentResult

    return ExperimentResult(
        metric=metric,
        value=0.0,
        value_sd=0.0,
        peer="activation ranking at the same unit budget (in-library baseline)",
        peer_value=float("nan"),  # nothing localised: no baseline at its budget
        n_runs=n_seeds,
        settings=settings,
        details=(f"no canary memorised in any of the {n_seeds} seeds: nothing to "
                 "localise (the value 0 counts no stopped canary)"),
        target=target,
        verdict=(f"Does not reproduce the target: none of the {n_seeds} seeds "
                 "memorises a canary at this setting, so there is nothing to localise "
                 "(train longer or plant more copies)."),
        reproduced=False,
        outcome="not reproduced",
        figures=figures,
    )
