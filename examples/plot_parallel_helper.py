"""
==========================================
Running the library's loops in parallel
==========================================

Every embarrassingly parallel loop of sklearn-cispa (ensemble members, local scores,
per-parameter solves) goes through :func:`sklearn_cispa.utils.parallel_map`. This
example times that loop with one and two workers on a toy task and checks that the
results do not depend on the number of workers, because the seeds are drawn up front.
"""

import time

import matplotlib.pyplot as plt
import numpy as np

from sklearn_cispa.utils import parallel_map, spawn_seeds


def simulate(n, seed):
    rng = np.random.default_rng(seed)
    return float(np.median(rng.standard_normal(n)))


tasks = [(20_000, s) for s in spawn_seeds(0, 64)]
timings, results = {}, {}
for n_jobs in (1, 2):
    start = time.perf_counter()
    results[n_jobs] = parallel_map(simulate, tasks, n_jobs=n_jobs, prefer="threads")
    timings[n_jobs] = time.perf_counter() - start

assert results[1] == results[2]
print({k: f"{v:.3f}s" for k, v in timings.items()})

fig, ax = plt.subplots(figsize=(4, 3))
ax.hist(results[1], bins=15, color="tab:blue")
ax.set_xlabel("median of 20,000 normal draws")
ax.set_ylabel("tasks")
ax.set_title("Same results with 1 or 2 workers")
fig.tight_layout()
plt.show()
