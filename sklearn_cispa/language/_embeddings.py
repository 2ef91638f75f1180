"""Mean-pooled hidden states of a fitted language model: text embeddings (issue 36).

The red-teaming field's latent Bayesian optimisation can embed candidate suffixes with
the generator's own hidden states; this module knows nothing of it.
"""

import numbers

import numpy as np
from sklearn.utils._param_validation import HasMethods, Interval, validate_params

from sklearn_cispa.language._generation import _check_lm, _position_limit, _texts
from sklearn_cispa.language._tokenizer import _pad_rows
from sklearn_cispa.utils import eval_mode

__all__ = ["hidden_state_embeddings"]


@validate_params(
    {
        "texts": [list, tuple],
        "lm": [HasMethods(["encode", "decode"])],
        "prefix": [str],
        "layer": [Interval(numbers.Integral, None, None, closed="neither")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def hidden_state_embeddings(texts, lm, prefix="", layer=-1, batch_size=64):
    """Mean-pooled hidden states of each text under a fitted language model.

    Every text is read after the beginning token (where the tokenizer has one) and the
    tokens of ``prefix``, as :func:`continuation_log_likelihoods` reads a continuation;
    the hidden states of the model's ``layer`` at the text's own tokens are averaged
    (the beginning token, the prefix and the padding are left out of the mean). Texts
    are run in batches of ``batch_size``, padded on the right with an attention mask, so
    that the result does not depend on the batch (up to float rounding). The model is
    scored in eval mode, without gradients.

    Parameters
    ----------
    texts : list of str
        The texts to embed; each must have at least one token.
    lm : TransformerLanguageModel
        A fitted model.
    prefix : str, default=""
        Context every text is conditioned on (for example a goal prompt followed by a
        space); its hidden states are not pooled. If a prefix and a text together
        exceed the model's positions, the prefix is cut from the left.
    layer : int, default=-1
        Which hidden states: 0 is the token embeddings, ``i`` the output of block
        ``i``, negative values count from the last (-1: the model's final hidden
        states, as ``transformers`` returns them, after GPT-2's final layer norm).
    batch_size : int, default=64
        Texts per forward pass.

    Returns
    -------
    embeddings : ndarray of shape (n_texts, hidden_size), float64
        The mean hidden state of each text's tokens.

    Examples
    --------
    >>> from sklearn_cispa.language import TransformerLanguageModel, hidden_state_embeddings
    >>> lm = TransformerLanguageModel(
    ...     "gpt2", config=dict(n_layer=1, n_embd=32, n_head=2), block_size=32,
    ...     max_steps=50, batch_size=8, lr=3e-3, random_state=0
    ... ).fit(["the cat sat.", "the dog sat."] * 8)
    >>> E = hidden_state_embeddings(["cat sat.", "dog", "cat sat."], lm, prefix="the ")
    >>> E.shape, bool(abs(E[0] - E[2]).max() < 1e-12)
    ((3, 32), True)
    """
    import torch

    adapter = _check_lm(lm)
    texts = _texts("texts", texts)
    if not texts:
        raise ValueError("texts is empty: pass at least one text to embed")
    model = lm.model_
    n_hidden = int(getattr(model.config, "num_hidden_layers", None)
                   or getattr(model.config, "n_layer", 0))
    if n_hidden and not -(n_hidden + 1) <= layer <= n_hidden:
        raise ValueError(
            f"layer={layer} is out of range: the model has {n_hidden} blocks, so layer "
            f"must be in [{-(n_hidden + 1)}, {n_hidden}]"
        )
    head = [adapter.bos] if adapter.bos is not None else []
    head = head + [int(i) for i in lm.encode(prefix)]
    limit = _position_limit(lm)
    rows, starts = [], []
    for i, text in enumerate(texts):
        own = [int(t) for t in lm.encode(text)]
        if not own:
            raise ValueError(
                f"texts[{i}] ({text!r}) has no token to embed: pass non-empty texts"
            )
        if limit is not None and len(own) > limit:
            raise ValueError(
                f"texts[{i}] has {len(own)} tokens, more than the model's {limit} positions"
            )
        ctx = head
        if limit is not None and len(ctx) + len(own) > limit:
            ctx = ctx[len(ctx) + len(own) - limit:]
        rows.append(ctx + own)
        starts.append(len(ctx))
    device = next(model.parameters()).device
    pad = adapter.eos if adapter.eos is not None else 0
    out = []
    with eval_mode(model), torch.no_grad():
        for lo in range(0, len(rows), int(batch_size)):
            chunk = rows[lo:lo + int(batch_size)]
            first = starts[lo:lo + int(batch_size)]
            ids, mask = _pad_rows(chunk, pad)
            pool = np.zeros(ids.shape, dtype=np.float64)
            for j, (r, s) in enumerate(zip(chunk, first)):
                pool[j, s: len(r)] = 1.0 / (len(r) - s)
            res = model(input_ids=torch.as_tensor(ids, device=device),
                        attention_mask=torch.as_tensor(mask, device=device),
                        output_hidden_states=True)
            hidden = res.hidden_states[int(layer)].double().cpu().numpy()
            out.append(np.einsum("bt,bth->bh", pool, hidden))
    E = np.concatenate(out, axis=0)
    if not np.all(np.isfinite(E)):
        raise ValueError("the model's hidden states are not finite")
    return E
