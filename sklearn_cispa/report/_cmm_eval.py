"""Evaluation helpers of the causal mixture experiments (report row, benchmark, example).

Graph metrics on N x N adjacency matrices (``A[i, j] == 1`` iff ``i -> j``), the
"observed truth" grouping of a node, and thin adapters to the peers (causal-learn GES, PC
and DirectLiNGAM, scikit-learn GaussianMixture). causal-learn comes with the ``report``
extra; DirectLiNGAM is causal-learn's implementation, because the ``lingam`` package pins
an old scipy.
"""

import numpy as np

from sklearn_cispa.causal._causal_mixture import _cpdag_to_adjacency


def edge_counts(est, true):
    """TP, FP, FN of directed edges (a reversed edge is one FP and one FN)."""
    est = np.asarray(est) != 0
    true = np.asarray(true) != 0
    return int((est & true).sum()), int((est & ~true).sum()), int((~est & true).sum())


def edge_f1(est, true):
    """Directed-edge F1 = 2 TP / (2 TP + FP + FN) (1.0 when both graphs are empty)."""
    tp, fp, fn = edge_counts(est, true)
    denom = 2 * tp + fp + fn
    return 1.0 if denom == 0 else 2 * tp / denom


def reference_directed_f1(est, true):
    """Directed-edge F1 as the reference runner (srhmm/cmm) scores its Sachs table.

    The runner turns both graphs into a directed-edge matrix by visiting only the node
    pairs ``i < j`` (``itertools.combinations`` over the node list) and keeping ``i -> j``
    when it is a directed edge: edges from a higher to a lower column index are dropped
    from both graphs, and undirected CPDAG edges count neither as found nor as wrong.
    On the Sachs column order 10 of the 18 consensus edges survive. Kept beside
    :func:`edge_f1` (all directed edges, undirected ones both ways) to compare with the
    paper's figures.
    """
    est = np.asarray(est) != 0
    true = np.asarray(true) != 0
    upper = np.triu(np.ones(true.shape, dtype=bool), 1)
    return edge_f1(est & ~est.T & upper, true & ~true.T & upper)


def shd(est, true):
    """Structural Hamming distance: insertions, deletions and reversals, each once."""
    est = np.asarray(est) != 0
    true = np.asarray(true) != 0
    n = len(true)
    iu = np.triu_indices(n, 1)
    differs = (est[iu] != true[iu]) | (est.T[iu] != true.T[iu])
    return int(differs.sum())


def cpdag_to_adjacency(graph):
    """causal-learn's endpoint matrix to an adjacency: ``graph[j, i] == 1`` and
    ``graph[i, j] == -1`` is ``i -> j``; -1/-1 (undirected) is counted both ways."""
    return _cpdag_to_adjacency(graph)


def run_ges(X):
    """causal-learn GES with its BIC score; returns the adjacency (CPDAG, both ways)."""
    from causallearn.search.ScoreBased.GES import ges

    return cpdag_to_adjacency(ges(X, score_func="local_score_BIC")["G"].graph)


def run_pc(X, alpha=0.05):
    """causal-learn PC with Fisher-z tests; returns the adjacency (CPDAG, both ways)."""
    from causallearn.search.ConstraintBased.PC import pc

    cg = pc(X, alpha, "fisherz", show_progress=False)
    return cpdag_to_adjacency(cg.G.graph)


def run_lingam(X, random_state=0):
    """DirectLiNGAM (causal-learn's implementation); returns the adjacency.

    Its ``adjacency_matrix_[i, j] != 0`` means ``j -> i``, hence the transpose.
    """
    from causallearn.search.FCMBased.lingam import DirectLiNGAM

    model = DirectLiNGAM(random_state=random_state).fit(X)
    return (np.abs(model.adjacency_matrix_) > 0).T.astype(np.int64)


