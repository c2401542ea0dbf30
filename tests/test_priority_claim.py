"""The priority claim (sql/claim_priority.sql): the smallest priority with due work first,
oldest first within it, not-yet-due rows passed over, through jobs_ready_priority_idx."""

import pytest

import pgq_teach as pgq
from helpers import counts
from pgq_teach import queue, statements
from pgq_teach.statements import run


def seed(conn, count: int, priority: int, due_in_s: float = -60, kind: str = "k") -> None:
    params = {"kind": kind, "count": count, "priority": priority, "due_in_s": due_in_s}
    run(conn, "lab/seed_priority_jobs", params)


def priorities(jobs) -> list[int]:
    return [job.payload["p"] for job in jobs]


def test_one_claim_at_a_time_takes_priority_order_and_age_within_it(conn):
    ids = {p: [queue.enqueue(conn, "k", {"p": p}, priority=p) for _ in range(2)] for p in (7, 0, 3)}
    order = [queue.claim_priority(conn)[0].id for _ in range(6)]
    assert order == ids[0] + ids[3] + ids[7]
    assert queue.claim_priority(conn) == []


def test_a_better_priority_not_yet_due_does_not_hold_back_due_work(conn):
    seed(conn, 1_000, 0, due_in_s=3_600)  # urgent, but in an hour
    seed(conn, 3, 4)
    got = queue.claim_priority(conn, batch=10)
    assert len(got) == 3
    assert counts(conn) == {"ready": 1_000, "running": 3}


def test_the_fifo_claim_ignores_priority(conn):
    first = queue.enqueue(conn, "k", {"p": 9}, priority=9)
    queue.enqueue(conn, "k", {"p": 0}, priority=0)
    assert [job.id for job in queue.claim(conn)] == [first]


def plan_nodes(node: dict):
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


def test_its_plan_reads_the_priority_index_in_order_and_stops_at_the_batch(conn):
    seed(conn, 20_000, 5)
    seed(conn, 20_000, 1)
    run(conn, "lab/analyze_jobs")
    plan = statements.explain_analyze(conn, "claim_priority", {"batch": 10, "lease": "5 minutes"})
    nodes = list(plan_nodes(plan))
    [scan] = [n for n in nodes if n.get("Index Name") == "jobs_ready_priority_idx"]
    assert scan["Actual Rows"] == 10  # it stopped at the batch, not at the 20,000 due rows of priority 1
    assert not [n for n in nodes if n["Node Type"] == "Sort"]  # the index gave the order


def test_bad_batch_is_refused_before_any_sql(conn):
    queue.enqueue(conn, "k", {})
    for batch in (0, 10_001, "1"):
        with pytest.raises(pgq.BadInput, match="batch must be"):
            queue.claim_priority(conn, batch=batch)
    assert counts(conn) == {"ready": 1}


def test_a_worker_with_priorities_runs_the_urgent_job_before_the_backlog(db, conn):
    backlog = queue.enqueue_many(conn, "k", [{"p": 5}] * 5, priority=5)
    urgent = queue.enqueue(conn, "k", {"p": 0}, priority=0)
    ran: list[int] = []
    pgq.Worker(db, {"k": lambda job: ran.append(job.id)}, priorities=True).run(until_idle=True)
    assert ran == [urgent, *backlog]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"per_tenant": 2}, "per_tenant caps the fair claim"),
        ({"priorities": True, "fair": True}, "not both"),
        ({"fair": True, "per_tenant": 0}, "per_tenant must be from 1"),
        ({"priorities": "yes"}, "priorities must be True or False"),
    ],
)
def test_a_worker_refuses_a_claim_it_cannot_make_before_it_connects(kwargs, message):
    with pytest.raises(pgq.BadInput, match=message):
        pgq.Worker("host=/nonexistent dbname=none", {"k": print}, **kwargs)
