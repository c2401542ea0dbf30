"""Every test runs on a real PostgreSQL (the course's own choice of server)
and works in its own database, dropped afterwards."""

from __future__ import annotations

import hashlib
import re

import pytest

from pgq_teach import databases, server


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


@pytest.fixture
def db(pg, request):
    label = _label(request.node.nodeid)
    database = databases.open_database(label, reset=True)
    yield database
    databases.drop_database(label)


@pytest.fixture
def conn(db):
    with db.connection() as c:
        yield c


# The browser tests' fixtures (jupyterlab, chromium, page, kernel_home), defined once with the
# rest of their machinery.
from jupyter_browser import chromium, jupyterlab, kernel_home, page  # noqa: E402, F401
