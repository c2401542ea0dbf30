"""Keep the stored lessons readable in a diff.

A lesson is stored executed, so a reader sees real output, but three things in
an executed notebook are noise to a reviewer and to a learner:

- ``metadata.widgets``: the widget state Jupyter saves. It was 61% of the
  notebooks' bytes, renders nothing useful, and changes on every run.
- ``metadata.execution`` on each cell: the kernel's timestamps for that run.
- a widget's stored output: a view of a model that is no longer saved, with a
  repr such as ``CrashLab(children=(HBox(...`` as its text. It becomes one plain
  line saying what running the cell opens. nbval ignores these outputs (every
  widget cell is tagged ``nbval-ignore-output``), and the live widget replaces
  the line as soon as the cell runs.

    python tools/clean_notebooks.py            # clean notebooks/*.ipynb in place
    python tools/clean_notebooks.py --verify   # exit 1, naming each notebook the cleaner would change

``make lint`` (so ``make test`` and CI) runs ``--verify``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def widget_line(text_plain: str | list[str]) -> str:
    """The plain line that stands in for a stored widget until its cell runs."""
    text = "".join(text_plain) if isinstance(text_plain, list) else text_plain
    match = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)\(", text)
    name = match.group(1) if match else "widget"
    return f"Run this cell to open the {name} widget."


def clean_output(output: dict) -> dict:
    data = output.get("data", {})
    if WIDGET_VIEW not in data:
        return output
    return {**output, "data": {"text/plain": [widget_line(data.get("text/plain", ""))]}}


def clean(notebook: dict) -> dict:
    """The notebook without saved widget state, run timestamps or widget reprs."""
    metadata = {k: v for k, v in notebook.get("metadata", {}).items() if k != "widgets"}
    cells = []
    for cell in notebook.get("cells", []):
        cell = {**cell, "metadata": {k: v for k, v in cell.get("metadata", {}).items() if k != "execution"}}
        if "outputs" in cell:
            cell["outputs"] = [clean_output(o) for o in cell["outputs"]]
        cells.append(cell)
    return {**notebook, "metadata": metadata, "cells": cells}


def dump(notebook: dict) -> str:
    """The text Jupyter itself writes: one-space indent, sorted keys, a final newline."""
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: notebooks/*.ipynb)")
    parser.add_argument("--verify", action="store_true", help="change nothing; exit 1 if a notebook is dirty")
    args = parser.parse_args(argv)
    paths = args.paths or sorted(NOTEBOOKS.glob("*.ipynb"))
    dirty = []
    for path in paths:
        before = path.read_text(encoding="utf-8")
        after = dump(clean(json.loads(before)))
        if after == before:
            continue
        dirty.append(path)
        if not args.verify:
            path.write_text(after, encoding="utf-8")
    for path in dirty:
        verb = "would clean" if args.verify else "cleaned"
        print(f"{verb} {path.name}", file=sys.stderr if args.verify else sys.stdout)
    if args.verify and dirty:
        print("run: python tools/clean_notebooks.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
