"""The README's Python blocks run verbatim, in order, in one interpreter, in an empty directory.

That is how a new user meets them: copied one after the other into a session in a fresh folder.
Each block gets its own line in the error so a failure names the block.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python_blocks() -> list[str]:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_readme_has_python_blocks_and_a_test_command():
    assert len(_python_blocks()) >= 4
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        assert "<!-- test-command -->" in fh.read()


@pytest.mark.slow_without_jit  # a subprocess (not measured)
def test_readme_python_blocks_run_in_order_in_an_empty_directory(tmp_path):
    pytest.importorskip("sklearn")
    blocks = _python_blocks()
    script = "\n".join(f"# --- README block {k}\n{b}" for k, b in enumerate(blocks, 1))
    (tmp_path / "readme_blocks.py").write_text(script, encoding="utf-8")
    res = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "readme_blocks.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "log10(lam / mu_max^2):" in res.stdout and "pair accuracy:" in res.stdout
