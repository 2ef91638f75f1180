"""scikit-learn's estimator checks over every public estimator of sklearn-cispa.

A new estimator is picked up through ``all_estimators()`` as soon as its subpackage
re-exports it. Adding a method touches only the two tables below:

- ``TEST_PARAMS``: constructor arguments for test time (small epochs, tiny models, an
  inner estimator for wrappers). A list of dicts tests several configurations.
- ``EXPECTED_FAILED_CHECKS``: checks that cannot pass, each with its reason. They are
  run as strict xfails, so a check that starts passing fails the suite until it is
  removed from the table.

- ``ROBUSTNESS``: which invariances hold for the estimator, each exemption with its
  reason about the method, the hyperparameters given in feature units, and extreme but
  legal settings that must finish in bounded time. ``_FIXED_ON_OTHER_BRANCHES`` lists the
  robustness checks that fail today because of a bug being fixed elsewhere (strict xfail).

Keep one block per method, separated by a blank line, so that methods developed side
by side merge without conflicts.
"""

import inspect
import os
import pickle
import re
import signal
import warnings
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpydoc.docscrape import ClassDoc, FunctionDoc
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.estimator_checks import check_param_validation, parametrize_with_checks
from torch import nn

from sklearn_cispa.causal import GaussianNoiseAugmentation
from sklearn_cispa.redteam import ToyRubricJudge
from sklearn_cispa.utils import all_estimators, all_functions

# redteam (issue 22): a picklable objective for the searches, scoring a prompt by the toy
# judge's readability item (the searches take a user objective, not a target y)
_TOY_OBJECTIVE = partial(ToyRubricJudge(), response="OK")


# redteam (issue 36): GASPSuffixGenerator's generator, a fitted one-block GPT-2 of width 8
# kept through clone by FrozenEstimator; fit(X) takes its objective from its search
def _gasp_params():
    from sklearn.frozen import FrozenEstimator

    from sklearn_cispa.language import TransformerLanguageModel
    from sklearn_cispa.redteam import LatentBOSuffixSearch

    lm = TransformerLanguageModel(
        config={"n_layer": 1, "n_embd": 8, "n_head": 2}, block_size=16, max_steps=2,
        batch_size=8, random_state=0,
    ).fit(["0.5 -1.25 3.0", "draw a cat in teal light"] * 4)
    return {"generator": FrozenEstimator(lm), "search": LatentBOSuffixSearch(_TOY_OBJECTIVE),
            "n_rounds": 1, "n_candidates": 4, "n_queries": 2, "max_new_tokens": 4,
            "random_state": 0}

# --------------------------------------------------------------------------------------
# Table 1: test-time constructor arguments, keyed by class name.
# --------------------------------------------------------------------------------------
TEST_PARAMS = {
    # -- causal: AugmentedIVRegressor (issue 3)
    # (imported inline so that this block stays the only lines the method touches)
    "AugmentedIVRegressor": [
        {},
        {
            "augmentation": GaussianNoiseAugmentation(),
            "n_alphas": 3,
        },
        {
            "augmentation": GaussianNoiseAugmentation(),
            "alpha": 0.0,
            "n_augment": 2,
        },
    ],

    # -- causal: CausalMixtureDiscoverer, MixtureOfLinearRegressions (issue 4)
    "CausalMixtureDiscoverer": {
        "max_components": 2,
        "n_init": 1,
        "max_iter": 20,
        "random_state": 0,
    },
    "MixtureOfLinearRegressions": {
        "max_components": 2,
        "n_init": 1,
        "max_iter": 20,
        "random_state": 0,
    },

    # -- rules: NeurulesClassifier (issue 5)
    "NeurulesClassifier": {"n_rules": 6, "max_epochs": 200, "random_state": 0},

    # -- conformal: RCP1Conformal, SmoothedConformal (issue 6)
    "RCP1Conformal": [
        {
            "estimator": LogisticRegression(max_iter=200),
            "noise_augmentation": 2,
        },
        {
            "estimator": Ridge(),
            "noise_augmentation": 2,
        },
    ],
    "SmoothedConformal": {
        "estimator": LogisticRegression(max_iter=200),
        "n_draws": 4,
        "noise_augmentation": 2,
    },

    # -- uncertainty: MMIUncertainty (issue 7)
    "MMIUncertainty": [
        {
            "estimator": DecisionTreeClassifier(max_depth=3),
            "n_members": 3,
            "random_state": 0,
        },
        {
            "estimator": [
                DecisionTreeClassifier(max_depth=2, random_state=0),
                GaussianNB(),
            ],
            "method": "linear",
        },
    ],

    # -- certification: MIBPCertifier (issue 8)
    "MIBPCertifier": [
        {"bound": "interval", "max_epochs": 20, "lr": 0.5, "random_state": 0},
        {"hidden_layer_sizes": (3,), "bound": "interval", "max_epochs": 20, "lr": 0.5,
         "random_state": 0},
        # two hidden layers: interval boxes diverge (overflow error) after ~19 epochs at
        # epsilon=0.01, so the accuracy checks get epsilon=0 and enough epochs
        {"hidden_layer_sizes": (3, 2), "bound": "interval", "max_epochs": 30, "lr": 0.5,
         "epsilon": 0.0, "random_state": 0},
    ],

    # -- neural: MLPNetClassifier (issue 9)
    "MLPNetClassifier": [
        dict(hidden_layer_sizes=(16,), max_epochs=5, lr=1e-2, random_state=0),
        dict(hidden_layer_sizes=(16,), max_epochs=5, lr=1e-2, loss="maxsup",
             label_smoothing_end=0.2, random_state=0),
        dict(hidden_layer_sizes=(16,), max_epochs=5, lr=1e-2, optimizer="nanoadam",
             update_fraction=0.5, random_state=0),
        dict(hidden_layer_sizes=(16,), max_epochs=5, lr=1e-2, sparsity=0.5, sign_in=True,
             random_state=0),
    ],

    # -- federated: LocalSGDRegressor, LocalSGDClassifier (issue 18)
    "LocalSGDRegressor": [
        {"n_machines": 2, "local_steps": 2, "rounds": 50},
        {"n_machines": 2, "local_steps": 2, "rounds": 50, "algorithm": "minibatch",
         "batch_size": 8, "random_state": 0},
    ],
    "LocalSGDClassifier": [
        {"n_machines": 2, "local_steps": 2, "rounds": 50},
        {"n_machines": 3, "local_steps": 3, "rounds": 40, "batch_size": 16,
         "averaging": "samples", "random_state": 0},
    ],

    # -- watermark: BitwiseARGenerator, BitMarkDetector (issue 20)
    "BitwiseARGenerator": [
        {"n_bits": 2, "max_iter": 100, "random_state": 0},
        {"n_bits": 4, "C": 0.1, "max_iter": 100, "random_state": 0},
    ],
    "BitMarkDetector": [
        {},
        {"null": "fixed"},
        {"null": "gamma0", "windows": "flat", "count_repeats": False},
    ],

    # -- pruning: GraphonEstimator (issue 17)
    "GraphonEstimator": [{"n_blocks": 2}, {"n_blocks": 2, "distance": "cut", "sort": "rows"}],

    # -- memorization: CharMLPLanguageModel, CriticalNeuronLocator (issue 21)
    # the locator wraps a torch model: this one gives every feature (a "position") 8
    # hidden ReLU units, so that any number of features is a legal input
    "CharMLPLanguageModel": {"context": 2, "hidden": 8, "max_epochs": 2, "random_state": 0},
    # -- language: TransformerLanguageModel (issue 38): a one-block GPT-2 of width 8
    "TransformerLanguageModel": {
        "config": {"n_layer": 1, "n_embd": 8, "n_head": 2}, "block_size": 16,
        "max_steps": 2, "batch_size": 8, "random_state": 0,
    },
    "CriticalNeuronLocator": {
        "model": nn.Sequential(
            nn.Unflatten(1, (-1, 1)),
            nn.Linear(1, 8, dtype=torch.float64),
            nn.ReLU(),
            nn.Linear(8, 2, dtype=torch.float64),
        ),
        "random_state": 0,
    },

    # -- privacy: LiRAMembershipInference (issue 19)
    "LiRAMembershipInference": {
        "estimator": LogisticRegression(),
        "n_reference": 4,
        "random_state": 0,
    },

    # -- redteam: LatentBOSuffixSearch, RandomSubsetSearch (issue 22)
    "LatentBOSuffixSearch": [
        {"objective": _TOY_OBJECTIVE, "embedder": "char-tfidf", "random_state": 0},
        {"objective": _TOY_OBJECTIVE, "reducer": "pca", "acq_func": "LCB", "n_calls": 8,
         "random_state": 0},
    ],
    "RandomSubsetSearch": {"objective": _TOY_OBJECTIVE, "random_state": 0},
    # -- redteam: GASPSuffixGenerator (issue 36)
    "GASPSuffixGenerator": _gasp_params(),
}

