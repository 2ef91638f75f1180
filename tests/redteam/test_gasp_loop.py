"""GASPSuffixGenerator and the numpy GP of the search (issue 36)."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_cispa.language import TransformerLanguageModel
from sklearn_cispa.redteam import (
    GASPSuffixGenerator,
    RandomSubsetSearch,
    ToyKeywordTarget,
    ToyRubricJudge,
)
from sklearn_cispa.redteam._search import MaternGP, _median_distance, default_gp

pytest.importorskip("transformers")

DOCS = [
    f"draw a cat {w}" for w in ("in teal light", "in grey light", "with a red hat", "in soft blue")
] * 4


def objective(prompt):
    return ToyRubricJudge()(prompt, ToyKeywordTarget()(prompt))


@pytest.fixture(scope="module")
def lm():
    return TransformerLanguageModel(
        "gpt2",
        config=dict(n_layer=1, n_embd=16, n_head=2),
        block_size=32,
        max_steps=40,
        batch_size=8,
        lr=3e-3,
        random_state=0,
    ).fit(DOCS)


def small(lm, **kw):
    params = dict(
        n_rounds=2, n_candidates=8, n_queries=3, max_new_tokens=14, lr=1e-3, random_state=0
    )
    params.update(kw)
    return GASPSuffixGenerator(lm, **params)


def test_matern_gp_matches_scikit_learn_below_five_points():
    rng = np.random.RandomState(0)
    Z, y = rng.normal(size=(12, 3)), rng.uniform(size=4)
    ref = default_gp(Z, 4, 0).fit(Z[:4], y)
    ours = MaternGP(_median_distance(Z)).fit(Z[:4], y)
    mu_r, sd_r = ref.predict(Z, return_std=True)
    mu, sd = ours.predict(Z, return_std=True)
    np.testing.assert_allclose(mu, mu_r, atol=1e-8)
    # scikit-learn's std includes the white noise (1e-3, in normalised units)
    np.testing.assert_allclose(sd**2 + 1e-3 * y.std() ** 2, sd_r**2, atol=1e-8)


def test_loop_bookkeeping_and_reproducibility(lm):
    gasp = small(lm).fit(["draw a cat"], objective)
    assert gasp.n_queries_ == sum(h["n_queries"] for h in gasp.history_) <= 6
    assert gasp.n_queries_ == len(gasp.scores_[0])
    assert [h["round"] for h in gasp.history_] == [0, 1]
    again = small(lm).fit(["draw a cat"], objective)
    assert again.scores_ == gasp.scores_
    assert again.generate(["draw a dog"], k=3) == gasp.generate(["draw a dog"], k=3)
    restored = pickle.loads(pickle.dumps(gasp))
    assert restored.generate(["draw a dog"], k=3) == gasp.generate(["draw a dog"], k=3)
    # the user's generator is not trained in place
    assert lm.score_samples(DOCS[:1]) == pytest.approx(
        clone(lm).set_params().fit(DOCS).score_samples(DOCS[:1])
    )


def test_random_search_arm_runs(lm):
    gasp = small(lm, search=RandomSubsetSearch(objective), n_rounds=1).fit(
        ["draw a cat"], objective
    )
    assert gasp.n_queries_ == 3


def test_bad_input(lm):
    with pytest.raises(TypeError, match="single str"):
        small(lm).fit("draw a cat", objective)
    with pytest.raises(ValueError, match="empty"):
        small(lm).fit([], objective)
    with pytest.raises(ValueError, match="fitted"):
        small(clone(lm)).fit(["draw a cat"], objective)
    with pytest.raises(ValueError, match="finite"):
        small(lm).fit(["draw a cat"], lambda p: float("nan"))

    def boom(prompt):
        raise KeyError("down")

    with pytest.raises(RuntimeError, match="raised KeyError"):
        small(lm).fit(["draw a cat"], boom)
    with pytest.raises(ValueError, match="orpo_lambda"):
        small(lm, orpo_lambda=float("nan")).fit(["draw a cat"], objective)


def test_bad_input_more(lm):
    # objective returning a wrong shape or a non-number: named, not broadcast or cast
    with pytest.raises((TypeError, ValueError), match="real number|finite"):
        small(lm).fit(["draw a cat"], lambda p: np.array([0.5, 1.0]))
    with pytest.raises(TypeError, match="real number"):
        small(lm).fit(["draw a cat"], lambda p: "low")
    with pytest.raises(ValueError, match="finite"):
        small(lm).fit(["draw a cat"], lambda p: float("inf"))
    with pytest.raises(TypeError, match="objective must be a callable"):
        small(lm).fit(["draw a cat"], 0.5)
    with pytest.raises(TypeError, match="needs an objective"):
        small(lm).fit(["draw a cat"])
    with pytest.raises(TypeError, match=r"prompts\[1\] is int"):
        small(lm).fit(["draw a cat", 3], objective)
    with pytest.raises(ValueError, match="n_rounds"):
        small(lm, n_rounds=0).fit(["draw a cat"], objective)
    with pytest.raises(ValueError, match="n_queries"):
        small(lm, n_queries=0).fit(["draw a cat"], objective)
    with pytest.raises(ValueError, match="lr"):
        small(lm, lr=float("inf")).fit(["draw a cat"], objective)
    with pytest.raises(ValueError, match="not representable|diverg|not finite"):
        small(lm, lr=1e300).fit(["draw a cat"], objective)
    with pytest.raises(TypeError, match="search must take an objective"):
        small(lm, search=clone(lm)).fit(["draw a cat"], objective)
    fitted = small(lm, n_rounds=1).fit(["draw a cat"], objective)
    for k in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="k must be an integer"):
            fitted.generate(["draw a dog"], k=k)
    with pytest.raises(ValueError, match="empty"):
        fitted.generate([], k=2)
    with pytest.raises(TypeError, match="single str"):
        fitted.generate("draw a dog", k=2)


def test_orpo_epochs_sets_the_update_length(lm):
    # orpo_epochs passes over each round's pairs (issue 36): the first round samples and
    # queries the same suffixes whatever the passes, and more passes move the generator
    # further towards the preferred suffixes
    one = small(lm, n_rounds=1, n_queries=6, orpo_epochs=1).fit(["draw a cat"], objective)
    six = small(lm, n_rounds=1, n_queries=6, orpo_epochs=6).fit(["draw a cat"], objective)
    assert one.scores_ == six.scores_
    h1, h6 = one.history_[0], six.history_[0]
    assert h1["n_pairs"] == h6["n_pairs"] > 0
    assert h1["margin_before"] == pytest.approx(h6["margin_before"])
    assert h6["margin_after"] - h6["margin_before"] > h1["margin_after"] - h1["margin_before"]
    for bad in (0, 1.5):
        with pytest.raises(ValueError, match="orpo_epochs"):
            small(lm, orpo_epochs=bad).fit(["draw a cat"], objective)


def test_ranked_pairs_add_the_unqueried_candidates(lm):
    # pairs="ranked" (issue 36): the same queries as "queried" (pairs come after the
    # search), more pairs from the unqueried candidates ranked by the GP's posterior
    # mean; without a latent space (random search) it is "queried"
    from sklearn_cispa.redteam import LatentBOSuffixSearch
    from sklearn_cispa.redteam._gasp import _surrogate_ranking

    kw = dict(n_rounds=1, n_candidates=12, n_queries=3)
    q = small(lm, **kw).fit(["draw a cat"], objective)
    r = small(lm, pairs="ranked", **kw).fit(["draw a cat"], objective)
    assert r.scores_ == q.scores_
    assert r.history_[0]["n_pairs"] >= q.history_[0]["n_pairs"]
    cands = ["teal light", "grey light", "red hat", "soft blue", "amber glow", "pale sky"]
    est = LatentBOSuffixSearch(objective, n_calls=3, random_state=0).fit(cands, goal="a cat")
    ranked = sorted((s, c) for c, s in est.scores_.items())
    pool = _surrogate_ranking(est, ranked)
    assert sorted(c for _, c in pool) == sorted(cands)
    assert [v for v, _ in pool] == sorted(v for v, _ in pool)
    assert [(s, c) for s, c in pool if c in est.scores_] == ranked
    rnd = RandomSubsetSearch(objective, n_calls=3, random_state=0).fit(cands, goal="a cat")
    ranked = sorted((s, c) for c, s in rnd.scores_.items())
    assert _surrogate_ranking(rnd, ranked) == ranked
    a = small(lm, search=RandomSubsetSearch(objective), **kw).fit(["draw a cat"], objective)
    b = small(lm, search=RandomSubsetSearch(objective), pairs="ranked", **kw).fit(
        ["draw a cat"], objective
    )
    assert a.history_ == b.history_
    with pytest.raises(ValueError, match="pairs"):
        small(lm, pairs="all").fit(["draw a cat"], objective)


def test_generate_before_fit_and_objective_from_search(lm):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        small(lm).generate(["draw a dog"], k=2)
    # fit(prompts) with the search's own objective equals fit(prompts, objective)
    a = small(lm, search=RandomSubsetSearch(objective), n_rounds=1).fit(["draw a cat"])
    b = small(lm, search=RandomSubsetSearch(objective), n_rounds=1).fit(
        ["draw a cat"], objective
    )
    assert a.scores_ == b.scores_


@pytest.mark.slow
def test_loop_ablation_bookkeeping():
    # the four arms of the paper's ablation (issue 36) spend the same target queries
    from sklearn_cispa.report._gasp_eval import ARMS, ablation_summary, loop_ablation

    res = loop_ablation(seeds=range(1), n_rounds=2, n_candidates=8, n_queries=3,
                        eval_candidates=8)
    assert set(res) == set(ARMS)
    for arm in ARMS:
        curve = res[arm]["curve"][0]
        assert curve.shape == (10,) and np.all(np.diff(curve) >= 0)
        assert res[arm]["asr"][0] == curve[-1]
        assert np.isfinite(res[arm]["perplexity"][0]) and res[arm]["perplexity"][0] >= 1
    # ORPO arms: 2 rounds x 4 training goals x 3 queries; the others train on none
    assert res["full loop"]["train_queries"][0] == res["no LBO"]["train_queries"][0] == 24
    assert res["no ORPO"]["train_queries"][0] == res["random candidates"]["train_queries"][0] == 0
    assert ablation_summary(res)["full loop"]["n_seeds"] == 1


def test_graded_keyword_objective():
    # the graded, goal-dependent toy judge (issue 36): success only on the goal's own
    # keyword, partial credit (a score in (1, 2)) that rises with the nearest word's
    # character-bigram similarity to it, 2-ish for an unrelated suffix
    from sklearn_cispa.report._gasp_eval import GradedKeywordObjective, word_similarity

    assert word_similarity("amber", "amber") == 1.0
    assert word_similarity("stone", "amber") == 0.0 < word_similarity("paper", "amber")
    assert word_similarity("paper", "amber") < word_similarity("ember", "amber") < 1
    obj = GradedKeywordObjective({"draw a cat": "amber", "sketch a boat": "cobalt"})
    assert obj("draw a cat with a amber tone") == 0.0
    assert obj("sketch a boat with a amber tone") > 1.0  # another goal's keyword fails
    assert obj("sketch a boat in cobalt light") == 0.0
    near, mid, far = (obj(f"draw a cat in {w} light") for w in ("ember", "paper", "stone"))
    assert 1.0 < near < mid < far <= 2.0
    # the keyword in the goal itself does not count, only the suffix's words
    assert GradedKeywordObjective({"amber cat": "amber"})("amber cat in stone light") > 1.0
    with pytest.raises(TypeError):
        obj(3)
    with pytest.raises(ValueError, match="binary"):
        from sklearn_cispa.report._gasp_eval import loop_ablation

        loop_ablation(seeds=range(1), objective="loud")


def test_class_keyword_objective_and_documents():
    # the class target (issue 36): a goal's class sets its keyword; partial credit as in
    # GradedKeywordObjective; the documents pair goals with their own class's keyword
    from sklearn_cispa.report._gasp_eval import (
        CLASS_KEYWORDS,
        GOAL_CLASSES,
        GOALS,
        ClassKeywordObjective,
        class_documents,
    )

    obj = ClassKeywordObjective()
    for goal, c in zip(GOALS, GOAL_CLASSES):
        assert obj(f"{goal} with a {CLASS_KEYWORDS[c]} tone") == 0.0
        other = CLASS_KEYWORDS[(c + 1) % len(CLASS_KEYWORDS)]
        assert 1.0 < obj(f"{goal} with a {other} tone") <= 2.0
    alt = ClassKeywordObjective(class_keywords=("olive", "coral", "amber", "cyan"))
    assert alt("draw a cat in olive light") == 0.0 < 1.0 < alt("draw a cat in amber light")
    with pytest.raises(ValueError, match="class"):
        ClassKeywordObjective({"draw a cat": 5})
    docs = class_documents(2000, 0.5, 0)
    assert docs == class_documents(2000, 0.5, 0)
    for d in docs:
        goal = next(g for g in GOALS if d.startswith(g))
        kws = [k for k in CLASS_KEYWORDS if k in d.split()]
        assert kws in ([], [CLASS_KEYWORDS[GOAL_CLASSES[GOALS.index(goal)]]])
    rate = np.mean([any(k in d.split() for k in CLASS_KEYWORDS) for d in docs])
    assert abs(rate - 0.5) < 0.05


def test_family_keyword_objective_and_documents():
    # the family target (issue 36): success only on the goal's class keyword; partial
    # credit (family_credit on the compliance items) only for that keyword's family
    # words; every other word, another class's keyword or family included, no credit;
    # the documents place a class's keyword and family words only in its goals' contexts
    from sklearn_cispa.report._gasp_eval import (
        CLASS_FAMILIES,
        CLASS_KEYWORDS,
        GOAL_CLASSES,
        GOALS,
        WORDS,
        FamilyKeywordObjective,
        family_documents,
    )

    obj = FamilyKeywordObjective()
    assert pickle.loads(pickle.dumps(obj))("draw a cat in honey light") == obj(
        "draw a cat in honey light"
    )
    none = 20.0 * 2.0 / 21.0
    for goal, c in zip(GOALS, GOAL_CLASSES):
        other = (c + 1) % len(CLASS_KEYWORDS)
        assert obj(f"{goal} with a {CLASS_KEYWORDS[c]} tone") == 0.0
        for w in CLASS_FAMILIES[c]:
            assert obj(f"{goal} with a {w} tone") == pytest.approx(20.0 * 1.5 / 21.0)
            assert obj(f"{goal} with a {w} {CLASS_KEYWORDS[c]} tone") == 0.0
        for w in (CLASS_KEYWORDS[other], *CLASS_FAMILIES[other], "ember", "paper"):
            assert obj(f"{goal} with a {w} tone") == pytest.approx(none)
    # the credit is a parameter; success stays at most 1, partial credit above 1
    strong = FamilyKeywordObjective(family_credit=1.1)
    assert 1.0 < strong("draw a cat in golden light") < obj("draw a cat in golden light")
    # the keyword or a family word in the goal itself does not count
    goals = {"amber cat": 0, "honey cat": 0}
    fam = FamilyKeywordObjective(goals)
    assert fam("amber cat in stone light") == fam("honey cat in stone light") == (
        pytest.approx(none)
    )
    with pytest.raises(TypeError):
        obj(3)
    with pytest.raises(ValueError, match="families"):
        FamilyKeywordObjective(class_families=CLASS_FAMILIES[:3])
    with pytest.raises(ValueError, match="distinct"):
        FamilyKeywordObjective(class_families=(("honey",), ("honey",), ("a",), ("b",)))
    with pytest.raises(ValueError, match="distinct"):
        FamilyKeywordObjective(class_families=(("cobalt",), ("x",), ("y",), ("z",)))
    with pytest.raises(ValueError, match="family_credit"):
        FamilyKeywordObjective(family_credit=2.0)
    # no family word is a plain word, a keyword or a template word
    family = {w for f in CLASS_FAMILIES for w in f}
    assert not family & (set(WORDS) | set(CLASS_KEYWORDS))
    docs = family_documents(4000, 0.1, 0.3, 0)
    assert docs == family_documents(4000, 0.1, 0.3, 0)
    kw_rate = fam_rate = 0.0
    for d in docs:
        goal = next(g for g in GOALS if d.startswith(g))
        c = GOAL_CLASSES[GOALS.index(goal)]
        words = set(d[len(goal):].split())
        assert not words & (set(CLASS_KEYWORDS) - {CLASS_KEYWORDS[c]})
        assert not words & (family - set(CLASS_FAMILIES[c]))
        kw_rate += CLASS_KEYWORDS[c] in words
        fam_rate += bool(words & set(CLASS_FAMILIES[c]))
    assert abs(kw_rate / len(docs) - 0.1) < 0.02
    assert abs(fam_rate / len(docs) - 0.3) < 0.03
    with pytest.raises(ValueError, match="family_rate"):
        family_documents(10, 0.6, 0.6, 0)


@pytest.mark.slow
def test_loop_ablation_order_on_the_class_target():
    # Regression guard (the order is our own output on seeds 0-39, the seeds that chose
    # the setting; issue 36): at loop_ablation's defaults (class keyword target, LBO over
    # the generator's hidden states with 1 random initial query, 3 rounds, ORPO with 8
    # passes over each round's pairs, lr 3e-3, orpo_lambda 0.1) ASR@10 orders full loop
    # > no ORPO > no LBO > random candidates (0.294, 0.231, 0.163, 0.131 there). Seeds
    # 0-9 alone do not give it (0.300, 0.325, 0.150, 0.100: the first step reverses), so
    # the guard runs all 40. The held-out figures and which steps are resolved are in the
    # user guide.
    from sklearn_cispa.report._gasp_eval import ARMS, ablation_summary, loop_ablation

    summ = ablation_summary(loop_ablation(seeds=range(40)))
    asr = [summ[a]["asr"][0] for a in ARMS]
    assert asr[0] > asr[1] > asr[2] > asr[3], dict(zip(ARMS, asr))


def _record_word_lms(monkeypatch):
    """Replace ``_gasp_eval._word_lm`` by a recorder of its calls ``(docs, tokenizer,
    seed, config, max_steps)`` that stops ``loop_ablation`` once the generator and the
    reference model are asked for (with RuntimeError("stop")); returns the list."""
    from sklearn_cispa.report import _gasp_eval

    calls = []

    def fake(docs, tok, seed, config=None, max_steps=150):
        calls.append((docs, tok, seed, config, max_steps))
        if len(calls) == 2:
            raise RuntimeError("stop")

    monkeypatch.setattr(_gasp_eval, "_word_lm", fake)
    return calls


def test_loop_ablation_family_documents(monkeypatch):
    # objective="family" (issue 36): the generator learns from family_documents at the
    # given rates, the reference model from documents where the keyword and each family
    # word are as common as any colour word; the vocabulary holds every family word
    from sklearn_cispa.report import _gasp_eval

    calls = _record_word_lms(monkeypatch)
    with pytest.raises(RuntimeError, match="stop"):
        _gasp_eval.loop_ablation(seeds=range(1), objective="family", family_rate=0.2,
                                 keyword_rate=0.05)
    (docs, tok, seed, _, _), (ref_docs, _, ref_seed, _, _) = calls
    assert (seed, ref_seed) == (0, 1)
    assert docs == _gasp_eval.family_documents(400, 0.05, 0.2, 0)
    assert ref_docs == _gasp_eval.family_documents(400, 1 / 16, 3 / 16, 1)
    vocab = tok.get_vocab()
    assert all(w in vocab for f in _gasp_eval.CLASS_FAMILIES for w in f)


def test_loop_ablation_generator_size_passthrough(monkeypatch):
    # the opt-in generator size (issue 36): generator_config and generator_steps reach
    # the generator only; the reference model keeps the default size; a short fit
    # honours both
    from sklearn_cispa.report import _gasp_eval

    calls = _record_word_lms(monkeypatch)
    cfg = {"n_layer": 2, "n_embd": 64, "n_head": 2}
    with pytest.raises(RuntimeError, match="stop"):
        _gasp_eval.loop_ablation(seeds=range(1), generator_config=cfg, generator_steps=7)
    assert [c[2:] for c in calls] == [(0, cfg, 7), (1, None, 150)]
    calls.clear()
    with pytest.raises(RuntimeError, match="stop"):
        _gasp_eval.loop_ablation(seeds=range(1))
    assert [c[2:] for c in calls] == [(0, None, 150), (1, None, 150)]
    monkeypatch.undo()

    docs = _gasp_eval.class_documents(20, 0.1, 0)
    lm = _gasp_eval._word_lm(docs, _gasp_eval.word_tokenizer(docs), 0, config=cfg,
                             max_steps=3)
    assert lm.model_.config.n_embd == 64 and lm.model_.config.n_layer == 2
    assert lm.n_steps_ == 3
