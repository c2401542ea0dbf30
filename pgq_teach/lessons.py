"""The lesson manifest: what the course says about itself, in one place.

`pgq_teach/content/lessons.yaml` names, per lesson, its number and slug (so its
notebook), its title, its last measured Run All time, the experiment modules
its code imports, the widgets it opens, its Your turn exercises, the guide's
figures it reproduces and the measurements it records; and, for the course, the
install extras and the backends' names. This module only reads that file into
frozen records and checks its shape, so a broken edit fails here with one line
that names the file and the entry.

Everything that states these facts is made from, or checked against, the
manifest: the README's lesson table and lesson 00's map are written by
`tools/lesson_tables.py` (`readme_table`, `map_table`), and
`tests/test_lessons.py` checks the manifest against each notebook's imports,
the exercises, the guide's figures, the measurements, the Makefile and
`environment.yml`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from itertools import pairwise
from typing import Any

import yaml

from .errors import PgqError

FILE = ("content", "lessons.yaml")
NUMBER = re.compile(r"\d\d[a-z]?")  # "02", "02b"; a lesson after 10 is "10b", never "10.5"
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# What every experiment builds on (`Result`, `finish`), not one lesson's own module.
SHARED_EXPERIMENTS = frozenset({"results"})


class ManifestError(PgqError):
    """The lesson manifest is not as this module expects: one line says where and why."""


@dataclass(frozen=True)
class Lesson:
    """One lesson, as the manifest describes it."""

    number: str  # "02b"
    slug: str  # "lock-waits"
    title: str  # "Lock waits", as the tables show it
    run_all_s: int  # the last measured Run All, in seconds
    you_will: str  # the README's "you will"
    map: str  # lesson 00's "what you do"
    guide_part: str  # lesson 00's "the guide's part"
    figures: tuple[int, ...] = ()  # the guide's numbered figures it reproduces
    guide_sections: tuple[str, ...] = ()  # the guide's prose sections, where there is no figure number
    experiments: tuple[str, ...] = ()  # modules of pgq_teach/experiments its code imports
    labs: tuple[str, ...] = ()  # the widgets it opens, "module.Class" in pgq_teach/widgets
    exercises: tuple[str, ...] = ()  # Your turn keys, "NN/name"
    measurements: tuple[str, ...] = ()  # keys it records (pgq_teach/measurements.py)

    @property
    def stem(self) -> str:
        """The notebook's name without `.ipynb`, which `lesson.start()` takes: "02b-lock-waits"."""
        return f"{self.number}-{self.slug}"

    @property
    def notebook(self) -> str:
        """The notebook's file name in `notebooks/`."""
        return f"{self.stem}.ipynb"

    @property
    def heading(self) -> str:
        """The lesson as the tables name it: "02b · Lock waits"."""
        return f"{self.number} · {self.title}"

    @property
    def run_all(self) -> str:
        """The Run All time in words: "about 45 s"."""
        return run_all_text(self.run_all_s)

    @property
    def run_all_short(self) -> str:
        """The Run All time as a table cell: "~45 s", "<10 s"."""
        return self.run_all.replace("about ", "~").replace("under ", "<")

    @property
    def order(self) -> tuple[int, str]:
        """Where the lesson sorts: by its number, then its letter (10 < 10b < 10c < 11)."""
        return int(self.number[:2]), self.number[2:]

    def figures_text(self) -> str:
        """The guide's figures as the tables write them: "#2, #3, #4"."""
        return ", ".join(f"#{n}" for n in self.figures)


@dataclass(frozen=True)
class Course:
    """The whole manifest: the course's own facts and its lessons in reading order."""

    install_extras: tuple[str, ...]
    backends: tuple[str, ...]
    run_all_measured: str
    lessons: tuple[Lesson, ...]

    @property
    def install_target(self) -> str:
        """What pip installs for `make install`: `.[dev,broker]`."""
        return f".[{','.join(self.install_extras)}]"

    def lesson(self, which: str) -> Lesson:
        """A lesson by its number ("02b") or its stem ("02b-lock-waits")."""
        for lesson in self.lessons:
            if which in (lesson.number, lesson.stem):
                return lesson
        raise ManifestError(f"no lesson {which!r} in the manifest")


def run_all_text(seconds: float) -> str:
    """A Run All time as the course says it: under 10 s, then to the nearest 5 s, then to the
    nearest half minute ("about 45 s", "about 1½ min")."""
    if seconds < 10:
        return "under 10 s"
    if seconds < 58:
        return f"about {5 * int(seconds / 5 + 0.5)} s"
    halves = int(seconds / 30 + 0.5)
    whole, half = divmod(halves, 2)
    return f"about {whole}{'½' if half else ''} min"


def _fail(where: str, message: str) -> ManifestError:
    return ManifestError(f"{'/'.join(FILE)}: {where}: {message}")


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _fail(where, f"{key!r} must be a non-empty text, not {value!r}")
    return " ".join(value.split())


