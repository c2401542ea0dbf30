"""The fair claim (sql/claim_fair_tenants.sql, then sql/claim_fair.sql): within the best
priority with due work, every tenant's first job before any tenant's second, and the cap on
each tenant's running jobs held exactly by concurrent claimers."""

import threading
import time
from collections import Counter

import pytest
from psycopg.rows import dict_row

import pgq_teach as pgq
from helpers import counts, wait_for
from pgq_teach import queue
from pgq_teach.experiments.sessions import together
from pgq_teach.statements import run

FLOOD, SMALL = 20_000, 50  # lab/seed_tenant_flood.sql: tenant 'big', then 't1'...'t50', one job each


def running_by_tenant(conn) -> Counter:
    rows = run(conn, "lab/all_jobs", row_factory=dict_row).fetchall()
    return Counter(row["tenant"] for row in rows if row["status"] == "running")


def test_one_claim_gives_every_tenant_its_first_job_before_any_second(conn):
    run(conn, "lab/seed_tenant_flood", {"flood": 100, "tenants": 5})
    jobs = queue.claim_fair(conn, batch=8, per_tenant=10)
    assert len(jobs) == 8
    assert running_by_tenant(conn) == Counter({"big": 3, "t1": 1, "t2": 1, "t3": 1, "t4": 1, "t5": 1})


def test_the_fifo_claim_on_the_same_queue_serves_only_the_flood(conn):
    run(conn, "lab/seed_tenant_flood", {"flood": 100, "tenants": 5})
    queue.claim(conn, batch=8)
    assert running_by_tenant(conn) == Counter({"big": 8})  # what the fair claim is for


def test_eight_claimers_give_every_tenant_a_job_within_one_round_of_a_20000_job_flood(db, conn):
    """One round: as many claims of one job as there are tenants (51), made by 8 sessions at
    once. With the fewest-running-first order each tenant gets exactly one."""
    run(conn, "lab/seed_tenant_flood", {"flood": FLOOD, "tenants": SMALL})
    claims = iter(range(SMALL + 1))
    lock = threading.Lock()

    def claimer(_: int) -> None:
        with db.connection() as own:
            while True:
                with lock:
                    if next(claims, None) is None:
                        return
                assert len(queue.claim_fair(own, batch=1, per_tenant=1_000)) == 1

    together(8, claimer)
    by_tenant = running_by_tenant(conn)
    assert set(by_tenant) == {"big"} | {f"t{i}" for i in range(1, SMALL + 1)}
    assert set(by_tenant.values()) == {1}


@pytest.mark.parametrize("per_tenant", [1, 3])
def test_eight_claimers_never_exceed_the_cap_per_tenant(db, conn, per_tenant):
    """Every claimer keeps claiming until a claim finds nothing; the flood tenant ends with
    exactly per_tenant running jobs, each small tenant with its one."""
    run(conn, "lab/seed_tenant_flood", {"flood": 2_000, "tenants": 5})
    claimed: list[int] = []

    def claimer(_: int) -> None:
        with db.connection() as own:
            while jobs := queue.claim_fair(own, batch=2, per_tenant=per_tenant):
                claimed.extend(job.id for job in jobs)

    together(8, claimer)
    assert running_by_tenant(conn) == Counter({"big": per_tenant, **{f"t{i}": 1 for i in range(1, 6)}})
    assert len(claimed) == len(set(claimed)) == per_tenant + 5


def test_it_takes_the_best_priority_with_due_work_and_no_job_without_a_tenant(conn):
    queue.enqueue(conn, "k", {}, priority=0)  # no tenant: in no tenant's line
    queue.enqueue(conn, "k", {}, priority=1, tenant="a", run_at=queue.DEFAULT_LEASE)  # not yet due
    low = queue.enqueue(conn, "k", {}, priority=6, tenant="b")
    high = queue.enqueue(conn, "k", {}, priority=2, tenant="c")
    assert [job.id for job in queue.claim_fair(conn, batch=5, per_tenant=5)] == [high]
    assert [job.id for job in queue.claim_fair(conn, batch=5, per_tenant=5)] == [low]
    assert queue.claim_fair(conn, batch=5, per_tenant=5) == []
    assert counts(conn) == {"ready": 2, "running": 2}


