"""MLPNetClassifier: digits smoke test, reproducibility, pipelines, devices (spec 7.5, 7.6)."""

import pickle

import numpy as np
import pytest
import torch
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from torch.nn.utils import parametrize

from sklearn_cispa.neural import MLPNetClassifier, NanoAdam
from sklearn_cispa.report._neural_experiments import (
    digits_split,
    hard_problem_split,
    loss_comparison,
)


@pytest.fixture(scope="module")
def digits():
    return digits_split(0)


def _fit(digits, **kwargs):
    X_tr, X_te, y_tr, y_te = digits
    params = dict(hidden_layer_sizes=(64,), max_epochs=20, random_state=0)
    params.update(kwargs)
    clf = MLPNetClassifier(**params).fit(X_tr, y_tr)
    return clf, clf.score(X_te, y_te)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(loss="cross_entropy"),
        dict(loss="label_smoothing", label_smoothing=0.1, label_smoothing_end=0.2),
        dict(loss="maxsup", label_smoothing=0.1, label_smoothing_end=0.2),
        dict(optimizer="adamw"),
        dict(optimizer="sgd", lr=0.05),
        dict(optimizer="nanoadam", lr=1e-2, update_fraction=0.3),
        dict(sparsity=0.5, sign_in=True, optimizer="sgd", lr=0.05),
    ],
    ids=lambda d: "-".join(f"{k}={v}" for k, v in d.items()),
)
def test_digits_smoke(digits, kwargs):
    clf, acc = _fit(digits, **kwargs)
    assert acc >= 0.93, acc
    assert clf.n_iter_ == 20
    proba = clf.predict_proba(digits[1][:5])
    assert isinstance(proba, np.ndarray) and proba.dtype == np.float64
    assert np.allclose(proba.sum(axis=1), 1)


def test_alpha_schedule_history_and_maxsup_criterion(digits):
    clf, _ = _fit(digits, loss="maxsup", label_smoothing=0.1, label_smoothing_end=0.3,
                  max_epochs=3)
    assert np.allclose(clf.net_.history[:, "alpha"], [0.1, 0.2, 0.3])
    assert type(clf.net_.criterion_).__name__ == "MaxSupLoss"


def test_nanoadam_is_used_with_dense_head(digits):
    clf, _ = _fit(digits, optimizer="nanoadam", lr=1e-2, update_fraction=0.1,
                  max_epochs=1)
    opt = clf.net_.optimizer_
    assert isinstance(opt, NanoAdam)
    module = clf.net_.module_
    assert "indices" not in opt.state[module.head.weight]
    w = module.layers[0].weight
    assert opt.state[w]["indices"].numel() == round(0.1 * w.numel())


@pytest.mark.parametrize("sign_in", [False, True])
@pytest.mark.parametrize("pruning", ["random", "snip", "synflow"])
def test_sparse_fit_leaves_plain_sparse_module(digits, sign_in, pruning):
    clf, acc = _fit(digits, sparsity=0.8, pruning=pruning, sign_in=sign_in, max_epochs=3,
                    lr=1e-2)
    module = clf.net_.module_
    assert not any(parametrize.is_parametrized(m) for m in module.modules())
    assert not any(hasattr(m, "weight_orig") for m in module.modules())
    params = dict(module.named_parameters())
    assert set(clf.masks_) == {"layers.0.weight", "head.weight"}
    for name, mask in clf.masks_.items():
        assert mask.dtype == torch.bool
        assert (params[name].detach()[~mask] == 0).all()
        assert int(mask.sum()) == mask.numel() - round(0.8 * mask.numel()) or pruning != "random"
    pickle.loads(pickle.dumps(clf))
    assert acc > 0.5


def test_sign_in_dense_masks_and_flip_history(digits):
    clf, _ = _fit(digits, sign_in=True, max_epochs=10, optimizer="sgd", lr=0.05)
    assert all(bool(m.all()) for m in clf.masks_.values())
    flips = clf.net_.history[:, "sign_flip_fraction"]
    assert len(flips) == 10 and 0 < flips[-1] < 0.5


def test_reproducible_and_global_rng_untouched(digits):
    X_tr, X_te, y_tr, _ = digits
    torch.manual_seed(123)
    state = torch.get_rng_state()
    kw = dict(hidden_layer_sizes=(16,), max_epochs=3, sparsity=0.5, random_state=7)
    p1 = MLPNetClassifier(**kw).fit(X_tr, y_tr).predict_proba(X_te)
    assert torch.equal(torch.get_rng_state(), state)
    p2 = MLPNetClassifier(**kw).fit(X_tr, y_tr).predict_proba(X_te)
    assert np.array_equal(p1, p2)
    p3 = MLPNetClassifier(**{**kw, "random_state": 8}).fit(X_tr, y_tr).predict_proba(X_te)
    assert not np.array_equal(p1, p3)


def test_pickle_string_labels_and_inputs_untouched(digits):
    X_tr, X_te, y_tr, _ = digits
    labels = np.array([f"d{k}" for k in y_tr], dtype=object)
    X0, l0 = X_tr.copy(), labels.copy()
    clf = MLPNetClassifier(hidden_layer_sizes=(16,), max_epochs=2, random_state=0)
    clf.fit(X_tr, labels)
    assert np.array_equal(X_tr, X0) and np.array_equal(labels, l0)
    assert set(clf.predict(X_te)) <= set(labels)
    clone = pickle.loads(pickle.dumps(clf))
    assert np.array_equal(clone.predict_proba(X_te), clf.predict_proba(X_te))


