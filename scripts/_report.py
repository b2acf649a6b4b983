"""Shared by the scripts: write a results table (Markdown lines) where asked."""

from __future__ import annotations

import os


def write_lines(path: str, lines: list[str]) -> None:
    """Write ``lines`` to ``path`` (creating its folder) and say where."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"wrote {path}")