# --------------------------------------------------------------------------------------
# Table 2: checks that cannot pass, keyed by class name, each with its reason.
# --------------------------------------------------------------------------------------
# redteam (issue 22): these checks fit on (X, y); clone, get/set_params, the
# no-work-in-__init__ and tag checks pass, and tests/redteam tests pickling after fit
_SEARCH_HAS_NO_Y = (
    "a suffix search has no target: it queries a user objective on candidate texts for "
    "one goal, and fit's second argument is that goal text, so fit(X, y) with a numeric "
    "y is invalid input"
)
_SEARCH_XY_CHECKS = (
    "check_fit_score_takes_y", "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters", "check_estimators_fit_returns_self",
    "check_readonly_memmap_input", "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_complex_data",
    "check_dtype_object", "check_estimators_empty_data_messages",
    "check_pipeline_consistency", "check_estimators_nan_inf", "check_estimator_sparse_tag",
    "check_estimator_sparse_array", "check_estimator_sparse_matrix",
    "check_estimators_pickle", "check_estimators_pickle(readonly_memmap=True)",
    "check_f_contiguous_array_estimator", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_fit2d_1sample", "check_fit2d_1feature",
    "check_dict_unchanged", "check_fit_idempotent", "check_fit_check_is_fitted",
    "check_n_features_in", "check_fit1d", "check_fit2d_predict1d",
)
EXPECTED_FAILED_CHECKS = {
    # -- causal: AugmentedIVRegressor (issue 3)

    # -- causal: CausalMixtureDiscoverer, MixtureOfLinearRegressions (issue 4)

    # -- rules: NeurulesClassifier (issue 5)

    # -- conformal: RCP1Conformal, SmoothedConformal (issue 6)

    # -- uncertainty: MMIUncertainty (issue 7)

    # -- certification: MIBPCertifier (issue 8)

    # -- neural: MLPNetClassifier (issue 9)

    # -- federated: LocalSGDRegressor, LocalSGDClassifier (issue 18)
    **dict.fromkeys(
        ("LocalSGDRegressor", "LocalSGDClassifier"),
        {
            "check_sample_weight_equivalence_on_dense_data": (
                "with groups=None the rows are split into machines by a seeded permutation "
                "of the rows, so repeating rows changes the split (and minibatch draws); "
                "with the same groups and the full batch integer weights equal repeated rows "
                "(tests/federated/test_local_sgd_claims_34.py, issue 34)"
            ),
        },
    ),
    # -- watermark: BitwiseARGenerator, BitMarkDetector (issue 20)
    "BitMarkDetector": {
        "check_n_features_in_after_fitting": (
            "a sample's z-test needs no fixed size: an image of any number of tokens has "
            "T windows and its green count is tested against the null at that T, so the "
            "detector scores images of other sizes than its calibration images (issue 37)"
        ),
    },

    # -- pruning: GraphonEstimator (issue 17)
    "GraphonEstimator": {
        # fit and transform take masks: a 2-D input is ONE mask (rows and columns are
        # neurons of two layers), transform returns one K*K histogram row per mask
        **dict.fromkeys(
            ("check_transformer_general", "check_transformer_general(readonly_memmap=True)",
             "check_transformer_data_not_an_array", "check_methods_sample_order_invariance",
             "check_methods_subset_invariance"),
            "a 2-D input is one mask (a bipartite graph), not a table of samples: transform "
            "returns one histogram per mask, and permuting or subsetting the rows of a mask "
            "(its neurons) changes its degree-sorted blocks",
        ),
        **dict.fromkeys(
            ("check_n_features_in", "check_n_features_in_after_fitting"),
            "masks of any widths are accepted (every histogram is K x K), so there is no "
            "fixed number of input features to record or check",
        ),
        **dict.fromkeys(
            ("check_fit2d_1sample", "check_fit2d_1feature"),
            "a mask with one row or column is narrower than n_blocks blocks and raises a "
            "ValueError naming the minimum width (empty blocks would be NaN cells)",
        ),
    },

    # -- memorization: CharMLPLanguageModel, CriticalNeuronLocator (issue 21)
    "CharMLPLanguageModel": {
        "check_n_features_in": (
            "a language model reads documents of any length through a window of `context` "
            "symbols: it has no fixed number of features"
        ),
        "check_n_features_in_after_fitting": (
            "a language model reads documents of any length through a window of `context` "
            "symbols: it has no fixed number of features"
        ),
        "check_estimators_nan_inf": (
            "every value of a document is a symbol of the vocabulary, NaN and inf included: "
            "they are modelled, not rejected"
        ),
    },
    "TransformerLanguageModel": {
        "check_n_features_in": (
            "a language model reads documents of any number of tokens: it has no fixed "
            "number of features"
        ),
        "check_n_features_in_after_fitting": (
            "a language model reads documents of any number of tokens: it has no fixed "
            "number of features"
        ),
        "check_estimators_nan_inf": (
            "with the character tokenizer every value of a document is a symbol of the "
            "vocabulary, NaN and inf included: they are modelled, not rejected"
        ),
    },
    "CriticalNeuronLocator": {
        "check_estimators_overwrite_params": (
            "the model parameter is a torch module, and joblib.hash of a deep copy of a "
            "torch module differs from the module's own (measured before any fit); the "
            "memorization tests check that fit leaves the weights and modes unchanged"
        ),
        "check_estimators_dtypes": (
            "integer inputs are token ids and reach the model as int64 tensors; the "
            "real-valued test model cannot multiply them"
        ),
    },

    # -- privacy: LiRAMembershipInference (issue 19)
    "LiRAMembershipInference": {
        "check_classifiers_train": (
            "a membership-inference attack has no predict: its output is a membership "
            "score per (row, label) for a given target model, not a label per row"
        ),
        "check_classifiers_train(readonly_memmap=True)": (
            "a membership-inference attack has no predict: its output is a membership "
            "score per (row, label) for a given target model, not a label per row"
        ),
        "check_classifiers_train(readonly_memmap=True,X_dtype=float32)": (
            "a membership-inference attack has no predict: its output is a membership "
            "score per (row, label) for a given target model, not a label per row"
        ),
        "check_classifiers_classes": (
            "a membership-inference attack has no predict: its output is a membership "
            "score per (row, label) for a given target model, not a label per row"
        ),
        "check_classifier_data_not_an_array": (
            "no predict to compare between array types, and each reference trains on a "
            "random half of the check's tiny pool, which can hold a single class"
        ),
        "check_supervised_y_2d": (
            "a membership-inference attack has no predict: its output is a membership "
            "score per (row, label) for a given target model, not a label per row"
        ),
        "check_n_features_in_after_fitting": (
            "score_samples scores (X, y) for a target model, so it cannot be called "
            "with X alone as the check does"
        ),
        "check_methods_sample_order_invariance": (
            "score_samples scores (X, y) for a target model, so it cannot be called "
            "with X alone as the check does"
        ),
        "check_methods_subset_invariance": (
            "score_samples scores (X, y) for a target model, so it cannot be called "
            "with X alone as the check does"
        ),
    },

    # -- redteam: LatentBOSuffixSearch, RandomSubsetSearch (issue 22)
    **{name: dict.fromkeys(_SEARCH_XY_CHECKS, _SEARCH_HAS_NO_Y)
       for name in ("LatentBOSuffixSearch", "RandomSubsetSearch")},
    # -- redteam: GASPSuffixGenerator (issue 36); an empty X is refused before the y
    "GASPSuffixGenerator": dict.fromkeys(
        [c for c in _SEARCH_XY_CHECKS if c != "check_estimators_empty_data_messages"],
        "the loop has no target y: fit's second argument is the objective (a callable "
        "prompt -> score that the loop queries), so fit(X, y) with a numeric y is invalid "
        "input",
    ),
}


# --------------------------------------------------------------------------------------
# Table 3: robustness on the data users bring (issue 12), keyed by class name.
# --------------------------------------------------------------------------------------
# Each block states, for the estimator:
#   "offset"       every feature shifted by +1000 (a year, a temperature in kelvin),
#   "scale"        every feature multiplied by 1e-6 and by 1e6 (a change of units),
#   "column_scale" features in different units at once (1e-6, 1, 1e6 per column),
#   "row_order"    training (and calibration) rows permuted,
# each mapped to True when fitted outputs and fitted structure are unchanged, or to the
# reason (about the method) why they legitimately change, and
#   "default_scoring" GridSearchCV over a Pipeline and cross_val_score with the
#                   estimator's default score give finite scores (True or the reason
#                   not). Optional keys:
#   "params"        constructor arguments for these checks (default: the first
#                   TEST_PARAMS configuration), for example an inner estimator that is
#                   itself invariant, so that the check tests the wrapper;
#   "unit_params"   hyperparameters in the units of X, rescaled together with X;
#   "structure"     fitted attributes compared exactly (the fitted structure);
#   "rtol"          relative tolerance for float outputs (default 1e-6);
#   "extreme_params" extreme but legal hyperparameters: each must finish within the hang
#                   guard and give finite outputs, a warning or a clear ValueError.
# Checks that every estimator passes, with no exemption: the same random_state gives
# identical outputs, also after pickling ("determinism"); no NaN/inf output without an
# error or a warning, on the data and with a heavy-tailed (Cauchy) feature
# ("finite_outputs"); features of order 1e150 and 1e-150 give finite outputs (equal to
# the unit-scale ones where "scale" holds) or a ValueError ("extreme_values").
_STOCHASTIC_PER_ROW = (
    "noise is drawn row by row from one stream, so permuting the rows pairs rows with "
    "other draws; the result has the same distribution, not the same value"
)
_GRADIENT_ON_RAW_INPUTS = (
    "trained by gradient steps on the raw inputs: the units of X set the effective "
    "learning rate and the initialisation's fit; standardise in a Pipeline"
)
_ONE_SIGMA = (
    "sigma is one noise level for all features, so features in different units get "
    "different relative noise"
)
_MINIBATCH_ORDER = "mini-batches follow the row order, so SGD visits other batches"
# -- rules: NeurulesClassifier (issue 5); found by the invariance property (issue 35)
_PRINTED_CUTS = (
    "the rules split the training rows exactly as in the original units (a property test "
    "in tests/rules), but each printed threshold is a short number inside the gap between "
    "two training values, chosen in the caller's units, so a held-out value inside such a "
    "gap can fall on the other side"
)
# -- federated: LocalSGDRegressor, LocalSGDClassifier (issue 18)
_LOCAL_SGD_RAW = (
    "a fixed number of gradient steps on the raw features: an offset or per-column units "
    "change the conditioning of every machine's Hessian and so the model after R rounds "
    "(step_size='auto' follows only the largest eigenvalue); standardise in a Pipeline"
)
_LOCAL_SGD_INTERCEPT = (
    "the column of ones of the intercept keeps its units while the features are rescaled, "
    "so the conditioning and the model after R rounds change (without an intercept and "
    "with step_size='auto' the fit is invariant, tested in tests/federated)"
)
_LOCAL_SGD_SPLIT = (
    "with groups=None the rows are dealt to machines by a seeded permutation of their "
    "positions, so permuted rows land on other machines (with groups given, full-batch "
    "training is invariant, tested in tests/federated)"
)
_LOCAL_SGD_EXTREME = {
    "step_size_1e3": {"step_size": 1e3},
    "step_size_1e-300": {"step_size": 1e-300},
    "one_row_per_machine": {"n_machines": 80},
    "local_steps_2000_batch_1_noise_1e3": {
        "local_steps": 2000, "rounds": 3, "batch_size": 1, "gradient_noise": 1e3,
    },
    "minibatch_rounds_5000": {"algorithm": "minibatch", "rounds": 5000, "local_steps": 1},
}
_GREY_LEVELS = (
    "inputs are grey levels of a bitwise generator: values are rounded and clipped to "
    "0 .. 2**n_bits - 1, so shifted or rescaled pixels are other images"
)
_BITS = (
    "inputs are bits: values are rounded and clipped to {0, 1}, so shifted or rescaled "
    "values are other bit strings"
)
_CANDIDATES_ARE_TEXT = (
    "the searches take candidate texts: a numeric row is written out as text and "
    "embedded by character n-grams, so new numbers are new candidates, not new units"
)
_CANDIDATE_ORDER = (
    "the random initial candidates are drawn by position, so permuted candidates meet "
    "other draws; the result has the same distribution, not the same value"
)
_NO_XY_SCORE = (
    "a search has no (X, y) score: it calls a user objective on its candidates, so "
    "GridSearchCV and cross_val_score do not apply (sweep with ParameterGrid)"
)