def test_tenants_at_their_cap_at_the_best_priority_leave_the_next_priority_to_the_others(conn):
    """Every tenant with due work at priority 0 is at per_tenant: the claim takes the other
    tenants' work at the next priority with room, rather than nothing while workers idle."""
    queue.enqueue_many(conn, "k", [{}, {}, {}], priority=0, tenant="big")
    [held] = queue.claim_fair(conn, batch=1, per_tenant=1)
    assert held.tenant == "big"
    later = queue.enqueue(conn, "k", {}, priority=5, tenant="small")
    lowest = queue.enqueue(conn, "k", {}, priority=9, tenant="last")
    assert [job.id for job in queue.claim_fair(conn, batch=5, per_tenant=1)] == [later]
    assert [job.id for job in queue.claim_fair(conn, batch=5, per_tenant=1)] == [lowest]
    assert queue.claim_fair(conn, batch=5, per_tenant=1) == []  # every tenant at its cap
    assert running_by_tenant(conn) == Counter({"big": 1, "small": 1, "last": 1})


@pytest.mark.parametrize(
    "kwargs, message",
    [({"per_tenant": 0}, "per_tenant must be from 1"), ({"batch": 0}, "batch must be from 1")],
)
def test_bad_input_is_refused_before_any_sql(conn, kwargs, message):
    queue.enqueue(conn, "k", {}, tenant="a")
    with pytest.raises(pgq.BadInput, match=message):
        queue.claim_fair(conn, **kwargs)
    assert counts(conn) == {"ready": 1}


def test_a_fair_worker_serves_every_tenant_before_the_flood_s_second_job(db, conn):
    run(conn, "lab/seed_tenant_flood", {"flood": 200, "tenants": 5})
    tenants: list[str] = []

    def handler(job) -> None:
        tenants.append("big" if job.payload["n"] <= 200 else f"t{job.payload['n'] - 200}")

    worker = pgq.Worker(db, {"webhook": handler}, fair=True, per_tenant=1)
    worker.run(until_idle=True)
    assert sorted(tenants[:6]) == ["big", "t1", "t2", "t3", "t4", "t5"]
    assert tenants[6:] == ["big"] * 199


def test_a_capped_fair_worker_claims_again_once_it_sends_an_outcome_not_at_its_next_poll(db, conn):
    """With per_tenant 1 and one tenant, each job waits for the one before it to be sent as
    done. A finished job sends no notification, so a Worker that waited for its poll (30 s
    here) would take minutes for 5 jobs; sending an outcome is what frees the room. Each job
    takes 0.2 s, and the Worker has 2 executors: it asks for 2, gets 1 (the cap), and its
    next claim must wait for the running one's outcome."""
    ids = queue.enqueue_many(conn, "k", [{}] * 5, tenant="acme")
    worker = pgq.Worker(
        db, {"k": lambda job: time.sleep(0.2)}, fair=True, per_tenant=1, poll=30, concurrency=2
    )
    with pgq.worker.running_idle([worker], timeout=0):
        assert wait_for(lambda: counts(conn) == {"done": 5}, timeout=20), counts(conn)
    assert sorted(worker.report.done_ids) == sorted(ids)


def test_a_fair_claim_locks_only_the_jobs_it_claims(db, conn):
    """Rows locked FOR UPDATE but not claimed would stay locked until the claim's transaction
    ends, hidden from every other claim's SKIP LOCKED. With batch 2 the claim takes 'big' and
    't1' one job each; 'big' had room for 2, and its second job must stay claimable."""
    run(conn, "lab/seed_tenant_flood", {"flood": 100, "tenants": 5})
    with conn.transaction():
        mine = queue.claim_fair(conn, batch=2, per_tenant=10)
        with db.connection() as other:
            theirs = queue.claim(other, batch=1_000)  # while the fair claim's transaction is open
    assert sorted(job.tenant for job in mine) == ["big", "t1"]
    assert len(theirs) == 105 - 2  # every ready job but the two the fair claim holds
