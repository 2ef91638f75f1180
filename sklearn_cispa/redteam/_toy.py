"""A benign, deterministic toy harness for the suffix searches (spec 3.6)."""

import re
from numbers import Integral

from scipy.special import expit
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

_WORD = re.compile(r"[a-z]+")


class _LandscapeObjective:
    """Picklable objective of a toy landscape: the candidate's score, read from the prompt."""

    def __init__(self, scores):
        self.scores = dict(scores)

    def __call__(self, prompt):
        if prompt in self.scores:
            return self.scores[prompt]
        last = prompt.rsplit(" ", 1)[-1]
        if last in self.scores:
            return self.scores[last]
        raise ValueError(f"prompt {prompt!r} does not end with a candidate of this landscape")

    def __repr__(self):
        return f"<toy landscape objective over {len(self.scores)} candidates>"


@validate_params(
    {
        "n_candidates": [Interval(Integral, 1, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "kind": [StrOptions({"smooth", "rough"})],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_toy_landscape(n_candidates=20, n_features=32, kind="smooth", random_state=None):
    """Synthetic candidate set with embeddings and a score landscape (spec section 7).

    Candidates "cand-00", "cand-01", ... have embeddings e_i ~ N(0, I). The "smooth"
    score is ``2 sigmoid(-e_i . w)`` with w ~ N(0, I), so it is a function of the
    embedding; the "rough" score is Uniform(0, 2), independent of it. Lower is better.

    Parameters
    ----------
    n_candidates : int, default=20
        Number of candidates.
    n_features : int, default=32
        Embedding dimension.
    kind : {"smooth", "rough"}, default="smooth"
        Landscape.
    random_state : int, RandomState instance or None, default=None
        Seeds the embeddings and scores.

    Returns
    -------
    candidates : list of str
        Candidate names.
    embeddings : ndarray of shape (n_candidates, n_features)
        Their embeddings.
    objective : callable
        ``objective(prompt) -> float``; reads the candidate at the end of the prompt.
        It has a ``scores`` dict (candidate -> score) for evaluation.

    Examples
    --------
    >>> from sklearn_cispa.redteam import make_toy_landscape
    >>> candidates, embeddings, objective = make_toy_landscape(random_state=0)
    >>> candidates[:2], embeddings.shape
    (['cand-00', 'cand-01'], (20, 32))
    >>> 0.0 <= objective("cand-00") <= 2.0
    True
    """
    rng = check_random_state(random_state)
    width = max(2, len(str(n_candidates - 1)))
    candidates = [f"cand-{i:0{width}d}" for i in range(n_candidates)]
    E = rng.normal(size=(n_candidates, n_features))
    if kind == "smooth":
        w = rng.normal(size=n_features)
        scores = 2.0 * expit(-(E @ w))
    else:
        scores = rng.uniform(0.0, 2.0, size=n_candidates)
    objective = _LandscapeObjective(zip(candidates, (float(s) for s in scores)))
    return candidates, E, objective


class ToyKeywordTarget:
    """Deterministic toy target: "OK" when the prompt contains a keyword as a word.

    A benign stand-in for a system under test: it "complies" (answers "OK") when one of
    its colour keywords appears as a whole word (case-insensitive), and answers
    "REFUSE" otherwise.

    Parameters
    ----------
    keywords : tuple of str, default=("amber", "cobalt", "teal")
        Lower-case words that make the target answer "OK".

    Examples
    --------
    >>> from sklearn_cispa.redteam import ToyKeywordTarget
    >>> target = ToyKeywordTarget()
    >>> target("describe the teal sky"), target("describe the tealish sky")
    ('OK', 'REFUSE')
    """

    def __init__(self, keywords=("amber", "cobalt", "teal")):
        self.keywords = keywords

    def __call__(self, prompt):
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        words = set(_WORD.findall(prompt.lower()))
        return "OK" if words & {k.lower() for k in self.keywords} else "REFUSE"

    def __repr__(self):
        return f"ToyKeywordTarget(keywords={self.keywords!r})"


class ToyRubricJudge:
    """Deterministic toy judge: the mean of ``n_items`` rubric items in [0, 2].

    Items ``0 .. n_items - 2`` are 0 for the response "OK" and 2 for anything else (a
    refusal); the last item is a readability item, 2 times the fraction of characters
    of the prompt that are neither letters nor spaces. Lower is better; success means a
    score of at most 1 (with the default 21 items, exactly the "OK" responses).

    Parameters
    ----------
    n_items : int, default=21
        Number of rubric items (at least 2).

    Examples
    --------
    >>> from sklearn_cispa.redteam import ToyKeywordTarget, ToyRubricJudge
    >>> judge, target = ToyRubricJudge(), ToyKeywordTarget()
    >>> prompt = "paint it amber"
    >>> judge(prompt, target(prompt))
    0.0
    >>> round(judge("paint it grey", "REFUSE"), 3)
    1.905
    """

    def __init__(self, n_items=21):
        self.n_items = n_items

    def __call__(self, prompt, response):
        n = self.n_items
        if not isinstance(n, Integral) or isinstance(n, bool) or n < 2:
            raise ValueError(f"n_items must be an integer >= 2, got {n!r}")
        if not isinstance(prompt, str) or not isinstance(response, str):
            raise TypeError("prompt and response must be strings")
        compliance = 0.0 if response == "OK" else 2.0
        odd = sum(1 for ch in prompt if not (ch.isalpha() or ch.isspace()))
        readability = 2.0 * odd / len(prompt) if prompt else 0.0
        return float(((n - 1) * compliance + readability) / n)

    def __repr__(self):
        return f"ToyRubricJudge(n_items={self.n_items!r})"
