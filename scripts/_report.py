"""Shared by the scripts: write a results table (Markdown lines) where asked."""

from __future__ import annotations

import os


def write_lines(path: str, lines: list[str]) -> None:
    """Write ``lines`` to ``path`` (creating its folder) and say where."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"wrote {path}")


def save_figure(path: str, draw) -> None:
    """Draw a figure headless with ``draw(plt)`` (returns the Figure) and save it as PNG.

    Skipped with a note when matplotlib is not installed (it is an optional extra).
    """
    try:
        import matplotlib
    except ImportError:
        print(f"matplotlib not installed: {path} not drawn")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig = draw(plt)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    print(f"wrote {path}")
