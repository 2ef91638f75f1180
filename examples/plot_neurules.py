"""
=============================================
Neural rule lists on breast cancer (NeuRules)
=============================================

:class:`sklearn_cispa.rules.NeurulesClassifier` learns an ordered list of rules
``if <conjunction of intervals> then <class>`` by gradient descent: thresholds, rules and
their order are trained together, then turned into a strict first-match list. The
printed list below *is* the model: ``predict`` evaluates exactly these lines.

We fit it on the breast-cancer data set, print the learned list, and compare accuracy
against list length with a decision tree whose ``max_leaf_nodes`` plays the same role.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier

from sklearn_cispa.rules import NeurulesClassifier

data = load_breast_cancer(as_frame=True)
X, y = data.data, data.target.map({0: "malignant", 1: "benign"})
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.25, stratify=y, random_state=0
)

# %%
# The learned rule list
# ---------------------
# Column names come from the DataFrame; thresholds are in the original units.
clf = NeurulesClassifier(n_rules=5, random_state=0).fit(X_train, y_train)
print(clf.export_text())
print(f"\n{clf.n_rules_} rules, {clf.n_conditions_} conditions, "
      f"test accuracy {clf.score(X_test, y_test):.3f}")

# %%
# Accuracy against list length
# ----------------------------
# A tree with ``L`` leaves reads as a list of ``L - 1`` rules plus a default; NeuRules
# with ``R`` slots keeps at most ``R`` rules plus its explicit default.
sizes = [2, 4, 7, 10]
neurules_points, cart_points = [], []
for n_rules in sizes:
    model = clf if n_rules == 5 else NeurulesClassifier(n_rules=n_rules, random_state=0)
    model.fit(X_train, y_train)
    neurules_points.append((model.n_rules_, model.score(X_test, y_test)))
    tree = DecisionTreeClassifier(max_leaf_nodes=n_rules + 1, random_state=0)
    tree.fit(X_train, y_train)
    cart_points.append((tree.get_n_leaves() - 1, tree.score(X_test, y_test)))

fig, ax = plt.subplots(figsize=(5, 3.5))
for points, label, marker in [
    (neurules_points, "NeuRules", "o"),
    (cart_points, "CART (max_leaf_nodes = rules + 1)", "s"),
]:
    points = np.array(points)
    ax.plot(points[:, 0], points[:, 1], marker=marker, label=label)
ax.set_xlabel("rules in the list (default excluded)")
ax.set_ylabel("test accuracy")
ax.set_title("Breast cancer: accuracy vs list length")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