ROBUSTNESS = {
    # -- causal: AugmentedIVRegressor (issue 3)
    "AugmentedIVRegressor": {
        "offset": True,
        "scale": True,
        "column_scale": True,
        "row_order": True,
        "default_scoring": True,
        "extreme_params": {
            "alpha_1e12": {"alpha": 1e12},
            "alpha_range_1e-12_1e12": {"n_alphas": 3, "alpha_range": (1e-12, 1e12)},
        },
    },

    # -- causal: CausalMixtureDiscoverer, MixtureOfLinearRegressions (issue 4)
    "CausalMixtureDiscoverer": {
        "structure": ("adjacency_", "causal_order_", "n_components_"),
        "offset": True,
        "scale": True,
        "column_scale": True,
        "row_order": True,
        "default_scoring": (
            "unsupervised structure learning: it has no score method, so a default-scoring "
            "search has nothing to rank (score the graph against a known one instead)"
        ),
        "extreme_params": {
            "one_em_step": {"max_components": 4, "max_iter": 1},
            "no_pruning": {"mi_threshold": 0.0, "prune_alpha": 1.0},
            "separation_1e6": {"min_separation": 1e6},
            "gaussian_bic_only": {"heavy_tails": False, "min_separation": 0.0},
            "flexible_noise": {"flexible_noise": True, "heavy_tails": False},
        },
    },
    "MixtureOfLinearRegressions": {
        "structure": ("n_components_",),
        "offset": True,
        "scale": True,
        "column_scale": True,
        "row_order": True,
        "default_scoring": True,
        "extreme_params": {
            "one_em_step_8_components": {"max_components": 8, "max_iter": 1},
            "5_components_500_steps": {"n_components": 5, "max_iter": 500},
            "separation_1e6": {"min_separation": 1e6},
            "gaussian_bic_only": {"heavy_tails": False, "min_separation": 0.0},
        },
    },

    # -- rules: NeurulesClassifier (issue 5)
    "NeurulesClassifier": {
        "params": {"n_rules": 4, "max_epochs": 50},
        "offset": _PRINTED_CUTS,
        "scale": _PRINTED_CUTS,
        "column_scale": _PRINTED_CUTS,
        "row_order": _MINIBATCH_ORDER,
        "default_scoring": True,
        "extreme_params": {
            "one_rule_full_support": {"n_rules": 1, "max_epochs": 2, "min_support": 1.0},
            "lr_10": {"max_epochs": 20, "lr": 10.0},
            "lr_10_three_runs": {"max_epochs": 10, "lr": 10.0, "n_init": 3},
            "quantile_cuts_lr_10": {"max_epochs": 20, "lr": 10.0, "cut_init": "quantile"},
            "checkpoints_lr_10": {"max_epochs": 20, "lr": 10.0, "checkpoints": True},
        },
    },

    # -- conformal: RCP1Conformal, SmoothedConformal (issue 6)
    "RCP1Conformal": {
        # the inner model standardises, so the check tests the wrapper's own invariance
        "params": {
            "estimator": make_pipeline(StandardScaler(), LogisticRegression()),
            "noise_augmentation": 2,
        },
        "unit_params": ("sigma", "radius"),
        "offset": True,
        "scale": True,
        "column_scale": _ONE_SIGMA,
        "row_order": _STOCHASTIC_PER_ROW,
        "default_scoring": True,
        "extreme_params": {
            "radius_8_sigmas": {"sigma": 0.25, "radius": 2.0},
            "alpha_1e-300": {"alpha": 1e-300},
            "alpha_1-1e-10": {"alpha": 1 - 1e-10},
        },
    },
    "SmoothedConformal": {
        "params": {
            "estimator": make_pipeline(StandardScaler(), LogisticRegression()),
            "noise_augmentation": 2,
        },
        "unit_params": ("sigma", "radius"),
        "offset": True,
        "scale": True,
        "column_scale": _ONE_SIGMA,
        "row_order": _STOCHASTIC_PER_ROW,
        "default_scoring": True,
        "extreme_params": {
            "radius_8_sigmas": {"sigma": 0.25, "radius": 2.0},
            "alpha_1e-300": {"alpha": 1e-300},
            "alpha_1-1e-10": {"alpha": 1 - 1e-10},
        },
    },

    # -- uncertainty: MMIUncertainty (issue 7)
    "MMIUncertainty": {
        # scikit-learn's trees treat a feature spanning less than 1e-7 as constant, so the
        # members standardise first; the check then tests the ensemble itself
        "params": {
            "estimator": make_pipeline(StandardScaler(), DecisionTreeClassifier(max_depth=3)),
            "n_members": 3,
        },
        "offset": True,
        "scale": True,
        "column_scale": True,
        "row_order": "members are fitted on bootstrap samples drawn by row index",
        "default_scoring": True,
        "extreme_params": {
            "two_full_depth_trees": {"estimator": DecisionTreeClassifier(), "n_members": 2},
            "30_stumps_linear": {
                "estimator": DecisionTreeClassifier(max_depth=1),
                "n_members": 30,
                "method": "linear",
            },
        },
    },

    # -- certification: MIBPCertifier (issue 8)
    "MIBPCertifier": {
        "unit_params": ("epsilon",),
        "offset": _GRADIENT_ON_RAW_INPUTS,
        "scale": _GRADIENT_ON_RAW_INPUTS,
        "column_scale": _GRADIENT_ON_RAW_INPUTS,
        "row_order": True,
        "default_scoring": True,
        "extreme_params": {
            "epsilon_1e3": {"epsilon": 1e3},
            "epsilon_1e-300": {"epsilon": 1e-300},
            "lp_epsilon_0": {"bound": "lp", "epsilon": 0.0},
            # every training label may flip; the solves of the whole fit share time_limit
            # (issue 35: before, each solve had it, 2 per parameter per epoch)
            "mibp_all_flips": {
                "bound": "mibp", "label_flips": 80, "time_limit": 0.1, "max_epochs": 3
            },
        },
    },

    # -- neural: MLPNetClassifier (issue 9)
    "MLPNetClassifier": {
        "offset": _GRADIENT_ON_RAW_INPUTS,
        "scale": _GRADIENT_ON_RAW_INPUTS,
        "column_scale": _GRADIENT_ON_RAW_INPUTS,
        "row_order": _MINIBATCH_ORDER,
        "default_scoring": True,
        "extreme_params": {
            "sign_in_sgd_lr_10": {"sign_in": True, "optimizer": "sgd", "lr": 10.0},
            "adam_lr_1e3": {"lr": 1e3},
            "linear_batch_1": {"hidden_layer_sizes": (), "max_epochs": 2, "batch_size": 1},
        },
    },

    # -- federated: LocalSGDRegressor, LocalSGDClassifier (issue 18)
    "LocalSGDRegressor": {
        "offset": _LOCAL_SGD_RAW,
        "scale": _LOCAL_SGD_INTERCEPT,
        "column_scale": _LOCAL_SGD_RAW,
        "row_order": _LOCAL_SGD_SPLIT,
        "default_scoring": True,
        "extreme_params": _LOCAL_SGD_EXTREME,
    },
    "LocalSGDClassifier": {
        "offset": _LOCAL_SGD_RAW,
        "scale": _LOCAL_SGD_INTERCEPT,
        "column_scale": _LOCAL_SGD_RAW,
        "row_order": _LOCAL_SGD_SPLIT,
        "default_scoring": True,
        "extreme_params": _LOCAL_SGD_EXTREME,
    },

    # -- watermark: BitwiseARGenerator, BitMarkDetector (issue 20)
    "BitwiseARGenerator": {
        "offset": _GREY_LEVELS,
        "scale": _GREY_LEVELS,
        "column_scale": _GREY_LEVELS,
        "row_order": True,
        "default_scoring": True,
        "extreme_params": {
            "8_bits_C_1e10": {"n_bits": 8, "C": 1e10, "max_iter": 50},
            "C_1e-10_one_iteration": {"C": 1e-10, "max_iter": 1},
            "16_bits": {"n_bits": 16, "max_iter": 20},
        },
    },
    "BitMarkDetector": {
        # the calibration z-scores (z_clean_) follow the rows; the null is compared
        "structure": ("gamma0_", "threshold_", "n_windows_"),
        "offset": _BITS,
        "scale": _BITS,
        "column_scale": _BITS,
        "row_order": True,
        "default_scoring": (
            "a detector without a supervised target or a score method: delta is a "
            "generation-time setting, so there is nothing for a default-scoring search "
            "to rank (sweep delta with ParameterGrid and score with tpr_at_fpr)"
        ),
        "extreme_params": {
            "fpr_1e-300": {"fpr": 1e-300},
            "fpr_1-1e-12": {"fpr": 1 - 1e-12},
            "z_threshold_1e300": {"null": "gamma0", "z_threshold": 1e300},
            "long_keyless_green": {"green": ("0101", "1100", "0011"), "windows": "flat"},
        },
    },

    # -- pruning: GraphonEstimator (issue 17)
    # X is one mask (a weighted bipartite graph): rows are neurons, not samples
    "GraphonEstimator": {
        "structure": ("graphon_", "histograms_", "density_"),
        "offset": (
            "the graphon is the mean edge weight of each block, in the units of the mask "
            "entries, so an offset shifts every cell (the degree order is unchanged)"
        ),
        "scale": (
            "the graphon is the mean edge weight of each block, in the units of the mask "
            "entries, so it scales with them (the degree order is unchanged)"
        ),
        "column_scale": (
            "columns are neurons: rescaling some of them changes their degrees, hence the "
            "sorted order and the block means"
        ),
        "row_order": (
            "rows of equal degree keep their given order (ties broken by index), so "
            "permuting the rows of a 0/1 mask moves tied rows between blocks; without ties "
            "the histogram is unchanged"
        ),
        "default_scoring": True,
        "extreme_params": {
            "one_block": {"n_blocks": 1},
            "as_many_blocks_as_columns": {"n_blocks": 3, "distance": "cut"},
        },
    },

    # -- memorization: CharMLPLanguageModel, CriticalNeuronLocator (issue 21)
    "CharMLPLanguageModel": {
        # each distinct value of a row (a document) is one symbol of the vocabulary
        "offset": True,
        "scale": True,
        "column_scale": (
            "each value is a symbol and the vocabulary is sorted: rescaling columns apart "
            "reorders the symbols, so the network starts from another initialisation"
        ),
        "row_order": _MINIBATCH_ORDER,
        "default_scoring": True,
        "extreme_params": {
            "context_64_one_unit": {"context": 64, "hidden": 1, "max_epochs": 1},
            "lr_1e3": {"lr": 1e3, "max_epochs": 3},
            "batch_1_alpha_1e6": {"batch_size": 1, "alpha": 1e6, "max_epochs": 1},
        },
    },
    "TransformerLanguageModel": {
        # each distinct value of a row (a document) is one symbol of the vocabulary
        "offset": True,
        "scale": True,
        "column_scale": (
            "each value is a symbol and the vocabulary is sorted: rescaling columns apart "
            "reorders the symbols, so the embeddings start from another initialisation"
        ),
        "row_order": _MINIBATCH_ORDER,
        "default_scoring": True,
        "extreme_params": {
            "block_1_one_step": {"block_size": 1, "max_steps": 1},
            "batch_1_decay_warmup": {"batch_size": 1, "weight_decay": 10.0,
                                     "warmup_steps": 5},
        },
    },
    "CriticalNeuronLocator": {
        "structure": ("layers_",),
        "offset": (
            "the reference statistics are the model's activations on X: shifting the "
            "inputs changes the activations and thus their reference means and deviations"
        ),
        "scale": (
            "the reference statistics are the model's activations on X: rescaling the "
            "inputs changes the activations and thus their reference means and deviations"
        ),
        "column_scale": (
            "the reference statistics are the model's activations on X: rescaling the "
            "inputs changes the activations and thus their reference means and deviations"
        ),
        "row_order": True,
        "default_scoring": (
            "it wraps a trained model and records statistics; it has no score method, so "
            "a default-scoring search has nothing to rank"
        ),
        "extreme_params": {
            "batch_1_mean_abs": {"batch_size": 1, "aggregate": "mean_abs"},
            "hook_a_linear_layer": {"layers": ["3"], "signed": False},
        },
    },

    # -- privacy: LiRAMembershipInference (issue 19)
    "LiRAMembershipInference": {
        # the references standardise, so the check tests the attack's own invariance
        "params": {
            "estimator": make_pipeline(StandardScaler(), LogisticRegression()),
            "n_reference": 4,
        },
        "structure": ("keep_", "ref_stats_", "mu_in_", "mu_out_", "sigma_in_", "sigma_out_"),
        "rtol": 1e-5,
        "offset": True,
        "scale": True,
        "column_scale": True,
        "row_order": (
            "the keep design is drawn by pool position, so permuting the pool gives each "
            "example other reference models (the same distribution, not the same value)"
        ),
        "default_scoring": (
            "a membership audit, not a predictor: it has no predict or score, so a "
            "default-scoring search has nothing to rank (search over the wrapped estimator "
            "and pass its best model as the target)"
        ),
        "extreme_params": {
            "two_references_bernoulli": {"n_reference": 2, "design": "bernoulli"},
            "saturated_per_example_sigma": {
                "estimator": LogisticRegression(C=1e10, max_iter=1000),
                "fix_variance": False,
            },
            "64_references": {"n_reference": 64},
        },
    },

    # -- redteam: LatentBOSuffixSearch, RandomSubsetSearch (issue 22)
    "LatentBOSuffixSearch": {
        "offset": _CANDIDATES_ARE_TEXT,
        "scale": _CANDIDATES_ARE_TEXT,
        "column_scale": _CANDIDATES_ARE_TEXT,
        "row_order": _CANDIDATE_ORDER,
        "default_scoring": _NO_XY_SCORE,
        "params": {"objective": _TOY_OBJECTIVE, "reducer": "pca", "random_state": 0},
        "structure": ("best_score_", "latent_", "n_queries_", "chosen_"),
        "extreme_params": {
            "budget_above_n_candidates": {"n_calls": 500, "n_initial_points": 300},
            "tsne_5d_exact": {"reducer": "tsne", "n_components": 5},
            "raw_embeddings_lcb_kappa_0": {"reducer": None, "acq_func": "LCB", "kappa": 0.0},
            "ei_xi_1e6": {"xi": 1e6},
            "stop_at_first_query": {"success_threshold": 1e9},
        },
    },
    "RandomSubsetSearch": {
        "offset": _CANDIDATES_ARE_TEXT,
        "scale": _CANDIDATES_ARE_TEXT,
        "column_scale": _CANDIDATES_ARE_TEXT,
        "row_order": _CANDIDATE_ORDER,
        "default_scoring": _NO_XY_SCORE,
        "structure": ("best_score_", "n_queries_", "chosen_"),
        "extreme_params": {"budget_above_n_candidates": {"n_calls": 10**6}},
    },
    # -- redteam: GASPSuffixGenerator (issue 36): fit(X) reads each row as a goal prompt
    "GASPSuffixGenerator": {
        **dict.fromkeys(
            ("offset", "scale", "column_scale"),
            "the goal prompts are texts: a numeric row is written out as a prompt that the "
            "generator continues character by character, so new numbers are new prompts",
        ),
        "row_order": (
            "each prompt gets the child seed of its position for sampling and search, and "
            "the ORPO batches follow the pairs' order, so permuted prompts meet other draws"
        ),
        "default_scoring": (
            "the loop has no (X, y) score: it queries a user objective, so GridSearchCV "
            "and cross_val_score do not apply (compare settings by ASR@k on held-out goals)"
        ),
        "structure": ("n_queries_", "best_suffixes_"),
        "extreme_params": {
            "one_candidate_many_queries": {"n_candidates": 1, "n_queries": 50},
            "sft_only": {"orpo_lambda": 0.0},
            "suffix_longer_than_context": {"max_new_tokens": 64},
        },
    },

}

