"""TransformerLanguageModel against plain torch on the same model (issue 33).

- ``TrainStepRatio``: seconds per training step of ``TransformerLanguageModel.fit`` over
  a plain torch loop (``AdamW``, the same GPT-2 model, batch and block size, no
  Trainer), measured side by side in one process: the estimator's per-step time is the
  difference of a ``2 S``-step and an ``S``-step fit (so that building the tokenizer,
  the model and the windows cancels); median over alternating repeats. Goal <= 1.3.
- ``ScoreRatio``: ``score_samples`` over a plain batched forward (``model(ids,
  attention_mask).logits`` on the same windows and batches), one process, median of
  alternating repeats. Goal <= 1.3.

The figures depend on the vocabulary: with the character tokenizer used here (about 20
symbols) the log-softmax of the scores is small beside the forward pass.
Under ``SKLEARN_CISPA_BENCH_SMOKE=1`` the sizes only check that the benchmarks work.
Measured 2026-12-05 (one run of each class's track method, 2 loaded cores): training
step 0.84x the plain AdamW loop, scoring 1.03x the plain batched forward.
"""

import time
import warnings

import numpy as np

from ._common import SEED, SMOKE, require

CONFIG = {"n_layer": 2, "n_embd": 64, "n_head": 4}
BATCH, BLOCK = (4, 16) if SMOKE else (16, 64)
STEPS = 2 if SMOKE else 10
REPEATS = 2 if SMOKE else 5


def _docs():
    rng = np.random.default_rng(SEED)
    symbols = list("abcdefghij klmnop.")
    return ["".join(rng.choice(symbols, size=200)) for _ in range(16 if SMOKE else 64)]


def _lm(steps):
    from sklearn_cispa.language import TransformerLanguageModel

    return TransformerLanguageModel(
        "gpt2",
        config=CONFIG,
        block_size=BLOCK,
        max_steps=steps,
        batch_size=BATCH,
        random_state=SEED,
    )


class _Base:
    timeout = 900
    unit = "ratio"

    def setup(self):
        require("transformers")
        import torch

        self._threads = torch.get_num_threads()
        torch.set_num_threads(1)
        self.docs = _docs()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.fitted = _lm(STEPS).fit(self.docs)

    def teardown(self):
        import torch

        torch.set_num_threads(self._threads)


def _alternating_ratio(ours, plain, repeats):
    """Median of ``ours() / plain()`` over ``repeats``, the order alternating each time."""
    ratios = []
    for r in range(repeats):
        if r % 2:
            b, a = ours(), plain()
        else:
            a, b = plain(), ours()
        ratios.append(b / a)
    return float(np.median(ratios))


def train_step_ratio(fitted, docs, steps=STEPS, repeats=REPEATS):
    """Median over ``repeats`` of (estimator seconds per step) / (plain loop seconds per
    step); the plain loop trains a copy of ``fitted``'s model on one batch of the same
    shape with ``torch.optim.AdamW``."""
    import copy

    import torch

    model0 = copy.deepcopy(fitted.model_)
    n_vocab = fitted.model_.config.vocab_size
    gen = torch.Generator().manual_seed(SEED)
    ids = torch.randint(0, n_vocab, (BATCH, BLOCK), generator=gen)
    mask = torch.ones_like(ids)

    def plain():
        model = copy.deepcopy(model0)
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
        start = time.perf_counter()
        for _ in range(steps):
            logits = model(input_ids=ids, attention_mask=mask).logits
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), ids.reshape(-1)
            )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return (time.perf_counter() - start) / steps

    def ours():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            _lm(steps).fit(docs)
            one = time.perf_counter() - start
            start = time.perf_counter()
            _lm(2 * steps).fit(docs)
            two = time.perf_counter() - start
        return (two - one) / steps

    return _alternating_ratio(ours, plain, repeats)


def score_ratio(fitted, docs, repeats=REPEATS):
    """Median over ``repeats`` of ``score_samples`` time over a plain batched forward on
    the same windows and batches (``4 * batch_size`` windows per forward)."""
    import torch

    model = fitted.model_
    windows, _ = fitted._windows(docs, fitted._adapter)
    step = 4 * int(fitted.batch_size)
    pad = fitted._adapter.eos
    batches = [
        fitted._batch(windows[i : i + step], "cpu", pad) for i in range(0, len(windows), step)
    ]

    def plain():
        start = time.perf_counter()
        with torch.no_grad():
            for ids, mask, _ in batches:
                model(input_ids=ids, attention_mask=mask).logits
        return time.perf_counter() - start

    def ours():
        start = time.perf_counter()
        fitted.score_samples(docs)
        return time.perf_counter() - start

    return _alternating_ratio(ours, plain, repeats)


class TrainStepRatio(_Base):
    """Training step of the estimator over a plain AdamW loop (goal <= 1.3)."""

    def track_ratio_train_step(self):
        return train_step_ratio(self.fitted, self.docs)


class ScoreRatio(_Base):
    """``score_samples`` over a plain batched forward (goal <= 1.3)."""

    def track_ratio_score(self):
        return score_ratio(self.fitted, self.docs * 2)


class ReproducibleFit(_Base):
    """Two fits with one ``random_state`` give the same weights (1.0 = bit for bit)."""

    unit = "score"

    def track_identical_weights(self):
        import torch

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            other = _lm(STEPS).fit(self.docs)
        same = all(
            torch.equal(a, b)
            for a, b in zip(self.fitted.model_.parameters(), other.model_.parameters())
        )
        return float(same)
