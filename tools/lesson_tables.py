"""Write the README's lesson table and lesson 00's map from the lesson manifest.

The manifest (`pgq_teach/content/lessons.yaml`, read by `pgq_teach.lessons`) is the one
place that says what each lesson is called, what it does, which of the guide's figures it
shows and how long its Run All takes. The two tables that show those facts are made from
it; edit the manifest, then run this:

    python tools/lesson_tables.py            # rewrite both tables in place
    python tools/lesson_tables.py --verify   # change nothing; exit 1 if either differs

`tests/test_lessons.py` runs the same comparison. Only the table is replaced: in the
README, the block of `|` lines that starts with `| lesson |`; in lesson 00, the same block
in the markdown cell that opens with `## The map`. A stored notebook's format is kept
(tools/clean_notebooks.py's `dump`), so nothing else in it changes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from clean_notebooks import dump

from pgq_teach import lessons

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MAP_CELL = "## The map"


def map_notebook(course: lessons.Course) -> Path:
    """Lesson 00's notebook, where the map is."""
    return ROOT / "notebooks" / course.lessons[0].notebook


def map_cell(notebook: dict) -> dict:
    """The markdown cell of lesson 00 that holds the map."""
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown" and "".join(cell["source"]).startswith(MAP_CELL):
            return cell
    raise SystemExit(f"lesson 00 has no markdown cell opening with {MAP_CELL!r}")


def written(course: lessons.Course) -> dict[Path, str]:
    """Each file as it should read, with its table made from the manifest."""
    readme = lessons.replace_table(README.read_text(encoding="utf-8"), lessons.readme_table(course))
    path = map_notebook(course)
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cell = map_cell(notebook)
    source = lessons.replace_table(
        "".join(cell["source"]), lessons.map_table(course, course.lessons[0].number)
    )
    cell["source"] = source.splitlines(keepends=True)
    return {README: readme, path: dump(notebook)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verify", action="store_true", help="change nothing; exit 1 if a table differs")
    args = parser.parse_args(argv)
    stale = []
    for path, text in written(lessons.load()).items():
        if path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if not args.verify:
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{'would rewrite' if args.verify else 'rewrote'} {path.relative_to(ROOT)}")
    if args.verify and stale:
        print("run: python tools/lesson_tables.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
