"""The reproduction report (``python -m sklearn_cispa``) and its evaluation helpers.

This layer sits above the method fields: it imports their public API, and no field
imports it. Each method's report row is one module ``sklearn_cispa/report/_exp_<method>.py``
holding a function decorated with :func:`register_experiment`.

The evaluation helpers that benchmarks and examples share with the rows (edge F1, nCER,
the neural experiments, ...) are public here and imported on first access, so that
importing this package (as ``--help`` does) imports neither numpy, torch nor a field.
"""

import importlib

from sklearn_cispa.report._runner import (
    ExperimentResult,
    discover_experiments,
    get_pyplot,
    main,
    register_experiment,
    save_figure,
)

# public helper -> private module holding it (imported lazily)
_HELPERS = {
    # AugmentedIVRegressor
    "ncer": "_aiv_eval",
    "FixedAugmentation": "_aiv_eval",
    # CausalMixtureDiscoverer
    "edge_counts": "_cmm_eval",
    "edge_f1": "_cmm_eval",
    "shd": "_cmm_eval",
    "cpdag_to_adjacency": "_cmm_eval",
    "node_truth_labels": "_cmm_eval",
    "run_ges": "_cmm_eval",
    "run_pc": "_cmm_eval",
    "run_lingam": "_cmm_eval",
    "gmm_node_labels": "_cmm_eval",
    "skeleton_f1": "_cmm_eval",
    "reference_directed_f1": "_cmm_eval",
    "evidence_auc": "_cmm_eval",
    "sachs_experiment": "_cmm_eval",
    # LatentBOSuffixSearch (GASP)
    "landscape_trial": "_gasp_eval",
    "hit_rates": "_gasp_eval",
    "benchmark_rates": "_gasp_eval",
    "unpaired_difference": "_gasp_eval",
    # MMIUncertainty
    "uncertainty_scores": "_exp_mmi",
    "digits_selective_prediction": "_exp_mmi",
    # LiRAMembershipInference
    "lira_digits_audit": "_exp_lira",
    "variant_metrics": "_exp_lira",
    # LiRAMembershipInference on language models (imports torch)
    "bootstrap_tpr": "_lira_lm_eval",
    "lm_lira_audit": "_lira_lm_eval",
    "lm_lira_figures": "_lira_lm_eval",
    "lm_lira_setting": "_lira_lm_eval",
    "lm_pool": "_lira_lm_eval",
    "lm_reference_model": "_lira_lm_eval",
    # neural field (imports torch)
    "digits_split": "_neural_experiments",
    "hard_problem_split": "_neural_experiments",
    "calibration_metrics": "_neural_experiments",
    "loss_comparison": "_neural_experiments",
    "split_digits": "_neural_experiments",
    "sign_in_comparison": "_neural_experiments",
    "pai_early_loss": "_neural_experiments",
    "mask_structure": "_neural_experiments",
    "loss_step_ratio": "_neural_experiments",
    "nanoadam_useful_fraction": "_neural_experiments",
    # LocalSGDRegressor (federated)
    "heterogeneous_problem": "_local_sgd_eval",
    "excess_loss": "_local_sgd_eval",
    "local_gd_bias": "_local_sgd_eval",
    "local_vs_minibatch": "_local_sgd_eval",
    "compare_algorithms": "_local_sgd_eval",
    "tune_step_size": "_local_sgd_eval",
    # CriticalNeuronLocator (imports torch)
    "activation_ranking": "_neurons_eval",
    "canary_benchmark": "_neurons_eval",
    "canary_ci_setting": "_neurons_eval",
    "canary_transformer_setting": "_neurons_eval",
    "locator_model": "_neurons_eval",
    "minimal_zero_set": "_neurons_eval",
    "reference_ids": "_neurons_eval",
    "train_canary_model": "_neurons_eval",
    "train_canary_transformer": "_neurons_eval",
    # NeurulesClassifier
    "planted_rule_table": "_neurules_eval",
    "survey_like_table": "_neurules_eval",
    # seed-to-seed statistics of the rows
    "mean_sd": "_stats",
    "paired_difference": "_stats",
}

__all__ = [
    "ExperimentResult",
    "discover_experiments",
    "get_pyplot",
    "main",
    "register_experiment",
    "save_figure",
    *sorted(_HELPERS),
]


def __getattr__(name):
    if name in _HELPERS:
        module = importlib.import_module(f"{__name__}.{_HELPERS[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_HELPERS))
