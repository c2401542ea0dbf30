"""The README's install figure is this checkout's own .venv, measured, so the claim
cannot go stale unseen when a dependency grows or shrinks."""

import importlib.metadata
import os
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement

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


def top_level(installed: Path) -> Path:
    """The folder or file in site-packages that holds an installed file; a file outside it
    (a script in the venv's bin, written ../../../bin/...) stands for itself."""
    return installed if installed.parts[0] == ".." else Path(installed.parts[0])


def extra_mb(extra: str) -> float:
    """What the packages of this checkout's optional `extra` take in .venv, where installed:
    make test adds pg16 (its compare test runs the embedded 16), and the README's figure is
    make install's. Each package's top-level folders and files, as pip's RECORD names them
    (the folders whole, so bytecode compiled since counts too)."""
    total = 0.0
    for line in importlib.metadata.distribution("pgq-teach").requires or []:
        wanted = Requirement(line)
        if wanted.marker is None or not wanted.marker.evaluate({"extra": extra}):
            continue
        try:
            dist = importlib.metadata.distribution(wanted.name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for part in {top_level(Path(str(f))) for f in dist.files or []}:
            where = Path(str(dist.locate_file(part)))
            total += on_disk_mb(where) if where.is_dir() else os.lstat(where).st_blocks * 512 / 2**20
    return total


@pytest.mark.skipif(not VENV.is_dir(), reason="no .venv here (a conda or system install)")
def test_the_readmes_venv_size_is_the_real_venvs():
    claimed, real = claimed_mb(), on_disk_mb(VENV) - extra_mb("pg16")
    assert abs(real - claimed) <= TOLERANCE * claimed, (
        f"README says about {claimed} MB for .venv; it is {real:.0f} MB: measure a fresh "
        "`make install` and update the First run line"
    )
