"""Per kind: the retry policy and job timeout (the job_kinds table), the numbers
an alert watches for each kind, and the shared rate limit's token bucket.

A kind with no row in job_kinds keeps today's values: 10 s doubling per try up
to one hour, 5 tries, no job timeout (sql/fail.sql). `set_policy` gives a kind
its own; `enqueue` then writes the kind's max_attempts into each new job
unless the caller passes one (sql/enqueue.sql), and the per-kind failure
statements (sql/fail_by_kind.sql, sql/fail_many_by_kind.sql) read its backoff
base and cap. The Worker reads `policies` as it starts, for its timeouts and
to fail a kind with a row through the per-kind statement.

`stats` is the dashboard's per-kind view (sql/stats_kinds.sql): the oldest
due job's wait, the oldest running job's age beside the kind's timeout,
enqueue-to-done at p50 and p99 over a recent window, and the failure rate.
Its window reads every finished row of the table (no index holds
finished_at), so it costs a scan that grows with the done rows kept: refresh
it every half minute or so, not every second, and keep done rows cleaned.
Measured at 10x lesson 10's 200,000 rows (2,000,000 finished over two days,
20,000 ready, 200 running; 273 MB), a 15-minute window, on PostgreSQL 18.6 and
15 on a loaded 2-CPU machine: about 35,500 buffers and 0.9 to 1.4 s a call, the
same with shared_buffers 1 GB (a parallel sequential scan reads through a
small ring of buffers, so the table does not stay cached) and with a
transaction open in another database. A partial index on finished_at for the
done and dead rows (43 MB there) cut it to 10,800 buffers and 150 ms, but every
completion would then write one more index entry: not added.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import psycopg

from . import checks, queue, tables
from .errors import BadInput
from .statements import records, run

# Today's values, for a kind with no row (sql/fail.sql, and job_kinds' defaults in sql/schema.sql).
DEFAULT_BACKOFF_BASE_S = 10.0
DEFAULT_BACKOFF_CAP_S = 3600.0
DEFAULT_MAX_ATTEMPTS = 5
MAX_BACKOFF_S = 30 * 86_400  # job_kinds' CHECK: 30 days
MAX_TIMEOUT_S = 30 * 86_400
DEFAULT_WINDOW = timedelta(minutes=15)
MAX_RATE = 1_000_000.0  # per second: beyond it the bucket's row is the bottleneck anyway


@dataclass(frozen=True)
class KindPolicy:
    """One kind's row in job_kinds: how long its failed tries wait (base x 2^attempts, at most
    the cap), how many tries it gets, and its job timeout (None: none)."""

    kind: str
    backoff_base_s: float = DEFAULT_BACKOFF_BASE_S
    backoff_cap_s: float = DEFAULT_BACKOFF_CAP_S
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    timeout_s: float | None = None


def set_policy(
    conn: psycopg.Connection,
    kind: str,
    *,
    backoff_base_s: float = DEFAULT_BACKOFF_BASE_S,
    backoff_cap_s: float = DEFAULT_BACKOFF_CAP_S,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    timeout_s: float | None = None,
) -> KindPolicy:
    """Give `kind` its retry policy and job timeout (a row in job_kinds), replacing any it had."""
    policy = KindPolicy(
        kind=checks.job_kind(kind),
        backoff_base_s=checks.seconds("backoff_base_s", backoff_base_s, 0.001, MAX_BACKOFF_S),
        backoff_cap_s=checks.seconds("backoff_cap_s", backoff_cap_s, 0.001, MAX_BACKOFF_S),
        max_attempts=checks.whole_number("max_attempts", max_attempts, 1, queue.MAX_ATTEMPTS),
        timeout_s=None if timeout_s is None else checks.seconds("timeout_s", timeout_s, 0.001, MAX_TIMEOUT_S),
    )
    if policy.backoff_base_s > policy.backoff_cap_s:
        raise BadInput(
            f"backoff_base_s ({policy.backoff_base_s:g}) must not be above backoff_cap_s "
            f"({policy.backoff_cap_s:g})"
        )
    with conn.transaction():
        run(conn, "set_kind_policy", vars(policy))
    return policy


def policies(conn: psycopg.Connection, kinds: Sequence[str]) -> dict[str, KindPolicy]:
    """The policies of those of `kinds` that have a row in job_kinds (the rest keep today's values)."""
    names = [checks.job_kind(kind) for kind in kinds]
    found = run(conn, "kind_policies", {"kinds": names}, row_factory=records(KindPolicy)).fetchall()
    return {policy.kind: policy for policy in found}


def fail(conn: psycopg.Connection, job: queue.Job, error: Any) -> str:
    """queue.fail with the kind's retry policy (sql/fail_by_kind.sql): "ready", "dead" or "fenced"."""
    return queue.fail(conn, job, error, by_kind=True)


@dataclass(frozen=True)
class KindStats:
    """One kind on the dashboard (sql/stats_kinds.sql says how each is counted)."""

    kind: str
    due: int
    oldest_due_wait: timedelta | None
    running: int
    oldest_running_age: timedelta | None
    timeout: timedelta | None
    done: int
    dead: int
    done_p50: timedelta | None
    done_p99: timedelta | None
    failure_rate: float | None

    @property
    def past_timeout(self) -> bool:
        """The oldest running job has run longer than its kind's job timeout: a hung handler."""
        return None not in (self.timeout, self.oldest_running_age) and (
            self.oldest_running_age > self.timeout  # type: ignore[operator]
        )


def stats(conn: psycopg.Connection, window: timedelta | float = DEFAULT_WINDOW) -> list[KindStats]:
    """The dashboard's numbers per kind, finished jobs counted over the last `window`."""
    params = {"window": checks.span("window", window)}
    return run(conn, "stats_kinds", params, row_factory=records(KindStats)).fetchall()


def stats_table(rows: Sequence[KindStats], window: timedelta) -> tables.Table:
    """The per-kind stats as one table, for the CLI and lesson 10's dashboard."""
    cols = tables.columns(
        "kind",
        tables.Column("due", tables.COUNT, "job"),
        tables.Column("oldest due wait", tables.SECONDS),
        tables.Column("running", tables.COUNT, "job"),
        tables.Column("oldest running", tables.SECONDS),
        tables.Column("job timeout", tables.SECONDS),
        tables.Column("enqueue to done p50", tables.SECONDS),
        tables.Column("p99", tables.SECONDS),
        tables.Column("failed tries", tables.NUMBER, "%", digits=1),
    )
    body = [
        [
            r.kind,
            r.due,
            r.oldest_due_wait,
            r.running,
            r.oldest_running_age,
            r.timeout,
            r.done_p50,
            r.done_p99,
            None if r.failure_rate is None else 100 * r.failure_rate,
        ]
        for r in rows
    ]
    caption = f"Finished jobs counted over the last {tables.duration(window)}."
    return tables.Table(cols, body, caption=caption)


def take_tokens(conn: psycopg.Connection, kind: str, per_second: float, wanted: int) -> int:
    """Take up to `wanted` tokens from `kind`'s shared bucket (sql/take_tokens.sql): how many
    were granted. The bucket refills at `per_second` and holds at most one second of tokens."""
    params = {
        "kind": checks.job_kind(kind),
        "per_second": checks.number("per_second", per_second, 1e-6, MAX_RATE, unit="jobs per second"),
        "wanted": checks.whole_number("wanted", wanted, 0, queue.MAX_BATCH),
    }
    with queue.atomic(conn):
        [(granted,)] = run(conn, "take_tokens", params).fetchall()
    return granted


def hand_back(conn: psycopg.Connection, jobs: Sequence[tuple[queue.Job, float]]) -> list[int]:
    """Give claimed jobs back to ready without spending a try, each (job, wait in seconds) not
    claimable again before its wait has passed, its last_error its own (sql/hand_back.sql); the
    ids handed back (a claim missing was fenced: it no longer held its job)."""
    if not jobs:
        return []
    params = {
        "ids": [job.id for job, _ in jobs],
        "fence_tokens": [job.fence_token for job, _ in jobs],
        "waits_s": [checks.seconds("wait", wait, 0, MAX_BACKOFF_S) for _, wait in jobs],
    }
    with queue.atomic(conn):
        return [row[0] for row in run(conn, "hand_back", params).fetchall()]
