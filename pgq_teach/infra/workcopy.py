"""The learner's working copy of the lessons.

`pgq-teach lab` serves a copy of the course's notebooks kept in the learner's
data folder (`learner.home()/notebooks`, beside progress.json), so what the
learner types and runs is saved there and the course's own notebooks stay as
git has them: a `git pull` of the course never meets the learner's outputs.

A lesson is copied only when the learner has no copy of it yet; nothing the
learner saved is ever written over, nor written through: a copy is made only
where no file and no link is (a link whose target is gone is named in one line,
never followed to write the lesson wherever it points). Which version of the course's notebook each
copy was made from is kept (`course_copies.json`, a SHA-256 per lesson), so a
newer course notebook is noticed and named in one line. `fresh(slug)` moves the
learner's copy aside into `earlier/` with the time in its name (never deleted)
and copies the course's current version.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import tables
from ..errors import BadInput, SetupError
from . import learner

FOLDER = "notebooks"  # inside learner.home()
EARLIER = "earlier"  # inside the copy: lessons set aside by --fresh
VERSIONS = "course_copies"  # learner.home()/course_copies.json: lesson file -> SHA-256 it was copied from
LESSON_GLOB = "[0-9][0-9]*-*.ipynb"


def course_notebooks() -> Path:
    """The course's own notebooks/ folder (in a clone, beside the package)."""
    here = Path(__file__).resolve().parents[2] / "notebooks"
    return here if here.is_dir() else Path.cwd() / "notebooks"


def lessons() -> list[str]:
    """The course's lessons, by slug ("02-row-locks"), from its notebooks."""
    return sorted(path.stem for path in course_notebooks().glob(LESSON_GLOB))


def find_lesson(name: str, text: Any, *, also: str = "") -> str:
    """A lesson's slug from its slug or its number ("02", "2", "02b"). Anything
    else is BadInput naming the argument `name`; `also` adds what else it may be."""
    known = lessons()
    if isinstance(text, str) and text in known:
        return text
    if isinstance(text, str) and text.isascii() and 0 < len(text) <= 3:
        wanted = f"{int(text):02d}" if text.isdigit() else text.lower()
        matches = [slug for slug in known if slug.split("-", 1)[0] == wanted]  # 02, or 02b
        if matches:
            return matches[0]
    numbers = f"{known[0][:2]} to {known[-1][:2]}" if known else "none found here"
    raise BadInput(
        f"{name} must be a lesson's number ({numbers}) or slug, such as 02 or 02-row-locks{also}; "
        f"got {text!r}"
    )


def folder() -> Path:
    """Where the learner's copy lives: learner.home()/notebooks."""
    return learner.home() / FOLDER


def _made(path: Path) -> Path:
    """The folder, made if missing; SetupError (one line) if it cannot be."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SetupError(
            f"cannot make {path} for your copy of the lessons ({exc.strerror}); set PGQ_HOME to a folder"
        ) from None
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class CopyReport:
    """What `prepare` did: the lessons it copied, and those whose course version
    is newer than the one the learner's copy was made from."""

    folder: Path
    copied: list[str] = field(default_factory=list)
    newer: list[str] = field(default_factory=list)
    broken_links: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """At most three lines for the terminal."""
        out = [f"your copy of the lessons: {self.folder}"]
        if self.copied:
            out[0] += f" (copied {tables.count(len(self.copied), 'lesson')} from the course)"
        if self.newer:
            out.append(
                f"the course has a newer version of {_lessons_named(self.newer)}: "
                f"`pgq-teach lab --fresh {_number(self.newer[0])}` copies it (yours is kept in {EARLIER}/)"
            )
        if self.broken_links:
            out.append(
                f"your copy of {_lessons_named(self.broken_links)} is a link to a file that is gone, so it "
                f"was left alone: `pgq-teach lab --fresh {_number(self.broken_links[0])}` sets the link "
                "aside and copies the lesson"
            )
        return out


def _number(slug: str) -> str:
    return slug.split("-", 1)[0]


def _lessons_named(slugs: list[str]) -> str:
    """ "lesson 05" or "lessons 03, 05", by number."""
    return f"{tables.plural(len(slugs), 'lesson')} {', '.join(_number(slug) for slug in slugs)}"


def _copy(slug: str, versions: dict[str, Any]) -> None:
    """Copy the lesson into the learner's folder, where nothing of that name is: O_EXCL
    never follows a link (one to a missing file would have the lesson written through it)."""
    source = course_notebooks() / f"{slug}.ipynb"
    fd = os.open(folder() / source.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "wb") as out, open(source, "rb") as lesson:
        shutil.copyfileobj(lesson, out)
    versions[source.name] = _digest(source)


def prepare() -> CopyReport:
    """Copy every lesson the learner has no copy of yet, and name those whose
    course version changed since their copy was made. Writes over nothing."""
    target = _made(folder())
    report = CopyReport(target)

    def edit(versions: dict[str, Any]) -> None:
        for slug in lessons():
            name = f"{slug}.ipynb"
            if (target / name).is_symlink() and not (target / name).exists():
                report.broken_links.append(slug)
            elif not (target / name).exists():
                _copy(slug, versions)
                report.copied.append(slug)
            elif name not in versions:  # a copy made before versions were kept: take it as current
                versions[name] = _digest(course_notebooks() / name)
            elif versions[name] != _digest(course_notebooks() / name):
                report.newer.append(slug)

    learner.change(VERSIONS, edit)
    return report


def fresh(slug: str) -> Path | None:
    """A new copy of one lesson from the course. The learner's copy, if any, is
    moved to earlier/SLUG-YYYYmmdd-HHMMSS.ipynb first; returns where it went.
    All of it runs under the lock of course_copies.json, so two at once (two
    terminals) take turns and never pick the same earlier/ name."""
    target = folder()
    _made(target / EARLIER)
    current = target / f"{slug}.ipynb"
    kept: list[Path] = []

    def edit(versions: dict[str, Any]) -> None:
        if current.exists() or current.is_symlink():  # a link, even to nothing, is set aside too
            kept.append(_earlier_name(target, slug))
            _set_aside(current, kept[0])
        _copy(slug, versions)

    learner.change(VERSIONS, edit)
    return kept[0] if kept else None


def _earlier_name(target: Path, slug: str) -> Path:
    """earlier/SLUG-YYYYmmdd-HHMMSS.ipynb, with -2, -3, ... for more in the same second."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    kept = target / EARLIER / f"{slug}-{stamp}.ipynb"
    n = 1
    while os.path.lexists(kept):  # a link there, even to nothing, is not written through
        n += 1
        kept = target / EARLIER / f"{slug}-{stamp}-{n}.ipynb"
    return kept


def _set_aside(current: Path, kept: Path) -> None:
    """Move the learner's copy to `kept`; shutil.move copies across file systems (earlier/
    may be a link to another disk), where a rename cannot. SetupError (one line) if the
    folder refuses; the copy then stays where it was."""
    try:
        shutil.move(current, kept)
    except OSError as exc:
        raise SetupError(
            f"cannot move {current.name} into {kept.parent} ({exc.strerror or exc}), so no fresh copy was "
            "made and yours stays where it is; check that folder's permissions"
        ) from None
