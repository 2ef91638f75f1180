"""Graphon limit of PaI masks (issue 17): SAS time against width, kernels beside peers.

- ``sas_histogram`` time and peak memory against the width n (100 to 4000), with the
  ratio to a plain numpy block-mean loop (``np.array_split``) in the same run;
- dense ``graphon_ntk`` against the neural-tangents stax kernel (Dense W_std=1 without
  bias, Relu, NTK parametrization) on 256 digits: time and maximum relative error
  (skipped without neural-tangents);
- ``empirical_ntk`` time and peak memory against the number of rows (the nngeometry
  peer is not wired in, see ``EmpiricalNTK``);
- SAS against a graspologic SBM fit with K blocks on the same mask (skipped without it);
- top-5 energy of the empirical NTK for Random and SNIP masks at keep 0.2.
"""

import time

import numpy as np

from ._common import SEED, limit_torch_threads, require

K = 16


def _digits(n=256):
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    rows = np.random.RandomState(SEED).choice(len(X), n, replace=False)
    return StandardScaler().fit_transform(X[rows]), y[rows]


def _plain_block_means(mask, k):
    m = mask[np.argsort(-mask.sum(1), kind="stable")][:, np.argsort(-mask.sum(0), kind="stable")]
    rows, cols = np.array_split(np.arange(m.shape[0]), k), np.array_split(np.arange(m.shape[1]), k)
    return np.array([[m[np.ix_(r, c)].mean() for c in cols] for r in rows])


class SASWidth:
    params = [100, 500, 1000, 2000, 4000]
    param_names = ["width"]

    def setup(self, width):
        self.mask = np.random.RandomState(SEED).rand(width, width) < 0.2

    def time_sas_histogram(self, width):
        from sklearn_cispa.pruning import sas_histogram

        sas_histogram(self.mask, n_blocks=K)

    def peakmem_sas_histogram(self, width):
        from sklearn_cispa.pruning import sas_histogram

        sas_histogram(self.mask, n_blocks=K)

    def track_ratio_to_plain_numpy(self, width):
        import timeit

        from sklearn_cispa.pruning import sas_histogram

        ours = min(timeit.repeat(lambda: sas_histogram(self.mask, K), number=1, repeat=3))
        peer = min(timeit.repeat(lambda: _plain_block_means(self.mask, K), number=1, repeat=3))
        return ours / peer

    track_ratio_to_plain_numpy.unit = "ratio"


class DenseKernelVsNeuralTangents:
    timeout = 300

    def setup(self):
        self.nt = require("neural_tangents")
        self.X = _digits()[0]

    def _peer(self):
        stax = self.nt.stax
        layers = []
        for _ in range(3):
            layers += [stax.Dense(1, W_std=1.0, b_std=None, parameterization="ntk"), stax.Relu()]
        _, _, kernel_fn = stax.serial(
            *layers, stax.Dense(1, W_std=1.0, b_std=None, parameterization="ntk")
        )
        return np.asarray(kernel_fn(self.X, None, "ntk"))

    def time_graphon_ntk(self):
        from sklearn_cispa.pruning import graphon_ntk

        graphon_ntk(self.X, graphons=[None] * 4)

    def time_neural_tangents(self):
        self._peer()

    def track_max_relative_error(self):
        from sklearn_cispa.pruning import graphon_ntk

        ours = graphon_ntk(self.X, graphons=[None] * 4)
        return float(np.max(np.abs(ours - self._peer()) / np.abs(ours)))


class EmpiricalNTK:
    """``empirical_ntk`` time against the number of rows (masked make_graphon_mlp 64-128-128-1).

    The nngeometry peer of the spec's protocol is not wired in: its kernel API could not
    be checked on this offline machine (nngeometry is not installed).
    """

    timeout = 300
    params = [32, 128]
    param_names = ["n_samples"]

    def setup(self, n_samples):
        limit_torch_threads(1)
        from sklearn_cispa.pruning import make_graphon_mlp

        self.X = _digits(n_samples)[0]
        self.net = make_graphon_mlp(64, (128, 128), graphons=[None, 0.5, None], random_state=SEED)
        from sklearn_cispa.pruning import empirical_ntk

        empirical_ntk(self.net, self.X[:2])  # torch.func's one-off start-up (~4 s) not timed

    def time_empirical_ntk(self, n_samples):
        from sklearn_cispa.pruning import empirical_ntk

        empirical_ntk(self.net, self.X)

    def peakmem_empirical_ntk(self, n_samples):
        from sklearn_cispa.pruning import empirical_ntk

        empirical_ntk(self.net, self.X)


