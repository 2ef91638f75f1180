"""NeurulesClassifier on breast cancer beside CART, imodels rule lists and RIPPER.

All methods see the same folds: the first ``N_FOLDS`` of
``KFold(5, shuffle=True, random_state=42)`` (spec 7.1; three folds keep the quick run
under a minute, and the CI smoke run uses one; the 5-fold acceptance figure is a slow test in
``tests/rules/test_neurules.py``). The folds are fitted once in ``setup_cache``; the
``track_*`` benchmarks report the mean over folds of accuracy, list length (rules,
default excluded) and conditions, and the fit time per fold. ``time_*`` benchmarks time
a short NeuRules fit (per-epoch cost) and the prediction of the strict list. A peer that
is not installed is skipped.

``SpeedRatios`` records, in one process run, NeuRules' training time per epoch as a ratio
against the authors' reference code (issue 16: target <= 0.5) and against a CART fit on
the same fold. The reference is not bundled (its repository has no licence): set
``NEURULES_REFERENCE_DIR`` to a checkout of Schascha1/neurules (its ``neurules.py``,
``training.py``, ``utils.py`` and ``configs.py``); without it the reference ratio is
skipped.
"""

import time

import numpy as np

from ._common import SMOKE, limit_torch_threads, require

N_RULES = 10
N_FOLDS = 1 if SMOKE else 3  # the smoke run: the first fold (RIPPER takes 0.5 s a fold)
FOLD_SEED = 42
METHODS = ["neurules", "cart", "greedy_rule_list", "ripper"]
# the CI smoke run (SKLEARN_CISPA_BENCH_SMOKE=1): NeuRules fits in the setup caches train
# 10 full-batch epochs, on fewer rows and seeds, enough to show that they work
SMOKE_FIT = {"max_epochs": 10, "batch_size": None} if SMOKE else {}


def _folds():
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import KFold

    X, y = load_breast_cancer(return_X_y=True)
    return X, y, list(KFold(5, shuffle=True, random_state=FOLD_SEED).split(X))[:N_FOLDS]


def _fit_neurules(X, y):
    from sklearn_cispa.rules import NeurulesClassifier

    clf = NeurulesClassifier(n_rules=N_RULES, random_state=FOLD_SEED, **SMOKE_FIT).fit(X, y)
    return clf, clf.predict, clf.n_rules_, clf.n_conditions_


def _fit_cart(X, y):
    from sklearn.tree import DecisionTreeClassifier

    clf = DecisionTreeClassifier(max_leaf_nodes=N_RULES, random_state=0).fit(X, y)
    # a tree with L leaves reads as a rule list of L - 1 rules plus a default
    n_leaves = clf.get_n_leaves()
    return clf, clf.predict, n_leaves - 1, int(np.sum(clf.tree_.children_left >= 0))


def _fit_greedy(X, y):
    import imodels

    clf = imodels.GreedyRuleListClassifier(max_depth=5).fit(X, y)

    def predict(X_new):
        return np.asarray(clf.predict(X_new)).astype(int)

    n = max(len(clf.rules_) - 1, 0)  # the last entry is the default
    return clf, predict, n, n


def _fit_ripper(X, y):
    import pandas as pd
    import wittgenstein

    names = [f"f{i}" for i in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names)
    frame["y"] = y
    clf = wittgenstein.RIPPER(random_state=0, max_rules=N_RULES)
    clf.fit(frame, class_feat="y", pos_class=1)

    def predict(X_new):
        return np.asarray(clf.predict(pd.DataFrame(X_new, columns=names))).astype(int)

    rules = clf.ruleset_.rules
    return clf, predict, len(rules), int(sum(len(r.conds) for r in rules))


_FITTERS = {
    "neurules": (_fit_neurules, None),
    "cart": (_fit_cart, None),
    "greedy_rule_list": (_fit_greedy, "imodels"),
    "ripper": (_fit_ripper, "wittgenstein"),
}


