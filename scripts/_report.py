"""Shared by the scripts: write a results table (Markdown lines) where asked."""

from __future__ import annotations

import argparse
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


def count(lo: int = 1, hi: int | None = None):
    """An argparse ``type``: an integer of at least ``lo`` and at most ``hi`` (a bad value
    is a usage error before any work, not a traceback after it)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < lo:
            raise argparse.ArgumentTypeError(f"must be at least {lo}, got {value}")
        if hi is not None and value > hi:
            raise argparse.ArgumentTypeError(f"must be at most {hi}, got {value}")
        return value

    return parse


def new_file(path: str) -> str:
    """An argparse ``type``: a file path whose folder exists and that is not a folder."""
    if os.path.isdir(path):
        raise argparse.ArgumentTypeError(f"{path!r} is a directory; give a file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"the folder {folder!r} does not exist")
    return path
