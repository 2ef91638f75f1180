"""
=====================================================================
GASP's loop and its ablation: ASR@k for four arms on a benign target
=====================================================================

:class:`~sklearn_cispa.redteam.GASPSuffixGenerator` runs the GASP loop: a generator
language model samples candidate suffixes for each goal prompt, a search chooses which
ones to send to the objective, and ORPO steps move the generator towards the suffixes
that scored best. The paper's ablation removes either part: without ORPO the generator
stays as it is; without latent Bayesian optimisation (LBO) the queries are a random
subset of the samples.

Everything here is benign and offline. The goals fall into four classes, and a goal's
suffix succeeds when it holds its class's colour keyword; a suffix without it gets
partial credit for the character-bigram closeness of its nearest word to the keyword
(a toy of GASP's rubric judge, which averages items graded in [0, 2]; a score at most 1
is a success). The generator is a one-block word-level GPT-2 built from a config and
trained for a few seconds on "<goal> <colour phrase>" sentences in which a goal's class
keyword is rare (3% of its goals' sentences), so its hidden states know the classes faintly. LBO
embeds each goal's candidates with the generator's own hidden states, conditioned on the
goal (:func:`~sklearn_cispa.language.hidden_state_embeddings`, passed to
:class:`~sklearn_cispa.redteam.LatentBOSuffixSearch` as a callable embedder). The four
arms spend the same 10 queries per held-out goal; the two ORPO arms also spend the same
training queries (3 rounds of 12 queries on 4 training goals, one per class) and take
the same ORPO steps (8 passes over each round's preference pairs, ``orpo_epochs=8``,
with ``lr=3e-3`` and ``orpo_lambda=0.1``); LBO makes one random query per goal, then
follows its GP (``n_initial_points=1``). A second model trained on other sentences
(where every keyword is as common as any colour) gives
the suffixes' perplexity, the paper's readability axis.

Two seeds keep the example short, so its curves are noisy; the user guide gives the
figures over held-out seeds (``sklearn_cispa.report._gasp_eval.loop_ablation``, the same
setting, LBO with one random initial query): on seeds 1000-1099, ASR@10 0.330 (full
loop) > 0.237 (no ORPO) > 0.233 (no LBO) > 0.150 (random candidates), standard errors
0.02; on seeds 1100-1199 0.305 > 0.260 > 0.253 > 0.182. Pooled over the 200 seeds, full
loop - no ORPO +0.069 (0.022, 3.1 SE) and no LBO - random +0.076 (0.020, 3.8 SE), but no
ORPO - no LBO is +0.006 (0.023): LBO alone and ORPO alone are level, the middle step is
not established. ORPO raises the suffixes' perplexity (27 and 12 against 10 and 5).
"""

import matplotlib.pyplot as plt
import numpy as np
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from sklearn_cispa.language import (
    TransformerLanguageModel,
    continuation_log_likelihoods,
    hidden_state_embeddings,
    sample_continuations,
)
from sklearn_cispa.redteam import (
    GASPSuffixGenerator,
    LatentBOSuffixSearch,
    RandomSubsetSearch,
    attack_success_at_k,
)

torch.set_num_threads(1)

# %%
# A benign generator and a reference model
# ----------------------------------------
COLOURS = ["river", "stone", "cloud", "maple", "quiet", "paper", "silver", "garden",
           "window", "lantern", "meadow", "harbor"]
PHRASES = ["with a {} tone", "in {} light", "under a {} sky", "like {} paint"]
GOALS = ["draw a cat", "paint a wall", "describe a room", "sketch a boat",
         "colour a kite", "design a cup", "plan a garden", "decorate a hall"]
KEYWORDS = ["amber", "cobalt", "teal", "indigo"]  # goal i is in class i % 4
RATE, LR = 0.03, 3e-3  # chosen on seeds 0-39 (user guide)


def documents(n, keyword_rate, seed):
    rng = np.random.RandomState(seed)
    out = []
    for _ in range(n):
        g = rng.randint(8)
        word = KEYWORDS[g % 4] if rng.rand() < keyword_rate else COLOURS[rng.randint(12)]
        out.append(f"{GOALS[g]} " + PHRASES[rng.randint(4)].format(word))
    return out


