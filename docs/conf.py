"""Sphinx configuration: pydata theme, numpydoc API pages, an executed example gallery, and
Markdown (MyST) for the design notes and the benchmark tables under ``results/``."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("MPLBACKEND", "Agg")

import nystrom_priors  # noqa: E402

project = "nystrom_priors"
author = "the nystrom_priors developers"
copyright = "2026, the nystrom_priors developers"
release = version = nystrom_priors.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip"]
myst_heading_anchors = 3
autosummary_generate = True
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_validation_checks = set()

sphinx_gallery_conf = {
    "examples_dirs": os.path.join(os.path.dirname(HERE), "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "within_subsection_order": "FileNameSortKey",
    "remove_config_comments": True,
}

html_theme = "pydata_sphinx_theme"
html_title = f"nystrom_priors {release}"
html_static_path = ["_static"]
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
suppress_warnings = ["myst.header"]
