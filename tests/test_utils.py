import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sklearn_cispa.utils import (
    check_min_samples,
    check_probabilities,
    check_random_generator,
    is_available,
    optional_import,
    parallel_map,
    resolve_device,
    spawn_seeds,
    torch_generator,
    torch_rng_context,
)


def _square_plus(x, seed):
    rng = np.random.default_rng(seed)
    return float(x * x + rng.normal())


def test_parallel_map_matches_serial_and_keeps_order():
    seeds = spawn_seeds(0, 8)
    tasks = [(i, s) for i, s in enumerate(seeds)]
    serial = [_square_plus(*t) for t in tasks]
    assert parallel_map(_square_plus, tasks, n_jobs=1) == serial
    assert parallel_map(_square_plus, tasks, n_jobs=2) == serial
    assert parallel_map(_square_plus, tasks, n_jobs=2, prefer="threads") == serial


def test_spawn_seeds_independent_of_count_prefix():
    assert spawn_seeds(1, 3) == spawn_seeds(1, 5)[:3]
    assert len(set(spawn_seeds(1, 100))) > 95


def test_resolve_device():
    import torch

    assert resolve_device("cpu") == "cpu"
    assert resolve_device(None) == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="Unknown device|Unsupported device"):
        resolve_device("tpu-of-dreams")
    with pytest.raises(TypeError):
        resolve_device(3)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            resolve_device("cuda")


def test_seeding_is_reproducible_and_leaves_global_rng_alone():
    import torch

    assert spawn_seeds(5, 1) == spawn_seeds(5, 1)
    rs = np.random.RandomState(0)
    assert spawn_seeds(rs, 1) != spawn_seeds(rs, 1)
    state = torch.get_rng_state()
    with torch_rng_context(11):
        a = torch.rand(3)
    assert torch.equal(state, torch.get_rng_state())
    with torch_rng_context(11):
        b = torch.rand(3)
    assert torch.equal(a, b)
    g1, g2 = torch_generator(4), torch_generator(4)
    assert torch.equal(torch.rand(3, generator=g1), torch.rand(3, generator=g2))



def _draws_in_seeded_block(seed):
    import torch

    with torch_rng_context(seed):
        first = torch.rand(4)
        time.sleep(0.02)  # give a thread that shares the RNG the chance to draw from it
        return torch.cat([first, torch.rand(4)])


def test_torch_rng_context_on_threads_draws_as_one_after_another():
    # the global torch RNG is one per process: two threads seeding it at once must not
    # draw from each other's stream (parallel tasks on a thread-based backend)
    from concurrent.futures import ThreadPoolExecutor

    import torch

    expected = [_draws_in_seeded_block(s) for s in range(6)]
    with ThreadPoolExecutor(max_workers=3) as pool:
        got = list(pool.map(_draws_in_seeded_block, range(6)))
    for a, b in zip(expected, got):
        assert torch.equal(a, b)


def test_check_random_generator():
    gen = np.random.default_rng(0)
    assert check_random_generator(gen) is gen
    assert check_random_generator(3).integers(1000) == check_random_generator(3).integers(1000)


@given(
    st.integers(1, 5).flatmap(
        lambda k: st.lists(
            st.lists(st.floats(0.01, 1.0), min_size=k, max_size=k), min_size=1, max_size=4
        )
    )
)
def test_check_probabilities_accepts_normalised_and_never_mutates(rows):
    arr = np.asarray(rows, dtype=float)
    arr = arr / arr.sum(axis=1, keepdims=True)
    before = arr.copy()
    out = check_probabilities(arr)
    np.testing.assert_array_equal(arr, before)
    np.testing.assert_allclose(out.sum(axis=1), 1.0)
    assert out is not arr


@pytest.mark.parametrize(
    "bad, match",
    [
        ([[0.5, np.nan]], "NaN"),
        ([[-0.5, 1.5]], r"\[0, 1\]"),
        ([[0.3, 0.3]], "sum to 1"),
    ],
)
def test_check_probabilities_rejects(bad, match):
    with pytest.raises(ValueError, match=match):
        check_probabilities(bad)
    with pytest.raises(ValueError, match="3-d"):
        check_probabilities([[0.5, 0.5]], ndim=3)


def test_check_min_samples():
    check_min_samples(4, 4, what="x")
    with pytest.raises(ValueError, match="needs at least 4 samples, got 2"):
        check_min_samples(2, 4, what="x")


def test_optional_import_message():
    with pytest.raises(ImportError, match="pip install definitely_missing_pkg_xyz"):
        optional_import("definitely_missing_pkg_xyz", purpose="A test")
    with pytest.raises(ImportError, match=r"sklearn-cispa\[bench\]"):
        optional_import("lingam.surely_missing_submodule")
    assert is_available("numpy") and not is_available("definitely_missing_pkg_xyz")


@pytest.mark.parametrize("start_training", [True, False])
@pytest.mark.parametrize("enabled", [True, False])
def test_eval_mode_sets_and_restores_every_submodule(start_training, enabled):
    torch = pytest.importorskip("torch")
    from sklearn_cispa.utils import eval_mode

    net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5))
    net.train(start_training)
    with eval_mode(net, enabled=enabled) as inside:
        assert inside is net
        seen = [m.training for m in net.modules()]
    assert seen == [start_training and not enabled] * 3
    assert [m.training for m in net.modules()] == [start_training] * 3


def test_eval_mode_restores_the_mode_after_an_exception():
    torch = pytest.importorskip("torch")
    from sklearn_cispa.utils import eval_mode

    net = torch.nn.Dropout(0.5)
    with pytest.raises(RuntimeError, match="boom"):
        with eval_mode(net):
            assert not net.training
            raise RuntimeError("boom")
    assert net.training
