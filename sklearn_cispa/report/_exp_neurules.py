"""Report row of NeurulesClassifier: accuracy and rule count beside CART on breast cancer."""

import numpy as np

from sklearn_cispa.report import ExperimentResult, get_pyplot, register_experiment, save_figure


@register_experiment(
    "neurules",
    title="NeurulesClassifier",
    description="breast cancer, KFold(5, shuffle, 42): accuracy and rules vs CART",
)
def run(*, quick, out_dir, random_state):
    """Fit NeuRules (10 rule slots) and CART (10 leaves) on the same breast-cancer folds.

    ``quick`` uses the first fold only (about 5 s on one core); the full row uses all
    five folds of the spec's protocol.
    """
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import KFold
    from sklearn.tree import DecisionTreeClassifier

    from sklearn_cispa.rules import NeurulesClassifier

    X, y = load_breast_cancer(return_X_y=True)
    folds = list(KFold(5, shuffle=True, random_state=42).split(X))
    if quick:
        folds = folds[:1]
    acc, cart_acc, n_rules, n_conditions, cart_leaves = [], [], [], [], []
    for train, test in folds:
        clf = NeurulesClassifier(n_rules=10, random_state=random_state)
        clf.fit(X[train], y[train])
        acc.append(clf.score(X[test], y[test]))
        n_rules.append(clf.n_rules_)
        n_conditions.append(clf.n_conditions_)
        tree = DecisionTreeClassifier(max_leaf_nodes=10, random_state=random_state)
        tree.fit(X[train], y[train])
        cart_acc.append(tree.score(X[test], y[test]))
        cart_leaves.append(tree.get_n_leaves())

    figures = ()
    plt = get_pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(5, 3))
        idx = np.arange(len(folds))
        ax.bar(idx - 0.2, acc, width=0.4, label="NeuRules (10 rules)")
        ax.bar(idx + 0.2, cart_acc, width=0.4, label="CART (10 leaves)")
        ax.set_xticks(idx, [f"fold {i + 1}" for i in idx])
        ax.set_ylim(0.8, 1.0)
        ax.set_ylabel("test accuracy")
        ax.legend(loc="lower right")
        figures = save_figure(fig, out_dir, "neurules_breast_cancer.png")

    return ExperimentResult(
        metric=f"accuracy ({len(folds)}-fold mean)",
        value=float(np.mean(acc)),
        peer="DecisionTreeClassifier(max_leaf_nodes=10)",
        peer_value=float(np.mean(cart_acc)),
        details=(
            f"rules {np.mean(n_rules):.1f} + default, conditions {np.mean(n_conditions):.1f}; "
            f"CART leaves {np.mean(cart_leaves):.1f}"
        ),
        figures=figures,
    )