def node_truth_labels(node, estimated_parents, adjacency, mixing_sets, mixing_labels):
    """The reference's "observed truth" grouping of one node, for per-node ARI/AMI.

    The joint of the node's own mixing labels with those of its true parents that are
    missing from the estimated parent set (all zeros when none of them is mixed).

    Parameters
    ----------
    node : int
        The node.
    estimated_parents : array-like of int
        Its parents in the estimated graph.
    adjacency : ndarray of shape (N, N)
        The true graph, ``adjacency[i, j] != 0`` iff ``i -> j``.
    mixing_sets : list of set of int
        The true mixing sets (nodes sharing one latent variable).
    mixing_labels : ndarray of shape (n_samples, len(mixing_sets))
        The latent variables' labels.

    Returns
    -------
    labels : ndarray of shape (n_samples,)
    """
    mixing_labels = np.asarray(mixing_labels)
    set_of = {int(j): m for m, members in enumerate(mixing_sets) for j in members}
    columns = [set_of[node]] if node in set_of else []
    true_parents = {int(p) for p in np.flatnonzero(np.asarray(adjacency)[:, node])}
    missing = true_parents - {int(p) for p in estimated_parents}
    columns += [set_of[p] for p in sorted(missing) if p in set_of]
    if not columns:
        return np.zeros(mixing_labels.shape[0], dtype=np.int64)
    _, labels = np.unique(mixing_labels[:, columns], axis=0, return_inverse=True)
    return labels.ravel().astype(np.int64)


def gmm_node_labels(X, node, parents, max_components=5, random_state=0):
    """The "clusGMM" baseline: a GaussianMixture on ``[X_parents, X_node]`` with k chosen
    by BIC in 1..max_components; returns its labels."""
    from sklearn.mixture import GaussianMixture

    data = X[:, list(parents) + [node]]
    best, best_bic = None, np.inf
    for k in range(1, max_components + 1):
        gm = GaussianMixture(k, random_state=random_state).fit(data)
        bic = gm.bic(data)
        if bic < best_bic:
            best, best_bic = gm, bic
    return best.predict(data)


def skeleton_f1(est, true):
    """F1 of the undirected skeletons (an edge in either direction counts once)."""
    est = np.asarray(est) != 0
    true = np.asarray(true) != 0
    iu = np.triu_indices(len(true), 1)
    return edge_f1((est | est.T)[iu], (true | true.T)[iu])


def evidence_auc(evidence, targets, *, max_exact=5000, n_permutations=2000, random_state=0):
    """How well a per-node score ranks the known targets above the other nodes.

    Returns ``(auc, p_value)``: the ROC AUC of ``evidence`` (higher = more mixed) for
    the indicator of ``targets`` among the nodes, and the one-sided permutation p-value
    over node labels, ``P(AUC >= observed)`` when the targets are a random node set of
    the same size: exact (every such set) up to ``max_exact`` sets, otherwise
    ``n_permutations`` random sets. 0.5 is chance.

    The AUC of a node set is the Mann-Whitney statistic of its mid-ranks (ties count
    one half, as in :func:`sklearn.metrics.roc_auc_score`), so every set of the null is
    scored in one array operation.
    """
    import itertools
    from math import comb

    from scipy.stats import rankdata

    evidence = np.asarray(evidence, dtype=np.float64)
    n = len(evidence)
    targets = sorted({int(t) for t in targets})
    m = len(targets)
    if not 0 < m < n:
        raise ValueError(
            f"evidence_auc needs targets and non-targets among the {n} nodes; got {m} targets."
        )
    ranks = rankdata(evidence)

    def aucs(sets):
        return (ranks[sets].sum(axis=1) - m * (m + 1) / 2) / (m * (n - m))

    auc = float(aucs(np.array([targets]))[0])
    if comb(n, m) <= max_exact:
        sets = np.array(list(itertools.combinations(range(n), m)))
    else:
        rng = np.random.default_rng(random_state)
        sets = np.array([rng.choice(n, m, replace=False) for _ in range(n_permutations)])
    return auc, float(np.mean(aucs(sets) >= auc - 1e-12))


