"""Tests of the causal mixture evaluation helpers (report/_cmm_eval.py)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_cispa.report._cmm_eval import (
    cpdag_to_adjacency,
    edge_counts,
    edge_f1,
    node_truth_labels,
    shd,
)

TRUE = np.array([[0, 1, 1], [0, 0, 1], [0, 0, 0]])  # 0 -> 1 -> 2, 0 -> 2


def test_edge_counts_and_f1_by_hand():
    est = np.array([[0, 1, 0], [0, 0, 0], [1, 1, 0]])  # 0->1 right, 2->0 and 2->1 reversed
    assert edge_counts(est, TRUE) == (1, 2, 2)
    assert edge_f1(est, TRUE) == pytest.approx(2 / (2 + 2 + 2))
    assert edge_f1(TRUE, TRUE) == 1.0
    assert edge_f1(np.zeros((3, 3)), np.zeros((3, 3))) == 1.0
    assert edge_f1(np.zeros((3, 3)), TRUE) == 0.0


def test_shd_counts_a_reversal_once():
    reversed_one = TRUE.copy()
    reversed_one[0, 1], reversed_one[1, 0] = 0, 1
    assert shd(reversed_one, TRUE) == 1
    missing = TRUE.copy()
    missing[0, 2] = 0
    assert shd(missing, TRUE) == 1
    extra = np.zeros((3, 3), dtype=int)
    assert shd(extra, TRUE) == 3
    # an undirected CPDAG edge (both directions) against a directed one: one error
    both = TRUE.copy()
    both[1, 0] = 1
    assert shd(both, TRUE) == 1


def test_cpdag_to_adjacency_endpoints():
    # causal-learn: graph[j, i] == 1 and graph[i, j] == -1 is i -> j; -1/-1 undirected
    g = np.zeros((3, 3), dtype=int)
    g[1, 0], g[0, 1] = 1, -1  # 0 -> 1
    g[1, 2], g[2, 1] = -1, -1  # 1 - 2
    np.testing.assert_array_equal(cpdag_to_adjacency(g), [[0, 1, 0], [0, 0, 1], [0, 1, 0]])


def test_cpdag_to_adjacency_matches_causallearn_graph():
    pytest.importorskip("causallearn")
    from causallearn.graph.Edge import Edge
    from causallearn.graph.Endpoint import Endpoint
    from causallearn.graph.GeneralGraph import GeneralGraph
    from causallearn.graph.GraphNode import GraphNode

    nodes = [GraphNode(f"X{i}") for i in range(4)]
    g = GeneralGraph(nodes)
    g.add_edge(Edge(nodes[0], nodes[2], Endpoint.TAIL, Endpoint.ARROW))  # 0 -> 2
    g.add_edge(Edge(nodes[3], nodes[1], Endpoint.TAIL, Endpoint.ARROW))  # 3 -> 1
    g.add_edge(Edge(nodes[1], nodes[2], Endpoint.TAIL, Endpoint.TAIL))  # 1 - 2
    expected = np.zeros((4, 4), dtype=int)
    expected[0, 2] = expected[3, 1] = expected[1, 2] = expected[2, 1] = 1
    np.testing.assert_array_equal(cpdag_to_adjacency(g.graph), expected)


_graphs = st.integers(2, 6).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 1), min_size=n * n, max_size=n * n),
        st.lists(st.integers(0, 1), min_size=n * n, max_size=n * n),
    ).map(lambda t: (np.array(t[0]).reshape(n, n), np.array(t[1]).reshape(n, n)))
)


@settings(deadline=None, max_examples=50)
@given(pair=_graphs)
def test_metric_properties(pair):
    a, b = pair
    np.fill_diagonal(a, 0)
    np.fill_diagonal(b, 0)
    tp, fp, fn = edge_counts(a, b)
    assert tp + fp == a.sum() and tp + fn == b.sum()
    assert 0.0 <= edge_f1(a, b) <= 1.0
    assert (edge_f1(a, b) == 1.0) == bool(np.array_equal(a, b))
    assert shd(a, b) == shd(b, a)
    assert (shd(a, b) == 0) == bool(np.array_equal(a, b))
    assert shd(a, b) <= fp + fn


def test_node_truth_labels_joins_missing_parents():
    adj = np.array([[0, 1, 0], [0, 0, 0], [0, 1, 0]])  # 0 -> 1 <- 2
    sets = [frozenset({0}), frozenset({1})]
    Z = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [1, 1]])
    # parent 0 found: node 1's own labels only
    np.testing.assert_array_equal(node_truth_labels(1, [0, 2], adj, sets, Z), Z[:, 1])
    # parent 0 missed: the joint of node 1's and node 0's labels
    np.testing.assert_array_equal(node_truth_labels(1, [2], adj, sets, Z), [0, 2, 1, 3, 3])
    # unmixed node without mixed missing parents: one group
    np.testing.assert_array_equal(node_truth_labels(2, [], adj, sets, Z), 0)
