"""The servers the course runs: `pgq-teach server` (PostgreSQL: start, stop,
status, url, restart), `broker` (lesson 11's NATS server) and `clean` (the
course's databases, and with --all the embedded server's data folder)."""

from __future__ import annotations

import argparse
import os

from ..errors import BadInput, PgqError, SetupError
from ..infra import broker, learner, tidy
from ..infra.server import (
    checker_status,
    chosen_backend,
    data_folder,
    describe,
    get_server,
    refuse_to_remove,
    restart_server,
    server_status,
    start_server,
    stop_checker,
    stop_server,
    wanted_backend,
)
from .common import Subcommands, say


def add_server(sub: Subcommands) -> None:
    """Add `pgq-teach server` to the command line."""
    srv = sub.add_parser("server", help="the PostgreSQL the course uses")
    srv.add_argument(
        "action",
        choices=["start", "stop", "status", "url", "restart"],
        help="start: find or start the server and print the backend line; stop: stop what "
        "pgq-teach started (the embedded server, the course's container), never a PGQ_DSN "
        "server; status: is the server the course would use up; url: print the connection "
        "string; restart: a fast restart of the embedded server or the container",
    )
    srv.set_defaults(func=cmd_server)


def cmd_server(args: argparse.Namespace) -> int:
    if args.action == "stop":
        _server_stop()
        return 0
    if args.action == "status":
        return _server_status()
    if args.action == "restart":
        return _server_restart()
    server = start_server() if args.action == "start" else get_server()
    say(server.dsn if args.action == "url" else server.line())
    return 0


def _server_stop() -> None:
    """Stop what pgq-teach started for the chosen backend (in auto: its container and the
    embedded server). A PGQ_DSN server is never touched."""
    from ..infra import container

    wanted = wanted_backend()
    if wanted == "dsn" or (wanted == "auto" and os.environ.get("PGQ_DSN")):
        say(
            f"the PGQ_DSN server ({describe(os.environ.get('PGQ_DSN', ''))}) is yours to stop; "
            "pgq-teach leaves it alone"
        )
        _stop_checker()
        return
    if wanted in ("auto", "docker"):
        if container.stop():
            say(f"removed the container {container.name()} (its data goes with it)")
        elif wanted == "docker" or container.engine_answers():
            say(f"no container {container.name()} was running")
    if wanted in ("auto", "embedded"):
        say("stopped the embedded PostgreSQL" if stop_server() else "the embedded PostgreSQL was not running")
    _stop_checker()
    if broker.Broker().stop():
        say("stopped the NATS broker (lesson 11)")


def _stop_checker() -> None:
    """Whatever the backend: the checker is always the embedded PostgreSQL 18, started here."""
    if stop_checker():
        say("stopped the checker (the embedded PostgreSQL 18 that runs Your turn's SQL)")


def _server_status() -> int:
    """Report on the server the course would use, without starting one. Exit 1 if it is not up."""
    from ..infra import container

    backend = chosen_backend()
    if backend == "dsn":
        dsn = os.environ.get("PGQ_DSN", "")
        try:
            found = get_server()
        except PgqError as exc:
            say(f"PGQ_DSN server ({describe(dsn)}): not reachable. {exc}")
            return 1
        say(f"PGQ_DSN server: up, {found.line()}")
        _checker_status()
        return 0
    if backend == "docker":
        st = container.status()
        if not st["engine"]:
            say(
                "docker: no Docker engine answers; start Docker, "
                "or unset PGQ_BACKEND for the embedded PostgreSQL"
            )
            return 1
        if st["running"]:
            say(f"docker: container {st['name']} running ({st['image']})")
            return 0
        say(
            f"docker: no container {st['name']} running (image {container.image()}); "
            "`pgq-teach server start` starts one"
        )
        if wanted_backend() == "docker":
            return 1
        say("(in auto, a start falls back to the embedded PostgreSQL if that image cannot be had)")
    st = server_status()
    state = f"running (pid {st['pid']})" if st["running"] else "stopped"
    if st["another_install"]:
        state += f", but {st['another_install']}: `pgq-teach server start` restarts it from this install"
    say(f"embedded PostgreSQL: {state}; data in {st['data_dir']}")
    _checker_status()
    return 0 if st["running"] or backend == "docker" else 1


def _checker_status() -> None:
    """One line on the checker, which Your turn starts when it needs it."""
    ck = checker_status()
    state = f"running (pid {ck['pid']})" if ck["running"] else "stopped (Your turn starts it)"
    say(f"the checker (Your turn's own PostgreSQL 18): {state}; in {ck['data_dir']}")


def _server_restart() -> int:
    """A fast restart of the server in use (the fault tests use it through PGQ_RESTART_CMD)."""
    from ..infra import container

    server = get_server()
    if server.backend == "embedded":
        restart_server()
    elif server.backend == "docker":
        container.restart()
    else:
        raise SetupError(f"pgq-teach does not restart a {server.backend} server; its operator does.")
    say(f"restarted: {server.line()}")
    return 0