def sachs_experiment(
    *,
    seeds=(0, 1, 2),
    rows_per_condition=100,
    log=True,
    cmm_params=None,
    with_peers=True,
    n_permutations=20,
):
    """The causal mixture paper's protein-signalling experiment on row subsamples.

    For every seed, ``rows_per_condition`` random rows of each of the seven conditions of
    :func:`~sklearn_cispa.datasets.load_sachs` are pooled (log-transformed when ``log``)
    and CausalMixtureDiscoverer (``random_state=0`` and ``cmm_params``) and, with
    causal-learn, GES, PC and DirectLiNGAM are scored against the consensus graph.

    Returns a dict of per-seed lists: ``f1``, ``reference_f1`` (the reference runner's
    F1, :func:`reference_directed_f1`), ``skeleton_f1``, ``shd`` (dicts by method),
    ``target_ami`` (mean over the five targeted nodes of the AMI between the node's
    labels and the indicator of the condition that targets it: the paper's Table 1
    metric), ``null_ami`` (the same with the condition labels permuted, mean of
    ``n_permutations``), ``other_ami`` (the AMI of the other nodes' labels with the same
    indicators), ``mixed`` (names of the nodes called mixed), ``hits`` (targeted nodes
    among them), ``evidence_auc`` and ``evidence_p`` (AUC of ``mixing_evidence_`` for the
    five targets among the 11 nodes and its exact permutation p-value over node labels,
    :func:`evidence_auc`), ``ari`` (ARI of each mixing variable's labels with the condition, max
    over the mixing variables) and ``time``.
    """
    import time

    from sklearn.metrics import adjusted_mutual_info_score, adjusted_rand_score

    from sklearn_cispa.causal import CausalMixtureDiscoverer
    from sklearn_cispa.datasets import load_sachs

    sachs = load_sachs()
    names, A = sachs.feature_names, sachs.adjacency
    targets = [(c, names.index(t)) for c, t in enumerate(sachs.intervention_targets) if t]
    methods = ["cmm"] + (["ges", "pc", "lingam"] if with_peers else [])
    out = {key: {m: [] for m in methods} for key in ("f1", "skeleton_f1", "shd", "time")}
    out["reference_f1"] = {m: [] for m in methods}
    for key in ("target_ami", "null_ami", "other_ami", "mixed", "hits", "ari"):
        out[key] = []
    out["evidence_auc"], out["evidence_p"] = [], []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        rows = np.concatenate(
            [
                rng.choice(np.flatnonzero(sachs.target == c), rows_per_condition, replace=False)
                for c in range(len(sachs.target_names))
            ]
        )
        X = np.log(sachs.data[rows]) if log else sachs.data[rows]
        cond = sachs.target[rows]
        for method in methods:
            start = time.perf_counter()
            if method == "cmm":
                est = CausalMixtureDiscoverer(random_state=0, **(cmm_params or {})).fit(X)
                adj = est.adjacency_
            else:
                adj = {"ges": run_ges, "pc": run_pc, "lingam": run_lingam}[method](X)
            out["time"][method].append(time.perf_counter() - start)
            out["f1"][method].append(edge_f1(adj, A))
            out["reference_f1"][method].append(reference_directed_f1(adj, A))
            out["skeleton_f1"][method].append(skeleton_f1(adj, A))
            out["shd"][method].append(shd(adj, A))

        def ami(labels, c, condition):
            return adjusted_mutual_info_score(condition == c, labels)

        out["target_ami"].append(
            float(np.mean([ami(est.labels_[:, j], c, cond) for c, j in targets]))
        )
        null = []
        for _ in range(n_permutations):
            perm = rng.permutation(cond)
            null.append(np.mean([ami(est.labels_[:, j], c, perm) for c, j in targets]))
        out["null_ami"].append(float(np.mean(null)))
        tset = {j for _, j in targets}
        others = [j for j in range(len(names)) if j not in tset]
        out["other_ami"].append(
            float(np.mean([ami(est.labels_[:, j], c, cond) for c, _ in targets for j in others]))
        )
        auc, p_value = evidence_auc(est.mixing_evidence_, [j for _, j in targets])
        out["evidence_auc"].append(auc)
        out["evidence_p"].append(p_value)
        mixed = [names[j] for j in np.flatnonzero(est.n_components_ > 1)]
        out["mixed"].append(mixed)
        out["hits"].append(sum(names[j] in mixed for _, j in targets))
        out["ari"].append(
            max(
                (
                    adjusted_rand_score(cond, est.mixing_labels_[:, m])
                    for m in range(len(est.mixing_sets_))
                ),
                default=0.0,
            )
        )
    return out
