"""Every test runs on a real PostgreSQL (the course's own choice of server)
and works in a database of its worker's (`db`) with the course's schema: a copy
of a template made once per run (per worker, under pytest-xdist), emptied for
each next test, and copied anew after a test that changed its schema
(helpers.ReusedDatabase says why and how).

A test that must be alone on its server (it restarts it, sets something
server-wide, or fingerprints every role and database) runs on an embedded
server of its own instead, in a folder of its own (`own_server`, `alone`,
`alone_db`), so it can run beside the others in the parallel pass."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from helpers import ReusedDatabase, choosing, needs_a_server_of_its_own, on_server, server_folder
from pgq_teach import databases
from pgq_teach.infra import server
from pgq_teach.statements import run


def pytest_configure(config):
    # Under pytest-xdist each worker (gw0, gw1, ...) tags every database it makes, its
    # own and the library's fixed ones (an exercise's scratch, reproduce's), so two
    # workers never meet in one database (pgq_teach/databases.py).
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        os.environ[databases.TAG_VARIABLE] = worker


def pytest_report_header(config):
    try:
        return server.get_server().line()
    except Exception as exc:  # the tests themselves will report it properly
        return f"PostgreSQL: not available ({exc})"


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    # Lets fixtures see whether their test failed (the browser tests save a
    # screenshot and the JupyterLab log tail then).
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


@pytest.hookimpl(trylast=True)  # after -k, -m and --serial have chosen
def pytest_collection_modifyitems(config, items):
    # A lesson that a selected browser test runs whole is checked there, on the browser's
    # run, by nbval's own code, instead of being run a second time by nbval
    # (tests/jupyter_browser.py, IN_BROWSER).
    taken = take_lessons_for_browser(items)
    if taken:
        config.hook.pytest_deselected(items=taken)
        gone = set(map(id, taken))
        items[:] = [item for item in items if id(item) not in gone]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    for marker in item.iter_markers("runs_lesson"):
        lesson = marker.args[0]
        if lesson in IN_BROWSER and lesson not in CHECKED:
            raise AssertionError(
                f"{item.name} is marked runs_lesson({lesson!r}), so nbval left that "
                "lesson out, but the test never ran it whole (open_and_run_all)"
            )
    return result


@pytest.fixture(scope="session")
def pg():
    return server.get_server()


def _label(nodeid: str) -> str:
    digest = hashlib.sha1(nodeid.encode()).hexdigest()[:8]
    tail = re.sub(r"[^a-z0-9]+", "_", nodeid.split("::")[-1].lower())[-40:]
    return f"t_{digest}_{tail}"


@pytest.fixture(scope="session")
def template(pg):
    """The course's schema in a database of its own, the template every test's database copies."""
    database = databases.open_database("test_template", reset=True)
    yield database
    databases.drop_database("test_template")


class AdminSession:
    """One autocommit session to the shared server, kept for the run, that clones and drops the
    tests' databases: two new sessions per test cost the server about as much as the copy
    (measured: 72 ms of its CPU per clone and drop, 34 through a kept session). Made anew when
    the server has dropped it (a one-process run on PGQ_DSN restarts that server)."""

    def __init__(self, dsn: str):
        self.dsn = dsn
        self.conn: psycopg.Connection | None = None

    def get(self) -> psycopg.Connection:
        if self.conn is not None and not self.conn.closed:
            try:
                run(self.conn, "lab/ping")
                return self.conn
            except psycopg.OperationalError:
                self.conn.close()
        self.conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=5)
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


@pytest.fixture(scope="session")
def admin(pg) -> Iterator[AdminSession]:
    session = AdminSession(pg.dsn)
    yield session
    session.close()


@pytest.fixture
def db(template, admin, request):
    """The test's database with the course's tables and no rows: its worker's, emptied since
    the last test or copied anew from the template (`reused`), or, for a test that asks for
    `alone`, made on its module's own server (the template is not there)."""
    if "alone" in request.fixturenames:
        request.getfixturevalue("alone")  # chosen first, and so let go after this database
        label = _label(request.node.nodeid)
        database = databases.open_database(label, reset=True)
        yield database
        databases.drop_database(label)
        return
    yield request.getfixturevalue("reused").next_test(admin.get())


@pytest.fixture(scope="session")
def reused(template, admin) -> Iterator[ReusedDatabase]:
    keeper = ReusedDatabase(template)
    yield keeper
    keeper.drop(admin.get())


@pytest.fixture
def conn(db):
    with db.connection() as c:
        yield c


@pytest.fixture
def own_server():
    """An embedded server for this test alone, chosen for the test (and the pgq-teach
    commands it runs, with a learner folder beside it): (Server, its data folder). Its data
    is a copy of the run's template (helpers.server_folder), as its first start left it."""
    with own_embedded_server(fresh=False) as chosen:
        yield chosen


@pytest.fixture
def own_fresh_server():
    """own_server, its data made by its own first start (initdb, then what embedded.start()
    sets once), as a learner's is: for a test of what that first start does."""
    with own_embedded_server(fresh=True) as chosen:
        yield chosen


@contextlib.contextmanager
def own_embedded_server(fresh: bool) -> Iterator[tuple[server.Server, Path]]:
    with server_folder("pgq-teach-own-", fresh=fresh) as home:
        with choosing(home / "pg18", PGQ_HOME=str(home / "learner")):
            yield server.get_server(), home / "pg18"


@pytest.fixture(scope="module")
def module_server(pg) -> Iterator[Path | None]:
    """An embedded server started once for the tests of one module that ask for `alone`: its
    data folder, stopped and removed after the module's last test (None: the shared server will
    do, see needs_a_server_of_its_own)."""
    if not needs_a_server_of_its_own(pg):
        yield None
        return
    with server_folder("pgq-teach-alone-") as home:
        with choosing(home / "pg18"):
            server.get_server()  # start it now, so a test's own time is its own
        yield home / "pg18"


@pytest.fixture
def alone(module_server) -> Iterator[server.Server]:
    """Run this test on its module's embedded server (module_server), not the one the other
    tests share: for a test that restarts the server, sets something server-wide, or
    fingerprints the whole cluster. Worker processes, commands and kernels the test starts
    inherit the choice. Ask for it before any fixture that opens a database."""
    with on_server(module_server) as chosen:
        yield chosen


@pytest.fixture
def alone_db(alone, request) -> Iterator[databases.Database]:
    """The test's own database, with the course's tables, on its module's own server (alone)."""
    label = _label(request.node.nodeid)
    yield databases.open_database(label, reset=True)
    databases.drop_database(label)


# The browser tests' fixtures (jupyterlab, chromium, page, kept_page, fresh_page, kernel_home),
# defined once with the rest of their machinery.
from jupyter_browser import (  # noqa: E402, F401
    CHECKED,
    IN_BROWSER,
    chromium,
    fresh_page,
    jupyterlab,
    kept_page,
    kernel_home,
    page,
    take_lessons_for_browser,
)