# Robustness checks that fail today because of a bug that another branch is fixing.
# They run as strict xfails: when the fix merges, the check passes, the suite fails,
# and the entry is deleted here. Keys are (class name, check); values say where.
_FIXED_ON_OTHER_BRANCHES = {}


def _instances():
    for name, cls in all_estimators():
        configs = TEST_PARAMS.get(name, {})
        for params in configs if isinstance(configs, list) else [configs]:
            yield cls(**{k: clone(v, safe=False) for k, v in params.items()})


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS.get(type(estimator).__name__, {})


ESTIMATORS = list(_instances())


def test_tables_name_only_public_estimators():
    names = {name for name, _ in all_estimators()}
    assert set(TEST_PARAMS) <= names, set(TEST_PARAMS) - names
    assert set(EXPECTED_FAILED_CHECKS) <= names, set(EXPECTED_FAILED_CHECKS) - names
    for checks in EXPECTED_FAILED_CHECKS.values():
        assert all(isinstance(r, str) and r.strip() for r in checks.values())


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_param_validation(estimator):
    check_param_validation(type(estimator).__name__, estimator)


def _public_classes_and_functions():
    from sklearn_cispa.utils.discovery import _public_objects

    for name, obj, _ in _public_objects():
        if inspect.isclass(obj) or inspect.isfunction(obj):
            yield name, obj


PUBLIC = sorted(_public_classes_and_functions(), key=lambda p: p[0])


@pytest.mark.parametrize("name, obj", PUBLIC, ids=[n for n, _ in PUBLIC])
def test_numpydoc_docstring(name, obj):
    """Every public class and function has a numpydoc docstring with Examples.

    Classes document every ``__init__`` parameter in the same order, functions every
    argument.
    """
    assert obj.__doc__, f"{name} has no docstring"
    doc = ClassDoc(obj) if inspect.isclass(obj) else FunctionDoc(obj)
    assert doc["Summary"], f"{name}: docstring has no summary line"
    assert "".join(doc["Examples"]).strip(), f"{name}: docstring has no Examples section"
    func = obj.__init__ if inspect.isclass(obj) else obj
    if inspect.isclass(obj) and func is object.__init__:
        return
    expected = [
        p.name
        for p in inspect.signature(func).parameters.values()
        if p.name not in {"self", "args", "kwargs"}
        and p.kind not in {p.VAR_POSITIONAL, p.VAR_KEYWORD}
    ]
    documented = [n for p in doc["Parameters"] for n in p.name.split(", ")]
    documented = [n.lstrip("*") for n in documented]
    assert documented == expected, f"{name}: documented {documented}, signature {expected}"


def test_discovery_lists_functions():
    # functions exported by subpackages are callables with a module in sklearn_cispa
    for name, func in all_functions():
        assert func.__module__.startswith("sklearn_cispa."), name


# --------------------------------------------------------------------------------------
# Robustness harness (driven by ROBUSTNESS and _FIXED_ON_OTHER_BRANCHES above)
# --------------------------------------------------------------------------------------
_STATED = ("offset", "scale", "column_scale", "row_order", "default_scoring")
_ALWAYS = ("determinism", "finite_outputs", "extreme_values")
_OFFSET = 1000.0
_SCALES = (1e-6, 1e6)
_COLUMN_SCALE = np.array([1e-6, 1.0, 1e6])
_EXTREME_SCALES = (1e-150, 1e150)
# A hang guard, not a speed assertion: each fit here takes well under a second of CPU.
# It counts the process's CPU time (not wall time), so a loaded machine does not trip it.
_HANG_GUARD_S = 10
# warnings about the libraries' APIs do not tell the user that an output is NaN
_NOT_A_DIAGNOSIS = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)
_OUTPUT_METHODS = (
    "predict",
    "predict_proba",
    "decision_function",
    "transform",
    "predict_set",
    "predict_interval",
    "certify",
)


@contextmanager
def _hang_guard(seconds, what):
    """Fail with a clear message when the block uses more than ``seconds`` of CPU time."""
    if not hasattr(signal, "SIGPROF"):  # pragma: no cover - Windows: no guard
        yield
        return

    def _raise(signum, frame):
        raise TimeoutError(f"{what} did not finish within {seconds} s of CPU (hang guard)")

    previous = signal.signal(signal.SIGPROF, _raise)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def _robustness_estimator(name, cls, **overrides):
    entry = ROBUSTNESS[name]
    if "params" in entry:
        params = dict(entry["params"])
    else:
        configs = TEST_PARAMS.get(name, {})
        params = dict(configs[0] if isinstance(configs, list) else configs)
    params.update(overrides)
    est = cls(**{k: clone(v, safe=False) for k, v in params.items()})
    if "random_state" in est.get_params() and est.get_params()["random_state"] is None:
        est.set_params(random_state=0)
    return est


def _robustness_data(est):
    """Tiny, well-posed data of the estimator's kind: (X_fit, y_fit, X_cal, y_cal)."""
    rng = np.random.RandomState(0)
    n = 120
    if is_classifier(est) or is_regressor(est):
        X = rng.normal(size=(n, 3))
        signal_ = X @ np.array([1.5, -1.0, 0.5])
        if is_classifier(est):
            y = (signal_ + 0.5 * rng.normal(size=n) > 0).astype(np.int64)
        else:
            y = 3.0 * signal_ + 0.1 * rng.normal(size=n)
    else:  # unsupervised: a linear chain 0 -> 1 -> 2 with non-Gaussian noise
        e = rng.uniform(-1, 1, size=(n, 3))
        x0 = e[:, 0]
        x1 = 2.0 * x0 + e[:, 1]
        x2 = -1.5 * x1 + e[:, 2]
        X, y = np.column_stack([x0, x1, x2]), None
    cut = 80
    return X[:cut], None if y is None else y[:cut], X[cut:], None if y is None else y[cut:]