def test_pipeline_and_grid_search(digits):
    X_tr, _, y_tr, _ = digits
    X, y = X_tr[:300] * 5 + 3, y_tr[:300]
    pipe = make_pipeline(
        StandardScaler(),
        MLPNetClassifier(hidden_layer_sizes=(16,), max_epochs=3, lr=1e-2, random_state=0),
    )
    grid = GridSearchCV(
        pipe,
        {
            "mlpnetclassifier__loss": ["cross_entropy", "maxsup"],
            "mlpnetclassifier__optimizer": ["adam", "nanoadam"],
            "mlpnetclassifier__update_fraction": [0.5],
        },
        cv=2,
    )
    grid.fit(X, y)
    assert grid.best_score_ > 0.6
    assert set(grid.cv_results_["param_mlpnetclassifier__loss"]) == {"cross_entropy", "maxsup"}


def test_verbose_prints_skorch_table(digits, capsys):
    _fit(digits, max_epochs=2, verbose=1, hidden_layer_sizes=(8,))
    out = capsys.readouterr().out
    assert "epoch" in out and "train_loss" in out
    _fit(digits, max_epochs=2, verbose=0, hidden_layer_sizes=(8,))
    assert capsys.readouterr().out == ""


def test_invalid_combinations(digits):
    X_tr, _, y_tr, _ = digits
    with pytest.raises(ValueError, match="nanoadam"):
        MLPNetClassifier(sign_in=True, optimizer="nanoadam").fit(X_tr, y_tr)
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        MLPNetClassifier(hidden_layer_sizes=(4, 0)).fit(X_tr, y_tr)
    with pytest.raises(ValueError, match="2 classes"):
        MLPNetClassifier().fit(X_tr[:5], np.zeros(5))
    with pytest.raises(ValueError, match="loss"):
        MLPNetClassifier(loss="focal").fit(X_tr, y_tr)


def test_empty_hidden_layers_is_linear(digits):
    clf, acc = _fit(digits, hidden_layer_sizes=(), max_epochs=10, lr=1e-2)
    assert len(clf.net_.module_.layers) == 0 and acc > 0.9


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only behaviour")
def test_cuda_without_gpu_raises_and_auto_falls_back(digits):
    X_tr, _, y_tr, _ = digits
    with pytest.raises(ValueError, match="CUDA"):
        MLPNetClassifier(device="cuda", max_epochs=1).fit(X_tr, y_tr)
    clf = MLPNetClassifier(device="auto", max_epochs=1, hidden_layer_sizes=(8,)).fit(X_tr, y_tr)
    assert clf.net_.device == "cpu"


@pytest.mark.slow
def test_digits_loss_comparison():
    res = loss_comparison(random_state=0, hidden=(256, 256), max_epochs=40)
    ce, ls, ms = res["cross_entropy"], res["label_smoothing"], res["maxsup"]
    assert ls["accuracy"] >= ce["accuracy"] and ms["accuracy"] >= ce["accuracy"]
    assert abs(ms["accuracy"] - ls["accuracy"]) < 0.005 + 1e-9
    assert ls["conf_err"] < 0.6 * ce["conf_err"] and ms["conf_err"] < 0.6 * ce["conf_err"]


@pytest.mark.slow
def test_hard_problem_confidence_on_errors():
    res = loss_comparison(0, hidden=(128,), max_epochs=20, data=hard_problem_split(0))
    ce, ls, ms = res["cross_entropy"], res["label_smoothing"], res["maxsup"]
    assert 0.5 < ce["accuracy"] < 0.9  # many errors: the regime where the losses differ
    assert ls["conf_err"] < 0.6 * ce["conf_err"] and ms["conf_err"] < 0.6 * ce["conf_err"]
    # here the two regularisers differ (MaxSup drops LS's error amplification): a MaxSup
    # that did nothing, or one that computed label smoothing, fails one of these
    assert abs(ms["nll"] - ls["nll"]) > 1e-3 and abs(ms["nll"] - ce["nll"]) > 1e-2


# --------------------------------------------------------------------------------------
# GPU (skipped without CUDA by tests/conftest.py)
# --------------------------------------------------------------------------------------
GPU_CONFIGS = [
    dict(loss="cross_entropy"),
    dict(loss="label_smoothing", label_smoothing_end=0.2),
    dict(loss="maxsup", label_smoothing_end=0.2),
    dict(optimizer="nanoadam", lr=1e-2, update_fraction=0.3),
    dict(sparsity=0.9, sign_in=True, optimizer="sgd", lr=0.05),
]


@pytest.mark.gpu
@pytest.mark.parametrize("kwargs", GPU_CONFIGS, ids=lambda d: "-".join(map(str, d.values())))
def test_gpu_fit_matches_cpu(digits, kwargs):
    X_tr, X_te, y_tr, y_te = digits
    cpu = MLPNetClassifier(hidden_layer_sizes=(64,), max_epochs=20, random_state=0, **kwargs)
    gpu = MLPNetClassifier(hidden_layer_sizes=(64,), max_epochs=20, random_state=0,
                           device="cuda", **kwargs)
    acc_cpu = cpu.fit(X_tr, y_tr).score(X_te, y_te)
    gpu.fit(X_tr, y_tr)
    proba = gpu.predict_proba(X_te)
    assert isinstance(proba, np.ndarray)
    assert str(next(gpu.net_.module_.parameters()).device).startswith("cuda")
    assert abs(gpu.score(X_te, y_te) - acc_cpu) <= 0.02
    if "sparsity" in kwargs:
        assert all(torch.equal(cpu.masks_[k], gpu.masks_[k]) for k in cpu.masks_)


@pytest.mark.gpu
def test_gpu_auto_picks_cuda(digits):
    X_tr, _, y_tr, _ = digits
    clf = MLPNetClassifier(device="auto", max_epochs=1, hidden_layer_sizes=(8,)).fit(X_tr, y_tr)
    assert str(clf.net_.device).startswith("cuda")
