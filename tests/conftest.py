"""Every test runs on a real PostgreSQL (the course's own choice of server)
and works in its own database, dropped afterwards: a copy of a template made
once per run (per worker, under pytest-xdist) with the course's schema."""

from __future__ import annotations

import hashlib
import os
import re

import pytest

from pgq_teach import databases, server


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


@pytest.fixture
def db(template, request):
    label = _label(request.node.nodeid)
    database = databases.clone_database(label, template)
    yield database
    databases.drop_database(label)


@pytest.fixture
def conn(db):
    with db.connection() as c:
        yield c


# The browser tests' fixtures (jupyterlab, chromium, page, kernel_home), defined once with the
# rest of their machinery.
from jupyter_browser import chromium, jupyterlab, kernel_home, page  # noqa: E402, F401
