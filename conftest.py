"""Repository-wide pytest settings.

nbval compares stored and fresh outputs, but skips cells marked
NBVAL_IGNORE_OUTPUT (timings, ids, pids). Stray stderr, such as a warning,
must fail even there, so every cell's streams pass through this check.

`make test` runs the suite in passes (see the Makefile): most files on several
pytest-xdist workers, and the files in SERIAL alone, after the rest
(`--serial skip` leaves them out, `--serial only` runs only them). A test that
must be alone on its server but not after the rest has a server of its own in
the parallel pass instead (tests/conftest.py, `alone`).
"""

import json
import os
import re
from pathlib import Path

import nbval.plugin as _nbval
import pytest

from pgq_teach.databases import TAG_VARIABLE

ROOT = Path(__file__).resolve().parent

# Files (or single tests, file::name) that cannot share the server with anything else
# running, or must run after the other lessons, and why. A notebook's cells stay together.
# A test that must only be alone on its server, and need not follow the lessons, gets an
# embedded server of its own instead and stays in the parallel pass (tests/conftest.py,
# `alone`): the fault run that restarts the server, the autovacuum lab that sets
# autovacuum_naptime, the hostile tests that fingerprint the whole cluster or change the
# learner's and checker's roles, and Run All of lesson 00 from the learner's copy. nbval runs
# a notebook with no test's fixtures, and a browser test module's JupyterLab serves all of
# its tests, so those use the shared server: the ones that must be alone stay here.
SERIAL = {
    "notebooks/10-operations.ipynb": "runs the autovacuum lab, which sets autovacuum_naptime "
    "server-wide, and a lab role's idle timeout (tests/test_operations.py runs both, on one worker "
    "in the parallel pass, the lab on a server of its own)",
    "tests/test_browser_lessons_10_12.py"
    "::test_dashboard_refreshes_under_load_and_shows_the_forgotten_transaction": "runs "
    "notebooks/10-operations.ipynb in JupyterLab",
    "notebooks/12-the-interview.ipynb": "quotes the measurements the other lessons record, "
    "so it runs after them, as in a run one notebook at a time",
}


def _refuse_stderr(outputs):
    merged = _coalesce(outputs)
    for out in merged:
        if out.get("output_type") == "stream" and out.get("name") == "stderr":
            raise AssertionError(f"stray stderr in a notebook cell (a warning?):\n{out['text'][:2000]}")
    return merged


_coalesce = _nbval.coalesce_streams
_nbval.coalesce_streams = _refuse_stderr


def pytest_addoption(parser):
    parser.addoption(
        "--serial",
        choices=("include", "skip", "only"),
        default="include",
        help="the files that must run alone (conftest.py SERIAL): include them (the default), "
        "skip them (for a parallel pass), or run only them",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "serial: must run alone, after the rest (conftest.py SERIAL)")
    parallel = not hasattr(config, "workerinput") and (config.getoption("numprocesses", None) or 0)
    if parallel and config.getoption("serial") != "skip":
        raise pytest.UsageError(
            "some files restart or change the whole server (conftest.py SERIAL): with -n, add "
            "--serial skip, then run them alone with --serial only (make test does both)"
        )


def is_serial(item: pytest.Item) -> bool:
    """Whether the item's file, or the test (all its parameters), is one of SERIAL."""
    try:
        path = Path(str(item.path)).resolve().relative_to(ROOT).as_posix()
    except ValueError:  # a file outside the repository
        return False
    return path in SERIAL or f"{path}::{getattr(item, 'originalname', item.name)}" in SERIAL


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    # A notebook's kernel starts with its first cell's setup. It uses the lessons' own
    # database names, as a learner's does (a notebook checks its name), so a parallel
    # worker's tag (tests/conftest.py) stays out of its environment.
    tag = os.environ.pop(TAG_VARIABLE, None) if isinstance(item, _nbval.IPyNbCell) else None
    try:
        yield
    finally:
        if tag is not None:
            os.environ[TAG_VARIABLE] = tag


