"""experiments.fairness: one tenant's flood drained with the FIFO claim and with the fair claim,
on a real server. Asserts the order the server recorded and the buffers it read, never how long
anything took."""

import threading
from pathlib import Path

import pytest

import pgq_teach as pgq
from helpers import chart_rows
from pgq_teach.experiments import fairness

FLOOD, TENANTS, EACH, BATCH = 2_000, 20, 3, 25


def test_the_flood_makes_small_tenants_wait_under_fifo_and_not_under_the_fair_claim(db):
    result = fairness.flood(db, flood=FLOOD, tenants=TENANTS, each=EACH, batch=BATCH, per_tenant=1)
    fifo, fair = result.fifo, result.fair
    print(result.summary())  # the times, for the report
    assert fifo.small_jobs == fair.small_jobs == TENANTS * EACH
    # FIFO: every small tenant's job waited for the whole flood, and the queue drained to its end
    assert fifo.ahead_p50 >= FLOOD and fifo.ahead_p99 >= FLOOD
    assert fifo.claims == -(-(FLOOD + TENANTS * EACH) // BATCH)
    # fair, per_tenant 1: one job of each tenant (the flood's included) per claim at most, so a
    # tenant's k-th job is in claim k at the latest, behind at most EACH rounds of every tenant
    assert fair.ahead_p99 < EACH * (TENANTS + 1)
    assert fair.claims <= EACH + 1
    # the waits, ranked: the fair claim's worst before FIFO's middle, by position and by time
    assert fair.ahead_p99 * 10 < fifo.ahead_p50
    assert fair.wait_p99_ms < fifo.wait_p50_ms
    assert 0 < fifo.buffers < fair.buffers  # two statements and a descent per tenant
    rows = chart_rows(result.chart(), "bar")
    assert [row["claim and percentile"] for row in rows] == [
        "FIFO, p50",
        "FIFO, p99",
        "fair, p50",
        "fair, p99",
    ]
    assert [row["wait (ms)"] for row in rows] == [
        fifo.wait_p50_ms,
        fifo.wait_p99_ms,
        fair.wait_p50_ms,
        fair.wait_p99_ms,
    ]


def test_a_stop_ends_the_run_early_and_says_so(db):
    stop = threading.Event()
    stop.set()
    stopped = fairness.flood(db, flood=100, tenants=2, each=1, stop=stop)
    assert stopped.stopped and stopped.fifo.small_jobs == 0 and "stopped early" in stopped.summary()
    # no wait is shown for jobs nobody claimed: not a 0 that reads as no wait at all
    assert stopped.summary().count("stopped before any small tenant's job was claimed") == 2
    assert "waited" not in stopped.summary()
    assert [row[2] for row in stopped.comparison()[:4]] == ["none claimed (stopped)"] * 4
    assert chart_rows(stopped.chart(), "bar") == []


@pytest.mark.parametrize(
    "kwargs", [{"flood": 0}, {"tenants": 0}, {"each": 101}, {"batch": 0}, {"per_tenant": 0}]
)
def test_bad_settings_are_refused_before_the_table_is_touched(conn, db, kwargs):
    pgq.enqueue(conn, "k", {})
    with pytest.raises(pgq.BadInput):
        fairness.flood(db, **kwargs)
    assert pgq.queue.status_counts(conn) == {"ready": 1}


def test_the_lesson_quotes_the_fair_claims_stored_measurements_from_their_one_source():
    """One number, one source: the figures lesson 10b's prose quotes at ten times its size were
    measured once, in docs/beyond-fifo.md (the library's claims) and in the model answer's
    header (sql/exercise/model/claim_one_per_tenant.sql), the bench's drains in docs/speed.md; the
    lesson repeats them, and this
    test fails when a remeasurement changes the source and not the lesson."""
    import nbformat

    root = Path(__file__).resolve().parent.parent
    lesson = nbformat.read(root / "notebooks" / "10b-priorities-and-fairness.ipynb", as_version=4)
    prose = "\n".join(c.source for c in lesson.cells if c.cell_type == "markdown")
    docs = (root / "docs" / "beyond-fifo.md").read_text(encoding="utf-8")
    model = (root / "sql" / "exercise" / "model" / "claim_one_per_tenant.sql").read_text(encoding="utf-8")
    figures = ("4,172 + 260", "139", "20,677 buffers", "388 index buffers", "8 buffers")
    for figure in figures:
        assert figure in prose and figure in docs, figure
    speed = (root / "docs" / "speed.md").read_text(encoding="utf-8")
    for figure in ("7,261", "10,631"):  # the bench's fair and FIFO claims, stored in docs/speed.md
        assert figure in prose and figure in docs and f"| {figure} jobs/s |" in speed, figure
    for figure in ("991 rows", "1,070 buffers", "38,938 buffers"):  # the model answer's, at ten times
        assert figure.split()[0] in prose and figure.split()[0] in model, figure