def _heavy_tailed(data):
    X, y, X_cal, y_cal = (None if a is None else np.array(a, copy=True) for a in data)
    rng = np.random.RandomState(2)
    X[:, 0] = rng.standard_cauchy(len(X))
    X_cal[:, 0] = rng.standard_cauchy(len(X_cal))
    return X, y, X_cal, y_cal


def _call_outputs(est, X):
    out = {}
    for method in _OUTPUT_METHODS:
        if not hasattr(est, method):  # also hides methods switched off by available_if
            continue
        func = getattr(type(est), method)
        required = [
            p
            for p in list(inspect.signature(func).parameters.values())[2:]
            if p.default is p.empty and p.kind not in {p.VAR_POSITIONAL, p.VAR_KEYWORD}
        ]
        if required:  # for example a method that also needs y
            continue
        value = getattr(est, method)(X)
        out[method] = [np.asarray(v) for v in value] if isinstance(value, tuple) else value
    return out


def _fit_outputs(est, data, transform_X=lambda X: X, rows=None):
    """Fit (and calibrate) ``est``, return its outputs and fitted structure.

    Raises when an output holds NaN or infinity and no warning was issued.
    """
    X, y, X_cal, y_cal = data
    X_test = transform_X(X_cal)
    if rows is not None:
        X, y = X[rows], None if y is None else y[rows]
        X_cal, y_cal = X_cal[::-1], None if y_cal is None else y_cal[::-1]
    X, X_cal = transform_X(X), transform_X(X_cal)
    X_before, X_cal_before = X.copy(), X_cal.copy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X) if y is None else est.fit(X, y)
        if hasattr(est, "calibrate"):
            est.calibrate(X_cal, y_cal)
        outputs = {} if y is None else _call_outputs(est, X_test)
    np.testing.assert_array_equal(X, X_before, err_msg="fit modified the caller's X")
    np.testing.assert_array_equal(X_cal, X_cal_before)
    for attr in ROBUSTNESS[type(est).__name__].get("structure", ()):
        outputs[attr] = getattr(est, attr)
    said_so = [w for w in caught if not issubclass(w.category, _NOT_A_DIAGNOSIS)]
    for key, value in outputs.items():
        for arr in value if isinstance(value, list) else [value]:
            arr = np.asarray(arr)
            if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)) and not said_so:
                raise AssertionError(
                    f"{type(est).__name__}.{key} returned NaN or infinity without an "
                    "error or a warning"
                )
    return outputs


def _assert_same_outputs(expected, actual, rtol, what):
    assert expected.keys() == actual.keys(), what
    for key in expected:
        exp, act = expected[key], actual[key]
        exp = exp if isinstance(exp, list) else [exp]
        act = act if isinstance(act, list) else [act]
        for e, a in zip(exp, act, strict=True):
            e, a = np.asarray(e), np.asarray(a)
            msg = f"{what}: {key} changed"
            if e.dtype.kind in "fc":
                finite = np.isfinite(e)
                np.testing.assert_array_equal(finite, np.isfinite(a), err_msg=msg)
                atol = rtol * max(1.0, float(np.max(np.abs(e[finite]), initial=0.0)))
                np.testing.assert_allclose(a[finite], e[finite], rtol=rtol, atol=atol,
                                           err_msg=msg)
            else:
                np.testing.assert_array_equal(a, e, err_msg=msg)


def _rescaled(est, factor):
    """Clone of ``est`` whose hyperparameters in feature units are multiplied by factor."""
    est = clone(est)
    names = ROBUSTNESS[type(est).__name__].get("unit_params", ())
    est.set_params(**{n: est.get_params()[n] * factor for n in names})
    return est


def _run_robustness_check(name, cls, check):
    entry = ROBUSTNESS[name]
    est = _robustness_estimator(name, cls)
    data = _robustness_data(est)
    rtol = entry.get("rtol", 1e-6)
    what = f"{name} [{check}]"
    if check.startswith("extreme_params["):
        label = check[len("extreme_params["):-1]
        params = entry["extreme_params"][label]
        extreme = _robustness_estimator(name, cls, **params)
        with _hang_guard(_HANG_GUARD_S, f"{name}({params})"):
            try:
                _fit_outputs(extreme, data)
            except ValueError as exc:
                assert str(exc).strip(), f"{what}: ValueError without a message"
        return
    base = _fit_outputs(clone(est), data)
    if check == "finite_outputs":
        # and with a heavy-tailed feature (Cauchy draws: a few values of order 1e2..1e4)
        _fit_outputs(clone(est), _heavy_tailed(data))
        return
    if check == "determinism":
        refit = clone(est)
        _assert_same_outputs(base, _fit_outputs(refit, data), 0.0, what)
        # and a pickled fitted estimator predicts as the original does from then on
        # (compared call for call: a method may draw fresh noise on each call)
        restored = pickle.loads(pickle.dumps(refit))
        pair = []
        for fitted in (refit, restored):
            outputs = {} if data[1] is None else _call_outputs(fitted, data[2])
            outputs.update({a: getattr(fitted, a) for a in entry.get("structure", ())})
            pair.append(outputs)
        _assert_same_outputs(*pair, 0.0, f"{what} after pickling")
    elif check == "default_scoring":
        X, y = data[0], data[1]
        grid = {"est__random_state": [0, 1]} if "random_state" in est.get_params() else {}
        search = GridSearchCV(Pipeline([("est", clone(est))]), grid, cv=2, error_score="raise")
        search.fit(X, y)
        scores = search.cv_results_["mean_test_score"]
        assert np.all(np.isfinite(scores)), f"{what}: GridSearchCV scores {scores}"
        assert np.all(np.isfinite(cross_val_score(clone(est), X, y, cv=2))), what
    elif check == "offset":
        _assert_same_outputs(base, _fit_outputs(clone(est), data, lambda X: X + _OFFSET),
                             rtol, what)
    elif check == "scale":
        for factor in _SCALES:
            _assert_same_outputs(
                base, _fit_outputs(_rescaled(est, factor), data, lambda X: X * factor),
                rtol, f"{what} x{factor:g}",
            )
    elif check == "column_scale":
        _assert_same_outputs(
            base, _fit_outputs(clone(est), data, lambda X: X * _COLUMN_SCALE), rtol, what
        )
    elif check == "row_order":
        rows = np.random.RandomState(1).permutation(len(data[0]))
        _assert_same_outputs(base, _fit_outputs(clone(est), data, rows=rows), rtol, what)
    elif check == "extreme_values":
        for factor in _EXTREME_SCALES:
            try:
                outputs = _fit_outputs(_rescaled(est, factor), data, lambda X: X * factor)
            except ValueError as exc:
                assert str(exc).strip(), f"{what}: ValueError without a message"
                continue
            if entry["scale"] is True:
                _assert_same_outputs(base, outputs, rtol, f"{what} x{factor:g}")
    else:  # pragma: no cover
        raise ValueError(check)


def _robustness_cases():
    for name, cls in all_estimators():
        entry = ROBUSTNESS.get(name, {})
        checks = [*_STATED, *_ALWAYS]
        checks += [f"extreme_params[{label}]" for label in entry.get("extreme_params", {})]
        for check in checks:
            if check in _STATED and entry.get(check) is not True:
                continue  # exempt, with its reason in the table
            marks = []
            if (name, check) in _FIXED_ON_OTHER_BRANCHES:
                marks.append(pytest.mark.xfail(
                    strict=True, reason=_FIXED_ON_OTHER_BRANCHES[(name, check)]
                ))
            yield pytest.param(name, cls, check, id=f"{name}-{check}", marks=marks)


def test_robustness_table_complete():
    """Every estimator has a robustness block; every exemption gives a reason."""
    names = {name for name, _ in all_estimators()}
    missing = names - set(ROBUSTNESS)
    assert not missing, f"add a ROBUSTNESS block for {sorted(missing)}"
    assert set(ROBUSTNESS) <= names, set(ROBUSTNESS) - names
    allowed = {*_STATED, "params", "unit_params", "structure", "rtol", "extreme_params"}
    for name, entry in ROBUSTNESS.items():
        assert set(entry) <= allowed, f"{name}: unknown keys {set(entry) - allowed}"
        for check in _STATED:
            value = entry.get(check)
            assert value is True or (isinstance(value, str) and len(value.split()) >= 4), (
                f"{name}: state whether {check!r} holds (True) or why not (a reason)"
            )
    for (name, check), where in _FIXED_ON_OTHER_BRANCHES.items():
        valid = [*_STATED, *_ALWAYS]
        extreme = ROBUSTNESS.get(name, {}).get("extreme_params", {})
        valid += [f"extreme_params[{label}]" for label in extreme]
        assert name in names and check in valid and where.strip(), (name, check)


@pytest.mark.parametrize("name, cls, check", list(_robustness_cases()))
def test_robustness(name, cls, check):
    _run_robustness_check(name, cls, check)


# --------------------------------------------------------------------------------------
# Public functions validate their arguments with scikit-learn's validate_params
# --------------------------------------------------------------------------------------
# Functions that are not yet wrapped on this branch. The method branches are adding
# validate_params to them (issue 12); they run as strict xfails, so a function that
# becomes wrapped fails the suite until the lead removes it from this set at the merge.
_VALIDATE_PARAMS_PENDING = set()


def _wrapped_by_validate_params(func):
    # validate_params stores the constraints on the function and wraps it
    # (functools.wraps sets ``__wrapped__``)
    return hasattr(func, "__wrapped__") and isinstance(
        getattr(func.__wrapped__, "_skl_parameter_constraints", None), dict
    )


def _function_cases():
    for name, func in all_functions():
        marks = []
        if name in _VALIDATE_PARAMS_PENDING:
            marks.append(pytest.mark.xfail(
                strict=True, reason="transitional: validate_params lands on the method branch"
            ))
        yield pytest.param(name, func, id=name, marks=marks)


@pytest.mark.parametrize("name, func", list(_function_cases()))
def test_function_uses_validate_params(name, func):
    """Every public function validates its arguments with scikit-learn's validate_params."""
    assert _wrapped_by_validate_params(func), (
        f"{name} must be decorated with sklearn.utils._param_validation.validate_params"
    )
    signature = inspect.signature(func.__wrapped__)
    params = [
        p.name
        for p in signature.parameters.values()
        if p.kind not in {p.VAR_POSITIONAL, p.VAR_KEYWORD}
    ]
    missing = set(params) - set(func.__wrapped__._skl_parameter_constraints)
    assert not missing, f"{name}: no constraint for {sorted(missing)}"


def test_validate_params_pending_names_exist():
    names = {name for name, _ in all_functions()}
    assert _VALIDATE_PARAMS_PENDING <= names, _VALIDATE_PARAMS_PENDING - names


# --------------------------------------------------------------------------------------
# Issue 35: classes of findings, checked for every estimator and public function
# --------------------------------------------------------------------------------------
# Each check below is generic: a new estimator or function is picked up through
# all_estimators() / all_functions(). Exemptions say why; a failure in a file owned by
# another branch is a strict xfail in _ISSUE35_PENDING (key: test id), removed when the
# fix merges.
_ISSUE35_PENDING = {}