def pytest_itemcollected(item):
    if is_serial(item):
        item.add_marker(pytest.mark.serial)


def lesson_groups() -> dict[str, str]:
    """Which files must share a worker: each browser test file (named *browser*) with the
    lessons it opens, by notebook name or by exercise key ("01/claim" is lesson 01's).
    Their kernels and nbval's use the lessons' own database names (a notebook checks its
    name), so two of them must never run one lesson at once. Returns file -> group."""
    notebooks = {
        p.name.split("-", 1)[0]: f"notebooks/{p.name}"  # "02", or "02b" for a lesson's second part
        for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]*-*.ipynb"))
    }
    group: dict[str, str] = {}
    for test in sorted((ROOT / "tests").glob("test_*browser*.py")):
        text = test.read_text(encoding="utf-8")
        opened = re.findall(r"\b(\d\d[a-z]?)-[a-z0-9-]+\.ipynb", text)  # "01-double-send.ipynb"
        checked = re.findall(r"[\"'](\d\d)/[a-z_]+[\"']", text)  # YourTurn("01/claim")
        lessons = set(opened) | set(checked)
        members = [f"tests/{test.name}"] + [notebooks[n] for n in lessons if n in notebooks]
        names = {group.get(m, m) for m in members}  # join any group a member is already in
        joined = min(names)
        for file, g in list(group.items()):
            if g in names:
                group[file] = joined
        for m in members:
            group[m] = joined
    return group


def pytest_xdist_make_scheduler(config, log):
    """Under `--dist loadfile`: a file's items on one worker (a notebook's cells share its
    kernel), and each group of lesson_groups() on one worker too. (xdist's loadgroup would
    do it with markers, but under pytest 9.2 it no longer rewrites the node ids it groups by.)"""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    groups = lesson_groups()

    class LessonsTogether(LoadFileScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return groups.get(path, path)

        def _assign_work_unit(self, node) -> None:
            # xdist orders the units by their number of items, so a group with a few browser
            # tests, the longest of all, would start last and keep one worker busy alone at the
            # end: hand out the longest first instead (its items are the same either way).
            if not self.ordered:
                known = known_seconds()
                longest_first = sorted(self.workqueue.items(), key=lambda u: -expected_seconds(u[1], known))
                self.workqueue.clear()
                self.workqueue.update(longest_first)
                self.ordered = True
            super()._assign_work_unit(node)

    return LessonsTogether(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    wanted = config.getoption("serial")
    if wanted == "include":
        return
    keep, drop = [], []
    for item in items:
        (keep if is_serial(item) == (wanted == "only") else drop).append(item)
    config.hook.pytest_deselected(items=drop)
    items[:] = keep


# Seconds a typical item takes, for the order above only (no test reads them): a browser test
# starts JupyterLab and runs lessons in it, a notebook cell may run a lab, most tests take well
# under a second. The items known to be slow have their own figure in tests/expected_seconds.json
# (remade by tools/expected_seconds.py from a run's --durations).
SECONDS_PER_BROWSER_TEST = 60.0
SECONDS_PER_NOTEBOOK_CELL = 1.5
SECONDS_PER_TEST = 0.5


def known_seconds() -> dict[str, float]:
    """The items known to be slow, and their seconds (tests/expected_seconds.json)."""
    return json.loads((ROOT / "tests" / "expected_seconds.json").read_text(encoding="utf-8"))


def expected_seconds(nodeids, known: dict[str, float] | None = None) -> float:
    """A rough guess of how long a work unit (its node ids) keeps its worker busy."""
    if known is None:
        known = known_seconds()
    total = 0.0
    for nodeid in nodeids:
        path = nodeid.split("::", 1)[0]
        if nodeid in known:
            total += known[nodeid]
        elif path.endswith(".ipynb"):
            total += SECONDS_PER_NOTEBOOK_CELL
        elif "browser" in Path(path).name:
            total += SECONDS_PER_BROWSER_TEST
        else:
            total += SECONDS_PER_TEST
    return total
