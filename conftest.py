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

import contextlib
import json
import os
import sys
from pathlib import Path

import pytest

from pgq_teach.charts import defer_iri_grammar

# nbval imports nbformat, nbformat imports jsonschema, and jsonschema builds the parser of RFC
# 3987's grammar as it loads: 2.5 to 2.8 CPU-seconds on a 2-CPU machine, in each of a make test's
# five pytest processes, though no test run checks an IRI with it. So nbval is loaded here, after
# the stand-in that waits for the grammar's first use (pgq_teach/charts.py), and not as pytest
# loads its installed plugins, which is before any conftest.py (pyproject.toml: -p no:nbval).
LOADED_BY_PYTEST = "nbval.plugin" in sys.modules  # as it was before (-o addopts="", -p nbval)
defer_iri_grammar()
import nbval.plugin as _nbval  # noqa: E402

from pgq_teach.databases import TAG_VARIABLE  # noqa: E402

pytest_plugins = [] if LOADED_BY_PYTEST else ["nbval.plugin"]

ROOT = Path(__file__).resolve().parent

# Files (or single tests, file::name) that must run after the other lessons, alone, and why.
# A notebook's cells stay together. A test that must only be alone on its server gets an
# embedded server of its own instead and stays in the parallel pass: a test asks for one
# with `alone` (tests/conftest.py), a browser test module's JupyterLab always has one
# (tests/jupyter_browser.py), and so does every notebook's kernel (OWN_SERVERS below).
SERIAL = {
    "notebooks/12-the-interview.ipynb": "quotes the measurements the other lessons record, "
    "so it runs after them, as in a run one notebook at a time",
    "tests/test_measurements.py::test_the_run_recorded_lesson_11s_drain_for_lesson_12": "checks the "
    "measurement lesson 12 quotes was recorded by the rest of the run",
}

# In a parallel run (or on the embedded backend) nbval starts each notebook's kernel on an
# embedded server of the notebook's own, stopped after its last cell (tests/helpers.py,
# needs_a_server_of_its_own), as a learner's Run All has a server to itself: lesson 10's
# autovacuum lab sets autovacuum_naptime server-wide, and the lessons' checks read buffers,
# dead rows and table sizes, which a write transaction open anywhere on a shared server
# changes (on-access pruning recomputes its horizon only when the server's oldest
# transaction moves on; measured in lesson 09's drain: 44.4 MB alone, up to 48.3 beside one).
OWN_SERVERS: dict[str, tuple[contextlib.ExitStack, Path]] = {}  # notebook -> (its running server, folder)


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
    config.addinivalue_line(
        "markers", "alone: uses the alone fixture, a server of its own in a parallel run (tests/conftest.py)"
    )
    parallel = not hasattr(config, "workerinput") and (config.getoption("numprocesses", None) or 0)
    if parallel and config.getoption("serial") != "skip":
        raise pytest.UsageError(
            "lesson 12 reads what the other lessons recorded, so it runs after them (conftest.py "
            "SERIAL): with -n, add --serial skip, then run it with --serial only (make test does both)"
        )


def relative_path(item: pytest.Item) -> str:
    """The item's file, relative to the repository ("" for a file outside it)."""
    try:
        return Path(str(item.path)).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return ""


def is_serial(item: pytest.Item) -> bool:
    """Whether the item's file, or the test (all its parameters), is one of SERIAL."""
    path = relative_path(item)
    return path in SERIAL or f"{path}::{getattr(item, 'originalname', item.name)}" in SERIAL


def own_server_folder(item: pytest.Item) -> Path | None:
    """The data folder of the notebook's own embedded server, started with its first cell and
    kept in OWN_SERVERS until its last; None where the shared server will do."""
    path = relative_path(item)
    if path in OWN_SERVERS:
        return OWN_SERVERS[path][1]
    if str(ROOT / "tests") not in sys.path:  # a run of notebooks alone loads no tests/conftest.py
        sys.path.insert(0, str(ROOT / "tests"))
    from helpers import needs_a_server_of_its_own, on_server, server_folder
    from pgq_teach.infra import server

    if not needs_a_server_of_its_own(server.get_server()):
        return None
    running = contextlib.ExitStack()
    try:
        folder = running.enter_context(server_folder("pgq-teach-notebook-")) / "pg18"
        with on_server(folder):  # started now, so a failure to start is this cell's error
            pass
    except BaseException:
        running.close()
        raise
    OWN_SERVERS[path] = (running, folder)
    return folder


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    # A notebook's kernel starts with a cell's setup (its first, unless that failed first),
    # and inherits this process's environment then: the notebook's own server, chosen for
    # every cell's setup. It uses the lessons' own database names, as a learner's does (a
    # notebook checks its name), so a parallel worker's tag (tests/conftest.py) stays out.
    if not isinstance(item, _nbval.IPyNbCell):
        yield
        return
    tag = os.environ.pop(TAG_VARIABLE, None)
    try:
        with contextlib.ExitStack() as choice:
            folder = own_server_folder(item)
            if folder is not None:
                # tests/, on the path once own_server_folder has run. The environment only:
                # that server runs since the notebook's first cell, and the kernel is what
                # connects, so no cell's setup need probe it again.
                from helpers import choosing

                choice.enter_context(choosing(folder))
            yield
    finally:
        if tag is not None:
            os.environ[TAG_VARIABLE] = tag


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield  # the notebook's kernel stops in its last cell's teardown: then its server may go
    path = relative_path(item)
    if path in OWN_SERVERS and (nextitem is None or relative_path(nextitem) != path):
        OWN_SERVERS.pop(path)[0].close()


def pytest_sessionfinish(session):
    # A run stopped between a notebook's cells (Ctrl-C) tears no item down: stop what is left.
    while OWN_SERVERS:
        OWN_SERVERS.popitem()[1][0].close()


def pytest_itemcollected(item):
    if is_serial(item):
        item.add_marker(pytest.mark.serial)


def pytest_xdist_make_scheduler(config, log):
    """Under `--dist loadfile`, a file's items on one worker (a notebook's cells share its
    kernel), the files that take longest handed out first. A browser test module's lessons
    run on a server of its own, so it shares no database with nbval's runs of them and
    needs no worker in common with them."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LongestFirst(LoadFileScheduling):
        ordered = False

        def _assign_work_unit(self, node) -> None:
            # xdist orders the files by their number of items, so a browser test module, the
            # longest of all with a few items, would start last and keep one worker busy alone
            # at the end: hand out the longest first instead (its items are the same either way).
            if not self.ordered:
                known = known_seconds()
                longest_first = sorted(self.workqueue.items(), key=lambda u: -expected_seconds(u[1], known))
                self.workqueue.clear()
                self.workqueue.update(longest_first)
                self.ordered = True
            super()._assign_work_unit(node)

    return LongestFirst(config, log)


@pytest.hookimpl(tryfirst=True)
@pytest.hookimpl(tryfirst=True)  # before -m selects by them
def pytest_collection_modifyitems(config, items):
    """Mark the items that must run alone (serial) or on a server of their own (alone), so a run
    can pick them with -m: .ci/run runs the rest of the library tests in parallel on one
    PGQ_DSN server and these after, one at a time, on that same server."""
    for item in items:
        if is_serial(item):
            item.add_marker("serial")
        if "alone" in getattr(item, "fixturenames", ()):
            item.add_marker("alone")
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