def _pending(case_id):
    if case_id in _ISSUE35_PENDING:
        return [pytest.mark.xfail(strict=True, reason=_ISSUE35_PENDING[case_id])]
    return []


def _constraint_is_real(c):
    from numbers import Real

    from sklearn.utils._param_validation import Interval

    return (isinstance(c, Interval) and c.type is Real) or c is Real or c is float


def _float_params(constraints, signature):
    """Names of the float-valued parameters: a float default or a real-interval constraint."""
    names = []
    for pname, p in signature.parameters.items():
        cons = constraints.get(pname)
        if cons is None or isinstance(cons, str):  # "no_validation"
            continue
        default_is_float = isinstance(p.default, float)
        if default_is_float or any(_constraint_is_real(c) for c in cons):
            names.append(pname)
    return names


def _nan_accepted_by(cons):
    from sklearn.utils._param_validation import make_constraint

    return [c for c in cons if make_constraint(c).is_satisfied_by(float("nan"))]


def _nan_estimator_cases():
    for name, cls in all_estimators():
        sig = inspect.signature(cls.__init__)
        for pname in _float_params(getattr(cls, "_parameter_constraints", {}), sig):
            yield pytest.param(name, cls, pname, id=f"{name}-{pname}")


@pytest.mark.parametrize("name, cls, param", list(_nan_estimator_cases()))
def test_float_hyperparameter_refuses_nan(name, cls, param):
    """A NaN float hyperparameter is refused by the validation that fit runs first.

    (``check_param_validation`` checks that fit validates; NaN is not a type error, so it
    needs its own check: ``Interval`` refuses it, a bare ``Real`` accepts it.)
    """
    from sklearn.utils._param_validation import InvalidParameterError

    est = _robustness_estimator(name, cls, **{param: float("nan")})
    with pytest.raises(InvalidParameterError, match=f"'{param}' parameter"):
        est._validate_params()


def _tuple_float_cases():
    for name, cls in all_estimators():
        for pname, p in inspect.signature(cls.__init__).parameters.items():
            d = p.default
            if isinstance(d, tuple) and d and all(isinstance(v, float) for v in d):
                yield pytest.param(name, cls, pname, id=f"{name}-{pname}")


@pytest.mark.parametrize("name, cls, param", list(_tuple_float_cases()))
def test_float_tuple_hyperparameter_refuses_nan(name, cls, param):
    """A tuple of floats (a range, a schedule) with a NaN entry is refused by fit."""
    est = _robustness_estimator(name, cls)
    value = list(est.get_params()[param])
    value[-1] = float("nan")
    est.set_params(**{param: tuple(value)})
    X, y, _, _ = _robustness_data(est)
    with _hang_guard(_HANG_GUARD_S, f"{name}({param}={tuple(value)})"):
        with pytest.raises(ValueError, match=param):
            est.fit(X) if y is None else est.fit(X, y)


# Public classes that are not estimators (augmentations, losses, an optimizer, a logits
# processor, ...) refuse NaN in every float parameter too, and a NaN inside a tuple of
# floats: at construction or at their first use, with an error naming the parameter.
# Each such class (found through the package's public API) has a (build, use) pair here:
# build(**params) fills in the required arguments, use(obj) calls it once.
def _public_object(name):
    from sklearn_cispa.utils.discovery import _public_objects

    return {n: o for n, o, _ in _public_objects()}[name]


def _tiny_relu_net():
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


def _augment_once(aug):
    return aug.augment(np.ones((4, 3)), random_state=0)


def _loss_once(loss):
    return loss(torch.zeros(2, 3), torch.tensor([0, 1]))


def _build(name, *args):
    return lambda **kw: _public_object(name)(*args, **kw)


_CLASS_USES = {
    "GaussianNoiseAugmentation": (_build("GaussianNoiseAugmentation"), _augment_once),
    "NullSpaceTranslation": (
        lambda **kw: _public_object("NullSpaceTranslation")(np.eye(3)[:1], **kw),
        _augment_once,
    ),
    "NeuronMask": (
        lambda **kw: _public_object("NeuronMask")(_tiny_relu_net(), [("1", 0)], **kw),
        lambda mask: mask.remove(),
    ),
    "LabelSmoothingLoss": (_build("LabelSmoothingLoss"), _loss_once),
    "MaxSupLoss": (_build("MaxSupLoss"), _loss_once),
    "NanoAdam": (
        lambda **kw: _public_object("NanoAdam")([nn.Parameter(torch.ones(3))], **kw),
        lambda opt: opt.step(),
    ),
    "SignIn": (
        lambda **kw: _public_object("SignIn")(torch.ones(2, 3, dtype=torch.bool), **kw),
        lambda sign_in: sign_in(torch.ones(2, 3), torch.ones(2, 3)),
    ),
    "BitMarkLogitsProcessor": (_build("BitMarkLogitsProcessor"), lambda p: p.bias_table_),
    "BitMarkWatermark": (_build("BitMarkWatermark"), lambda w: w.gamma_),
}


def _class_float_params(cls):
    """Float parameters of a class (float default or real interval) and float tuples."""
    sig = inspect.signature(cls.__init__)
    constraints = getattr(cls, "_parameter_constraints", {})
    floats, tuples = [], []
    for pname, p in sig.parameters.items():
        d = p.default
        if isinstance(d, tuple) and d and all(isinstance(v, float) for v in d):
            tuples.append(pname)
        elif isinstance(d, float) or any(
            _constraint_is_real(c) for c in constraints.get(pname, ()) if c != "no_validation"
        ):
            floats.append(pname)
    return floats, tuples


def _non_estimator_classes():
    from sklearn_cispa.utils.discovery import _public_objects

    estimators = {name for name, _ in all_estimators()}
    for name, obj, _ in sorted(_public_objects(), key=lambda t: t[0]):
        if inspect.isclass(obj) and name not in estimators and obj.__init__ is not object.__init__:
            yield name, obj


def _class_nan_cases():
    for name, cls in _non_estimator_classes():
        floats, tuples = _class_float_params(cls)
        for pname in floats:
            yield pytest.param(name, pname, False, id=f"{name}-{pname}",
                               marks=_pending(f"class_nan[{name}-{pname}]"))
        for pname in tuples:
            yield pytest.param(name, pname, True, id=f"{name}-{pname}[-1]",
                               marks=_pending(f"class_nan[{name}-{pname}[-1]]"))


def test_class_uses_cover_every_float_parameter():
    missing = [name for name, cls in _non_estimator_classes()
               if any(_class_float_params(cls)) and name not in _CLASS_USES]
    assert not missing, f"add a (build, use) pair to _CLASS_USES for {missing}"
    assert set(_CLASS_USES) <= {name for name, _ in _non_estimator_classes()}


@pytest.mark.parametrize("name, param, in_tuple", list(_class_nan_cases()))
def test_non_estimator_float_parameter_refuses_nan(name, param, in_tuple):
    build, use = _CLASS_USES[name]
    cls = _public_object(name)
    value = float("nan")
    if in_tuple:
        default = list(inspect.signature(cls.__init__).parameters[param].default)
        value = tuple(default[:-1] + [value])
    use(build())  # the defaults work: the failure below is the NaN's
    with pytest.raises((ValueError, TypeError), match=re.escape(param)):
        use(build(**{param: value}))


# inputs, not hyperparameters: NaN there is bad data, not a bad setting
_NAN_IS_DATA = {
    "orpo_loss": (
        "chosen_logp, rejected_logp, chosen_len, rejected_len and chosen_nll are the "
        "model's log-probabilities and lengths (arrays or scalars), i.e. data"
    ),
}


def _nan_function_cases():
    for name, func in all_functions():
        inner = getattr(func, "__wrapped__", func)
        cons = getattr(inner, "_skl_parameter_constraints", {})
        for pname in _float_params(cons, inspect.signature(inner)):
            marks = []
            if name in _NAN_IS_DATA:
                marks.append(pytest.mark.skip(reason=_NAN_IS_DATA[name]))
            yield pytest.param(name, pname, cons[pname], id=f"{name}-{pname}", marks=marks)


@pytest.mark.parametrize("name, param, constraints", list(_nan_function_cases()))
def test_function_float_argument_refuses_nan(name, param, constraints):
    """validate_params refuses NaN for every float argument of a public function."""
    accepted = _nan_accepted_by(constraints)
    assert not accepted, (
        f"{name}({param}=nan) passes validation through {accepted}: use an Interval"
    )


def test_nan_exemptions_name_functions():
    names = {name for name, _ in all_functions()}
    assert set(_NAN_IS_DATA) <= names, set(_NAN_IS_DATA) - names


# Related bounds: every pair of parameters that bound each other, in the wrong order,
# is refused with a ValueError naming it. Pairs are found by name (``*_range`` tuples;
# ``min_x``/``max_x``, ``x_min``/``x_max``, ``x_min``/``x_start``, ``x_lo``/``x_hi``,
# ``x_lower``/``x_upper``); each must have a case here. Some semantic pairs have no
# such names: they are listed by hand.
def _bound_stem(pname):
    import re

    for pattern in (r"^(min|max)_(.+)$", r"^(.+)_(min|max|start|lo|hi|lower|upper)$"):
        m = re.match(pattern, pname)
        if m:
            a, b = m.groups()
            return (b, a) if pattern.startswith("^(min") else (a, b)
    return None


def _discovered_bounds():
    """{(owner, parameters)} of every related-bound pair and range found by name."""
    from sklearn_cispa.utils.discovery import _public_objects

    found = set()
    for name, obj, _ in _public_objects():
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        func = obj.__init__ if inspect.isclass(obj) else getattr(obj, "__wrapped__", obj)
        if func is object.__init__:
            continue
        params = list(inspect.signature(func).parameters)
        stems = {}
        for pname in params:
            if pname.endswith("_range"):
                found.add((name, pname))
            stem = _bound_stem(pname)
            if stem:
                stems.setdefault(stem[0], []).append(pname)
        for group in stems.values():
            if len(group) > 1:
                found.add((name, ",".join(sorted(group))))
    return found


def _psd_kernel():
    rng = np.random.RandomState(0)
    A = rng.normal(size=(6, 6))
    return A @ A.T


# (owner, parameters) -> (label, call, error pattern); call(owner) must raise
_BOUND_CASES = {
    ("AugmentedIVRegressor", "alpha_range"): (
        "alpha_range_reversed", {"alpha_range": (1.0, 1e-4)}, "alpha_range",
    ),
    ("CriticalNeuronLocator", "theta_min,theta_start"): (
        "theta_min>theta_start", {"theta_min": 100.0, "theta_start": 8.0}, "theta_min",
    ),
    ("load_python_docs", "max_length,min_length"): (
        "min_length>max_length", {"min_length": 500, "max_length": 100}, "min_length",
    ),
    ("ntk_spectrum_stats", "fit_range"): (
        "fit_range_reversed", {"kernel": _psd_kernel(), "fit_range": (5, 1)}, "fit_range",
    ),
}


