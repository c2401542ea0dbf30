"""A queue from a terminal: `pgq-teach enqueue` (one job), `worker` (a demo
worker, in one process or several) and `stats` (jobs by status)."""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any

from .. import checks, kinds, queue, tables
from ..databases import course_labels, database_name, existing_database, open_database
from ..errors import BadInput
from ..worker import Worker, WorkerSettings
from .common import Subcommands, say, typed

DEFAULT_DB = "shop"
STATS_LABELS_SHOWN = 8  # the course's databases a refused --db names, so the line stays one line


def _db_option(sp):
    sp.add_argument(
        "--db", default=DEFAULT_DB, help=f"database label (default {DEFAULT_DB} -> pgq_{DEFAULT_DB})"
    )


def add_enqueue(sub: Subcommands) -> None:
    """Add `pgq-teach enqueue` to the command line."""
    enq = sub.add_parser("enqueue", help="add one job")
    enq.add_argument("kind", help="the job's kind, for example send_receipt")
    enq.add_argument("payload", help="the job's JSON payload, for example '{\"order_id\": 101}'")
    enq.add_argument(
        "--delay",
        type=typed(float),
        help="seconds from now before it may run, up to a year (default 0: now)",
    )
    enq.add_argument(
        "--max-attempts",
        type=typed(int),
        help="tries before the job goes dead (default: the kind's in job_kinds, else 5)",
    )
    enq.add_argument(
        "--priority", type=typed(int), default=0, help="0 (first, the default) to 9, for --priorities workers"
    )
    enq.add_argument("--tenant", help="whose line the job joins in a --fair worker's claim")
    enq.add_argument(
        "--unique-key",
        help="while a ready or running job of this kind holds the key, add nothing and name that job",
    )
    _db_option(enq)
    enq.set_defaults(func=cmd_enqueue)


def cmd_enqueue(args: argparse.Namespace) -> int:
    # Every argument is checked before any database is touched.
    payload = checks.json_argument("PAYLOAD", args.payload)
    checks.job_payload_text(payload)
    checks.job_kind(args.kind)
    delay = checks.delay("--delay", args.delay)
    if args.max_attempts is not None:
        checks.whole_number("--max-attempts", args.max_attempts, 1, queue.MAX_ATTEMPTS)
    priority, tenant = checks.priority(args.priority), checks.tenant(args.tenant)
    unique_key = checks.unique_key(args.unique_key)
    db = open_database(args.db)
    say(db.server.line())
    with db.connection() as conn:
        try:
            job_id = queue.enqueue(
                conn,
                args.kind,
                payload,
                run_at=delay,
                max_attempts=args.max_attempts,
                priority=priority,
                tenant=tenant,
                unique_key=unique_key,
                on_conflict="raise",
            )
        except queue.Duplicate as held:
            say(
                f"job {held.job_id} ({args.kind}) already holds unique key {held.unique_key!r}: nothing added"
            )
            return 0
    say(f"enqueued job {job_id} ({args.kind}) in database {db.name}")
    return 0


def add_worker(sub: Subcommands) -> None:
    """Add `pgq-teach worker` to the command line."""
    wrk = sub.add_parser("worker", help="run a demo worker whose handlers sleep, or fail on request")
    wrk.add_argument(
        "--kind", action="append", help="a kind to handle (repeatable; default: the store's three)"
    )
    wrk.add_argument("--sleep-ms", type=typed(int), default=10, help="work per job in milliseconds")
    wrk.add_argument(
        "--fail-rate", type=typed(float), default=0.0, help="fraction of calls that raise (0..1)"
    )
    wrk.add_argument("--lease", type=typed(float), default=300.0, help="lease in seconds")
    wrk.add_argument("--batch", type=typed(int), default=1, help="jobs per claim")
    wrk.add_argument(
        "--concurrency",
        type=typed(int),
        default=1,
        help="executor threads in each process (handlers that wait)",
    )
    wrk.add_argument(
        "--processes",
        type=typed(int),
        default=1,
        help="worker processes (for handlers that keep a CPU busy)",
    )
    wrk.add_argument("--poll", type=typed(float), default=5.0, help="fallback poll in seconds")
    wrk.add_argument("--until-idle", action="store_true", help="exit when nothing is due")
    wrk.add_argument(
        "--priorities", action="store_true", help="claim the smallest priority with due work first"
    )
    wrk.add_argument(
        "--fair", action="store_true", help="claim one job per tenant before any tenant's second"
    )
    wrk.add_argument(
        "--per-tenant", type=typed(int), help="with --fair: most running jobs per tenant, fleet-wide"
    )
    wrk.add_argument(
        "--timeout",
        type=typed(float),
        help="job timeout in seconds (default: each kind's in job_kinds, or none)",
    )
    wrk.add_argument(
        "--rate",
        action="append",
        metavar="KIND=PER_SECOND",
        help="a rate limit shared by every worker, for example call_webhook=50 (repeatable)",
    )
    _db_option(wrk)
    wrk.set_defaults(func=cmd_worker)