def _texts(entry: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _fail(where, f"{key!r} must be a list of texts, not {value!r}")
    if len(set(value)) != len(value):
        raise _fail(where, f"{key!r} names one entry twice: {value!r}")
    return tuple(value)


LESSON_KEYS = frozenset(Lesson.__dataclass_fields__)


def _lesson(entry: Any, index: int) -> Lesson:
    where = f"lesson {index + 1}"
    if not isinstance(entry, dict):
        raise _fail(where, f"each lesson must be a mapping, not {entry!r}")
    number = entry.get("number")
    if not isinstance(number, str) or not NUMBER.fullmatch(number):
        raise _fail(
            where, f"'number' must be two digits and maybe a letter, quoted (\"02b\"), not {number!r}"
        )
    where = f"lesson {number}"
    unknown = sorted(set(entry) - LESSON_KEYS)
    if unknown:
        raise _fail(where, f"unknown key {unknown[0]!r} (known: {', '.join(sorted(LESSON_KEYS))})")
    slug = _text(entry, "slug", where)
    if not SLUG.fullmatch(slug):
        raise _fail(where, f"'slug' must be lowercase words joined by '-', not {slug!r}")
    seconds = entry.get("run_all_s")
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds <= 0:
        raise _fail(where, f"'run_all_s' must be a whole number of seconds above 0, not {seconds!r}")
    figures = entry.get("figures", [])
    if not isinstance(figures, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) for n in figures
    ):
        raise _fail(where, f"'figures' must be a list of the guide's figure numbers, not {figures!r}")
    labs = _texts(entry, "labs", where)
    for lab in labs:
        if not re.fullmatch(r"[a-z_]+\.[A-Z]\w*", lab):
            raise _fail(where, f"a lab is named 'module.Class' in pgq_teach/widgets, not {lab!r}")
    exercises = _texts(entry, "exercises", where)
    for key in exercises:
        if key.split("/")[0] != number:
            raise _fail(where, f"exercise {key!r} must be keyed by its lesson's number, {number}/...")
    return Lesson(
        number=number,
        slug=slug,
        title=_text(entry, "title", where),
        run_all_s=seconds,
        you_will=_text(entry, "you_will", where),
        map=_text(entry, "map", where),
        guide_part=_text(entry, "guide_part", where),
        figures=tuple(figures),
        guide_sections=_texts(entry, "guide_sections", where),
        experiments=_texts(entry, "experiments", where),
        labs=labs,
        exercises=exercises,
        measurements=_texts(entry, "measurements", where),
    )


def parse(data: Any) -> Course:
    """The manifest's parsed YAML as a `Course`, checked; a `ManifestError` names what is wrong."""
    if not isinstance(data, dict) or set(data) != {"course", "lessons"}:
        raise _fail("top level", "must hold exactly 'course' and 'lessons'")
    course, entries = data["course"], data["lessons"]
    if not isinstance(course, dict):
        raise _fail("course", f"must be a mapping, not {course!r}")
    extras = _texts(course, "install_extras", "course")
    backends = _texts(course, "backends", "course")
    if not extras or not backends:
        raise _fail("course", "'install_extras' and 'backends' must each name at least one")
    if not isinstance(entries, list) or not entries:
        raise _fail("lessons", "must be a list of lessons")
    lessons = tuple(_lesson(entry, i) for i, entry in enumerate(entries))
    for earlier, later in pairwise(lessons):
        if later.order <= earlier.order:
            raise _fail(
                f"lesson {later.number}", f"comes after {earlier.number}: list lessons in reading order"
            )
    return Course(extras, backends, _text(course, "run_all_measured", "course"), lessons)


@cache
def load() -> Course:
    """The course's manifest, read from the installed package (once per process)."""
    path = resources.files("pgq_teach")
    for part in FILE:
        path = path.joinpath(part)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}" if mark is not None else "top level"
        raise _fail(at, f"not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    return parse(data)


# --- the text the README and lesson 00 show, made from the manifest --------------------------
README_HEADER = (
    "| lesson | you will | the guide's figures | Run All, quiet 2 CPUs |",
    "|---|---|---|---|",
)
MAP_HEADER = (
    "| lesson | what you do | the guide's part | Run All |",
    "|---|---|---|---|",
)


def readme_table(course: Course) -> str:
    """The README's lesson table, each lesson linked to its notebook."""
    rows = [
        f"| [{lesson.heading}](notebooks/{lesson.notebook}) | {lesson.you_will} | "
        f"{', '.join([*(f'#{n}' for n in lesson.figures), *lesson.guide_sections])} | "
        f"{lesson.run_all_short} |"
        for lesson in course.lessons
    ]
    return "\n".join([*README_HEADER, *rows])


def map_table(course: Course, this: str = "00") -> str:
    """Lesson 00's map: every lesson, linked from lesson `this`'s folder, `this` one in bold."""
    rows = []
    for lesson in course.lessons:
        name = (
            f"**{lesson.heading}** (this notebook)"
            if lesson.number == this
            else f"**[{lesson.heading}]({lesson.notebook})**"
        )
        part = lesson.guide_part + (f" ({lesson.figures_text()})" if lesson.figures else "")
        rows.append(f"| {name} | {lesson.map} | {part} | {lesson.run_all} |")
    return "\n".join([*MAP_HEADER, *rows])


def _table_span(lines: list[str]) -> tuple[int, int]:
    start = next((i for i, line in enumerate(lines) if line.startswith("| lesson |")), len(lines))
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return start, end


def table_in(text: str) -> str:
    """The lesson table in `text`: the block of `|` lines from the first `| lesson |` on ("" if none)."""
    lines = text.split("\n")
    start, end = _table_span(lines)
    return "\n".join(lines[start:end])


def replace_table(text: str, table: str) -> str:
    """`text` with its lesson table (as `table_in` finds it) replaced by `table`."""
    lines = text.split("\n")
    start, end = _table_span(lines)
    if start == len(lines):
        raise ManifestError("no table starting '| lesson |' to replace")
    return "\n".join([*lines[:start], *table.split("\n"), *lines[end:]])