def add_broker(sub: Subcommands) -> None:
    """Add `pgq-teach broker` to the command line."""
    brk = sub.add_parser("broker", help="lesson 11's broker: a NATS server with JetStream on 127.0.0.1")
    brk.add_argument(
        "action",
        choices=["start", "status", "stop"],
        help="start: start it (or find it running) on a free port and print its line; status: its line "
        "(exit 1 if it is not running); stop: stop it (server stop stops it too)",
    )
    brk.set_defaults(func=cmd_broker)


def cmd_broker(args: argparse.Namespace) -> int:
    """`pgq-teach broker start|status|stop`: lesson 11's NATS server with JetStream."""
    nats = broker.Broker()
    if args.action == "stop":
        say("stopped the NATS broker" if nats.stop() else "the NATS broker was not running")
        return 0
    if args.action == "status":
        st = nats.status()
        say(st.line() if broker.binary() else broker.missing_line())
        return 0 if st.running else 1
    if not broker.available():
        raise SetupError(broker.missing_line())
    say(nats.start().line())
    return 0


def add_clean(sub: Subcommands) -> None:
    """Add `pgq-teach clean` to the command line."""
    cln = sub.add_parser(
        "clean",
        help="drop the course's databases (pgq_...) and let the WAL go, saying how much it freed",
    )
    cln.add_argument(
        "--all",
        action="store_true",
        help="then also stop the embedded PostgreSQL and remove its data folder (asks first)",
    )
    cln.add_argument("--yes", action="store_true", help="do not ask before --all removes the folder")
    cln.add_argument(
        "--this-server",
        action="store_true",
        help="clean on a PGQ_DSN server or the Docker container too (only its pgq_ databases)",
    )
    cln.epilog = (
        "A database a session still uses (an open notebook) is kept, and named. Your progress, "
        "answers and copy of the lessons are in your data folder, which clean never touches."
    )
    cln.set_defaults(func=cmd_clean)


def cmd_clean(args: argparse.Namespace) -> int:
    """`pgq-teach clean [--all]`: drop the course's databases and let the WAL go."""
    backend = chosen_backend()
    if backend != "embedded" and not args.this_server:
        raise BadInput(
            f"clean drops databases, and the {backend} server is not one pgq-teach started here: "
            "add --this-server to drop the course's pgq_ databases on it"
        )
    if args.all and backend != "embedded":
        raise BadInput("--all removes the embedded server's data folder; this server is not the embedded one")
    holder = tidy.learner_home_inside(tidy.removed_by_all()) if args.all else None
    if holder is not None:
        raise BadInput(
            f"--all would remove {holder}, and your progress and copy of the lessons are in it "
            f"({learner.home()}): set PGQ_HOME to a folder outside it first"
        )
    folder = data_folder()
    nats = broker.Broker()
    if args.all:  # what --all would remove is checked first: a refusal leaves everything as it was
        refuse_to_remove()
        if not nats.is_course_store():
            raise BadInput(
                f"--all would remove {nats.store}, and it is not lesson 11's broker store "
                "(it holds files pgq-teach does not write there): move it away first"
            )
    if args.all:  # ask before anything is dropped: a no leaves every database as it was
        question = (
            f"stop PostgreSQL and remove {folder}, every database in it, the checker's folder and the "
            "broker's store? [y/N] "
        )
        if not args.yes and not _confirmed(question):
            say(f"left {folder} as it was")
            return 1
    stopped = backend == "embedded" and not server_status()["running"]
    if stopped and not args.all and (not folder.is_dir() or not any(folder.iterdir())):
        say(f"no embedded PostgreSQL in {folder} yet: nothing to clean")
        return 0
    if not (stopped and args.all):  # a stopped server that --all removes whole is not started to drop first
        _drop_course_databases(stopped and not args.all)
    if not args.all:
        return 0
    if nats.stop():
        say("stopped the NATS broker (lesson 11)")
    if nats.store.is_dir():
        say(f"removed lesson 11's broker store {nats.store} ({tidy.mib(tidy.remove(nats.store))})")
    existed = folder.exists()
    folder, size = tidy.remove_data_folder()
    if existed:
        say(f"stopped the embedded PostgreSQL and removed {folder} ({tidy.mib(size)})")
    else:
        say(f"no embedded PostgreSQL in {folder}: nothing more to remove")
    return 0


def _drop_course_databases(stop_after: bool) -> None:
    """Drop the course's databases and empty the checker's copy; stop the server again if
    `stop_after` (clean found it stopped), unless someone came meanwhile."""
    server = get_server()  # started, if it was stopped: dropping a database needs it
    try:
        say(server.line())
        say(tidy.clean(server).line())
        checker = tidy.clean_checker()
        if checker:
            say(checker)
    finally:
        if stop_after:
            say(tidy.stop_if_alone(server))


def _confirmed(question: str) -> bool:
    """Ask on the terminal; no terminal, or anything but y/yes, is a no."""
    try:
        return input(question).strip().lower() in ("y", "yes")
    except EOFError:
        return False