class BreastCancerFolds:
    """Accuracy, size and fit time per fold on the same 5 folds for every method."""

    params = METHODS
    param_names = ["method"]
    timeout = 300

    def setup_cache(self):
        import importlib
        import warnings

        from sklearn.metrics import accuracy_score

        limit_torch_threads(1)
        X, y, folds = _folds()
        results = {}
        for method, (fitter, module) in _FITTERS.items():
            if module is not None:
                try:
                    importlib.import_module(module)
                except ImportError:
                    continue
            rows = []
            for train, test in folds:
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _, predict, n_rules, n_conditions = fitter(X[train], y[train])
                fit_s = time.perf_counter() - start
                pred = predict(X[test])
                rows.append(
                    (
                        accuracy_score(y[test], pred),
                        n_rules,
                        n_conditions,
                        fit_s,
                    )
                )
            results[method] = np.mean(np.array(rows, dtype=float), axis=0).tolist()
        return results

    def setup(self, results, method):
        if method not in results:
            raise NotImplementedError(f"peer for {method} is not installed")

    def track_accuracy(self, results, method):
        return results[method][0]

    track_accuracy.unit = "accuracy"

    def track_n_rules(self, results, method):
        return results[method][1]

    track_n_rules.unit = "rules"

    def track_n_conditions(self, results, method):
        return results[method][2]

    track_n_conditions.unit = "conditions"

    def track_fit_seconds_per_fold(self, results, method):
        return results[method][3]

    track_fit_seconds_per_fold.unit = "seconds"


class NeurulesFit:
    """Per-epoch training cost (50 full-batch epochs on 455 x 30) and prediction."""

    def setup(self):
        from sklearn_cispa.rules import NeurulesClassifier

        limit_torch_threads(1)
        X, y, folds = _folds()
        train, test = folds[0]
        self.X_train, self.y_train, self.X_test = X[train], y[train], X[test]
        self.fitted = NeurulesClassifier(n_rules=N_RULES, max_epochs=50, n_init=1, random_state=0)
        self.fitted.fit(self.X_train, self.y_train)

    def time_fit_50_epochs(self):
        from sklearn_cispa.rules import NeurulesClassifier

        NeurulesClassifier(n_rules=N_RULES, max_epochs=50, n_init=1, random_state=0).fit(
            self.X_train, self.y_train
        )

    def time_predict(self):
        self.fitted.predict(self.X_test)


def _reference_trainer():
    """Import the authors' reference model from ``NEURULES_REFERENCE_DIR`` (or skip).

    Only its public classes are called (our own driver below); its ``utils`` module
    imports a data-download module that is replaced by an empty stand-in.
    """
    import os
    import sys
    import types

    path = os.environ.get("NEURULES_REFERENCE_DIR")
    if not path or not os.path.exists(os.path.join(path, "neurules.py")):
        raise NotImplementedError("set NEURULES_REFERENCE_DIR to a Schascha1/neurules checkout")
    if path not in sys.path:
        sys.path.insert(0, path)
    if "data_loaders" not in sys.modules:
        import pandas

        stub = types.ModuleType("data_loaders")
        stub.pd, stub.np = pandas, np
        sys.modules["data_loaders"] = stub
    try:
        import configs
        import neurules
        import training
        import utils
    except ImportError as exc:
        raise NotImplementedError(f"reference code not importable: {exc}") from exc
    return neurules, configs, utils, training


