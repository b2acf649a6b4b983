"""The package's layout rules: no import circle, small modules, scripts on the public API.

A newcomer reads the package from ``ls``; these rules keep it that way (``docs/design``
explains the rooms). The import walk reads every ``import`` / ``from ... import`` statement of
the package with ``ast``, including those inside functions (lazy imports close a circle too).
"""

from __future__ import annotations

import ast
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "nystrom_priors")
MAX_LINES = 600


def _modules() -> dict[str, str]:
    mods = {}
    for folder, _dirs, files in os.walk(PKG):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                mods[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return mods


def _imports(mod: str, path: str, mods: dict[str, str]) -> set[str]:
    package = mod if path.endswith("__init__.py") else mod.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:  # "from . import x" names a module
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in mods else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {t for t in found if t in mods and t != mod}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_in_the_package():
    mods = _modules()
    graph = {m: _imports(m, p, mods) for m, p in mods.items()}
    assert graph["nystrom_priors.generalized"]  # the walk sees imports at all
    assert _cycles(graph) == []


def test_no_module_over_the_size_limit():
    long = {
        m: n
        for m, p in _modules().items()
        if (n := sum(1 for _ in open(p, encoding="utf-8"))) > MAX_LINES
    }
    assert not long, long


def test_scripts_use_the_public_api_only():
    """``scripts/*.py`` (benchmarks, reproductions, the demo) import no ``_private`` name of
    the package; studies that need internals live in ``scripts/research/``."""
    scripts = os.path.join(ROOT, "scripts")
    offenders = []
    for name in sorted(os.listdir(scripts)):
        if not name.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(scripts, name), encoding="utf-8").read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "nystrom_priors"
            ):
                private = [a.name for a in node.names if a.name.startswith("_")]
                if any(p.startswith("_") for p in node.module.split(".")) or private:
                    offenders.append((name, node.module, private))
            elif isinstance(node, ast.Import):
                offenders += [
                    (name, a.name, [])
                    for a in node.names
                    if a.name.startswith("nystrom_priors.")
                    and any(p.startswith("_") for p in a.name.split("."))
                ]
    assert not offenders, offenders


def test_tracked_binaries_stay_small():
    """Generated figures and arrays are not tracked (each script regenerates its own)."""
    try:
        files = (
            subprocess.run(
                ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
            )
            .stdout.decode()
            .split("\0")
        )
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    binary = (".png", ".npz", ".npy", ".pdf", ".jpg", ".pkl")
    total = sum(
        os.path.getsize(os.path.join(ROOT, f))
        for f in files
        if f.endswith(binary) and os.path.exists(os.path.join(ROOT, f))
    )
    assert total <= 500 * 1024, total
