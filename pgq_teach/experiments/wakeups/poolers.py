"""Poolers and LISTEN: LISTEN registers one server session (`listen_is_per_session`),
so a pooler in transaction mode loses it; live through a real pgbouncer
(`through_pooler`), where Debian's pgbouncer is installed."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from ...databases import Database
from ...statements import run
from .listening import CHANNEL, QUIET_S, heard, listen, notify_in_one_transaction


def pooler_installed() -> str | None:
    """Where Debian's pgbouncer is, or None when it is not installed."""
    return shutil.which("pgbouncer") or (
        "/usr/sbin/pgbouncer" if shutil.which("/usr/sbin/pgbouncer") else None
    )


@dataclass(frozen=True)
class SessionBound:
    """One NOTIFY after a client LISTENed on a server session, as a transaction-mode
    pooler would then use the sessions: the client that listened has moved to
    another server session, and a second client now holds the one that listened."""

    listening_session_heard: int  # notifications the server sent on the session that ran LISTEN
    heard_by_next_client: list[str]  # payloads that reached the second client, with its own statement
    heard_by_listening_client: int  # what the client that listened hears, on its new session


def listen_is_per_session(db: Database) -> SessionBound:
    """What a pooler in transaction mode runs into: LISTEN registers one server
    session, and the server delivers there, to whoever holds that session. Client 1
    runs LISTEN on session S and moves to session T; client 2 gets S and runs one
    statement of its own. The notification arrives with client 2's statement."""
    for_client_two: list[str] = []
    with listen(db) as session_s, db.connection() as session_t:
        session_s.add_notify_handler(lambda n: for_client_two.append(n.payload))
        notify_in_one_transaction(db, ["for the listening session"])
        time.sleep(QUIET_S)  # delivered by now, to whoever reads session S next
        run(session_s, "lab/open_transaction")  # client 2's own statement on S
        client_one = heard(session_t, QUIET_S)  # client 1, on the session it got next
    return SessionBound(len(for_client_two), for_client_two, len(client_one))


# --- a real pooler, where Debian's pgbouncer is installed ---------------------------

POOLER_START_S = 10.0


@dataclass(frozen=True)
class PoolerResult:
    ran: bool
    reason: str
    heard_direct: int = 0
    heard_session_mode: int = 0  # through the pooler in session mode: the control
    heard_transaction_mode: int = 0


class PgBouncer:
    """A throwaway pgbouncer (transaction or session mode), two server
    connections, in front of the lesson's database, on a free loopback port."""

    def __init__(self, db: Database, folder: Path, mode: str = "transaction"):
        self.db, self.folder, self.mode = db, folder, mode
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def config(self) -> str:
        info = conninfo_to_dict(self.db.dsn)
        target = " ".join(
            f"{key}={info[key]}" for key in ("host", "port", "dbname", "user", "password") if info.get(key)
        )
        return "\n".join(
            [
                "[databases]",
                f"lab = {target}",
                "[pgbouncer]",
                "listen_addr = 127.0.0.1",
                f"listen_port = {self.port}",
                "unix_socket_dir =",
                "auth_type = any",
                f"pool_mode = {self.mode}",
                "default_pool_size = 2",
                f"logfile = {self.folder / 'pgbouncer.log'}",
                "ignore_startup_parameters = extra_float_digits,options",
                "",
            ]
        )

    def __enter__(self) -> PgBouncer:
        ini = self.folder / "pgbouncer.ini"
        ini.write_text(self.config())
        pooler = pooler_installed()
        if pooler is None:
            raise RuntimeError("pgbouncer is not installed here (Debian: apt-get install pgbouncer)")
        argv = [pooler, str(ini)]
        if getattr(os, "geteuid", lambda: -1)() == 0:
            argv += ["-u", self.unprivileged_user()]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + POOLER_START_S
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.__exit__()
        raise RuntimeError(f"pgbouncer did not start; its log: {self.folder / 'pgbouncer.log'}")

    def unprivileged_user(self) -> str:
        """pgbouncer refuses to run as root: run it as the owner of the
        server's socket folder (who can reach the socket), else nobody."""
        import pwd  # POSIX only, and only root needs it

        host = str(conninfo_to_dict(self.db.dsn).get("host") or "")
        os.chmod(self.folder, 0o777)  # a throwaway folder the new user must write its log into
        return pwd.getpwuid(os.stat(host).st_uid).pw_name if host.startswith("/") else "nobody"

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            dbname="lab",
            user="learner",
            autocommit=True,
            prepare_threshold=None,
            connect_timeout=5,
        )

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def through_pooler(db: Database) -> PoolerResult:
    """LISTEN through pgbouncer in transaction mode, NOTIFY directly: the
    listener's registration stays on a server session the pooler no longer
    links to it, so nothing reaches it. Skipped, with the reason, where
    pgbouncer is not installed."""
    if pooler_installed() is None:
        return PoolerResult(False, "pgbouncer is not installed here (Debian: apt-get install pgbouncer)")
    direct = listen_is_per_session(db).listening_session_heard
    session, transaction = (listen_through(db, mode) for mode in ("session", "transaction"))
    return PoolerResult(True, f"{pooler_version()} at {pooler_installed()}", direct, session, transaction)


def pooler_version() -> str:
    """The installed pgbouncer's own version line ("PgBouncer 1.18.0"), or "pgbouncer"."""
    pooler = pooler_installed()
    if pooler is None:
        return "pgbouncer"
    shown = subprocess.run([pooler, "--version"], capture_output=True, text=True, timeout=10, check=False)
    return next(iter(shown.stdout.splitlines()), "pgbouncer").strip() or "pgbouncer"


def listen_through(db: Database, mode: str) -> int:
    """LISTEN through pgbouncer in `mode`, let another client run a
    statement, NOTIFY directly; how many notifications the listener heard."""
    with (
        tempfile.TemporaryDirectory(prefix="pgq-pooler-") as folder,
        PgBouncer(db, Path(folder), mode) as pooler,
        pooler.connect() as pooled,
    ):
        run(pooled, "lab/listen_channel", idents={"channel": CHANNEL})
        # Another client runs a statement. In transaction mode it may get the very server
        # session the listener used; in session mode that session stays the listener's.
        with pooler.connect() as other:
            run(other, "lab/open_transaction")
        notify_in_one_transaction(db, ["through the pooler"])
        return len(heard(pooled, QUIET_S * 3))
