"""`import nystrom_priors` is light, and jitted kernels are cached across processes."""

import os
import subprocess
import sys
import textwrap

import pytest

HEAVY = ("numba", "llvmlite", "sklearn", "scipy", "matplotlib", "dask", "cvxpy")


def _run(code, env=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    res = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout.strip().splitlines()


def test_import_is_light():
    out = _run(
        f"""
        import sys
        import nystrom_priors as npr
        print("heavy:" + ",".join(m for m in {HEAVY!r} if m in sys.modules))
        print(len(npr.__all__))
        """
    )
    assert out[0] == "heavy:", f"import nystrom_priors loaded heavy modules: {out[0]}"
    assert int(out[1]) > 5


def test_public_names_resolve_lazily():
    out = _run(
        """
        import sys
        import nystrom_priors as npr
        names = [n for n in npr.__all__ if n != "__version__"]
        assert "numba" not in sys.modules
        from nystrom_priors import Nystrom  # the estimator class itself is light too
        print("numba" in sys.modules)
        for n in names:
            getattr(npr, n)
        print("ok")
        """
    )
    assert out == ["False", "ok"]


def test_unknown_attribute_raises():
    import nystrom_priors

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        nystrom_priors.nope  # noqa: B018


@pytest.mark.jit_only
def test_second_process_loads_kernels_from_cache(tmp_path):
    """cache=True: a fresh process with a warm cache compiles nothing."""
    code = """
        import numpy as np
        from nystrom_priors import extrapolate
        from nystrom_priors._numba import _extrapolate as kx
        X = np.random.default_rng(0).normal(size=(50, 3))
        extrapolate(X, X[:7], width=1.0)
        # whichever path ran (it depends on whether threadpoolctl is installed)
        kernels = [f for f in vars(kx).values() if hasattr(f, "stats")]
        hits = sum(sum(f.stats.cache_hits.values()) for f in kernels)
        misses = sum(sum(f.stats.cache_misses.values()) for f in kernels)
        print(hits, misses)
        """
    env = {"NUMBA_CACHE_DIR": str(tmp_path)}
    hits1, misses1 = map(int, _run(code, env)[0].split())
    hits2, misses2 = map(int, _run(code, env)[0].split())
    assert misses1 >= 1 and hits1 == 0  # cold cache: compiled
    assert hits2 >= 1 and misses2 == 0  # warm cache: loaded (leaves are embedded), nothing compiled


def test_every_subpackage_is_packaged():
    """pyproject lists the packages explicitly: a subpackage missing there is missing from the
    wheel (an editable install, as in CI, would not notice)."""
    tomllib = pytest.importorskip("tomllib")
    import nystrom_priors

    root = os.path.dirname(os.path.dirname(os.path.abspath(nystrom_priors.__file__)))
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        listed = set(tomllib.load(f)["tool"]["setuptools"]["packages"])
    found = {
        os.path.relpath(d, root).replace(os.sep, ".")
        for d, _dirs, files in os.walk(os.path.join(root, "nystrom_priors"))
        if "__init__.py" in files
    }
    assert found == listed
