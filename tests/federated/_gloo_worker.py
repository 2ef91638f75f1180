"""One rank of the 2-process gloo test of ``backend="torch"`` (spawned by the test).

Each rank joins a process group on 127.0.0.1 (loopback only), fits on its own shard and
saves its coefficients, loss curve and consensus error to ``out_dir``, for every job
``(data_file, params)`` in turn, in one process group.
"""

import datetime
from pathlib import Path

import numpy as np


def run_rank(rank, world_size, port, jobs, out_dir):
    import torch
    import torch.distributed as dist

    from sklearn_cispa.federated import LocalSGDClassifier, LocalSGDRegressor

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=60),
    )
    try:
        for i, (data_file, params) in enumerate(jobs):
            data = np.load(data_file)
            mine = data["groups"] == rank
            X, y = data["X"][mine], data["y"][mine]
            params = dict(params)
            cls = LocalSGDClassifier if params.pop("classifier", False) else LocalSGDRegressor
            est = cls(backend="torch", **params).fit(X, y)
            np.savez(
                Path(out_dir) / f"rank{rank}_job{i}.npz",
                coef=np.asarray(est.coef_),
                intercept=np.asarray(est.intercept_),
                loss=est.loss_curve_,
                consensus=est.consensus_error_,
                machines=est.machines_,
            )
    finally:
        dist.destroy_process_group()
