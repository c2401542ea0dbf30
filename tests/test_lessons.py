"""The lesson manifest (pgq_teach/content/lessons.yaml) says what each lesson is; these tests
hold it to the notebooks as they are (their code cells, read with `ast`), to the exercises,
the guide's figures and the measurements, and hold what the README, lesson 00, the Makefile
and environment.yml say about the course to the manifest."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import nbformat
import pytest
import yaml

from pgq_teach import exercises, guide, lessons, measurements
from pgq_teach.infra import server
from pgq_teach.lessons import Lesson, ManifestError

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
COURSE = lessons.load()
BY_NOTEBOOK = {lesson.notebook: lesson for lesson in COURSE.lessons}
WIDGETS = "pgq_teach.widgets."
EXPERIMENTS = "pgq_teach.experiments."
NOT_A_LAB = {"your_turn.YourTurn"}  # Your turn is listed as exercises, by key


# --- what a notebook's code cells use, read with ast -----------------------------------------
def imported_names(tree: ast.AST, module: str = "") -> dict[str, str]:
    """Each name an import binds in `tree`, to the dotted name it stands for (relative imports
    resolved against `module`, the module `tree` is the source of)."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = module.split(".")[: -node.level]
                base = ".".join([*parent, *([base] if base else [])])
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name
    return names


def dotted(node: ast.AST, names: dict[str, str]) -> str | None:
    """The dotted name a call's function stands for (`crash_lab.CrashLab` → its full name)."""
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value, names)
        return f"{inner}.{node.attr}" if inner else None
    return None


def module_of(name: str) -> str:
    """The module a dotted name lives in: itself if it is a module, else its parent."""
    try:
        importlib.import_module(name)
        return name
    except ImportError:
        return name.rsplit(".", 1)[0]


class Uses:
    """What a notebook's code imports and calls: parsed, not grepped."""

    def __init__(self, path: Path):
        nb = nbformat.read(path, as_version=4)
        trees = [ast.parse(cell.source) for cell in nb.cells if cell.cell_type == "code"]
        self.names: dict[str, str] = {}
        for tree in trees:
            self.names.update(imported_names(tree))
        self.calls = [node for tree in trees for node in ast.walk(tree) if isinstance(node, ast.Call)]
        self.modules = {module_of(name) for name in self.names.values() if name.startswith("pgq_teach")}

    def experiments(self) -> set[str]:
        """The experiment modules imported by the notebook, or by a widget module it imports."""
        modules = set(self.modules)
        for widget in (m for m in self.modules if m.startswith(WIDGETS)):
            source = inspect.getsource(importlib.import_module(widget))
            modules |= {module_of(n) for n in imported_names(ast.parse(source), widget).values()}
        found = {m.removeprefix(EXPERIMENTS).split(".")[0] for m in modules if m.startswith(EXPERIMENTS)}
        return found - lessons.SHARED_EXPERIMENTS

    def labs(self) -> set[str]:
        """The widget classes the notebook makes, as "module.Class"."""
        found = set()
        for call in self.calls:
            name = dotted(call.func, self.names)
            if name and name.startswith(WIDGETS):
                module, attr = name.rsplit(".", 1)
                if inspect.isclass(getattr(importlib.import_module(module), attr, None)):
                    found.add(name.removeprefix(WIDGETS))
        return found - NOT_A_LAB

    def exercises(self) -> set[str]:
        """The keys the notebook's Your turn widgets are made with."""
        return {
            call.args[0].value
            for call in self.calls
            if dotted(call.func, self.names) == WIDGETS + "your_turn.YourTurn"
            and call.args
            and isinstance(call.args[0], ast.Constant)
        }

    def started_as(self) -> set[str]:
        """The names the notebook passes to `lesson.start`."""
        return {
            call.args[0].value
            for call in self.calls
            if dotted(call.func, self.names) == "pgq_teach.lesson.start"
            and call.args
            and isinstance(call.args[0], ast.Constant)
        }


LESSONS = pytest.mark.parametrize("lesson", COURSE.lessons, ids=lambda lesson: lesson.number)


# --- the manifest against the notebooks ------------------------------------------------------
def test_every_notebook_is_listed_and_every_listed_lesson_has_its_notebook():
    on_disk = {path.name for path in NOTEBOOKS.glob("*.ipynb")}
    listed = set(BY_NOTEBOOK)
    assert on_disk - listed == set(), f"notebooks missing from {'/'.join(lessons.FILE)}"
    assert listed - on_disk == set(), "lessons in the manifest with no notebook"
    assert [lesson.notebook for lesson in COURSE.lessons] == sorted(on_disk), "not in reading order"