class SASVersusSBM:
    timeout = 300

    def setup(self):
        self.gl = require("graspologic")
        from sklearn_cispa.pruning import make_graphon_mlp, prune_at_init

        X, y = _digits(512)
        import torch

        net = make_graphon_mlp(64, (256, 256, 256), n_outputs=10, random_state=SEED)
        self.mask = prune_at_init(net, "snip", 0.8, X=torch.as_tensor(X), y=torch.as_tensor(y))[
            "layers.1.weight"
        ].numpy()

    def time_sas(self):
        from sklearn_cispa.pruning import sas_histogram

        sas_histogram(self.mask, K)

    def time_graspologic_sbm(self):
        self.gl.models.SBMEstimator(directed=True, loops=True, n_blocks=K).fit(
            self.mask.astype(float)[:, : self.mask.shape[0]]
        )


class TopEnergyKeep02:
    """Top-5 energy of the empirical NTK (output 0, 128 digits) of a 64-256-256-256-10
    make_graphon_mlp under Random and SNIP masks at keep 0.2 (spec 7.4)."""

    timeout = 300

    def setup_cache(self):
        limit_torch_threads(1)
        import torch

        from sklearn_cispa.pruning import (
            empirical_ntk,
            make_graphon_mlp,
            ntk_spectrum_stats,
            prune_at_init,
        )

        X, y = _digits(256)
        Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
        base = make_graphon_mlp(64, (256,) * 3, n_outputs=10, random_state=SEED)
        out = {}
        for method in ("random", "snip"):
            masks = prune_at_init(base, method, 0.8, X=Xt, y=yt, random_state=SEED + 1)
            net = make_graphon_mlp(64, (256,) * 3, n_outputs=10, masks=masks, random_state=SEED)
            out[method] = ntk_spectrum_stats(empirical_ntk(net, X[:128], output=0))["top_energy"]
        return out

    def track_top5_energy(self, res, method):
        return res[method]

    track_top5_energy.params = ["random", "snip"]
    track_top5_energy.param_names = ["method"]


class EmpiricalNTKVsTorchFunc:
    """``empirical_ntk`` (its default ``batch_size``) against a bare
    ``torch.func.vmap(jacrev)`` on the same model and batch (issue 33: goal <= 1.2x, kernel
    equal to 1e-6): make_graphon_mlp 64-256-256-256-1 on 256 digits, one torch thread."""

    timeout = 300

    def setup(self):
        limit_torch_threads(1)
        import torch
        from torch.func import functional_call, jacrev, vmap

        from sklearn_cispa.pruning import empirical_ntk, make_graphon_mlp

        self.X = _digits(256)[0]
        self.net = make_graphon_mlp(
            64, (256,) * 3, graphons=[None, 0.2, 0.2, None], random_state=SEED
        )
        net, Xt = self.net, torch.as_tensor(self.X)
        params = {k: v.detach() for k, v in net.named_parameters()}
        buffers = dict(net.named_buffers())

        def f(p, x):
            return functional_call(net, (p, buffers), (x.unsqueeze(0),)).reshape(-1)

        def peer():
            J = vmap(jacrev(f), in_dims=(None, 0))(params, Xt)
            J = torch.cat([j.reshape(j.shape[0], -1) for j in J.values()], dim=1)
            return (J @ J.T).numpy()

        self.peer = peer
        self.ours = lambda: empirical_ntk(self.net, self.X)
        self.ours()  # torch.func's one-off start-up, not timed
        self.peer()

    def track_ratio_to_torch_func(self):
        times = {"ours": np.inf, "peer": np.inf}
        for _ in range(3):
            for name in ("ours", "peer"):
                start = time.perf_counter()
                getattr(self, name)()
                times[name] = min(times[name], time.perf_counter() - start)
        return times["ours"] / times["peer"]

    track_ratio_to_torch_func.unit = "ratio"

    def track_max_relative_kernel_difference(self):
        ours, peer = self.ours(), self.peer()
        return float(np.max(np.abs(ours - peer)) / np.max(np.abs(peer)))

    track_max_relative_kernel_difference.unit = "max |diff| / max |K|"
