"""The Sachs et al. (2005) data (load_sachs) and the paper's protein-signalling experiment."""

import numpy as np
import pytest

from sklearn_cispa.datasets import load_sachs


def test_load_sachs():
    sachs = load_sachs()
    assert sachs.data.shape == (5846, 11) and sachs.data.dtype == np.float64
    assert np.all(sachs.data > 0)
    assert sachs.feature_names[:3] == ["Raf", "Mek", "PLCg"]
    np.testing.assert_array_equal(
        np.bincount(sachs.target), [853, 902, 911, 723, 810, 799, 848]
    )
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