@LESSONS
def test_the_notebook_starts_its_own_lesson_under_its_title(lesson: Lesson):
    path = NOTEBOOKS / lesson.notebook
    assert Uses(path).started_as() == {lesson.stem}
    first = nbformat.read(path, as_version=4).cells[0].source
    assert first.startswith(f"# {lesson.number} · "), first.splitlines()[0]


@LESSONS
def test_the_experiments_are_the_ones_the_notebook_imports(lesson: Lesson):
    assert Uses(NOTEBOOKS / lesson.notebook).experiments() == set(lesson.experiments)
    for name in lesson.experiments:
        importlib.import_module(EXPERIMENTS + name)


@LESSONS
def test_the_labs_are_the_widgets_the_notebook_opens(lesson: Lesson):
    assert Uses(NOTEBOOKS / lesson.notebook).labs() == set(lesson.labs)


@LESSONS
def test_the_exercises_are_the_notebooks_your_turns_and_exist(lesson: Lesson):
    assert Uses(NOTEBOOKS / lesson.notebook).exercises() == set(lesson.exercises)
    for key in lesson.exercises:
        assert key in exercises.EXERCISES, f"{lesson.number}: no exercise {key!r} in pgq_teach.exercises"


def test_every_exercise_belongs_to_a_listed_lesson():
    listed = {key for lesson in COURSE.lessons for key in lesson.exercises}
    assert set(exercises.EXERCISES) == listed


@LESSONS
def test_the_figures_are_the_guides(lesson: Lesson):
    for number in lesson.figures:
        assert number in guide.FIGURES, f"{lesson.number}: the guide has no figure #{number}"


def test_every_figure_of_the_guide_is_reproduced_by_a_lesson():
    shown = {n for lesson in COURSE.lessons for n in lesson.figures}
    assert set(guide.FIGURES) - shown == set()


def test_the_measurements_are_the_ones_each_lesson_records():
    defined = {
        (m.lesson, m.key) for m in vars(measurements).values() if isinstance(m, measurements.Measurement)
    }
    listed = {(lesson.stem, key) for lesson in COURSE.lessons for key in lesson.measurements}
    assert listed == defined


# --- what the course says about itself, against the manifest --------------------------------
def test_the_readmes_lesson_table_is_the_manifests():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert lessons.table_in(text) == lessons.readme_table(COURSE), "run: python tools/lesson_tables.py"


def lesson_00() -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOKS / COURSE.lessons[0].notebook, as_version=4)


def test_lesson_00s_map_is_the_manifests():
    cells = [c.source for c in lesson_00().cells if c.cell_type == "markdown"]
    [cell] = [c for c in cells if c.startswith("## The map")]
    assert lessons.table_in(cell) == lessons.map_table(COURSE), "run: python tools/lesson_tables.py"


DURATION = re.compile(
    r"\b(?:about|under|well under|over|in) (?:[\d½]+ (?:s|min|seconds?|minutes?)|half a minute|a minute"
    r"|a minute and a half|two minutes)\b"
)


@LESSONS
def test_each_lessons_header_says_its_run_all_time(lesson: Lesson):
    header = nbformat.read(NOTEBOOKS / lesson.notebook, as_version=4).cells[0].source.replace("*", "")
    about_run_all = "\n\n".join(p for p in header.split("\n\n") if "Run All" in p)
    said = [m.group(0) for m in DURATION.finditer(about_run_all)]
    assert said == [lesson.run_all], (
        f"{lesson.notebook}'s header says Run All takes {said}; the manifest says {lesson.run_all}"
    )


TEST_EXTRA = ".[pg16]"


