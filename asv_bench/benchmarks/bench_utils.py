"""Overhead of the shared joblib loop (the path every parallel loop of the package takes)."""

import numpy as np


def _task(n, seed):
    rng = np.random.default_rng(seed)
    return float(rng.normal(size=n).sum())


class ParallelMap:
    params = [1, 2]
    param_names = ["n_jobs"]

    def setup(self, n_jobs):
        from sklearn_cispa.utils import parallel_map, spawn_seeds

        self.parallel_map = parallel_map
        self.tasks = [(1000, s) for s in spawn_seeds(0, 32)]

    def time_parallel_map(self, n_jobs):
        self.parallel_map(_task, self.tasks, n_jobs=n_jobs, prefer="threads")