def cmd_worker(args: argparse.Namespace) -> int:
    checks.number("--fail-rate", args.fail_rate, 0, 1)  # refuse before touching any database
    checks.whole_number("--sleep-ms", args.sleep_ms, 0, 3_600_000)
    for kind in args.kind or []:
        checks.job_kind(kind)
    checks.lease(args.lease)  # the Worker checks these too, but only after the database is made
    checks.whole_number("--batch", args.batch, 1, queue.MAX_BATCH)
    checks.seconds("--poll", args.poll, 0.001, 86_400)
    checks.whole_number("--concurrency", args.concurrency, 1, 1_000)
    handle = demo_handler(args.sleep_ms, args.fail_rate)
    kinds = args.kind or ["send_receipt", "build_invoice", "call_webhook"]
    options = _worker_options(args)
    WorkerSettings(dsn="", handlers={k: handle for k in kinds}, **options)  # every option checked first
    if checks.whole_number("--processes", args.processes, 1, 64) > 1:
        return _worker_processes(args)
    db = open_database(args.db)
    say(db.server.line())
    worker = Worker(db.dsn, {k: handle for k in kinds}, **options)
    worker.stop_on_sigterm()
    say(
        f"worker on {db.name} for {', '.join(kinds)}, {tables.count(args.concurrency, 'executor')}; "
        "Ctrl-C or SIGTERM stops it"
    )
    try:
        report = worker.run(until_idle=args.until_idle)
    except KeyboardInterrupt:
        report = worker.report
    say(
        f"claimed {report.claimed}, done {report.done}, retried {report.retried}, "
        f"dead {report.dead}, fenced {report.fenced}, reconnects {report.reconnects}"
    )
    return 0


def _worker_options(args: argparse.Namespace) -> dict[str, Any]:
    """The Worker's keywords from the command line (WorkerSettings checks them)."""
    return {
        "concurrency": args.concurrency,
        "lease": args.lease,
        "batch": args.batch,
        "poll": args.poll,
        "priorities": args.priorities,
        "fair": args.fair,
        "per_tenant": args.per_tenant,
        "timeout": args.timeout,
        "rate_limits": dict(_rate(text) for text in args.rate or []),
    }


def _rate(text: str) -> tuple[str, float]:
    """`KIND=PER_SECOND` from --rate."""
    kind, sep, rate = text.partition("=")
    if not sep:
        raise BadInput(f"--rate takes KIND=PER_SECOND, for example call_webhook=50, got {text!r}")
    try:
        return checks.job_kind(kind), float(checks.number_text(rate, float))
    except ValueError as exc:
        raise BadInput(f"--rate {text}: {exc}") from None


def demo_handler(sleep_ms: int, fail_rate: float):
    """A handler that sleeps, and fails on request or at random."""

    def handle(job: queue.Job) -> None:
        time.sleep(sleep_ms / 1000)
        if (isinstance(job.payload, dict) and job.payload.get("fail")) or random.random() < fail_rate:
            raise RuntimeError("demo failure, as requested")

    return handle


def _worker_processes(args: argparse.Namespace) -> int:
    """`--processes M`: M worker processes, each this command with one
    process; SIGTERM and Ctrl-C reach them all, and each prints its own report."""
    import signal
    import subprocess

    argv = ["worker", "--db", args.db, "--sleep-ms", str(args.sleep_ms), "--fail-rate", str(args.fail_rate)]
    argv += ["--lease", str(args.lease), "--batch", str(args.batch), "--poll", str(args.poll)]
    argv += ["--concurrency", str(args.concurrency)] + (["--until-idle"] if args.until_idle else [])
    argv += [f"--kind={kind}" for kind in args.kind or []] + [f"--rate={rate}" for rate in args.rate or []]
    argv += ["--priorities"] * args.priorities + ["--fair"] * args.fair
    argv += [
        f"--{name.replace('_', '-')}={value}"
        for name in ("per_tenant", "timeout")
        if (value := getattr(args, name)) is not None
    ]
    children = [
        subprocess.Popen([sys.executable, "-m", "pgq_teach.cli", *argv]) for _ in range(args.processes)
    ]

    def stop_all(*_: object) -> None:
        for child in children:
            child.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop_all)
    try:
        codes = [child.wait() for child in children]
    except KeyboardInterrupt:
        codes = [child.wait() for child in children]  # the terminal sent each child its own SIGINT
    return max(codes)


def add_stats(sub: Subcommands) -> None:
    """Add `pgq-teach stats` to the command line."""
    sts = sub.add_parser(
        "stats", help="jobs by status, oldest due wait, dead row versions, and the numbers per kind"
    )
    sts.add_argument(
        "--window",
        type=typed(float),
        default=kinds.DEFAULT_WINDOW.total_seconds(),
        help="seconds of finished jobs the per-kind p50, p99 and failure rate count (default 900)",
    )
    _db_option(sts)
    sts.set_defaults(func=cmd_stats)


def cmd_stats(args: argparse.Namespace) -> int:
    """Jobs by status in one database; a label with no database is refused, never created
    (the course's default one is made, as by any command)."""
    window = checks.span("--window", args.window)
    db = open_database(args.db) if args.db == DEFAULT_DB else existing_database(args.db)
    if db is None:
        known = course_labels()
        shown = ", ".join(known[:STATS_LABELS_SHOWN]) + (", ..." if len(known) > STATS_LABELS_SHOWN else "")
        raise BadInput(
            f"--db {args.db}: no database {database_name(args.db)} on this server, so no jobs to count "
            f"(the course's: {shown or 'none yet'}); `pgq-teach enqueue --db {args.db}` makes it"
        )
    say(db.server.line())
    with db.connection() as conn:
        say(f"{db.name}: {queue.stats(conn)}")
        per_kind = kinds.stats(conn, window)
    if per_kind:
        say(kinds.stats_table(per_kind, window).text())
    return 0