def _run_reference(modules, X, y, n_epochs, seed=FOLD_SEED, X_test=None):
    """Train the reference model with the paper scripts' settings; return the hard-list
    predictions on ``X_test`` (standardised like ``X``) when given."""
    import torch

    neurules, configs, utils, training = modules
    torch.manual_seed(seed)
    np.random.seed(seed)
    Xt = torch.tensor(X).float()
    Yt = torch.tensor(y).long()
    n_classes = len(np.unique(y))
    cfg = configs.Rule_Config(
        Xt.shape[1], n_classes, predicate_temperature=0.2, selector_temperature=1.0
    )
    cfg.n_rules = N_RULES
    train_cfg = configs.Train_Config(
        n_epochs=n_epochs, lr=0.01, batch_size=2048, min_support=0.2, lambd=0.4, device="cpu"
    )
    model = neurules.NeuralRuleList(cfg, utils.get_data_limits(Xt))
    schedules = [
        utils.Temperature_Scheduler(n_epochs // 2, cfg.schedule_predicate_temperature),
        utils.Temperature_Scheduler(n_epochs // 2, cfg.schedule_selector_temperature),
    ]
    training.train_model(
        model,
        Xt,
        Yt,
        torch.nn.CrossEntropyLoss(),
        train_cfg,
        temperature_predicate_schedule=schedules[0],
        temperature_selector_schedule=schedules[1],
        disable_tqdm=True,
    )
    if X_test is not None:
        model.eval()
        hard = model.to_hard_rule_list()
        with torch.no_grad():
            return hard(torch.tensor(X_test).float()).argmax(dim=1).numpy()
    return None


class SpeedRatios:
    """Time per epoch of NeuRules over the reference code and over CART, one process run.

    Breast cancer, first fold (455 x 30), 10 rules, ``EPOCHS`` epochs; each side is timed
    ``REPEATS`` times, alternating, and the ratio of the medians is recorded.
    """

    EPOCHS = 50
    REPEATS = 3
    timeout = 600

    def setup_cache(self):
        import warnings

        from sklearn.preprocessing import StandardScaler
        from sklearn.tree import DecisionTreeClassifier

        from sklearn_cispa.rules import NeurulesClassifier

        limit_torch_threads(1)
        X, y, folds = _folds()
        train, _ = folds[0]
        Xtr, ytr = X[train], y[train]
        try:
            reference = _reference_trainer()
        except NotImplementedError:
            reference = None
        Xstd = StandardScaler().fit_transform(Xtr)
        ours, ref, cart = [], [], []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            NeurulesClassifier(n_rules=N_RULES, max_epochs=4, n_init=1).fit(Xtr, ytr)  # warm-up
            for _ in range(self.REPEATS):
                start = time.perf_counter()
                NeurulesClassifier(
                    n_rules=N_RULES, max_epochs=self.EPOCHS, n_init=1, random_state=0
                ).fit(Xtr, ytr)
                ours.append(time.perf_counter() - start)
                if reference is not None:
                    start = time.perf_counter()
                    _run_reference(reference, Xstd, ytr, self.EPOCHS)
                    ref.append(time.perf_counter() - start)
                start = time.perf_counter()
                DecisionTreeClassifier(max_leaf_nodes=N_RULES, random_state=0).fit(Xtr, ytr)
                cart.append(time.perf_counter() - start)
        return {
            "reference": float(np.median(ours) / np.median(ref)) if ref else None,
            "cart": float(np.median(ours) / np.median(cart)),
        }

    def track_ratio_vs_cart(self, ratios):
        return ratios["cart"]

    track_ratio_vs_cart.unit = "ours / CART (fit time)"


class SpeedRatioReference(SpeedRatios):
    """The time-per-epoch ratio against the reference code, skipped without it.

    ASV skips a benchmark whose ``setup`` raises ``NotImplementedError``; raised inside the
    benchmark itself it would count as a failure.
    """

    def setup(self, ratios):
        if ratios["reference"] is None:
            raise NotImplementedError("set NEURULES_REFERENCE_DIR to a Schascha1/neurules checkout")

    def track_ratio_vs_reference(self, ratios):
        return ratios["reference"]

    track_ratio_vs_reference.unit = "ours / reference (time per epoch)"

    track_ratio_vs_cart = None


REFERENCE_DATASETS = ["hepatitis", "tokyo1", "titanic", "ring", "magic"]


class ReferenceDatasets:
    """The paper's accuracy table on the data sets the reference repository ships.

    Same ``KFold(5, shuffle=True, random_state=42)`` folds for NeuRules (defaults, 10
    rules), the reference code (paper-script settings, run here), CART with 10 leaves,
    RIPPER (``max_rules=10``) and imodels' greedy rule list. The data are read from
    ``NEURULES_REFERENCE_DIR/data`` (not bundled: the repository has no licence);
    without it the benchmark is skipped. Heavy:
    minutes per data set on two cores, so it is meant for full (not quick) runs.
    """

    params = REFERENCE_DATASETS
    param_names = ["dataset"]
    timeout = 7200

    def setup_cache(self):
        import os
        import warnings

        import pandas as pd
        from sklearn.impute import SimpleImputer
        from sklearn.model_selection import KFold
        from sklearn.preprocessing import StandardScaler
        from sklearn.tree import DecisionTreeClassifier

        from sklearn_cispa.rules import NeurulesClassifier

        path = os.environ.get("NEURULES_REFERENCE_DIR")
        if not path:
            return {}  # (ASV passes no parameters to setup after a None cache)
        limit_torch_threads(1)
        try:
            reference = _reference_trainer()
        except NotImplementedError:
            reference = None
        results = {}
        for name in REFERENCE_DATASETS:
            file = os.path.join(path, "data", name, f"{name}.tsv.gz")
            if not os.path.exists(file):
                continue
            frame = pd.read_csv(file, sep="\t")
            X = frame.drop(columns="target").to_numpy(dtype=float)
            y = np.unique(frame["target"].to_numpy(), return_inverse=True)[1]
            X_raw = X
            rows = {"neurules": [], "reference": [], "cart": [], "ripper": [], "greedy": []}
            for train, test in KFold(5, shuffle=True, random_state=FOLD_SEED).split(X_raw):
                X = X_raw
                if np.isnan(X_raw).any():  # titanic: mean imputation fitted on the fold
                    X = SimpleImputer().fit(X_raw[train]).transform(X_raw)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf = NeurulesClassifier(n_rules=N_RULES, random_state=FOLD_SEED)
                    rows["neurules"].append(clf.fit(X[train], y[train]).score(X[test], y[test]))
                    if reference is not None:
                        scaler = StandardScaler().fit(X[train])
                        pred = _run_reference(
                            reference,
                            scaler.transform(X[train]),
                            y[train],
                            500,
                            X_test=scaler.transform(X[test]),
                        )
                        rows["reference"].append(float(np.mean(pred == y[test])))
                    tree = DecisionTreeClassifier(max_leaf_nodes=N_RULES, random_state=0)
                    rows["cart"].append(tree.fit(X[train], y[train]).score(X[test], y[test]))
                    for key, fitter in (("ripper", _fit_ripper), ("greedy", _fit_greedy)):
                        try:
                            _, predict, _, _ = fitter(X[train], y[train])
                        except ImportError:
                            continue
                        rows[key].append(float(np.mean(predict(X[test]) == y[test])))
            results[name] = {k: float(np.mean(v)) for k, v in rows.items() if v}
        return results

    def setup(self, results, dataset):
        if not results or dataset not in results:
            raise NotImplementedError("set NEURULES_REFERENCE_DIR to a Schascha1/neurules checkout")

    def track_accuracy_neurules(self, results, dataset):
        return results[dataset]["neurules"]

    def track_accuracy_reference(self, results, dataset):
        if "reference" not in results[dataset]:
            raise NotImplementedError("reference code not importable")
        return results[dataset]["reference"]

    def track_accuracy_cart(self, results, dataset):
        return results[dataset]["cart"]

    def track_accuracy_ripper(self, results, dataset):
        if "ripper" not in results[dataset]:
            raise NotImplementedError("wittgenstein is not installed")
        return results[dataset]["ripper"]

    def track_accuracy_greedy_rule_list(self, results, dataset):
        if "greedy" not in results[dataset]:
            raise NotImplementedError("imodels is not installed")
        return results[dataset]["greedy"]


# seeds 0 and 4 only in the CI smoke run (18 fits of about 6 s otherwise)
SPREAD_SEEDS = [0, 4] if SMOKE else list(range(9))


# the real survey table: seeds 0-8; seeds 2 and 7 (the worst without
# checkpoints) in the CI smoke run
FAIR_SEEDS = [2, 7] if SMOKE else list(range(9))


def _survey_table(n=6000, seed=0):
    """Survey-like table (the one of the stability test in tests/rules/test_neurules.py)."""
    from sklearn_cispa.report import survey_like_table

    return survey_like_table(n, seed)


class _SeedSpreadTracks:
    """The tracks of a seed-spread benchmark: its ``setup_cache`` returns, per value of its
    one parameter, the ``spread`` (max - min accuracy over the seeds), the worst seed's
    ``margin`` over the majority class and its ratio ``vs_cart`` to CART (a leading
    underscore: ASV collects these only through the classes below)."""

    def track_accuracy_spread(self, results, setting):
        return results[setting]["spread"]

    track_accuracy_spread.unit = "max - min accuracy over seeds"

    def track_worst_seed_over_majority(self, results, setting):
        return results[setting]["margin"]

    track_worst_seed_over_majority.unit = "accuracy - majority"

    def track_worst_seed_over_cart(self, results, setting):
        return results[setting]["vs_cart"]

    track_worst_seed_over_cart.unit = "ours / CART (accuracy)"


class SeedSpread(_SeedSpreadTracks):
    """Accuracy spread over seeds on a 6,000-row survey-like table (issue 24).

    4,000 training and 2,000 test rows (stratified split); NeuRules with its defaults and
    10 rule slots for seeds 0-8, with the default initial cuts (``cut_init="auto"``,
    random quantile boxes on this table) and with the reference's (``"range"``). Tracks
    max - min test accuracy over the seeds (issue 24's target: <= 0.015; measured 0.036
    for "auto" with checkpoints, seed 7 at 0.695, 0.038 before them, and 0.0285 for
    "range" before checkpoints, seed 4 at 0.698), the worst
    seed's margin over the majority class, and the worst seed's accuracy over CART with
    10 leaves (a ratio measured in the same run).
    """

    params = ["auto", "range"]
    param_names = ["cut_init"]
    timeout = 600

    def setup_cache(self):
        import warnings

        from sklearn.model_selection import train_test_split
        from sklearn.tree import DecisionTreeClassifier

        from sklearn_cispa.rules import NeurulesClassifier

        limit_torch_threads(1)
        X, y = _survey_table()
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=2000, stratify=y, random_state=0)
        majority = max(np.mean(yte), 1 - np.mean(yte))
        cart = DecisionTreeClassifier(max_leaf_nodes=N_RULES, random_state=0).fit(Xtr, ytr)
        results = {}
        for cut_init in self.params:
            accs = []
            for seed in SPREAD_SEEDS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf = NeurulesClassifier(
                        n_rules=N_RULES, cut_init=cut_init, random_state=seed, **SMOKE_FIT
                    )
                    accs.append(clf.fit(Xtr, ytr).score(Xte, yte))
            results[cut_init] = {
                "spread": float(max(accs) - min(accs)),
                "margin": float(min(accs) - majority),
                "vs_cart": float(min(accs) / cart.score(Xte, yte)),
            }
        return results


class FairSeedSpread(_SeedSpreadTracks):
    """Accuracy spread over seeds on the issue's real survey table (issue 24).

    Fair's affairs data from statsmodels (6,366 rows, 8 ordinal and count columns,
    majority class 0.6775; not bundled: "used with permission, all rights reserved"),
    the issue's protocol: 3-fold ``StratifiedKFold(shuffle=True, random_state=0)``, 10
    rule slots, defaults, seeds 0-8; each seed's score is its 3-fold mean. Tracks max -
    min over the seeds (target <= 0.015), the worst seed's margin over the majority
    class (target >= 0.025) and its ratio to CART with 10 leaves on the same folds,
    with ``checkpoints`` on (the default on this table) and off. Measured: spread
    0.0105 with checkpoints (worst seed 1: 0.7108), 0.030 without (seed 7: 0.6902).
    Skipped when statsmodels is missing.
    """

    params = ["auto", "off"]
    param_names = ["checkpoints"]
    timeout = 1200

    def setup_cache(self):
        import warnings

        from sklearn.model_selection import StratifiedKFold, cross_val_score
        from sklearn.tree import DecisionTreeClassifier

        from sklearn_cispa.rules import NeurulesClassifier

        try:
            sm = require("statsmodels.api")
        except NotImplementedError:
            return {}
        limit_torch_threads(1)
        data = sm.datasets.fair.load_pandas().data
        y = (data["affairs"] > 0).astype(int).to_numpy()
        X = data.drop(columns="affairs").to_numpy(dtype=float)
        cv = StratifiedKFold(3, shuffle=True, random_state=0)
        majority = 1 - y.mean()
        tree = DecisionTreeClassifier(max_leaf_nodes=N_RULES, random_state=0)
        cart = float(np.mean(cross_val_score(tree, X, y, cv=cv)))
        results = {}
        for name, checkpoints in (("auto", "auto"), ("off", False)):
            means = []
            for seed in FAIR_SEEDS:
                clf = NeurulesClassifier(
                    n_rules=N_RULES, checkpoints=checkpoints, random_state=seed, **SMOKE_FIT
                )
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    means.append(float(np.mean(cross_val_score(clf, X, y, cv=cv))))
            results[name] = {
                "spread": float(max(means) - min(means)),
                "margin": float(min(means) - majority),
                "vs_cart": float(min(means) / cart),
            }
        return results

    def setup(self, results, checkpoints):
        if not results:
            raise NotImplementedError("statsmodels is not installed")


def _planted_list_table(n, seed):
    """The spec's planted list (section 7.4): five U(0, 1) columns, no label noise."""
    from sklearn_cispa.report import planted_rule_table

    return planted_rule_table(n, seed)


class StepBudget:
    """Large tables with ``batch_size="auto"`` (issue 24): 100,000 rows, 10 epochs.

    The step budget gives 49 batches of 2048 rows per epoch (490 steps). Tracks, per
    seed 0-2 on 5,000 test rows, the 100,000-row accuracy over the accuracy of the
    500-row subsample fitted with the full defaults (target: >= 1; measured 0.972 /
    0.967 / 0.979, 0.976 / 0.854 / 0.976 with ``cut_init="range"``, against 0.958 /
    0.802 / 0.953), the same ratio for full batches
    over the same 10 epochs (10 steps; measured 0.73-0.74 accuracy) and the CPU
    seconds of the 100,000-row fit over the 500-row fit.
    """

    timeout = 600

    def setup_cache(self):
        import warnings

        from sklearn_cispa.rules import NeurulesClassifier

        limit_torch_threads(1)
        X, y = _planted_list_table(5000 if SMOKE else 100_000, 0)
        Xte, yte = _planted_list_table(5000, 99)
        ratios = {"auto": [], "full": [], "seconds": []}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for seed in (0,) if SMOKE else (0, 1, 2):
                t0 = time.process_time()
                small = NeurulesClassifier(random_state=seed, **SMOKE_FIT).fit(X[:500], y[:500])
                t1 = time.process_time()
                big = NeurulesClassifier(max_epochs=10, random_state=seed).fit(X, y)
                t2 = time.process_time()
                full = NeurulesClassifier(max_epochs=10, batch_size=None, random_state=seed)
                full.fit(X, y)
                base = small.score(Xte, yte)
                ratios["auto"].append(big.score(Xte, yte) / base)
                ratios["full"].append(full.score(Xte, yte) / base)
                ratios["seconds"].append((t2 - t1) / max(t1 - t0, 1e-9))
        return {k: float(np.mean(v)) for k, v in ratios.items()}

    def track_accuracy_100000_over_500_rows(self, ratios):
        return ratios["auto"]

    track_accuracy_100000_over_500_rows.unit = "accuracy ratio"

    def track_accuracy_full_batch_over_500_rows(self, ratios):
        return ratios["full"]

    track_accuracy_full_batch_over_500_rows.unit = "accuracy ratio"

    def track_cpu_seconds_100000_over_500_rows(self, ratios):
        return ratios["seconds"]

    track_cpu_seconds_100000_over_500_rows.unit = "CPU time ratio"