def test_bound_cases_cover_every_related_pair():
    missing = _discovered_bounds() - set(_BOUND_CASES)
    assert not missing, f"add a wrong-order case to _BOUND_CASES for {sorted(missing)}"


def _bound_cases():
    for (owner, params), (label, kwargs, match) in sorted(_BOUND_CASES.items()):
        case_id = f"bounds_order[{owner}-{label}]"
        yield pytest.param(owner, kwargs, match, id=f"{owner}-{label}",
                           marks=_pending(case_id))


@pytest.mark.parametrize("owner, kwargs, match", list(_bound_cases()))
def test_related_bounds_out_of_order_are_refused(owner, kwargs, match):
    estimators = dict(all_estimators())
    with _hang_guard(_HANG_GUARD_S, f"{owner}({kwargs})"):
        if owner in estimators:
            est = _robustness_estimator(owner, estimators[owner], **kwargs)
            X, y, _, _ = _robustness_data(est)
            with pytest.raises(ValueError, match=match):
                est.fit(X) if y is None else est.fit(X, y)
        else:
            func = dict(all_functions())[owner]
            with pytest.raises(ValueError, match=match):
                func(**kwargs)


def _range_nan_cases():
    for (owner, params), (label, kwargs, _) in sorted(_BOUND_CASES.items()):
        if not params.endswith("_range"):
            continue
        lo, hi = sorted(kwargs[params])
        for which, value in (("low", (float("nan"), hi)), ("high", (lo, float("nan")))):
            case_id = f"range_nan[{owner}-{params}-{which}]"
            yield pytest.param(owner, {**kwargs, params: value}, params,
                               id=f"{owner}-{params}-{which}", marks=_pending(case_id))


@pytest.mark.parametrize("owner, kwargs, match", list(_range_nan_cases()))
def test_range_with_a_nan_end_is_refused(owner, kwargs, match):
    """A ``*_range`` with a NaN end is refused with a ValueError naming it (issue 35)."""
    test_related_bounds_out_of_order_are_refused(owner, kwargs, match)


# Array arguments of public functions (issue 35): every numeric array argument with a NaN
# entry is refused with a clear error, and float arrays multiplied by 1e300 give finite
# outputs (a warning at most for a non-finite one) or a ValueError that says what is
# wrong, never a solver's raw error (numpy's LinAlgError). Each public function with an
# "array-like" argument has a valid call here (a builder of fresh keyword arguments) or
# the reason it has none; a new function is picked up by the completeness test.
def _simplex(*shape, seed=0):
    return np.random.RandomState(seed).dirichlet(np.ones(shape[-1]), size=shape[:-1])


def _tiny_classifier_and_data():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(20, 2))
    y = (X[:, 0] > 0).astype(int)
    return LogisticRegression().fit(X, y), X, y


_FUNCTION_CALLS = {
    "accuracy_rejection_curve": lambda: dict(
        y_true=np.array([0, 1, 1, 0, 1]), y_pred=np.array([0, 1, 0, 0, 1]),
        uncertainty=np.array([0.1, 0.2, 0.9, 0.3, 0.4])),
    "attack_success_at_k": lambda: dict(score_sequences=[[0.1, 0.9], [0.2, 0.3]], k=1,
                                        threshold=0.5),
    "choquet_integral": lambda: dict(f=np.array([1.0, 2.0, 3.0]), probas=_simplex(4, 3)),
    "entropy_difference": lambda: dict(probas=_simplex(6, 4, 3)),
    "generalized_hartley": lambda: dict(probas=_simplex(6, 4, 3)),
    "maximum_mean_imprecision": lambda: dict(probas=_simplex(6, 4, 3)),
    "lower_probability": lambda: dict(probas=_simplex(4, 3), events=[[0], [1, 2]]),
    "lower_total_variation": lambda: dict(probas_a=_simplex(4, 3),
                                          probas_b=_simplex(4, 3, seed=1)),
    "eot_pgd_l2_attack": lambda: dict(
        zip(("model", "X", "y"), _tiny_classifier_and_data()), radius=0.1, sigma=0.2,
        n_steps=2, n_noise=2, random_state=0),
    "flip_rate": lambda: dict(decisions=np.random.RandomState(0).rand(6, 10) > 0.5),
    "lira_scores": lambda: dict(keep=np.tile([True, False], (10, 4)).T,
                                ref_stats=np.random.RandomState(0).normal(size=(8, 10)),
                                target_stats=np.random.RandomState(1).normal(size=10)),
    "logit_confidence": lambda: dict(proba=_simplex(6, 3), y=np.array([0, 1, 2, 0, 1, 2])),
    "robust_risk_control": lambda: dict(
        losses=-np.sort(-np.random.RandomState(0).rand(50, 5), axis=1),
        lambdas=np.linspace(0, 1, 5), alpha=0.3, sigma=0.5, radius=0.1),
    "tpr_at_fpr": lambda: dict(y_true=np.array([0, 1] * 50),
                               y_score=np.random.RandomState(0).rand(100), fpr=0.1),
    "heterogeneity": lambda: dict(X=np.random.RandomState(0).normal(size=(40, 3)),
                                  y=np.random.RandomState(1).normal(size=40),
                                  groups=np.repeat([0, 1], 20)),
    "ntk_spectrum_stats": lambda: dict(kernel=_psd_kernel()),
    "graphon_ntk": lambda: dict(X=np.random.RandomState(0).normal(size=(5, 3))),
    "empirical_ntk": lambda: dict(
        module=nn.Sequential(nn.Linear(3, 4, dtype=torch.float64), nn.Tanh(),
                             nn.Linear(4, 1, dtype=torch.float64)),
        X=np.random.RandomState(0).normal(size=(5, 3))),
    "sas_histogram": lambda: dict(
        mask=(np.random.RandomState(0).rand(8, 8) > 0.5).astype(float), n_blocks=2),
    "prune_at_init": lambda: dict(
        module=nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)), method="snip",
        sparsity=0.5, X=np.random.RandomState(0).normal(size=(8, 3)),
        y=np.array([0, 1] * 4), random_state=0),
}
_NO_FUNCTION_CALL = {
    **dict.fromkeys(
        ("bit_flip_attack", "bit_flipper_attack", "blur_attack", "crop_resize_attack",
         "gaussian_noise_attack", "jpeg_attack", "radioactivity_test"),
        "attacks and tests on generated images: the inputs are bits or grey levels "
        "(rounded and clipped), tested in tests/watermark",
    ),
    "extraction_rate": "its array is a list of (prefix, secret) strings, not numbers",
    "greedy_extraction_oracle": "its arrays are token ids of a language model",
    "orpo_loss": "its arrays are the model's log-probabilities and lengths (NaN is data)",
}
# (function, argument) -> why a NaN entry is legitimate there
_NAN_ARRAY_IS_DATA = {}


def _numeric_array_args(kwargs):
    return [k for k, v in kwargs.items()
            if isinstance(v, np.ndarray) and v.dtype.kind in "biuf" and v.size]


def test_function_calls_cover_every_array_argument():
    names = {name for name, _ in all_functions()}
    with_arrays = {
        name for name, func in all_functions()
        if "array-like" in str(func.__wrapped__._skl_parameter_constraints.values())
    }
    missing = with_arrays - set(_FUNCTION_CALLS) - set(_NO_FUNCTION_CALL)
    assert not missing, f"add a valid call to _FUNCTION_CALLS for {sorted(missing)}"
    assert set(_FUNCTION_CALLS) | set(_NO_FUNCTION_CALL) <= names
    assert not set(_FUNCTION_CALLS) & set(_NO_FUNCTION_CALL)


def _call_cases(kind):
    for name in sorted(_FUNCTION_CALLS):
        for arg in _numeric_array_args(_FUNCTION_CALLS[name]()):
            if kind == "huge" and _FUNCTION_CALLS[name]()[arg].dtype.kind != "f":
                continue  # labels, masks and counts are not magnitudes
            case_id = f"function_{kind}[{name}-{arg}]"
            marks = _pending(case_id)
            if kind == "nan" and (name, arg) in _NAN_ARRAY_IS_DATA:
                marks = [pytest.mark.skip(reason=_NAN_ARRAY_IS_DATA[(name, arg)])]
            yield pytest.param(name, arg, id=f"{name}-{arg}", marks=marks)


