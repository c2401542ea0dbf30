"""The pgq-teach command: open the course, manage the embedded server, and
poke at a queue from a terminal."""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

from . import embedded, queue
from .databases import open_database
from .errors import PgqError
from .server import get_server
from .worker import Worker

DEFAULT_DB = "shop"


def _say(text: str) -> None:
    print(text, flush=True)


def _notebooks_dir() -> Path:
    here = Path(__file__).resolve().parent.parent / "notebooks"
    return here if here.is_dir() else Path.cwd() / "notebooks"


def cmd_lab(args) -> int:
    server = get_server()
    _say(server.line())
    env = dict(os.environ)
    # Kernels reuse this server instead of provisioning their own.
    env["PGQ_DSN"] = server.dsn
    env["PGQ_BACKEND"] = "dsn"
    env["PGQ_ORIGIN"] = f"{server.backend}, started by pgq-teach lab"
    folder = Path(args.dir).resolve() if args.dir else _notebooks_dir()
    argv = [sys.executable, "-m", "jupyter", "lab", f"--notebook-dir={folder}"]
    argv += [f"--port={args.port}"] if args.port else []
    argv += ["--no-browser"] if args.no_browser else []
    # Jupyter refuses root without this; containers and CI machines run as root.
    argv += ["--ServerApp.allow_root=True"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    argv += args.jupyter_args
    os.execvpe(argv[0], argv, env)
    return 0  # not reached


def cmd_server(args) -> int:
    if args.action == "stop":
        _say("stopped the embedded PostgreSQL" if embedded.stop() else "the embedded PostgreSQL was not running")
        return 0
    if args.action == "status":
        st = embedded.status()
        state = f"running (pid {st['pid']})" if st["running"] else "stopped"
        _say(f"embedded PostgreSQL: {state}; data in {st['data_dir']}")
        if os.environ.get("PGQ_DSN"):
            _say("note: PGQ_DSN is set, so the course uses that server instead")
        return 0
    server = get_server()
    _say(server.dsn if args.action == "url" else server.line())
    return 0


def cmd_enqueue(args) -> int:
    try:
        payload = json.loads(args.payload)
    except json.JSONDecodeError as exc:
        raise queue.BadInput(f"PAYLOAD is not valid JSON: {exc}") from None
    queue._check_kind(args.kind)  # refuse before touching any database
    db = open_database(args.db)
    _say(db.server.line())
    with db.connection() as conn:
        job_id = queue.enqueue(conn, args.kind, payload, run_at=_delay(args.delay), max_attempts=args.max_attempts)
    _say(f"enqueued job {job_id} ({args.kind}) in database {db.name}")
    return 0


def _delay(seconds: float | None):
    from datetime import timedelta

    return timedelta(seconds=seconds) if seconds else None


def demo_handler(sleep_ms: int, fail_rate: float):
    """A handler that sleeps, and fails on request or at random."""

    def handle(job: queue.Job) -> None:
        time.sleep(sleep_ms / 1000)
        if (isinstance(job.payload, dict) and job.payload.get("fail")) or random.random() < fail_rate:
            raise RuntimeError("demo failure, as requested")

    return handle


def cmd_worker(args) -> int:
    if not 0 <= args.fail_rate <= 1:
        raise queue.BadInput("--fail-rate must be between 0 and 1")
    db = open_database(args.db)
    _say(db.server.line())
    handle = demo_handler(args.sleep_ms, args.fail_rate)
    kinds = args.kind or ["send_receipt", "build_invoice", "call_webhook"]
    worker = Worker(db.dsn, {k: handle for k in kinds}, lease=args.lease, batch=args.batch, poll=args.poll)
    worker.stop_on_sigterm()
    _say(f"worker on {db.name} for {', '.join(kinds)}; Ctrl-C or SIGTERM stops it")
    try:
        report = worker.run(until_idle=args.until_idle)
    except KeyboardInterrupt:
        report = worker.report
    _say(
        f"claimed {report.claimed}, done {report.done}, retried {report.retried}, "
        f"dead {report.dead}, fenced {report.fenced}, reconnects {report.reconnects}"
    )
    return 0


def cmd_stats(args) -> int:
    db = open_database(args.db)
    _say(db.server.line())
    with db.connection() as conn:
        _say(f"{db.name}: {queue.stats(conn)}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pgq-teach", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    lab = sub.add_parser("lab", help="open the course in JupyterLab on a live PostgreSQL")
    lab.add_argument("--port", type=int, help="JupyterLab's port")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser")
    lab.add_argument("--dir", help="the folder to serve (default: the course's notebooks/)")
    lab.epilog = "Any other options, such as --ServerApp.token=..., are passed on to jupyter lab."
    lab.set_defaults(func=cmd_lab)

    srv = sub.add_parser("server", help="the PostgreSQL the course uses")
    srv.add_argument("action", choices=["start", "stop", "status", "url"],
                     help="start: provision and print the backend line; stop: stop the embedded server; "
                          "status: is the embedded server running; url: print the connection string")
    srv.set_defaults(func=cmd_server)

    def db_option(sp):
        sp.add_argument("--db", default=DEFAULT_DB, help=f"database label (default {DEFAULT_DB} -> pgq_{DEFAULT_DB})")

    enq = sub.add_parser("enqueue", help="add one job")
    enq.add_argument("kind", help="the job's kind, for example send_receipt")
    enq.add_argument("payload", help='the job\'s JSON payload, for example \'{"order_id": 101}\'')
    enq.add_argument("--delay", type=float, help="seconds from now before it may run")
    enq.add_argument("--max-attempts", type=int, default=5)
    db_option(enq)
    enq.set_defaults(func=cmd_enqueue)

    wrk = sub.add_parser("worker", help="run a demo worker whose handlers sleep, or fail on request")
    wrk.add_argument("--kind", action="append", help="a kind to handle (repeatable; default: the store's three)")
    wrk.add_argument("--sleep-ms", type=int, default=10, help="work per job in milliseconds")
    wrk.add_argument("--fail-rate", type=float, default=0.0, help="fraction of calls that raise (0..1)")
    wrk.add_argument("--lease", type=float, default=300.0, help="lease in seconds")
    wrk.add_argument("--batch", type=int, default=1)
    wrk.add_argument("--poll", type=float, default=5.0, help="fallback poll in seconds")
    wrk.add_argument("--until-idle", action="store_true", help="exit when nothing is due")
    db_option(wrk)
    wrk.set_defaults(func=cmd_worker)

    sts = sub.add_parser("stats", help="jobs by status, oldest due wait, dead row versions")
    db_option(sts)
    sts.set_defaults(func=cmd_stats)
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args, extra = p.parse_known_args(argv)
    if extra and args.command != "lab":
        p.error(f"unrecognized arguments: {' '.join(extra)}")
    args.jupyter_args = extra
    try:
        return args.func(args)
    except PgqError as exc:
        print(f"pgq-teach: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
