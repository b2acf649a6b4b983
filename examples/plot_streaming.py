"""
Streaming a large set through a fitted kernel
=============================================

A learner is fitted on what it needs (a landmark sample and the labelled rows); the factor
rows of any number of samples then stream in bounded memory with ``iter_transform``. Here a
memory-mapped array of 200,000 rows is never loaded whole.
"""

import os
import tempfile

import numpy as np

import nystrom_priors as npr

rng = np.random.default_rng(0)
path = os.path.join(tempfile.mkdtemp(), "big.npy")
big = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(200_000, 10))
for start in range(0, big.shape[0], 50_000):
    centres = rng.integers(0, 4, size=50_000)
    big[start : start + 50_000] = rng.normal(size=(50_000, 10)) + 3.0 * centres[:, None]
big.flush()
X = np.load(path, mmap_mode="r")
y = np.full(X.shape[0], -1)
labelled = rng.choice(X.shape[0], 200, replace=False)
y[labelled] = (X[labelled, 0] > 4.5).astype(int)

model = npr.GeneralizedNystrom(n_landmarks=100, random_state=0).fit(X, y)
rows, norm = 0, 0.0
for _start, G in model.iter_transform(X, block_rows=20_000):
    rows += G.shape[0]
    norm += float(np.einsum("ij,ij->", G, G))
print(f"streamed {rows} rows in blocks of 20,000; trace of the learned kernel: {norm:.1f}")