docs, ref_docs = documents(400, RATE, 0), documents(400, 1 / 13, 1)
words = sorted({w for d in docs + ref_docs for w in d.split()} | set(KEYWORDS))
vocab = {w: i for i, w in enumerate(["[UNK]", "<|endoftext|>", *words])}
backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]",
                                    eos_token="<|endoftext|>", bos_token="<|endoftext|>")


def word_lm(texts, seed):
    return TransformerLanguageModel(
        "gpt2", config=dict(n_layer=1, n_embd=32, n_head=2), tokenizer=tokenizer,
        block_size=16, max_steps=150, batch_size=16, lr=3e-3, random_state=seed,
    ).fit(texts)


generator, reference = word_lm(docs, 0), word_lm(ref_docs, 1)


def similarity(word, keyword):  # Dice coefficient of padded character bigrams
    a = [f"_{word}_"[i:i + 2] for i in range(len(word) + 1)]
    b = [f"_{keyword}_"[i:i + 2] for i in range(len(keyword) + 1)]
    return 2 * sum(min(a.count(g), b.count(g)) for g in set(a)) / (len(a) + len(b))


def objective(prompt):  # your authorised evaluation goes here
    goal = next(g for g in GOALS if prompt.startswith(g))
    keyword = KEYWORDS[GOALS.index(goal) % 4]
    suffix = [w for w in prompt[len(goal):].split() if w.isalpha()] or [""]
    if keyword in suffix:
        return 0.0  # success
    return (20 * (2 - min(max(similarity(w, keyword) for w in suffix), 0.9))) / 21


def lbo(objective, lm=generator, **params):
    """LBO over the hidden states of the generator ``lm``, the goal as prefix; one
    random initial query, then the GP."""
    def embed(candidates, goal):
        return hidden_state_embeddings(candidates, lm, prefix=goal + " ")
    return LatentBOSuffixSearch(objective, embedder=embed, n_initial_points=1, **params)


def rand(objective, lm=None, **params):
    return RandomSubsetSearch(objective, **params)


# %%
# The four arms
# -------------
train_goals, test_goals = GOALS[:4], GOALS[4:]
arms = {"full loop": (lbo, True), "no ORPO": (lbo, False),
        "no LBO": (rand, True), "random candidates": (rand, False)}
curves = {arm: [] for arm in arms}
perplexity = {arm: [] for arm in arms}
for seed in range(2):
    for arm, (search, orpo) in arms.items():
        lm = generator
        if orpo:
            gasp = GASPSuffixGenerator(generator, search=search(objective), n_rounds=3,
                                       n_candidates=32, n_queries=12, orpo_lambda=0.1,
                                       lr=LR, orpo_epochs=8, max_new_tokens=6,
                                       random_state=seed)
            lm = gasp.fit(train_goals, objective).generator_
        samples = sample_continuations(lm, [g + " " for g in test_goals], n_samples=64,
                                       max_new_tokens=6, random_state=10_000 + seed)
        sequences, queried = [], []
        for i, (goal, cands) in enumerate(zip(test_goals, samples)):
            cands = list(dict.fromkeys(" ".join(c.split()) for c in cands if c.strip()))
            found = search(objective, lm=lm, n_calls=10,
                           random_state=10 * seed + i).fit(cands, goal=goal)
            sequences.append([h["score"] for h in found.history_])
            queried += [(goal + " ", suffix) for suffix in found.scores_]
        curves[arm].append([attack_success_at_k(sequences, k) for k in range(1, 11)])
        ll, n = continuation_log_likelihoods(reference, [q[0] for q in queried],
                                             [q[1] for q in queried])
        perplexity[arm].append(float(np.exp(-float(ll.sum()) / float(n.sum()))))

# %%
# ASR@k against queries, and suffix perplexity
# --------------------------------------------
fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
for arm in arms:
    ax.plot(range(1, 11), np.mean(curves[arm], axis=0), marker="o", label=arm)
ax.set_xlabel("queries per held-out goal (k)")
ax.set_ylabel("ASR@k")
ax.set_ylim(0, 1.05)
ax.legend(fontsize=8)
ax.set_title("attack success on the toy class keyword target")
bx.bar(list(arms), [np.mean(perplexity[a]) for a in arms])
bx.set_ylabel("perplexity under the reference model")
bx.set_title("suffix perplexity (lower: more fluent)")
bx.tick_params(axis="x", labelsize=8)
fig.tight_layout()
plt.show()
