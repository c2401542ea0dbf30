"""One name per idea: a public class (or type alias) is defined once in the package, so
`Step`, `Verdict` or `Progress` means the same thing wherever a reader meets it."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pgq_teach

PACKAGE = Path(pgq_teach.__file__).resolve().parent


def public_type_names() -> dict[str, list[str]]:
    """Each public class and CamelCase module-level alias, with the modules that define it."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                names = [n for n in names if n[:1].isupper() and not n.isupper()]  # CamelCase, not CONSTANTS
            else:
                continue
            for name in names:
                if not name.startswith("_"):
                    found[name].append(path.relative_to(PACKAGE).as_posix())
    return found


def test_public_class_names_are_unique():
    twice = {name: where for name, where in public_type_names().items() if len(where) > 1}
    assert not twice, f"defined in more than one module (give each its own name): {twice}"
