"""The reference queue: enqueue, claim, complete, fail, extend_lease(s), reap.

Each function runs one statement from sql/ and refuses bad input before any
SQL runs. claim, complete, fail, extend_lease, reap, requeue_dead and cleanup
commit at once on an autocommit connection, or join the caller's transaction
block (as a savepoint) when called inside one. enqueue always joins the
caller's transaction: that is the point of a queue in the same database.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

import psycopg
from psycopg.pq import PipelineStatus, TransactionStatus
from psycopg.rows import dict_row

from . import checks, tables
from .errors import BadInput, Duplicate, PgqError, UniqueRace
from .statements import records, run

MAX_BATCH = 10_000
MAX_ERROR_CHARS = 4_000
MAX_ATTEMPTS = 2**31 - 1  # the column is an int
DEFAULT_LEASE = timedelta(minutes=5)


@dataclass(frozen=True)
class Job:
    """A claimed job. `fence_token` names this claim: every claim takes a new
    one and nothing resets it, so completing, failing or extending with it
    matches the row only while this claim is the latest. `attempts` is the
    retry count (requeue_dead resets it), never the fence.

    `lost` is set when the Worker learns this claim no longer holds the job (a
    beat found it fenced, or the lease clock gave it up before its lease's end),
    and `lost_at` says when; a handler can look with `still_mine()` or wait on
    the event, and stop."""

    id: int
    kind: str
    payload: Any
    attempts: int
    max_attempts: int = 5
    leased_until: datetime | None = None
    fence_token: int = 0
    tenant: str | None = None  # read by the fair claim only (the others leave it None)

    @property
    def lost(self) -> threading.Event:
        """A threading.Event, set once the Worker learns this claim lost the job.
        Made on first use: an Event is a lock and a condition, and building one
        for every claimed job, though few are ever lost, cost more than the rest
        of turning the row into a Job. dict.setdefault is one atomic step, so
        two threads asking at once get the same Event."""
        event = self.__dict__.get("_lost")
        if event is None:
            event = self.__dict__.setdefault("_lost", threading.Event())
        return event

    def still_mine(self) -> bool:
        """False once the Worker has learnt that this claim lost the job."""
        event = self.__dict__.get("_lost")  # no Event yet: nobody has set it
        return event is None or not event.is_set()

    @property
    def lost_at(self) -> float | None:
        """When (time.time()) the Worker learnt this claim lost the job; None while it holds it."""
        return self.__dict__.get("_lost_at")

    def mark_lost(self) -> bool:
        """Note the moment this claim is learnt lost, then set `lost`. True for the first
        caller only: two threads can learn it at once (a beat and an executor's check), and
        only one may tell the handler. setdefault is one atomic step, so the caller whose own
        stamp was stored is that one."""
        stamp = time.time()
        first = self.__dict__.setdefault("_lost_at", stamp) is stamp
        self.lost.set()
        return first


class NotClaimed(BadInput):
    """complete() or fail() on a job this caller never held, or already finished."""


# --- checks: each raises BadInput before any SQL runs (most live in checks.py) ---


def _check_job(job: Any) -> Job:
    if not isinstance(job, Job):
        raise BadInput(f"expected a Job returned by claim(), got {job!r}")
    return job


def _max_attempts(value: Any) -> int | None:
    """A job's max_attempts, or None for the kind's (enqueue.sql reads job_kinds)."""
    return None if value is None else checks.whole_number("max_attempts", value, 1, MAX_ATTEMPTS)


def _error_text(error: Any) -> str:
    if isinstance(error, BaseException):
        text = f"{type(error).__name__}: {error}"
    else:
        text = str(error)
    return text.replace("\x00", "\\0")[:MAX_ERROR_CHARS]


# --- the queue ------------------------------------------------------------------


def enqueue(
    conn: psycopg.Connection,
    kind: str,
    payload: Any,
    *,
    run_at: datetime | timedelta | None = None,
    max_attempts: int | None = None,
    notify: bool = True,
    priority: int = 0,
    tenant: str | None = None,
    unique_key: str | None = None,
    on_conflict: OnConflict = "return",
) -> int:
    """Add a job inside the caller's transaction and return its id. `max_attempts` None
    writes the kind's (job_kinds), or 5 for a kind with no row.

    With notify (the default) idle workers are woken when the transaction
    commits; a rollback removes both the job and the notification.

    `priority` 0 (the default, first) to 9 counts for a Worker made with
    priorities=True or fair=True; `tenant` names whose line the job joins in the
    fair claim. With a `unique_key`, while a job of this kind holding the key
    is ready or running, nothing is added and that job's id is returned
    (on_conflict="return"), or `Duplicate` is raised carrying it ("raise").
    A done or dead job frees its key. A job still runs at least once per
    enqueue that added it, and may run more than once (delivery is at least
    once), so a handler stays idempotent.
    """
    params = {
        "kind": checks.job_kind(kind),
        "payload": checks.job_payload(payload),
        "run_at": checks.run_at(run_at),
        "max_attempts": _max_attempts(max_attempts),
    }
    options = _options(priority, tenant, on_conflict)
    key = checks.unique_key(unique_key)
    with conn.transaction():
        if options == PLAIN and key is None:
            [(job_id,)] = run(conn, "enqueue", params).fetchall()  # INSERT ... RETURNING id: one row
        else:
            params |= options | {"unique_key": key}
            [job_id] = _add_unique(conn, "enqueue_unique", params, [key], on_conflict)
        if notify:
            run(conn, "notify_ready", {"kind": kind})
    return job_id


OnConflict = Literal["return", "raise"]
PLAIN = {"priority": 0, "tenant": None}  # what the taught enqueue statements write
UNIQUE_TRIES = 5  # a key whose live job keeps finishing between two looks is surely a bug


def _options(priority: Any, tenant: Any, on_conflict: Any) -> dict[str, Any]:
    """The checked priority and tenant (the unique enqueue's columns beyond the taught ones)."""
    checks.one_of("on_conflict", on_conflict, ("return", "raise"))
    return {"priority": checks.priority(priority), "tenant": checks.tenant(tenant)}


def _add_unique(
    conn: psycopg.Connection,
    name: str,
    params: dict[str, Any],
    keys: list[str | None],
    on_conflict: str,
    texts: list[str] | None = None,
) -> list[int]:
    """Run a unique enqueue and return one id per key, in order: the new job's, or the live
    job's that holds the key (or Duplicate). A key refused by the insert whose job then
    finished before the look is tried again: its job is gone, so the key is free. `texts`,
    the payloads as JSON, one per key, for enqueue_many_unique (enqueue_unique's is in params)."""
    kind = params["kind"]
    ids: list[int | None] = [None] * len(keys)
    todo = list(range(len(keys)))
    for _ in range(UNIQUE_TRIES):
        try:
            added = run(conn, name, params | _unique_params(keys, todo, texts)).fetchall()
        except psycopg.errors.SerializationFailure as failure:  # only above READ COMMITTED
            raise UniqueRace(kind, [str(keys[i]) for i in todo if keys[i] is not None]) from failure
        refused = _match_added(keys, todo, added, ids)
        held = dict(run(conn, "live_unique_ids", {"kind": kind, "unique_keys": [keys[i] for i in refused]}))
        for i in refused:
            if keys[i] in held:
                if on_conflict == "raise":
                    raise Duplicate(kind, str(keys[i]), held[keys[i]])
                ids[i] = held[keys[i]]
        todo = [i for i in refused if ids[i] is None]
        if not todo:
            return [i for i in ids if i is not None]
    raise PgqError(f"unique enqueue of {kind}: a key's live job kept finishing between two looks; try again")


def _unique_params(keys: list[str | None], todo: list[int], texts: list[str] | None) -> dict[str, Any]:
    """The keys and payloads of the jobs still to add, for enqueue_many_unique (none for
    enqueue_unique, whose one job is in its params)."""
    if texts is None:
        return {}
    return {"unique_keys": [keys[i] for i in todo], "payloads": "[" + ",".join(texts[i] for i in todo) + "]"}


def _match_added(
    keys: list[str | None], todo: list[int], added: list[tuple[Any, ...]], ids: list[int | None]
) -> list[int]:
    """Give each job still to add the id the insert returned for it (rows come back in the
    order of `todo`, one per job added); return the positions it refused (a key held)."""
    rows = iter(added)
    row = next(rows, None)
    refused = []
    for i in todo:
        # A row is this job's if its key matches; enqueue_unique returns the id alone.
        if row is not None and (len(row) == 1 or row[1] == keys[i]):
            ids[i] = row[0]
            row = next(rows, None)
        else:
            refused.append(i)
    return refused


def enqueue_many(
    conn: psycopg.Connection,
    kind: str,
    payloads: Sequence[Any],
    *,
    run_at: datetime | timedelta | None = None,
    max_attempts: int | None = None,
    notify: bool = True,
    priority: int = 0,
    tenant: str | None = None,
    unique_keys: Sequence[str | None] | None = None,
    on_conflict: OnConflict = "return",
) -> list[int]:
    """Add one job per payload, in one statement inside the caller's
    transaction, and return their ids in order. One notification for the
    whole statement, not one per job. Every payload is checked before any SQL.

    `priority` and `tenant` are every job's, as in `enqueue`; `unique_keys`, one
    per payload (None: no key), makes each job unique as `enqueue`'s unique_key
    does, a key repeated in the list included (its later jobs get the first's id)."""
    if isinstance(payloads, (str, bytes, Mapping)) or not isinstance(payloads, Sequence):
        raise BadInput(f"payloads must be a list of payloads, got {type(payloads).__name__}")
    texts = [checks.job_payload_text(p) for p in payloads]
    params = {
        "kind": checks.job_kind(kind),
        # One JSON array in one text parameter: each payload is serialised once,
        # and the server splits it (jsonb_array_elements) in payload order.
        "payloads": "[" + ",".join(texts) + "]",
        "run_at": checks.run_at(run_at),
        "max_attempts": _max_attempts(max_attempts),
    }
    options = _options(priority, tenant, on_conflict)
    keys = _check_unique_keys(unique_keys, len(texts))
    if not payloads:
        return []
    with conn.transaction():
        if options == PLAIN and not any(keys):
            ids = [r[0] for r in run(conn, "enqueue_many", params).fetchall()]
        else:
            params |= options
            ids = _add_unique(conn, "enqueue_many_unique", params, keys, on_conflict, texts)
        if notify:
            run(conn, "notify_ready", {"kind": kind})
    return ids


def _check_unique_keys(unique_keys: Any, count: int) -> list[str | None]:
    if unique_keys is None:
        return [None] * count
    if isinstance(unique_keys, (str, bytes, Mapping)) or not isinstance(unique_keys, Sequence):
        raise BadInput(f"unique_keys must be a list of keys (or None), got {type(unique_keys).__name__}")
    if len(unique_keys) != count:
        raise BadInput(
            f"unique_keys must hold one key per payload: {len(unique_keys):,} keys, {count:,} payloads"
        )
    return [checks.unique_key(key) for key in unique_keys]


def atomic(conn: psycopg.Connection) -> contextlib.AbstractContextManager[Any]:
    """What makes one statement atomic here: on an idle autocommit connection
    the statement is its own transaction already (BEGIN and COMMIT would cost
    two more round trips); inside a caller's transaction, a savepoint. Inside
    a pipeline the status reads idle too, yet the statements up to the
    pipeline's Sync share one implicit transaction, so there it is wrapped in
    an explicit transaction that commits when the call returns. That
    transaction may not be the statement's alone: psycopg syncs what is still
    queued first, but statements of the caller's whose results were already
    read (since the last Sync) are taken in by its BEGIN and commit with it."""
    if _own_transaction(conn):
        return contextlib.nullcontext()
    return conn.transaction()


def _own_transaction(conn: psycopg.Connection) -> bool:
    """Whether the next statement sent on `conn` commits on its own: an idle
    autocommit connection, not in pipeline mode (there the statements up to
    the next Sync run in one implicit transaction, though the status says idle)."""
    return (
        conn.autocommit
        and conn.info.transaction_status == TransactionStatus.IDLE
        and conn.info.pipeline_status == PipelineStatus.OFF
    )


def claim(conn: psycopg.Connection, *, batch: int = 1, lease: timedelta | float = DEFAULT_LEASE) -> list[Job]:
    """Claim up to `batch` due jobs with a lease; an empty list when none is due."""
    params = {"batch": checks.whole_number("batch", batch, 1, MAX_BATCH), "lease": checks.lease(lease)}
    with atomic(conn):
        return run(conn, "claim", params, row_factory=records(Job)).fetchall()


def claim_priority(
    conn: psycopg.Connection, *, batch: int = 1, lease: timedelta | float = DEFAULT_LEASE
) -> list[Job]:
    """Claim up to `batch` due jobs of the smallest priority that has due work (0 first),
    oldest first within it (sql/claim_priority.sql); an empty list when none is due."""
    params = {"batch": checks.whole_number("batch", batch, 1, MAX_BATCH), "lease": checks.lease(lease)}
    with atomic(conn):
        return run(conn, "claim_priority", params, row_factory=records(Job)).fetchall()


MAX_PER_TENANT = 100_000


def claim_fair(
    conn: psycopg.Connection,
    *,
    batch: int = 1,
    lease: timedelta | float = DEFAULT_LEASE,
    per_tenant: int = 1,
    after: str | None = None,
) -> list[Job]:
    """Claim up to `batch` due jobs that have a tenant, fairly: within the best priority with
    due work of a tenant under its cap, every tenant's first job before any tenant's second,
    tenants with the fewest running jobs first, and never more than `per_tenant` running jobs
    of one tenant across every fair claimer (sql/claim_fair_tenants.sql, then
    sql/claim_fair.sql, in one transaction: a savepoint in the caller's, whose tenants then
    stay locked until the caller's transaction ends). A job with no tenant is never taken
    here. Among tenants with as many running jobs, the turn goes to those after `after` by
    name, then from the first: pass
    the last claim's `next_turn`, so that jobs finishing between claims do not hand every
    turn to the tenant with the oldest job."""
    params: dict[str, Any] = {
        "batch": checks.whole_number("batch", batch, 1, MAX_BATCH),
        "per_tenant": checks.whole_number("per_tenant", per_tenant, 1, MAX_PER_TENANT),
        "after": checks.tenant(after),
    }
    claiming: dict[str, Any] = {"lease": checks.lease(lease), "per_tenant": params["per_tenant"]}
    claiming["batch"], params["min_priority"] = params["batch"], 0
    for _ in range(FAIR_TRIES):
        with conn.transaction():  # the tenants' locks last until it ends
            locked = run(conn, "claim_fair_tenants", params).fetchall()
            if not locked or locked[0][0] is None and locked[0][1] == checks.MAX_PRIORITY:
                return []
            if locked[0][0] is None:  # every tenant there is at its cap: look from the next priority
                params["min_priority"] = locked[0][1] + 1
                continue
            claiming |= {"tenants": [r[0] for r in locked], "priority": locked[0][1]}
            claiming["ranked_running"] = [r[2] for r in locked]
            jobs = run(conn, "claim_fair", claiming, row_factory=records(Job)).fetchall()
        if jobs:
            return jobs
    return []  # every look found its tenants taken meanwhile: the caller's next claim looks again


def next_turn(after: str | None, jobs: Sequence[Job]) -> str | None:
    """The `after` for the next fair claim: of the tenants these jobs were claimed for, the
    one furthest along the turn that started after `after` (unchanged if none)."""
    tenants = [job.tenant for job in jobs if job.tenant is not None]
    if not tenants:
        return after
    return max(tenants, key=lambda t: (after is not None and t <= after, t))  # wrapped round: further


# Tenants locked but nothing claimed: each one's running count grew after its ranking's
# snapshot, so another claim committed in between; the next look takes a newer snapshot. Every
# such look means another claim made progress, so this bound is only a guard: 8 claimers racing
# for 51 tenants needed a few looks each (tests/test_fair_claim.py).
FAIR_TRIES = 50


def _explain_fence(conn: psycopg.Connection, job: Job, verb: str) -> bool:
    """After a fenced statement touched no row: False if a newer claim or the
    reaper fenced this worker out, an error if the call itself was wrong."""
    row = job_state(conn, job.id)
    if row is None:
        raise NotClaimed(f"cannot {verb} job {job.id}: there is no such job")
    status, fence_token = row["status"], row["fence_token"]
    if fence_token == 0:
        raise NotClaimed(f"cannot {verb} job {job.id}: it was never claimed (status {status})")
    if fence_token == job.fence_token and status == "done":
        # The row cannot say who: a completion that checks no token (teaching/mark_done.sql,
        # say) keeps the token too.
        raise NotClaimed(
            f"cannot {verb} job {job.id}: it is already done under this claim's token (this claim "
            "completed it, or a completion that checks no token did, such as teaching/mark_done.sql)"
        )
    if fence_token == job.fence_token and status == "dead" and verb == "fail":
        raise NotClaimed(f"cannot fail job {job.id}: this claim already failed it for good")
    return False


def job_state(conn: psycopg.Connection, job_id: int) -> dict[str, Any] | None:
    """The job's status, attempts, fencing token and last error, as job_state.sql reads them,
    by column name; None if there is no such job."""
    return run(conn, "job_state", {"id": job_id}, row_factory=dict_row).fetchone()


def completed_by(conn: psycopg.Connection, job: Job) -> bool:
    """Whether `job` is done under this claim's fencing token: what a worker asks after it sent
    the completion as its connection broke, when it cannot tell whether it committed. Among
    fenced completions only this claim's can do that; one that checks no token (the teaching
    and exercise statements) keeps whatever token it finds, so the course's own workers,
    which complete fenced, are the ones this answer is exact for."""
    row = job_state(conn, job.id)
    return row is not None and row["status"] == "done" and row["fence_token"] == job.fence_token


def failed_by(conn: psycopg.Connection, job: Job, error: Any) -> str | None:
    """The outcome ("ready" or "dead") if the row still holds this claim's failure of `job`,
    with this error: what a worker asks after it sent the failure as its connection broke.
    The claim's token, its attempts and the error text tell that failure from the reaper's
    (same token, "lease expired"). None once anything else has changed the row: a newer claim
    (a new token) or a requeue (attempts back to 0), even if the failure had committed before
    it; the worker then cannot tell, and counts it fenced."""
    row = job_state(conn, job.id)
    if row is None or row["status"] not in ("ready", "dead"):
        return None
    same = (row["attempts"], row["fence_token"], row["last_error"]) == (
        job.attempts,
        job.fence_token,
        _error_text(error),
    )
    return row["status"] if same else None


def complete(conn: psycopg.Connection, job: Job) -> bool:
    """Mark a claimed job done. False when a newer claim or the reaper fenced it out."""
    job = _check_job(job)
    with conn.transaction():
        if run(conn, "complete", {"id": job.id, "fence_token": job.fence_token}).fetchone():
            return True
        return _explain_fence(conn, job, "complete")


def fail(
    conn: psycopg.Connection, job: Job, error: Any, *, by_kind: bool = False
) -> Literal["ready", "dead", "fenced"]:
    """Record a failed try: "ready" (retry after backoff), "dead", or "fenced"
    when this worker no longer holds the claim. `by_kind`: back off by the kind's
    policy in job_kinds (sql/fail_by_kind.sql), not fail.sql's one policy."""
    job = _check_job(job)
    with conn.transaction():
        params = {"id": job.id, "fence_token": job.fence_token, "error": _error_text(error)}
        row = run(conn, "fail_by_kind" if by_kind else "fail", params).fetchone()
        if row:
            return row[0]
        _explain_fence(conn, job, "fail")
        return "fenced"


def _check_jobs(jobs: Any) -> list[Job]:
    if isinstance(jobs, (str, bytes)) or not isinstance(jobs, Sequence):
        raise BadInput(f"expected a list of Jobs returned by claim(), got {jobs!r}")
    jobs = list(jobs)
    if not all(isinstance(job, Job) for job in jobs):
        return [_check_job(job) for job in jobs]  # raises, naming the first that is not a Job
    return jobs


def _check_once_each(jobs: list[Job]) -> list[Job]:
    """A batch outcome names each job once: with two claims of one job (a stale
    one and a newer one) in one call, the rows returned could not say which
    claim matched. Send them in separate calls."""
    if len({job.id for job in jobs}) != len(jobs):
        raise BadInput("a job appears twice in one batch: send each claim of a job in its own call")
    return jobs


def _finish_many(conn: psycopg.Connection, name: str, params: dict[str, Any], durable: bool) -> list[Any]:
    """Run one batch statement as its own transaction (or as a savepoint in
    the caller's, under the caller's setting). Not durable, on its own: the
    relaxed twin (sql/NAME_relaxed.sql), whose commit does not wait for its WAL
    to reach disk, set inside the statement, so it is one round trip where
    BEGIN, SET LOCAL, the statement and COMMIT were four. Pipeline mode was
    measured for those four: over the Unix socket its client-side cost
    outweighed the round trips it saved. In a caller's pipeline the relaxed
    setting would last until the pipeline's Sync and relax the caller's later
    statements too, so there it is the plain statement in an explicit
    transaction (see `atomic`: it also takes in the caller's statements
    sent since the pipeline's last Sync)."""
    if _own_transaction(conn):
        return run(conn, name if durable else f"{name}_relaxed", params).fetchall()
    with conn.transaction():
        return run(conn, name, params).fetchall()


def complete_many(conn: psycopg.Connection, jobs: Sequence[Job], *, durable: bool = True) -> list[bool]:
    """Mark a batch of claimed jobs done in one statement; for each job, True
    if it completed, False if it was fenced out (each row is fenced on its own
    token, so a stale claim in the batch does not stop the current ones).

    With durable=False the commit does not wait for the disk: a crash may lose
    it, and the jobs then run again after their leases, as at-least-once allows."""
    jobs = _check_once_each(_check_jobs(jobs))
    if not jobs:
        return []
    params = {"ids": [j.id for j in jobs], "fence_tokens": [j.fence_token for j in jobs]}
    done = {row[0] for row in _finish_many(conn, "complete_many", params, durable)}
    return [j.id in done for j in jobs]


def fail_many(
    conn: psycopg.Connection,
    failures: Sequence[tuple[Job, Any]],
    *,
    durable: bool = True,
    by_kind: bool = False,
) -> list[str]:
    """Record a batch of failed tries, one (job, error) pair each, in one
    statement: for each, "ready" (retry after backoff), "dead", or "fenced".
    `by_kind`: each backs off by its kind's policy (sql/fail_many_by_kind.sql)."""
    if isinstance(failures, (str, bytes)) or not isinstance(failures, Sequence):
        raise BadInput(f"failures must be a list of (job, error) pairs, got {failures!r}")
    if not all(isinstance(f, tuple) and len(f) == 2 for f in failures):
        raise BadInput("failures must be a list of (job, error) pairs")
    jobs = _check_once_each(_check_jobs([job for job, _ in failures]))
    if not jobs:
        return []
    params = {
        "ids": [j.id for j in jobs],
        "fence_tokens": [j.fence_token for j in jobs],
        "errors": [_error_text(error) for _, error in failures],
    }
    status = dict(_finish_many(conn, "fail_many_by_kind" if by_kind else "fail_many", params, durable))
    return [status.get(j.id, "fenced") for j in jobs]


def extend_lease(conn: psycopg.Connection, job: Job, lease: timedelta | float = DEFAULT_LEASE) -> bool:
    """Push the lease `lease` past now, while this claim still holds the job."""
    job = _check_job(job)
    params = {"id": job.id, "fence_token": job.fence_token, "lease": checks.lease(lease)}
    with conn.transaction():
        return run(conn, "extend_lease", params).fetchone() is not None


def extend_leases(
    conn: psycopg.Connection, jobs: Sequence[Job], lease: timedelta | float = DEFAULT_LEASE
) -> set[tuple[int, int]]:
    """One heartbeat for many jobs: push each lease `lease` past now, in one
    statement fenced row by row; the (id, fence_token) of each claim still
    held (a claim missing from the result was reaped, claimed again or
    requeued: it lost its job)."""
    jobs = _check_jobs(jobs)
    params = _leases_params(jobs, lease)
    if not jobs:
        return set()
    with atomic(conn):
        return {(row[0], row[1]) for row in run(conn, "extend_leases", params).fetchall()}


def _leases_params(jobs: list[Job], lease: timedelta | float) -> dict[str, Any]:
    """The parameters of extend_leases.sql and renew_leases.sql (the lease checked)."""
    return {
        "ids": [j.id for j in jobs],
        "fence_tokens": [j.fence_token for j in jobs],
        "lease": checks.lease(lease),
    }


def renew_leases(
    conn: psycopg.Connection, jobs: Sequence[Job], lease: timedelta | float = DEFAULT_LEASE
) -> dict[tuple[int, int], bool]:
    """extend_leases that never waits on a row (the Worker's heartbeat): for
    each claim still held, its (id, fence_token) and whether its lease was
    pushed (False: another transaction held its row, which was left as it
    was; sql/renew_leases.sql). A claim missing from the result lost its job."""
    jobs = _check_jobs(jobs)
    params = _leases_params(jobs, lease)
    if not jobs:
        return {}
    with atomic(conn):
        return {(row[0], row[1]): row[2] for row in run(conn, "renew_leases", params).fetchall()}


def reap(conn: psycopg.Connection) -> int:
    """Return expired leases to ready (or dead); the number of jobs reaped."""
    with atomic(conn):
        return len(run(conn, "reap").fetchall())


def requeue_dead(conn: psycopg.Connection, kind: str | None = None) -> int:
    """Put dead jobs (of one kind, or all) back to ready with fresh attempts.
    Their fencing tokens stay, so claims from before the requeue stay fenced.
    A dead job whose unique key a live job holds stays dead (the live one does
    its work), and of dead jobs sharing a key only the newest comes back."""
    if kind is not None:
        checks.job_kind(kind)
    tries = 1
    while True:
        try:
            with conn.transaction():
                return len(run(conn, "requeue_dead", {"kind": kind}).fetchall())
        except psycopg.errors.UniqueViolation:
            # A job with one of these keys was enqueued and committed while the statement
            # ran: run it again, and the new job's key keeps its dead twin dead.
            if tries == UNIQUE_TRIES:
                raise
            tries += 1


def cleanup_batches(conn: psycopg.Connection, batch: int = 5000) -> Iterator[tuple[int, int]]:
    """cleanup's loop, one committed batch per step: yields the rows each batch
    deleted and the :after the next batch starts from. Each batch carries on
    after the largest id the last one deleted (sql/cleanup_done.sql's keyset), so
    it never rereads what earlier batches left dead, whatever shared_buffers is;
    a job that becomes done behind that point waits for the next run."""
    batch = checks.whole_number("batch", batch, 1, MAX_BATCH * 10)
    after = 0
    while True:
        with conn.transaction():
            ids = [row[0] for row in run(conn, "cleanup_done", {"batch": batch, "after": after})]
        after = max(ids, default=after)
        yield len(ids), after
        if len(ids) < batch:
            return


def cleanup(conn: psycopg.Connection, batch: int = 5000) -> int:
    """Delete done jobs in small committed batches, in id order; the number deleted."""
    return sum(deleted for deleted, _ in cleanup_batches(conn, batch))


@dataclass
class Stats:
    """What an operator watches: counts by status, the oldest due wait, dead
    row versions, and the sessions that can hold back VACUUM."""

    counts: dict[str, int] = field(default_factory=dict)
    estimated: list[str] = field(default_factory=list)  # statuses whose count is an estimate (big table)
    oldest_due_wait: timedelta | None = None
    live_tuples: int | None = None
    dead_tuples: int | None = None
    last_autovacuum: datetime | None = None
    autovacuum_count: int | None = None
    sessions: list[dict] = field(default_factory=list)

    def __str__(self) -> str:
        counts = (
            ", ".join(f"{s} {'~' if s in self.estimated else ''}{n:,}" for s, n in self.counts.items())
            or "no jobs"
        )
        wait = f"; oldest due wait {tables.duration(self.oldest_due_wait)}" if self.oldest_due_wait else ""
        dead = f"; dead row versions {self.dead_tuples:,}" if self.dead_tuples is not None else ""
        return f"{counts}{wait}{dead}; holding VACUUM back: {len(self.sessions)}"


def status_counts(conn: psycopg.Connection) -> dict[str, int]:
    """How many jobs are in each status, counted exactly, for example {"done": 3, "ready": 2};
    absent statuses are left out. It reads the whole table: the dashboard's `stats` does not."""
    return {row["status"]: row["jobs"] for row in run(conn, "count_by_status", row_factory=dict_row)}


def stats(conn: psycopg.Connection) -> Stats:
    """What an operator watches, read in three statements (see Stats)."""
    st = Stats()
    for row in run(conn, "stats_status", row_factory=dict_row):
        st.counts[row["status"]] = row["jobs"]
        if not row["exact"]:
            st.estimated.append(row["status"])
        if row["oldest_due_wait"] is not None:
            st.oldest_due_wait = row["oldest_due_wait"]
    row = run(conn, "stats_vacuum").fetchone()
    if row:
        st.live_tuples, st.dead_tuples, st.last_autovacuum, st.autovacuum_count = row
    st.sessions = run(conn, "stats_sessions", row_factory=dict_row).fetchall()
    return st
