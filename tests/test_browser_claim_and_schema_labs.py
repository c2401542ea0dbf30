"""Lessons 03 and 10d in a real JupyterLab and a real browser, the two lessons that had no
browser test: Run All ends with no stderr, nothing wider than the output area at 1366 or at
800 px, no axe-core violation in the course's own output (open_and_run_all), and every lab
done with nothing cut. Each lesson then runs once in `make test`, here in nbval's place."""

from __future__ import annotations

import pytest

from jupyter_browser import (
    BROWSER_TESTS,
    assert_every_lab_finished,
    chart_text_problems,
    clipped_text,
    run_and_find,
)

pytestmark = BROWSER_TESTS

CLAIMS = "03-claim-with-a-lease.ipynb"
SCHEMA = "10d-schema-changes.ipynb"


@pytest.mark.runs_lesson(CLAIMS)
def test_the_drain_five_way_and_zero_work_labs_run_to_their_end(page, jupyterlab):
    five_way = run_and_find(page, jupyterlab, CLAIMS, ".pgq-five-way-lab")
    assert clipped_text(five_way) == []
    assert chart_text_problems(page.locator(".jp-Notebook"), shots="03-lesson") == []
    assert assert_every_lab_finished(page, "03") >= 3  # the drain, the five-way race, zero work


@pytest.mark.runs_lesson(SCHEMA)
def test_the_migration_and_locks_labs_run_to_their_end(page, jupyterlab):
    migration = run_and_find(page, jupyterlab, SCHEMA, ".pgq-migration-lab")
    assert clipped_text(migration) == []
    assert assert_every_lab_finished(page, "10d") >= 2  # the migration, the locks