def test_the_install_extras_are_the_makefiles_and_everyone_says_them():
    target = COURSE.install_target
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert f'pip install --quiet -e "{target}"' in makefile
    # make test adds one more, PostgreSQL 16 (the Makefile's PG16), and the README says so too
    assert f'pip install --quiet -e "{TEST_EXTRA}"' in makefile
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    [pip] = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    assert pip == [f"-e {target}"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    said = re.findall(r"-e \"?(\.\[[a-z0-9,]*\])", readme)
    assert said and set(said) == {target, TEST_EXTRA}, said
    lesson = "\n".join(c.source for c in lesson_00().cells if c.cell_type == "markdown")
    said = re.findall(r"-e \\?\"?(\.\[[a-z0-9,]*\])", lesson)
    assert said and set(said) == {target}, said


def test_the_backends_are_the_servers_and_the_readme_names_them():
    assert server.BACKENDS == ("auto", *COURSE.backends)
    said = f"`PGQ_BACKEND={'|'.join(server.BACKENDS)}`"
    assert said in (ROOT / "README.md").read_text(encoding="utf-8")
    assert said in "\n".join(c.source for c in lesson_00().cells if c.cell_type == "markdown")


# --- the loader ------------------------------------------------------------------------------
def raw() -> dict:
    return yaml.safe_load((Path(lessons.__file__).parent.joinpath(*lessons.FILE)).read_text(encoding="utf-8"))


def test_the_manifest_is_read_whole():
    data = raw()
    assert lessons.parse(data) == COURSE
    assert COURSE.lesson("02b").stem == "02b-lock-waits" == COURSE.lesson("02b-lock-waits").stem
    assert COURSE.install_target == ".[dev,broker]"


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda d: d["lessons"][3].update(number=2), "lesson 4: 'number' must be two digits"),
        (lambda d: d["lessons"][3].update(number="2b"), "must be two digits"),
        (lambda d: d["lessons"][0].update(run_all_s="soon"), "lesson 00: 'run_all_s' must be a whole number"),
        (lambda d: d["lessons"][1].update(exercises=["03/claim"]), "lesson 01: exercise '03/claim' must be"),
        (lambda d: d["lessons"][1].update(labs=["RaceLab"]), "a lab is named 'module.Class'"),
        (lambda d: d["lessons"][1].update(lab=["race_lab.RaceLab"]), "lesson 01: unknown key 'lab'"),
        (lambda d: d["lessons"][1].update(title=""), "'title' must be a non-empty text"),
        (lambda d: d["lessons"][1].update(slug="Double send"), "'slug' must be lowercase words"),
        (lambda d: d["lessons"][1].update(figures=["#1"]), "'figures' must be a list"),
        (lambda d: d["lessons"].insert(0, d["lessons"].pop(2)), "lesson 00: comes after 02"),
        (lambda d: d["course"].update(install_extras=[]), "course: 'install_extras' and 'backends'"),
        (lambda d: d.pop("course"), "top level: must hold exactly"),
    ],
)
def test_a_broken_manifest_gets_one_line_naming_the_entry(change, says):
    data = raw()
    change(data)
    with pytest.raises(ManifestError) as caught:
        lessons.parse(data)
    message = str(caught.value)
    assert says in message and "\n" not in message, message
    assert message.startswith("content/lessons.yaml: ")


def test_lessons_after_10_take_a_letter_and_keep_11s_number():
    data = raw()
    # 10b and 10d are in the manifest already; 10c will come between them (any still missing is
    # put in its place, so the test holds as each lands)
    have = {e["number"] for e in data["lessons"]}
    at = next(i for i, e in enumerate(data["lessons"]) if e["number"] == "10") + 1
    for letter in "bc":
        if f"10{letter}" not in have:
            data["lessons"].insert(at, {**data["lessons"][at - 1], "number": f"10{letter}", "exercises": []})
        at += 1
    numbers = [lesson.number for lesson in lessons.parse(data).lessons]
    assert numbers[-5:] == ["10b", "10c", "10d", "11", "12"]


@pytest.mark.parametrize(
    "seconds, text",
    [(3, "under 10 s"), (12, "about 10 s"), (47, "about 45 s"), (56, "about 55 s"), (75, "about 1½ min")],
)
def test_run_all_times_read_as_the_course_says_them(seconds, text):
    assert lessons.run_all_text(seconds) == text


def stored_text(notebook: str, cell_id: str) -> str:
    """The text a stored notebook's cell printed or displayed."""
    nb = nbformat.read(NOTEBOOKS / notebook, as_version=4)
    (cell,) = [c for c in nb.cells if c.get("id") == cell_id]
    parts = []
    for out in cell.get("outputs", []):
        parts.append(out.get("text", ""))
        parts += [str(v) for k, v in out.get("data", {}).items() if k in ("text/plain", "text/html")]
    return "".join(parts)


def test_lesson_12_shows_the_drain_lesson_11_s_stored_run_measured():
    """One number, one source: lesson 12 reads lesson 11's drain from the measurement
    store (interview.drain_quote), so the stored lessons show one number for it, in the
    quote and on the one-page summary, and none from lesson 11's text."""
    drained = re.search(r"([\d,]+) jobs/s\n", stored_text("11-when-to-switch.ipynb", "ad93c49d"))
    assert drained, "lesson 11's stored drain summary"
    quoted = stored_text("12-the-interview.ipynb", "8cf6f50c")
    page = stored_text("12-the-interview.ipynb", "97cdafa3")
    assert quoted.startswith(f"{drained.group(1)} jobs/s, measured in lesson 11-when-to-switch"), quoted
    assert f"drain (lesson 11): {drained.group(1)} jobs/s" in page
    text = "".join(
        "".join(c.source) for c in nbformat.read(NOTEBOOKS / "12-the-interview.ipynb", as_version=4).cells
    )
    assert drained.group(1) not in text  # read, never copied into the lesson
