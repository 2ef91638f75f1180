"""Synthetic causal mixture data (the reference generator of the causal mixture models
paper) and the reference code's demo data set."""

import numbers
from importlib import resources

import numpy as np
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, validate_params

from sklearn_cispa.utils import check_random_generator


def _standardise(X):
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    return (X - X.mean(axis=0)) / sd


@validate_params(
    {
        "n_samples": [Interval(numbers.Integral, 2, None, closed="left")],
        "n_nodes": [Interval(numbers.Integral, 1, None, closed="left")],
        "edge_prob": [Interval(numbers.Real, 0, 1, closed="both")],
        "n_categories": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_groups": [Interval(numbers.Integral, 1, None, closed="left")],
        "mixed_fraction": [Interval(numbers.Real, 0, 1, closed="both")],
        "n_mixing": [Interval(numbers.Integral, 1, None, closed="left")],
        "noise_scale": [Interval(numbers.Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_causal_mixture(
    n_samples=500,
    n_nodes=6,
    edge_prob=0.4,
    n_categories=5,
    n_groups=2,
    mixed_fraction=0.5,
    n_mixing=2,
    noise_scale=0.5,
    random_state=None,
):
    """Generate linear causal data in which latent mixing variables switch mechanisms.

    The generator of the causal mixture models paper (Mameche et al., NeurIPS 2025),
    restated: a random DAG; ``floor(mixed_fraction * n_nodes)`` random nodes are split into
    ``n_mixing`` sets, and each set shares one latent categorical variable that selects,
    per sample, one of ``n_groups`` linear mechanisms for all of its nodes.

    Parameters
    ----------
    n_samples : int, default=500
        Number of samples (the paper's S).
    n_nodes : int, default=6
        Number of variables (N).
    edge_prob : float, default=0.4
        Probability of each edge allowed by a random causal order (P).
    n_categories : int, default=5
        Categories of each latent variable before they are mapped to groups (C): category
        ``c`` is group ``c + 1`` if ``c + 1 < n_groups``, else group 0. With the defaults,
        group 1 holds 20% of the samples.
    n_groups : int, default=2
        Number of mechanisms per mixed node (K).
    mixed_fraction : float, default=0.5
        Fraction of nodes that are mixed (PZ).
    n_mixing : int, default=2
        Number of latent mixing variables the mixed nodes are split into (NZ); empty sets
        are dropped.
    noise_scale : float, default=0.5
        Standard deviation of the Gaussian noise.
    random_state : int, RandomState instance or None, default=None
        Seeds the generator.

    Returns
    -------
    X : ndarray of shape (n_samples, n_nodes)
        Data; every column standardised.
    adjacency : ndarray of shape (n_nodes, n_nodes)
        True graph, ``adjacency[i, j] == 1`` iff ``i -> j``.
    mixing_sets : list of frozenset
        Node sets of every latent mixing variable, sorted by smallest member.
    mixing_labels : ndarray of shape (n_samples, len(mixing_sets))
        The group (0..n_groups-1) of every sample for every mixing variable.

    Notes
    -----
    Group 0 uses coefficients ``W`` (magnitudes in [0.25, 0.75], random signs); unmixed
    nodes use ``w_i W`` with a per-node scale ``w_i ~ U(0, 1)``; group ``k >= 1`` uses
    magnitudes in [0.25, 1] of the sign opposite to the previous group's coefficients,
    redrawn (up to 100 times) while within 0.25 of an earlier group's coefficient, and its
    intercept is shifted by ``+-U(2, 5)``. A mixed source node's noise is shifted by
    ``+-U(5, 10)`` per group instead. All columns are re-standardised after each node is
    generated, so the not yet generated noise columns are rescaled too (as in the
    reference).

    Examples
    --------
    >>> from sklearn_cispa.datasets import make_causal_mixture
    >>> X, adjacency, sets, Z = make_causal_mixture(n_samples=200, random_state=0)
    >>> X.shape, adjacency.shape, Z.shape[0]
    ((200, 6), (6, 6), 200)
    >>> sum(len(s) for s in sets)
    3
    """
    rng = check_random_generator(random_state)
    N, n = int(n_nodes), int(n_samples)
    # 1. graph along a random permutation; pi[-1] is a source
    pi = rng.permutation(N)
    adjacency = np.zeros((N, N), dtype=np.int64)
    for i in range(N - 1):
        n_pa = rng.binomial(N - i - 1, edge_prob)
        if n_pa:
            pa = rng.choice(pi[i + 1 :], size=n_pa, replace=False)
            adjacency[pa, pi[i]] = 1
    topo = pi[::-1]
    # 2. weights, scales, intercepts
    W = rng.uniform(0.25, 0.75, size=(N, N)) * rng.choice([-1.0, 1.0], size=(N, N))
    W = W * adjacency
    scale = rng.uniform(0, 1, size=N)
    intercept = rng.uniform(0, 1, size=N)
    # 3. mixed nodes and their sets
    n_mixed = int(np.floor(mixed_fraction * N))
    mixed = np.sort(rng.choice(N, size=n_mixed, replace=False))
    sets = [frozenset(int(v) for v in s) for s in np.array_split(mixed, n_mixing) if len(s)]
    # 4. latent variables
    Z = np.zeros((n, len(sets)), dtype=np.int64)
    for m in range(len(sets)):
        c = rng.integers(0, n_categories, size=n)
        Z[:, m] = np.where(c + 1 < n_groups, c + 1, 0)
    # 5. group mechanisms ("flip")
    Ws = [W]
    icpts = [intercept]
    for k in range(1, n_groups):
        prev = Ws[-1]
        Wk = np.zeros((N, N))
        for a, b in zip(*np.nonzero(adjacency)):
            for _ in range(100):
                w = -np.sign(prev[a, b]) * rng.uniform(0.25, 1.0)
                if all(abs(w - Wj[a, b]) >= 0.25 for Wj in Ws):
                    break
            Wk[a, b] = w
        Ws.append(Wk)
        shift = rng.uniform(2, 5, size=N)
        icpts.append(intercept + shift if k % 2 == 1 else intercept - shift)
    # 6. mean shifts of mixed sources
    src_shift = np.zeros((n_groups, N))
    for k in range(1, n_groups):
        mag = rng.uniform(5, 10, size=N)
        src_shift[k] = mag if k % 2 == 1 else -mag
    set_of = {j: m for m, s in enumerate(sets) for j in s}
    # 7-8. nodes in topological order, standardising after each
    X = rng.normal(0.0, noise_scale, size=(n, N))
    for i in topo:
        pa = np.flatnonzero(adjacency[:, i])
        if i not in set_of:
            X[:, i] += scale[i] * (X[:, pa] @ W[pa, i]) + intercept[i]
        else:
            g = Z[:, set_of[i]]
            for k in range(n_groups):
                rows = g == k
                if not rows.any():
                    continue
                X[rows, i] += icpts[k][i]
                if len(pa):
                    X[rows, i] += X[np.ix_(rows, pa)] @ Ws[k][pa, i]
                else:
                    X[rows, i] += src_shift[k, i]
        X = _standardise(X)
    order = np.argsort([min(s) for s in sets], kind="stable")
    sets = [sets[m] for m in order]
    Z = Z[:, order] if len(sets) else Z
    return X, adjacency, sets, Z


@validate_params({}, prefer_skip_nested_validation=True)
def load_cmm_demo():
    """Load the causal mixture models reference demo data (6 nodes, 1000 samples).

    The reference code's demo file (srhmm/causalchange, ``demo/datasets/chapter6_mix``,
    MIT licence, copyright 2025 Sarah Mameche; the NOTICE ships next to the files): a
    complete DAG over 6 standardised variables with causal order 5, 2, 1, 4, 3, 0.

    Returns
    -------
    X : ndarray of shape (1000, 6)
        The data.
    adjacency : ndarray of shape (6, 6)
        True graph, ``adjacency[i, j] == 1`` iff ``i -> j`` (15 edges).

    Examples
    --------
    >>> from sklearn_cispa.datasets import load_cmm_demo
    >>> X, adjacency = load_cmm_demo()
    >>> X.shape, int(adjacency.sum())
    ((1000, 6), 15)
    """
    folder = resources.files("sklearn_cispa.datasets").joinpath("data", "cmm_demo")
    with resources.as_file(folder.joinpath("example_synthetic.tsv")) as path:
        X = np.loadtxt(path, skiprows=1)
    with resources.as_file(folder.joinpath("example_synthetic_g.tsv")) as path:
        adjacency = np.loadtxt(path, skiprows=1).astype(np.int64)
    return X, adjacency


SACHS_FEATURES = ("Raf", "Mek", "PLCg", "PIP2", "PIP3", "Erk", "Akt", "PKA", "PKC", "p38", "JNK")
SACHS_CONDITIONS = (
    "cd3cd28",
    "cd3cd28+icam2",
    "cd3cd28+aktinhib",
    "cd3cd28+g0076",
    "cd3cd28+psitect",
    "cd3cd28+u0126",
    "cd3cd28+ly",
)
SACHS_TARGETS = (None, None, "Akt", "PKC", "PIP2", "Mek", "PIP3")
# the consensus network as the reference runner encodes it (cause, effect)
SACHS_CONSENSUS_EDGES = (
    ("PKA", "Akt"),
    ("PKA", "Erk"),
    ("PKA", "Mek"),
    ("PKA", "Raf"),
    ("PKA", "JNK"),
    ("PKA", "p38"),
    ("PIP3", "Akt"),
    ("PIP3", "PIP2"),
    ("PIP3", "PLCg"),
    ("PIP2", "PKC"),
    ("PLCg", "PIP2"),
    ("PLCg", "PKC"),
    ("Mek", "Erk"),
    ("Raf", "Mek"),
    ("PKC", "Mek"),
    ("PKC", "Raf"),
    ("PKC", "JNK"),
    ("PKC", "p38"),
)


@validate_params({"as_frame": ["boolean"]}, prefer_skip_nested_validation=True)
def load_sachs(*, as_frame=False):
    """Load the Sachs et al. (2005) protein-signalling data pooled over seven conditions.

    Flow-cytometry measurements of 11 phosphoproteins and phospholipids in 5846 single
    human T cells under seven stimulatory conditions: two general stimulations
    (observational) and five with an inhibitor or activator aimed at one node (Akt, PKC,
    PIP2, Mek, PIP3). Pooled without the condition label, they are the mixture of
    interventional data sets of the causal mixture models paper's protein-signalling
    experiment (same rows and targets as its reference runner). Bundled with a source
    and licence notice (``datasets/data/sachs/NOTICE``): the values are the article's
    public supplementary data, which carry no licence of their own.

    Parameters
    ----------
    as_frame : bool, default=False
        If True, ``data`` is a pandas DataFrame with the protein names as columns,
        ``target`` a pandas Series of condition names, and ``frame`` both together.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the following attributes.

        data : ndarray or DataFrame of shape (5846, 11)
            Measured intensities (positive, heavy tailed: log-normal-like). The
            measurements are not transformed; ``numpy.log`` of them is the usual input
            to linear-Gaussian methods.
        target : ndarray of shape (5846,) or Series
            Condition of every row, an index into ``target_names`` (the condition name
            when ``as_frame=True``).
        target_names : list of str
            The seven conditions, in the order of the source files.
        feature_names : list of str
            The 11 node names.
        adjacency : ndarray of shape (11, 11)
            The consensus network (18 edges) that the reference runner scores against:
            ``adjacency[i, j] == 1`` iff ``feature_names[i] -> feature_names[j]``.
        intervention_targets : list
            Per condition, the name of the node it targets (None for the two
            observational conditions).
        frame : DataFrame or None
            The data with a ``condition`` column when ``as_frame=True``.
        DESCR : str
            Short description and source.

    Examples
    --------
    >>> from sklearn_cispa.datasets import load_sachs
    >>> sachs = load_sachs()
    >>> sachs.data.shape, int(sachs.adjacency.sum())
    ((5846, 11), 18)
    >>> [t for t in sachs.intervention_targets if t]
    ['Akt', 'PKC', 'PIP2', 'Mek', 'PIP3']
    >>> int((sachs.target == 2).sum())  # rows under the Akt inhibitor
    911
    """
    import gzip

    folder = resources.files("sklearn_cispa.datasets").joinpath("data", "sachs")
    with resources.as_file(folder.joinpath("sachs_interventional.csv.gz")) as path:
        with gzip.open(path, "rt") as fh:
            header = fh.readline().strip().split(",")
            raw = np.loadtxt(fh, delimiter=",")
    if tuple(header[:-1]) != SACHS_FEATURES or header[-1] != "experiment":
        raise ValueError(f"Unexpected columns in the bundled Sachs file: {header}.")
    X = raw[:, :-1]
    target = raw[:, -1].astype(np.int64) - 1
    names = list(SACHS_FEATURES)
    index = {v: i for i, v in enumerate(names)}
    adjacency = np.zeros((len(names), len(names)), dtype=np.int64)
    for cause, effect in SACHS_CONSENSUS_EDGES:
        adjacency[index[cause], index[effect]] = 1
    frame = None
    target_names = list(SACHS_CONDITIONS)
    if as_frame:
        import pandas as pd

        X = pd.DataFrame(X, columns=names)
        target = pd.Series(np.asarray(target_names)[target], name="condition")
        frame = pd.concat([X, target], axis=1)
    return Bunch(
        data=X,
        target=target,
        target_names=target_names,
        feature_names=names,
        adjacency=adjacency,
        intervention_targets=list(SACHS_TARGETS),
        frame=frame,
        DESCR=(
            "Sachs et al. (2005) flow cytometry, conditions 1-7 (5846 cells, 11 nodes), "
            "pooled as in the causal mixture models paper; consensus network of 18 edges. "
            "Source and licence: datasets/data/sachs/NOTICE."
        ),
    )
