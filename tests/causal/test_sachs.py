"""The Sachs et al. (2005) data (load_sachs) and the paper's protein-signalling experiment."""

import numpy as np
import pytest

from sklearn_cispa.datasets import load_sachs


def test_load_sachs():
    sachs = load_sachs()
    assert sachs.data.shape == (5846, 11) and sachs.data.dtype == np.float64
    assert np.all(sachs.data > 0)
    assert sachs.feature_names[:3] == ["Raf", "Mek", "PLCg"]
    np.testing.assert_array_equal(np.bincount(sachs.target), [853, 902, 911, 723, 810, 799, 848])
    assert len(sachs.target_names) == 7
    assert sachs.intervention_targets == [None, None, "Akt", "PKC", "PIP2", "Mek", "PIP3"]
    A = sachs.adjacency
    assert A.shape == (11, 11) and int(A.sum()) == 18 and np.all(np.diag(A) == 0)
    names = sachs.feature_names
    assert A[names.index("Raf"), names.index("Mek")] == 1
    assert A[names.index("Mek"), names.index("Erk")] == 1
    assert A[names.index("Mek"), names.index("Raf")] == 0
    # acyclic
    import networkx as nx

    assert nx.is_directed_acyclic_graph(nx.DiGraph(A))
    # first row of the source file, unchanged
    np.testing.assert_allclose(
        sachs.data[0], [26.4, 13.2, 8.82, 18.3, 58.8, 6.61, 17.0, 414.0, 17.0, 44.9, 40.0]
    )
    assert sachs.frame is None and "NOTICE" in sachs.DESCR
    # a fresh copy every call: the caller may modify it
    sachs.data[0, 0] = -1.0
    assert load_sachs().data[0, 0] == 26.4


def test_load_sachs_as_frame():
    pd = pytest.importorskip("pandas")
    sachs = load_sachs(as_frame=True)
    assert isinstance(sachs.data, pd.DataFrame) and list(sachs.data.columns) == sachs.feature_names
    assert sachs.frame.shape == (5846, 12)
    assert sachs.target.iloc[0] == "cd3cd28"
    assert set(sachs.target) == set(sachs.target_names)


def test_load_sachs_rejects_bad_arguments():
    with pytest.raises((TypeError, ValueError)):
        load_sachs(as_frame="yes")


def _sachs_result():
    pytest.importorskip("causallearn")
    from sklearn_cispa.report._cmm_eval import sachs_experiment

    # 100 rows of each condition, 3 subsamples, log intensities (the documented
    # preprocessing for positive data), quick local fits
    return sachs_experiment(
        seeds=(0, 1, 2), rows_per_condition=100, cmm_params={"max_components": 3, "n_init": 1}
    )


_RESULT = {}


def _result():
    if not _RESULT:
        _RESULT.update(_sachs_result())
    return _RESULT


@pytest.mark.slow
def test_sachs_mixing_tracks_the_targeted_conditions():
    """The targeted nodes' groups carry their own condition better than chance.

    Paper metric (Table 1 of the reference runner): AMI between the labels of each
    targeted node and the indicator of the condition that targets it. Measured, mean of
    3 subsamples: 0.081 (per subsample 0.056, 0.084, 0.104) against 0.000 with the
    conditions permuted, and against 0.040 (0.041, 0.040, 0.040) for the labels of the
    six untargeted nodes with the same indicators. Not better than chance: WHICH nodes
    are called mixed (9-11 of 11; 3-5 of the 5 targets), because the pooled conditions
    shift almost every node (between-condition share of the log variance 0.43-0.72 for
    10 of 11 nodes; the PKC inhibitor condition moves 9 nodes by 1.5-4.4 sd), and the
    Gaussian components also fit skewed, heteroscedastic noise: on the rows of one
    condition alone the defaults call 8-10 of 11 nodes mixed
    (``test_causal_mixture_flexible_noise.py``).
    """
    res = _result()
    assert np.mean(res["target_ami"]) > 0.04, res["target_ami"]
    assert np.mean(res["target_ami"]) > 10 * max(abs(np.mean(res["null_ami"])), 0.002)
    assert np.mean(res["target_ami"]) > 1.5 * np.mean(res["other_ami"]), res
    assert all(h >= 3 for h in res["hits"]), res["hits"]


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason=(
        "issue 23 target missed: directed F1 on the Sachs rows (log intensities, 3 "
        "subsamples of 100 rows per condition) measured CMM 0.252 (0.261, 0.273, 0.222) "
        "vs GES 0.278, PC 0.217, DirectLiNGAM 0.181 (the reference runner's F1, forward-"
        "index directed edges only: CMM 0.229, GES 0.246, PC 0.177, DirectLiNGAM 0.150). "
        "The pooled conditions shift almost every node (the condition is a latent common "
        "cause of nearly every pair), and the linear-Gaussian mechanisms are misspecified "
        "for these data; the search adds edges wherever a mixture lowers the BIC. With "
        "flexible_noise=True (skewed, heteroscedastic single mechanisms): CMM 0.258 "
        "(reference F1 0.277) on these log subsamples, 0.242 on the raw ones (PC 0.383)."
    ),
)
def test_sachs_directed_f1_at_least_the_best_peer():
    res = _result()
    best_peer = max(np.mean(res["f1"][m]) for m in ("ges", "pc", "lingam"))
    assert np.mean(res["f1"]["cmm"]) >= best_peer, res["f1"]


def test_reference_f1_on_the_consensus_graph():
    """The reference runner keeps only the consensus edges from a lower to a higher
    column index (10 of 18 on this column order) and drops undirected CPDAG edges."""
    from sklearn_cispa.report import reference_directed_f1

    A = load_sachs().adjacency
    assert int(np.triu(A, 1).sum()) == 10
    assert reference_directed_f1(A, A) == 1.0
    # the 8 backward edges are invisible to it, found or not
    assert reference_directed_f1(np.triu(A, 1), A) == 1.0
    # an undirected CPDAG edge (stored both ways) is not found, and not a false positive
    assert reference_directed_f1(np.triu(A, 1) | np.triu(A, 1).T, A) == 0.0
    est = np.triu(A, 1).copy()
    names = load_sachs().feature_names
    i, j = names.index("Raf"), names.index("JNK")
    assert A[i, j] == A[j, i] == 0
    est[i, j] = est[j, i] = 1
    assert reference_directed_f1(est, A) == 1.0


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason=(
        "issue 23 target missed: the nodes called mixed do not match the five "
        "intervention targets better than chance. AUC of mixing_evidence_ for the "
        "targets among the 11 nodes (log intensities, 3 subsamples of 100 rows per "
        "condition): 0.467, 0.467, 0.300 (chance 0.5), exact permutation p over node "
        "labels 0.60, 0.60, 0.88; raw intensities 0.633, 0.567, 0.633 (p 0.27-0.40). "
        "The inhibitors act on a target's activity, which shows in its children's "
        "mechanisms, and the pooled conditions shift almost every node. With "
        "flexible_noise=True: log AUC 0.233, 0.433, 0.667 (p 0.94, 0.67, 0.21), raw "
        "0.367, 0.233, 0.367 (1-2 nodes mixed, no target)."
    ),
)
def test_sachs_mixing_evidence_ranks_the_targets_above_chance():
    res = _result()
    assert np.mean(res["evidence_auc"]) > 0.5, res["evidence_auc"]
    assert max(res["evidence_p"]) < 0.05, res["evidence_p"]