def _call_public_function(name, kwargs):
    func = dict(all_functions())[name]
    with _hang_guard(_HANG_GUARD_S, f"{name}(...)"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = func(**kwargs)
    said = [w for w in caught if not issubclass(w.category, _NOT_A_DIAGNOSIS)]
    return out, said


def _non_finite_outputs(out):
    values = out.values() if isinstance(out, dict) else (
        out if isinstance(out, tuple | list) else [out])
    for value in values:
        if isinstance(value, torch.Tensor):
            value = value.detach().numpy()
        arr = np.asarray(value) if not isinstance(value, str) else np.zeros(0)
        if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
            return True
    return False


@pytest.mark.parametrize("name, arg", list(_call_cases("nan")))
def test_function_refuses_nan_in_array_arguments(name, arg):
    kwargs = _FUNCTION_CALLS[name]()
    _call_public_function(name, kwargs)  # the valid call works: the failure is the NaN's
    bad = kwargs[arg].astype(np.float64)
    bad.flat[0] = np.nan
    with pytest.raises((ValueError, TypeError)) as info:
        _call_public_function(name, {**kwargs, arg: bad})
    assert str(info.value).strip() and not isinstance(info.value, np.linalg.LinAlgError)


@pytest.mark.parametrize("name, arg", list(_call_cases("huge")))
def test_function_huge_array_arguments(name, arg):
    kwargs = _FUNCTION_CALLS[name]()
    try:
        out, said = _call_public_function(name, {**kwargs, arg: kwargs[arg] * 1e300})
    except ValueError as exc:
        assert str(exc).strip() and not isinstance(exc, np.linalg.LinAlgError), (
            f"{name}({arg} * 1e300): a solver's raw error: {exc}"
        )
        return
    assert not _non_finite_outputs(out) or said, (
        f"{name}({arg} * 1e300) returned NaN or infinity without an error or a warning"
    )


# Torch-backed estimators turn a non-finite training loss into a clear error: a step
# size far too large makes the loss overflow; fit then raises a ValueError that names
# the step size or says that it diverged, or it ends with finite outputs (a warning at
# most; _fit_outputs fails on a silent NaN). A raw torch error is a failure.
_TORCH_DIVERGENCE = {
    "CharMLPLanguageModel": "lr",
    "TransformerLanguageModel": "lr",
    "MLPNetClassifier": "lr",
    "NeurulesClassifier": "lr",
    "CriticalNeuronLocator": (
        "trains nothing: it reads the activations of a given model (non-finite "
        "activations are the model's own)"
    ),
    "LiRAMembershipInference": (
        "trains only the wrapped estimator, whose own fit reports divergence"
    ),
    "GraphonEstimator": "trains nothing: it reads the masks of a pruned network",
    # torch only for backend="torch" (a process group); the same steps run in numpy
    "LocalSGDClassifier": "step_size",
    "LocalSGDRegressor": "step_size",
    # -- redteam: GASPSuffixGenerator (issue 36): ORPO steps on the generator
    "GASPSuffixGenerator": "lr",
}
_HUGE_STEPS = (1e10, 1e300)
_CLEAR_DIVERGENCE = r"(?is)diverg|too large|not representable|non-?finite|not finite|\blr\b"


def _uses_torch(cls):
    import sys

    source = inspect.getsource(sys.modules[cls.__module__])
    return "import torch" in source or "from torch" in source


def test_torch_divergence_table_complete():
    torch_backed = {name for name, cls in all_estimators() if _uses_torch(cls)}
    assert torch_backed <= set(_TORCH_DIVERGENCE), (
        f"add {sorted(torch_backed - set(_TORCH_DIVERGENCE))} to _TORCH_DIVERGENCE"
    )
    for name, value in _TORCH_DIVERGENCE.items():
        assert name in dict(all_estimators()), name
        assert value.isidentifier() or len(value.split()) >= 4, name


def _divergence_cases():
    for name, cls in all_estimators():
        param = _TORCH_DIVERGENCE.get(name)
        if param is None or not param.isidentifier():
            continue
        for step in _HUGE_STEPS:
            case_id = f"torch_divergence[{name}-{param}={step:g}]"
            yield pytest.param(name, cls, param, step, id=f"{name}-{param}={step:g}",
                               marks=_pending(case_id))


@pytest.mark.parametrize("name, cls, param, step", list(_divergence_cases()))
def test_torch_divergence_is_a_clear_error(name, cls, param, step):
    est = _robustness_estimator(name, cls, **{param: step})
    data = _robustness_data(est)
    with _hang_guard(_HANG_GUARD_S, f"{name}({param}={step:g})"):
        try:
            _fit_outputs(est, data)
        except ValueError as exc:
            assert re.search(_CLEAR_DIVERGENCE, str(exc)), (
                f"{name}({param}={step:g}): unclear error {exc}"
            )


# A fit that is legitimately not invariant to an offset or to the units of X (its
# ROBUSTNESS entry gives the reason) must still not collapse silently: when its training
# score falls far below the score in the original units, fit warns or raises. Supervised
# estimators only (the score of an unsupervised one is a likelihood in the units of X).
_COLLAPSE_MARGIN = {"classifier": 0.2, "regressor": 0.5}  # accuracy / R^2 points
_MOVES = {
    "offset": ("offset", lambda X: X + _OFFSET, 1.0),
    "x1e-6": ("scale", lambda X: X * 1e-6, 1e-6),
    "x1e6": ("scale", lambda X: X * 1e6, 1e6),
}


def _collapse_cases():
    for name, cls in all_estimators():
        entry = ROBUSTNESS.get(name, {})
        est = _robustness_estimator(name, cls) if name in ROBUSTNESS else None
        if est is None or not (is_classifier(est) or is_regressor(est)):
            continue
        for label, (key, _, _) in _MOVES.items():
            if entry.get(key) is not True:  # not invariant: its reason is in the table
                case_id = f"collapse[{name}-{label}]"
                yield pytest.param(name, cls, label, id=f"{name}-{label}",
                                   marks=_pending(case_id))


@pytest.mark.parametrize("name, cls, move", list(_collapse_cases()))
def test_training_collapse_under_units_is_reported(name, cls, move):
    _, transform, factor = _MOVES[move]
    est = _robustness_estimator(name, cls)
    X, y, _, _ = _robustness_data(est)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = clone(est).fit(X, y).score(X, y)
    moved = _rescaled(est, factor)
    Xm = transform(X)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            score = moved.fit(Xm, y).score(Xm, y)
        except ValueError as exc:
            assert str(exc).strip()
            return
    said = [w for w in caught if not issubclass(w.category, _NOT_A_DIAGNOSIS)]
    margin = _COLLAPSE_MARGIN["classifier" if is_classifier(est) else "regressor"]
    assert score >= base - margin or said, (
        f"{name}: the training score fell from {base:.3f} to {score:.3f} under {move} "
        "without a warning or an error"
    )


# The stated invariances as hypothesis properties (issue 35). Beside the fixed moves of
# test_robustness (+1000, x1e-6 and x1e6, the column units (1e-6, 1, 1e6), one
# permutation: the values the reliability page names), every invariance that a block
# states as True must hold for drawn moves: offsets of either sign from 1e-3 to 1e4, units
# from 1e-6 to 1e6, independent units per column over the same span, and any permutation
# of the training rows. Few examples per case keep CI fast (the CI profile derandomises
# them; SKLEARN_CISPA_PROPERTY_EXAMPLES=50 runs a deeper search locally); the unmoved fit
# is computed once per estimator.
_PROPERTY_EXAMPLES = int(os.environ.get("SKLEARN_CISPA_PROPERTY_EXAMPLES", "2"))
_UNIT_EXPONENT = st.floats(min_value=-6.0, max_value=6.0, allow_nan=False)
_MOVE_STRATEGIES = {
    "offset": st.tuples(
        st.sampled_from((-1.0, 1.0)), st.floats(min_value=-3.0, max_value=4.0)
    ).map(lambda t: t[0] * 10.0 ** t[1]),
    "scale": _UNIT_EXPONENT.map(lambda e: 10.0**e),
    "column_scale": st.lists(_UNIT_EXPONENT, min_size=3, max_size=3).map(
        lambda es: 10.0 ** np.array(es)
    ),
    "row_order": st.integers(min_value=0, max_value=2**32 - 1),
}
_UNMOVED_FITS = {}


def _unmoved_fit(name, cls):
    if name not in _UNMOVED_FITS:
        est = _robustness_estimator(name, cls)
        data = _robustness_data(est)
        _UNMOVED_FITS[name] = est, data, _fit_outputs(clone(est), data)
    return _UNMOVED_FITS[name]


def _property_cases():
    for name, cls in all_estimators():
        entry = ROBUSTNESS.get(name, {})
        for check in _MOVE_STRATEGIES:
            if entry.get(check) is True:
                yield pytest.param(name, cls, check, id=f"{name}-{check}",
                                   marks=_pending(f"invariance_property[{name}-{check}]"))


@pytest.mark.parametrize("name, cls, check", list(_property_cases()))
@settings(max_examples=_PROPERTY_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_invariance_property(name, cls, check, data):
    est, fit_data, base = _unmoved_fit(name, cls)
    move = data.draw(_MOVE_STRATEGIES[check], label=check)
    what = f"{name} [{check} = {move}]"
    if check == "offset":
        moved = _fit_outputs(clone(est), fit_data, lambda X: X + move)
    elif check == "scale":
        moved = _fit_outputs(_rescaled(est, move), fit_data, lambda X: X * move)
    elif check == "column_scale":
        moved = _fit_outputs(clone(est), fit_data, lambda X: X * move)
    else:
        rows = np.random.RandomState(move).permutation(len(fit_data[0]))
        moved = _fit_outputs(clone(est), fit_data, rows=rows)
    _assert_same_outputs(base, moved, ROBUSTNESS[name].get("rtol", 1e-6), what)


# --------------------------------------------------------------------------------------
# The user guide's reliability page is generated from ROBUSTNESS
# --------------------------------------------------------------------------------------
_RELIABILITY_PAGE = Path(__file__).resolve().parents[1] / "docs/user_guide/reliability.rst"
_TABLE_START = ".. robustness-table-start (generated from tests/test_common.py; do not edit)"
_TABLE_END = ".. robustness-table-end"
_COLUMN_TITLES = {
    "offset": "Feature offset +1000",
    "scale": "Units x1e-6 and x1e6",
    "column_scale": "Mixed units per feature",
    "row_order": "Training row order",
    "default_scoring": "GridSearchCV / cross_val_score",
}


def _reliability_cell(name, check):
    value = ROBUSTNESS[name].get(check)
    if value is not True:
        return f"no: {value}"
    pending = _FIXED_ON_OTHER_BRANCHES.get((name, check))
    return "yes" if pending is None else f"yes once the fix merges ({pending})"


def reliability_table():
    """The rst tables of the reliability page, as ROBUSTNESS states them."""
    lines = [_TABLE_START, "", "Invariances", "~~~~~~~~~~~", "", ".. list-table::",
             "   :header-rows: 1", "   :widths: 16 17 17 17 19 14", "", "   * - Estimator"]
    lines += [f"     - {title}" for title in _COLUMN_TITLES.values()]
    for name in sorted(ROBUSTNESS):
        lines.append(f"   * - :class:`~{_qualified(name)}`")
        lines += [f"     - {_reliability_cell(name, check)}" for check in _COLUMN_TITLES]
    lines += ["", "Extreme but legal settings checked for bounded time",
              "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~", ""]
    for name in sorted(ROBUSTNESS):
        entry = ROBUSTNESS[name]
        units = ", ".join(f"``{p}``" for p in entry.get("unit_params", ())) or "none"
        lines.append(f"- :class:`~{_qualified(name)}` (hyperparameters in the units of X: "
                     f"{units}):")
        for label, params in entry.get("extreme_params", {}).items():
            shown = ", ".join(f"{k}={_short(v)}" for k, v in params.items())
            pending = _FIXED_ON_OTHER_BRANCHES.get((name, f"extreme_params[{label}]"))
            note = f" (once the fix merges: {pending})" if pending else ""
            lines.append(f"  ``{shown}``{note};")
        lines[-1] = lines[-1].rstrip(";:") + "."
    lines += ["", _TABLE_END]
    return "\n".join(lines)


def _qualified(name):
    cls = dict(all_estimators())[name]
    return f"{cls.__module__.rsplit('._', 1)[0]}.{name}"


def _short(value):
    if hasattr(value, "get_params"):
        return f"{type(value).__name__}(...)" if value.get_params(deep=False) else repr(value)
    if isinstance(value, float):
        return f"{value:.10g}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_short(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


def test_reliability_page_matches_robustness_table():
    text = _RELIABILITY_PAGE.read_text()
    assert _TABLE_START in text and _TABLE_END in text
    current = text[text.index(_TABLE_START):text.index(_TABLE_END) + len(_TABLE_END)]
    expected = reliability_table()
    assert current == expected, (
        "docs/user_guide/reliability.rst is out of date; regenerate its table with "
        "`PYTHONPATH=. python tests/test_common.py` and paste:\n" + expected
    )


if __name__ == "__main__":
    print(reliability_table())
